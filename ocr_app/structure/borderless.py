"""Tables without ruling lines, rebuilt from where the words stand (issue 25).

Why by hand: the libraries' text strategies (PyMuPDF ``find_tables(strategy="text")``, pdfplumber's
``text`` settings) take whole pages of prose for a grid — measured in docs/ACCURACY.md — and camelot's
stream mode and img2table need OpenCV/Ghostscript stacks for the same word-alignment idea. This pass
works on the positioned lines every engine gives (text layer and OCR alike):

1. **Rows**: lines sharing a baseline band. A *multi* row has ≥ 2 pieces a clear gap apart; a run
   is consecutive rows in the page's rhythm (no blank line): multi rows, rows the run's columns cut
   into cells that line up with theirs (``_on_grid``: cells set one space apart), and single lines
   between them that fit one column (wrapped cells; more of them where they interleave in two or
   more columns: cells centred on rows without padding), also above the first and below the last.
2. **Columns**: the white strips between the run's words (``word_columns``); a run whose pieces do
   not line up, whose "columns" are prose (full lines, long runs of words, or two columns that start
   where the page's prose does), or whose grid is mostly empty is no table.
3. **Cells**: each piece goes to the column its centre falls in; lines that overlap in height, or
   that the row rhythm (two sizes of gaps) joins, make one row; a row whose first column is empty
   while the table's first column is a key column continues the row above, as does a lone key line
   right under a full row; a short bold line right above the run that starts right of the first
   column is a spanning group header ("Year Ended") whose cell reaches to the table's right edge.
4. **Header**: leading rows set heavier than the body, else a first row of words over columns of
   numbers.

Duck-typed over lines with ``text``, ``box``, ``bold``, ``weight``, ``in_figure``, ``words`` (``layout.TextLine``),
so it imports nothing from ``layout``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_app.schema import Box, union_box
from ocr_app.structure.centred_keys import key_spans, spread_keys, straddling
from ocr_app.structure.paragraphs import join_lines
from ocr_app.structure.running_text import running_text
from ocr_app.structure.table_html import MAX_HEADER_ROWS, Cell, header_rows
from ocr_app.structure.word_columns import (
    FLUSH,
    NUMERIC,
    Part,
    Piece,
    centred_span,
    column_bounds,
    columns_between,
    cut,
    grid_columns,
    is_figure,
    opens,
    separators,
    split_numbers,
    words_of,
)

logger = logging.getLogger(__name__)

# A list item's marker; "[12]" starts an entry of a numbered reference list.
_MARKER = re.compile(r"^(?:[-•●○◦▪▫■□–—*·‣⁃]|(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)]|\[\d{1,3}\])$")
_SECTION = re.compile(r"^\d{1,2}(?:[.\-]\d{1,2}){0,4}\.?\s+\S")
_LETTERS = re.compile(r"[^\W\d_]")  # a word, not a leader's dots or a figure
# a measured value ("25.16%", "12,410", "-0.3"), which a row of column heads does not hold (a year does)
_MEASURE = re.compile(r"\d[.,]\d|\d\s*%")
HEAD_WORDS = 4  # a column head is a few words
HEAD_GAP = 2.0  # × the row height: heads may stand this far above the first row (more than rows do)
MAX_PAIR_WORDS = 8  # a longer line beside a short one is prose beside a side box, not a key and value


@dataclass
class Grid:
    """A table found on the page: its cells, header rows and the pieces it was built from."""

    rows: list[list[Cell]]
    header_rows: int
    pieces: list = field(default_factory=list)
    box: Box = (0.0, 0.0, 0.0, 0.0)
    columns: list[list[float]] = field(default_factory=list)  # x-ranges of the columns


def _heavy(p: Piece) -> bool:
    return bool(p.bold or p.weight >= 600)


def _height(row: Sequence[Piece]) -> float:
    box = union_box([p.box for p in row])
    return box[3] - box[1]


def _stacks(row: Sequence[Piece]) -> list[list[Piece]]:
    """The row's pieces left to right, those that overlap in x stacked together (the lines of one
    cell centred beside a taller cell share the row)."""
    stacks: list[list[Piece]] = []
    for p in sorted(row, key=lambda q: q.box[0]):
        if stacks and p.box[0] < max(q.box[2] for q in stacks[-1]):
            stacks[-1].append(p)
        else:
            stacks.append([p])
    return stacks


def is_multi(row: Sequence[Piece], body: float, page_width: float) -> bool:
    """≥ 2 pieces a clear gap apart, not figure labels, not a list item's marker and its text (a
    mark of no letter or digit in the margin before the marker, the Rust Reference's "[*]" rule
    anchor beside each item, included)."""
    stacks = _stacks(row)
    if len(stacks) < 2 or any(p.in_figure for p in row) or _MARKER.match(lead := stacks[0][0].text.strip()):
        return False
    if not any(c.isalnum() for c in lead) and _MARKER.match((stacks[1][0].text.split() or [""])[0]):
        return False
    if any(getattr(p, "role", "") == "prose" for p in row):
        return False  # on scans, the layout model saw a paragraph's line (structure.scan_regions)
    boxes = [union_box([p.box for p in st]) for st in stacks]
    gaps = [b[0] - a[2] for a, b in itertools.pairwise(boxes)]
    if min(gaps) < 0.5 * body:
        return False
    if len(stacks) >= 3:
        return True
    # Two pieces: a key and its value (together well under the page's width, or one a number), not
    # two columns of prose (each nearly half the page).
    if any(len(st) == 1 and NUMERIC.match(st[0].text.strip()) for st in stacks):
        return True
    widths = [b[2] - b[0] for b in boxes]
    words = [sum(len(p.text.split()) for p in st) for st in stacks]
    return sum(widths) <= 0.6 * page_width and all(w <= MAX_PAIR_WORDS for w in words)


def _slot(row: Sequence[Piece], cols: list[list[float]], body: float, right: float) -> int | None:
    """The column whose slot the row lies in — from the column's left edge to the next column's,
    the last column's to ``right`` where there are three or more or the row starts at its edge (a
    wrapped line may be wider than
    the column's other lines — a last cell centred on its row's middle line comes first and
    widest — never wider than its slot) — or None."""
    x0, _, x1, _ = union_box([p.box for p in row])
    if len(cols) < 3 and abs(x0 - cols[-1][0]) > 0.25 * body:
        # Two "columns" may be two columns of prose: no room beyond the last one, unless the line
        # starts right where the last column does (a value wrapped in a key/value table).
        right = cols[-1][1] + 0.5 * body
    ends = [c[0] for c in cols[1:]] + [right]
    # A column's slot starts in the gap before it, clear of the column to its left: a wrapped line of
    # a column set flush right or centred may start left of the column's other lines.
    starts = [cols[0][0] - 0.5 * body] + [
        min(c[0] - 0.5 * body, a[1] + body) for a, c in itertools.pairwise(cols)
    ]
    for k, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if x0 >= start and x1 <= end:
            return k
    return None


def _fits_one_column(row: Sequence[Piece], cols: list[list[float]], body: float, right: float) -> bool:
    return _slot(row, cols, body, right) is not None


def _close(a: Sequence[Piece], b: Sequence[Piece], lines: float = 1.2) -> bool:
    gap = union_box([p.box for p in b])[1] - union_box([p.box for p in a])[3]
    return gap <= lines * max(_height(a), _height(b))


PADDED_ROWS = 1.6  # × a line: rows of cells a word processor pads apart (a blank line and a bit)


def _next_row(rows: Sequence[Sequence[Piece]], j: int, body: float, page_width: float) -> bool:
    """Whether ``rows[j + 1]`` may go on the run that has reached ``rows[j]``: close under it, or a
    row of cells a padded table's gap under it (a table set with generous cell padding puts more
    than a line's space between its rows; a paragraph that far under a table is no row of cells), or
    a group label between such rows. Two numbered section titles over each other ("3.2  Losses" over
    "3.2.1  Reported") are no padded cells, nor a row of more cells than the fullest row of the lines
    above it and one more (the boxes of a flow chart, two over five)."""
    if _close(rows[j], rows[j + 1]):
        return True
    if all(_titled(r) for r in rows[j : j + 2]) or not _close(rows[j], rows[j + 1], PADDED_ROWS):
        return False
    if is_multi(rows[j + 1], body, page_width):
        most = max(len(_stacks(r)) for r in rows[max(0, j - MAX_CELL_LINES) : j + 1])
        return most < 2 or len(_stacks(rows[j + 1])) <= most + 1
    # a group label ("Staff") between padded rows: one heavy piece with a row of cells as far under it
    label = rows[j + 1]
    return (
        len(label) == 1
        and _heavy(label[0])
        and j + 2 < len(rows)
        and is_multi(rows[j + 2], body, page_width)
        and _close(label, rows[j + 2], PADDED_ROWS)
    )


def _titled(row: Sequence[Piece]) -> bool:
    """A numbered section title: set heavy, its first piece a section number."""
    return all(_heavy(p) for p in row) and bool(_SECTION.match(" ".join(p.text.strip() for p in row)))


def find_runs(rows: Sequence[Sequence[Piece]], body: float, page_width: float) -> list[tuple[int, int]]:
    """``(first, last)`` row indexes of candidate runs: multi rows (and single pieces that the
    run's columns cut into cells), with wrapped single-piece rows between them, in one rhythm.
    Rows are top to bottom."""
    runs: list[tuple[int, int]] = []
    i, n = 0, len(rows)
    while i < n:
        if not is_multi(rows[i], body, page_width):
            i += 1
            continue
        j = last = i
        multis = [rows[i]]
        stretch: list[int] = []  # the columns of the single lines since the last multi row
        while j + 1 < n and _next_row(rows, j, body, page_width):
            nxt = rows[j + 1]
            if is_multi(nxt, body, page_width) or (
                not _heading_under(nxt, rows[j])
                and _in_rhythm(rows, i, j + 1)
                and _on_grid(nxt, _with_next(rows, j + 1, multis, body, page_width), body, page_width)
            ):
                multis.append(nxt)
                last, stretch = j + 1, []
            elif _section_label(rows, i, j + 1, multis, body, page_width):
                multis.append(rows[j + 2])
                last, stretch = j + 2, []
                j += 1
            else:
                col = _wrapped_line(nxt, rows[j], grid_columns(multis, body), body, page_width)
                if col is None or not _may_wrap([*stretch, col], len(grid_columns(multis, body))):
                    break
                stretch.append(col)
            j += 1
        last = _interleaved_tail(rows, last, stretch)
        j = _trailing_wraps(rows, i, last, body, page_width)
        # A run of one row makes no table; the run after it may take it (a row of heads over a label).
        floor = next((b for a, b in reversed(runs) if b > a), -1)
        first = _leading_lines(rows, i, multis, body, page_width, floor)
        while runs and runs[-1][0] == runs[-1][1] >= first:
            runs.pop()
        runs.append((first, j))
        i = j + 1
    return runs


def _with_next(
    rows: Sequence[Sequence[Piece]], k: int, multis: list[Sequence[Piece]], body: float, page_width: float
) -> list[Sequence[Piece]]:
    """The run's multi rows, with the row right under ``rows[k]`` when that one is a multi row too:
    a line between two rows of cells may be cut by their columns (``_on_grid``) though only one row
    of cells stands above it. Why: a key as long as its column sets its value one space after it
    ("contextNode: the current node"), between keys set a gap apart from theirs (libxslt's parameter
    lists, two rows of cells around each such line)."""
    below = rows[k + 1] if k + 1 < len(rows) else None
    if below is None or not _close(rows[k], below) or not is_multi(below, body, page_width):
        return multis
    return [*multis, below]


SECTION_WORDS = 6  # a section label inside a table is a few words
OUTDENT = 2.0  # × body: how far left of the items under it a section label may start


def _section_label(
    rows: Sequence[Sequence[Piece]], first: int, k: int, multis: list, body: float, right: float
) -> bool:
    """Whether the bold line ``rows[k]`` inside a run is a section label of the table ("Expenses"
    between the revenue items and the expense items), not a heading after it: a few words, no section
    number, standing in the first column (or outdented from it), in the run's rhythm, with a row of cells close under it that
    starts in the first column too. A heading after a table stands further off or has no rows of the
    table's kind under it."""
    if k + 1 >= len(rows) or len(rows[k]) != 1:
        return False
    label, under = rows[k][0], rows[k + 1]
    cols = grid_columns(multis, body)
    if (
        len(cols) < 2
        or label.in_figure
        or not _heavy(label)
        or len(label.text.split()) > SECTION_WORDS
        or _SECTION.match(label.text.strip())
        or not cols[0][0] - OUTDENT * body <= label.box[0] <= cols[0][1]
    ):
        return False
    return (
        _in_rhythm(rows, first, k)
        and _close(rows[k], under, PADDED_ROWS)
        and is_multi(under, body, right)
        and not all(_heavy(p) for p in under)  # a new table's heads under a title between two tables
        and cols[0][0] - OUTDENT * body <= min(p.box[0] for p in under) <= cols[0][1]
    )


def _in_rhythm(rows: Sequence[Sequence[Piece]], first: int, k: int) -> bool:
    """Whether row ``k`` follows the rows ``first .. k-1`` no further than their widest gap (plus a
    third of a line): a paragraph after a table, a line apart, does not."""
    boxes = [union_box([p.box for p in r]) for r in rows[first : k + 1]]
    gaps = [b[1] - a[3] for a, b in itertools.pairwise(boxes)]
    if len(gaps) < 2:
        return True
    return gaps[-1] <= max(gaps[:-1]) + 0.3 * (boxes[-1][3] - boxes[-1][1])


def _interleaved_tail(rows: Sequence[Sequence[Piece]], last: int, stretch: list[int]) -> int:
    """The run's last row, moved down over the single lines after its last row of cells when they
    are the lines of rows whose cells are all centred (lines of two or more columns); a line of the
    first column that does not interleave with the line above it (a note under the table) ends it."""
    if len(set(stretch)) < 2:
        return last
    k = last + len(stretch)
    while k > last and stretch[k - last - 1] == 0 and not _overlap(rows[k - 1], rows[k]):
        k -= 1
    return k


def _leading_lines(
    rows: Sequence[Sequence[Piece]], first: int, multis: list, body: float, right: float, floor: int
) -> int:
    """The first row of a run, moved up as ``find_runs`` moves down: over rows of cells that line up
    with its columns (which the multi-row test alone turned away) with wrapped lines between them,
    then over single lines that interleave with the row below them (each overlaps the next in
    height): the lines of a first row whose cells are centred on its middle line."""
    cols = grid_columns(multis, body)
    top = k = first
    stretch: list[int] = []
    while k - 1 > floor and not any(p.in_figure for p in rows[k - 1]) and _close(rows[k - 1], rows[k]):
        row = rows[k - 1]
        if _heading_under(row, rows[k]):
            if _label_under_heads(rows, k - 1, floor, multis, body, right):
                top, stretch = k - 2, []
                k -= 2
                continue
            break  # a heading above the table
        if len(row) >= 2 and _on_grid(row, multis, body, right):
            top, stretch = k - 1, []
        else:
            col = _slot(row, cols, body, right) if len(row) == 1 else None
            if col is None or not _may_wrap([*stretch, col], len(cols)):
                break
            stretch.append(col)
        k -= 1
    # Single lines right above that interleave — with the row below them, or with each other in two
    # or more columns (a first row whose cells are all centred on its middle line).
    block: list[int] = []
    k = top
    while k - 1 > floor and len(rows[k - 1]) == 1 and not rows[k - 1][0].in_figure:
        row = rows[k - 1]
        col = _slot(row, cols, body, right)
        if col is None or _heading_under(row, rows[k]) or not _close(row, rows[k]):
            break
        if not _overlap(row, rows[k]) and (k != top or block):
            break
        block.append(col)
        k -= 1
    if k < top and (_overlap(rows[top - 1], rows[top]) or len(set(block)) >= 2):
        return k
    return top


def _label_under_heads(
    rows: Sequence[Sequence[Piece]], k: int, floor: int, multis: list, body: float, right: float
) -> bool:
    """Whether the bold line ``rows[k]`` right above a run is its first section's label ("Non-current
    assets"), not a heading over the table: the row right above it is the run's column heads (two or
    more pieces on its grid, short words, no figures but years), close above it. A heading over a
    table has its heads below it. Heads often stand a little further apart (``HEAD_GAP``)."""
    if (
        k - 1 <= floor
        or len(rows[k]) != 1
        or rows[k][0].box[0] > min(p.box[0] for r in multis for p in r) + body
    ):
        return False
    heads = rows[k - 1]
    return (
        len(heads) >= 2
        and union_box([p.box for p in rows[k]])[1] - union_box([p.box for p in heads])[3]
        <= HEAD_GAP * max(_height(heads), _height(rows[k]))
        and not any(p.in_figure for p in heads)
        and all(len(p.text.split()) <= HEAD_WORDS and not _MEASURE.search(p.text) for p in heads)
        and _heads_over_columns(heads, grid_columns(multis, body))
    )


def _heads_over_columns(heads: Sequence[Piece], cols: list[list[float]]) -> bool:
    """Each head stands over one column of the run, each over another: a head sits over its column
    (centred, left or right) without lining up to the point with its cells."""
    bounds = column_bounds(cols)
    over = []
    for p in heads:
        hit = [k for k, (x0, x1) in enumerate(cols) if min(p.box[2], x1) - max(p.box[0], x0) > 0]
        if not hit:
            # A head centred in a wide column over figures set right ("Budget" over "395") reaches
            # none of them: it stands over the column whose territory holds its middle.
            mid = (p.box[0] + p.box[2]) / 2
            hit = [k for k in range(len(cols)) if bounds[k] <= mid < bounds[k + 1]]
        if len(hit) != 1:
            return False
        over.append(hit[0])
    return len(set(over)) == len(over)


OVERLAP = 0.25  # lines overlapping by this part of their height interleave (cells centred on a row)


def _overlap(above: Sequence[Piece], below: Sequence[Piece]) -> bool:
    a, b = union_box([p.box for p in above]), union_box([p.box for p in below])
    return b[1] < a[3] - OVERLAP * min(a[3] - a[1], b[3] - b[1])


MAX_CELL_LINES = 8  # a cell of a table without rules wraps onto at most this many lines


def _may_wrap(stretch: list[int], columns: int) -> bool:
    """Whether a stretch of single lines (their columns) between rows of cells can be wrapped cells:
    up to two lines, the lines of one cell right of the first column (a description set in a narrow
    column), or — cells centred on their row's middle line, rows without padding, so the
    rows' lines interleave — lines of at least two columns, never three in a row in one column."""
    if len(stretch) <= 2 or (len(set(stretch)) == 1 and stretch[0] > 0 and len(stretch) <= MAX_CELL_LINES):
        return True  # one cell's lines, in a column right of the keys
    same = any(a == b == c for a, b, c in zip(stretch, stretch[1:], stretch[2:], strict=False))
    return len(set(stretch)) >= 2 and not same and len(stretch) <= 6 * columns


def _on_grid(row: Sequence[Piece], multis: Sequence[Sequence[Piece]], body: float, page_width: float) -> bool:
    """Whether a row that is no multi row is cells of the run's columns, some set one space apart
    ("Quarter Request Western 1,640.8 1,042.5 6,688.5"): every column gap of the run that it
    reaches over falls between two of its words, at least one of them inside a piece, and every
    cell lines up (left, right or centre) with a cell of its column in the run, as cells of one
    table do."""
    most = max(len(r) for r in multis)
    split = split_numbers(row, most + 1)
    cells = [split_numbers(r, most) for r in multis]
    seps = separators(cells, body)
    words = sorted((w for p in split for w in words_of(p)), key=lambda w: w[1])
    if not seps or not words or any(p.in_figure for p in row):
        return False
    x0, x1 = words[0][1], words[-1][2]
    inside = [s for s in seps if x0 < s[0] and s[1] < x1]
    if not all(any(opens(a, b, s, body) for a, b in itertools.pairwise(words)) for s in inside):
        return False  # a word reaches over a column gap: a line of text, not cells
    parts = cut(split, inside, body)
    cols = columns_between(cells, seps)
    # The last column's slot reaches the page's edge where there are three or more, or where the
    # row's last cell starts at the column's edge (as in ``_slot``).
    aligned = abs(max(p.box[0] for p in parts) - cols[-1][0]) <= 0.25 * body
    right = cols[-1][1] + body if len(cols) < 3 and not aligned else float("inf")
    if len(parts) < 2 or not (cols[0][0] - body <= x0 and x1 <= right):
        return False
    if (
        len(parts) == len(row)
        and len(cols) < 3
        and not _label(min(parts, key=lambda p: p.box[0]), page_width)
    ):
        return False  # two pieces of prose side by side, each in its "column": no table
    if len(parts) > len(split) and len(multis) < 2 and len(cols) < 3:
        return False  # one row of two cells is too little to cut a line by
    known = [p for r in cells for p in r]
    tol = 0.25 * body

    def lined_up(part: Piece) -> bool:
        # Right edges count for numbers only: text that ends where others end may just reach the
        # text frame's right margin, as every line of prose does.
        # Centres count for cells no wider than the column's widest (a line of prose cut in two
        # may have its middle where a long cell has).
        c = _column_of(part, cols)
        mates = [q for q in known if _column_of(q, cols) == c]
        if not mates:
            return False
        number = bool(NUMERIC.match(part.text.strip()))
        narrow = part.box[2] - part.box[0] <= max(q.box[2] - q.box[0] for q in mates) + 2 * tol
        return any(
            min(
                abs(q.box[0] - part.box[0]),
                abs(q.box[2] - part.box[2]) if number else tol + 1,
                abs(_mid(q) - _mid(part)) if narrow else tol + 1,
            )
            <= tol
            for q in mates
        )

    return all(lined_up(p) for p in parts)


MAX_LABEL_WORDS = 5


def _label(p: Piece, page_width: float) -> bool:
    """A key's cell: a few words, or words ending in a colon, in a narrow piece — not a line of a
    text column (which fills a good part of the page's width)."""
    text = p.text.strip()
    if p.box[2] - p.box[0] > 0.35 * page_width:
        return False
    return len(text.split()) <= MAX_LABEL_WORDS or (
        text.endswith(":") and len(text.split()) <= MAX_PAIR_WORDS
    )


def _mid(p: Piece) -> float:
    return (p.box[0] + p.box[2]) / 2


def _heading_under(row: Sequence[Piece], prev: Sequence[Piece]) -> bool:
    """A bold line under plain ones (a heading, a lead-in after a table), or a numbered section title."""
    if all(_heavy(p) for p in row) and not all(_heavy(p) for p in prev):
        return True
    return len(row) == 1 and bool(_SECTION.match(row[0].text.strip()))


def _wrapped_line(
    row: Sequence[Piece], prev: Sequence[Piece], cols: list[list[float]], body: float, right: float
) -> int | None:
    """The column of a single piece inside one column that can be a cell's wrapped line (not a
    figure label, not a bold line under plain ones — a heading between two tables —, not a
    numbered section title), or None."""
    if len(row) != 1 or row[0].in_figure or not cols or _heading_under(row, prev):
        return None
    return _slot(row, cols, body, right)


def _trailing_wraps(rows: Sequence[Sequence[Piece]], first: int, last: int, body: float, right: float) -> int:
    """The last row of a run, with up to two wrapped lines of the last row's later cells after it
    (single pieces right of the first column, inside one column, in the rhythm), or the wrapped line
    of its first cell (inside the first column, right under it at a line's spacing: "Upper" over
    "weir" at the foot of a table's first piece, which a column broke)."""
    cols = grid_columns([r for r in rows[first : last + 1] if len(r) >= 2], body)
    k = last
    while k + 1 < len(rows) and len(rows[k + 1]) == 1 and _close(rows[k], rows[k + 1]):
        nxt = rows[k + 1]
        if k == last and len(cols) >= 2 and _label_wrap(rows[k], nxt[0], cols[1][0]):
            return k + 1
        if nxt[0].in_figure or nxt[0].box[0] <= cols[0][1] or not _fits_one_column(nxt, cols, body, right):
            break
        # Past two lines only the lines of one cell, one under the other in its column.
        if k - last >= 2 and _slot(nxt, cols, body, right) != _slot(rows[k], cols, body, right):
            break
        k += 1
    return k


def _last_label_wrap(prev: list[list[Piece]], row: list[list[Piece]]) -> bool:
    """The table's last line, its first cell alone, right under the first cell of a row of several
    (at a line's spacing): that cell's wrapped end (``_trailing_wraps`` took it in)."""
    if not row[0] or any(row[1:]) or not prev[0] or sum(1 for c in prev if c) < 2:
        return False
    label = max(prev[0], key=lambda p: p.box[3])
    return _label_wrap([label], row[0][0], min(p.box[0] for c in prev[1:] for p in c))


def _label_wrap(row: Sequence[Piece], line: Piece, second: float) -> bool:
    """Whether ``line`` is the wrapped end of ``row``'s first cell: set at its left edge, both ending
    before the second column (which starts at ``second``), under it by less than a quarter of a line."""
    label = min(row, key=lambda p: p.box[0])
    height = label.box[3] - label.box[1]
    return (
        not line.in_figure
        and abs(line.box[0] - label.box[0]) <= 0.25 * height
        and line.box[2] < second
        and label.box[2] < second
        and -0.25 * height <= line.box[1] - label.box[3] <= 0.25 * height
    )


def _text_columns(rows: Sequence[Sequence[Piece]], cols: list[list[float]]) -> bool:
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


def _row_bands(run: Sequence[Sequence[Piece]], cols: list[list[float]]) -> list[list[Piece]]:
    """Lines of the run grouped into table rows by the row rhythm: where the gaps between lines
    come in two sizes (line spacing inside a cell, padding between rows), the small ones join lines
    into one row — wrapped cells, and cells centred on a taller row's middle line (the space under a
    bold header row does not count: a header is often set apart from rows with no padding). A full line
    (``_full``) under a row that already has one starts a new row whatever the gap: rows of one line
    set close under a header with more space below it are rows, not one tall row."""
    boxes = [union_box([p.box for p in r]) for r in run]
    gaps = [b[1] - a[3] for a, b in itertools.pairwise(boxes)]
    line = min(b[3] - b[1] for b in boxes)
    # Lines that overlap by a good part of their height belong to one row (cells centred beside a
    # taller one; line boxes of tightly leaded text overlap a little); the sizes of the other gaps
    # tell line spacing from row padding.
    # A heavy first line over plain ones is a header row: the space under it is no row padding. So is
    # one of heads over a bold label alone in the first column (a statement's first section).
    head = (
        len(run) > 2
        and all(_heavy(p) for p in run[0])
        and (not all(_heavy(p) for p in run[1]) or (len(run[0]) >= 2 and len(run[1]) == 1))
    )
    cut = _rhythm_cut(gaps[1:] if head else gaps, line)
    if not head and _head_apart(run, cols):
        head = True
        cut = _rhythm_cut(gaps[1:], line)
    if cut is None:
        return [list(r) for r in run]
    bands: list[list[Piece]] = [list(run[0])]
    anchored = [_full(run[0], cols)]
    key_right = max((p.box[2] for r in run for p in r if _column_of(p, cols) == 0), default=0.0)
    for k, (r, g) in enumerate(zip(run[1:], gaps, strict=True)):
        full = _full(r, cols)
        if (
            g > cut
            or (full and anchored[-1])
            or (head and k == 0)
            or _new_figures(bands[-1], r, cols)
            or (
                # a label row and a row of figures, one over the other (a statement's section label)
                (full or anchored[-1])
                and (_key_only(r, cols) or _key_only(bands[-1], cols))
                and _short_key_above(bands[-1], r, cols, key_right)
            )
        ):
            bands.append(list(r))
            anchored.append(full)
        else:
            bands[-1].extend(r)
            anchored[-1] = anchored[-1] or full
    return bands


def _head_apart(run: Sequence[Sequence[Piece]], cols: list[list[float]]) -> bool:
    """Whether the run's first line is a head set apart over body rows set without padding: the space
    under it is the only gap of the wider size, and every body line opens with its key, the keys flush
    with each other.

    Why: read as the row rhythm, that one wider gap (booktabs' midrule under the heads) made every
    other gap "line spacing inside a cell", and the whole body came out as one row of wrapped lines
    ("FreeBSD OpenBSD Solaris …" in one cell; issue 30, round 24). The first line is then the head, and
    the body's own gaps say what is a row. Lines without a key may be a key's second row or a wrapped
    line: such a body is left as it was read (ifplatform's "nul:" over "true" and "false")."""
    if len(run) <= 2 or all(_heavy(p) for p in run[0]):
        return False  # (a heavy first line is a head already)
    boxes = [union_box([p.box for p in r]) for r in run]
    gaps = [b[1] - a[3] for a, b in itertools.pairwise(boxes)]
    cut = _rhythm_cut(gaps, min(b[3] - b[1] for b in boxes))
    if cut is None or [k for k, g in enumerate(gaps) if g > cut] != [0]:
        return False
    keys = [
        min((p for p in r if _column_of(p, cols) == 0), key=lambda p: p.box[0], default=None) for r in run[1:]
    ]
    if any(k is None for k in keys):
        return False
    # Every key flush with the others: a key's line set in from the rest is the wrapped end of the key
    # above (a census table's "Disposable income per capita in" over an indented "constant dollars").
    edge = min(k.box[0] for k in keys if k is not None)
    return all(k.box[0] - edge <= 0.5 * (k.box[3] - k.box[1]) for k in keys if k is not None)


def _rhythm_cut(gaps: Sequence[float], line: float) -> float | None:
    """The gap size between line spacing inside a cell and padding between rows, where the gaps come in
    two sizes (or some lines overlap); None when they do not."""
    deep = -OVERLAP * line
    apart = [g for g in gaps if g >= deep]
    if len(apart) >= 2 and max(apart) - min(apart) >= 0.2 * line:
        cut = (max(apart) + min(apart)) / 2
    elif len(apart) < len(gaps):
        cut = deep
    else:
        return None
    return cut if any(g > cut for g in gaps) else None


def _key_only(line: Sequence[Piece], cols: list[list[float]]) -> bool:
    """A line with text in the first column only (a label)."""
    return bool(line) and all(_column_of(p, cols) == 0 for p in line)


def _short_key_above(
    band: Sequence[Piece], line: Sequence[Piece], cols: list[list[float]], right: float
) -> bool:
    """Whether the first-column text of ``line`` cannot be the wrapped end of the band's: the band's
    last first-column line ended so short that the line's first word would have fitted after it
    (within the column's widest line). A section label ("Revenue") over its first item ("Product
    sales 48,210") is two rows; so is an item ("Licences 1,130") over a line that starts left of it
    (the next label, "Expenses"). A label too long for its column wraps and goes on."""
    above = [p for p in band if _column_of(p, cols) == 0]
    below = [p for p in line if _column_of(p, cols) == 0]
    if not above or not below:
        return False
    last = max(above, key=lambda p: (p.box[1], p.box[2]))
    first = min(below, key=lambda p: p.box[0])
    word = words_of(first)[0]
    height = last.box[3] - last.box[1]
    # A wrapped line does not start left of its cell's first line (a hanging indent goes right).
    outdented = first.box[0] < min(p.box[0] for p in above) - 0.25 * height
    return outdented or last.box[2] + 0.25 * height + (word[2] - word[1]) <= right


def _new_figures(band: Sequence[Piece], line: Sequence[Piece], cols: list[list[float]]) -> bool:
    """A line with a label in the first column and a figure in a column where the row so far already
    has one: figures do not wrap, so it is the next row (a total under the items of a statement, set
    as close as they are, with no note beside it to make the line full)."""
    first = [p for p in line if _column_of(p, cols) == 0]
    others = [p for p in line if _column_of(p, cols) > 0]
    # A short label (leader dots are no words) and figures alone: a line of prose beside a figure's
    # labels is not a row.
    if not first or not others or not all(_figure(p) for p in others):
        return False
    if sum(1 for p in first for w in p.text.split() if _LETTERS.search(w)) > MAX_LABEL_WORDS:
        return False
    held = {_column_of(p, cols) for p in band if _figure(p)}
    return any(_column_of(p, cols) in held for p in others)


def _full(line: Sequence[Piece], cols: list[list[float]]) -> bool:
    """A line with a piece in every column, one of them a figure: a row's anchors. A cell's wrapped
    lines continue some of a row's cells, never all of them at once, and figures do not wrap."""
    return (
        len(cols) >= 2
        and len({_column_of(p, cols) for p in line}) == len(cols)
        and any(_figure(p) for p in line)
    )


def _merge_wrapped(grid: list[list[list[Piece]]]) -> list[list[list[Piece]]]:
    """Rows that continue the row above: the first column empty where the table has a key column,
    or a bold row right under a bold first row with nothing new in its columns (a wrapped header)."""
    full = [r for r in grid if sum(1 for c in r if c) >= 2]
    keyed = bool(full) and sum(1 for r in full if r[0]) >= 0.8 * len(full)
    widths = [
        max((p.box[2] for r in grid for p in r[c]), default=0.0) for c in range(len(grid[0]) if grid else 0)
    ]
    out: list[list[list[Piece]]] = []
    for k, row in enumerate(grid):
        # Under the heads, a row of words without its key is the rest of a row a column or page
        # broke (``table_html.continue_table`` joins it to that row), not a wrapped head; a row of
        # figures there is a head's second row (the years under a group's head).
        under_heads = (
            len(out) == 1
            and _heavy_row(out[0])
            and not _heavy_row(row)
            and not any(_figure(p) for c in row for p in c)
        )
        if out and keyed and not row[0] and not under_heads:
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        if (
            out
            and keyed
            and _key_wrap(out[-1], row, len(full) >= 0.8 * sum(1 for r in grid if r[0]), widths[0])
        ):
            out[-1][0].extend(row[0])
            continue
        if out and _wrapped_row(out[-1], row, widths):
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        if k == len(grid) - 1 and out and _last_label_wrap(out[-1], row):
            out[-1][0].extend(row[0])
            continue
        if k == 1 and out and _wrapped_header(out[0], row):
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        out.append([list(c) for c in row])
    return out


def _heavy_row(row: list[list[Piece]]) -> bool:
    pieces = [p for c in row for p in c]
    return bool(pieces) and all(_heavy(p) for p in pieces)


def _wrapped_row(prev: list[list[Piece]], row: list[list[Piece]], widths: list[float]) -> bool:
    """A row with no figure under a row with some (and none in their columns), each of its cells
    starting right under the last line of a filled cell above it (under half a line: line spacing, not a row's padding), reaching
    beyond the first column: the wrapped lines of the row above (rows are anchored by their
    figures, one line a row, on the row's first line). A lone first-column line may be a group
    label and is left to ``_key_wrap``."""
    filled = [c for c, pieces in enumerate(row) if pieces]
    figures = [c for c, pieces in enumerate(prev) if pieces and all(_figure(p) for p in pieces)]
    if not filled or filled == [0] or set(filled) & set(figures):
        return False
    if figures:
        if any(_figure(p) for c in filled for p in row[c]):
            return False
    elif row[0] or not prev[0] or (_heavy_row(prev) and not _heavy_row(row)):
        return False  # a keyed row's wrapped lines; a plain line under the heads is no head's
    for c in filled:
        if not prev[c]:
            return False
        a, b = union_box([p.box for p in prev[c]]), union_box([p.box for p in row[c]])
        if not -0.5 * (b[3] - b[1]) <= b[1] - a[3] < 0.5 * (b[3] - b[1]):
            return False
        # The line above was full: the first word of this one would not have fitted after it within
        # the column's widest line (else that line ended there, and this is a cell of its own).
        last = max(prev[c], key=lambda p: p.box[1])
        word = words_of(min(row[c], key=lambda p: (p.box[1], p.box[0])))[0]
        if last.box[2] + 0.25 * (b[3] - b[1]) + word[2] - word[1] <= widths[c]:
            return False
    return True


def _figure(p: Piece) -> bool:
    return is_figure(p.text)


def _key_wrap(prev: list[list[Piece]], row: list[list[Piece]], mostly_full: bool, right: float) -> bool:
    """A row with only its key, right under a full row, in a table whose rows are mostly full: the
    key cell's wrapped line where rows have no padding (not a bold group label, not a new key after
    a key that ended with a colon or a full stop, not after a key so short that the line's first word
    would have fitted after it within the column's widest line, ``right``: a label on scans, where
    no weight is known)."""
    if not mostly_full or any(row[1:]) or sum(1 for c in prev if c) < 2 or not row[0] or not prev[0]:
        return False
    if any(_heavy(p) for p in row[0]) or prev[0][-1].text.rstrip().endswith((":", ".")):
        return False
    a, b = union_box([p.box for p in prev[0]]), union_box([p.box for p in row[0]])
    word = words_of(min(row[0], key=lambda p: p.box[0]))[0]
    if a[2] + 0.25 * (a[3] - a[1]) + (word[2] - word[1]) <= right:
        return False
    return b[1] - a[3] <= 0.3 * (b[3] - b[1]) and abs(b[0] - a[0]) <= 0.5 * (b[3] - b[1])


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
    """A cell's pieces as one text; a word broken by a hyphen at the end of one of its lines mended
    (``paragraphs.join_lines``: "bear-" over "ings" in a narrow justified cell, as LaTeX breaks it)."""
    out, last = "", None
    for p in pieces:
        text = " ".join(p.text.split())
        under = last is not None and p.box[1] >= (last.box[1] + last.box[3]) / 2
        out = join_lines(out, text) if under and out.endswith("-") else f"{out} {text}" if out else text
        last = p
    return out.strip()


def _numeric_body_header(texts: list[list[str]]) -> int:
    """1 when the first row is words over columns that are numbers in the rows below, else 0."""
    if len(texts) < 3 or not all(texts[0]) or any(NUMERIC.match(t) for t in texts[0] if t):
        return 0
    numeric_cols = [
        c
        for c in range(len(texts[0]))
        if sum(1 for r in texts[1:] if r[c] and NUMERIC.match(r[c])) >= 0.6 * (len(texts) - 1)
    ]
    return 1 if numeric_cols else 0


def _head_start(above: Sequence[Piece], heads: list[list[Piece]]) -> int | None:
    """The column whose head ``above`` begins: a heavy line right over one head of the first row, a
    line's spacing above it (under a quarter line), over no other head, while the row's other heads
    stand in the middle of the two lines. The first line of a head that wraps more than its
    neighbours ("Budget" over "(€m)"), not a group head over several columns ("Year Ended" over a
    row of years)."""
    if not all(_heavy(p) for p in above):
        return None
    box = union_box([p.box for p in above])
    under = [
        c
        for c, cell in enumerate(heads)
        if cell
        and min(box[2], (b := union_box([p.box for p in cell]))[2]) - max(box[0], b[0])
        >= 0.5 * min(box[2] - box[0], b[2] - b[0])
    ]
    if len(under) != 1:
        return None
    b = union_box([p.box for p in heads[under[0]]])
    height = box[3] - box[1]
    if b[1] - box[3] > 0.25 * height:
        return None
    # The other heads stand in the middle of the two lines, less than a line under this one; a group
    # head ("Year Ended") stands a full line over a row of heads all on one line.
    others = [p for c, cell in enumerate(heads) if c != under[0] for p in cell]
    if not others or any(p.box[1] - box[1] >= MIDDLE_SET * height for p in others):
        return None
    return under[0]


MIDDLE_SET = 0.75  # × a line: a head set in the middle of two lines starts less than this under the first


def _group_header(above: Sequence[Piece] | None, cols: list[list[float]], body: float) -> list[Cell] | None:
    """A short heavy line right above the table, right of its first column: a header over the
    columns it is centred over (``centred_span``), else from the one it starts in to the table's
    right edge."""
    if not above or not all(_heavy(p) for p in above):
        return None
    if len(above) >= 2 and (heads := _group_heads(above, cols, body)) is not None:
        return heads
    if len(" ".join(p.text for p in above).split()) > 6:
        return None
    box = union_box([p.box for p in above])
    if box[0] <= cols[0][1] or box[2] > cols[-1][1] + body:
        return None
    span = centred_span(box[0], box[2], cols, body)
    start, end = span if span else (_column_of(min(above, key=lambda p: p.box[0]), cols), len(cols) - 1)
    if start == 0:
        return None
    text = _text(sorted(above, key=lambda p: p.box[0]))
    return [Cell("")] * start + [Cell(text, colspan=end + 1 - start)] + [Cell("")] * (len(cols) - 1 - end)


def _left_set_span(
    pieces: Sequence[Piece], k: int, cols: list[list[float]], body: float
) -> tuple[int, int] | None:
    """The columns a head set flush left over its group covers: from the column it starts at (its
    left edge at that column's) to the column before the next head's, or the last one. It must end
    over its last column (a body height past it; over the table's last columns, half the group's
    width: a head wider than its figures)."""
    start = next((c for c, col in enumerate(cols) if abs(pieces[k].box[0] - col[0]) <= 0.5 * body), None)
    if start is None or start == 0:
        return None
    if k + 1 < len(pieces):
        end = next(
            (c - 1 for c, col in enumerate(cols) if abs(pieces[k + 1].box[0] - col[0]) <= 0.5 * body), None
        )
    else:
        end = len(cols) - 1
    if end is None or end <= start:
        return None
    # A head may reach past its last column's figures, by up to half the group's width over the
    # table's last columns (no next head bounds it there).
    reach = body if k + 1 < len(pieces) else max(body, 0.5 * (cols[end][1] - cols[start][0]))
    return (start, end) if pieces[k].box[2] <= cols[end][1] + reach else None


def _covered_span(
    p: Piece, cols: list[list[float]], blocked: Sequence[int], body: float
) -> tuple[int, int] | None:
    """The columns a head as wide as their figures, or wider, covers: two or more columns whose ink
    lies whole under it, none of another column's under it ("Nitrate (mg/l)" over right-aligned
    "2024 2025", ending where they end: neither centred by a margin nor set from the first one's
    edge, ``centred_span`` leaves it)."""
    tol = FLUSH * body
    under = [c for c, col in enumerate(cols) if p.box[0] - tol <= col[0] and col[1] <= p.box[2] + tol]
    touched = [c for c, col in enumerate(cols) if col[0] < p.box[2] and p.box[0] < col[1]]
    if len(under) < 2 or touched != under or any(c in blocked for c in under):
        return None
    return under[0], under[-1]


def _group_heads(above: Sequence[Piece], cols: list[list[float]], body: float) -> list[Cell] | None:
    """Heads a clear gap apart on the line right above the table, each centred over a run of its
    columns between its neighbours ("Nitrate (mg/l)" and "Phosphate (mg/l)", each over "2024 2025"),
    none over the first but its own head: one header cell each, spanning its run; else None."""
    pieces = sorted(above, key=lambda p: p.box[0])
    if any(len(p.text.split()) > 6 for p in pieces):
        return None
    spans: list[tuple[int, int]] = []
    for k, p in enumerate(pieces):
        lo = pieces[k - 1].box[2] if k else float("-inf")
        hi = pieces[k + 1].box[0] if k + 1 < len(pieces) else float("inf")
        beyond = [c for c, col in enumerate(cols) if not lo < (col[0] + col[1]) / 2 < hi]
        if k == 0 and len(cols) > 1 and p.box[0] <= cols[0][1] and p.box[2] < cols[1][0]:
            spans.append((0, 0))  # the first column's own head, set as its cells are
            continue
        span = (
            centred_span(p.box[0], p.box[2], cols, body, beyond)
            or _left_set_span(pieces, k, cols, body)
            or _covered_span(p, cols, beyond, body)
        )
        if span is None:
            return None
        spans.append(span)
    # The first column's head may stand on the line too ("Site" beside the groups), alone over it
    # (``table_html`` spans it down the header rows).
    stub = spans[0] == (0, 0) and len(spans) >= 3 and all(b > a for a, b in spans[1:])
    if (spans[0][0] == 0 and not stub) or any(a[1] >= b[0] for a, b in itertools.pairwise(spans)):
        return None
    row: list[Cell] = []
    end = 0  # the grid columns the row covers so far
    for p, (a, b) in zip(pieces, spans, strict=True):
        row += [Cell("")] * (a - end) + [Cell(_text([p]), colspan=b + 1 - a)]
        end = b + 1
    return row + [Cell("")] * (len(cols) - end)


def _prose_pairs(texts: list[list[str]]) -> bool:
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


def _justified_lines(grid: list[list[list[Piece]]], texts: list[list[str]], body: float) -> bool:
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


def _fullest(run: Sequence[Sequence[Piece]], plain: Sequence[Sequence[Piece]]) -> list[Sequence[Piece]]:
    """Rows to find the columns from when the body has fewer than two rows of cells (the first piece
    of a table the column broke): the body's rows and the header rows with about as many cells as the
    fullest row. A group's head over two columns ("Nitrate (mg/l)" over "2024" and "2025") covers
    the gap between them, so its row must not hide the columns (issue 30, round 10)."""
    most = max(len(r) for r in run)
    return [r for r in run if any(r is q for q in plain) or len(r) >= most - 1]


def build_grid(
    run: Sequence[Sequence[Piece]], body: float, above: Sequence[Piece] | None = None
) -> Grid | None:
    """One run of rows → a table, or None when the rows do not make one."""
    most = max(len(r) for r in run)
    if tier := _group_tier(run, most):
        # Heads over column groups on the run's first lines (wrapped, "Nitrate" over "(mg/l)"), over a
        # full row of heads: read as the line over the table when they are heads over groups.
        heads = _stacked_heads(run[:tier])
        grid = _build_grid(run[tier:], body, heads)
        if (
            grid is not None
            and all(any(h is q for q in grid.pieces) for h in heads)
            and sum(1 for c in grid.rows[0] if c.text) == len(heads)  # each head over its own group
        ):
            grid.pieces = [q for q in grid.pieces if not any(q is h for h in heads)]
            grid.pieces += [p for r in run[:tier] for p in r]  # the lines themselves, as the page has them
            grid.box = union_box([p.box for p in grid.pieces])
            return grid
    return _build_grid(run, body, above)


def _group_tier(run: Sequence[Sequence[Piece]], most: int) -> int:
    """How many of the run's first rows are heads over column groups: heavy rows of fewer heads than
    the fullest row has cells less one, with a body row of two or more cells (one: the first piece
    of a table a column broke) under the full row of heads that follows them; else 0."""
    k = 0
    while k < min(len(run), MAX_HEADER_ROWS) and all(map(_heavy, run[k])) and len(_stacks(run[k])) < most - 1:
        k += 1
    if not k or k >= len(run) or not all(map(_heavy, run[k])) or len(run[k]) < most - 1:
        return 0
    body = [r for r in run[k + 1 :] if not all(map(_heavy, r)) and len(r) >= 2]
    return k if body else 0


def _stacked_heads(rows: Sequence[Sequence[Piece]]) -> list[Piece]:
    """The heads of several lines as one piece each: lines that overlap in x (a head wrapped onto
    two lines) joined top to bottom."""
    pieces = sorted((p for r in rows for p in r), key=lambda p: (p.box[1], p.box[0]))
    stacks = _stacks(pieces)
    out: list[Piece] = []
    for st in stacks:
        if len(st) == 1:
            out.append(st[0])
            continue
        st = sorted(st, key=lambda p: p.box[1])
        out.append(Part(_text(st), union_box([p.box for p in st]), st[0].bold, st[0].weight))
    return out


def _build_grid(
    run: Sequence[Sequence[Piece]], body: float, above: Sequence[Piece] | None = None
) -> Grid | None:
    originals = [p for r in run for p in r]
    most = max(len(r) for r in run)
    run = [split_numbers(r, most) for r in run]
    # Columns from the body rows where there are enough: a header cell wider than its column must
    # not merge two columns.
    plain = [r for r in run if not all(_heavy(p) for p in r)]
    basis = plain
    if sum(1 for r in plain if len(r) >= 2) < 2:
        # Too few body rows to find the columns from (the first piece of a table the column broke):
        # a first header row of fewer cells than the fullest rows holds heads over column groups,
        # read as such (``_group_header``), and the columns come from the rows below it.
        if above is None and len(run) >= 3 and all(map(_heavy, run[0])) and len(run[0]) < most - 1:
            above, run = run[0], run[1:]
            originals = [p for r in run for p in r]
        basis = _fullest(run, plain)
    # Single lines (wrapped cells) must leave a column gap white, but only rows of two or more
    # cells make one: a line set further right than every cell is a cell's continuation.
    spread = [w for r in basis if len(r) >= 2 for p in r for w in words_of(p)]
    seps = [
        s
        for s in separators(basis, body)
        if any(w[2] <= s[0] + 0.05 * body for w in spread) and any(w[1] >= s[1] - 0.05 * body for w in spread)
    ]
    run = [cut(r, seps, body) for r in run]
    multis = [r for r in run if len(r) >= 2]
    cols = columns_between(basis, seps)
    if len(cols) < 2 or len(multis) < 2:
        return None
    if len(cols) > max(len(r) for r in run) + 1 or _text_columns(multis, cols):
        return None
    filled = sum(len({_column_of(p, cols) for p in r}) for r in multis)
    if filled < 0.45 * len(cols) * len(multis):
        return None
    run, keys = straddling(run, lambda p: _column_of(p, cols))
    grid = _merge_wrapped(spread_keys(_place(_row_bands(run, cols), cols), keys, _heavy))
    if len(grid) < 2:
        return None
    texts = [[_text(c) for c in r] for r in grid]
    if (len(cols) == 2 and _prose_pairs(texts)) or _justified_lines(grid, texts, body):
        return None
    heavy = [all(_heavy(p) for c in r for p in c) if any(r) else None for r in grid]
    head = header_rows(heavy, []) or _numeric_body_header(texts)
    # A bold row of its first cell alone under the heads is the first section's label, not a head.
    head = next((k for k in range(1, head) if texts[k][0] and not any(texts[k][1:])), head)
    pieces = originals
    if above and head and (c := _head_start(above, grid[0])) is not None:
        texts[0][c] = _text([*sorted(above, key=lambda p: p.box[0]), *grid[0][c]])
        pieces, above = [*originals, *above], None
    rows = _spanned_rows(texts, key_spans(grid))
    group = _group_header(above, cols, body) if head or any(heavy[:1]) else None
    if group is None and not head and above and _plain_heads(above, cols):
        # Heads in the body's weight (italic, say), one centred over each column of a table with no
        # header of its own (dvipdfm's "Option" over "-c", "Description" over the descriptions):
        # the table's header row, not a line of text over it (issue 30, round 24).
        rows.insert(0, [Cell(_text([p])) for p in sorted(above, key=lambda p: p.box[0])])
        return Grid(
            rows=rows,
            header_rows=1,
            pieces=[*pieces, *above],
            box=union_box([p.box for p in [*pieces, *above]]),
            columns=cols,
        )
    if group is not None:
        rows.insert(0, group)
        head = max(head, 1) + 1
        pieces += list(above or ())
    return Grid(
        rows=rows, header_rows=head, pieces=pieces, box=union_box([p.box for p in pieces]), columns=cols
    )


def _plain_heads(above: Sequence[Piece], cols: list[list[float]]) -> bool:
    """Whether the line right over a run is a head for each of its columns: as many short pieces
    (``HEAD_WORDS``, no figures) as columns, each over another column (``_heads_over_columns``)."""
    return (
        len(above) == len(cols) >= 2
        and not any(p.in_figure for p in above)
        and all(len(p.text.split()) <= HEAD_WORDS and not _MEASURE.search(p.text) for p in above)
        and _heads_over_columns(above, cols)
    )


def _spanned_rows(texts: list[list[str]], spans: list[int]) -> list[list[Cell]]:
    """The rows' cells, a key over several rows (``centred_keys``) one cell spanning them."""
    rows = []
    for r, n in zip(texts, spans, strict=True):
        cells = [Cell(t) for t in r]
        rows.append(cells[1:] if n == 0 else [Cell(r[0], rowspan=n), *cells[1:]] if n > 1 else cells)
    return rows


PROSE_WORDS = 4  # a line of at least this many words, 0.3 of the page wide, is prose


def _text_columns_of_page(
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
    return sum(1 for w in p.text.split() if _LETTERS.search(w)) >= PROSE_WORDS


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


def _prose_beside(grid: Grid, others: Sequence[Sequence[Piece]], body: float, page_width: float) -> bool:
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


def _stub_between(top: Sequence[Piece], mid: Sequence[Piece], heads: Sequence[Piece]) -> bool:
    """Whether ``mid`` is the first column's head set in the middle of two header lines (a head
    spanning both, centred down them as HTML and word processors set it): heavy, alone left of the
    heads on the line ``top`` above it (heads over column groups, "Nitrate (mg/l)" over "2024
    2025"), its middle between the middles of ``top`` and of the run's first row ``heads``, which
    stand a line's spacing apart. ``top`` and ``mid`` are then read as one line over the table
    (``_group_heads``: "Site" beside the groups), as when the stub stands on the groups' line."""
    if not top or not mid or not all(_heavy(p) for p in [*top, *mid]):
        return False
    upper, stub, lower = (union_box([p.box for p in r]) for r in (top, mid, heads))

    def middle(b: Box) -> float:
        return (b[1] + b[3]) / 2

    return (
        stub[2] < upper[0]
        and stub[2] < lower[0]
        and middle(upper) < middle(stub) < middle(lower)
        and stub[1] > upper[1]
        and stub[3] < lower[3]
        and _close(top, heads)
    )


def side_by_side(run: Sequence[Sequence[Piece]]) -> tuple[float, int] | None:
    """The x between two tables set side by side and read as one run: a row of heads whose first
    head comes again further right ("Region Cost Change | Region Staff Change"), after the widest
    gap of that row, with two heads or more on each side, and under it rows whose first cell on each
    side is a label (words, not figures): each table has a column of labels of its own. Heads over
    column groups ("2009 2010 | 2009 2010") repeat too, but figures stand under the second group's
    first head. The x and the index of the row of heads; None: one table."""
    for n, row in enumerate(run):
        heads = sorted(row, key=lambda p: p.box[0])
        if len(heads) < 4:
            continue
        gaps = [b.box[0] - a.box[2] for a, b in itertools.pairwise(heads)]
        for k in range(2, len(heads) - 1):
            if heads[k].text.strip() == heads[0].text.strip() and gaps[k - 1] >= max(gaps):
                split = (heads[k - 1].box[2] + heads[k].box[0]) / 2
                if _labels_on_both_sides(run[n + 1 :], split):
                    return split, n
    return None


def _labels_on_both_sides(rows: Sequence[Sequence[Piece]], split: float) -> bool:
    """Whether most rows start each side of ``split`` with a label (a piece that is no figure)."""
    firsts = [
        [min(side, key=lambda p: p.box[0]) for side in (left, right)]
        for r in rows
        if (left := [p for p in r if _mid(p) < split]) and (right := [p for p in r if _mid(p) >= split])
    ]
    labels = sum(1 for a, b in firsts if not NUMERIC.match(a.text) and not NUMERIC.match(b.text))
    return len(firsts) >= 2 and labels >= 0.7 * len(firsts)


def _halves(run: Sequence[Sequence[Piece]], split: float) -> list[list[Sequence[Piece]]]:
    """The run's rows cut at ``split`` into the left table's and the right one's, each without the
    lines of one piece over it (its title: text, not a row)."""
    out = []
    for left in (True, False):
        half = [kept for r in run if (kept := [p for p in r if (_mid(p) < split) == left])]
        while half and len(half[0]) == 1:
            half = half[1:]
        out.append(half)
    return out


def _centred_heads(
    rows: Sequence[Sequence[Piece]], k: int, taken: int, sources: dict[int, tuple[Piece, list[Piece]]]
) -> list[Piece] | None:
    """The heads over a table set in the middle of their cells (a word processor's head row
    centred down its height): bold rows overlapping each other from ``rows[k]`` up ("Site" beside
    "Nitrate (mg/l)" beside the two lines of "Phosphate (mg/l)"), as one row of heads, a head's lines
    joined top to bottom (``sources``: a joined head's id → the head, kept so no other piece takes
    its id, and its lines). None where ``rows[k]`` overlaps no bold row above it."""
    top = k
    while top - 1 > taken and _head_over(rows[top - 1], rows[top]):
        top -= 1
    if top == k:
        return None
    heads = []
    for stack in _stacks(
        sorted((p for r in rows[top : k + 1] for p in r), key=lambda p: (p.box[1], p.box[0]))
    ):
        stack = sorted(stack, key=lambda p: p.box[1])
        box = union_box([p.box for p in stack])
        head = dataclasses.replace(stack[0], text=_text(stack), box=box) if len(stack) > 1 else stack[0]
        sources[id(head)] = (head, stack)
        heads.append(head)
    return heads


def _head_over(upper: Sequence[Piece], lower: Sequence[Piece]) -> bool:
    """Whether the bold row ``upper`` is more of the heads in ``lower``: overlapping it (heads
    centred down their cells), or its heads' first lines right over their second ("Nitrate" over
    "(mg/l)"), each over a head of ``lower``."""
    if not all(_heavy(p) for p in upper) or not all(_heavy(p) for p in lower):
        return False
    if _overlap(upper, lower):
        return True
    gap = union_box([p.box for p in lower])[1] - union_box([p.box for p in upper])[3]
    return 0 <= gap <= 0.5 * _height(upper) and all(
        any(min(a.box[2], b.box[2]) > max(a.box[0], b.box[0]) for b in lower) for a in upper
    )


def find_grids(rows: Sequence[Sequence[Piece]], body: float, page_width: float) -> list[Grid]:
    """All borderless tables among the page's rows (top to bottom); two tables set side by side
    (``side_by_side``) are read one by one (issue 30, round 11)."""
    grids: list[Grid] = []
    taken = -1
    sources: dict[int, tuple[Piece, list[Piece]]] = {}  # heads joined from lines centred in their cells
    runs = find_runs(rows, body, page_width)
    for first, last in runs:
        above = rows[first - 1] if first - 1 > taken and first > 0 else None
        if above is not None and first - 2 > taken and _stub_between(rows[first - 2], above, rows[first]):
            above = [*rows[first - 2], *above]
        elif above is not None and not _close(above, rows[first]):
            above = None
        elif above is not None and not _head_over(above, rows[first]):
            # (heads that run on into the run's first row are read with it, as before)
            above = _centred_heads(rows, first - 1, taken, sources) or above
        run = rows[first : last + 1]
        others = [*rows[:first], *rows[last + 1 :]]
        pair = side_by_side(run)
        if pair is not None:
            found = [
                g for h in _halves(run, pair[0]) if len(h) >= 2 and (g := build_grid(h, body)) is not None
            ]
        else:
            found = [g for g in [build_grid(run, body, above)] if g is not None]
        for grid in found:
            if not _text_columns_of_page(grid, others, body, page_width) and not _prose_beside(
                grid, others, body, page_width
            ):
                grid.pieces = [
                    q for p in grid.pieces for q in (sources[id(p)][1] if id(p) in sources else [p])
                ]
                grids.append(grid)
                taken = last
    logger.debug("borderless: %d runs → %d tables", len(runs), len(grids))
    return grids
