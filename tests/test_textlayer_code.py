"""Code and formulas from the text layer (issue 16, item 9): monospaced runs become fenced code blocks
with their line breaks and indentation; superscripts and subscripts keep their position."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.structure import ned
from ocr_app.render.markdown import page_markdown
from ocr_app.schema import PageRequest
from tests.factories import pdf_page_request

DPI = 72


def _request(pdf: Path) -> PageRequest:
    return pdf_page_request(pdf, 0, DPI)


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


CODE = [
    "def area(r):",
    '    """<b>Area</b> of a circle."""',
    "    if r < 0:",
    "        raise ValueError(r)",
    "    return 3.14159 * r ** 2",
]


def _code_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), "The function below computes the area of a circle.", fontsize=11)
    for k, line in enumerate(CODE):
        page.insert_text((72, 110 + 13 * k), line, fontsize=10, fontname="cour")
    page.insert_text((72, 110 + 13 * len(CODE) + 20), "It raises an error for negative radii.", fontsize=11)
    doc.save(path)
    return path


def test_monospaced_lines_become_one_fenced_block_with_indentation(tmp_path, engine):
    out = engine.predict_batch([_request(_code_pdf(tmp_path / "code.pdf"))])[0]
    assert [b.label for b in out.blocks] == ["text", "code", "text"]
    assert out.blocks[1].text == "```\n" + "\n".join(CODE) + "\n```"
    # Rendered as the writer does for the text layer: the fence shows "<b>" and "<" literally.
    md, _ = page_markdown(out.blocks, None, 0, None, keep_table_html=False)
    assert "```\n" + "\n".join(CODE) + "\n```" in md
    assert "&lt;" not in md


def test_superscripts_and_subscripts_keep_their_position(tmp_path, engine):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    x = 72
    # "E = mc²" and "H₂O": the script glyphs are smaller and raised/lowered, as TeX and Word set them.
    for text, size, rise in [
        ("The energy E = mc", 11, 0),
        ("2", 7, -4),
        (" and water H", 11, 0),
        ("2", 7, 2.5),
    ]:
        page.insert_text((x, 100 + rise), text, fontsize=size)
        x += pymupdf.get_text_length(text, fontsize=size)
    page.insert_text((x, 100), "O are both short.", fontsize=11)
    pdf = tmp_path / "scripts.pdf"
    doc.save(pdf)
    out = engine.predict_batch([_request(pdf)])[0]
    text = " ".join(b.text for b in out.blocks)
    assert text == "The energy E = mc<sup>2</sup> and water H<sub>2</sub>O are both short."
    md, _ = page_markdown(out.blocks, None, 0, None, keep_table_html=False)
    assert md == text  # the marks survive rendering (a balanced pair without attributes)
    # The benchmark strips the tags like any HTML: the words stay comparable.
    assert ned("The energy E = mc 2 and water H 2 O are both short.", md) == 0.0


def test_code_with_a_fence_inside_gets_a_longer_fence_and_stays_literal():
    from ocr_app.render.markdown import block_markdown
    from ocr_app.schema import Block
    from ocr_app.structure.paragraphs import code_block

    text = code_block(['print("```")', "x = a<b"], [(0, 0, 96, 10), (0, 12, 56, 22)])
    assert text == '````\nprint("```")\nx = a<b\n````'
    assert block_markdown(Block("code", text), keep_table_html=False) == text
    # A "code" block that is not one closed fence is escaped like any text.
    assert block_markdown(Block("code", "```\nx\n```\n<script>"), keep_table_html=False).endswith(
        "&lt;script>"
    )


def test_a_typewritten_page_is_prose_not_one_code_block(tmp_path, engine):
    """A text file printed to PDF is set in Courier all through: still headings and paragraphs."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), "MEETING NOTES", fontsize=18, fontname="cour")
    for k, line in enumerate(
        ["The committee met on Monday and agreed", "on the budget for the coming year."]
    ):
        page.insert_text((72, 120 + 13 * k), line, fontsize=10, fontname="cour")
    doc.save(tmp_path / "typed.pdf")
    out = engine.predict_batch([_request(tmp_path / "typed.pdf")])[0]
    assert [b.label for b in out.blocks][1:] == ["text"] and out.blocks[0].text.endswith("# MEETING NOTES")
    assert out.blocks[1].text == "The committee met on Monday and agreed on the budget for the coming year."


LISTING = [
    "#include <stdio.h>",
    "#include <ffi.h>",
    "",
    "int main()",
    "{",
    "  ffi_cif cif;",
    "  ffi_type *args[1];",
    "  void *values[1];",
    "  char *s;",
    "  ffi_arg rc;",
    "",
    "  /* Initialize the argument info vectors */",
    "  args[0] = &ffi_type_pointer;",
    "  values[0] = &s;",
    "  return 0;",
    "}",
]


def test_a_page_that_is_one_example_under_a_sentence_is_a_listing(tmp_path, engine):
    """A manual's one-page node (GNU Texinfo's HTML, printed): a numbered title, one sentence, and an
    example in Courier that holds most of the page's characters. Its lines read as code, so the page
    is no typescript: the example is one fenced listing, and the sentence, larger than the listing's
    type, is the body's text, not a heading. Before: the example ran together as paragraphs and the
    sentence was a ``###`` heading."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((48, 70), "2.2 Simple Example", fontsize=14, fontname="tibo")
    page.insert_text(
        (48, 96), "Here is a trivial example that calls puts a few times.", fontsize=12, fontname="tiro"
    )
    for k, line in enumerate(LISTING):
        page.insert_text((86, 122 + 11.3 * k), line, fontsize=9.8, fontname="cour")
    doc.save(tmp_path / "example.pdf")
    md = "\n\n".join(b.text for b in engine.predict_batch([_request(tmp_path / "example.pdf")])[0].blocks)
    fenced = "\n".join(line for line in LISTING if line)
    assert f"```\n{fenced}\n```" in md.replace("\n\n", "\n"), md
    assert "\nHere is a trivial example that calls puts a few times.\n" in f"\n{md}\n", md
    prose = md.split("```")[0]  # the listing's "#include" lines are code, not headings
    assert [ln for ln in prose.splitlines() if ln.startswith("#")] == ["## 2.2 Simple Example"], md
