"""The model's columns put right from where the words stand.

Why: the model sees a table scaled to a few hundred pixels, and where no rule parts two columns it
often reads them as one, spans a head over columns its text is not centred over, or splits one column
that the words read across. The white strips the words leave down a column, the heads' centres and the
words' own lines say which columns the page has. Each pass takes the cells (``table_slots.Slot``) and
gives them back.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from ocr_app.structure.lines import vertical_overlap
from ocr_app.structure.table_slots import (
    BULLET_CELL,
    LIST_MARK,
    Slot,
    body_start,
    drop_lines,
    is_figure,
    word_bands,
    word_height,
    word_runs,
)

if TYPE_CHECKING:
    from ocr_app.schema import Box

WORD_SPACE = 0.5  # × a word's height: words closer than this on one line are one text, not two cells


def cuts_lines(slots: Sequence[Slot]) -> bool:
    """Whether the model's columns cut lines of text at a word space in half or more of the rows that
    hold two cells or more (at least two rows): two cells side by side hold, on one line, words a
    word space apart, the first ending in a letter and the second begun in lower case ("Pops all
    variable values at the given" | "depth from the stack."). Why: a region of running text (an API
    entry's sentence and its parameter list) read as a grid cuts each line at the same x, wherever
    its words fall; cells of a table set one space apart hold figures or names, not a phrase's middle."""
    rows: dict[int, list[Slot]] = collections.defaultdict(list)
    for sl in slots:
        if sl.words:
            rows[sl.row].append(sl)
    wide = [sorted(r, key=lambda sl: sl.col) for r in rows.values() if len(r) >= 2]
    cut = sum(1 for r in wide if any(_cut_between(a, b) for a, b in pairwise(r)))
    return len(wide) >= 2 and cut >= 0.5 * len(wide)


def _cut_between(left: Slot, right: Slot) -> bool:
    """Whether a word of ``right`` begun in lower case stands a word space after a word of ``left``
    that ends in a letter, on the same line (not a figure before its unit: "1" | "years")."""
    for (a, before), (b, text) in itertools.product(left.words, right.words):
        height = min(a[3] - a[1], b[3] - b[1])
        if (
            text[:1].islower()
            and before[-1:].isalpha()
            and vertical_overlap(a, b) >= 0.5
            and 0 <= b[0] - a[2] < WORD_SPACE * height
        ):
            return True
    return False


def bullets_first(slots: Sequence[Slot]) -> bool:
    """Whether the first column holds only bullet glyphs: a bulleted list, not a table."""
    first = [" ".join(t for _, t in s.words) for s in slots if s.col == 0 and s.words]
    return len(first) >= 2 and all(BULLET_CELL.match(t.strip()) for t in first)


def columns_from_strips(slots: list[Slot], body: float) -> list[Slot]:
    """The model's rows cut into columns at the white strips its words leave (a key column far from
    its values, which the model reads as one column): a strip is an x-range at least a body height
    wide that no word of any row touches."""
    words = [w for sl in slots for w in sl.words]
    if not words:
        return slots
    spans = sorted((w[0][0], w[0][2]) for w in words)
    cuts: list[float] = []
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= body:
            cuts.append((reach + x0) / 2)
        reach = max(reach, x1)
    if not cuts:
        return slots
    out: list[Slot] = []
    for sl in slots:
        parts: dict[int, Slot] = {}
        for w in sl.words:
            col = sum(1 for c in cuts if (w[0][0] + w[0][2]) / 2 > c)
            parts.setdefault(col, Slot(sl.row, col, header=sl.header, box=sl.box)).words.append(w)
        out += [parts[c] if c in parts else Slot(sl.row, c, header=sl.header) for c in range(len(cuts) + 1)]
    return out


def split_columns(slots: list[Slot], body: float) -> list[Slot]:
    """A model column whose words leave a white strip down all its rows is two columns.

    Why: the structure model sees the table scaled to 488 px, where two narrow columns of figures set
    close together ("Freq. Percent", "15.9 21") look like one; the text layer's words say where each
    stands. A strip is an x-range at least a body height wide that no word of the column's own cells
    touches, with words on both sides of it in at least two rows and in most of the column's filled
    cells, or a narrower one with words on both sides in every filled cell down many rows
    (``_strip_in_column``). Cells spanning the column span the new one too."""
    n_cols = max((s.col + s.colspan for s in slots), default=0)
    c = 0
    while c < n_cols:
        cut = _strip_in_column(slots, c, body)
        if cut is None:
            c += 1
            continue
        out: list[Slot] = []
        for s in slots:
            if s.col == c and s.colspan == 1:
                left = [w for w in s.words if (w[0][0] + w[0][2]) / 2 < cut]
                right = [w for w in s.words if (w[0][0] + w[0][2]) / 2 >= cut]
                s.words = left
                out += [s, Slot(s.row, c + 1, s.rowspan, 1, s.header, s.box, right)]
                continue
            if s.col > c:
                s.col += 1
            elif s.col + s.colspan > c:
                s.colspan += 1
            out.append(s)
        slots = out
        n_cols += 1
    return slots


def split_spans(slots: list[Slot], body: float) -> list[Slot]:
    """A cell the model spans over several columns that holds one line of pieces a cell gap apart,
    each over other columns of those, is a cell a piece: "Measure" and "Description", each centred
    over its column on a header bar the model read as one cell; "Nitrate (mg/l)" and "Phosphate
    (mg/l)", each set from the first of its two columns, or three dates each centred over a "$000's"
    and a "%" column, read as one head over all. A piece stands over the columns it reaches well into
    (``_covered``), or over the run of columns it is centred on (``centred_span``). Columns no piece
    stands over get an empty cell; a cell of several lines (a title wrapped across the table) stays."""
    from ocr_app.structure.word_columns import centred_span

    edges: dict[int, tuple[float, float]] = {}
    for s in slots:
        if s.colspan == 1 and s.words:
            a, b = min(w[0][0] for w in s.words), max(w[0][2] for w in s.words)
            lo, hi = edges.get(s.col, (a, b))
            edges[s.col] = (min(lo, a), max(hi, b))
    out: list[Slot] = []
    for s in slots:
        # Columns with words of their own; a column of none (the model's ghost column beside the
        # table) stands under no piece and gets an empty cell, dropped with its column later.
        cols = [c for c in range(s.col, s.col + s.colspan) if c in edges]
        if s.colspan < 2 or len(cols) < 2 or len(s.words) < 2 or not _one_line(s.words):
            out.append(s)
            continue
        pieces = word_runs(sorted(s.words, key=lambda w: w[0][0]), word_height(s.words))
        bounds = [
            (
                (edges[cols[i - 1]][1] + edges[c][0]) / 2 if i > 0 else float("-inf"),
                (edges[c][1] + edges[cols[i + 1]][0]) / 2 if i + 1 < len(cols) else float("inf"),
            )
            for i, c in enumerate(cols)
        ]
        spans = [_covered(p[0][0][0], p[-1][0][2], bounds) for p in pieces]
        if len(pieces) < 2 or any(not c for c in spans) or any(a[-1] >= b[0] for a, b in pairwise(spans)):
            out.append(s)
            continue
        extents = [list(edges[c]) for c in cols]
        for k, p in enumerate(pieces):
            others = {c for j, sp in enumerate(spans) if j != k for c in sp}
            centred = centred_span(p[0][0][0], p[-1][0][2], extents, body, others)
            if centred is not None and centred[0] <= spans[k][0] and spans[k][-1] <= centred[1]:
                spans[k] = list(range(centred[0], centred[1] + 1))
        at = {cols[c[0]]: (cols[c[-1]] + 1 - cols[c[0]], p) for c, p in zip(spans, pieces, strict=True)}
        k = s.col
        while k < s.col + s.colspan:
            width, words = at.get(k, (1, []))
            out.append(Slot(s.row, k, s.rowspan, width, s.header, s.box, list(words)))
            k += width
    return out


def _one_line(words: list[tuple[Box, str]]) -> bool:
    """Whether words stand on one line: their middles within half a word's height of each other."""
    mids = [(w[0][1] + w[0][3]) / 2 for w in words]
    return max(mids) - min(mids) <= 0.5 * word_height(words)


SPAN_SHARE = 0.25  # a piece stands over a column when this share of its width lies within the column


def _covered(a: float, b: float, bounds: list[tuple[float, float]]) -> list[int]:
    """The columns (indices into ``bounds``) that a piece from ``a`` to ``b`` stands over."""
    return [
        k for k, (lo, hi) in enumerate(bounds) if min(b, hi) - max(a, lo) >= SPAN_SHARE * max(b - a, 1e-6)
    ]


def empty_columns(slots: Sequence[Slot]) -> list[int]:
    """Columns with no word in any cell of their own (cells spanning them aside).

    Why: a spacer column between groups of figures (the white gap between "Revenue 2023 2022" and
    "Operating profit 2023 2022", where each group has its own rule) is a column to the model, and it
    came out as a column of empty cells through the whole table (``drop_columns``)."""
    n_cols = max((s.col + s.colspan for s in slots), default=0)
    own: dict[int, list[Slot]] = {}
    for s in slots:
        if s.colspan == 1:
            own.setdefault(s.col, []).append(s)
    return [c for c in range(n_cols) if c in own and not any(s.words for s in own[c])]


def drop_columns(slots: list[Slot], columns: Sequence[int]) -> list[Slot]:
    """``slots`` without ``columns``: their own cells gone, cells spanning them spanning one less each."""
    return drop_lines(slots, columns, "col", "colspan")


def fill_empty_spans(slots: list[Slot]) -> list[Slot]:
    """An empty spanning header cell takes back its label from the first line of a cell below it.

    Why: the words are placed by rows fitted to the model's rows, and a header row that holds only a
    spanning label ("TEDs" over simple / complex / all) has a single cell to fit; its line then went to
    the row below and became the first line of the sub-header under it ("TEDs complex"), leaving the
    spanning cell empty. The model's own boxes say where it belongs: that line lies inside the
    spanning cell's box (at least half its height) and not in the box of the cell that got it, and
    within the spanning cell's columns."""
    for s in slots:
        if s.colspan < 2 or s.rowspan != 1 or s.words or s.box is None:
            continue
        for c in slots:
            if c.row != s.row + 1 or not s.col <= c.col < s.col + s.colspan or c.box is None:
                continue
            bands = word_bands(c.words)
            if len(bands) < 2:
                continue
            top = bands[0][1]
            y0, y1 = min(w[0][1] for w in top), max(w[0][3] for w in top)
            height = max(y1 - y0, 1e-6)
            inside = min(y1, s.box[3]) - max(y0, s.box[1])
            own = min(y1, c.box[3]) - max(y0, c.box[1])
            if inside < 0.5 * height or own >= inside:
                continue
            if not all(s.box[0] <= (w[0][0] + w[0][2]) / 2 <= s.box[2] for w in top):
                continue
            s.words = s.words + top
            c.words = [w for m, ws in bands[1:] for w in ws]
    return slots


def centre_spans(slots: list[Slot], body: float) -> list[Slot]:
    """A header cell the model spans over columns its text is not centred over takes those it is.

    Why: over a header band on one fill, or with no rule under a spanning cell, the model's span
    follows the ink it sees: "Results" centred over 2020–2022 came out over the columns its text
    overlaps, or over the whole band. A reader goes by the centre (``word_columns.centred_span``,
    the columns placed by their words in single-column cells). Only above the body (the first row
    holding a figure), where the model's own span is not centred on the text, over columns that the
    row below fills with cells of their own and that nothing else in the cell's row stands over."""
    from ocr_app.structure.word_columns import CENTRED, centred_span, column_bounds

    n_cols = max((s.col + s.colspan for s in slots), default=0)
    body_at = min((s.row for s in slots if is_figure(s)), default=0)
    ink: dict[int, list[float]] = {}
    for s in slots:
        if s.colspan == 1:
            for w in s.words:
                ink.setdefault(s.col, []).extend((w[0][0], w[0][2]))
    if body_at < 1 or len(ink) != n_cols:
        return slots
    cols = [(min(ink[c]), max(ink[c])) for c in range(n_cols)]
    bounds = column_bounds(cols)
    for s in [s for s in slots if s.row < body_at and s.colspan >= 2 and s.rowspan == 1 and s.words]:
        x0, x1 = min(w[0][0] for w in s.words), max(w[0][2] for w in s.words)
        if abs((bounds[s.col] + bounds[s.col + s.colspan]) / 2 - (x0 + x1) / 2) <= CENTRED * body:
            continue  # the model's span is centred on the text
        row = [o for o in slots if o is not s and o.row <= s.row < o.row + o.rowspan]
        blocked = {c for o in row if o.words or o.rowspan > 1 for c in range(o.col, o.col + o.colspan)}
        span = centred_span(x0, x1, cols, body, blocked)
        if span is None:
            continue
        a, b = span
        under = {
            o.col for o in slots if o.row == s.row + 1 and o.colspan == 1 and o.words and a <= o.col <= b
        }
        if len(under) < 2:
            continue
        slots = _respan(slots, s, row, a, b)
    return slots
    cols = [(min(ink[c]), max(ink[c])) for c in range(n_cols)]
    for s in [s for s in slots if s.row < body_at and s.colspan >= 2 and s.rowspan == 1 and s.words]:
        height = min(w[0][3] - w[0][1] for w in s.words)
        span = centred_span(min(w[0][0] for w in s.words), max(w[0][2] for w in s.words), cols, 0.25 * height)
        if span is None or span == (s.col, s.col + s.colspan - 1):
            continue
        a, b = span
        row = [o for o in slots if o is not s and o.row <= s.row < o.row + o.rowspan]
        under = {
            o.col for o in slots if o.row == s.row + 1 and o.colspan == 1 and o.words and a <= o.col <= b
        }
        if len(under) < 2 or any(
            o.words or o.rowspan > 1 for o in row if o.col <= b and a < o.col + o.colspan
        ):
            continue
        slots = _respan(slots, s, row, a, b)
    return slots


def _respan(slots: list[Slot], s: Slot, row: list[Slot], a: int, b: int) -> list[Slot]:
    """``slots`` with ``s`` spanning columns ``a``..``b``: the empty slots of its row there go, the
    columns it leaves get empty slots of their own."""
    gone = {id(o) for o in row if o.col <= b and a < o.col + o.colspan}
    freed = [c for c in range(s.col, s.col + s.colspan) if not a <= c <= b]
    slots = [o for o in slots if id(o) not in gone]
    slots += [Slot(s.row, c, header=s.header) for c in freed]
    s.col, s.colspan = a, b - a + 1
    return slots


COLUMN_REACH = 0.25  # × the line height: how far past a column's words a word of it may stand


def merge_interleaved_columns(slots: list[Slot]) -> None:
    """Words of a headless model column that stand inside its neighbour's column, in rows where the
    neighbour is empty, go to the neighbour's cells (the emptied column is dropped at the end).

    Why: the model sometimes gives a table one column too many and fits the last rows' figures to
    it (ICDAR's eu-023: "3.1%" and "1.0%" under "Often" came out in a fifth, headless column). Two
    columns that never both hold words in one row, whose words stand over the same stretch of the
    page, are one column; a column with a head of its own, or one beside it, is left alone."""
    cells = {(s.row, s.col): s for s in slots if s.colspan == 1 and s.rowspan == 1}
    body_at = body_start(slots)
    n_cols = max((s.col + s.colspan for s in slots), default=0)
    for c in range(n_cols - 1):
        for sparse, dense in ((c + 1, c), (c, c + 1)):
            moved = [s for (r, k), s in cells.items() if k == sparse and s.words]
            kept = [s for (r, k), s in cells.items() if k == dense and s.words and r >= body_at]
            if not moved or len(kept) < 2 * len(moved) or any(s.row < body_at for s in moved):
                continue
            if any((s.row, dense) not in cells or cells[(s.row, dense)].words for s in moved):
                continue
            height = min(w[0][3] - w[0][1] for s in kept for w in s.words)
            x0 = min(w[0][0] for s in kept for w in s.words) - COLUMN_REACH * height
            x1 = max(w[0][2] for s in kept for w in s.words) + COLUMN_REACH * height
            if all(x0 <= w[0][0] and w[0][2] <= x1 for s in moved for w in s.words):
                for s in moved:
                    cells[(s.row, dense)].words = s.words
                    s.words = []
                break


def merge_flowing_columns(slots: list[Slot]) -> list[Slot]:
    """Two model columns under one spanning header that the words read across are one column.

    Why: the model sometimes cuts a column of labels in two ("Under | 1 year", "12 - | 19 years")
    under a header cell spanning both. A column boundary lines something up; here every row's text
    runs on across it (less than a cell gap: one run of words), and neither the left part's right
    edges nor the right part's edges line up, so the cut is not a column of the page. The same holds
    for a right part with no head of its own (a slide's "Theme" over "Faster | start-up", "Tables |
    in scans"), where the edges must be straighter to count as lined up (``HEADLESS_EDGE``)."""
    n_cols = max((s.col + s.colspan for s in slots), default=0)
    c = 0
    while c + 1 < n_cols:
        if not _flows_across(slots, c):
            c += 1
            continue
        out: list[Slot] = []
        by_row = {s.row: s for s in slots if s.col == c and s.colspan == 1}
        for s in slots:
            if s.col == c + 1 and s.colspan == 1:
                by_row[s.row].words += s.words
                continue
            if s.col > c + 1:
                s.col -= 1
            elif s.col <= c < c + 1 < s.col + s.colspan:
                s.colspan -= 1
            out.append(s)
        slots = out
        n_cols -= 1
    return slots


HEADLESS_EDGE = 0.1  # × the line height: how straight a headless column's edges must be to be one


def _flows_across(slots: Sequence[Slot], c: int) -> bool:
    left = {s.row: s for s in slots if s.col == c and s.colspan == 1}
    right = {s.row: s for s in slots if s.col == c + 1 and s.colspan == 1}
    if any(s.col == c + 1 and s.colspan > 1 for s in slots) or set(left) != set(right):
        return False
    if any(left[r].rowspan != right[r].rowspan for r in left):
        return False
    spanned = any(s.colspan > 1 and s.col <= c and c + 1 < s.col + s.colspan and s.words for s in slots)
    # or no head of its own: the top row's cell holds words on the left and none on the right
    top = min(left, default=0)
    headless = bool(left) and bool(left[top].words) and not right[top].words
    if not (spanned or headless):
        return False
    pairs = [(left[r].words, right[r].words) for r in left if left[r].words and right[r].words]
    if len(pairs) < 3:
        return False
    height = min(w[0][3] - w[0][1] for a, b in pairs for w in a + b)
    if any(min(w[0][0] for w in b) - max(w[0][2] for w in a) >= 0.6 * height for a, b in pairs):
        return False
    # Edges a tab stop sets line up to the point; a headless cut is believed only then. Under a
    # spanning head, half a line's height.
    tolerance = (0.5 if spanned else HEADLESS_EDGE) * height

    def lined_up(values: list[float]) -> bool:
        return max(values) - min(values) < tolerance

    return not (
        lined_up([max(w[0][2] for w in a) for a, _ in pairs])
        or lined_up([min(w[0][0] for w in b) for _, b in pairs])
        or lined_up([max(w[0][2] for w in b) for _, b in pairs])
    )


def _strip_in_column(slots: Sequence[Slot], c: int, body: float) -> float | None:
    """The middle of the widest white strip down column ``c`` (see ``split_columns``), or None."""
    # A list's bullet glyphs stand a tab before their words: that gap parts no columns.
    words = {id(s): [w for w in s.words if not LIST_MARK.match(w[1])] for s in slots}
    cells = [s for s in slots if s.col == c and s.colspan == 1 and words[id(s)]]
    if len(cells) < 3:
        return None
    spans = sorted((w[0][0], w[0][2]) for s in cells for w in words[id(s)])
    best: tuple[float, float] | None = None
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= NARROW_STRIP * body and (best is None or x0 - reach > best[1] - best[0]):
            best = (reach, x0)
        reach = max(reach, x1)
    if best is None:
        return None
    cut = (best[0] + best[1]) / 2
    both = sum(
        1
        for s in cells
        if any((w[0][0] + w[0][2]) / 2 < cut for w in words[id(s)])
        and any((w[0][0] + w[0][2]) / 2 >= cut for w in words[id(s)])
    )
    if best[1] - best[0] >= body:
        return cut if both >= 2 and both * 2 > len(cells) else None
    # A strip narrower than a body height (two cells' padding: a flush-right "Score" column right
    # before a flush-left "Outcome"): only when every filled cell down many rows has words on both
    # sides of it. A space between words is narrower still.
    return cut if len(cells) >= NARROW_ROWS and both == len(cells) else None


NARROW_STRIP = 0.45  # × body: the narrowest white strip that may part two columns of one model column
NARROW_ROWS = 5  # a strip narrower than a body height parts columns only down this many rows or more
