"""A table without rules whose cells wrap, set flush right, and broken over two columns (issue 30,
rounds 18 and 19).

Why: the word-grid pass turned such a table down as "a justified paragraph whose word gaps line up by
chance", because every row started at one x (the keys) and ended at one x (the dates set flush
right): its rows were read column by column ("M2 Publish quarterly …", then "Owner Due",
"Environment Q1 2026"). A paragraph's lines are single lines; a row whose cells hold lines one under
another is a table's (``borderless_prose._one_line``). The table's first piece at the foot of the left
column, its head and one row, is kept as a table too: its head is the head the rest repeats
(``passes.tables._split``).

Round 19: the first piece's wrapped lines are its one row's (a row without its key under a keyed row,
at a line's spacing, ``borderless_rows._wrapped_row``), all four of its description's lines
(``_trailing_wraps``, ``_may_wrap``: one cell's lines in one column), and a line set flush right that
starts left of its column's other lines is still in that column (``_slot``). Beside a gutter, the
piece is kept because the rest repeats its head (``tables_beside_a_gutter``), so the two pieces join
into one table (``join_repeated_heads``). Where the column breaks a row, its rest opens the next
column under the repeated head: it stays a row of its own there (not a wrapped head), and the break
is mended. The structure model reads that rest as rows under a key spanning them, which loses to the
word positions' one row a key (``table_verdict.keyed_rows``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy.printed import build
from ocr_app.structure.borderless_rows import merge_wrapped
from ocr_app.structure.borderless_runs import _may_wrap, _slot
from ocr_app.structure.lines import Table
from ocr_app.structure.passes.tables import _heads, _split
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_verdict import keyed_rows, same_words
from ocr_app.structure.word_columns import Part
from tests.factories import page_markdown

HEAD = ["Measure", "Description", "Owner", "Due"]
BROKEN_ROW = ("headfill", "frame", "booktabs")  # table styles whose row M1 the column breaks


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    out = tmp_path_factory.mktemp("printed")
    names = build(
        out, only=(*(f"{style}-wrapped-two-centred" for style in ("none", *BROKEN_ROW)), "long-wrapped-none")
    )
    return {n: (out / "pdf" / f"{n}.pdf", (out / "gt" / f"{n}.md").read_text()) for n in names}


@pytest.fixture(scope="module")
def broken_unruled(printed) -> tuple[Path, str]:
    return printed["none-wrapped-two-centred"]


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
    # the piece in the right column: the rows M2-M4 under the head, each cell's lines joined
    assert rest[0] == expected[0] and rest[-3:] == expected[2:], md
    assert "Owner Due" not in md and "Environment Q1 2026" not in md


def test_the_first_piece_keeps_its_wrapped_lines_and_joins_the_rest(textlayer_engine, broken_unruled):
    """The piece at the foot of the left column: its head and row M1, whose description wraps onto
    four lines set flush right (one starts left of the head "Description"), its date onto two."""
    pdf, truth = broken_unruled
    md = page_markdown(textlayer_engine, pdf)
    assert _tables(md) == _tables(truth), md
    assert "bridges on the ring road" not in md.replace("three oldest bridges on the ring road", "")


@pytest.mark.parametrize("style", BROKEN_ROW)
def test_a_row_the_column_broke_is_mended_under_the_repeated_head(textlayer_engine, printed, style):
    """Row M1's description breaks after "three oldest", and "bridges on the ring road" opens the
    right column under the repeated head. The layout model boxes the right piece as a table; the
    structure model read the rest as a row under a key "M2" spanning two rows ("bridges on the ring
    road Publish", heads on a dark bar; "M2" and "Q1 2026" spanning the rest and row M2, booktabs)
    or as the head's second line ("Description bridges on the ring road", a framed table), and the
    word positions' reading now wins (``keyed_rows``, ``same_words``). In booktabs the first
    piece's lines are set so tight that their boxes overlap: its one row still holds two lines a
    cell, no line of a justified paragraph (``_one_line``)."""
    pdf, truth = printed[f"{style}-wrapped-two-centred"]
    md = page_markdown(textlayer_engine, pdf)
    assert _tables(md) == _tables(truth), md
    assert "rowspan" not in md


def _piece(text: str, x0: float, y0: float, bold: bool = False) -> Part:
    return Part(text, (x0, y0, x0 + 6.0 * len(text), y0 + 10.0), bold, 700 if bold else 400)


def test_a_line_under_the_heads_without_its_key_is_a_row_not_a_wrapped_head():
    heads = [[_piece(h, 10.0 + 100 * k, 0.0, bold=True)] for k, h in enumerate(HEAD)]
    rest = [[], [_piece("bridges on the ring road", 110.0, 11.0)], [], []]
    row = [[_piece("M2", 10.0, 30.0)], [_piece("Publish", 110.0, 30.0)], [_piece("Environment", 210.0, 30.0)],
           [_piece("Q1 2026", 310.0, 30.0)]]  # fmt: skip
    merged = merge_wrapped([heads, rest, row])
    assert [[" ".join(p.text for p in c) for c in r] for r in merged] == [
        HEAD,
        ["", "bridges on the ring road", "", ""],
        ["M2", "Publish", "Environment", "Q1 2026"],
    ]
    # a row of figures there is the heads' second row (years under a group's head), as before
    years = [[], [_piece("2024", 110.0, 11.0)], [_piece("2025", 210.0, 11.0)], []]
    more = [
        [[_piece(f"M{k}", 10.0, 20.0 * k)], [], [_piece("Housing", 210.0, 20.0 * k)], []] for k in (3, 4, 5)
    ]
    merged = merge_wrapped([heads, years, row, *more])
    assert len(merged) == 5 and [p.text for p in merged[0][1]] == ["Description", "2024"]


def test_a_bold_group_label_under_the_first_head_is_a_row_not_the_heads_wrapped_line():
    """The probe's none-labelled-slide as a scan: "Staff", a bold group label, right under the bold
    head "Item" in a table set without padding, was taken for the head's second line ("Item Staff"),
    and the table's two parts on either side of the column break no longer repeated one head."""
    heads = [[_piece(h, 10.0 + 100 * k, 0.0, bold=True)] for k, h in enumerate(["Item", "Budget", "Spent"])]
    label = [[_piece("Staff", 10.0, 11.0, bold=True)], [], []]
    rows = [[[_piece(key, 10.0, 22.0 + 11 * k)], [_piece("685", 110.0, 22.0 + 11 * k)], [_piece("74%", 210.0, 22.0 + 11 * k)]]
            for k, key in enumerate(("Salaries", "Operations"))]  # fmt: skip
    merged = merge_wrapped([heads, label, *rows])
    assert [" ".join(p.text for p in c) for c in merged[0]] == ["Item", "Budget", "Spent"]
    assert [" ".join(p.text for p in c) for c in merged[1]] == ["Staff", "", ""]
    # A head too wide for its line goes on under it: its wrapped line (the column's widest line is
    # its own, so the next word would not have fitted after it).
    wide = [[_piece("Cost item", 10.0, 0.0, bold=True)], *heads[1:]]
    rows = [[[_piece("Rent", 10.0, 22.0)], [_piece("70", 110.0, 22.0)], [_piece("80%", 210.0, 22.0)]]]
    merged = merge_wrapped([wide, [[_piece("group", 10.0, 11.0, bold=True)], [], []], *rows])
    assert [p.text for p in merged[0][0]] == ["Cost item", "group"]


def test_a_wrapped_line_set_flush_right_lies_in_its_columns_slot():
    cols = [[10.0, 60.0], [150.0, 230.0], [260.0, 300.0]]  # the keys, a description set flush right, dates
    assert _slot([_piece("bridges on the", 120.0, 0.0)], cols, 10.0, 400.0) == 1  # starts in the gap
    assert _slot([_piece("bridges on the ring road", 40.0, 0.0)], cols, 10.0, 400.0) is None  # runs across


def test_a_stretch_of_single_lines_wraps_when_they_are_one_cells_lines():
    assert _may_wrap([1, 1, 1, 1], 4)  # a description's four lines
    assert not _may_wrap([0, 0, 0], 4)  # lines of the key column: a note under the table
    assert not _may_wrap([1] * 9, 4)  # more than a cell holds: text


def test_rows_under_a_key_spanning_them_count_as_one_row():
    head = [Cell("Site", rowspan=2), Cell("Nitrate", colspan=2)]
    years = [Cell("2024"), Cell("2025")]
    body = [[Cell("M2", rowspan=2), Cell("Publish"), Cell("Q1")], [Cell("quarterly water"), Cell("2026")]]
    assert keyed_rows([head, years, *body], 2) == 3  # the head's span counts as read
    assert keyed_rows([[Cell("A"), Cell("1"), Cell("2")], *body], 1) == 2


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


def test_a_key_the_model_spans_over_a_rows_rest_is_not_the_same_reading():
    heads = [Cell(h) for h in HEAD]
    model = [
        heads,
        [Cell("M2", rowspan=2), Cell("bridges"), Cell(""), Cell("Q1", rowspan=2)],
        [Cell("Publish"), Cell("Env")],
    ]
    rules = [
        heads,
        [Cell(""), Cell("bridges"), Cell(""), Cell("")],
        [Cell("M2"), Cell("Publish"), Cell("Env"), Cell("Q1")],
    ]
    assert not same_words(model, rules, 1)
    # a group's key over its rows: the rules read the same rows with the key once
    model = [
        heads,
        [Cell("Roads", rowspan=2), Cell("Bearings"), Cell("Unit"), Cell("Q1")],
        [Cell("Decks"), Cell("Unit"), Cell("Q2")],
    ]
    rules = [
        heads,
        [Cell("Roads"), Cell("Bearings"), Cell("Unit"), Cell("Q1")],
        [Cell(""), Cell("Decks"), Cell("Unit"), Cell("Q2")],
    ]
    assert same_words(model, rules, 1)


def test_a_heads_column_the_model_leaves_empty_loses_to_the_word_grid(textlayer_engine, printed):
    """A long table of wrapped descriptions without rules, its owners set flush right: on the first
    page the structure model gave "Owner" a column of its own, empty in every body row, and the owners
    to the left half of a "Budget" spanning two columns (five cells a row for four heads). The word
    grid's four columns, each holding body cells in as many rows, are taken instead, and the page's
    rows read as the truth has them (the last one aside, which the page may break)."""
    pdf, truth = printed["long-wrapped-none"]
    rows = _tables(page_markdown(textlayer_engine, pdf))[0]
    expected = {r[0]: r for r in _tables(truth)[0]}
    assert len(rows) >= 10 and rows[0] == [*HEAD[:3], "Budget"]
    assert all(r == expected[r[0]] for r in rows[1:-1]), rows
