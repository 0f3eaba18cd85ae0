"""How the lines of one table cell read: one text wrapped at the cell's width, or values stacked one
a line. Both engines ask it of a ruled grid (the text layer's ``ruled_tables``, the light engine's
``rulings.grid_tables``): a grid row whose cells hold stacked values is several rows the rulings do
not part, and the structure model reads it instead."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ocr_app.structure.lines import Row
from ocr_app.structure.paragraphs import BULLETS
from ocr_app.structure.word_columns import is_figure

BULLET = "•"  # the glyph the text layer writes for a list's bullet, whatever the font drew


def wrapped(text_rows: Sequence[Row], left: float, right: float, head: bool = False) -> bool:
    """Whether a cell's text rows are one text broken at the cell's width, or a list of items, not
    values stacked one a row: each row starts a list item, or follows a hyphen, or its first word
    would not have fit at the end of the row above (the cell's padding taken as the least indent of
    its rows); and one row at least goes on in lower case or starts an item. Why: a ruled row whose
    cells wrap is no stack of unruled rows; but in a narrow column short labels ("3-year-olds",
    "4-year-olds", "Total") would not fit side by side either, and they start no sentence's middle.

    ``head``: the cell is in a header row ruled apart from rows below it, where a label wraps in
    title case ("Yanked Version /" over "SemVer requirement") and no values are stacked: the width
    alone says it."""
    pad = max(0.0, min(r.box[0] for r in text_rows) - left)
    width = right - left - 2 * pad
    prose = False
    for above, below in itertools.pairwise(text_rows):
        first = min(below.items, key=lambda i: i.box[0])
        if lone_mark(first.text) or first.text.startswith(BULLET) or above.text.endswith("-"):
            prose = True
            continue
        words = first.text.split()
        word = first.words[0][1] - first.words[0][0] if first.words else 0.5 * first.size * len(words[0])
        if above.box[2] - above.box[0] + 0.3 * first.size + word < width - 0.5 * first.size:
            return False
        prose |= words[0][0].islower()
    return prose or head


def lone_mark(text: str) -> bool:
    """A list item's mark alone (a bullet set a tab before its words)."""
    mark = text.strip()
    return len(mark) == 1 and mark in BULLETS


def stacked_row(cells: Sequence[tuple[Sequence[Row], float, float]]) -> bool:
    """Whether a grid row holds two or more cells of several text rows each that are no wrapped text
    (``cells``: each cell's text rows and its left and right edges), one of them figures one a line:
    rows the rulings do not part. Figures do not wrap; heads wrapped in title case ("Alternate
    Assessment" over "Based on Modified", ICDAR's us-013) are no stack of rows."""
    stacked = [rows for rows, x0, x1 in cells if len(rows) >= 2 and not wrapped(list(rows), x0, x1)]
    return len(stacked) >= 2 and any(all(is_figure(r.text) for r in rows) for rows in stacked)


def set_between(cells: Sequence[tuple[Sequence[Row], float, float]]) -> bool:
    """Whether a grid row whose cells hold several text rows is one row all the same: a line of a
    cell past the row's first is set between the lines of another cell (a row's cells centred top
    to bottom: "Use 1.5.0" between "Return" and "Error"), and the cells of several lines break as
    text would at their width (``wrapped`` without its case test: "Use either 1.5.0," over "1.5.1
    or 1.5.2"), none of them figures one a line. Rows the rulings do not part put every cell's lines
    on their rows' shared baselines; a label spanning them stands in the first column, or beside
    figures stacked one a row (docling's "6" layers beside "0.952" over "0.944") (``cells``: each
    cell's text rows and its left and right edges, left to right)."""
    tall = [rows for rows, x0, x1 in cells if len(rows) >= 2]
    if (
        not tall
        or not all(wrapped(list(rows), x0, x1, head=True) for rows, x0, x1 in cells if len(rows) >= 2)
        or any(all(is_figure(r.text) for r in rows) for rows in tall)
    ):
        return False  # figures one a line do not wrap: rows beside a label that spans them

    def middle(r: Row) -> float:
        return (r.box[1] + r.box[3]) / 2

    def between(line: Row, others: Sequence[Row]) -> bool:
        inside = min(r.box[1] for r in others) < middle(line) < max(r.box[3] for r in others)
        return inside and all(abs(middle(line) - middle(r)) > BETWEEN * line.size for r in others)

    return any(
        between(line, other)
        for rows, _, _ in cells[1:]
        for line in rows
        for other in tall
        if other is not rows
    )


BETWEEN = 0.35  # × the size: a line this far from every line beside it stands between them


def set_apart(rows: Sequence[Row], gap: float = 0.0) -> bool:
    """Whether a cell holds pieces set a column gap apart on one text row (no lone list mark):
    columns the rulings do not part (a shaded bar read as one cell across the table). ``gap``: the
    least gap between two pieces, × the row's height, that counts (an OCR detector also cuts a line
    at a wide word space; the text layer's pieces are already a column gap apart)."""
    for r in rows:
        pieces = sorted((ln for ln in r.items if not lone_mark(ln.text)), key=lambda ln: ln.box[0])
        height = r.box[3] - r.box[1]
        if len(pieces) >= 2 and (
            gap <= 0 or any(b.box[0] - a.box[2] >= gap * height for a, b in itertools.pairwise(pieces))
        ):
            return True
    return False
