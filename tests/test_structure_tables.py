"""``passes.tables``: contents lists and grids of words become ``Table`` items, inside one column of a
two-column page too, and a small grid outside the layout model's table regions stays text."""

from __future__ import annotations

from ocr_app.structure.lines import LayoutConfig, TextLine
from ocr_app.structure.passes.tables import detect_tables, tables_beside_a_gutter
from ocr_app.structure.pipeline import build_blocks

BODY = 10.0
CONFIG = LayoutConfig()


def _line(text: str, x0: float, y0: float, x1: float) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + BODY), BODY)


def test_three_rows_with_dot_leaders_are_a_table_of_contents():
    entries = [("Introduction", "1"), ("Methods", "5"), ("Results and discussion", "12")]
    lines = [_line(f"{t} . . . . . . . {p}", 50, 100 + 14 * k, 400) for k, (t, p) in enumerate(entries)]
    prose = _line("A paragraph after the contents.", 50, 200, 300)
    tables, rest = detect_tables([*lines, prose], 600, CONFIG, BODY)
    assert len(tables) == 1
    table = tables[0]
    assert table.contents
    assert [r[1] for r in table.rows] == ["1", "5", "12"]
    assert [r[0].split(" .")[0] for r in table.rows] == [t for t, _ in entries]
    assert rest == [prose]


def test_two_dot_leader_rows_are_not_yet_a_table():
    lines = [_line(f"Part {k} . . . . . . {k}", 50, 100 + 14 * k, 400) for k in (1, 2)]
    tables, rest = detect_tables(lines, 600, CONFIG, BODY)
    assert tables == []
    assert rest == lines


def _grid(rows: int, x0: float = 100, step: float = 120) -> list[TextLine]:
    return [
        _line(str(25 * (r + c) + 7), x0 + step * c, 100 + 14 * r, x0 + step * c + 20)
        for r in range(rows)
        for c in range(3)
    ]


def test_a_grid_of_numbers_is_a_table_and_keeps_the_lines_it_was_built_from():
    grid = _grid(4)
    tables, rest = detect_tables(grid, 600, CONFIG, BODY)
    assert len(tables) == 1
    assert len(tables[0].rows) == 4
    assert {id(it) for it in tables[0].items} == {id(ln) for ln in grid}
    assert rest == []


def test_a_table_in_one_column_of_a_two_column_page_is_found_beside_the_gutter():
    cells = _grid(3, x0=50, step=80)  # the left column's table: x 50 … 230
    left = [_line(f"left column prose line {k}", 50, 160 + 14 * k, 280) for k in range(5)]
    right = [_line(f"right column prose line {k}", 320, 100 + 14 * k, 550) for k in range(8)]
    found, rest = tables_beside_a_gutter([*cells, *left, *right], 600, CONFIG, BODY)
    assert len(found) == 1
    assert {id(it) for it in found[0].items} == {id(ln) for ln in cells}
    assert {id(ln) for ln in rest} == {id(ln) for ln in [*left, *right]}


def test_a_small_grid_outside_the_layout_models_table_regions_stays_text():
    grid = _grid(2)
    assert [b.label for b in build_blocks(grid, page_width=600)] == ["table"]
    elsewhere = [(0.0, 500.0, 600.0, 700.0)]
    labels = [b.label for b in build_blocks(grid, page_width=600, table_regions=elsewhere)]
    assert "table" not in labels
    inside = [(90.0, 90.0, 400.0, 130.0)]
    assert [b.label for b in build_blocks(grid, page_width=600, table_regions=inside)] == ["table"]
