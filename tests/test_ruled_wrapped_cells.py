"""Ruled tables whose cells wrap or hold bulleted lists (issue 30, round 16).

Why: ICDAR 2013's us-015 draws every row and column of its two tables, and its cells hold lists set
with a symbol-font bullet a tab before each item and prose wrapped over several lines. The bullets
reported their font's whole box (2.5 × the type size, centred above the baseline), so they shared
no row with their words; a cell of wrapped lines in two columns of one ruled row was taken for
rows stacked without rules; and the structure model cut each ruled row at its list items. The
bullets now get their type's band (``pdf_spans._type_band``), a ruled row whose cells read as text
broken at the cell's width is no stack (``textlayer._wrapped``), and a grid ruled throughout keeps
its drawn rows where the model reads more. eu-021: a header bar the model read as one cell over a
column more than the table has is parted over the columns with words, and a row of empty cells the
model read under the last row is dropped (``slot_columns.split_spans``, ``drop_empty_rows``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.page_tables import ruled_tables
from ocr_app.engines.pdf_spans import _type_band, extract_lines
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure import slot_columns, slot_rows, table_slots
from tests.factories import page_markdown

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"


@pytest.fixture(scope="module")
def engine(textlayer_engine: TextLayerEngine) -> TextLayerEngine:
    assert textlayer_engine._learned, "the tables extra (rapid-table 0.3.0) is part of the dev install"
    return textlayer_engine


def _rows(md: str) -> list[list[str]]:
    """The first table's rows, each cell's text with its line breaks (``<br>``) as newlines."""
    table = md[md.index("<table>") : md.index("</table>")]
    return [
        [c.replace("<br>", "\n") for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
        for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)
    ]


def test_us015_a_bulleted_list_in_a_ruled_cell_stays_in_its_row(engine):
    md = page_markdown(engine, DATA / "us-015.pdf", 1)
    rows = _rows(md)
    assert [r[0] for r in rows] == [
        "Item Property",
        "Clarity or relevance",
        "Response range",
        "Variability",
        "Reproducibility",
        "Inter-item correlation",
        "Ability to detect change",
        "Item discrimination",
        "Redundancy",
        "Recall period",
    ]
    assert all(len(r) == 2 for r in rows), rows
    clarity = rows[1][1]
    assert clarity.count("•") == 4 and clarity.count("\n") == 3, clarity
    assert clarity.startswith("• Reported as not relevant by a large segment of the target population")
    assert "Patients interpret items and responses" in clarity


def test_us015_rows_of_wrapped_cells_keep_their_drawn_rows_and_spans(engine):
    md = page_markdown(engine, DATA / "us-015.pdf", 3)
    rows = _rows(md)
    assert [r[0] for r in rows] == [
        "Measurement Property",
        "Reliability",
        "Internal consistency",
        "Inter-interviewer reliability (for interviewer-administered PROs only)",
        "Validity",
        "Construct validity",
        "Ability to detect change",
    ]
    table = md[md.index("<table>") : md.index("</table>")]
    assert re.search(r'<td rowspan="3">\s*Reliability', table), table[:600]
    assert re.search(r'<td rowspan="2">\s*Validity', table), table[:600]
    assert rows[1][1].startswith("Test-retest or intra")
    assert rows[1][1].endswith("PROs only)")


def test_a_tall_symbol_box_is_cut_to_its_type_band():
    line = {
        "bbox": (225.9, 320.5, 234.8, 350.6),
        "dir": (1.0, 0.0),
        "spans": [{"size": 12.0, "origin": (225.9, 345.2), "ascender": 0.8, "descender": -0.2}],
    }
    x0, y0, x1, y1 = _type_band(line)
    assert (x0, x1) == (225.9, 234.8)
    assert y0 == pytest.approx(345.2 - 9.6) and y1 == pytest.approx(345.2 + 2.4)
    usual = {**line, "bbox": (225.9, 335.0, 234.8, 348.0)}
    assert _type_band(usual) == usual["bbox"]
    upright = {**line, "dir": (0.0, -1.0)}  # a turned line keeps PyMuPDF's box
    assert _type_band(upright) == line["bbox"]


def _grid(tmp_path: Path, cells: list[list[str]], widths: list[float], heights: list[float]) -> Path:
    """A page with a table ruled on every row and column, each cell's text wrapped in its box."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    x_edges = [72.0]
    for w in widths:
        x_edges.append(x_edges[-1] + w)
    y_edges = [100.0]
    for h in heights:
        y_edges.append(y_edges[-1] + h)
    for x in x_edges:
        page.draw_line((x, y_edges[0]), (x, y_edges[-1]), width=0.7)
    for y in y_edges:
        page.draw_line((x_edges[0], y), (x_edges[-1], y), width=0.7)
    for r, row in enumerate(cells):
        for c, text in enumerate(row):
            box = pymupdf.Rect(x_edges[c] + 4, y_edges[r] + 3, x_edges[c + 1] - 4, y_edges[r + 1] - 2)
            assert page.insert_textbox(box, text, fontsize=10, fontname="helv") >= 0, text
    path = tmp_path / "grid.pdf"
    doc.save(path)
    return path


def _read(path: Path):
    with pymupdf.open(path) as doc:
        page = doc[0]
        lines = extract_lines(page, 2.0)
        tables, _, _ = ruled_tables(page, lines, 2.0)
    assert len(tables) == 1
    return tables[0]


def test_a_ruled_row_whose_cells_wrap_is_one_row_read_exactly(tmp_path):
    cells = [
        ["Measure", "What is assessed", "Review"],
        [
            "Test-retest reliability",
            "Stability of the scores over time when no change is expected in the concept",
            "Intraclass correlation coefficient and the period of assessment",
        ],
        [
            "Internal consistency",
            "Extent to which the items of a scale measure the same concept together",
            "Cronbach's alpha for the summary scores and the item-total correlations",
        ],
    ]
    table = _read(_grid(tmp_path, cells, [120, 150, 150], [24, 70, 70]))
    assert len(table.rows) == 3
    assert table.exact, "every row and column is ruled and each cell is one wrapped text"
    assert table.rows[1][1].text.startswith("Stability of the scores")
    assert "\n" not in table.rows[1][1].text


def test_values_stacked_one_a_line_in_a_ruled_row_are_rows_not_ruled_apart(tmp_path):
    cells = [
        ["Fruit", "Crates", "Price"],
        ["Apples\nPears\nPlums\nFigs", "12\n7\n30\n4", "1.20\n0.90\n2.10\n3.40"],
    ]
    table = _read(_grid(tmp_path, cells, [120, 100, 100], [24, 72]))
    assert not table.exact, "four values a cell, one a line, are rows the rules do not part"


def _cell(row: int, col: int, words: list[tuple[float, str]], y: float, **kw) -> table_slots.Slot:
    return table_slots.Slot(row, col, words=[((x, y, x + 8 * len(t), y + 12), t) for x, t in words], **kw)


def test_a_head_bar_read_over_a_ghost_column_is_parted_over_the_columns_with_words():
    """ICDAR 2013's eu-021: the model read the header bar "Difficulty | Quite a lot | Not much |
    Not at all" as one cell over six columns, one more than the table has."""
    head = _cell(0, 0, [(10, "Difficulty"), (210, "Quite"), (260, "much"), (330, "all")], 100, colspan=6)
    body = [
        _cell(r, c, [(x, t)], 100 + 20 * r)
        for r in (1, 2, 3)
        for c, (x, t) in enumerate([(10, "Alcohol"), (120, "Count"), (210, "20"), (260, "56"), (330, "391")])
    ]
    slots = slot_columns.split_spans([head, *body], body=12.0)
    top = sorted((s.col, s.colspan, " ".join(t for _, t in s.words)) for s in slots if s.row == 0)
    assert top == [
        (0, 1, "Difficulty"),
        (1, 1, ""),
        (2, 1, "Quite"),
        (3, 1, "much"),
        (4, 1, "all"),
        (5, 1, ""),
    ]
    assert slot_columns.empty_columns(slots) == [5]


def test_a_row_of_empty_cells_is_dropped_and_the_span_over_it_shortened():
    slots = [
        _cell(0, 0, [(10, "Stress")], 100, rowspan=3),
        _cell(0, 1, [(120, "Count")], 100),
        _cell(1, 1, [(120, "Percentage")], 120),
        table_slots.Slot(2, 1),
        _cell(3, 0, [(10, "Total")], 160),
        _cell(3, 1, [(120, "Sum")], 160),
    ]
    kept = slot_rows.drop_empty_rows(slots)
    assert sorted((s.row, s.col, s.rowspan) for s in kept) == [
        (0, 0, 2),
        (0, 1, 1),
        (1, 1, 1),
        (2, 0, 1),
        (2, 1, 1),
    ]


def test_an_empty_row_under_a_head_over_several_columns_stays():
    """us-018 repeats its year heads on every page, and they go as running lines: the row under
    "Projected" is empty, but it is the header's second row."""
    slots = [
        _cell(0, 0, [(10, "Actual")], 100, rowspan=2),
        _cell(0, 1, [(120, "Projected")], 100, colspan=2),
        table_slots.Slot(1, 1),
        table_slots.Slot(1, 2),
        _cell(2, 0, [(10, "10.4")], 140),
        _cell(2, 1, [(120, "0.9")], 140),
        _cell(2, 2, [(200, "3.8")], 140),
    ]
    kept = slot_rows.drop_empty_rows(slots)
    assert len(kept) == 7 and max(s.row for s in kept) == 2
