"""The probe's documents printed by MuPDF's HTML engine, another producer than Chromium (issue 30,
round 20; ``bench.accuracy.story_print``).

Why: every probe document was printed by one browser, so the rules were checked against one
producer's habits. Printed by MuPDF, the same HTML showed three faults no Chromium print had:

- a narrow "Due" column wraps each date ("Q1" over "2026"); the structure model read the wrapped
  line as a row of its own, and its reading won because it had more rows than the word grid. A model
  row that is only a cell's wrapped line now counts with the row above (``_wrapped_lines``);
- on a page of two columns, the title's two lines and the first heading beside the right column's
  first lines were read as a table of two columns. The layout model boxes the title as a title and
  the column's first lines twice (a weak box inside its paragraph's box): title boxes are text for
  the veto now, and a box inside a larger one is one block with it (``_text_side_by_side``);
- MuPDF fills the ground behind each wrapped line of a cell; PyMuPDF took the fills of one
  description for a grid, which became a form and took the description out of the table. A form
  inside a table the layout model boxes, at most half its size, is a piece of that table
  (``textlayer._piece_of``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy.printed import build
from bench.accuracy.story_print import printable
from ocr_app.engines.textlayer import _piece_of
from ocr_app.structure.learned_tables import _wrapped_lines
from ocr_app.structure.table_html import Cell
from tests.factories import page_markdown

NAMES = ("booktabs-wrapped-single", "none-wrapped-two-centred", "zebra-wrapped-two-centred")


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    out = tmp_path_factory.mktemp("mupdf")
    names = build(out, only=NAMES, printer="mupdf")
    assert sorted(names) == sorted(NAMES)
    return {n: (out / "pdf" / f"{n}.pdf", (out / "gt" / f"{n}.md").read_text()) for n in names}


def _tables(md: str) -> list[list[list[str]]]:
    return [
        [re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", t, re.S)]
        for t in re.findall(r"<table>.*?</table>", md, re.S)
    ]


def test_mupdf_prints_another_producers_pdf(printed):
    import pymupdf

    pdf, _ = printed["booktabs-wrapped-single"]
    with pymupdf.open(pdf) as doc:
        assert "MuPDF" in (doc.metadata or {}).get("producer", "") or "Chromium" not in str(doc.metadata)
        assert "Household Energy Survey" in doc[0].get_text()
    assert (
        not printable("deck-plain") and not printable("long-wrapped-none") and printable("zebra-plain-wide")
    )


@pytest.mark.parametrize("name", NAMES)
def test_tables_read_as_printed_by_mupdf(textlayer_engine, printed, name):
    """One table a document, its rows as the truth has them: no row of a wrapped date, no table of
    the title beside the other column, no description lost to a grid of fills."""
    pdf, truth = printed[name]
    md = page_markdown(textlayer_engine, pdf)
    assert _tables(md) == _tables(truth), md
    title = truth.splitlines()[0].lstrip("# ")
    assert title in md.replace("\n", " ") and md.count("<table>") == 1, md


def _row(*texts: str) -> list[Cell]:
    return [Cell(t) for t in texts]


def test_a_wrapped_line_row_counts_with_the_row_above():
    head = _row("Measure", "Description", "Due")
    model = [
        head,
        _row("M1", "Replace the bearings", "Q2 2026"),
        _row("M2", "Publish data", "Q1"),
        _row("", "", "2026"),
    ]
    rules = [head, _row("M1", "Replace the bearings", "Q2 2026"), _row("M2", "Publish data", "Q1 2026")]
    assert _wrapped_lines(model, rules, 1) == 1
    # three lines of one cell: both rows are its wrapped lines
    model3 = [*model[:3], _row("", "", "2026"), _row("", "", "(late)")]
    rules3 = [*rules[:2], _row("M2", "Publish data", "Q1 2026 (late)")]
    assert _wrapped_lines(model3, rules3, 1) == 2
    # a row whose text is no continuation in the word grid's reading, or that has its key, counts
    assert (
        _wrapped_lines(model, [head, *rules[1:2], _row("M2", "Publish data", "Q1"), _row("", "", "2026")], 1)
        == 0
    )
    assert _wrapped_lines([*model[:3], _row("M3", "", "2026")], rules, 1) == 0


def test_a_form_inside_a_table_region_is_a_piece_of_it():
    region = (100.0, 100.0, 600.0, 500.0)
    assert _piece_of((300.0, 200.0, 380.0, 260.0), region)  # one cell's fills
    assert not _piece_of((110.0, 110.0, 590.0, 490.0), region)  # the table's own grid
    assert not _piece_of((620.0, 200.0, 700.0, 260.0), region)  # beside it
