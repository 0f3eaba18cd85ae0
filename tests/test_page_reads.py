"""One read of a page's text serves the document's profile and the page (issue 30, round 38).

Why: the profile reads every page of a document of up to 120 pages at 1 pt, and the page's own pass read
it again at its pixels; reading a page's lines is most of a plain page's cost. The read is now kept in
points and placed at each scale, so it must come out exactly as a fresh read, on turned pages too, and
placing it must not change it (the profile's placing marks a typescript's lines as prose).
"""

from __future__ import annotations

import pymupdf
import pytest

from ocr_app.engines import pdf_spans, textlayer
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import count_calls

PROSE = "The committee met on a Tuesday and agreed the budget for the coming year without a vote."
TYPED = "the minutes were typed on a machine and kept in the office files"


def _document(path):
    """Four pages: prose upright and turned by 90° and 270°, then a page of monospaced prose."""
    doc = pymupdf.open()
    for rotation in (0, 90, 270):
        page = doc.new_page()
        page.insert_text((72, 90), "Annual Report of the Committee", fontsize=17.3, fontname="hebo")
        for k in range(8):
            page.insert_text((72.37, 130.61 + 14.3 * k), PROSE, fontsize=9.7)
        page.set_rotation(rotation)
    page = doc.new_page()
    for k in range(10):
        page.insert_text((72.37, 90.5 + 12.1 * k), TYPED, fontsize=9.1, fontname="cour")
    doc.save(path)
    return path


def _pages(engine, pdf, dpi=103):
    from bench.accuracy import generate

    out = []
    for index in range(4):
        image = generate.render(pdf, index, dpi)
        page = PageImage(image=image, index=index, source=pdf.name, dpi=dpi, pdf_path=pdf)
        (result,) = engine.predict_batch([PageRequest(page=page, prompt="")])
        out.append((blocks_to_markdown(result.blocks), [(b.label, b.box) for b in result.blocks]))
    return out


def test_each_page_is_read_once(tmp_path, monkeypatch):
    pdf = _document(tmp_path / "report.pdf")
    reads = count_calls(monkeypatch, textlayer, "read_lines")
    elsewhere = count_calls(monkeypatch, pdf_spans, "read_lines")  # the lines' own room reads none again
    _pages(TextLayerEngine(), pdf)
    assert reads + elsewhere == {0: 1, 1: 1, 2: 1, 3: 1}


def test_a_kept_read_comes_out_as_a_fresh_one(tmp_path, monkeypatch):
    pdf = _document(tmp_path / "report.pdf")
    kept = _pages(TextLayerEngine(), pdf)
    monkeypatch.setattr(TextLayerEngine, "_page_read", lambda self, path, page: pdf_spans.read_lines(page))
    fresh = _pages(TextLayerEngine(), pdf)
    assert kept == fresh
    # The monospaced page stays a listing (the document's body font is proportional) although the
    # profile, placing the same read as a possible typescript, took its lines for prose.
    assert "```" in kept[3][0] and TYPED in kept[3][0]


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_placing_a_read_at_a_scale_is_reading_at_it(rotation):
    """Each box, size and word range equals the read at 1 pt carried by the page's display matrix."""
    doc = pymupdf.open()
    page = doc.new_page()
    for k in range(4):
        page.insert_text((72.37, 130.61 + 14.3 * k), PROSE, fontsize=9.7)
    page.set_rotation(rotation)
    read = pdf_spans.read_lines(page)
    one = pdf_spans.place_lines(read, page, 1.0)
    scale = 1.43
    at = pdf_spans.place_lines(read, page, scale)
    assert [ln.text for ln in at] == [ln.text for ln in one] and len(at) == 4
    for a, b in zip(at, one, strict=True):
        assert a.box == pytest.approx(tuple(v * scale for v in b.box), abs=1e-3)
        assert a.size == pytest.approx(b.size * scale)
        assert [v for w in a.words for v in w] == pytest.approx(
            [v * scale for w in b.words for v in w], abs=1e-3
        )
        assert bool(a.words) == (rotation == 0)
    assert read == pdf_spans.read_lines(page)  # placing changed nothing of the read


def test_only_the_newest_documents_reads_are_kept(tmp_path, monkeypatch):
    """A 120-page sample holds megabytes of lines: the reads of a document whose profile came before
    another's are dropped, and its pages are read again, to the same Markdown."""
    first = _document(tmp_path / "first.pdf")
    second = _document(tmp_path / "second.pdf")
    alone = _pages(TextLayerEngine(), first)
    engine = TextLayerEngine()
    reads = count_calls(monkeypatch, textlayer, "read_lines", lambda page: (page.parent.name, page.number))
    from bench.accuracy import generate

    def page(pdf, index):
        image = generate.render(pdf, index, 103)
        request = PageRequest(
            page=PageImage(image=image, index=index, source=pdf.name, dpi=103, pdf_path=pdf)
        )
        (result,) = engine.predict_batch([request])
        return blocks_to_markdown(result.blocks), [(b.label, b.box) for b in result.blocks]

    got = [page(first, 0), page(second, 0)] + [page(first, k) for k in (1, 2, 3)]
    assert [got[0], *got[2:]] == alone
    assert all(engine._reads.get(engine._file_key(second), {}).get(k) for k in (1, 2, 3))
    assert [reads[(str(first), k)] for k in range(4)] == [1, 2, 2, 2]
