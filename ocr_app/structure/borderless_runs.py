"""Step 1 of a table without rules: runs of rows that may be one.

Why: a table without rules shows itself only by where its words stand. A row of two or more pieces a
clear gap apart (``is_multi``) may be a table's row; consecutive such rows in the page's rhythm, with
the single lines that fit one of their columns (wrapped cells) and rows whose cells line up with the
run's columns (``_on_grid``), make a run (``find_runs``) that ``borderless.build_grid`` then reads. The
run's pieces are duck-typed lines (``text``, ``box``, ``bold``, ``weight``, ``in_figure``, ``words``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from ocr_app.schema import union_box
from ocr_app.structure.word_columns import (
    NUMERIC,
    Piece,
    column_bounds,
    columns_between,
    cut,
    grid_columns,
    opens,
    separators,
    split_numbers,
    words_of,
)

# A list item's marker; "[12]" starts an entry of a numbered reference list.
_MARKER = re.compile(r"^(?:[-•●○◦▪▫■□–—*·‣⁃]|(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)]|\[\d{1,3}\])$")
_SECTION = re.compile(r"^\d{1,2}(?:[.\-]\d{1,2}){0,4}\.?\s+\S")
LETTERS = re.compile(r"[^\W\d_]")  # a word, not a leader's dots or a figure
# a measured value ("25.16%", "12,410", "-0.3"), which a row of column heads does not hold (a year does)
MEASURE = re.compile(r"\d[.,]\d|\d\s*%")
HEAD_WORDS = 4  # a column head is a few words
HEAD_GAP = 2.0  # × the row height: heads may stand this far above the first row (more than rows do)
MAX_PAIR_WORDS = 8  # a longer line beside a short one is prose beside a side box, not a key and value


def is_heavy(p: Piece) -> bool:
    return bool(p.bold or p.weight >= 600)


def line_height(row: Sequence[Piece]) -> float:
    box = union_box([p.box for p in row])
    return box[3] - box[1]


def x_stacks(row: Sequence[Piece]) -> list[list[Piece]]:
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
    stacks = x_stacks(row)
    if len(stacks) < 2 or any(p.in_figure for p in row) or _MARKER.match(lead := stacks[0][0].text.strip()):
        return False
    if not any(c.isalnum() for c in lead) and _MARKER.match((stacks[1][0].text.split() or [""])[0]):
        return False
    if any(getattr(p, "role", "") == "prose" for p in row):
        return False  # on scans, the layout model saw a paragraph's line (structure.scan_regions)
    boxes = [union_box([p.box for p in st]) for st in stacks]
    inks = [_ink_span(st) for st in stacks]
    gaps = [b[0] - a[2] for a, b in itertools.pairwise(boxes)]
    ink_gaps = [b[0] - a[1] for a, b in itertools.pairwise(inks)]
    inked = len(stacks) >= 3  # (a marker and its note, "(1)" and a sentence, are two pieces)
    if any(g < 0.5 * body and (not inked or i < INK_GAP * body) for g, i in zip(gaps, ink_gaps, strict=True)):
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


INK_GAP = 1.0  # × body: pieces whose boxes nearly touch are cells where their ink stands this far apart


def _ink_span(stack: Sequence[Piece]) -> tuple[float, float]:
    """The x-range of a stack's ink: its words' where the engine measured them (``TextLine.words``),
    else its boxes'. Why: an OCR line's box is padded, and two cells a column gap apart by their ink
    ("…on the ring road" and "Roads unit", 30 px at a body of 20) measured 10 px between boxes. A
    word space the detector split a line at measures half a body size by the ink, so the ink must
    stand a full body size apart (``INK_GAP``), in a row of three pieces or more: a note's marker and
    its text stand so apart too ("(1)" and "Unallowable costs …"), and a scanned form's notes became a
    table (ICDAR's us-009)."""
    # (every word's: a right-to-left line lists its words from the right)
    spans = [span for p in stack for span in (getattr(p, "words", ()) or ((p.box[0], p.box[2]),))]
    return min(a for a, _ in spans), max(b for _, b in spans)


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


def close_under(a: Sequence[Piece], b: Sequence[Piece], lines: float = 1.2) -> bool:
    gap = union_box([p.box for p in b])[1] - union_box([p.box for p in a])[3]
    return gap <= lines * max(line_height(a), line_height(b))


PADDED_ROWS = 1.6  # × a line: rows of cells a word processor pads apart (a blank line and a bit)


def _next_row(rows: Sequence[Sequence[Piece]], j: int, body: float, page_width: float) -> bool:
    """Whether ``rows[j + 1]`` may go on the run that has reached ``rows[j]``: close under it, or a
    row of cells a padded table's gap under it (a table set with generous cell padding puts more
    than a line's space between its rows; a paragraph that far under a table is no row of cells), or
    a group label between such rows. Two numbered section titles over each other ("3.2  Losses" over
    "3.2.1  Reported") are no padded cells, nor a row of more cells than the fullest row of the lines
    above it and one more (the boxes of a flow chart, two over five)."""
    if close_under(rows[j], rows[j + 1]):
        return True
    if all(_titled(r) for r in rows[j : j + 2]) or not close_under(rows[j], rows[j + 1], PADDED_ROWS):
        return False
    if is_multi(rows[j + 1], body, page_width):
        most = max(len(x_stacks(r)) for r in rows[max(0, j - MAX_CELL_LINES) : j + 1])
        return most < 2 or len(x_stacks(rows[j + 1])) <= most + 1
    # a group label ("Staff") between padded rows: one heavy piece with a row of cells as far under it
    label = rows[j + 1]
    return (
        len(label) == 1
        and is_heavy(label[0])
        and j + 2 < len(rows)
        and is_multi(rows[j + 2], body, page_width)
        and close_under(label, rows[j + 2], PADDED_ROWS)
    )


def _titled(row: Sequence[Piece]) -> bool:
    """A numbered section title: set heavy, its first piece a section number."""
    return all(is_heavy(p) for p in row) and bool(_SECTION.match(" ".join(p.text.strip() for p in row)))


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
    if below is None or not close_under(rows[k], below) or not is_multi(below, body, page_width):
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
        or not is_heavy(label)
        or len(label.text.split()) > SECTION_WORDS
        or _SECTION.match(label.text.strip())
        or not cols[0][0] - OUTDENT * body <= label.box[0] <= cols[0][1]
    ):
        return False
    return (
        _in_rhythm(rows, first, k)
        and close_under(rows[k], under, PADDED_ROWS)
        and is_multi(under, body, right)
        and not all(is_heavy(p) for p in under)  # a new table's heads under a title between two tables
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
    while k > last and stretch[k - last - 1] == 0 and not x_share(rows[k - 1], rows[k]):
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
    while k - 1 > floor and not any(p.in_figure for p in rows[k - 1]) and close_under(rows[k - 1], rows[k]):
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
        if col is None or _heading_under(row, rows[k]) or not close_under(row, rows[k]):
            break
        if not x_share(row, rows[k]) and (k != top or block):
            break
        block.append(col)
        k -= 1
    if k < top and (x_share(rows[top - 1], rows[top]) or len(set(block)) >= 2):
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
        <= HEAD_GAP * max(line_height(heads), line_height(rows[k]))
        and not any(p.in_figure for p in heads)
        and all(len(p.text.split()) <= HEAD_WORDS and not MEASURE.search(p.text) for p in heads)
        and heads_over_columns(heads, grid_columns(multis, body))
    )


def heads_over_columns(heads: Sequence[Piece], cols: list[list[float]]) -> bool:
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


def x_share(above: Sequence[Piece], below: Sequence[Piece]) -> bool:
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
        c = column_of(part, cols)
        mates = [q for q in known if column_of(q, cols) == c]
        if not mates:
            return False
        number = bool(NUMERIC.match(part.text.strip()))
        narrow = part.box[2] - part.box[0] <= max(q.box[2] - q.box[0] for q in mates) + 2 * tol
        return any(
            min(
                abs(q.box[0] - part.box[0]),
                abs(q.box[2] - part.box[2]) if number else tol + 1,
                abs(centre_x(q) - centre_x(part)) if narrow else tol + 1,
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


def centre_x(p: Piece) -> float:
    return (p.box[0] + p.box[2]) / 2


def _heading_under(row: Sequence[Piece], prev: Sequence[Piece]) -> bool:
    """A bold line under plain ones (a heading, a lead-in after a table), or a numbered section title."""
    if all(is_heavy(p) for p in row) and not all(is_heavy(p) for p in prev):
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
    while k + 1 < len(rows) and len(rows[k + 1]) == 1 and close_under(rows[k], rows[k + 1]):
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


def last_label_wrap(prev: list[list[Piece]], row: list[list[Piece]]) -> bool:
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


def column_of(piece: Piece, cols: list[list[float]]) -> int:
    cx = (piece.box[0] + piece.box[2]) / 2
    return min(
        range(len(cols)),
        key=lambda c: 0 if cols[c][0] <= cx <= cols[c][1] else 1 + abs((cols[c][0] + cols[c][1]) / 2 - cx),
    )
