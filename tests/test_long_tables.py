"""A table of 60 rows printed over two pages (issue 30, round 11): its rows go on at the top of the
next page without their heads (``render.markdown.rows_go_on``), and the first page, mostly that table
under a title, a heading and two lines of text, is no cover page (``passes.prepare``).

Before: the second page's rows were a table of their own, and "Water quality by station" was plain
text: the page's few lines outside the table were taken for a cover's (the document's body size is
the table's, so none of them was body text), where only the title is a heading (MHS 0.52).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.accuracy.printed import build
from ocr_app.render.markdown import table_going_on, tables_kept_whole, trailing_table
from tests.factories import heading_texts, page_markdown, table_rows

UPPER = (
    "<table><thead><tr><th>Station</th><th>Nitrate</th><th>Change</th></tr></thead><tbody>"
    "<tr><td>Ashford</td><td>6.4</td><td>-3.0</td></tr><tr><td>Bridgend</td><td>2.1</td><td>+1.5</td></tr>"
    "</tbody></table>"
)


def test_rows_going_on_without_their_heads_join_the_table_above():
    lower = "<table><tr><td>Carlow</td><td>2.5</td><td>-8.7</td></tr><tr><td>Dunmore</td><td>7.4</td><td>n/a</td></tr></table>"
    joined, rest = table_going_on(UPPER, lower)
    assert joined != UPPER and rest == ""
    assert [r[0] for r in table_rows(joined)] == ["Station", "Ashford", "Bridgend", "Carlow", "Dunmore"]
    assert joined.count("<thead>") == 1 and joined.endswith("</tbody></table>")


@pytest.mark.parametrize(
    "lower, why",
    [
        ("<table><tr><td>Carlow</td><td>2.5</td></tr></table>", "other columns"),
        (
            "<table><tr><td>Carlow</td><td>north</td><td>-8.7</td></tr><tr><td>Kilby</td><td>east</td><td>+2</td></tr></table>",
            "words where the table above has figures",
        ),
        (
            "<table><tr><th>Region</th><th>2024</th><th>2025</th></tr><tr><td>North</td><td>1</td><td>2</td></tr></table>",
            "heads of its own",
        ),
        (
            '<table><tr><td rowspan="2">Carlow</td><td>2.5</td><td>-8.7</td></tr><tr><td>2.6</td><td>-1</td></tr></table>',
            "spans",
        ),
    ],
)
def test_another_table_at_the_top_of_the_next_page_stays_apart(lower, why):
    assert table_going_on(UPPER, lower) == (UPPER, lower), why


def test_pages_keep_a_table_whole_on_the_page_where_it_starts():
    """What the Markdown file, the viewer and the bench read: a table going on over two page breaks
    (the middle page only its rows, under its heads again) is one table on its first page; the text
    after it stays on the page it is on."""
    head = "<table><thead><tr><th>Station</th><th>Nitrate</th><th>Change</th></tr></thead><tbody>"
    more = f"{head}<tr><td>Carlow</td><td>2.5</td><td>-8.7</td></tr></tbody></table>"
    last = "<table><tr><td>Dunmore</td><td>7.4</td><td>n/a</td></tr></table>"
    pages = tables_kept_whole(["Intro.\n\n" + UPPER, more, f"{last}\n\nAfter the table.", "The end."])
    assert len(pages) == 4 and pages[1] == "" and pages[2:] == ["After the table.", "The end."], pages
    assert pages[0].startswith("Intro.\n\n<table>") and pages[0].count("<table>") == 1, pages[0]
    assert [r[0] for r in table_rows(pages[0])] == ["Station", "Ashford", "Bridgend", "Carlow", "Dunmore"]
    other = "<table><tr><th>Region</th><th>2024</th></tr><tr><td>North</td><td>1</td></tr></table>"
    assert tables_kept_whole([UPPER, other]) == [UPPER, other]  # a table of its own stays apart


def test_a_table_s_rows_at_a_page_edge_are_told_from_a_running_footer():
    """``page_furniture.table_row_lines`` on an A4 page in points: a two-column table's last rows at the foot
    (17 pt apart, their pieces over each other) are table cells; a footer of two pieces a line and
    more under the last lines of two columns of text is not, nor is a lone page number."""
    from ocr_app.structure.lines import TextLine
    from ocr_app.structure.page_furniture import table_row_lines

    def line(text: str, x0: float, x1: float, y: float) -> TextLine:
        return TextLine(text, (x0, y, x1, y + 11), 9.5)

    rows = [
        line(t, x0, x1, y) for y in (752, 769) for t, x0, x1 in (("Station 081", 59, 108), ("121", 125, 140))
    ]
    assert table_row_lines(rows, 842) == {id(ln) for ln in rows[2:]}  # the foot row; the one above is inside
    text = [line("the last line of the left column", 59, 290, 770), line("and of the right", 305, 420, 770)]
    footer = [line("Annual report 2024", 59, 150, 800), line("17", 530, 540, 800)]
    assert table_row_lines([*text, *footer], 842) == set()
    assert table_row_lines([*rows[:2], line("17", 300, 310, 800)], 842) == set()


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("long")
    build(out, ("long-rows-once",))
    return out


def test_a_table_over_two_pages_is_one_table_under_its_heading(textlayer_engine, report):
    pdf = report / "pdf" / "long-rows-once.pdf"
    first, second = (page_markdown(textlayer_engine, pdf, k) for k in (0, 1))
    assert heading_texts(first)[1:] == ["Water quality by station"], first
    _, held = trailing_table(first)
    assert held, first
    joined, rest = table_going_on(held, second)
    rows = table_rows(joined)
    assert len(rows) == 61 and rows[0][0] == "Station" and rows[-1][0] == "Kilby 6", joined
    assert "<table>" not in rest, rest
