"""The probe's documents typeset by LaTeX (issue 30, round 22; ``bench.accuracy.latex_print``).

Why: most papers are LaTeX's output, and it sets tables otherwise than a browser or a word
processor. Typeset from the probe's HTML, it showed faults in the rules:

- **keys centred down their rows** (``\\multirow``): "Roads" stands between "Ring road bearings" and
  "Bridge decks", overlapping both lines, and joined them into one row; "Water", centred over three
  rows, stood on the middle one, the rows above and below it keyless. Each is one key cell spanning
  its rows now (``centred_keys``);
- **narrow justified cells** (a ``p`` column): LaTeX spreads a cell's few words over its width, the
  text layer breaks such lines at their wide spaces, and with no whole line left near them to measure
  them by, they stayed broken: their gaps made columns of their own. Broken lines that measure each
  other (same ends, even spaces, words) are joined, and a run of words may find its measure further
  off (``justified``);
- **rows as close as a cell's lines**: the structure model cut a wrapped description between two of
  its lines ("… to four more" | "schools in the east"), or read the head row and the first body row
  as one ("Measure M1"); the word grid's rows, each begun by a key, are taken then
  (``table_verdict.broken_sentences``, ``heads_joined_to_body``).

The PDFs in ``tests/data/latex`` were typeset by ``python -m bench.accuracy.printed --out DIR
--printer latex --only NAME`` (pdfTeX, TeX Live 2022); CI has no TeX, so they are kept, and their
truth is built from the same plan here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from bench.accuracy.printed import plan
from ocr_app.structure.centred_keys import key_spans, spread_keys, straddling
from ocr_app.structure.headings import _size_level
from ocr_app.structure.justified import join_justified
from ocr_app.structure.lines import DocStyle, TextLine
from ocr_app.structure.passes.columns import by_position
from ocr_app.structure.passes.prepare import join_drop_caps
from ocr_app.structure.table_bounds import _in_columns, _rows_below
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_verdict import broken_sentences, heads_joined_to_body
from tests.factories import heading_texts, page_markdown, pages_markdown

LATEX = Path(__file__).parent / "data" / "latex"
CENTRED_KEYS = ("merged-frame-two",)
NARROW_CELLS = ("none-wrapped-two-centred", "zebra-wrapped-two-centred")
GROUP_HEADS = "report-colon-1"
TITLED = ("news-dropcap", "report-smallcaps-0", "paper-ieee-two")
BOX_EDGES = ("statement-frame-wide", "long-wrapped-rows")
PANELS = "deck-samesize"


def _truth(name: str) -> str:
    return next(make for n, _, make in plan() if n == name)()[1]


def _tables(md: str) -> list[list[list[tuple[str, str]]]]:
    """Each table's rows, each cell as (its spans, its text)."""
    return [
        [
            [
                (" ".join(sorted(re.findall(r'\w+="\d+"', attrs.replace("'", '"')))), text)
                for attrs, text in cells
            ]
            for cells in (
                re.findall(r"<t[dh]([^>]*)>([^<]*)</t[dh]>", tr)
                for tr in re.findall(r"<tr>(.*?)</tr>", t, re.S)
            )
        ]
        for t in re.findall(r"<table>.*?</table>", md, re.S)
    ]


def test_the_kept_pdfs_are_pdftex():
    import pymupdf

    for pdf in sorted(LATEX.glob("*.pdf")):
        with pymupdf.open(pdf) as doc:
            assert "pdfTeX" in (doc.metadata or {}).get("producer", ""), pdf.name
    assert {p.stem for p in LATEX.glob("*.pdf")} == {
        *CENTRED_KEYS,
        *NARROW_CELLS,
        GROUP_HEADS,
        *TITLED,
        PANELS,
        *BOX_EDGES,
    }


@pytest.mark.parametrize("name", CENTRED_KEYS)
def test_keys_centred_down_their_rows_span_them(textlayer_engine, name):
    """ "Roads" centred over two rows, "Water" over three: one key cell over each group's rows, each
    row its own (they were joined: "Ring road bearings Bridge decks")."""
    md = page_markdown(textlayer_engine, LATEX / f"{name}.pdf")
    assert md.count("<table>") == 1, md
    assert _tables(md) == _tables(_truth(name)), md
    assert 'rowspan="3"' in md


def test_group_heads_over_a_head_centred_down_two_rows(textlayer_engine):
    """ "Site" centred down the two head rows overlaps the line of group heads ("Nitrate (mg/l)",
    "Phosphate (mg/l)") that the layout model's box left out: the group heads were not looked for
    above it and came out as a heading over the table."""
    md = page_markdown(textlayer_engine, LATEX / f"{GROUP_HEADS}.pdf")
    assert _tables(md) == _tables(_truth(GROUP_HEADS))[:1], md
    assert "### Nitrate" not in md


@pytest.mark.parametrize("name", BOX_EDGES)
def test_the_rows_a_layout_box_leaves_out_are_the_tables(textlayer_engine, name):
    """A statement's total ("Profit for the year", bold under a rule) under the layout model's box was
    read as the first line of the paragraph under the table; a description's last line under the
    box's last row (a long table's end on page 2) was trimmed off it as prose."""
    md = "\n\n".join(pages_markdown(textlayer_engine, LATEX / f"{name}.pdf"))
    assert _tables(md)[-1][-1] == _tables(_truth(name))[0][-1], md


@pytest.mark.parametrize("name", TITLED)
def test_headings_at_the_truths_levels(textlayer_engine, name):
    """LaTeX's title at 1.7 times the body (``\\LARGE``, under the 1.9 that makes a title by size
    alone) is "#", set once on the first page over smaller heading sizes; a drop cap (lettrine sets
    the text right at the letter's edge) starts its paragraph, not a heading; titles in small capitals
    take their capitals' size (sections and subsections were mixed up); "References" on a page of
    references in small print keeps the sections' level (the heading sizes scaled down to the page's
    print made it "#")."""
    md = "\n\n".join(pages_markdown(textlayer_engine, LATEX / f"{name}.pdf"))
    got = [ln.split(" ", 1) for ln in md.splitlines() if ln.startswith("#")]
    want = [ln.split(" ", 1) for ln in _truth(name).splitlines() if ln.startswith("#")]
    assert [(h, t.upper()) for h, t in got] == [(h, t.upper()) for h, t in want], md


def test_panels_set_level_are_read_left_to_right(textlayer_engine):
    """Three filled panels at one height (a slide): read left to right. The middle one's top was a
    thousandth of a point higher and it came out first."""
    md = page_markdown(textlayer_engine, LATEX / f"{PANELS}.pdf", 2)
    assert heading_texts(md)[1:] == ["Open data", "Cleaner rivers", "Safer crossings"], md


@pytest.mark.parametrize("name", NARROW_CELLS)
def test_narrow_justified_cells_stay_in_their_rows(textlayer_engine, name):
    """A description in a narrow justified column, its lines spread and broken at their spaces: one
    cell a row, as the truth has it (it made columns of its own, or lost its rows to the model)."""
    md = page_markdown(textlayer_engine, LATEX / f"{name}.pdf")
    assert md.count("<table>") == 1, md
    assert _tables(md) == _tables(_truth(name)), md


def _pc(text: str, x0: float, y0: float, width: float | None = None, bold: bool = False) -> TextLine:
    """A piece of text 8 high, its words a space (2) apart over ``width`` (6 a letter)."""
    x1 = x0 + (width or 6.0 * len(text))
    words, x, step = [], x0, (x1 - x0 + 2.0) / (len(text) + 1)
    for word in text.split():
        words.append((x, x + step * len(word)))
        x = words[-1][1] + 2 * step
    words[-1] = (words[-1][0], x1)
    return TextLine(text, (x0, y0, x1, y0 + 8.0), 8.0, bold, 700 if bold else 400, words=tuple(words))


def _column(p: TextLine) -> int:
    return 0 if p.box[0] < 100.0 else 1 if p.box[0] < 250.0 else 2


def test_a_key_between_two_rows_spans_them():
    head = [
        _pc("Area", 50.0, 90.0, bold=True),
        _pc("Project", 150.0, 90.0, bold=True),
        _pc("Budget", 300.0, 90.0, bold=True),
    ]
    ring = [_pc("Ring road bearings", 150.0, 102.0), _pc("549", 300.0, 102.0)]
    roads = [_pc("Roads", 50.0, 107.5)]  # centred: overlaps the line above and the line below
    decks = [_pc("Bridge decks", 150.0, 113.0), _pc("857", 300.0, 113.0)]
    river = [_pc("River stations", 150.0, 124.0), _pc("422", 300.0, 124.0)]
    water = [_pc("Water", 50.0, 135.0), _pc("Plant outlet", 150.0, 135.0), _pc("618", 300.0, 135.0)]
    gates = [_pc("Flood gates", 150.0, 146.0), _pc("231", 300.0, 146.0)]
    run = [head, ring, roads, decks, river, water, gates]
    kept, keys = straddling(run, _column)
    assert keys == [roads] and roads not in kept
    grid = [[[p for p in r if _column(p) == c] for c in range(3)] for r in kept]
    grid = spread_keys(grid, keys, lambda p: p.bold)
    assert key_spans(grid) == [1, 2, 0, 3, 0, 0]
    # a key at the top of its rows (no key between two lines): nothing spans
    top = [head, [roads[0], *ring], decks, [water[0], *river], [*water[1:]], gates]
    assert straddling(top, _column)[1] == []
    assert key_spans([[[p for p in r if _column(p) == c] for c in range(3)] for r in top]) == [1] * 6


def test_broken_lines_of_a_narrow_justified_cell_measure_each_other():
    """Two lines of a narrow justified cell, each broken at its wide, even spaces, with no whole line
    near them: joined, each the other's measure. Figures set as evenly are a table's and stay."""
    lines = [
        _pc("grants", 354.0, 222.0, 23.0), _pc("for", 384.5, 222.0, 11.0), _pc("house-", 403.0, 222.0, 28.0),
        _pc("holds", 354.0, 233.0, 21.0), _pc("on", 381.0, 233.0, 9.0), _pc("low", 396.0, 233.0, 13.0),
        _pc("in-", 415.0, 233.0, 16.0),
    ]  # fmt: skip
    assert [ln.text for ln in join_justified(lines)] == ["grants for house-", "holds on low in-"]
    figures = [
        _pc("2.74", 354.0, 222.0, 16.0), _pc("7.90", 384.0, 222.0, 16.0), _pc("3.18", 414.0, 222.0, 16.0),
        _pc("3.57", 354.0, 233.0, 16.0), _pc("5.88", 384.0, 233.0, 16.0), _pc("4.89", 414.0, 233.0, 16.0),
    ]  # fmt: skip
    assert len(join_justified(figures)) == 6


def test_a_reading_that_cuts_a_sentence_or_joins_heads_to_a_row_is_told():
    def rows(*texts: tuple[str, ...]) -> list[list[Cell]]:
        return [[Cell(t) for t in r] for r in texts]

    grid = rows(
        ("Measure", "Description", "Due"),
        ("M3", "Extend the mobile library to four more schools in the east", "Q3"),
        ("M4", "Review heating grants", "Q4"),
    )
    model = rows(
        ("Measure", "Description", "Due"),
        ("M3", "Extend the mobile library to four more", "Q3"),
        ("M4", "schools in the east Review heating grants", "Q4"),
    )
    assert broken_sentences(model) == 1 and broken_sentences(grid) == 0
    joined = rows(
        ("Measure M3", "Description Extend the mobile library to four more schools in the east", "Due Q3"),
        grid[2],
    )
    assert heads_joined_to_body(joined, grid, 1)
    assert not heads_joined_to_body(grid, grid, 1)


def test_a_row_under_a_box_joins_it_only_in_its_columns():
    """Under a box's rows of cells: a total set in its columns joins; a calculation set elsewhere
    ("(c)  (d)" over the figures, ICDAR's us-009) does not."""
    held = [
        _pc("Revenue", 50.0, 100.0), _pc("8,975", 300.0, 100.0, 30.0), _pc("1,825", 400.0, 100.0, 30.0),
        _pc("Cost of sales", 50.0, 112.0), _pc("(1,565)", 296.0, 112.0, 34.0), _pc("(2,459)", 396.0, 112.0, 34.0),
        _pc("Gross profit", 50.0, 124.0), _pc("7,410", 300.0, 124.0, 30.0), _pc("(634)", 404.0, 124.0, 26.0),
    ]  # fmt: skip
    total = [
        _pc("Profit for the year", 50.0, 136.0),
        _pc("8,206", 300.0, 136.0, 30.0),
        _pc("(380)", 404.0, 136.0, 26.0),
    ]
    assert _rows_below(held, [*held, *total]) == total
    labels = [_pc("(c)", 310.0, 136.0), _pc("(d)", 410.0, 136.0)]
    rate = [_pc("Indirect Rate (c)/(d)", 50.0, 148.0), _pc("870,038", 330.0, 148.0, 36.0)]
    assert _rows_below(held, [*held, *labels, *rate]) == []
    assert _in_columns(total, held, 50.0) and not _in_columns(labels, held, 50.0)


def test_a_heading_in_the_documents_size_keeps_its_level_on_a_page_in_small_print():
    style = DocStyle(body_size=18.0, heading_sizes=(32.0, 26.0, 22.0), first_level=1)
    k = 14.67 / 18.0  # the page's references in smaller print: its heading sizes scaled down
    page = replace(
        style, body_size=14.67, heading_sizes=tuple(h * k for h in style.heading_sizes), print_scale=k
    )
    assert page.level_for_size(26.4) == 1  # scaled, the sections' size reaches the title's
    assert _size_level(page, 26.4) == 2 and _size_level(style, 26.4) == 2
    assert _size_level(page, 19.0) == page.level_for_size(19.0)  # under the document's sizes: as scaled


def test_a_drop_cap_with_its_text_at_its_edge_joins_it():
    """lettrine sets the rest of the first word right at the letter's advance, a hair left of its ink."""
    cap = TextLine("T", (113.4, 292.4, 142.3, 339.7), 47.3)
    first = _pc("he regional office reviewed every", 142.3 - 0.001, 291.0, 279.0)
    second = _pc("contract signed during the year", 152.3, 315.0, 269.0)
    out = join_drop_caps([cap, first, second], 18.3)
    assert [ln.text for ln in out] == [
        "The regional office reviewed every",
        "contract signed during the year",
    ]
    assert out[0].box[0] == 113.4 and out[1].box[0] == 113.4


def test_items_level_with_each_other_read_left_to_right():
    a, b, c = (
        TextLine(t, (x, y, x + 50.0, y + 10.0), 10.0)
        for t, x, y in (("A", 0.0, 84.831), ("B", 60.0, 84.830), ("C", 120.0, 84.831))
    )
    below = TextLine("D", (0.0, 100.0, 50.0, 110.0), 10.0)
    assert [it.text for it in by_position([below, c, b, a], 10.0)] == ["A", "B", "C", "D"]
