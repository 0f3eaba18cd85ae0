"""Heads in the body's weight centred over a borderless table's columns (issue 30, round 24).

Why: dvipdfm's manual (TeX Live's documentation) sets its table of command-line options with no
rules: "Option" and "Description" in italics, each centred over its column, over options in a
typewriter face beside descriptions that wrap. The word grid found the rows but left the heads out
(they are neither bold nor lined up with the cells), so they came out as a line of text over a table
without a header. A line right over such a table with one short head over each of its columns is
now its header row (``borderless_heads.plain_heads``). The page is built with PyMuPDF.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from tests.factories import page_markdown, table_rows

OPTIONS = [
    ("-c", ["Disable color specials. Specifying this option forces all color", "commands to be ignored."]),
    ("-e", ["Disable partial font embedding. This may be useful for forms", "which need complete fonts."]),
    ("-f", ["Set font map file name."]),
    ("-m number", ["Specify an additional magnification for the document."]),
    ("-o filename", ["Set the output PDF file name."]),
    (
        "-p papersize",
        ["Specify the output paper size. Valid paper sizes are letter,", "legal, ledger, a4 or a3."],
    ),
]


def _manual_page(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((150, 90), "Table 1\u2014Command line options", fontname="hebo", fontsize=13)
    y = 125.0
    for text, centre in (("Option", 150.0), ("Description", 350.0)):
        w = pymupdf.get_text_length(text, fontname="tiit", fontsize=10)
        page.insert_text((centre - w / 2, y), text, fontname="tiit", fontsize=10)
    y += 20
    for option, lines in OPTIONS:
        page.insert_text((110, y), option, fontname="cour", fontsize=10)
        for line in lines:
            page.insert_text((200, y), line, fontname="tiro", fontsize=10)
            y += 12.5
        y += 4
    page.insert_text(
        (110, y + 30),
        "The options may be given in any order on the command line.",
        fontname="tiro",
        fontsize=10,
    )
    doc.save(path)
    return path


def test_italic_heads_centred_over_the_columns_are_the_header_row(tmp_path: Path, textlayer_engine):
    md = page_markdown(textlayer_engine, _manual_page(tmp_path / "manual.pdf"), 0)
    assert "<thead><tr><th>Option</th><th>Description</th></tr></thead>" in md, md
    rows = table_rows(md)
    assert [r[0] for r in rows[1:]] == [o for o, _ in OPTIONS], md
    assert "Option Description" not in md.replace("<th>Option</th><th>Description</th>", "")
