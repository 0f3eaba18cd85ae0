"""``bench/accuracy/heavy_pages.py`` builds the pages it names as described (so the bench cannot rot):
each drawing in one content stream, and the drawings, links, lines and labels it says."""

from __future__ import annotations

import pymupdf
import pytest

from bench.accuracy import heavy_pages


def test_every_heavy_page_is_what_it_says(tmp_path):
    paths = heavy_pages.build(list(heavy_pages.PAGES), tmp_path)
    assert set(paths) == set(heavy_pages.PAGES)

    def page(name):
        doc = pymupdf.open(paths[name])
        assert doc.page_count == 1
        return doc[0]

    assert len(page("heatmap80").get_drawings()) == 80 * 80
    assert len(page("outlines6k").get_drawings()) == 6000
    assert len(page("markers8k").get_drawings()) == 8000
    assert len(page("histogram2k").get_drawings()) == 2000
    linked = page("links3k")
    kind, annots = linked.parent.xref_get_key(linked.xref, "Annots")
    assert kind == "array" and annots.count(" 0 R") == 3000  # listing them all costs PyMuPDF seconds
    assert linked.first_link.uri == "https://example.org/0" and linked.first_link.rect == pymupdf.Rect(
        50, 125, 60, 132
    )
    assert len(page("index840").get_text("text").splitlines()) >= 840
    labels = [w for w in page("labels2k").get_text("words") if w[4].isdigit()]
    assert len(labels) >= 1990
    assert all(
        len(page(n).get_contents()) <= 2 for n in ("heatmap80", "outlines6k", "markers8k")
    )  # text, drawing


def test_an_unknown_page_is_refused(capsys):
    assert heavy_pages.main(["--pages", "heatmap80,nosuch"]) == 2
    assert "unknown pages: nosuch" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["index840"])
def test_the_bench_times_a_page(tmp_path, name):
    result = heavy_pages.measure(heavy_pages.build([name], tmp_path), 2)
    assert list(result) == [name] and len(result[name]) == 2 and all(s > 0 for s in result[name])
