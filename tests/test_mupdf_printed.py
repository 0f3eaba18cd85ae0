"""The probe's documents printed by MuPDF's HTML engine, another producer than Chromium (issue 30,
round 20; ``bench.accuracy.story_print``).

Why: every probe document was printed by one browser, so the rules were checked against one
producer's habits. Printed by MuPDF, the same HTML showed faults no Chromium print had:

- a narrow "Due" column wraps each date ("Q1" over "2026"); the structure model read the wrapped
  line as a row of its own, and its reading won because it had more rows than the word grid. A model
  row that is only a cell's wrapped line now counts with the row above (``wrapped_lines``);
- on a page of two columns, the title's two lines and the first heading beside the right column's
  first lines were read as a table of two columns. The layout model boxes the title as a title and
  the column's first lines twice (a weak box inside its paragraph's box): title boxes are text for
  the veto now, and a box inside a larger one is one block with it (``_text_side_by_side``);
- MuPDF fills the ground behind each wrapped line of a cell; PyMuPDF took the fills of one
  description for a grid, which became a form and took the description out of the table. A form
  inside a table the layout model boxes, at most half its size, is a piece of that table
  (``page_tables.piece_of``);
- a column's title in display type beside the other column's last lines of running text: two pairs
  side by side were too few for a gutter, and the title's lines went into the other column's
  paragraph ("Freight and Logistics reopening of two border crossings … Report"). A title's line
  beside running text now counts as running text does (``passes.columns.find_gutter``);
- a display title broken before a year ("River Quality Monitoring" over "2025"): the bare number
  alone is no heading and ended the title. In the title's size, weight and face at its line
  spacing, it is the title's last line (``passes.blocks._title_rest``); a paragraph the column breaks
  after its first line goes on at the top of the next column (``RUN_WORDS``);
- on a slide page, the layout model boxed a table without rules together with the heading and the
  sentence over it; the structure model took both in as rows and merged two columns. Rows of running
  text over (or under) the table the word grid reads are left out, and the model reads the table
  alone (``table_verdict.without_sentences``);
- in MuPDF's serif (``--printer mupdf-serif``), the model read one head row on a dark bar as two (an
  empty cell over three columns beside "Change (%)" spanning both); where the model's first rows,
  put together column by column, are the word grid's head row, they count as one
  (``table_verdict.split_head``), and a one-line title beside two lines of the other column stands
  beside each of them (``find_gutter``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy.printed import build
from bench.accuracy.story_print import printable
from ocr_app.engines.page_tables import piece_of
from ocr_app.structure.lines import TextLine
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_verdict import split_head, without_sentences, wrapped_lines
from tests.factories import heading_texts, page_markdown, pages_markdown

TABLES = ("booktabs-wrapped-single", "none-wrapped-two-centred", "zebra-wrapped-two-centred")
TITLES = ("frame-grouped-two", "rows-grouped-two")
SLIDE = "none-labelled-slide"
NAMES = (*TABLES, *TITLES, SLIDE)


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
        # MuPDF's own faces (Nimbus Sans for the probe's sans), not the system fonts Chromium embeds
        assert {f[3] for f in doc[0].get_fonts()} >= {"Nimbus Sans Regular", "Nimbus Sans Bold"}
        assert "HeadlessChrome" not in (doc.metadata or {}).get("creator", "")
        assert "Household Energy Survey" in doc[0].get_text()
    assert (
        not printable("deck-plain") and not printable("long-wrapped-none") and printable("zebra-plain-wide")
    )


@pytest.mark.parametrize("name", TABLES)
def test_tables_read_as_printed_by_mupdf(textlayer_engine, printed, name):
    """One table a document, its rows as the truth has them: no row of a wrapped date, no table of
    the title beside the other column, no description lost to a grid of fills."""
    pdf, truth = printed[name]
    md = page_markdown(textlayer_engine, pdf)
    assert _tables(md) == _tables(truth), md
    title = truth.splitlines()[0].lstrip("# ")
    assert title in md.replace("\n", " ") and md.count("<table>") == 1, md


@pytest.mark.parametrize("name", TITLES)
def test_a_title_beside_the_other_column_stays_whole(textlayer_engine, printed, name):
    pdf, truth = printed[name]
    md = page_markdown(textlayer_engine, pdf)
    assert heading_texts(md) == heading_texts(truth), md
    paragraphs = [p.strip() for p in md.split("\n\n") if p.strip() and not p.startswith(("#", "<table"))]
    body = [p.strip() for p in truth.split("\n\n") if p.strip() and not p.startswith(("#", "<table", "|"))]
    assert sorted(paragraphs) == sorted(body), md


def test_a_slides_table_is_read_without_the_sentence_over_it(textlayer_engine, printed):
    pdf, _ = printed[SLIDE]
    md = pages_markdown(textlayer_engine, pdf)[1]
    rows = _tables(md)[0]
    assert rows[0] == ["Item", "Budget", "Spent", "Share"], md
    assert [r[0] for r in rows[1:]] == [
        "Staff",
        "Salaries",
        "Training",
        "Operations",
        "Energy",
        "Vehicles",
        "Rent",
    ]
    assert all(len(r) == 4 for r in rows) and "The table below sets out the figures by line." in md


SERIF = ("headfill-plain-wide", "headfill-wrapped-two-centred")


@pytest.fixture(scope="module")
def serif(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    out = tmp_path_factory.mktemp("mupdf-serif")
    names = build(out, only=SERIF, printer="mupdf-serif")
    return {n: (out / "pdf" / f"{n}.pdf", (out / "gt" / f"{n}.md").read_text()) for n in names}


@pytest.mark.parametrize("name", SERIF)
def test_printed_in_a_serif_face(textlayer_engine, serif, name):
    """Set in MuPDF's serif, justified: the head row on a dark bar stays one row (``split_head``),
    and a one-line title beside two lines of the other column stays whole (``find_gutter``)."""
    pdf, truth = serif[name]
    md = page_markdown(textlayer_engine, pdf)
    assert _tables(md) == _tables(truth), md
    assert heading_texts(md) == heading_texts(truth), md
    assert not md.startswith(("when", "the")), md


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
    assert wrapped_lines(model, rules, 1) == 1
    # three lines of one cell: both rows are its wrapped lines
    model3 = [*model[:3], _row("", "", "2026"), _row("", "", "(late)")]
    rules3 = [*rules[:2], _row("M2", "Publish data", "Q1 2026 (late)")]
    assert wrapped_lines(model3, rules3, 1) == 2
    # a row whose text is no continuation in the word grid's reading, or that has its key, counts
    assert (
        wrapped_lines(model, [head, *rules[1:2], _row("M2", "Publish data", "Q1"), _row("", "", "2026")], 1)
        == 0
    )
    assert wrapped_lines([*model[:3], _row("M3", "", "2026")], rules, 1) == 0


def test_a_form_inside_a_table_region_is_a_piece_of_it():
    region = (100.0, 100.0, 600.0, 500.0)
    assert piece_of((300.0, 200.0, 380.0, 260.0), region)  # one cell's fills
    assert not piece_of((110.0, 110.0, 590.0, 490.0), region)  # the table's own grid
    assert not piece_of((620.0, 200.0, 700.0, 260.0), region)  # beside it


def _line(text: str, x0: float, y0: float, x1: float) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + 10.0), 10.0)


def test_sentences_over_a_word_grid_are_left_out_a_spanning_head_is_not():
    grid = [_line(t, x, 60.0 + 14 * k, x + 40) for k in range(4) for t, x in (("Item", 10.0), ("75", 200.0))]
    sentence = _line("The table below sets out the figures by line.", 10.0, 30.0, 300.0)
    heading = _line("Table detail", 10.0, 10.0, 80.0)
    kept = without_sentences([heading, sentence, *grid], grid, 10.0)
    assert kept is not None and {ln.text for ln in kept} == {"Item", "75"}
    head = _line("Nitrate (mg/l)", 150.0, 44.0, 260.0)  # over a column group, right above the grid
    kept = without_sentences([sentence, head, *grid], grid, 10.0)
    assert kept is not None and head in kept and sentence not in kept
    assert without_sentences([head, *grid], grid, 10.0) is None  # nothing to leave out


def test_a_head_row_the_model_splits_in_two_counts_as_one():
    """Set in a serif face on a dark bar, the model read one head row as two: an empty cell over three
    columns beside "Change (%)" spanning both, over "Region", "2023", "2024" (headfill-plain-wide)."""
    model = [
        [Cell("", colspan=3), Cell("Change (%)", rowspan=2)],
        _row("Region", "2023", "2024"),
        _row("North", "150", "200", "+33.3"),
    ]
    rules = [_row("Region", "2023", "2024", "Change (%)"), _row("North", "150", "200", "+33.3")]
    assert split_head(model, rules, 0) == 1
    # heads over column groups: two texts in one column, structure the word grid cannot show
    grouped = [
        [Cell("Site", rowspan=2), Cell("Nitrate", colspan=2)],
        _row("2024", "2025"),
        _row("Weir", "2.7", "7.9"),
    ]
    assert (
        split_head(
            grouped, [_row("Site", "Nitrate", ""), _row("", "2024", "2025"), _row("Weir", "2.7", "7.9")], 2
        )
        == 0
    )
