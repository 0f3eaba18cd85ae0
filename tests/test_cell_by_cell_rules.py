"""Tables whose rules are printed cell by cell, and rows a page or column break cuts (issue 30, round 17).

Why: browsers, word processors and HTML-to-PDF tools draw a table's rules one cell at a time, so no
piece is an inch long and the text layer saw no rule at all: the structure model's rows then ran
across them (a head merged with the first row, "Measure M1"). Pieces end to end are one rule now
(``pdf_drawings.horizontal_rules``), but only pieces drawn level in paths drawn square: a line chart's
series is many short strokes too (ICDAR's eu-011). With the rules seen, rows ruled apart are not
joined as wrapped lines (``slot_rows._ruled_apart``), a keyless row inside a ruled row's band
is more of that row (``join_ruled_bands``), and a row whose rest opens the next column or page is
joined to it under the repeated head (``table_html._mend_break``).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.printed import build
from ocr_app.engines.pdf_drawings import horizontal_rules
from ocr_app.render.markdown import table_going_on, tables_kept_whole
from ocr_app.structure import table_verdict
from ocr_app.structure.table_html import Cell, continue_table, head_as_rest
from tests.factories import page_markdown, table_rows

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"
EDGES = [72.0, 130.0, 190.0, 250.0, 300.0]  # a four-column table's column edges, every cell < 1 inch


def _page(tmp_path: Path, draw) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    draw(page)
    doc.save(tmp_path / "rules.pdf")
    return pymupdf.open(tmp_path / "rules.pdf")[0]


def _cell_by_cell(page: pymupdf.Page, y: float, *, gap: float = 0.0, as_rects: bool = False) -> None:
    for x0, x1 in itertools.pairwise(EDGES):
        if as_rects:
            page.draw_rect(pymupdf.Rect(x0, y - 0.35, x1 - gap, y + 0.35), color=None, fill=(0, 0, 0))
        else:
            page.draw_line((x0, y), (x1 - gap, y), width=0.7)


@pytest.mark.parametrize("as_rects", [False, True], ids=["strokes", "hairline rectangles"])
def test_rules_printed_cell_by_cell_are_one_rule_across_the_table(tmp_path, as_rects):
    page = _page(tmp_path, lambda p: [_cell_by_cell(p, y, as_rects=as_rects) for y in (100, 120, 160)])
    rules = horizontal_rules(page, 2.0)
    assert [round(r[1] / 2) for r in rules] == [100, 120, 160]
    assert all(r[0] == pytest.approx(2 * EDGES[0]) and r[2] == pytest.approx(2 * EDGES[-1]) for r in rules)


def test_pieces_a_space_apart_are_no_rule(tmp_path):
    """Words underlined one by one: their underlines stop at each space."""
    page = _page(tmp_path, lambda p: _cell_by_cell(p, 100, gap=4.0))
    assert horizontal_rules(page, 2.0) == []


def test_a_line_charts_series_is_no_rule(tmp_path):
    """A series drawn as one path of short strokes, level for 120 points where its values repeat."""

    def chart(page: pymupdf.Page) -> None:
        points = [(72 + 10 * k, 300 - (k % 5)) for k in range(8)]
        points += [(points[-1][0] + 12 * k, 290.0) for k in range(1, 11)]
        points += [(points[-1][0] + 10 * k, 290 - 3 * k) for k in range(1, 6)]
        page.draw_polyline(points, width=1.2, color=(0.2, 0.3, 0.8))

    assert horizontal_rules(_page(tmp_path, chart), 2.0) == []


@pytest.fixture(scope="module")
def broken_table(tmp_path_factory) -> tuple[str, str]:
    out = tmp_path_factory.mktemp("printed")
    (name,) = build(out, only=("grid-wrapped-two-centred",))
    return (out / "pdf" / f"{name}.pdf").as_posix(), (out / "gt" / f"{name}.md").read_text()


def test_a_table_ruled_cell_by_cell_and_broken_over_two_columns_reads_as_printed(
    textlayer_engine, broken_table
):
    """Chromium prints the table's rules cell by cell; the table runs from the foot of the left
    column to the top of the right one, its head repeated there and its row M2 broken between them
    ("Publish quarterly water" | "quality data for all forty stations"); its right column has no
    rule on its outer side, and the dates wrap under their quarters ("Q3" over "2026")."""
    pdf, truth = broken_table
    md = page_markdown(textlayer_engine, Path(pdf))
    assert md.count("<table>") == 1, md
    assert table_rows(md) == table_rows(truth)


def test_rows_a_rule_parts_are_two_rows_and_a_keyless_row_inside_a_ruled_row_is_more_of_it(textlayer_engine):
    """eu-007's brand table rules every row apart; the model read "CLE" and "Laïta" as one head
    cell of two lines, and the brands under "Total: 47%" as a row of their own."""
    md = page_markdown(textlayer_engine, DATA / "eu-007.pdf", 4)
    rows = table_rows(md[md.index("</table>") + len("</table>") :])  # the page's second table
    keys = [r[0] for r in rows]
    assert keys == [
        "Groups",
        "Astra Calvé",
        "Besnier",
        "Cema",
        "CLE",
        "Laïta",
        "Vedial",
        "Own brands",
        "Others",
    ]
    assert rows[1][2].startswith("Total: 47% (Fruit d’or, Plantafin")
    assert rows[5][1] == "Paysan Breton (6.3%)"


def test_a_label_the_model_set_beside_its_figure_is_not_joined_up(textlayer_engine):
    """us-028's "Total" stands in the key column's reach: no line of the row above."""
    rows = table_rows(page_markdown(textlayer_engine, DATA / "us-028.pdf", 2))
    assert not any("Total" in cell for row in rows for cell in row[1:2] if "6" in cell), rows


def test_figures_merged_into_a_span_leave_the_words_reading_the_table(textlayer_engine):
    """us-018's table of 11 columns of figures under a head over column groups: the model read the
    first rows as spans of six figures each; the word positions' reading has every figure alone."""
    rows = table_rows(page_markdown(textlayer_engine, DATA / "us-018.pdf", 0))
    assert {len(r) for r in rows} == {11}
    assert rows[0][:3] == ["United States", "2,753,438", "2,799,250"]
    assert not table_verdict.figures_side_by_side([[Cell(c) for c in r] for r in rows])
    assert table_verdict.figures_side_by_side([[Cell("Ohio"), Cell("119,029 116,702", colspan=2)]])
    assert not table_verdict.figures_side_by_side([[Cell("Ohio"), Cell("2003 – 04", colspan=2)]])


HEAD = "<table><thead><tr><th>Key</th><th>Description</th><th>Due</th></tr></thead><tbody>"
UPPER = HEAD + (
    "<tr><td>M1</td><td>Replace the bearings</td><td>Q2</td></tr>"
    "<tr><td>M2</td><td>Publish quarterly water</td><td>Q1</td></tr></tbody></table>"
)


def test_a_rows_rest_under_the_repeated_head_joins_the_row():
    lower = HEAD + (
        "<tr><td></td><td>quality data</td><td></td></tr><tr><td>M3</td><td>Extend</td><td>Q3</td></tr></tbody></table>"
    )
    rows = table_rows(continue_table(UPPER, lower))
    assert rows[2:] == [["M2", "Publish quarterly water quality data", "Q1"], ["M3", "Extend", "Q3"]]


def test_a_rows_rest_at_the_top_of_the_next_page_joins_the_row():
    lower = "<table><tr><td></td><td>quality data</td><td></td></tr><tr><td>M3</td><td>Extend</td><td>Q3</td></tr></table>"
    joined, rest = table_going_on(UPPER, lower)
    assert rest == ""
    assert table_rows(joined)[2:] == [
        ["M2", "Publish quarterly water quality data", "Q1"],
        ["M3", "Extend", "Q3"],
    ]


@pytest.mark.parametrize(
    "first, why",
    [
        ("<tr><td></td><td>quality data</td><td>2026</td></tr>", "fills a cell left empty above"),
        ("<tr><td>M3</td><td>quality data</td><td></td></tr>", "has a key of its own"),
    ],
)
def test_a_row_that_is_no_rest_stays_a_row(first, why):
    upper = UPPER.replace("<td>Q1</td>", "<td></td>")
    lower = HEAD + first + "</tbody></table>"
    assert len(table_rows(continue_table(upper, lower))) == 4, why


def test_no_row_is_joined_where_the_table_leaves_keys_empty():
    """A table whose body rows go on without a key (a group's rows under its first) has no broken
    row to tell."""
    upper = UPPER.replace("<td>M1</td>", "<td></td>")
    lower = HEAD + "<tr><td></td><td>quality data</td><td></td></tr></tbody></table>"
    assert len(table_rows(continue_table(upper, lower))) == 4


def test_head_lines_read_as_body_rows_on_both_sides_of_a_break_stand_once():
    """The probe's frame-grouped-two as a scan: a three-line header ("Nitrate" over "(mg/l)" over
    "2024 2025") read as one header row and two body rows, above the column break and under the head
    Chromium repeats after it. Joined, the two rows stood twice."""
    head = "<table><thead><tr><th>Site</th><th>Nitrate</th><th></th></tr></thead><tbody>"
    lines = "<tr><td></td><td>(mg/l)</td><td></td></tr><tr><td></td><td>2024</td><td>2025</td></tr>"
    upper = head + lines + "<tr><td>Upper weir</td><td>3.98</td><td>7.68</td></tr></tbody></table>"
    lower = head + lines + "<tr><td>Mill bridge</td><td>0.74</td><td>8.47</td></tr></tbody></table>"
    rows = table_rows(continue_table(upper, lower))
    assert [r[0] for r in rows] == ["Site", "", "", "Upper weir", "Mill bridge"], rows
    # Rows that only begin alike stay: the second differs, so only the first is the head's.
    other = (
        head
        + lines.replace("2025", "2026")
        + "<tr><td>Mill bridge</td><td>0.74</td><td>8.47</td></tr></tbody></table>"
    )
    assert len(table_rows(continue_table(upper, other))) == 6
    # A lower part that repeats every row of the upper one keeps them: at least one row must differ.
    again = head + lines + "<tr><td>Upper weir</td><td>3.98</td><td>7.68</td></tr></tbody></table>"
    assert len(table_rows(continue_table(upper, again))) == 5


def test_a_first_row_repeated_at_the_top_of_the_next_part_is_the_tables_header():
    """The probe's report-smallcaps-0 as a scan: the header, in small capitals on grey, was read as a
    plain row above the page break and as a header under it, where it repeats over the table's last
    row. The two parts stood as two tables; the repeat shows the first row is the header."""
    plain = "<tr><td>Item</td><td>Budget</td><td>Share</td></tr>"
    upper = f"<table>{plain}<tr><td>Salaries</td><td>348</td><td>16%</td></tr></table>"
    lower = (
        "<table><thead><tr><th>Item</th><th>Budget</th><th>Share</th></tr></thead>"
        "<tbody><tr><td>Rent</td><td>248</td><td>77%</td></tr></tbody></table>"
    )
    joined = continue_table(upper, lower)
    assert joined is not None and joined.startswith("<table><thead><tr><th>Item</th>"), joined
    assert table_rows(joined) == [
        ["Item", "Budget", "Share"],
        ["Salaries", "348", "16%"],
        ["Rent", "248", "77%"],
    ]
    # Under a page break (the Markdown file, the viewer): the headerless table is held and joined.
    pages = tables_kept_whole([f"Costs.\n\n{upper}", f"{lower}\n\nAfter the table."])
    assert pages == [f"Costs.\n\n{joined}", "After the table."]
    # Read plain on both sides, the repeat still shows it.
    assert (
        continue_table(upper, f"<table>{plain}<tr><td>Rent</td><td>248</td><td>77%</td></tr></table>")
        == joined
    )
    # Another first row, or a repeated row of figures, is no header: the tables stay apart.
    assert continue_table(upper, lower.replace("<th>Budget</th>", "<th>Spent</th>")) is None
    figures = "<table><tr><td>2024</td><td>348</td><td>16%</td></tr></table>"
    assert continue_table(figures, figures) is None
    assert tables_kept_whole([upper, "Text."]) == [upper, "Text."]  # held, and written back unjoined


def test_a_rows_rest_read_as_the_next_pages_header_joins_the_row():
    """The probe's word-wrapped-single as a scan: row M1 breaks over the page, and its rest ("ring
    road", "2026"), shaded like the row, opened the next page's part as its header. The parts stood as
    two tables, the second headed by the rest of a row."""
    upper = HEAD + "<tr><td>M1</td><td>Replace the bearings on the</td><td>Q2</td></tr></tbody></table>"
    rest = "<thead><tr><th></th><th>ring road</th><th>2026</th></tr></thead>"
    lower = f"<table>{rest}<tbody><tr><td>M2</td><td>Publish water data</td><td>Q1</td></tr></tbody></table>"
    joined, after = table_going_on(upper, lower)
    assert after == ""
    assert table_rows(joined)[1:] == [
        ["M1", "Replace the bearings on the ring road", "Q2 2026"],
        ["M2", "Publish water data", "Q1"],
    ]
    # A part that is only the rest (nothing under it) is one row, well formed.
    assert head_as_rest(upper, f"<table>{rest}</table>") == (
        "<table><tr><td></td><td>ring road</td><td>2026</td></tr></table>"
    )
    # A header of its own (no lower-case rest, or a key) heads another table: the two stay apart.
    other = lower.replace("<th>ring road</th>", "<th>Description</th>")
    assert table_going_on(upper, other) == (upper, other)
    keyed = lower.replace("<th></th>", "<th>Key</th>")
    assert table_going_on(upper, keyed) == (upper, keyed)
