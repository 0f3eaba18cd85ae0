"""A table without rules whose cells wrap, set flush right, and broken over two columns (issue 30,
round 18).

Why: the word-grid pass turned such a table down as "a justified paragraph whose word gaps line up by
chance", because every row started at one x (the keys) and ended at one x (the dates set flush
right): its rows were read column by column ("M2 Publish quarterly …", then "Owner Due",
"Environment Q1 2026"). A paragraph's lines are single lines; a row whose cells hold lines one under
another is a table's (``borderless._one_line``). The table's first piece at the foot of the left
column, its head and one row, is kept as a table too: its head is the head the rest repeats
(``passes.tables._split``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy.printed import build
from ocr_app.structure.lines import Table
from ocr_app.structure.passes.tables import _heads, _split
from ocr_app.structure.table_html import Cell
from tests.factories import page_markdown

HEAD = ["Measure", "Description", "Owner", "Due"]


@pytest.fixture(scope="module")
def broken_unruled(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("printed")
    (name,) = build(out, only=("none-wrapped-two-centred",))
    return out / "pdf" / f"{name}.pdf", (out / "gt" / f"{name}.md").read_text()


def _tables(md: str) -> list[list[list[str]]]:
    return [
        [re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", t, re.S)]
        for t in re.findall(r"<table>.*?</table>", md, re.S)
    ]


def test_a_wrapped_table_set_flush_right_is_read_as_a_table(textlayer_engine, broken_unruled):
    pdf, truth = broken_unruled
    md = page_markdown(textlayer_engine, pdf)
    rest = _tables(md)[-1]
    expected = _tables(truth)[0]
    # the piece in the right column: its repeated head and the rows M2-M4, each cell's lines joined
    assert rest == [expected[0], *expected[2:]], md
    assert "Owner Due" not in md and "Environment Q1 2026" not in md


def test_the_first_piece_of_the_table_keeps_its_head_and_key(textlayer_engine, broken_unruled):
    pdf, _ = broken_unruled
    md = page_markdown(textlayer_engine, pdf)
    tables = _tables(md)
    assert len(tables) == 2, md
    first = tables[0]
    assert first[0] == HEAD and first[1][:2] == ["M1", "Replace the"], md


def _grid(head: list[str], rows: list[list[str]], y: float) -> Table:
    return Table(
        box=(100.0, y, 300.0, y + 40.0),
        rows=[[Cell(t) for t in head], *[[Cell(t) for t in r] for r in rows]],
        header_rows=1,
    )


def test_a_small_grid_whose_head_repeats_another_grid_is_kept():
    first = _grid(HEAD, [["M1", "Replace the", "Roads unit", "Q2"]], 700.0)
    rest = _grid(HEAD, [["M2", "Publish", "Environment", "Q1"]] * 3, 100.0)
    keep, drop = _split([first], [], [], [_heads(first), _heads(rest)])
    assert keep == [first] and drop == []


def test_a_small_grid_with_a_head_of_its_own_stays_text_outside_the_models_tables():
    """Label/value pairs of a legend under a bold line: no table region, no head repeated."""
    legend = _grid(["Key", "Meaning"], [["A", "Approved"]], 700.0)
    keep, drop = _split([legend], [], [], [_heads(legend)])
    assert keep == [] and drop == [legend]
