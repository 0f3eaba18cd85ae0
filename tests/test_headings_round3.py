"""Headings and text fidelity, round 3 (issue 30 items 4 and 5, found on docling's and pymupdf4llm's
sets): a small running header printed on alternate pages of a report is no heading; a one-page
article's running head with its page number, and a spread's footer, are page furniture; a caption whose
first line holds a Greek letter from the Symbol font keeps its second line. Pages built with PyMuPDF,
and docling's public 2305.03393v1-pg9."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import heading_texts, pages_markdown

pymupdf = import_pymupdf()

LEFT, RIGHT = (56, 290), (310, 544)  # the two columns' x ranges
BODY = "is a line of the body text that runs across its column"


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _column(page: pymupdf.Page, x: float, y: float, count: int, tag: str) -> float:
    """``count`` body lines (10.5 pt Helvetica) at ``x`` from ``y``; the y after them."""
    for j in range(count):
        page.insert_text((x, y), f"{tag}{j} {BODY}"[:52], fontsize=10.5)
        y += 14
    return y


def _two_columns(page: pymupdf.Page, y: float, heading: str, tag: str) -> None:
    """A numbered section heading (13 pt bold) over two columns of body text."""
    page.insert_text((LEFT[0], y), heading, fontsize=13, fontname="hebo")
    _column(page, LEFT[0], y + 24, 30, f"{tag}L")
    _column(page, RIGHT[0], y + 24, 30, f"{tag}R")


def test_a_small_header_on_alternate_pages_of_a_report_is_no_heading(tmp_path, engine):
    """A four-page two-column brief prints its series name ("Issue Brief", 9 pt bold, smaller than the
    body) at the top of pages 2 and 4 only; the first page has its masthead there instead. Two pages are
    fewer than the three repeats running lines need, yet the line in one place and size, no larger than
    the body and alone on its row, is the brief's running header: page furniture, not a heading over
    every other page."""
    doc = pymupdf.open()
    for k in range(4):
        page = doc.new_page(width=595, height=842)
        if k == 0:
            page.insert_text((56, 60), "Policy Research Office", fontsize=12, fontname="hebo")
            page.insert_text((56, 130), "Insurance claims after the pandemic", fontsize=24, fontname="hebo")
        elif k % 2 == 1:
            page.insert_text((56, 50), "Issue Brief", fontsize=9, fontname="hebo")
        _two_columns(page, 180, f"{k + 1} Section number {k + 1}", chr(65 + k))
    pdf = tmp_path / "brief.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert [h for md in pages for h in heading_texts(md) if "Issue Brief" in h] == [], pages
    assert all(f"{k + 1} Section number {k + 1}" in heading_texts(md) for k, md in enumerate(pages)), pages


def test_a_two_column_tables_header_row_at_the_top_of_two_pages_stays(tmp_path, engine):
    """The other side of the rule: a table's header row that runs on to the next page, small and in the
    same place on both, has several pieces on its row; its cells stay in the page's text."""
    doc = pymupdf.open()
    for k in range(4):
        page = doc.new_page(width=595, height=842)
        if k in (1, 2):
            for x, name in ((56, "Region"), (200, "Claims"), (340, "Paid")):
                page.insert_text((x, 50), name, fontsize=9, fontname="hebo")
            for j in range(30):
                for x, v in ((56, f"Area {k}{j}"), (200, f"{100 + j}"), (340, f"{20 + j}")):
                    page.insert_text((x, 110 + 14 * j), v, fontsize=9)
        else:
            _two_columns(page, 120, f"{k + 1} Section number {k + 1}", chr(65 + k))
    pdf = tmp_path / "table.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert "Region" in pages[1] and "Claims" in pages[2], pages


def test_a_captions_second_line_after_a_symbol_font_greek_letter_is_no_heading(tmp_path, engine):
    """A bold caption in the right column whose first line holds Greek letters set in the Symbol font
    (which has no bold cut: "Scheme 1. Strategies for β-Functionalization and β-") goes on with its
    second bold line ("Olefination of Ketones"); that line is the caption's end, not a heading, and the
    caption is not cut in two."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    _two_columns(page, 70, "1 Introduction", "P")
    y = 70 + 24 + 30 * 14 + 16
    x = RIGHT[0]
    for text, font in (
        ("Scheme 1. Strategies for ", "hebo"),
        ("b", "symb"),
        ("-Functionalization and ", "hebo"),
        ("b", "symb"),
        ("-", "hebo"),
    ):
        page.insert_text((x, y), text, fontsize=9.6, fontname=font)
        x += pymupdf.get_text_length(text, fontname=font, fontsize=9.6)
    page.insert_text((RIGHT[0], y + 12), "Olefination of Ketones", fontsize=9.6, fontname="hebo")
    _column(page, RIGHT[0], y + 40, 10, "Q")
    pdf = tmp_path / "scheme.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == ["1 Introduction"], md
    assert "Functionalization and b-Olefination of Ketones" in " ".join(md.split()), md


def test_a_one_page_articles_running_head_with_its_page_number_is_page_furniture(tmp_path, engine):
    """Page 9 of a paper on its own: its running head (the short title and the page number at the row's
    end, set smaller than the body, a line's height above the text) cannot be counted across pages, yet
    its shape says what it is; so does a spread's footer (page numbers at both ends). Neither is text."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((194, 100), "Optimized Table Tokenization for Table Structure", fontsize=9)
    page.insert_text((476, 100), "9", fontsize=9)
    _two_columns(page, 130, "5.1 Hyper Parameter Optimization", "H")
    for x, text in ((42, "208"), (315, "Global Study on Legal Aid"), (420, "Annex"), (560, "209")):
        page.insert_text((x, 765), text, fontsize=9)
    pdf = tmp_path / "page9.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert "Optimized Table" not in md and "Global Study" not in md, md
    assert md.splitlines()[0] == "## 5.1 Hyper Parameter Optimization", md


def test_a_tables_first_row_at_the_top_of_a_page_stays(tmp_path, engine):
    """The other side: a table's first row at the page's top ("Region" ... "2019"), ending in a number
    but with the next row right under it, is the table's, not a running head."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    for j, (name, value) in enumerate(
        [("Region", "2019"), *((f"Area {j}", f"{100 + j}") for j in range(12))]
    ):
        page.insert_text((56, 60 + 14 * j), name, fontsize=9)
        page.insert_text((300, 60 + 14 * j), value, fontsize=9)
    _column(page, 56, 260, 20, "B")
    pdf = tmp_path / "table_top.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert "Region" in md and "2019" in md, md


def test_docling_2305_page_9_alone_keeps_its_running_head_out_of_the_text(engine):
    """The public page the rule was found on (docling's ``2305.03393v1-pg9``, copied under
    tests/data/public): page 9 of the OTSL paper on its own, whose running head is the short title and
    "9" at the row's end, 9 pt over 10 pt text."""
    pdf = Path(__file__).parent / "data" / "public" / "docling" / "pdf" / "2305.03393v1-pg9.pdf"
    md = pages_markdown(engine, pdf)[0]
    assert "Optimized Table Tokenization" not in md, md[:300]
    assert md.startswith("order to compute the TED score."), md[:300]
