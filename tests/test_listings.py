"""Listings in a manual: a page mostly in a monospaced font, and a listing's columns set with spaces
(issue 30, text order; found on texinfo's libtasn1 manual).

Why: a page of `--help` output and ASN.1 examples is 60–67 % monospaced; it was taken for a
typescript (every line prose), so its examples ran together as paragraphs. A document whose body
font is proportional has no typescript pages (``pdf_spans.extract_lines(typescript=...)``). A
listing's columns ("-c, --check" beside "checks the syntax only") are pieces of a line a few spaces
apart: they were read as a table, or as two columns of the page one after the other. Rows wholly in
a monospaced font are no table's rows and no page columns' lines; the code block keeps their spacing.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request, table_rows

PROSE = (
    "The tool reads a single file of definitions and writes an array for the library functions; "
    "its options are listed below, and the example after them shows a run."
)
OPTIONS = [
    ("-c, --check", "checks the syntax only"),
    ("-o, --output=FILE", "output file"),
    ("-n, --name=NAME", "array name"),
    ("-h, --help", "display this help and exit"),
    ("-v, --version", "output version information and exit"),
]


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _markdown(engine, pdf: Path, index: int = 0) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, index, 72, prompt="")])[0].blocks)


def _prose(page: pymupdf.Page, y: float, text: str = PROSE) -> float:
    box = pymupdf.Rect(72, y, 523, y + 60)
    page.insert_textbox(box, text, fontsize=11, fontname="tiro")
    return y + 50


def _manual(path: Path) -> Path:
    """Pages in a proportional face around a page that is mostly a listing of options and an example."""
    doc = pymupdf.open()
    for k in range(3):
        page = doc.new_page(width=595, height=842)
        y = 80.0
        if k == 1:
            y = _prose(page, y)
            page.insert_text((72, y), "Usage: asn1Parser [OPTION] FILE", fontsize=10, fontname="cour")
            y += 24
            for flag, what in OPTIONS:
                page.insert_text((84, y), flag, fontsize=10, fontname="cour")
                page.insert_text((204, y), what, fontsize=10, fontname="cour")
                y += 13
            y += 12
            for line in [
                "Dss-Sig-Value ::= SEQUENCE {",
                "     r       INTEGER,",
                "     s       INTEGER,",
                "}",
            ]:
                page.insert_text((72, y), line, fontsize=10, fontname="cour")
                y += 13
            for line in ["Report bugs to: help@example.org", "General help: <https://example.org/help/>"] * 3:
                page.insert_text((72, y + 12), line, fontsize=10, fontname="cour")
                y += 13
        else:
            y = 150.0
            for n in range(6):
                y = _prose(page, y, f"Section {k}.{n} of the manual. " + PROSE[:: -1 if n % 2 else 1])
    doc.save(path)
    return path


def test_a_manual_page_mostly_of_listings_keeps_its_code_blocks(tmp_path, engine):
    md = _markdown(engine, _manual(tmp_path / "manual.pdf"), 1)
    assert "<table>" not in md
    assert md.count("```") >= 2
    code = md[md.index("```") : md.rindex("```")]
    for flag, what in OPTIONS:  # each option beside its description, on one line, in one column
        line = next(ln for ln in code.splitlines() if flag in ln)
        assert line.rstrip().endswith(what), line
    starts = {
        ln.index(what) for flag, what in OPTIONS for ln in code.splitlines() if ln.strip().startswith(flag)
    }
    assert len(starts) == 1, "the descriptions start in one column"
    assert "     r       INTEGER," in code and "     s       INTEGER," in code
    assert md.index("The tool reads") < md.index("-c, --check") < md.index("Report bugs")


def test_a_typescript_is_still_prose(tmp_path, engine):
    """Every page in Courier: the document's body font is monospaced, its pages are a typescript."""
    doc = pymupdf.open()
    for _ in range(2):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 80), "MEETING NOTES", fontsize=16, fontname="cour")
        for k, line in enumerate(
            [
                "The committee met on Monday and agreed",
                "on the budget for the coming year.",
                "Next meeting: May.",
            ]
        ):
            page.insert_text((72, 120 + 13 * k), line, fontsize=10, fontname="cour")
    doc.save(tmp_path / "typed.pdf")
    md = _markdown(engine, tmp_path / "typed.pdf")
    assert "```" not in md and "The committee met on Monday and agreed on the budget" in md


def test_a_table_with_a_column_of_code_is_still_a_table(tmp_path, engine):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = _prose(page, 80)
    page.insert_text((72, y), "Option", fontsize=11, fontname="hebo")
    page.insert_text((250, y), "Meaning", fontsize=11, fontname="hebo")
    for flag, what in OPTIONS:
        y += 16
        page.insert_text((72, y), flag, fontsize=10, fontname="cour")
        page.insert_text((250, y), what.capitalize(), fontsize=11, fontname="tiro")
    _prose(page, y + 30)
    doc.save(tmp_path / "table.pdf")
    rows = table_rows(_markdown(engine, tmp_path / "table.pdf"))
    assert rows[0] == ["Option", "Meaning"]
    assert [r[0] for r in rows[1:]] == [flag for flag, _ in OPTIONS]
