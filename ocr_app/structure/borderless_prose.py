"""Runs that are prose, not tables: columns of running text, two columns of a page read as one
grid, justified paragraphs side by side.

Why: word positions alone cannot tell a table from two columns of text, and a false table breaks the
reading order around it. A run whose "columns" hold running text (full lines, long runs of words),
start where the page's prose starts, or are the page's own text columns beside a table is text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from ocr_app.structure.borderless_rows import Grid
from ocr_app.structure.borderless_runs import LETTERS, MAX_PAIR_WORDS
from ocr_app.structure.running_text import running_text
from ocr_app.structure.word_columns import NUMERIC, Piece


def prose_columns(rows: Sequence[Sequence[Piece]], cols: list[list[float]]) -> bool:
    """Columns of prose are text: ≥ 4 words a line on average with most lines filling the column,
    or sentences that run on from line to line (``running_text``: a narrow sidebar's short ragged
    lines)."""
    for x0, x1 in cols:
        cells = [p for r in rows for p in r if x0 <= (p.box[0] + p.box[2]) / 2 <= x1]
        if not cells:
            return False
        words = sum(len(c.text.split()) for c in cells) / len(cells)
        full = sum(1 for c in cells if c.box[2] - c.box[0] >= 0.8 * (x1 - x0)) / len(cells)
        if (words < 4 or full < 0.6) and not running_text(cells):
            return False
    return True


def prose_pairs(texts: list[list[str]]) -> bool:
    """Two "columns" whose first holds mostly long runs of words (no keys, no labels) beside text
    that is not numbers: two columns of prose whose lines interleave, not a key/value table."""
    firsts = [r[0] for r in texts if r[0]]
    long = sum(1 for t in firsts if len(t.split()) > MAX_PAIR_WORDS)
    numbers = sum(1 for r in texts if r[1] and NUMERIC.match(r[1]))
    return bool(firsts) and long >= 0.5 * len(firsts) and numbers < 0.5 * len(texts)


def _one_line(row: Sequence[Sequence[Piece]]) -> bool:
    """Whether a row reads as one line of text: fewer than two of its cells hold lines one under
    another (wrapped cells side by side are a table's; a paragraph's last line under its first cell
    is not). Lines are one under the other where their boxes overlap by less than half a line (line
    boxes of tightly leaded text overlap a little from one line to the next)."""
    return sum(1 for c in row if _stacked_lines(c)) < 2


def _stacked_lines(pieces: Sequence[Piece]) -> bool:
    if len(pieces) < 2:
        return False
    height = min(p.box[3] - p.box[1] for p in pieces)
    return max(p.box[1] for p in pieces) >= min(p.box[3] for p in pieces) - 0.5 * height


def justified_lines(grid: list[list[list[Piece]]], texts: list[list[str]], body: float) -> bool:
    """Rows of words that all end at the same x and start at the same x (the first may be indented):
    lines of a justified paragraph (a footnote set with wide spaces), whose word gaps line up by
    chance. A table's last column of words is ragged on its right; one of figures is told apart by
    its figures, and a row whose cells hold lines one under another (wrapped cells) is no line of text."""
    if any(not r[0] or not r[-1] or not _one_line(r) for r in grid):
        return False
    if any(NUMERIC.match(t) for r in texts for t in r if t):
        return False
    starts = [min(p.box[0] for p in r[0]) for r in grid]
    ends = [max(p.box[2] for p in r[-1]) for r in grid]
    lasts = {r[-1] for r in texts}
    tol = 0.25 * body
    rest = starts[1:]
    flush = max(rest) - min(rest) <= tol and -tol <= starts[0] - min(rest) <= 2 * body
    return len(lasts) == len(grid) and flush and max(ends) - min(ends) <= tol


PROSE_WORDS = 4  # a line of at least this many words, 0.3 of the page wide, is prose


def text_columns_of_page(
    grid: Grid, others: Sequence[Sequence[Piece]], body: float, page_width: float
) -> bool:
    """A two-column grid whose columns both start where lines of prose start elsewhere on the page
    (≥ 3 each): side-by-side ends of two text columns (a paragraph's last line beside a section
    title), not a table."""
    if len(grid.columns) != 2:
        return False
    prose = [
        p
        for r in others
        for p in r
        if len(p.text.split()) >= PROSE_WORDS and p.box[2] - p.box[0] >= 0.3 * page_width
    ]
    return all(sum(1 for p in prose if abs(p.box[0] - c[0]) <= body) >= 3 for c in grid.columns)


def _prose(p: Piece) -> bool:
    return len(p.text.split()) >= PROSE_WORDS


def _page_gutter(
    others: Sequence[Sequence[Piece]], body: float, page_width: float
) -> tuple[float, float] | None:
    """The x-range between two text columns, from ≥ 3 rows outside the run where a line of prose
    (≥ 0.3 of the page wide) stands beside another a column gap apart (None: no such columns)."""
    pairs = []
    for r in others:
        prose = sorted(
            (p for p in r if _prose(p) and p.box[2] - p.box[0] >= 0.3 * page_width), key=lambda p: p.box[0]
        )
        pairs += [(a.box[2], b.box[0]) for a, b in itertools.pairwise(prose) if b.box[0] - a.box[2] >= body]
    if len(pairs) < 3:
        return None
    g0, g1 = max(a for a, _ in pairs), min(b for _, b in pairs)
    return (g0, g1) if g1 > g0 else None


TEXT_COLUMN_LINES = 3  # a text column beside a table: at least this many of its lines in the grid


def _running(p: Piece) -> bool:
    """A line of running text: ``PROSE_WORDS`` words of letters or more (a label's dot leaders are no
    words)."""
    return sum(1 for w in p.text.split() if LETTERS.search(w)) >= PROSE_WORDS


def _text_column_edge(grid: Grid, page_width: float) -> tuple[float, float] | None:
    """The gap before the grid's last column or after its first when that column is a column of
    running text (on a page whose columns are too short for ``_page_gutter`` to see): lines of prose
    (``_running``), most as wide as the column, at least a third of the page wide, together. A table's
    column of notes is narrower, or its cells' lines wrap short."""
    if len(grid.columns) < 3:
        return None
    for k, other in ((len(grid.columns) - 1, len(grid.columns) - 2), (0, 1)):
        x0, x1 = grid.columns[k]
        lines = [p for p in grid.pieces if x0 <= (p.box[0] + p.box[2]) / 2 <= x1]
        if len(lines) < TEXT_COLUMN_LINES or x1 - x0 < 0.3 * page_width:
            continue
        full = [p for p in lines if _running(p) and p.box[2] - p.box[0] >= 0.8 * (x1 - x0)]
        if len(full) >= 0.6 * len(lines):
            a, b = sorted((grid.columns[k], grid.columns[other]))
            return a[1], b[0]
    return None


def prose_beside(grid: Grid, others: Sequence[Sequence[Piece]], body: float, page_width: float) -> bool:
    """Whether the grid is a table in one text column read together with the prose of the other: the
    page's gutter (found outside the grid's rows) parts its pieces, none reaching across, and on one
    side most pieces are lines of prose. The table is then searched inside its column
    (``passes.tables.tables_beside_a_gutter``); the prose stays text (issue 30, round 10)."""
    gutter = _page_gutter(others, body, page_width) or _text_column_edge(grid, page_width)
    if gutter is None:
        return False
    mid = (gutter[0] + gutter[1]) / 2
    left = [p for p in grid.pieces if p.box[2] <= mid]
    right = [p for p in grid.pieces if p.box[0] >= mid]
    if not left or not right or len(left) + len(right) < len(grid.pieces):
        return False
    return any(sum(map(_prose, side)) >= 0.5 * len(side) for side in (left, right))
