"""Paragraphs set apart by a small skip (issue 30, item 5; found on texinfo's libtasn1 manual).

Why: texinfo sets a function's argument notes as paragraphs 0.4 em apart, too little for the blank
line the paragraph rule looks for, so a function's notes ran together as one paragraph. A paragraph
that ends a sentence well short of the column's right edge, with a little more space under it than
between its lines, ends there (``passes.blocks._SectionBlocks.ended_short``). Ragged-right text ends
sentences short of the edge inside a paragraph too, but at one spacing and where the next word did not
fit: it stays one paragraph. A line that ends a sentence where the next word would have fitted was
broken on purpose, and starts a paragraph even at one spacing (round 43).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

NOTES = [
    "The file holds the declarations to read, one after the other, in the order the parser expects "
    "them to come; a declaration may refer to one further down, and the parser keeps a list of the "
    "names it has still to meet before the file ends.",
    "The pointer returned points to the structure created from the declarations of the file, which "
    "the caller owns from then on and gives back with the delete function when it is done with it "
    "and its children.",
    "Function used to start the parse algorithm. Creates the structures needed to manage the "
    "definitions included in the file, and checks that every identifier is known.",
]


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _paragraphs(engine, pdf: Path) -> list[str]:
    md = blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, 72, prompt="")])[0].blocks)
    return [p for p in md.split("\n\n") if p.strip()]


def _page(path: Path, texts: list[str], skip: float, align: int) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 100.0
    for text in texts:
        box = pymupdf.Rect(90, y, 500, y + 200)
        left = page.insert_textbox(box, text, fontsize=11, fontname="tiro", lineheight=1.2, align=align)
        y += 200 - left + skip
    doc.save(path)
    return path


def test_justified_paragraphs_a_small_skip_apart_stay_apart(tmp_path, engine):
    paragraphs = _paragraphs(
        engine, _page(tmp_path / "notes.pdf", NOTES, skip=3.0, align=pymupdf.TEXT_ALIGN_JUSTIFY)
    )
    assert len(paragraphs) == 3, paragraphs
    assert paragraphs[1].startswith("The pointer returned") and paragraphs[2].startswith("Function used")


RAGGED = (
    "The parser reads the file. It builds the tree. Afterwards it checks every name against the table. "
    "Unknown names are errors. Occasionally the caller gets only the first one. Nothing is written. "
    "Everything else waits until the tree is complete. Misspellings are reported with their line numbers."
)


def test_ragged_lines_that_end_sentences_at_one_spacing_are_one_paragraph(tmp_path, engine):
    # Wrapped ragged right in a box 230 pt wide, four lines end a sentence short of the edge: the
    # next word ("Afterwards", "Unknown", …) did not fit, so the lines wrapped and the paragraph goes on.
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(90, 100, 320, 400), RAGGED, fontsize=11, fontname="tiro", lineheight=1.2)
    lines = [
        " ".join(s["text"] for s in ln["spans"]) for b in page.get_text("dict")["blocks"] for ln in b["lines"]
    ]
    assert sum(line.endswith(".") for line in lines[:-1]) >= 3, lines
    doc.save(tmp_path / "ragged.pdf")
    assert _paragraphs(engine, tmp_path / "ragged.pdf") == [RAGGED]


def test_lines_broken_by_hand_after_a_sentence_are_paragraphs(tmp_path, engine):
    # Broken on purpose: each line ends a sentence where the next line's first word would have fitted
    # inside the widest line (a notice, a letter, rustdoc's summary line over its paragraph), at one
    # spacing (round 43).
    text = "The parser reads the file.\nThen it checks every name.\nNothing is written until every name is in the table."
    paragraphs = _paragraphs(
        engine, _page(tmp_path / "broken.pdf", [text], skip=0, align=pymupdf.TEXT_ALIGN_LEFT)
    )
    assert paragraphs == text.split("\n"), paragraphs


def _list_then_paragraph(path: Path, last_item: str) -> Path:
    """A bulleted list (text at x = 105) and a paragraph whose first line is set in to x = 105."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 100.0
    for item in ["CHOICE;", "ANY;", last_item]:
        page.insert_text((99, y), "•", fontsize=11, fontname="tiro")
        for k, line in enumerate(item.split("\n")):
            page.insert_text((105, y + 13.2 * k), line, fontsize=11, fontname="tiro")
        y += 13.2 * (item.count("\n") + 1) + 3
    page.insert_text(
        (105, y + 4), "This version does not handle the REAL type. It does not support", fontsize=11
    )
    page.insert_text(
        (90, y + 17.2), "the AUTOMATIC TAGS option, nor the EXPORT and IMPORT sections.", fontsize=11
    )
    doc.save(path)
    return path


def test_a_paragraph_set_in_at_a_list_items_text_after_a_finished_item_is_no_part_of_it(tmp_path, engine):
    """libtasn1's list of types ends "• ANY DEFINED BY." and a paragraph follows, its first line set
    in to where the items' text starts: it was joined to the last item."""
    paragraphs = _paragraphs(engine, _list_then_paragraph(tmp_path / "types.pdf", "ANY DEFINED BY."))
    assert paragraphs[0].splitlines()[-1] == "- ANY DEFINED BY."
    assert paragraphs[1].startswith(
        "This version does not handle the REAL type. It does not support the AUTOMATIC"
    )


def test_a_list_item_that_wraps_keeps_its_second_line(tmp_path, engine):
    item = "ANY DEFINED BY, whose type is told by the value of another field of the same\nsequence."
    paragraphs = _paragraphs(engine, _list_then_paragraph(tmp_path / "wrap.pdf", item))
    assert paragraphs[0].splitlines()[-1].endswith("of the same sequence.")
