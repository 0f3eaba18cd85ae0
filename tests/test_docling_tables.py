"""Two tables of docling's test PDFs, end to end through the text-layer engine with its real layout and
table models: a spanning header whose label sat on a row of its own, and a table on a page of two
columns that the page-wide and the column passes each took a part of."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.lines import Table
from ocr_app.structure.passes.tables import join_split
from ocr_app.structure.pipeline import blocks_to_markdown
from ocr_app.structure.table_html import Cell
from tests.factories import pdf_page_request

DATA = Path(__file__).parent / "data" / "public" / "docling" / "pdf"


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    return TextLayerEngine()


def _tables(engine: TextLayerEngine, name: str) -> list[str]:
    out = engine.predict_batch([pdf_page_request(DATA / name, 0, 144, prompt="")])[0]
    return re.findall(r"<table>.*?</table>", blocks_to_markdown(out.blocks), re.S)


def test_a_spanning_header_keeps_its_label_and_the_sub_headers_theirs(engine):
    (table,) = _tables(engine, "2305.03393v1-pg9.pdf")
    assert '<th colspan="3">TEDs</th>' in table
    assert "<th>simple</th><th>complex</th><th>all</th>" in table


def test_a_table_in_the_right_column_is_one_table(engine):
    (table,) = _tables(engine, "table_mislabeled_as_picture.pdf")
    assert "<th>State funded legal aid</th><th>CSOs</th>" in table
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    assert len(rows) == 8  # the header and seven groups, Persons with disabilities … Internally displaced
    assert "Women" in rows[3] and "The elderly" in rows[4] and "Internally displaced persons" in rows[7]


def _table(y0: float, y1: float, rows: int, header: int, x1: float = 400.0) -> Table:
    return Table(
        box=(100.0, y0, x1, y1),
        rows=[[Cell(f"r{y0:.0f}-{i}"), Cell("a"), Cell("b")] for i in range(rows)],
        header_rows=header,
    )


def test_join_split_takes_only_a_headless_rest_right_under_with_the_same_columns_and_edges():
    head, rest = _table(100, 200, 4, 1), _table(210, 300, 3, 0)
    (joined,) = join_split([rest], [head], body=20)
    assert joined.box == (100.0, 100.0, 400.0, 300.0) and len(joined.rows) == 7 and joined.header_rows == 1
    # a table with a header of its own, one further down, another width or other columns stays apart
    for other in (_table(210, 300, 3, 1), _table(260, 300, 3, 0), _table(210, 300, 3, 0, x1=480)):
        assert len(join_split([other], [_table(100, 200, 4, 1)], body=20)) == 2
    narrow = Table(box=(100.0, 210.0, 400.0, 300.0), rows=[[Cell("x"), Cell("y")]])
    assert len(join_split([narrow], [_table(100, 200, 4, 1)], body=20)) == 2
