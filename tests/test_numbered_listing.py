"""A listing numbered in the margin is code, not a table of numbers and lines (issue 30, round 24).

Why: the amsfonts package's manual (docstrip, in TeX Live's documentation) prints its code with each
line's number in the text face in the margin ("134" beside ``\\global\\let\\lhd\\@@undefined``). Only
rows wholly in a monospaced font counted as a listing's, so the numbers and the code made a two-column
table on every page of code (19 tables in 10 pages). A row of monospaced text after a line number on
its line is a listing's row now where the numbers run on (``lines.listing_rows``); a table of
character codes beside command names (amsfndoc's "2304" beside ``\\nless``) and a footnote's raised
mark before a web address set in typewriter are not. The page is built with PyMuPDF.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from ocr_app.structure.lines import Row, TextLine, listing_rows
from tests.factories import page_markdown

CODE = [
    r"\global\let\lhd\@@undefined",
    r"\global\let\unlhd\@@undefined",
    r"\DeclareMathSymbol{\lhd}  {\mathbin}{AMSa}{43}",
    r"\DeclareMathSymbol{\unlhd}{\mathbin}{AMSa}{45}",
    r"\DeclareMathSymbol{\rhd}  {\mathbin}{AMSa}{42}",
]
PROSE = (
    "The symbols look like their relatives, but the math atom types are different, so we need to issue",
    "different statements for each of them, as the next lines of the package do.",
)


def _manual_page(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 100.0
    for line in PROSE:
        page.insert_text((100, y), line, fontname="tiro", fontsize=10)
        y += 13
    y += 10
    for k, code in enumerate(CODE, start=134):
        page.insert_text((100, y), str(k), fontname="tiro", fontsize=7)
        page.insert_text((125, y), code, fontname="cour", fontsize=9)
        y += 11
    y += 14
    page.insert_text(
        (100, y),
        "The fonts are loaded by the files below, one for each family.",
        fontname="tiro",
        fontsize=10,
    )
    # a footnote: a raised mark before an address in typewriter
    page.insert_text((100, 700), "1", fontname="tiro", fontsize=6)
    page.insert_text((104, 703), "https://ctan.org/pkg/amsfonts", fontname="cour", fontsize=8)
    doc.save(path)
    return path


def test_a_listing_numbered_in_the_margin_is_one_code_block(tmp_path: Path, textlayer_engine):
    md = page_markdown(textlayer_engine, _manual_page(tmp_path / "listing.pdf"), 0)
    assert "<table>" not in md, md
    block = md[md.index("```") : md.rindex("```")]
    for k, code in enumerate(CODE, start=134):
        assert str(k) in block and code.split("{")[0] in block, (k, md)
    footnote = md[md.index("https://ctan.org/pkg/amsfonts") - 10 :]
    assert "```" not in footnote, md  # the footnote's address stays text


def _row(number: str, code: str, y: float) -> Row:
    return Row(
        [
            TextLine(text=number, box=(100.0, y + 1, 112.0, y + 9), size=7.0),
            TextLine(text=code, box=(125.0, y, 300.0, y + 10), size=9.0, mono=True),
        ]
    )


def test_numbers_that_run_on_make_a_listing_and_codes_do_not():
    numbered = [_row(str(n), r"\global\let\lhd", 100.0 + 12 * k) for k, n in enumerate((134, 135, 136))]
    assert listing_rows(numbered) == {id(r) for r in numbered}
    codes = [
        _row(c, cmd, 100.0 + 12 * k)
        for k, (c, cmd) in enumerate((("2304", r"\nless"), ("2302", r"\nleq"), ("2305", r"\ngtr")))
    ]
    assert listing_rows(codes) == set()
