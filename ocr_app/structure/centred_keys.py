"""Key cells set in the middle of the rows they span, read as one cell over those rows.

Why: LaTeX's ``\\multirow`` and a word processor's merged cell centre a key ("Roads") down the rows
it names ("Ring road bearings", "Bridge decks"). In a table without rules the rows are found from its
lines: a key centred over two rows stands between them, overlapping both, and joined them into one
row; centred over three it stands on the middle one, with no key on the rows above and below it,
which read as the wrapped lines of the row above. Both are read here as one key cell over its rows.
Only a table with a key between two rows is taken for one whose keys are centred: a key set at the
top of its rows (empty keys under it) gives the same rows when the group is three rows long.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ocr_app.schema import union_box
from ocr_app.structure.word_columns import Piece

CENTRE = 0.35  # × a line's height: a key stands this close to the middle of the rows it spans


def _mid(pieces: Sequence[Piece]) -> float:
    box = union_box([p.box for p in pieces])
    return (box[1] + box[3]) / 2


def straddling(
    run: Sequence[Sequence[Piece]], column_of: Callable[[Piece], int]
) -> tuple[list[Sequence[Piece]], list[Sequence[Piece]]]:
    """The run without its key lines that stand between two lines (each overlapping the line above
    and the line below it, neither of which has a key), and those key lines."""
    keep: list[Sequence[Piece]] = []
    keys: list[Sequence[Piece]] = []
    for k, row in enumerate(run):
        if 0 < k < len(run) - 1 and row and all(column_of(p) == 0 for p in row):
            up, down = run[k - 1], run[k + 1]
            box, a, b = (union_box([p.box for p in r]) for r in (row, up, down))
            if (
                all(column_of(p) > 0 for p in (*up, *down))
                and box[1] < a[3]
                and box[3] > b[1]
                and box[1] > a[1]
                and box[3] < b[3]
            ):
                keys.append(row)
                continue
        keep.append(row)
    return keep, keys


def spread_keys(
    grid: list[list[list[Piece]]], keys: Sequence[Sequence[Piece]], heavy: Callable[[Piece], bool]
) -> list[list[list[Piece]]]:
    """``grid`` (rows of cells of pieces) with each straddling key put in the first cell of every row
    it spans, and, in such a table, each key on a row with keyless rows above and below spread over
    them alike (the same pieces in each row: ``key_spans`` reads them as one cell). A key that spans
    no keyless rows goes to the row nearest its middle, as a line of it."""
    if not keys:
        return grid
    claimed: set[int] = set()
    mids = [_row_mid(r) for r in grid]

    def free(i: int) -> bool:
        if not 0 <= i < len(grid) or i in claimed or grid[i][0]:
            return False
        body = [p for c in grid[i][1:] for p in c]
        return bool(body) and not all(map(heavy, body))

    def grow(lo: int, hi: int, middle: float, height: float) -> tuple[int, int]:
        while lo - 1 >= 0 and hi + 1 < len(grid) and free(lo - 1) and free(hi + 1):
            lo, hi = lo - 1, hi + 1
        while lo < hi and abs((mids[lo] + mids[hi]) / 2 - middle) > CENTRE * height:
            lo, hi = lo + 1, hi - 1
        return lo, hi

    for key in keys:
        middle = _mid(key)
        height = min(p.box[3] - p.box[1] for p in key)
        i = next((i for i in range(len(grid) - 1) if mids[i] < middle < mids[i + 1]), None)
        if i is not None and free(i) and free(i + 1):
            lo, hi = grow(i, i + 1, middle, height)
            if hi > lo:
                for r in range(lo, hi + 1):
                    grid[r][0] = list(key)
                claimed.update(range(lo, hi + 1))
                continue
        nearest = min(range(len(grid)), key=lambda r: abs(mids[r] - middle))
        grid[nearest][0].extend(key)
    if not claimed:
        return grid
    for i, row in enumerate(grid):  # keys on the middle row of an odd number of rows
        if row[0] and i not in claimed and 0 < i < len(grid) - 1 and free(i - 1) and free(i + 1):
            height = min(p.box[3] - p.box[1] for p in row[0])
            lo, hi = grow(i, i, _mid(row[0]), height)
            for r in range(lo, hi + 1):
                grid[r][0] = row[0]
            claimed.update(range(lo, hi + 1))
    return grid


def _row_mid(row: Sequence[Sequence[Piece]]) -> float:
    pieces = [p for c in row[1:] for p in c] or [p for c in row for p in c]
    return _mid(pieces) if pieces else 0.0


def key_spans(grid: Sequence[Sequence[Sequence[Piece]]]) -> list[int]:
    """For each row, how many rows its first cell spans: 0 for a row whose first cell is the same
    pieces as the row above's (covered by it)."""
    spans = [1] * len(grid)
    top = 0
    for k in range(1, len(grid)):
        same = bool(grid[k][0]) and [id(p) for p in grid[k][0]] == [id(p) for p in grid[k - 1][0]]
        if same:
            spans[top] += 1
            spans[k] = 0
        else:
            top = k
    return spans
