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


def wrapped(text_rows: Sequence[Row], left: float, right: float) -> bool:
    """Whether a cell's text rows are one text broken at the cell's width, or a list of items, not
    values stacked one a row: each row starts a list item, or follows a hyphen, or its first word
    would not have fit at the end of the row above (the cell's padding taken as the least indent of
    its rows); and one row at least goes on in lower case or starts an item. Why: a ruled row whose
    cells wrap is no stack of unruled rows; but in a narrow column short labels ("3-year-olds",
    "4-year-olds", "Total") would not fit side by side either, and they start no sentence's middle."""
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
    return prose


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
