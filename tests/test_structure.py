"""Document structure from the text layer (issue 16), on PDFs made here with PyMuPDF: document-level
headings and levels, lists, hyphenation, running headers/footers, tables of contents, symbol-font
bullets, right-to-left rows and pages whose text runs sideways."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy import generate
from ocr_app.engines.pdf_spans import font_weight
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.render.markdown import page_markdown
from ocr_app.structure.lines import rotate_box, unrotate_box
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

DPI = 72
BODY = ["Body text of this section runs on for a while so that it is clearly a paragraph of prose."] * 3


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _read(engine: TextLayerEngine, pdf: Path, index: int = 0):
    return engine.predict_batch([pdf_page_request(pdf, index, DPI, prompt="")])[0]


def _lines(
    page: pymupdf.Page, y: float, texts: list[str], size: float = 11, font: str = "helv", x: float = 72
):
    for t in texts:
        page.insert_text((x, y), t, fontsize=size, fontname=font)
        y += size * 1.3
    return y + size


def test_heading_levels_come_from_the_whole_document(tmp_path, engine):
    """Page 2 holds only a 15 pt heading and a bold body-size heading: alone it cannot tell, the
    document (20 pt title, 15 pt sections, bold subsections) can. Bold numbered headings count."""
    pdf = tmp_path / "doc.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, ["Annual Review"], size=22, font="hebo")
    y = _lines(p, y, ["1 Introduction"], size=15, font="hebo")
    y = _lines(p, y, BODY * 4)
    y = _lines(p, y, ["1.1 Scope of the review"], size=11, font="hebo")
    _lines(p, y, BODY * 4)
    p = doc.new_page()
    y = _lines(p, 80, ["2 Results"], size=15, font="hebo")
    y = _lines(p, y, ["2.1 Costs"], size=11, font="hebo")
    _lines(p, y, ["Short."])
    doc.save(pdf)
    heads0 = [
        ln for ln in blocks_to_markdown(_read(engine, pdf, 0).blocks).splitlines() if ln.startswith("#")
    ]
    heads1 = [
        ln for ln in blocks_to_markdown(_read(engine, pdf, 1).blocks).splitlines() if ln.startswith("#")
    ]
    assert heads0 == ["# Annual Review", "## 1 Introduction", "### 1.1 Scope of the review"]
    assert heads1 == ["## 2 Results", "### 2.1 Costs"]


def test_bookmark_outline_marks_plain_headings(tmp_path, engine):
    """A heading set like body text is still a heading when the PDF's outline names it."""
    pdf = tmp_path / "outline.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, ["Terms of use"])
    _lines(p, y, BODY * 3)
    doc.set_toc([[1, "Terms of use", 1]])
    doc.save(pdf)
    md = blocks_to_markdown(_read(engine, pdf).blocks)
    assert md.splitlines()[0] == "# Terms of use"
    assert "Body text of this section" in md and md.count("#") == 1


def test_bold_paragraph_is_not_a_heading(tmp_path, engine):
    pdf = tmp_path / "boldpara.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, BODY * 2)
    y = _lines(
        p,
        y,
        [
            "23. If your country has an institutional legal aid provider, what is the maximum",
            "caseload per lawyer?",
        ],
        font="hebo",
    )
    _lines(p, y, BODY * 2)
    doc.save(pdf)
    md = blocks_to_markdown(_read(engine, pdf).blocks)
    assert not [ln for ln in md.splitlines() if ln.startswith("#")]
    assert "23. If your country has an institutional legal aid provider, what is the maximum caseload" in md


def test_bold_line_standing_alone_is_a_heading_a_bold_run_inside_a_paragraph_is_not(tmp_path, engine):
    """A body-size bold line with a blank line above and below is a heading; bold words that start a
    line inside a paragraph (the rest of the line regular) leave the paragraph whole."""
    pdf = tmp_path / "boldrun.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, BODY * 2)
    y = _lines(p, y + 6, ["Terms of delivery"], font="hebo")
    y = _lines(p, y, BODY[:1])
    bold = "Important notice:"
    p.insert_text((72, y), bold, fontsize=11, fontname="hebo")
    rest = " the goods travel at the buyer's risk once they leave"
    p.insert_text((72 + pymupdf.get_text_length(bold, "hebo", 11), y), rest, fontsize=11, fontname="helv")
    _lines(p, y + 11 * 1.3, ["the warehouse, as agreed in the contract of sale."])
    doc.save(pdf)
    md = blocks_to_markdown(_read(engine, pdf).blocks)
    assert [ln for ln in md.splitlines() if ln.startswith("#")] == ["## Terms of delivery"], md
    assert "Important notice: the goods travel at the buyer's risk once they leave the warehouse" in md


def test_lists_bullets_numbers_letters_continuations_and_nesting(tmp_path, engine):
    pdf = tmp_path / "lists.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, ["Shopping notes for the week, written down before leaving the house."])
    y = _lines(p, y, ["• Apples from the market stall near the station, the red ones"], x=72)
    y = _lines(p, y - 11, ["that keep well"], x=84)
    y = _lines(p, y - 11, ["– Pears"], x=72)
    y = _lines(p, y - 11, ["▪ Green pears"], x=96)
    y = _lines(p, y - 11, ["• Plums"], x=72)
    y = _lines(p, y, ["1. First step", "2. Second step"])
    _lines(p, y, ["a) option one", "b) option two"])
    doc.save(pdf)
    md = blocks_to_markdown(_read(engine, pdf).blocks)
    lines = md.splitlines()
    assert "- Apples from the market stall near the station, the red ones that keep well" in lines
    assert "- Pears" in lines
    assert "    - Green pears" in lines  # nested: its marker is indented
    assert "- Plums" in lines
    assert "1. First step" in lines and "2. Second step" in lines
    assert "- a) option one" in lines and "- b) option two" in lines


def test_symbol_font_bullets_become_list_markers(tmp_path, engine):
    """ZapfDingbats glyphs (here "l", a black circle) and control characters never leak into text."""
    pdf = tmp_path / "dingbats.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, ["Checklist of the things to verify before the release is tagged and shipped."])
    for text in ("Tests pass", "Docs updated"):
        p.insert_text((72, y), "l", fontsize=9, fontname="zadb")
        p.insert_text((86, y), text, fontsize=11, fontname="helv")
        y += 16
    doc.save(pdf)
    md = blocks_to_markdown(_read(engine, pdf).blocks)
    assert "- Tests pass" in md.splitlines() and "- Docs updated" in md.splitlines()
    assert "l Tests" not in md and not any(ord(c) < 32 and c != "\n" for c in md)


def test_hyphenation_uses_the_document_vocabulary(tmp_path, engine):
    """ "docu-/ment" → "document" (the document has the word); "well-/known" stays hyphenated
    because the document writes "well-known" elsewhere; "COVID-/19" keeps its hyphen."""
    pdf = tmp_path / "hyphen.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    _lines(
        p,
        80,
        [
            "This document is well-known. A docu-",
            "ment that is well-",
            "known and the COVID-",
            "19 pandemic and the state-of-the-",
            "art methods.",
        ],
    )
    doc.save(pdf)
    md = blocks_to_markdown(_read(engine, pdf).blocks)
    assert "A document that is well-known and the COVID-19 pandemic and the state-of-the-art methods." in md


def test_running_headers_and_page_numbers_leave_the_markdown(tmp_path, engine):
    pdf = tmp_path / "running.pdf"
    doc = pymupdf.open()
    for n in range(1, 5):
        p = doc.new_page()
        p.insert_text((72, 40), "ACME Corporation · Annual Report 2026", fontsize=9, fontname="helv")
        _lines(p, 120, [f"Content of page {n} is a paragraph about the year.", *BODY])
        p.insert_text((290, 810), f"Page {n} of 4", fontsize=9, fontname="helv")
    doc.save(pdf)
    out = _read(engine, pdf, 2)
    labels = [b.label for b in out.blocks]
    assert labels[0] == "page_header" and labels[-1] == "page_footer"
    assert out.blocks[-1].text == "Page 3 of 4" and out.blocks[-1].boxes  # kept in the JSON, with a box
    md, _ = page_markdown(out.blocks, None, 2, None)
    assert "ACME" not in md and "Page 3" not in md
    assert md.startswith("Content of page 3")


def test_table_of_contents_becomes_a_table(tmp_path, engine):
    pdf = tmp_path / "toc.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    _lines(
        p,
        80,
        [
            "Notices . . . . . . . . . . . . vii",
            "Preface . . . . . . . . . . . . . xi",
            "Chapter 1. Security . . . . . . . 1",
        ],
    )
    doc.save(pdf)
    [block] = [b for b in _read(engine, pdf).blocks if b.label == "table"]
    assert block.text.startswith("<table><tr><td>Notices . . . . . . . . . . . .</td><td>vii</td></tr>")
    assert "<tr><td>Chapter 1. Security . . . . . . .</td><td>1</td></tr></table>" in block.text


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotated_page_is_read_upright_with_boxes_on_the_displayed_page(tmp_path, engine, rotation):
    pdf = tmp_path / f"rot{rotation}.pdf"
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    y = _lines(p, 80, ["Rotated Title"], size=22, font="hebo")
    _lines(p, y, ["First paragraph line one of the text,", "and line two of the same paragraph."])
    p.set_rotation(rotation)
    doc.save(pdf)
    out = _read(engine, pdf)
    assert [b.text for b in out.blocks] == [
        "# Rotated Title",
        "First paragraph line one of the text, and line two of the same paragraph.",
    ]
    width, height = generate.render(pdf, 0, DPI).size
    for b in out.blocks:
        x0, y0, x1, y1 = b.boxes[0]
        assert -1 <= x0 < x1 <= width + 1 and -1 <= y0 < y1 <= height + 1
    title = out.blocks[0].boxes[0]
    if rotation == 90:  # the page turned clockwise: the title is at the right, running down
        assert title[0] > width / 2 and title[3] - title[1] > title[2] - title[0]
    if rotation == 180:
        assert title[1] > height / 2


def test_text_drawn_sideways_on_an_upright_page(tmp_path, engine):
    """Rotated text (not a rotated page): a landscape table printed down the page."""
    pdf = tmp_path / "sideways.pdf"
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    x = 500
    for t in [
        "Sideways Heading",
        "the body line one runs downwards here,",
        "and the body line two follows it.",
    ]:
        p.insert_text((x, 72), t, fontsize=22 if "Heading" in t else 11, rotate=270, fontname="helv")
        x -= 30 if "Heading" in t else 15
    doc.save(pdf)
    out = _read(engine, pdf)
    assert [b.text for b in out.blocks] == [
        "# Sideways Heading",
        "the body line one runs downwards here, and the body line two follows it.",
    ]
    assert any("turned" in n for n in out.notes)
    assert out.blocks[0].boxes[0][0] > out.blocks[1].boxes[0][0]  # the heading is the rightmost column


def test_rotate_box_round_trips():
    for turns in range(4):
        box = (10.0, 20.0, 30.0, 60.0)
        assert unrotate_box(rotate_box(box, turns, 100, 200), turns, 100, 200) == box


def test_font_weight_from_names_and_flags():
    assert font_weight("KoPubDotumLight", 0) == 300
    assert font_weight("KoPubDotumMedium", 0) == 500
    assert font_weight("ABCDEF+Helvetica-Bold", 0) == 700
    assert font_weight("SFBX1000", 0) == 700
    assert font_weight("Times-Roman", 16) == 700
    assert font_weight("Helvetica", 0) == 400
