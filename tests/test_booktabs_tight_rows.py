"""Body rows set without padding under a head set apart by a rule (issue 30, round 24).

Why: ifplatform's manual (TeX Live's documentation) prints a booktabs table of platforms and their
``uname`` strings: the head, a rule with space around it, then seven rows one line each, no padding
between them. The word grid measured the row rhythm from the gaps between lines; the one wider gap,
under the head, made every other gap "line spacing inside a cell", and the seven rows came out as one
row of seven-line cells ("FreeBSD OpenBSD Solaris …") - the held-out set's "rows merged". When the
only wider gap is the one under the first line and every body line opens with a key flush with the
others, that line is the head and the body's own gaps say what a row is
(``borderless_rows._head_apart``). A key's line set in from the others is a wrapped key, and such a body is
read as before (``test_rule_drawn_tables``). The page is built with PyMuPDF.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.ingest.pdf import import_pymupdf
from ocr_app.structure.lines import LayoutConfig, body_size
from ocr_app.structure.passes.tables import detect_tables
from tests.factories import page_markdown, table_rows

ROWS = [
    ("FreeBSD", "FreeBSD"),
    ("OpenBSD", "OpenBSD"),
    ("Solaris", "SunOS"),
    ("HPUX", "HP-UX"),
    ("IRIX", "IRIX64"),
    ("AIX", "aix6"),
    ("Cray UNICOS", "sn5176"),
]


def _manual_page(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text(
        (72, 90), "The package tests which system it runs on by the name uname gives.", fontsize=10
    )
    left, right, y = 220.0, 390.0, 140.0
    page.draw_line((left - 5, y - 14), (right + 5, y - 14), width=0.8)
    page.insert_text((left, y), "Platform", fontname="tiro", fontsize=10)
    page.insert_text((right - 70, y), "uname string", fontname="tiro", fontsize=10)
    page.draw_line((left - 5, y + 6), (right + 5, y + 6), width=0.5)
    y += 22
    for name, uname in ROWS:
        page.insert_text((left, y), name, fontname="tiro", fontsize=10)
        page.insert_text((right - 60, y), uname, fontname="cour", fontsize=9)
        y += 12.5
    page.draw_line((left - 5, y - 6), (right + 5, y - 6), width=0.8)
    page.insert_text((72, y + 20), "Table 1: List of operating systems and their uname strings.", fontsize=10)
    doc.save(path)
    return path


def test_rows_without_padding_under_a_ruled_head_are_one_line_each(tmp_path: Path, textlayer_engine):
    md = page_markdown(textlayer_engine, _manual_page(tmp_path / "platforms.pdf"), 0)
    rows = table_rows(md)
    assert rows[0] == ["Platform", "uname string"], md
    assert [tuple(r) for r in rows[1:]] == ROWS, md


def test_the_word_grid_reads_one_row_a_line(tmp_path: Path):
    """The word grid alone (what the page gets where the layout model boxes no table, as on
    ifplatform's page, whose table box scored under the bar)."""
    import_pymupdf()
    with pymupdf.open(_manual_page(tmp_path / "platforms.pdf")) as doc:
        lines = extract_lines(doc[0], 2.0, typescript=False)
    held = [ln for ln in lines if 240 <= ln.box[1] <= 500]
    tables, _ = detect_tables(held, 1224.0, LayoutConfig(), body_size(lines))
    (table,) = tables
    texts = [[c.text if hasattr(c, "text") else c for c in row] for row in table.rows]
    assert texts == [["Platform", "uname string"], *[list(r) for r in ROWS]], texts
