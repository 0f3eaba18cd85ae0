"""The structure model's cells, and the page's words placed in them.

Why: SLANet-plus gives a grid of cells (structure tokens and a box each), but its text would be OCR;
each cell gets the words the engine already has, by where they stand on the page, and the grid is
judged a table or not by how its filled cells lie. The passes over the model's rows (``slot_rows``)
and columns (``slot_columns``), the checks of a region's lines (``table_bounds``), the comparison with
the rules' reading (``table_verdict``) and the reader (``learned_tables``) share this vocabulary.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ocr_app.structure.lines import group_rows
from ocr_app.structure.paragraphs import GLYPH_BULLETS
from ocr_app.structure.table_html import Cell, join_cell_lines

if TYPE_CHECKING:
    from ocr_app.schema import Box
    from ocr_app.structure.lines import TextLine

MAX_CELL_WORDS = 40  # a "cell" holding more words than this is a paragraph: the region is prose
# The share of the grid's area its filled cells must cover, as the rules ask of a ruled grid
# (``engines.page_tables.MIN_TABLE_FILL``): a chart's gridlines or a diagram's boxes, read as a grid,
# leave most of it empty (ICDAR 2013: three charts at 0.12–0.30 and two stray readings beside real
# tables at 0.25 and 0.37, all false tables; the readings of its tables: 0.6 and up).
MIN_FILL = 0.4
MAX_BAR_SHARE = 0.5  # of a table's filled rows, at most this many hold one cell alone (``is_grid``)
_SPAN = re.compile(r'(colspan|rowspan)="?(\d+)"?')


@dataclass
class Slot:
    row: int
    col: int
    rowspan: int = 1
    colspan: int = 1
    header: bool = False
    box: Box | None = None  # in page pixels
    words: list[tuple[Box, str]] = field(default_factory=list)


def parse_tokens(tokens: Sequence[str]) -> list[Slot]:
    """Structure tokens → cells at grid positions (rowspans of rows above skipped, as a browser does)."""
    slots: list[Slot] = []
    taken: set[tuple[int, int]] = set()
    row, col, header = -1, 0, False
    pending: Slot | None = None
    for tok in tokens:
        if tok == "<thead>":
            header = True
        elif tok == "</thead>":
            header = False
        elif tok == "<tr>":
            row, col = row + 1, 0
        elif tok in ("<td>", "<td></td>", "<td"):
            if row < 0:
                row = 0
            pending = Slot(row, 0, header=header)
            if tok == "<td></td>":
                col = _place(pending, col, taken)
                slots.append(pending)
                pending = None
        elif pending is not None and _SPAN.search(tok):
            name, n = _SPAN.search(tok).groups()
            setattr(pending, name, max(1, min(int(n), 50)))
        elif tok == "</td>" and pending is not None:
            col = _place(pending, col, taken)
            slots.append(pending)
            pending = None
    return slots


def _place(slot: Slot, col: int, taken: set[tuple[int, int]]) -> int:
    while (slot.row, col) in taken:
        col += 1
    slot.col = col
    taken.update(
        (r, c) for r in range(slot.row, slot.row + slot.rowspan) for c in range(col, col + slot.colspan)
    )
    return col + slot.colspan


def line_words(ln: TextLine) -> list[tuple[Box, str]]:
    """A line's words with their boxes (the line itself when the engine gave no word x-ranges)."""
    tokens = ln.text.split()
    if ln.words and len(ln.words) == len(tokens):
        return [((x0, ln.box[1], x1, ln.box[3]), t) for (x0, x1), t in zip(ln.words, tokens, strict=True)]
    return [(ln.box, ln.text)]


def box_overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0.0) * max(h, 0.0)


def assign_words(slots: list[Slot], lines: Sequence[TextLine]) -> None:
    """Each word to a cell: its text row to the model's row, then the cell of that row it overlaps most.

    Why rows first: the model sees a table scaled to 488 px, so on a table of many rows its cell boxes
    drift up or down by a row while their columns stay put. The rows of words (exact on a text layer)
    are matched to the model's rows by their middles after a least-squares fit of the model's scale
    and offset, and only then is each word placed in a column.
    """

    boxed = [s for s in slots if s.box is not None]
    if not boxed:
        return
    n_rows = max(s.row + s.rowspan for s in boxed)
    middles: dict[int, list[float]] = {}
    tops: dict[int, list[float]] = {}
    bottoms: dict[int, list[float]] = {}
    for s in boxed:
        if s.rowspan == 1:
            middles.setdefault(s.row, []).append((s.box[1] + s.box[3]) / 2)
            tops.setdefault(s.row, []).append(s.box[1])
            bottoms.setdefault(s.row, []).append(s.box[3])
    _straighten(boxed)
    rows = sorted(middles)
    centre = {r: sorted(v)[len(v) // 2] for r, v in middles.items()}
    extent = {r: (sorted(tops[r])[len(tops[r]) // 2], sorted(bottoms[r])[len(bottoms[r]) // 2]) for r in rows}
    bands = [
        (sum((i.box[1] + i.box[3]) / 2 for i in b.items) / len(b.items), b.items) for b in group_rows(lines)
    ]
    if not rows:
        rows, centre = list(range(n_rows)), {r: 0.0 for r in range(n_rows)}
    a, b = 1.0, 0.0
    for _ in range(3):
        pairs = [(centre[_nearest(rows, centre, a, b, y)], y) for y, _ in bands]
        a, b = _fit(pairs, a, b)
    for y, items in bands:
        # A band inside a row's extent belongs to it (the lines of a tall wrapped row lie far from
        # its middle, nearer a neighbour's); else the nearest row.
        inside = [r for r in rows if r in extent and a * extent[r][0] + b <= y <= a * extent[r][1] + b]
        r = _nearest(inside or rows, centre, a, b, y)
        here = [s for s in boxed if s.row <= r < s.row + s.rowspan] or boxed
        runs = [run for ln in items for run in word_runs(line_words(ln), ln.box[3] - ln.box[1])]
        for run in _bullets_to_text(runs):
            _place_run(run, here)


EMPTY_SHARE = 0.7  # a column with no word in at least this share of its body rows is (nearly) empty
REFILL_SHARE = 0.8  # of those rows, the share whose neighbour holds words inside the column's box


def refill_empty_columns(slots: list[Slot]) -> None:
    """A column with a head but (nearly) no word in its body rows gets back the words its neighbour
    took from inside its box: in most of its empty rows, some of the neighbour's words stand within
    the empty column's x-range.

    Why: a column of short figures set flush right close to the next column's words ("1.0 Approved",
    a narrow "Score" before "Outcome") comes as one run of words, and a run goes to the cell it
    overlaps most; every score then landed in the outcome cells beside an empty column. One row alone
    proves nothing (a long cell spills over a model box edge), a whole column does."""
    cells = [s for s in slots if s.box is not None and s.colspan == 1 and s.rowspan == 1]
    body_at = min((s.row for s in slots if is_figure(s)), default=None)
    if body_at is None or body_at < 1:
        return
    by_col: dict[int, dict[int, Slot]] = {}
    for s in cells:
        by_col.setdefault(s.col, {})[s.row] = s
    for c, column in by_col.items():
        body = [s for r, s in column.items() if r >= body_at]
        empty = [s for s in body if not s.words]
        if len(empty) < EMPTY_SHARE * len(body) or not any(s.words for r, s in column.items() if r < body_at):
            continue
        x0 = statistics.median(s.box[0] for s in column.values())
        x1 = statistics.median(s.box[2] for s in column.values())
        for side in (c + 1, c - 1):
            near = by_col.get(side, {})
            moves = {}
            for s in empty:
                other = near.get(s.row)
                if other is None or not other.words:
                    continue
                inside = [w for w in other.words if x0 <= (w[0][0] + w[0][2]) / 2 <= x1]
                if inside and len(inside) < len(other.words):
                    moves[s.row] = inside
            if len(moves) >= REFILL_SHARE * len(empty):
                for s in empty:
                    if s.row in moves:
                        s.words = moves[s.row]
                        other = near[s.row]
                        other.words = [w for w in other.words if w not in moves[s.row]]
                break


def _straighten(slots: list[Slot]) -> None:
    """Each single-column cell's x-range set to its column's (the medians of the column's cells).

    Why: a table's columns are straight, but the model's boxes for one row may drift sideways (a
    header row over faint rules: its first cell reaching over the second column's right-aligned
    figure, so "Region 2019" became one cell); the column's other rows say where it stands."""
    cols: dict[int, list[Slot]] = {}
    for s in slots:
        if s.colspan == 1 and s.box is not None:
            cols.setdefault(s.col, []).append(s)
    for cells in cols.values():
        x0 = sorted(c.box[0] for c in cells)[len(cells) // 2]
        x1 = sorted(c.box[2] for c in cells)[len(cells) // 2]
        for c in cells:
            c.box = (x0, c.box[1], x1, c.box[3])


def word_runs(words: list[tuple[Box, str]], height: float) -> list[list[tuple[Box, str]]]:
    """A line's words in runs: words closer than a cell gap (0.6 × the line's height) stay together."""
    runs: list[list[tuple[Box, str]]] = []
    for w in words:
        if runs and w[0][0] - runs[-1][-1][0][2] < 0.6 * height:
            runs[-1].append(w)
        else:
            runs.append([w])
    return runs


def _bullets_to_text(runs: list[list[tuple[Box, str]]]) -> list[list[tuple[Box, str]]]:
    """A run of bullet glyphs joins the text run that follows it on the row (within 3 heights).

    Why: a PDF often sets a bullet in a symbol font, a separate line a tab's width before its text,
    so it would become a cell of its own (a column of "•" beside the text); its box is set to its
    text's band so it stays at the head of that line in the cell."""
    runs = sorted(runs, key=lambda r: r[0][0][0])
    out: list[list[tuple[Box, str]]] = []
    k = 0
    while k < len(runs):
        run = runs[k]
        if k + 1 < len(runs) and all(BULLET_CELL.match(t) for _, t in run):
            nxt = runs[k + 1]
            first = nxt[0][0]
            height = max(first[3] - first[1], 1e-6)
            if 0 <= first[0] - run[-1][0][2] <= 3 * height:
                out.append([((b[0], first[1], b[2], first[3]), t) for b, t in run] + nxt)
                k += 2
                continue
        out.append(run)
        k += 1
    return out


def _place_run(run: list[tuple[Box, str]], cells: list[Slot]) -> None:
    """A run of words into the cell it overlaps most; word by word when it reaches well into two
    cells (cells set one space apart)."""
    box = (run[0][0][0], run[0][0][1], run[-1][0][2], run[-1][0][3])
    width = max(box[2] - box[0], 1e-6)
    shares = sorted(((x_overlap(box, s.box) / width, k) for k, s in enumerate(cells)), reverse=True)
    if len(run) > 1 and len(shares) > 1 and shares[1][0] >= 0.3:
        for w in run:
            _place_run([w], cells)
        return
    if shares[0][0] > 0:
        best = cells[shares[0][1]]
    else:
        cx = (box[0] + box[2]) / 2
        best = min(cells, key=lambda s: min(abs(cx - s.box[0]), abs(cx - s.box[2])))
    best.words.extend(run)


def _nearest(rows: list[int], centre: dict[int, float], a: float, b: float, y: float) -> int:
    return min(rows, key=lambda r: abs(a * centre[r] + b - y))


def _fit(pairs: list[tuple[float, float]], a: float, b: float) -> tuple[float, float]:
    """Least squares ``y ≈ a·x + b`` (only an offset with fewer than two distinct ``x``; a scale far
    from 1 is refused: the model's rows are then read as they are)."""
    if not pairs:
        return a, b
    n = len(pairs)
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    var = sum((x - mx) ** 2 for x, _ in pairs)
    if var <= 1e-6:
        return 1.0, my - mx
    slope = sum((x - mx) * (y - my) for x, y in pairs) / var
    if not 0.8 <= slope <= 1.25:
        return 1.0, my - mx
    return slope, my - slope * mx


def x_overlap(a: Box, b: Box) -> float:
    return min(a[2], b[2]) - max(a[0], b[0])


def cell_text(words: list[tuple[Box, str]], join: Callable[[str, str], str] | None) -> str:
    """Words of one cell → its text, line by line (words whose middles share a band are one line)."""
    lines: list[list[tuple[Box, str]]] = []
    for w in sorted(words, key=lambda w: ((w[0][1] + w[0][3]) / 2, w[0][0])):
        mid = (w[0][1] + w[0][3]) / 2
        if lines and abs(mid - (lines[-1][0][0][1] + lines[-1][0][0][3]) / 2) <= 0.5 * (w[0][3] - w[0][1]):
            lines[-1].append(w)
        else:
            lines.append([w])
    texts = [" ".join(t for _, t in sorted(line, key=lambda w: w[0][0])) for line in lines]
    return join_cell_lines(texts, join)


def is_grid(slots: Sequence[Slot]) -> bool:
    """Whether the filled cells make a table: two or more rows with two or more filled cells, most
    of the columns used, most of the grid filled (``MIN_FILL``), no cell holding a paragraph, and at
    most ``MAX_BAR_SHARE`` of the filled rows one cell alone: across every column, or, in a grid of two
    columns, in the first. Why the last: a region of text (an API reference's entries: a title, a
    sentence, a listing, one under another) read as one wide cell a row fills the grid, though nothing
    in it stands side by side (libxslt's reference); read as two columns, the second empty but for a
    macro's value here and there (libtasn1's), it is no grid either. A table's group labels are a few
    of its rows."""
    filled = [s for s in slots if s.words]
    if not filled:
        return False
    if max(len(s.words) for s in filled) > MAX_CELL_WORDS:
        return False
    rows = max(s.row + s.rowspan for s in slots)
    cols = max(s.col + s.colspan for s in slots)
    if sum(s.rowspan * s.colspan for s in filled) < MIN_FILL * rows * cols:
        return False
    per_row: dict[int, int] = {}
    for s in filled:
        per_row[s.row] = per_row.get(s.row, 0) + 1
    alone = [s for s in filled if per_row[s.row] == 1]
    bars = sum(1 for s in alone if s.colspan >= cols or (s.col == 0 and cols <= 2))
    if bars > MAX_BAR_SHARE * len(per_row):
        return False
    rows_with_two = sum(1 for n in per_row.values() if n >= 2)
    used = {c for s in filled for c in range(s.col, s.col + s.colspan)}
    return rows_with_two >= 2 and len(used) >= 2


BULLET_CELL = re.compile(r"^[•●○◦▪▫■□‣⁃\-–—*·]$")
LIST_MARK = re.compile(rf"^[{re.escape(GLYPH_BULLETS)}]$")  # no dashes: "–" is a nil figure in a column


def word_height(words: list[tuple[Box, str]]) -> float:
    return statistics.median(w[0][3] - w[0][1] for w in words)


FIGURE = re.compile(r"^[\d.,:;%*+\-–—()$€£/<>=~ ]+$")


def is_figure(s: Slot) -> bool:
    text = " ".join(t for _, t in s.words)
    return bool(text) and any(ch.isdigit() for ch in text) and bool(FIGURE.match(text))


def drop_lines(slots: list[Slot], lines: Sequence[int], start: str, span: str) -> list[Slot]:
    """``slots`` without the grid's columns (``start`` "col", ``span`` "colspan") or rows ("row",
    "rowspan") in ``lines``: their own cells gone, cells spanning them spanning one less each."""
    for k in sorted(lines, reverse=True):
        kept = []
        for s in slots:
            at, width = getattr(s, start), getattr(s, span)
            if at == k and width == 1:
                continue
            if at <= k < at + width:
                setattr(s, span, width - 1)
            elif at > k:
                setattr(s, start, at - 1)
            kept.append(s)
        slots = kept
    return slots


def body_start(slots: Sequence[Slot]) -> int:
    """The first row below the model's header rows (0 without a header)."""
    head = {s.row for s in slots if s.header}
    return max(head) + 1 if head else 0


def word_bands(words: list[tuple[Box, str]]) -> list[tuple[float, list[tuple[Box, str]]]]:
    """A cell's words in lines: (middle, words), top to bottom."""
    out: list[tuple[float, list[tuple[Box, str]]]] = []
    for w in sorted(words, key=lambda w: (w[0][1] + w[0][3]) / 2):
        mid = (w[0][1] + w[0][3]) / 2
        if out and abs(mid - out[-1][0]) <= 0.5 * (w[0][3] - w[0][1]):
            out[-1][1].append(w)
        else:
            out.append((mid, [w]))
    return out


def shape(rows: Sequence[Sequence[Cell]]) -> tuple[int, int]:
    """Rows and columns of a table (a row's width counts its cells' colspans)."""
    return len(rows), max((sum(c.colspan for c in row) for row in rows), default=0)


def spans(rows: Sequence[Sequence[Cell]]) -> int:
    """The cells of a reading that span more than one column or row."""
    return sum(1 for row in rows for c in row if c.colspan > 1 or c.rowspan > 1)
