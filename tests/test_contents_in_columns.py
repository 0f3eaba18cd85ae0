"""Contents entries set in columns side by side: an index read column by column (issue 30, round 24).

Why: a Texinfo manual's index (libtasn1's, in TeX Live's documentation) sets its entries with dot
leaders in two columns. Contents rows were matched across the whole page, so each row held two
entries and came out as one title ("asn1Coding program . . . 5 Main type asn1 node . . .") beside the
right entry's page number, the columns read across. Entries that stand side by side on two rows or
more now part the rows into columns first (``passes.tables._entry_columns``). The page is built with
PyMuPDF (``bench.accuracy.false_table_pages.index_in_columns``).
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.accuracy import false_table_pages as pages
from ocr_app.structure.lines import Row, TextLine
from ocr_app.structure.passes.tables import _contents_tables, _entry_columns
from tests.factories import assert_in_order, page_markdown


def _line(text: str, x0: float, y: float, x1: float) -> TextLine:
    return TextLine(text=text, box=(x0, y, x1, y + 10.0), size=10.0)


def _rows(pairs: list[tuple[str, str]]) -> list[Row]:
    return [
        Row(
            [
                _line(left, 72.0, 100.0 + 14 * k, 280.0),
                *([_line(right, 300.0, 100.0 + 14 * k, 508.0)] if right else []),
            ]
        )
        for k, (left, right) in enumerate(pairs)
    ]


def test_entries_side_by_side_on_two_rows_part_the_page_into_columns():
    rows = _rows(
        [("alpha . . . . 5", "mu . . . . 4"), ("beta . . . . 7", "nu . . . . 9"), ("gamma . . . . 5", "")]
    )
    (cut,) = _entry_columns(rows)
    assert 280.0 < cut < 300.0
    tables, rest = _contents_tables(rows)
    assert [[r[0].split(" .")[0] for r in t.rows] for t in tables] == [["alpha", "beta", "gamma"]]
    assert [r.text for r in rest] == ["mu . . . . 4", "nu . . . . 9"]  # two entries: no run of three


def test_one_row_of_two_entries_or_a_row_with_a_figure_after_its_entry_is_no_columns():
    assert _entry_columns(_rows([("alpha . . . . 5", "mu . . . . 4"), ("beta . . . . 7", "")])) == []
    assert _entry_columns(_rows([("Revenue . . . . 120", "135"), ("Costs . . . . 80", "95")])) == []


def test_an_index_in_two_columns_is_read_column_by_column(tmp_path: Path, textlayer_engine):
    md = page_markdown(textlayer_engine, pages.build(tmp_path / "index.pdf", pages.index_in_columns), 0)
    titles = [re.sub(r"[ .]+$", "", t) for t in re.findall(r"<tr><td>([^<]*)</td>", md)]
    entries = [title for letter in pages.INDEX.values() for title, _ in letter]
    assert titles == entries, md  # each entry its own title, left column first
    numbers = re.findall(r"</td><td>(\d+)</td></tr>", md)
    assert numbers == [n for letter in pages.INDEX.values() for _, n in letter]
    assert_in_order(md, ["H", "header files", "M", "main node type"])


def test_chapters_without_leaders_stay_in_the_contents_table(tmp_path: Path, textlayer_engine):
    """xdvipdfmx's manual sets its chapters in bold with no leaders between sections with leaders;
    the chapter lines cut the contents into runs of one or two entries, which a word grid then read
    with each spaced leader dot a column."""
    md = page_markdown(
        textlayer_engine, pages.build(tmp_path / "contents.pdf", pages.contents_bold_chapters), 0
    )
    assert md.count("<table>") == 1, md
    titles = [re.sub(r"[ .]+$", "", t) for t in re.findall(r"<tr><td>([^<]*)</td>", md)]
    assert titles == [c[1] for c in pages.CONTENTS], md
    assert re.findall(r"</td><td>(\w+)</td></tr>", md) == [c[2] for c in pages.CONTENTS]
