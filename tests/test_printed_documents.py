"""Documents printed by Chromium from the probe set of ``bench/accuracy/printed.py`` (issue 30, round 9),
read by the real text-layer engine: the cases its first run found, and the probe's own scoring (so the
bench cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy.printed import build
from bench.accuracy.public import markdown_set
from tests.factories import heading_texts, page_markdown, table_rows


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("printed")
    build(out, ("none-labelled-wide-centred", "report-samesize-0", "grid-grouped-single-centred"))
    return out


def test_heads_centred_over_figures_set_right_head_a_table_without_rulings(textlayer_engine, printed):
    """A table across the page without rulings, heads centred in wide columns over figures set right,
    a group's label ("Staff") under them. Before: no head stood over its column's figures, the heads
    and the label were left above the table as text, and once short paragraphs were kept apart the
    label became a heading."""
    md = page_markdown(textlayer_engine, printed / "pdf" / "none-labelled-wide-centred.pdf")
    assert table_rows(md)[0] == ["Item", "Budget", "Spent", "Share"], md
    assert table_rows(md)[1][0] == "Staff", md
    assert not re.search(r"^#+ Staff", md, re.M), md


def test_short_paragraphs_a_blank_line_apart_and_numbered_italic_subsections(textlayer_engine, printed):
    """A report whose paragraphs are two lines each, a blank line apart, with subsections "1.1 Timeline"
    in italic at the body's size. Before: half the gaps were blank lines, their median was taken for the
    line spacing, and whole sections ran together as one paragraph with the subsection titles inside;
    an italic title starting with its number was not taken for one."""
    pdf = printed / "pdf" / "report-samesize-0.pdf"
    md = "\n\n".join(page_markdown(textlayer_engine, pdf, k) for k in range(3))
    truth = (printed / "gt" / "report-samesize-0.md").read_text(encoding="utf-8")
    want = [h.lstrip("#").strip() for h in truth.splitlines() if h.startswith("#")]
    assert heading_texts(md) == want, md
    levels = {
        ln.lstrip("#").strip(): len(ln) - len(ln.lstrip("#")) for ln in md.splitlines() if ln.startswith("#")
    }
    assert levels["1.1 Timeline"] == levels["1. Results by region"] + 1, md
    paragraphs = [p for p in truth.split("\n\n") if p[:1].isupper() and not p.startswith("<")]
    assert all(p in md.split("\n\n") for p in paragraphs[:6]), md


def test_the_probe_set_is_printed_with_its_truth_and_scored(printed):
    """The probe's documents come with their ground truth, and the public sets' scorer reads them."""
    truth = (printed / "gt" / "grid-grouped-single-centred.md").read_text(encoding="utf-8")
    assert '<th rowspan="2">Site</th><th colspan="2">Nitrate (mg/l)</th>' in truth
    assert sorted(p.stem for p in (printed / "pdf").glob("*.pdf")) == sorted(
        p.stem for p in (printed / "gt").glob("*.md")
    )
    row = markdown_set(printed, "textlayer", ("grid-grouped-single-centred",))
    assert row["docs"] == 1 and row["teds"] == pytest.approx(1.0) and row["nid"] > 0.95, row
