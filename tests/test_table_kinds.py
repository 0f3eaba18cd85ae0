"""Table kinds from documents nobody here made (issue 30): rows whose figures are centred beside a
wrapped description, rows bounded only by alternating fills, a full-width bar or bold section label
inside the body, a table in one column of a two-column paper with its caption and note, and a
financial statement (dot leaders, a note column, year columns, rules over and under totals). Each
page is built here with PyMuPDF; each must come out as one table with exactly its rows and columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.false_table_pages import wrap
from ocr_app.engines.textlayer import TextLayerEngine
from tests.factories import assert_in_order
from tests.factories import page_markdown as _markdown
from tests.test_table_rows import LEAD, PAD, WRAP_BODY, WRAP_COLS, WRAP_HEADER, _cells, _text
from tests.test_table_styles import A4, LEFT, RIGHT, SIZE, _check, _grid, _page


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine()
    assert eng._learned, "the tables extra (rapid-table) is part of the dev install"
    return eng


# --- 1. figures centred vertically beside a wrapped description ------------------------------------


def _centred_rows(page: pymupdf.Page, y: float, fill: Callable[[int], tuple | None], *, ruled: bool) -> float:
    """The wrapped table with each row's one-line cells set in the middle of its height (as a
    spreadsheet's "centre vertically"); the wrapped name and description start at the row's top."""
    for c, text in enumerate(WRAP_HEADER):
        _text(page, WRAP_COLS, c, y + LEAD, text, bold=True, figure=c >= 2)
    y += LEAD + PAD
    if ruled:
        page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=0.5)
    for k, row in enumerate(WRAP_BODY):
        wrapped = {c: wrap(row[c], WRAP_COLS[c + 1] - WRAP_COLS[c] - 8, SIZE) for c in (0, 1)}
        lines = max(len(v) for v in wrapped.values())
        height = lines * LEAD + PAD
        colour = fill(k)
        if colour is not None:
            page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + height), color=None, fill=colour, width=0)
        base = y + PAD / 2 + LEAD - 2.5
        for c, text in enumerate(row):
            cell = wrapped.get(c, [text])
            top = base + (lines - len(cell)) * LEAD / 2  # each cell centred in the row's height
            for n, line in enumerate(cell):
                _text(page, WRAP_COLS, c, top + n * LEAD, line, bold=False, figure=c >= 2)
        y += height
        if ruled:
            page.draw_line((LEFT, y), (RIGHT, y), color=(0.5, 0.5, 0.5), width=0.5)
    return y


def centred_borderless(page: pymupdf.Page, y: float) -> float:
    """No rules, no fills: the white space between rows tells them apart."""
    return _centred_rows(page, y, lambda k: None, ruled=False)


def centred_striped(page: pymupdf.Page, y: float) -> float:
    """Alternating grey fills, one per row."""
    return _centred_rows(page, y, lambda k: (0.9, 0.9, 0.9) if k % 2 == 0 else None, ruled=False)


def centred_ruled_rows(page: pymupdf.Page, y: float) -> float:
    """A thin grey rule under every row, no vertical rules."""
    return _centred_rows(page, y, lambda k: None, ruled=True)


@pytest.mark.parametrize(
    "style", [centred_borderless, centred_striped, centred_ruled_rows], ids=lambda f: f.__name__
)
def test_figures_centred_beside_a_wrapped_cell_stay_in_its_row(tmp_path, engine, style):
    md = _markdown(engine, _page(style, tmp_path / "page.pdf"))
    _check(md)
    assert _cells(md) == [WRAP_HEADER, *WRAP_BODY], md


# --- 2. stripes of two fills as the only row bounds ------------------------------------------------

STRIPE_PAD = 2.0  # hardly any space inside a stripe: the fill's edge is the row's edge


def two_fill_stripes(page: pymupdf.Page, y: float) -> float:
    """Every row on a fill, two light tints alternating (no white between them), cells top-aligned,
    a description wrapping to two lines inside its stripe; a dark header band."""
    page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + LEAD + PAD), color=None, fill=(0.12, 0.23, 0.45), width=0)
    for c, text in enumerate(WRAP_HEADER):
        font = "hebo"
        if c >= 2:
            right = (WRAP_COLS[c + 1] if c + 1 < len(WRAP_COLS) else RIGHT) - 4
            x = right - pymupdf.get_text_length(text, fontname=font, fontsize=SIZE)
        else:
            x = WRAP_COLS[c] + 4
        page.insert_text((x, y + LEAD + 0.5), text, fontname=font, fontsize=SIZE, color=(1, 1, 1))
    y += LEAD + PAD
    for k, row in enumerate(WRAP_BODY):
        wrapped = {c: wrap(row[c], WRAP_COLS[c + 1] - WRAP_COLS[c] - 8, SIZE) for c in (0, 1)}
        height = max(len(v) for v in wrapped.values()) * LEAD + STRIPE_PAD
        tint = (0.86, 0.9, 0.96) if k % 2 == 0 else (0.95, 0.97, 1.0)
        page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + height), color=None, fill=tint, width=0)
        base = y + STRIPE_PAD / 2 + LEAD - 2.5
        for c, text in enumerate(row):
            for n, line in enumerate(wrapped.get(c, [text])):
                _text(page, WRAP_COLS, c, base + n * LEAD, line, bold=False, figure=c >= 2)
        y += height
    return y


def test_a_stripe_bounds_its_row(tmp_path, engine):
    md = _markdown(engine, _page(two_fill_stripes, tmp_path / "page.pdf"))
    _check(md)
    assert _cells(md) == [WRAP_HEADER, *WRAP_BODY], md


# --- 3. a bar across the table and a bold section label --------------------------------------------

BAR_HEADER = ["Account", "Q1", "Q2", "Q3", "Q4"]
BAR_COLS = [LEFT, 240.0, 310.0, 380.0, 450.0]
REVENUE = [
    ["Product sales", "4,120", "4,388", "4,502", "4,911"],
    ["Services", "1,806", "1,870", "1,932", "2,045"],
]
EXPENSES = [
    ["Salaries", "2,210", "2,245", "2,301", "2,356"],
    ["Rent and utilities", "412", "415", "418", "430"],
    ["Marketing", "388", "402", "377", "455"],
]
BAR = "Operating expenses"
SECTION = "Revenue"
ROW = 16.0


def _bar_row(page: pymupdf.Page, y: float, row: list[str], *, bold: bool = False, color=(0, 0, 0)) -> float:
    font = "hebo" if bold else "helv"
    for c, text in enumerate(row):
        if not text:
            continue
        if c == 0:
            x = BAR_COLS[0] + 4
        else:
            right = (BAR_COLS[c + 1] if c + 1 < len(BAR_COLS) else RIGHT) - 4
            x = right - pymupdf.get_text_length(text, fontname=font, fontsize=SIZE)
        page.insert_text((x, y + ROW - 4.5), text, fontname=font, fontsize=SIZE, color=color)
    return y + ROW


def _bar_table(page: pymupdf.Page, y: float, *, rules: bool, stripes: bool) -> float:
    """A bold header; a bold section label ("Revenue") with its figure cells empty; then, between
    body rows, a full-width dark band holding one bold white label; booktabs rules or none, body rows
    on alternating grey fills or on white."""
    if rules:
        page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=1.0)
    y = _bar_row(page, y + 2, BAR_HEADER, bold=True)
    if rules:
        page.draw_line((LEFT, y + 1), (RIGHT, y + 1), color=(0, 0, 0), width=0.5)
    y += 3
    k = 0

    def body(y: float, row: list[str], bold: bool = False) -> float:
        nonlocal k
        if stripes and k % 2 == 0:
            page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + ROW), color=None, fill=(0.9, 0.9, 0.9), width=0)
        k += 1
        return _bar_row(page, y, row, bold=bold)

    y = body(y, [SECTION, "", "", "", ""], bold=True)
    for row in REVENUE:
        y = body(y, row)
    page.draw_rect(
        pymupdf.Rect(LEFT, y + 2, RIGHT, y + 2 + ROW), color=None, fill=(0.12, 0.23, 0.45), width=0
    )
    y = _bar_row(page, y + 2, [BAR, "", "", "", ""], bold=True, color=(1, 1, 1)) + 2
    k = 0
    for row in EXPENSES:
        y = body(y, row)
    if rules:
        page.draw_line((LEFT, y + 2), (RIGHT, y + 2), color=(0, 0, 0), width=1.0)
    return y + 2


def bar_booktabs(page: pymupdf.Page, y: float) -> float:
    """Booktabs rules above, under the header and below."""
    return _bar_table(page, y, rules=True, stripes=False)


def bar_borderless(page: pymupdf.Page, y: float) -> float:
    """No rules, no fills but the bar."""
    return _bar_table(page, y, rules=False, stripes=False)


def bar_striped(page: pymupdf.Page, y: float) -> float:
    """No rules; body rows on alternating grey fills, the bar dark."""
    return _bar_table(page, y, rules=False, stripes=True)


@pytest.mark.parametrize("style", [bar_booktabs, bar_borderless, bar_striped], ids=lambda f: f.__name__)
def test_a_bar_and_a_section_label_stay_rows_of_the_table(tmp_path, engine, style):
    md = _markdown(engine, _page(style, tmp_path / "page.pdf"))
    _check(md)  # one table, no heading
    assert BAR in md[md.index("<table>") : md.index("</table>")], md
    grid = _grid(md)
    assert all(len(r) == 5 for r in grid), md
    assert grid[0] == BAR_HEADER, md
    assert grid[1][0] == SECTION and grid[1][1:] in (["", "", "", ""], [SECTION] * 4), md
    assert grid[2:4] == REVENUE and grid[5:] == EXPENSES, md
    assert grid[4] == [BAR] * 5, md  # the bar spans the table's width


# --- 4. a table in one column of a two-column paper ------------------------------------------------

GUTTER = 20.0
COL_W = (RIGHT - LEFT - GUTTER) / 2
RIGHT_COL = LEFT + COL_W + GUTTER
CAPTION = "Table 2: Accuracy of the three models on the held-out split."
NOTE = "* p < 0.05 against the baseline."
PAPER_HEADER = ["Model", "Prec.", "Rec.", "F1"]
PAPER_BODY = [
    ["Baseline", "0.712", "0.684", "0.698"],
    ["CRF", "0.781", "0.742", "0.761"],
    ["BiLSTM", "0.823*", "0.797*", "0.810*"],
    ["Ours", "0.861*", "0.842*", "0.851*"],
]
LEFT_TEXT = (
    "We evaluate on the held-out split described in Section 3. Each model is trained five times with "
    "different seeds and we report the mean. The baseline is a rule-based tagger that uses only the "
    "word shapes; the CRF adds the part-of-speech features of the previous work. Our model replaces "
    "the recurrent encoder with a small transformer and is trained with the same budget. Training took "
    "four hours on a single accelerator for the largest model and under one hour for the others. "
    "Hyperparameters were chosen on the development split and kept fixed for all runs reported here."
)
RIGHT_ABOVE = (
    "Table 2 gives the results. All learned models beat the baseline by a wide margin, and ours is the "
    "best on all three measures."
)
RIGHT_BELOW = (
    "The gains are largest on recall, where the transformer encoder recovers long entities that the "
    "recurrent model splits in two. Precision improves less, as most remaining errors are label "
    "confusions between related types rather than boundary errors."
)


def _column_text(page: pymupdf.Page, x: float, y: float, text: str) -> float:
    lead = SIZE * 1.3
    for line in wrap(text, COL_W, SIZE, "tiro"):
        y += lead
        page.insert_text((x, y), line, fontname="tiro", fontsize=SIZE)
    return y + lead


def two_column_paper(path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    _column_text(page, LEFT, 90.0, LEFT_TEXT + " " + LEFT_TEXT)
    y = _column_text(page, RIGHT_COL, 90.0, RIGHT_ABOVE)
    # the caption above the table, centred over the column
    w = pymupdf.get_text_length(CAPTION, fontname="tiro", fontsize=SIZE - 0.5)
    page.insert_text((RIGHT_COL + (COL_W - w) / 2, y + 4), CAPTION, fontname="tiro", fontsize=SIZE - 0.5)
    y += 10
    cols = [RIGHT_COL, RIGHT_COL + 80, RIGHT_COL + 132, RIGHT_COL + 184]
    right = RIGHT_COL + COL_W
    page.draw_line((RIGHT_COL, y), (right, y), color=(0, 0, 0), width=1.0)
    for r, row in enumerate([PAPER_HEADER, *PAPER_BODY]):
        y += 14
        font = "hebo" if r == 0 else "helv"
        for c, text in enumerate(row):
            edge = (cols[c + 1] if c + 1 < len(cols) else right) - 4
            x = (
                cols[c] + 2
                if c == 0
                else edge - pymupdf.get_text_length(text, fontname=font, fontsize=SIZE - 1)
            )
            page.insert_text((x, y), text, fontname=font, fontsize=SIZE - 1)
        if r == 0:
            page.draw_line((RIGHT_COL, y + 4), (right, y + 4), color=(0, 0, 0), width=0.5)
            y += 3
    y += 5
    page.draw_line((RIGHT_COL, y), (right, y), color=(0, 0, 0), width=1.0)
    page.insert_text((RIGHT_COL + 2, y + 11), NOTE, fontname="tiro", fontsize=SIZE - 1.5)
    _column_text(page, RIGHT_COL, y + 16, RIGHT_BELOW)
    doc.save(path)
    doc.close()


def test_a_table_in_one_column_of_a_paper_keeps_its_caption_and_note_outside(tmp_path, engine):
    path = tmp_path / "page.pdf"
    two_column_paper(path)
    md = _markdown(engine, path)
    assert md.count("<table>") == 1, md
    table = md[md.index("<table>") : md.index("</table>")]
    for outside in ("Table 2:", "p < 0.05", "held-out split described", "Hyperparameters", "gains are"):
        assert outside not in table, md
    # The note is a paragraph of its own after the table (its "*" is written as a list marker today:
    # a lone "* " line reads as a bullet; docs/ACCURACY.md lists it as left to do).
    assert re.search(r"^Table 2: Accuracy", md, re.M) and re.search(r"^(\\?\*|-) p < 0\.05", md, re.M), md
    assert _cells(md) == [PAPER_HEADER, *PAPER_BODY], md
    assert_in_order(
        md, ["Table 2 gives the results", "Table 2: Accuracy", "<table>", "p < 0.05", "The gains"]
    )


# --- 5. a financial statement ----------------------------------------------------------------------

DEJAVU_BOLD = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
FIN_COLS = [LEFT, 300.0, 360.0, 440.0]  # label, note, 2023, 2022
FIN_HEADER = ["", "Note", "2023", "2022"]
# (label, indent level, note, 2023, 2022, total)
FIN_ROWS = [
    ("Revenue", 0, "4", "1,204", "1,098", False),
    ("Cost of sales", 0, "5", "(642)", "(601)", False),
    ("Gross profit", 0, "", "562", "497", True),
    ("Distribution costs", 1, "", "(88)", "(81)", False),
    ("Administrative expenses", 1, "6", "(174)", "(166)", False),
    ("Other operating income", 1, "7", "23", "19", False),
    ("Operating profit", 0, "", "323", "269", True),
]


def _leadered(label: str, x: float, end: float) -> str:
    """The label followed by dot leaders up to ``end``."""
    text = label + " "
    while pymupdf.get_text_length(text + ". ", fontname="helv", fontsize=SIZE) < end - x:
        text += ". "
    return text.rstrip()


def financial_statement(page: pymupdf.Page, y: float) -> float:
    """Labels run into dot leaders; sub-items indented; a "Note" column; two year columns under a
    "€ thousands" header spanning them; a single rule above each total and a double rule below."""
    right = RIGHT
    fig_right = [FIN_COLS[3] - 4, right - 4]

    def flush_right(text: str, edge: float, yy: float, font: str = "helv") -> None:
        page.insert_text(
            (edge - pymupdf.get_text_length(text, fontname=font, fontsize=SIZE), yy),
            text,
            fontname=font,
            fontsize=SIZE,
        )

    unit = "€ thousands"  # in DejaVu Sans Bold: the base-14 fonts here have no euro sign
    page.insert_font(fontname="dvb", fontfile=str(DEJAVU_BOLD))
    w = pymupdf.Font(fontfile=str(DEJAVU_BOLD)).text_length(unit, fontsize=SIZE)
    page.insert_text(((FIN_COLS[2] + right) / 2 - w / 2, y + 12), unit, fontname="dvb", fontsize=SIZE)
    y += 16
    page.insert_text((FIN_COLS[1] + 4, y + 12), "Note", fontname="hebo", fontsize=SIZE)
    flush_right("2023", fig_right[0], y + 12, "hebo")
    flush_right("2022", fig_right[1], y + 12, "hebo")
    y += 18
    for label, indent, note, a, b, total in FIN_ROWS:
        if total:  # a single rule over the figures above a total
            for x0, x1 in ((FIN_COLS[2] + 10, FIN_COLS[3] - 2), (FIN_COLS[3] + 10, right - 2)):
                page.draw_line((x0, y + 1), (x1, y + 1), color=(0, 0, 0), width=0.5)
        x = FIN_COLS[0] + 4 + 12 * indent
        page.insert_text((x, y + 12), _leadered(label, x, FIN_COLS[1] - 8), fontname="helv", fontsize=SIZE)
        if note:
            page.insert_text((FIN_COLS[1] + 4, y + 12), note, fontname="helv", fontsize=SIZE)
        flush_right(a, fig_right[0], y + 12)
        flush_right(b, fig_right[1], y + 12)
        y += 16
        if total:  # a double rule under it
            for x0, x1 in ((FIN_COLS[2] + 10, FIN_COLS[3] - 2), (FIN_COLS[3] + 10, right - 2)):
                page.draw_line((x0, y), (x1, y), color=(0, 0, 0), width=0.5)
                page.draw_line((x0, y + 2), (x1, y + 2), color=(0, 0, 0), width=0.5)
            y += 4
    return y


def _label(text: str) -> str:
    """A label cell without its dot leaders."""
    return re.sub(r"(\s*\.){2,}\s*$", "", text).strip()


def test_a_financial_statement_is_one_table_of_label_note_and_years(tmp_path, engine):
    md = _markdown(engine, _page(financial_statement, tmp_path / "page.pdf"))
    _check(md)
    rows = _cells(md)
    body = [[_label(r[0]), *r[1:]] for r in rows if r and _label(r[0]) in {f[0] for f in FIN_ROWS}]
    assert body == [[f[0], f[2], f[3], f[4]] for f in FIN_ROWS], md
    assert all(len(r) == 4 for r in _grid(md)), md
    head = " ".join(" ".join(r) for r in rows[: len(rows) - len(FIN_ROWS)])
    assert "€ thousands" in head and "Note" in head and "2023" in head and "2022" in head, md
