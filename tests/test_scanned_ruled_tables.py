"""Ruled tables on scans whose rulings do not part every row, and heads on a dark bar (issue 30, round 18).

Why: the light engine took a ruled grid's cells as the table's, so a table ruled in columns with its
body rows set one a line between two rules (ICDAR's eu-008: thirteen countries) came out as one row
of thirteen lines a cell. A grid whose rulings do not part the rows its words show (two or more cells
of values stacked one a line, ``structure.cell_lines``) is read by the structure model, as on the text
layer. And heads set light on a dark bar leave the bar's top edge no ruling: the grid started under
them and the heads were read as a line over the table (us-032).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from bench.accuracy import icdar
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.cell_lines import set_apart, stacked_row
from ocr_app.structure.lines import TextLine, group_rows
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_verdict import head_only_columns
from tests.factories import table_rows

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"


def _scan(name: str, page: int = 0) -> Image.Image:
    with pymupdf.open(DATA / f"{name}.pdf") as doc:
        pix = doc[page].get_pixmap(dpi=144, colorspace=pymupdf.csGRAY)
        return Image.frombytes("L", (pix.width, pix.height), pix.samples).convert("RGB")


def _tables(engine, name: str, page: int = 0) -> list[str]:
    out = engine.predict_batch(
        [PageRequest(page=PageImage(image=_scan(name, page), index=page, source=name), prompt="")]
    )[0]
    return [b.text for b in out.blocks if b.label == "table"]


def _truth_keys(name: str) -> list[str]:
    with pymupdf.open(DATA / f"{name}.pdf") as doc:
        ((table, *_),) = [icdar.load_truth(s, r, doc) for s, r in icdar.readings(DATA, name)]
    rows: dict[int, str] = {}
    for c in sorted(table.cells, key=lambda c: (c.r0, c.c0)):
        rows.setdefault(c.r0, c.text)
    return [rows[r] for r in sorted(rows)]


def test_body_rows_set_between_two_rules_are_rows(light_engine):
    (table,) = _tables(light_engine, "eu-008")
    rows = table_rows(table)
    keys = [r[0] for r in rows]
    assert keys == _truth_keys("eu-008"), rows
    assert rows[1] == ["Bulgaria", "2.3", "3.2", "5.5"]
    assert rows[-1] == ["TOTAL", "58.99", "86.70", "145.69"]


def _blocks(engine, name: str) -> list[tuple[str, str]]:
    out = engine.predict_batch(
        [PageRequest(page=PageImage(image=_scan(name), index=0, source=name), prompt="")]
    )[0]
    return [(b.label, b.text) for b in out.blocks]


def test_heads_on_a_dark_bar_head_the_grid_under_them(light_engine):
    blocks = _blocks(light_engine, "us-032")
    (table,) = [t for label, t in blocks if label == "table"]
    rows = table_rows(table)
    assert rows[0] == ["Source", "Definition", "Examples"], rows
    assert table.startswith(
        "<table><thead><tr><th>Source</th><th>Definition</th><th>Examples</th></tr></thead>"
    )
    assert not any("Source Definition" in t for label, t in blocks if label != "table")
    keys = " ".join(r[0] for r in rows[1:])
    assert keys.index("Stationary:") < keys.index("Mobile:"), rows


def _line(text: str, x0: float, y0: float, x1: float) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + 20.0), 20.0)


def test_values_stacked_in_two_cells_are_rows_the_rulings_do_not_part():
    names = group_rows(
        [_line("Bulgaria", 10, 0, 90), _line("Cyprus", 10, 24, 80), _line("Malta", 10, 48, 70)]
    )
    figures = group_rows(
        [_line("2.3", 210, 0, 240), _line("0.21", 210, 24, 250), _line("0.28", 210, 48, 250)]
    )
    assert stacked_row([(names, 0.0, 200.0), (figures, 200.0, 400.0)])
    # one cell of stacked values beside one line is a taller row, not rows
    assert not stacked_row([(names, 0.0, 200.0), (group_rows([_line("5.5", 210, 0, 240)]), 200.0, 400.0)])


def test_a_wrapped_cell_is_no_stack():
    words = [
        _line("Emissions of 10 tons per year or", 10, 0, 190),
        _line("more of any one air toxic, or 25", 10, 24, 192),
    ]
    wrapped = group_rows(words)
    assert not stacked_row([(wrapped, 0.0, 200.0), (wrapped, 0.0, 200.0)])


@pytest.mark.parametrize(
    ("gap", "apart"), [(0.0, True), (1.5, False)], ids=["text layer: any two pieces", "OCR: a word space"]
)
def test_pieces_of_one_ocr_line_a_word_space_apart_stand_in_one_column(gap, apart):
    """OCR cuts "Number of   member states" at a wide word space; the text layer's pieces are a
    column gap apart already."""
    row = group_rows([_line("Number of", 10, 0, 80), _line("member states", 95, 0, 190)])
    assert set_apart(row, gap) is apart


def test_heads_wrapped_in_title_case_are_no_stack_of_rows():
    """us-013's heads, "Alternate Assessment" over "Based on Modified", are not wrapped text by the
    lower-case test, but no cell holds figures one a line: no rows the rulings missed."""
    heads = [
        group_rows([_line("Alternate Assessment", x, 0, x + 150), _line("Based on Modified", x, 24, x + 140)])
        for x in (10.0, 210.0)
    ]
    assert not stacked_row([(heads[0], 0.0, 200.0), (heads[1], 200.0, 400.0)])


def test_a_heads_second_piece_is_no_column(light_engine):
    """eu-019's heads in white on an orange bar: OCR reads "Domestic" and "(%)" apart, and the word
    grid gave each "(%)" a column of its own, empty under the head (eight columns for five). A reading
    with a column that holds no body cell loses to the structure model's."""
    (table,) = _tables(light_engine, "eu-019", 2)
    rows = table_rows(table)
    assert rows[0] == ["Country", "Domestic (%)", "Imported (%)", "Unknown (%)", "Total (n)"], rows
    assert rows[1] == ["Austria", "0", "100", "0", "1"]
    assert {len(r) for r in rows} == {5}


def test_a_column_empty_under_its_head_is_a_heads_piece():
    head = [Cell("Country"), Cell("Domestic"), Cell("(%)"), Cell("Total")]
    body = [
        [Cell("Austria"), Cell("0"), Cell(""), Cell("1")],
        [Cell("Belgium"), Cell("0"), Cell(""), Cell("3")],
    ]
    assert head_only_columns([head, *body], 1)
    assert head_only_columns([head, *body], 0)  # no head marked: the first row is taken as one
    full = [[Cell("Austria"), Cell("0"), Cell("n/a"), Cell("1")], *body[1:]]
    assert not head_only_columns([head, *full], 1)


def test_a_word_grid_that_leaves_the_heads_out_does_not_replace_the_models_reading(light_engine):
    """eu-026's table of answers on a scan: the structure model reads its heads ("Freq.", "Percent",
    …) and merges three answers into one cell spanning their rows; the word grid parts the answers
    but leaves the heads out. Counting the model's rows under a spanning key as one row
    (``table_verdict.keyed_rows``, round 19) made the word grid win and the heads go to the
    paragraph above; it counts so only where the word grid holds all the model's words."""
    tables = [t for page in (2, 3) for t in _tables(light_engine, "eu-026", page)]
    (table,) = [t for t in tables if "sold some of the assets" in t]
    rows = table_rows(table)
    assert rows[0][1:] == ["Freq.", "Percent", "Mean Loss", "Fraction of Wealth Lost"], rows
