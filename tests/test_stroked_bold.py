"""Stroked ("fake") bold (issue 30 item 4): a word processor that has no bold cut of a font makes bold by
drawing the regular glyphs filled and outlined (PDF text render mode 2). The font name and PyMuPDF's
bold flag then say regular, and such a document's headings at body size read as paragraphs. Lines now
carry it: glyphs both filled and stroked are bold (``pdf_spans._stroked_boxes``, from MuPDF's per-span
fill/stroke flags). Outlined display type (stroked only) is not bold. Pages built with PyMuPDF, read
through the text-layer engine."""

from __future__ import annotations

import pytest

from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import body_paragraph, heading_texts, pages_markdown

pymupdf = import_pymupdf()


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _stroked(page, xy, text: str, size: float, font: str = "tiro") -> None:
    page.insert_text(xy, text, fontsize=size, fontname=font, render_mode=2, border_width=0.04)


def test_lines_drawn_filled_and_stroked_are_bold_stroked_alone_are_not():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A regular line of text", fontsize=11, fontname="tiro")
    _stroked(page, (72, 100), "A line made bold by its outline", 11)
    page.insert_text((72, 130), "Outlined display type", fontsize=11, fontname="tiro", render_mode=1)
    page.insert_text((72, 160), "A bold face", fontsize=11, fontname="tibo")
    got = {ln.text: (ln.bold, ln.weight) for ln in extract_lines(page, 2.0)}
    assert got["A regular line of text"] == (False, 400)
    assert got["A line made bold by its outline"] == (True, 700)
    assert got["Outlined display type"][0] is False
    assert got["A bold face"] == (True, 700)


@pytest.mark.parametrize("font", ["tiro", "helv"])
def test_section_headings_in_stroked_bold_at_body_size_are_headings(engine, tmp_path, font):
    """A two-page report whose numbered section headings are the body face at body size, made bold by
    stroke: they are the outline; the paragraphs between them stay text."""
    doc = pymupdf.open()
    titles = [
        ["1. Background", "2. Method of the survey"],
        ["3. Results by region", "4. What follows from it"],
    ]
    for p, pair in enumerate(titles):
        page = doc.new_page(width=595, height=842)
        y = 90.0
        for k, title in enumerate(pair):
            _stroked(page, (72, y), title, 10, font)
            y = body_paragraph(page, 72, y + 18, 450, seed=3 * p + k, count=6, font=font) + 22
    pdf = tmp_path / f"stroked_{font}.pdf"
    doc.save(pdf)
    md = "\n".join(pages_markdown(engine, pdf))
    assert heading_texts(md) == [t for pair in titles for t in pair], md
    assert "the survey of regional households" in md  # the body is read as text


def test_a_stroked_word_inside_a_paragraph_makes_no_heading(engine, tmp_path):
    """Guard: a paragraph whose lines are regular, with one word stroked for emphasis, stays a paragraph."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 72, 90, 450, seed=1, count=4, font="tiro")
    page.insert_text((72, y), "and this one", fontsize=10, fontname="tiro")
    x = 72 + pymupdf.get_text_length("and this one ", fontname="tiro", fontsize=10)
    _stroked(page, (x, y), "important", 10)
    x += pymupdf.get_text_length("important ", fontname="tiro", fontsize=10)
    page.insert_text((x, y), "word ends the paragraph of the survey.", fontsize=10, fontname="tiro")
    body_paragraph(page, 72, y + 30, 450, seed=5, count=4, font="tiro")
    pdf = tmp_path / "emphasis.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == [], md
