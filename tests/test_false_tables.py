"""No false tables (issue 30 item 3): pages without a table come out as text, in reading order, with
their headings; real tables still come out.

The pages are built with PyMuPDF (``bench.accuracy.false_table_pages``, the same pages the
``false_tables`` bench counts on); the charts are ICDAR 2013's ``us-028`` (tests/data/public).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy import false_table_pages as pages
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

ICDAR = Path(__file__).parent / "data" / "public" / "icdar2013"


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine()
    assert eng._learned, "the tables extra (rapid-table) is part of the dev install"
    return eng


def _markdown(engine: TextLayerEngine, pdf: Path, index: int = 0) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, index, 144, prompt="")])[0].blocks)


def _page(tmp_path: Path, name: str) -> Path:
    return pages.build(tmp_path / "page.pdf", {**pages.NO_TABLE, **pages.WITH_TABLE}[name])


def test_a_numbered_reference_list_in_two_columns_is_text_column_by_column(tmp_path, engine):
    """Entries starting "[n]" beside entries of the other column are a list, not rows of a table."""
    md = _markdown(engine, _page(tmp_path, "numbered references, two columns"))
    assert "<table>" not in md
    assert_in_order(md, ["## References", "[1] A. Smith", "[12] V. Costa", "[13] A. Smith", "[24] V. Costa"])


def test_a_glossary_in_two_columns_is_text_column_by_column(tmp_path, engine):
    """Short lines in two columns that the layout model reads as two blocks of text side by side."""
    md = _markdown(engine, _page(tmp_path, "glossary, two columns"))
    assert "<table>" not in md
    # the first column (Baseline … Widow) before the second (Tracking … Running head)
    assert_in_order(
        md, ["Glossary", "Baseline", "the line the letters sit on", "Widow", "Tracking", "Running head"]
    )


def test_the_justified_lines_of_a_footnote_are_not_a_table(tmp_path, engine):
    """Word gaps of two justified lines set with wide spaces line up by chance: still a sentence."""
    md = _markdown(engine, _page(tmp_path, "justified footnote"))
    assert "<table>" not in md
    text = re.sub(r"\s+", " ", md)
    assert "Estimated on the basis of Statistisches Bundesamt (2009)" in text
    assert "Gesamtrechnungen of private households." in text


def test_charts_drawn_with_gridlines_are_not_tables_but_the_reports_tables_are(engine):
    """us-028 (ICDAR 2013): a timeline chart (page 1) and a bar chart (page 4) drawn over gridlines
    have no table in the ground truth; the structure model's reading leaves most of their grid empty.
    The tables of pages 2 and 3 still come out."""
    pdf = ICDAR / "us-028.pdf"
    assert "<table>" not in _markdown(engine, pdf, 0)
    assert "<table>" not in _markdown(engine, pdf, 3)
    table = _markdown(engine, pdf, 1)
    assert table.count("<table>") == 1 and "<td>IHE Residence</td>" in table


@pytest.mark.parametrize(
    "name",
    ["two-column prose", "author-year references", "slide, 3 panels", "slide, 2 panels", "poem, two columns"],
)
def test_other_pages_without_a_table_stay_text(tmp_path, engine, name):
    md = _markdown(engine, _page(tmp_path, name))
    assert "<table>" not in md
    assert md.strip()


def test_two_column_prose_keeps_its_headings_in_column_order(tmp_path, engine):
    md = _markdown(engine, _page(tmp_path, "two-column prose"))
    # (the page's title, set once over the section titles, is "#": ``heading_tiers._lone_title``)
    assert_in_order(
        md, ["# False Tables", "## 1 Introduction", "## 3 Measuring", "## 4 Results", "## 6 Conclusion"]
    )


@pytest.mark.parametrize("name", ["ruled table", "unruled table"])
def test_real_tables_still_come_out(tmp_path, engine, name):
    md = _markdown(engine, _page(tmp_path, name))
    assert md.count("<table>") == 1
    cells = re.findall(r"<t[dh]>([^<]*)</t[dh]>", md)
    k = cells.index("North")
    assert cells[k : k + 5] == ["North", "1,204", "1,310", "1,402", "1,515"]
    assert "Total" in cells and "7,356" in cells


def test_an_icdar_table_without_rulings_still_comes_out(engine):
    md = _markdown(engine, ICDAR / "us-012.pdf", 0)
    assert md.count("<table>") >= 1


def test_labels_beside_right_aligned_notes_stay_a_table(engine):
    """us-019 (ICDAR 2013) page 2: a table of words the layout model boxes as two blocks of text (labels,
    and notes set flush right); two text columns are flush left, so it stays a table."""
    md = _markdown(engine, ICDAR / "us-019.pdf", 1)
    assert re.search(
        r"<td>Disposable income per capita in constant dollars</td><td>Annual percent changes range between",
        md,
    )


def test_three_columns_of_text_over_their_footnotes_are_text(engine):
    """us-001 (ICDAR 2013) page 1: three columns of text, each over its footnotes, whose lines line up
    across the page; the layout model boxes each column as blocks of text one under the other, and a
    bullet and the footnote marks hang left of their lines. They were one 7-row table ("HIGHLIGHTS |
    may be shown in text, …"); the report's own table under them stays a table."""
    md = _markdown(engine, ICDAR / "us-001.pdf", 0)
    assert "## HIGHLIGHTS" in md
    assert "<td>HIGHLIGHTS</td>" not in md and md.count("<table>") == 1
    assert_in_order(md, ["## HIGHLIGHTS", "Approximately 56.7 million", "303.9 million", "<table>"])
    assert re.search(r"<td>All ages[ .]*</td><td>291,099</td>", md)


def test_a_bulleted_list_with_a_mark_in_the_margin_of_each_item_is_no_table(tmp_path, engine):
    """The Rust Reference sets a small "[*]" anchor in the margin beside every rule, list items
    included: the anchors, the bullets and the items' text read as a table of three columns. A mark
    of no letter or digit before an item's marker is the margin's, and the rows are a list."""
    import pymupdf

    from tests.factories import SURVEY_TEXT

    words = SURVEY_TEXT.split()
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 70), "The radix is chosen as follows:", fontsize=11, fontname="helv")
    y = 96
    for k in range(6):
        page.insert_text((28, y), "[*]", fontsize=7, fontname="helv")
        page.draw_circle((64, y - 3.5), 2, color=None, fill=(0, 0, 0))  # a browser draws the disc
        page.insert_text(
            (74, y), " ".join(words[k * 4 : k * 4 + 3 + k % 2]) + ".", fontsize=11, fontname="helv"
        )
        y += 20
    page.insert_text(
        (50, y + 10), "The final cast truncates the value of the literal.", fontsize=11, fontname="helv"
    )
    doc.save(tmp_path / "marks.pdf")
    md = _markdown(engine, tmp_path / "marks.pdf")
    assert "<table>" not in md, md
    assert_in_order(md, ["The radix is chosen", words[0], words[20], "The final cast"])
