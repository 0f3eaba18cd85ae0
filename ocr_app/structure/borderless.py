"""Tables without ruling lines, rebuilt from where the words stand (issue 25).

Why by hand: the libraries' text strategies (PyMuPDF ``find_tables(strategy="text")``, pdfplumber's
``text`` settings) take whole pages of prose for a grid — measured in docs/ACCURACY.md — and camelot's
stream mode and img2table need OpenCV/Ghostscript stacks for the same word-alignment idea. This pass
works on the positioned lines every engine gives (text layer and OCR alike):

1. **Rows**: lines sharing a baseline band. A *multi* row has ≥ 2 pieces a clear gap apart; a run
   is consecutive rows in the page's rhythm (no blank line), multi rows with at most two single-piece
   rows between them whose text fits inside one column (a wrapped cell).
2. **Columns**: merged x-ranges of the multi rows' pieces (left-, right- and centre-aligned columns
   alike); a run whose pieces do not line up, whose "columns" are full lines of prose, or whose grid
   is mostly empty is no table.
3. **Cells**: each piece goes to the column its centre falls in; a row whose first column is empty
   while the table's first column is a key column continues the row above (a wrapped cell); a short
   bold line right above the run that starts right of the first column is a spanning group header
   ("Year Ended") whose cell reaches to the table's right edge.
4. **Header**: leading rows set heavier than the body, else a first row of words over columns of
   numbers.

Duck-typed over lines with ``text``, ``box``, ``bold``, ``weight``, ``in_figure`` (``layout.TextLine``),
so it imports nothing from ``layout``.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ocr_app.schema import Box, union_box
from ocr_app.structure.table_html import Cell, header_rows

logger = logging.getLogger(__name__)

_MARKER = re.compile(r"^(?:[-•●○◦▪▫■□–—*·‣⁃]|(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)])$")
_SECTION = re.compile(r"^\d{1,2}(?:[.\-]\d{1,2}){0,4}\.?\s+\S")
MAX_PAIR_WORDS = 8  # a longer line beside a short one is prose beside a side box, not a key and value
_NUMERIC = re.compile(r"^[\s$€£¥(+\-−–]*[\d.,]+%?[)\s%]*$|^(?:n/?a|-|—|–)$", re.I)


class Piece(Protocol):
    text: str
    box: Box
    bold: bool
    weight: int
    in_figure: bool


@dataclass
class Grid:
    """A table found on the page: its cells, header rows and the pieces it was built from."""

    rows: list[list[Cell]]
    header_rows: int
    pieces: list = field(default_factory=list)
    box: Box = (0.0, 0.0, 0.0, 0.0)


def _heavy(p: Piece) -> bool:
    return bool(p.bold or p.weight >= 600)


def _height(row: Sequence[Piece]) -> float:
    box = union_box([p.box for p in row])
    return box[3] - box[1]


def is_multi(row: Sequence[Piece], body: float, page_width: float) -> bool:
    """≥ 2 pieces a clear gap apart, not figure labels, not a list item's marker and its text."""
    pieces = sorted(row, key=lambda p: p.box[0])
    if len(pieces) < 2 or any(p.in_figure for p in pieces) or _MARKER.match(pieces[0].text.strip()):
        return False
    if any(getattr(p, "role", "") == "prose" for p in pieces):
        return False  # on scans, the layout model saw a paragraph's line (structure.scan_regions)
    gaps = [b.box[0] - a.box[2] for a, b in itertools.pairwise(pieces)]
    if min(gaps) < 0.5 * body:
        return False
    if len(pieces) >= 3:
        return True
    # Two pieces: a key and its value (together well under the page's width, or one a number), not
    # two columns of prose (each nearly half the page).
    if any(_NUMERIC.match(p.text.strip()) for p in pieces):
        return True
    widths = [p.box[2] - p.box[0] for p in pieces]
    return sum(widths) <= 0.6 * page_width and all(len(p.text.split()) <= MAX_PAIR_WORDS for p in pieces)


def _intervals(rows: Sequence[Sequence[Piece]]) -> list[list[float]]:
    cols: list[list[float]] = []
    for x0, x1 in sorted((p.box[0], p.box[2]) for r in rows for p in r):
        if cols and x0 <= cols[-1][1]:
            cols[-1][1] = max(cols[-1][1], x1)
        else:
            cols.append([x0, x1])
    return cols


def _fits_one_column(row: Sequence[Piece], cols: list[list[float]], body: float, right: float) -> bool:
    """Whether the row lies in one column's slot: from the column's left edge to the next column's,
    the last column's to ``right`` where there are three or more (a wrapped line may be wider than
    the column's other lines — a last cell centred on its row's middle line comes first and
    widest — never wider than its slot)."""
    x0, _, x1, _ = union_box([p.box for p in row])
    if len(cols) < 3:  # two "columns" may be two columns of prose: no room beyond the last one
        right = cols[-1][1] + 0.5 * body
    ends = [c[0] for c in cols[1:]] + [right]
    return any(x0 >= c[0] - 0.5 * body and x1 <= end for c, end in zip(cols, ends, strict=True))


def _close(a: Sequence[Piece], b: Sequence[Piece]) -> bool:
    gap = union_box([p.box for p in b])[1] - union_box([p.box for p in a])[3]
    return gap <= 1.2 * max(_height(a), _height(b))


def find_runs(rows: Sequence[Sequence[Piece]], body: float, page_width: float) -> list[tuple[int, int]]:
    """``(first, last)`` row indexes of candidate runs: multi rows, with wrapped single-piece rows
    between them, in one rhythm. Rows are top to bottom."""
    runs: list[tuple[int, int]] = []
    i, n = 0, len(rows)
    while i < n:
        if not is_multi(rows[i], body, page_width):
            i += 1
            continue
        j, singles = i, 0
        multis = [rows[i]]
        while j + 1 < n and _close(rows[j], rows[j + 1]):
            nxt = rows[j + 1]
            if is_multi(nxt, body, page_width):
                multis.append(nxt)
                singles = 0
            elif singles < 2 and _wrapped_line(nxt, rows[j], _intervals(multis), body, page_width):
                singles += 1
            else:
                break
            j += 1
        while j > i and not is_multi(rows[j], body, page_width):
            j -= 1
        j = _trailing_wraps(rows, i, j, body, page_width)
        runs.append((i, j))
        i = j + 1
    return runs


def _wrapped_line(
    row: Sequence[Piece], prev: Sequence[Piece], cols: list[list[float]], body: float, right: float
) -> bool:
    """A single piece inside one column that can be a cell's wrapped line: not a figure label, not
    a bold line under plain ones (a heading between two tables), not a numbered section title."""
    piece = row[0]
    if len(row) != 1 or piece.in_figure or not _fits_one_column(row, cols, body, right):
        return False
    if _heavy(piece) and not all(_heavy(p) for p in prev):
        return False
    return not _SECTION.match(piece.text.strip())


def _trailing_wraps(rows: Sequence[Sequence[Piece]], first: int, last: int, body: float, right: float) -> int:
    """The last row of a run, with up to two wrapped lines of the last row's later cells after it
    (single pieces right of the first column, inside one column, in the rhythm)."""
    cols = _intervals([r for r in rows[first : last + 1] if len(r) >= 2])
    k = last
    while k + 1 < len(rows) and k - last < 2 and len(rows[k + 1]) == 1 and _close(rows[k], rows[k + 1]):
        nxt = rows[k + 1]
        if nxt[0].in_figure or nxt[0].box[0] <= cols[0][1] or not _fits_one_column(nxt, cols, body, right):
            break
        k += 1
    return k


def _text_columns(rows: Sequence[Sequence[Piece]], cols: list[list[float]]) -> bool:
    """Columns of prose (≥ 4 words a line on average, most lines filling the column) are text."""
    for x0, x1 in cols:
        cells = [p for r in rows for p in r if x0 <= (p.box[0] + p.box[2]) / 2 <= x1]
        if not cells:
            return False
        words = sum(len(c.text.split()) for c in cells) / len(cells)
        full = sum(1 for c in cells if c.box[2] - c.box[0] >= 0.8 * (x1 - x0)) / len(cells)
        if words < 4 or full < 0.6:
            return False
    return True


def _column_of(piece: Piece, cols: list[list[float]]) -> int:
    cx = (piece.box[0] + piece.box[2]) / 2
    return min(
        range(len(cols)),
        key=lambda c: 0 if cols[c][0] <= cx <= cols[c][1] else 1 + abs((cols[c][0] + cols[c][1]) / 2 - cx),
    )


def _place(rows: Sequence[Sequence[Piece]], cols: list[list[float]]) -> list[list[list[Piece]]]:
    grid: list[list[list[Piece]]] = []
    for r in rows:
        cells: list[list[Piece]] = [[] for _ in cols]
        for p in sorted(r, key=lambda q: (q.box[1], q.box[0])):
            cells[_column_of(p, cols)].append(p)
        grid.append(cells)
    return grid


def _row_bands(run: Sequence[Sequence[Piece]]) -> list[list[Piece]]:
    """Lines of the run grouped into table rows by the row rhythm: where the gaps between lines
    come in two sizes (line spacing inside a cell, padding between rows), the small ones join lines
    into one row — wrapped cells, and cells centred on a taller row's middle line."""
    boxes = [union_box([p.box for p in r]) for r in run]
    gaps = [b[1] - a[3] for a, b in itertools.pairwise(boxes)]
    line = min(b[3] - b[1] for b in boxes)
    if len(gaps) < 2 or max(gaps) - min(gaps) < 0.2 * line:
        return [list(r) for r in run]
    cut = (max(gaps) + min(gaps)) / 2
    if sum(1 for g in gaps if g > cut) < 1:
        return [list(r) for r in run]
    bands: list[list[Piece]] = [list(run[0])]
    for r, g in zip(run[1:], gaps, strict=True):
        if g > cut:
            bands.append(list(r))
        else:
            bands[-1].extend(r)
    return bands


def _merge_wrapped(grid: list[list[list[Piece]]]) -> list[list[list[Piece]]]:
    """Rows that continue the row above: the first column empty where the table has a key column,
    or a bold row right under a bold first row with nothing new in its columns (a wrapped header)."""
    full = [r for r in grid if sum(1 for c in r if c) >= 2]
    keyed = bool(full) and sum(1 for r in full if r[0]) >= 0.8 * len(full)
    out: list[list[list[Piece]]] = []
    for k, row in enumerate(grid):
        if out and keyed and not row[0]:
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        if k == 1 and out and _wrapped_header(out[0], row):
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        out.append([list(c) for c in row])
    return out


def _wrapped_header(first: list[list[Piece]], row: list[list[Piece]]) -> bool:
    pieces = [p for c in row for p in c]
    above = [p for c in first for p in c]
    if not pieces or not above or not all(_heavy(p) for p in pieces + above):
        return False
    if any(row[c] and not first[c] for c in range(len(row))):
        return False
    gap = min(p.box[1] for p in pieces) - max(p.box[3] for p in above)
    return gap <= 0.25 * min(p.box[3] - p.box[1] for p in pieces)


def _text(pieces: list[Piece]) -> str:
    return " ".join(" ".join(p.text.split()) for p in pieces).strip()


def _numeric_body_header(texts: list[list[str]]) -> int:
    """1 when the first row is words over columns that are numbers in the rows below, else 0."""
    if len(texts) < 3 or not all(texts[0]) or any(_NUMERIC.match(t) for t in texts[0] if t):
        return 0
    numeric_cols = [
        c
        for c in range(len(texts[0]))
        if sum(1 for r in texts[1:] if r[c] and _NUMERIC.match(r[c])) >= 0.6 * (len(texts) - 1)
    ]
    return 1 if numeric_cols else 0


def _group_header(above: Sequence[Piece] | None, cols: list[list[float]], body: float) -> list[Cell] | None:
    """A short heavy line right above the table, right of its first column: a header over the
    columns from the one it starts in to the table's right edge."""
    if not above or not all(_heavy(p) for p in above) or len(" ".join(p.text for p in above).split()) > 6:
        return None
    box = union_box([p.box for p in above])
    if box[0] <= cols[0][1] or box[2] > cols[-1][1] + body:
        return None
    start = _column_of(min(above, key=lambda p: p.box[0]), cols)
    if start == 0:
        return None
    return [Cell("")] * start + [
        Cell(_text(sorted(above, key=lambda p: p.box[0])), colspan=len(cols) - start)
    ]


@dataclass
class _Part:
    """A word or words cut out of a piece whose cells were set one space apart; its box is
    estimated from the piece's box in proportion to the characters before it."""

    text: str
    box: Box
    bold: bool
    weight: int
    in_figure: bool = False


def _split_numbers(row: Sequence[Piece], most: int) -> list:
    """The row with trailing runs of numbers cut out of its pieces ("Net income 400.3 480.1" →
    "Net income", "400.3", "480.1"): cells set one space apart come as one piece. A single trailing
    number is cut only when the row has fewer pieces than the run's fullest row."""
    out: list = []
    for p in row:
        tokens = list(re.finditer(r"\S+", p.text))
        k = len(tokens)
        while k > 0 and _NUMERIC.match(tokens[k - 1].group()):
            k -= 1
        numbers = len(tokens) - k
        if numbers == 0 or len(tokens) < 2 or (numbers == 1 and len(row) >= most):
            out.append(p)
            continue
        if k:
            out.append(_part(p, p.text[: tokens[k - 1].end()], 0, tokens[k - 1].end()))
        out.extend(_part(p, t.group(), t.start(), t.end()) for t in tokens[k:])
    return out


def _part(p: Piece, text: str, a: int, b: int) -> _Part:
    """Characters ``a:b`` of the piece, with a box in proportion to the characters before them."""
    x0, width, n = p.box[0], p.box[2] - p.box[0], max(len(p.text), 1)
    box = (x0 + width * a / n, p.box[1], x0 + width * b / n, p.box[3])
    return _Part(text, box, p.bold, p.weight, p.in_figure)


def build_grid(
    run: Sequence[Sequence[Piece]], body: float, above: Sequence[Piece] | None = None
) -> Grid | None:
    """One run of rows → a table, or None when the rows do not make one."""
    originals = [p for r in run for p in r]
    most = max(len(r) for r in run)
    run = [_split_numbers(r, most) for r in run]
    multis = [r for r in run if len(r) >= 2]
    # Columns from the body rows where there are enough: a header cell wider than its column (or
    # two header cells set so close that they read as one piece) must not merge two columns.
    plain = [r for r in multis if not all(_heavy(p) for p in r)]
    cols = _intervals(plain if len(plain) >= 2 else multis)
    if len(cols) < 2 or len(multis) < 2:
        return None
    if len(cols) > max(len(r) for r in run) + 1 or _text_columns(multis, cols):
        return None
    filled = sum(len({_column_of(p, cols) for p in r}) for r in multis)
    if filled < 0.45 * len(cols) * len(multis):
        return None
    grid = _merge_wrapped(_place(_row_bands(run), cols))
    if len(grid) < 2:
        return None
    texts = [[_text(c) for c in r] for r in grid]
    heavy = [all(_heavy(p) for c in r for p in c) if any(r) else None for r in grid]
    head = header_rows(heavy, []) or _numeric_body_header(texts)
    rows = [[Cell(t) for t in r] for r in texts]
    pieces = originals
    group = _group_header(above, cols, body) if head or any(heavy[:1]) else None
    if group is not None:
        rows.insert(0, group)
        head = max(head, 1) + 1
        pieces += list(above or ())
    return Grid(rows=rows, header_rows=head, pieces=pieces, box=union_box([p.box for p in pieces]))


def find_grids(rows: Sequence[Sequence[Piece]], body: float, page_width: float) -> list[Grid]:
    """All borderless tables among the page's rows (top to bottom)."""
    grids: list[Grid] = []
    taken = -1
    for first, last in find_runs(rows, body, page_width):
        above = rows[first - 1] if first - 1 > taken and first > 0 else None
        if above is not None and not (len(above) == 1 and _close(above, rows[first])):
            above = None
        grid = build_grid(rows[first : last + 1], body, above)
        if grid is not None:
            grids.append(grid)
            taken = last
    logger.debug("borderless: %d runs → %d tables", len(grids), len(grids))
    return grids
