"""A table's rows where no rule marks them (issue 30): a cell whose text wraps to two or three lines
stays one cell of one row (the lines joined), and rows of one line each, set close with no rule
between them, stay one row each. Each page is A4 with body paragraphs above and below the table,
built here with PyMuPDF; each must come out as one table (not pieces) with exactly its rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pymupdf
import pytest

from bench.accuracy.false_table_pages import wrap
from ocr_app.engines.textlayer import TextLayerEngine
from tests.factories import page_markdown as _markdown
from tests.test_table_styles import LEFT, RIGHT, SIZE, _check, _page

LEAD = SIZE * 1.25  # the line spacing inside a cell
PAD = 6.0  # the white space between two rows of wrapped cells

# Wrapped rows: a name and a description that wrap in their columns, and figures; each cell set
# from the row's first line (top-aligned).
WRAP_HEADER = ["Item", "Description", "Units", "Unit cost", "Total"]
WRAP_BODY = [
    [
        "Wall brackets",
        "Steel brackets for the north wall, galvanised and pre-drilled",
        "120",
        "4.50",
        "540.00",
    ],
    ["Anchors", "Anchor bolts", "480", "0.35", "168.00"],
    [
        "Roof joists, treated",
        "Timber joists, treated against rot and insects, cut to length on site by the supplier's crew",
        "36",
        "22.10",
        "795.60",
    ],
    ["Deck sheets", "Plywood sheets for the roof deck, exterior grade", "54", "18.75", "1,012.50"],
    ["Sealant", "Sealant", "12", "6.20", "74.40"],
    [
        "Flashing",
        "Flashing strips in aluminium, folded to the profile of the parapet",
        "40",
        "9.80",
        "392.00",
    ],
]
WRAP_COLS = [LEFT, 140.0, 300.0, 380.0, 450.0]  # left edges: names 68 pt wide, descriptions 160 pt

# Rows of one line each, set at the text's own line spacing (no padding, no rules between them).
TIGHT_HEADER = ["Station", "Operator", "Opened", "Platforms", "Passengers"]
TIGHT_BODY = [
    ["Abbey Road", "Northern Rail", "1887", "2", "41,200"],
    ["Bridge Street", "City Lines", "1902", "4", "118,950"],
    ["Castle Hill", "Northern Rail", "1911", "2", "23,480"],
    ["Dock Lane", "Harbour Link", "1923", "3", "67,015"],
    ["Elm Park", "City Lines", "1930", "2", "35,760"],
    ["Fenwick", "Harbour Link", "1934", "6", "210,330"],
    ["Grange Road", "City Lines", "1948", "2", "19,870"],
    ["High Cross", "Northern Rail", "1952", "4", "88,640"],
    ["Ironbridge", "Harbour Link", "1961", "2", "12,305"],
    ["Jubilee Way", "City Lines", "1977", "3", "54,120"],
    ["Kings Yard", "Northern Rail", "1985", "2", "28,990"],
    ["Lower Mill", "City Lines", "1994", "2", "31,415"],
    ["Market Square", "Harbour Link", "2006", "5", "143,760"],
]
TIGHT_COLS = [LEFT, 170.0, 270.0, 350.0, 430.0]
# The same rows in words only: no figure to anchor a row, only a cell in every column.
WORDS_HEADER = ["Station", "Operator", "Line", "Zone", "Access"]
WORDS_BODY = [
    [
        r[0],
        r[1],
        ["Red", "Blue", "Green"][k % 3],
        ["Central", "Inner", "Outer"][k // 2 % 3],
        ["Step-free", "Lift"][k % 2],
    ]
    for k, r in enumerate(TIGHT_BODY)
]


def _text(page: pymupdf.Page, cols: list[float], col: int, y: float, text: str, *, bold: bool, figure: bool):
    font = "hebo" if bold else "helv"
    if figure:
        right = (cols[col + 1] if col + 1 < len(cols) else RIGHT) - 4
        x = right - pymupdf.get_text_length(text, fontname=font, fontsize=SIZE)
    else:
        x = cols[col] + 4
    page.insert_text((x, y), text, fontname=font, fontsize=SIZE)


def _wrapped_rows(
    page: pymupdf.Page, y: float, fill: Callable[[int], tuple | None], pad: float = PAD
) -> float:
    """The wrapped table from the top ``y``: a bold header, then each row's cells top-aligned, the
    description wrapped to its column, row ``k`` on ``fill(k)`` (or none); returns the y below."""
    for c, text in enumerate(WRAP_HEADER):
        _text(page, WRAP_COLS, c, y + LEAD, text, bold=True, figure=c >= 2)
    y += LEAD + PAD
    for k, row in enumerate(WRAP_BODY):
        wrapped = {c: wrap(row[c], WRAP_COLS[c + 1] - WRAP_COLS[c] - 8, SIZE) for c in (0, 1)}
        height = max(len(v) for v in wrapped.values()) * LEAD + pad
        colour = fill(k)
        if colour is not None:
            page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + height), color=None, fill=colour, width=0)
        base = y + pad / 2 + LEAD - 2.5
        for c, text in enumerate(row):
            for n, line in enumerate(wrapped.get(c, [text])):
                _text(page, WRAP_COLS, c, base + n * LEAD, line, bold=False, figure=c >= 2)
        y += height
    return y


def wrapped_borderless(page: pymupdf.Page, y: float) -> float:
    """No rules, no fills: rows told apart by the white space between them."""
    return _wrapped_rows(page, y, lambda k: None)


def wrapped_striped(page: pymupdf.Page, y: float) -> float:
    """Alternating grey fills, one per row, each as tall as its wrapped description."""
    return _wrapped_rows(page, y, lambda k: (0.9, 0.9, 0.9) if k % 2 == 0 else None)


def wrapped_close(page: pymupdf.Page, y: float) -> float:
    """No rules, no fills, no padding: rows as close as a cell's lines, told apart only by the label
    and figures that start each one."""
    return _wrapped_rows(page, y, lambda k: None, pad=0.0)


def wrapped_close_striped(page: pymupdf.Page, y: float) -> float:
    """No padding, alternating fills: each stripe bounds a row."""
    return _wrapped_rows(page, y, lambda k: (0.9, 0.9, 0.9) if k % 2 == 0 else None, pad=0.0)


def wrapped_booktabs(page: pymupdf.Page, y: float) -> float:
    """A rule above and below the table and one under the header; none between the rows."""
    page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=1.0)
    y = _wrapped_rows(page, y + 2, lambda k: None)
    page.draw_line((LEFT, y + 2), (RIGHT, y + 2), color=(0, 0, 0), width=1.0)
    return y + 2


def _tight_rows(page: pymupdf.Page, y: float, header=TIGHT_HEADER, body=TIGHT_BODY) -> float:
    figures = header is TIGHT_HEADER
    for c, text in enumerate(header):
        _text(page, TIGHT_COLS, c, y + LEAD, text, bold=True, figure=figures and c >= 2)
    y += LEAD + 3
    for row in body:
        y += LEAD
        for c, text in enumerate(row):
            _text(page, TIGHT_COLS, c, y, text, bold=False, figure=figures and c >= 2)
    return y + 4


def tight_borderless(page: pymupdf.Page, y: float) -> float:
    """Thirteen rows of one line each at the text's own line spacing; no rules, no fills."""
    return _tight_rows(page, y)


def tight_words(page: pymupdf.Page, y: float) -> float:
    """Rows of words only, one line each, at the text's own line spacing; no rules, no fills."""
    return _tight_rows(page, y, WORDS_HEADER, WORDS_BODY)


def tight_booktabs(page: pymupdf.Page, y: float) -> float:
    """The same rows between a top rule, a rule under the header and a bottom rule."""
    page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=1.0)
    page.draw_line((LEFT, y + LEAD + 5), (RIGHT, y + LEAD + 5), color=(0, 0, 0), width=0.5)
    y = _tight_rows(page, y + 2)
    page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=1.0)
    return y


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine()
    assert eng._learned, "the tables extra (rapid-table) is part of the dev install"
    return eng


def _cells(md: str) -> list[list[str]]:
    """The table's rows, each a list of its cells' texts, whitespace and ``<br>`` as one space."""
    table = md[md.index("<table>") : md.index("</table>")]
    return [
        [" ".join(re.sub(r"<br\s*/?>", " ", c).split()) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr)]
        for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)
    ]


@pytest.mark.parametrize(
    "style",
    [wrapped_borderless, wrapped_striped, wrapped_close, wrapped_close_striped, wrapped_booktabs],
    ids=lambda f: f.__name__,
)
def test_a_wrapped_cell_stays_one_cell_of_its_row(tmp_path, engine, style):
    md = _markdown(engine, _page(style, tmp_path / "page.pdf"))
    _check(md)
    assert _cells(md) == [WRAP_HEADER, *WRAP_BODY], md


@pytest.mark.parametrize("style", [tight_borderless, tight_booktabs], ids=lambda f: f.__name__)
def test_rows_of_one_line_set_close_stay_apart(tmp_path, engine, style):
    md = _markdown(engine, _page(style, tmp_path / "page.pdf"))
    _check(md)
    assert _cells(md) == [TIGHT_HEADER, *TIGHT_BODY], md


def test_rows_of_words_set_close_stay_apart(tmp_path, engine):
    md = _markdown(engine, _page(tight_words, tmp_path / "page.pdf"))
    _check(md)
    assert _cells(md) == [WORDS_HEADER, *WORDS_BODY], md
