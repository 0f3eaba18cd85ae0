"""Tables read by a learned structure model, their cells filled with the page's own words.

Why: the structure model (``table_model``, SLANet-plus) sees rows without rules, wrapped cells and
spanning headers that rules over word positions miss, but its text would be OCR; here the cells get
the words the engine already has (the text layer's on born-digital pages, the light engine's on scans),
placed by where they stand on the page. A region whose predicted cells do not hold those words in a
grid (prose, a list, a figure's labels) is refused: it is not a table.

API: ``read_table(image, box, lines)`` → ``LearnedTable`` or None; ``box`` and the lines' boxes are in
the image's pixels (the page as rendered).
"""

from __future__ import annotations

import collections
import itertools
import logging
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from ocr_app.structure.lines import group_rows, vertical_overlap
from ocr_app.structure.paragraphs import GLYPH_BULLETS
from ocr_app.structure.rule_frames import joined, pieces
from ocr_app.structure.running_text import text_columns
from ocr_app.structure.table_html import NOTE_LEAD, Cell, join_cell_lines

if TYPE_CHECKING:
    from PIL import Image

    from ocr_app.schema import Box
    from ocr_app.structure.docprofile import Rule
    from ocr_app.structure.lines import Row, TextLine
    from ocr_app.structure.table_model import TableStructureModel

logger = logging.getLogger(__name__)

PAD = 0.6  # the crop around a region, in body-text heights: the model wants a little margin
MAX_CELL_WORDS = 40  # a "cell" holding more words than this is a paragraph: the region is prose
# The share of the grid's area its filled cells must cover, as the rules ask of a ruled grid
# (``engines.textlayer.MIN_TABLE_FILL``): a chart's gridlines or a diagram's boxes, read as a grid,
# leave most of it empty (ICDAR 2013: three charts at 0.12–0.30 and two stray readings beside real
# tables at 0.25 and 0.37, all false tables; the readings of its tables: 0.6 and up).
MIN_FILL = 0.4
MAX_BAR_SHARE = 0.5  # of a table's filled rows, at most this many hold one cell alone (``is_grid``)
_SPAN = re.compile(r'(colspan|rowspan)="?(\d+)"?')


@dataclass
class _Slot:
    row: int
    col: int
    rowspan: int = 1
    colspan: int = 1
    header: bool = False
    box: Box | None = None  # in page pixels
    words: list[tuple[Box, str]] = field(default_factory=list)


@dataclass
class LearnedTable:
    box: Box
    rows: list[list[Cell]]
    header_rows: int
    lines: list[TextLine]  # the page's lines this table took
    # the model's reading before its empty columns were dropped: what tells a form's empty boxes
    # (``textlayer._pairs``) and what ``_read_part`` compares with the rules' reading
    as_read: list[list[Cell]] | None = None

    @property
    def read_rows(self) -> list[list[Cell]]:
        return self.rows if self.as_read is None else self.as_read


def parse_tokens(tokens: Sequence[str]) -> list[_Slot]:
    """Structure tokens → cells at grid positions (rowspans of rows above skipped, as a browser does)."""
    slots: list[_Slot] = []
    taken: set[tuple[int, int]] = set()
    row, col, header = -1, 0, False
    pending: _Slot | None = None
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
            pending = _Slot(row, 0, header=header)
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


def _place(slot: _Slot, col: int, taken: set[tuple[int, int]]) -> int:
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


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(w, 0.0) * max(h, 0.0)


def _assign(slots: list[_Slot], lines: Sequence[TextLine]) -> None:
    """Each word to a cell: its text row to the model's row, then the cell of that row it overlaps most.

    Why rows first: the model sees a table scaled to 488 px, so on a table of many rows its cell boxes
    drift up or down by a row while their columns stay put. The rows of words (exact on a text layer)
    are matched to the model's rows by their middles after a least-squares fit of the model's scale
    and offset, and only then is each word placed in a column.
    """
    from ocr_app.structure.lines import group_rows

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
        runs = [run for ln in items for run in _runs(line_words(ln), ln.box[3] - ln.box[1])]
        for run in _bullets_to_text(runs):
            _place_run(run, here)


EMPTY_SHARE = 0.7  # a column with no word in at least this share of its body rows is (nearly) empty
REFILL_SHARE = 0.8  # of those rows, the share whose neighbour holds words inside the column's box


def _refill_empty_columns(slots: list[_Slot]) -> None:
    """A column with a head but (nearly) no word in its body rows gets back the words its neighbour
    took from inside its box: in most of its empty rows, some of the neighbour's words stand within
    the empty column's x-range.

    Why: a column of short figures set flush right close to the next column's words ("1.0 Approved",
    a narrow "Score" before "Outcome") comes as one run of words, and a run goes to the cell it
    overlaps most; every score then landed in the outcome cells beside an empty column. One row alone
    proves nothing (a long cell spills over a model box edge), a whole column does."""
    cells = [s for s in slots if s.box is not None and s.colspan == 1 and s.rowspan == 1]
    body_at = min((s.row for s in slots if _is_figure(s)), default=None)
    if body_at is None or body_at < 1:
        return
    by_col: dict[int, dict[int, _Slot]] = {}
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


def _straighten(slots: list[_Slot]) -> None:
    """Each single-column cell's x-range set to its column's (the medians of the column's cells).

    Why: a table's columns are straight, but the model's boxes for one row may drift sideways (a
    header row over faint rules: its first cell reaching over the second column's right-aligned
    figure, so "Region 2019" became one cell); the column's other rows say where it stands."""
    cols: dict[int, list[_Slot]] = {}
    for s in slots:
        if s.colspan == 1 and s.box is not None:
            cols.setdefault(s.col, []).append(s)
    for cells in cols.values():
        x0 = sorted(c.box[0] for c in cells)[len(cells) // 2]
        x1 = sorted(c.box[2] for c in cells)[len(cells) // 2]
        for c in cells:
            c.box = (x0, c.box[1], x1, c.box[3])


def _runs(words: list[tuple[Box, str]], height: float) -> list[list[tuple[Box, str]]]:
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
        if k + 1 < len(runs) and all(_BULLET_CELL.match(t) for _, t in run):
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


def _place_run(run: list[tuple[Box, str]], cells: list[_Slot]) -> None:
    """A run of words into the cell it overlaps most; word by word when it reaches well into two
    cells (cells set one space apart)."""
    box = (run[0][0][0], run[0][0][1], run[-1][0][2], run[-1][0][3])
    width = max(box[2] - box[0], 1e-6)
    shares = sorted(((_x_overlap(box, s.box) / width, k) for k, s in enumerate(cells)), reverse=True)
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


def _x_overlap(a: Box, b: Box) -> float:
    return min(a[2], b[2]) - max(a[0], b[0])


def _cell_text(words: list[tuple[Box, str]], join: Callable[[str, str], str] | None) -> str:
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


def is_grid(slots: Sequence[_Slot]) -> bool:
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


def read_table(
    image: Image.Image,
    box: Box,
    lines: Sequence[TextLine],
    *,
    model: TableStructureModel | None = None,
    body: float = 12.0,
    join: Callable[[str, str], str] | None = None,
    cuts: Sequence[Rule] = (),
) -> LearnedTable | None:
    """The table in ``box`` of the page ``image``, its cells filled with the words of ``lines``
    that lie in it; None when the model's cells do not hold those words in a grid. ``cuts``: the
    page's horizontal rules (``x0, y, x1``), which no row of cells runs across (``_split_at_rules``)."""
    from ocr_app.structure.table_model import default_model

    inside = [ln for ln in lines if _centre_in(ln.box, box)]
    if len(inside) < 2:
        return None
    pad = PAD * body
    x0, y0 = max(0.0, box[0] - pad), max(0.0, box[1] - pad)
    x1, y1 = min(float(image.width), box[2] + pad), min(float(image.height), box[3] + pad)
    crop = image.crop((int(x0), int(y0), int(x1 + 0.999), int(y1 + 0.999)))
    structure = (model or default_model()).read(crop)
    slots = parse_tokens(structure.tokens)
    if len(slots) != len(structure.boxes):
        logger.debug("table model: %d cells, %d boxes", len(slots), len(structure.boxes))
    for slot, b in zip(slots, structure.boxes, strict=False):
        slot.box = (b[0] + int(x0), b[1] + int(y0), b[2] + int(x0), b[3] + int(y0))
    _assign(slots, inside)
    slots = _split_at_rules(slots, cuts)
    _refill_empty_columns(slots)
    if slots and all(sl.col == 0 and sl.colspan == 1 for sl in slots):
        slots = _columns_from_strips(slots, body)
    else:
        slots = _merge_flowing_columns(_split_spans(_split_columns(slots, body), body))
        _merge_interleaved_columns(slots)
        slots = _merge_header_rows(_lift_header_tails(_split_keys(_split_merged_rows(slots))), cuts)
        slots = _join_wrapped_rows(_fill_empty_spans(slots), cuts)
        slots = _join_ruled_bands(_join_wrapped_text_rows(_lift_stray_lines(slots), cuts), cuts)
        slots = _centre_spans(slots, body)
    _head_over_rule(slots, cuts)
    if not is_grid(slots) or _bullets_first(slots) or _cuts_lines(slots):
        return None
    slots = _drop_empty_rows(slots)
    rows = _rows(slots, join)
    empty = _empty_columns(slots)
    if not empty:
        return LearnedTable(box, rows, _header_rows(slots), inside)
    slots = _drop_columns(slots, empty)
    return LearnedTable(box, _rows(slots, join), _header_rows(slots), inside, as_read=rows)


_BULLET_CELL = re.compile(r"^[•●○◦▪▫■□‣⁃\-–—*·]$")
_LIST_MARK = re.compile(rf"^[{re.escape(GLYPH_BULLETS)}]$")  # no dashes: "–" is a nil figure in a column


WORD_SPACE = 0.5  # × a word's height: words closer than this on one line are one text, not two cells


def _cuts_lines(slots: Sequence[_Slot]) -> bool:
    """Whether the model's columns cut lines of text at a word space in half or more of the rows that
    hold two cells or more (at least two rows): two cells side by side hold, on one line, words a
    word space apart, the first ending in a letter and the second begun in lower case ("Pops all
    variable values at the given" | "depth from the stack."). Why: a region of running text (an API
    entry's sentence and its parameter list) read as a grid cuts each line at the same x, wherever
    its words fall; cells of a table set one space apart hold figures or names, not a phrase's middle."""
    rows: dict[int, list[_Slot]] = collections.defaultdict(list)
    for sl in slots:
        if sl.words:
            rows[sl.row].append(sl)
    wide = [sorted(r, key=lambda sl: sl.col) for r in rows.values() if len(r) >= 2]
    cut = sum(1 for r in wide if any(_cut_between(a, b) for a, b in pairwise(r)))
    return len(wide) >= 2 and cut >= 0.5 * len(wide)


def _cut_between(left: _Slot, right: _Slot) -> bool:
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


def _bullets_first(slots: Sequence[_Slot]) -> bool:
    """Whether the first column holds only bullet glyphs: a bulleted list, not a table."""
    first = [" ".join(t for _, t in s.words) for s in slots if s.col == 0 and s.words]
    return len(first) >= 2 and all(_BULLET_CELL.match(t.strip()) for t in first)


def _columns_from_strips(slots: list[_Slot], body: float) -> list[_Slot]:
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
    out: list[_Slot] = []
    for sl in slots:
        parts: dict[int, _Slot] = {}
        for w in sl.words:
            col = sum(1 for c in cuts if (w[0][0] + w[0][2]) / 2 > c)
            parts.setdefault(col, _Slot(sl.row, col, header=sl.header, box=sl.box)).words.append(w)
        out += [parts[c] if c in parts else _Slot(sl.row, c, header=sl.header) for c in range(len(cuts) + 1)]
    return out


def _split_columns(slots: list[_Slot], body: float) -> list[_Slot]:
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
        out: list[_Slot] = []
        for s in slots:
            if s.col == c and s.colspan == 1:
                left = [w for w in s.words if (w[0][0] + w[0][2]) / 2 < cut]
                right = [w for w in s.words if (w[0][0] + w[0][2]) / 2 >= cut]
                s.words = left
                out += [s, _Slot(s.row, c + 1, s.rowspan, 1, s.header, s.box, right)]
                continue
            if s.col > c:
                s.col += 1
            elif s.col + s.colspan > c:
                s.colspan += 1
            out.append(s)
        slots = out
        n_cols += 1
    return slots


def _split_spans(slots: list[_Slot], body: float) -> list[_Slot]:
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
    out: list[_Slot] = []
    for s in slots:
        # Columns with words of their own; a column of none (the model's ghost column beside the
        # table) stands under no piece and gets an empty cell, dropped with its column later.
        cols = [c for c in range(s.col, s.col + s.colspan) if c in edges]
        if s.colspan < 2 or len(cols) < 2 or len(s.words) < 2 or not _one_line(s.words):
            out.append(s)
            continue
        pieces = _runs(sorted(s.words, key=lambda w: w[0][0]), _word_height(s.words))
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
            out.append(_Slot(s.row, k, s.rowspan, width, s.header, s.box, list(words)))
            k += width
    return out


def _one_line(words: list[tuple[Box, str]]) -> bool:
    """Whether words stand on one line: their middles within half a word's height of each other."""
    mids = [(w[0][1] + w[0][3]) / 2 for w in words]
    return max(mids) - min(mids) <= 0.5 * _word_height(words)


SPAN_SHARE = 0.25  # a piece stands over a column when this share of its width lies within the column


def _covered(a: float, b: float, bounds: list[tuple[float, float]]) -> list[int]:
    """The columns (indices into ``bounds``) that a piece from ``a`` to ``b`` stands over."""
    return [
        k for k, (lo, hi) in enumerate(bounds) if min(b, hi) - max(a, lo) >= SPAN_SHARE * max(b - a, 1e-6)
    ]


def _word_height(words: list[tuple[Box, str]]) -> float:
    return statistics.median(w[0][3] - w[0][1] for w in words)


_FIGURE = re.compile(r"^[\d.,:;%*+\-–—()$€£/<>=~ ]+$")


def _is_figure(s: _Slot) -> bool:
    text = " ".join(t for _, t in s.words)
    return bool(text) and any(ch.isdigit() for ch in text) and bool(_FIGURE.match(text))


def _merge_header_rows(slots: list[_Slot], cuts: Sequence[Rule] = ()) -> list[_Slot]:
    """Two header rows whose cells stand one over the other, a line apart, are one row of wrapped cells.

    Why: the structure model often cuts a header cell set on two lines ("to air" / "kg/year") into
    two rows; the words say they are one cell each: every filled cell of the upper row over a cell
    of the lower with the same span, whose first line is right under its last (a gap under half a
    line, where rows of a table are set at least a line's padding apart). A cell under an empty one
    is a head set at the header's foot (ICDAR's us-009: "Cost Category" beside two-line heads; us-037's
    "No.") and moves up into it, where the two rows are the table's first or the model's header
    (lower down, figures under empty cells are a row of their own: eu-007). Only above the
    first row that holds a figure (the body); a table of words only (names in a grid, set a line
    apart) has no header to tell from its body and is left alone. Rows with a rule drawn across the
    table between them (``cuts``) are two rows."""
    body_at = min((s.row for s in slots if _is_figure(s)), default=0)  # no figures: no header to tell
    r = 0
    while r + 1 < body_at:
        upper = sorted((s for s in slots if s.row == r and s.words), key=lambda s: s.col)
        lower = sorted((s for s in slots if s.row == r + 1 and s.words), key=lambda s: s.col)
        under = {(s.col, s.colspan): s for s in lower if s.rowspan == 1}
        pairs = [(a, under.get((a.col, a.colspan))) for a in upper]
        # a head under an empty cell (set at the foot of the header, "Cost Category" beside two-line
        # heads) moves up into it: in the table's first two rows, or in the model's header rows
        empty = {(s.col, s.colspan): s for s in slots if s.row == r and s.rowspan == 1 and not s.words}
        extra = [s for s in lower if (s.col, s.colspan) not in {(a.col, a.colspan) for a in upper}]
        if (
            len(upper) >= 2
            and all(b is not None for _, b in pairs)
            and all(s.rowspan == 1 for s in [*upper, *lower])
            and all((s.col, s.colspan) in empty for s in extra)
            and (not extra or r == 0 or r + 1 < _body_start(slots))
            and all(_wrapped(a, b) for a, b in pairs if b is not None)
            and not _ruled_apart({a.col: a for a in upper}, {b.col: b for _, b in pairs if b}, slots, cuts)
        ):
            for a, b in pairs:
                if b is not None:
                    a.words += b.words
            for s in extra:
                empty[s.col, s.colspan].words = s.words
            gone = {id(s) for s in lower}
            kept: list[_Slot] = []
            for s in slots:
                if id(s) in gone or (s.row == r + 1 and not s.words and s.rowspan == 1):
                    continue
                if s.row > r + 1:
                    s.row -= 1
                elif s.row + s.rowspan > r + 1:
                    s.rowspan = max(1, s.rowspan - 1)
                kept.append(s)
            slots = kept
            body_at -= 1
            continue
        r += 1
    return slots


def _join_wrapped_rows(slots: list[_Slot], cuts: Sequence[Rule] = ()) -> list[_Slot]:
    """A body row with no figure whose cells each continue the cell above it is that row's wrapped lines.

    Why: where rows are set without padding, the model cuts a row whose text cells wrap into two
    or more rows (the extra lines of "Timber joists, treated …" a row of their own beside empty
    figure cells). Rows are anchored by their figures, one line a row, on the row's first line
    (top-aligned cells). A row of the body with none joins the row above when that row has some
    (and it has nothing in their columns: values with units under figures are a row), every filled
    cell of it starts right under the last line of the filled cell above (under half a line: line
    spacing, not a row's padding), that line was full (its first word would not have fitted
    there: ``_would_fit``), and it continues a column beyond the first (a lone line of the first
    column may be a group label)."""
    body_at = min((s.row for s in slots if _is_figure(s)), default=None)
    if body_at is None:
        return slots
    r = body_at + 1
    while r < max(s.row + s.rowspan for s in slots):
        lower = {s.col: s for s in slots if s.row == r and s.words}
        upper = {s.col: s for s in slots if s.row == r - 1 and s.words}
        crossing = any(s.rowspan > 1 and s.row <= r < s.row + s.rowspan + 1 for s in slots)
        if (
            crossing
            or not lower
            or any(_is_figure(s) for s in lower.values())
            or not any(_is_figure(s) for s in upper.values())
            or any(_is_figure(upper[c]) for c in lower if c in upper)
            or set(lower) <= {0}
            or not _continues(upper, lower, slots, cuts)
        ):
            r += 1
            continue
        slots = _merge_up(slots, r, upper, lower)
    return slots


def _empty_columns(slots: Sequence[_Slot]) -> list[int]:
    """Columns with no word in any cell of their own (cells spanning them aside).

    Why: a spacer column between groups of figures (the white gap between "Revenue 2023 2022" and
    "Operating profit 2023 2022", where each group has its own rule) is a column to the model, and it
    came out as a column of empty cells through the whole table (``_drop_columns``)."""
    n_cols = max((s.col + s.colspan for s in slots), default=0)
    own: dict[int, list[_Slot]] = {}
    for s in slots:
        if s.colspan == 1:
            own.setdefault(s.col, []).append(s)
    return [c for c in range(n_cols) if c in own and not any(s.words for s in own[c])]


def _drop_columns(slots: list[_Slot], columns: Sequence[int]) -> list[_Slot]:
    """``slots`` without ``columns``: their own cells gone, cells spanning them spanning one less each."""
    return _drop_lines(slots, columns, "col", "colspan")


def _drop_empty_rows(slots: list[_Slot]) -> list[_Slot]:
    """``slots`` without the body rows where no cell starts with a word; cells spanning such a row
    span one less. Why: the model can read a row of empty cells under a table's last row (or between
    two), and it came out as a row of empty cells with the first column's last cell spanning it. A
    header row stays, and so does a row under a head over several columns: the heads under it may be
    gone as running lines (us-018's pages), and the spans still say the header's shape."""
    n_rows = max((s.row + s.rowspan for s in slots), default=0)
    filled = {s.row for s in slots if s.words or s.header}
    filled |= {s.row + s.rowspan for s in slots if s.colspan > 1}
    return _drop_lines(slots, sorted(set(range(n_rows)) - filled), "row", "rowspan")


def _drop_lines(slots: list[_Slot], lines: Sequence[int], start: str, span: str) -> list[_Slot]:
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


def _body_start(slots: Sequence[_Slot]) -> int:
    """The first row below the model's header rows (0 without a header)."""
    head = {s.row for s in slots if s.header}
    return max(head) + 1 if head else 0


def _lift_stray_lines(slots: list[_Slot]) -> list[_Slot]:
    """A cell's first lines that stand above its row's first line are the cell above's last lines.

    Why: a wrapped cell of three lines beside one-line cells ("Delays from the two main suppliers of /
    parts for … / first half of the year") reaches down to the next row's height; the rows fitted to
    the model's put its last line in the next row, on top of that row's own text ("first half of the
    year Loss of key engineers"). The row's key (its first column, top-aligned) says where the row
    starts: lines of a cell that end above the key's first line, right under the last line of the
    cell above (line spacing, not a row's padding), where that line was full, go back up."""
    keys = {s.row: s for s in slots if s.col == 0 and s.rowspan == 1 and s.words}
    cells = {(s.row, s.col, s.colspan): s for s in slots if s.rowspan == 1}
    for s in slots:
        key = keys.get(s.row)
        upper = cells.get((s.row - 1, s.col, s.colspan))
        if s.col == 0 or key is None or upper is None or not upper.words or s.rowspan != 1 or not s.words:
            continue
        if s.row - 1 not in keys or s.row <= _body_start(slots):
            continue
        top = min(w[0][1] for w in key.words)
        bands = _bands(s.words)
        stray = [w for _, ws in bands for w in ws if w[0][3] <= top + 0.25 * (w[0][3] - w[0][1])]
        rest = [w for w in s.words if w not in stray]
        if not stray or not rest:
            continue
        moved = _Slot(s.row, s.col, colspan=s.colspan, words=stray)
        if _wrapped(upper, moved) and not _would_fit(upper, moved, slots):
            upper.words += stray
            s.words = rest
    return slots


def _join_wrapped_text_rows(slots: list[_Slot], cuts: Sequence[Rule] = ()) -> list[_Slot]:
    """In a table of words (no figures), a body row with an empty first column, or one whose key is set
    in under a hanging indent, whose cells each continue the cell above is that row's wrapped lines.

    Why: ``_join_wrapped_rows`` anchors rows by their figures, so a table of text (a risk register, a
    glossary in columns) kept a wrapped description's second line as a row of its own beside empty
    cells. Here the first column is the anchor: a row starts where it has a key; a row without one
    whose filled cells each start right under the cell above, whose last line was full, is that
    row's next line."""
    if any(_is_figure(s) for s in slots):
        return slots
    r = _body_start(slots) + 1
    while r < max((s.row + s.rowspan for s in slots), default=0):
        lower = {s.col: s for s in slots if s.row == r and s.words}
        upper = {s.col: s for s in slots if s.row == r - 1 and s.words}
        crossing = any(s.rowspan > 1 and s.row <= r < s.row + s.rowspan + 1 for s in slots)
        keyed = 0 in lower and not (0 in upper and _hangs(upper[0], lower[0]))
        if crossing or not lower or keyed or 0 not in upper or not _continues(upper, lower, slots, cuts):
            r += 1
            continue
        slots = _merge_up(slots, r, upper, lower)
    return slots


def _hangs(upper: _Slot, lower: _Slot) -> bool:
    """Whether ``lower``'s first line is set in from ``upper``'s first line: a key's wrapped line under a
    hanging indent, not a key of its own."""
    height = min(w[0][3] - w[0][1] for w in lower.words)
    return _first_left(lower) - _first_left(upper) >= OUTDENT * height


def _continues(
    upper: dict[int, _Slot], lower: dict[int, _Slot], slots: Sequence[_Slot], cuts: Sequence[Rule] = ()
) -> bool:
    """Whether every filled cell of a row (``lower``, by column) goes on from the cell above it in the
    row above (``upper``): the same span, starting right under it, after a last line that was full,
    and no rule drawn across the table between them (``cuts``: a ruled table's row that a page or
    column break left with one cell's last lines is a row of its own)."""
    return all(
        c in upper
        and upper[c].colspan == s.colspan
        and _wrapped(upper[c], s)
        and not _would_fit(upper[c], s, slots)
        for c, s in lower.items()
    ) and not _ruled_apart(upper, lower, slots, cuts)


def _join_ruled_bands(slots: list[_Slot], cuts: Sequence[Rule]) -> list[_Slot]:
    """In a table whose body rows are ruled apart (two rules or more drawn across it between body
    rows), a row with no key under a keyed row, no rule between them, is more lines of that row.

    Why: the rules say where each row ends. A row whose cells hold a total on its first line and
    brand names on the lines under it ("Total: 47%" over "(Fruit d'or, Plantafin, …)", ICDAR's
    eu-007) was cut by the model into a keyed row and a row of loose lines. Only below the header's
    band (a rule between the table's first row and this one): a head's second row may have no key."""
    across = _rules_across(slots, cuts)
    first = [w for s in slots if s.row == 0 for w in s.words]
    if not across or not first:
        return slots
    every = [w for s in slots for w in s.words]
    head_foot = max((w[0][1] + w[0][3]) / 2 for w in first)
    bottom = max((w[0][1] + w[0][3]) / 2 for w in every)
    if sum(1 for y in across if head_foot < y < bottom) < MIN_BODY_RULES + 1:
        return slots  # the header's rule and one other at least: rows ruled apart
    r = 1
    while r < max((s.row + s.rowspan for s in slots), default=0):
        lower = {s.col: s for s in slots if s.row == r and s.words}
        upper = {s.col: s for s in slots if s.row == r - 1 and s.words}
        crossing = any(s.rowspan > 1 and s.row <= r < s.row + s.rowspan + 1 for s in slots)
        top = min((w[0][1] + w[0][3]) / 2 for s in lower.values() for w in s.words) if lower else 0.0
        if (
            crossing
            or not lower
            or 0 in lower
            or 0 not in upper
            or any(s.colspan > 1 for s in [*lower.values(), *upper.values()])
            or not any(head_foot < y < top for y in across)
            or _ruled_apart(upper, lower, slots, cuts)
            or any(c not in upper for c in lower)
            or not all(_in_column(w, c, slots, s) for c, s in lower.items() for w in s.words)
        ):
            r += 1
            continue
        slots = _merge_up(slots, r, upper, lower)
    return slots


def _in_column(word: tuple[Box, str], c: int, slots: Sequence[_Slot], own: _Slot) -> bool:
    """Whether a word's middle lies within the reach of column ``c``'s words in its other cells (a
    "Total" the model put beside its figure stands in the key column's reach, not the figure's)."""
    xs = [
        (w[0][0], w[0][2]) for s in slots if s.col == c and s.colspan == 1 and s is not own for w in s.words
    ]
    mid = (word[0][0] + word[0][2]) / 2
    return bool(xs) and min(a for a, _ in xs) <= mid <= max(b for _, b in xs)


MIN_BODY_RULES = 2  # rules drawn across a table's body that show its rows are ruled apart


def _ruled_apart(
    upper: dict[int, _Slot], lower: dict[int, _Slot], slots: Sequence[_Slot], cuts: Sequence[Rule]
) -> bool:
    """Whether a rule drawn from the table's first column to its last (``_rules_across``) runs between
    a cell of ``lower`` and the cell above it in ``upper``."""
    across = _rules_across(slots, cuts)
    for c, s in lower.items():
        if c not in upper or not across:
            continue
        # Between the lines' middles, clear of both: word boxes overlap the rules of a tight table.
        height = min(w[0][3] - w[0][1] for w in s.words)
        bottom = max((w[0][1] + w[0][3]) / 2 for w in upper[c].words) + RULE_CLEAR * height
        top = min((w[0][1] + w[0][3]) / 2 for w in s.words) - RULE_CLEAR * height
        if any(bottom <= y <= top for y in across):
            return True
    return False


def _rules_across(slots: Sequence[_Slot], cuts: Sequence[Rule]) -> list[float]:
    """The heights of the rules drawn from a table's first column to its last, as ``_split_at_rules``
    takes a rule across: its ends within half a line of the outer words'."""
    every = [w for s in slots for w in s.words]
    if not cuts or not every:
        return []
    left, right = min(w[0][0] for w in every), max(w[0][2] for w in every)
    reach = RULE_REACH * statistics.median(w[0][3] - w[0][1] for w in every)
    return sorted(y for x0, y, x1 in joined(cuts) if x0 <= left + reach and x1 >= right - reach)


def _merge_up(slots: list[_Slot], r: int, upper: dict[int, _Slot], lower: dict[int, _Slot]) -> list[_Slot]:
    """Row ``r``'s words joined to the cells above (``_continues``), the row gone, the rows below
    moved up one."""
    for c, s in lower.items():
        upper[c].words += s.words
    kept: list[_Slot] = []
    for s in slots:
        if s.row == r:
            continue
        if s.row > r:
            s.row -= 1
        kept.append(s)
    return kept


def _would_fit(upper: _Slot, lower: _Slot, slots: Sequence[_Slot]) -> bool:
    """Whether ``lower``'s first word would have fitted after ``upper``'s last line, within the
    widest line of their column: then that line did not wrap, and ``lower`` is a cell of its own."""
    last = _bands(upper.words)[-1][1]
    first = min(_bands(lower.words)[0][1], key=lambda w: w[0][0])[0]
    right = max(w[0][2] for o in slots if o.col == upper.col and o.colspan == upper.colspan for w in o.words)
    space = 0.25 * (first[3] - first[1])
    return max(w[0][2] for w in last) + space + (first[2] - first[0]) <= right


def _fill_empty_spans(slots: list[_Slot]) -> list[_Slot]:
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
            bands = _bands(c.words)
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


def _centre_spans(slots: list[_Slot], body: float) -> list[_Slot]:
    """A header cell the model spans over columns its text is not centred over takes those it is.

    Why: over a header band on one fill, or with no rule under a spanning cell, the model's span
    follows the ink it sees: "Results" centred over 2020–2022 came out over the columns its text
    overlaps, or over the whole band. A reader goes by the centre (``word_columns.centred_span``,
    the columns placed by their words in single-column cells). Only above the body (the first row
    holding a figure), where the model's own span is not centred on the text, over columns that the
    row below fills with cells of their own and that nothing else in the cell's row stands over."""
    from ocr_app.structure.word_columns import CENTRED, centred_span, column_bounds

    n_cols = max((s.col + s.colspan for s in slots), default=0)
    body_at = min((s.row for s in slots if _is_figure(s)), default=0)
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


def _respan(slots: list[_Slot], s: _Slot, row: list[_Slot], a: int, b: int) -> list[_Slot]:
    """``slots`` with ``s`` spanning columns ``a``..``b``: the empty slots of its row there go, the
    columns it leaves get empty slots of their own."""
    gone = {id(o) for o in row if o.col <= b and a < o.col + o.colspan}
    freed = [c for c in range(s.col, s.col + s.colspan) if not a <= c <= b]
    slots = [o for o in slots if id(o) not in gone]
    slots += [_Slot(s.row, c, header=s.header) for c in freed]
    s.col, s.colspan = a, b - a + 1
    return slots


def _bands(words: list[tuple[Box, str]]) -> list[tuple[float, list[tuple[Box, str]]]]:
    """A cell's words in lines: (middle, words), top to bottom."""
    out: list[tuple[float, list[tuple[Box, str]]]] = []
    for w in sorted(words, key=lambda w: (w[0][1] + w[0][3]) / 2):
        mid = (w[0][1] + w[0][3]) / 2
        if out and abs(mid - out[-1][0]) <= 0.5 * (w[0][3] - w[0][1]):
            out[-1][1].append(w)
        else:
            out.append((mid, [w]))
    return out


def _split_merged_rows(slots: list[_Slot]) -> list[_Slot]:
    """A model row holding two or more rows of figures is that many rows.

    Why: the model merges body rows set without padding ("0 250 | 39 30 | 5.8 5.9"); where two or
    more cells hold only figures, one a line, on the same lines, each of those lines is a row. The
    other cells' lines go to the row whose first line they are level with or below (a wrapped label
    stays in its row)."""
    r = 0
    while r < max((s.row + s.rowspan for s in slots), default=0):
        cells = [s for s in slots if s.row == r and s.rowspan == 1 and s.words]
        stacks = []
        for s in cells:
            lines = _bands(s.words)
            if len(lines) >= 2 and all(_FIGURE.match(" ".join(t for _, t in ws)) for _, ws in lines):
                stacks.append([m for m, _ in lines])
        k = len(stacks[0]) if stacks else 0
        height = min((w[0][3] - w[0][1] for s in cells for w in s.words), default=0.0)
        if (
            len(stacks) < 2
            or any(len(m) != k for m in stacks)
            or any(abs(a - b) > 0.5 * height for m in stacks for a, b in zip(m, stacks[0], strict=True))
        ):
            r += 1
            continue
        starts = [sum(m[i] for m in stacks) / len(stacks) - 0.5 * height for i in range(k)]
        slots = _cut_row(slots, r, starts)
        r += k
    return slots


KEYS_FLUSH = 0.6  # this share of the body rows' keys starting at their column's edge: keys are set flush left
OUTDENT = (
    0.5  # × the line height: a key line this far left of the key's first line is another key's; at the edge
)


def _split_keys(slots: list[_Slot]) -> list[_Slot]:
    """A body row whose key (its first column's cell, keys set flush left) holds another key's first
    line is two rows from that line on: a line at the column's edge that starts left of the key's
    first line (an outdent), or one under a key line that broke early (the next word would have
    fitted in the column), level with a line of every other filled cell of the row that follows a
    line which broke early too.

    Why: keys that wrap with a hanging indent ("Disposable income per capita in" over "constant
    dollars", set in) in rows set at line spacing were fitted a line off: one model row held a key's
    indented last line and the next key's first line (ICDAR 2013's us-019, "constant dollars
    Education revenue receipts from state"); and two one-line rows of words set at line spacing came
    out as one ("Ages 20 to 24 Age 25 and over" beside "Remains between …" twice). A key's wrapped
    lines never start left of its first line, and a line breaks early only where its cell ends; a key
    broken early beside a description that runs on is one key on two lines ("Books and" / "school
    supplies", us-036). The other cells' lines go to the row they are level with (``_cut_row``)."""
    body_at = _body_start(slots)
    keys = [
        s for s in slots if s.col == 0 and s.colspan == 1 and s.rowspan == 1 and s.row >= body_at and s.words
    ]
    if not keys:
        return slots
    edge = min(w[0][0] for s in keys for w in s.words)
    height = statistics.median(w[0][3] - w[0][1] for s in keys for w in s.words)
    if sum(1 for s in keys if _first_left(s) - edge <= OUTDENT * height) < KEYS_FLUSH * len(keys):
        return slots
    widths: dict[tuple[int, int], float] = {}  # (column, span) → its widest line
    for s in slots:
        for _, ws in _bands(s.words):
            width = max(w[0][2] for w in ws) - min(w[0][0] for w in ws)
            widths[s.col, s.colspan] = max(widths.get((s.col, s.colspan), 0.0), width)

    def early(s: _Slot, above: list[tuple[Box, str]], below: list[tuple[Box, str]]) -> bool:
        """Whether the line ``above`` broke before the first word of ``below`` had to (it would have fitted)."""
        lead = min(below, key=lambda w: w[0][0])[0]
        used = max(w[0][2] for w in above) - min(w[0][0] for w in above)
        return used + 0.25 * height + (lead[2] - lead[0]) <= widths[s.col, s.colspan]

    def level(s: _Slot, mid: float) -> bool:
        """Whether cell ``s`` has a line level with ``mid`` that starts it or follows a line broken early."""
        bands = _bands(s.words)
        return abs(bands[0][0] - mid) <= 0.5 * height or any(
            abs(m - mid) <= 0.5 * height and early(s, up, ws)
            for (_, up), (m, ws) in itertools.pairwise(bands)
        )

    for key in sorted(keys, key=lambda s: -s.row):  # from the bottom: a cut moves only the rows below
        first = _first_left(key)
        others = [s for s in slots if s.row == key.row and s.rowspan == 1 and s.col > 0 and s.words]
        starts = []
        for (_, above), (mid, ws) in itertools.pairwise(_bands(key.words)):
            x = min(w[0][0] for w in ws)
            if x - edge > OUTDENT * height:
                continue  # set in: a wrapped line
            beside = bool(others) and early(key, above, ws) and all(level(s, mid) for s in others)
            if x <= first - OUTDENT * height or beside:
                starts.append(min(w[0][1] for w in ws))
        if starts:
            slots = _cut_row(slots, key.row, [float("-inf"), *starts])
    return slots


def _first_left(s: _Slot) -> float:
    """Where the cell's first line starts."""
    return min(w[0][0] for w in _bands(s.words)[0][1])


RULE_REACH = 0.5  # × the line height: how far short of a row's outer words a rule under them may end
RULE_CLEAR = 0.3  # × the line height: a rule this far from every word's middle (no strike-through)


_BULLET_GLYPH = re.compile(r"^[•●○◦▪▫■□‣⁃*·]$")


def _goes_on(upper: _Slot, lower: _Slot) -> bool:
    """``lower`` goes on ``upper``'s text a line below, in one cell: no figure under a figure (two
    rows of figures set a line apart are two rows)."""
    return _wrapped(upper, lower) and not (_is_figure(upper) and _is_figure(lower))


def _split_at_rules(slots: list[_Slot], cuts: Sequence[Rule]) -> list[_Slot]:
    """A model row whose words lie on both sides of a rule drawn across the whole table is two rows.

    Why: the structure model sometimes misses a row and the word rows are then fitted to one row
    too few (us-032's "Area" and, below the rule that opens the next section, "Mobile:" became one
    cell "Area Mobile:"). A rule drawn from the table's first column to its last parts rows: no
    cell's text runs across it. A rule under some columns only (a group's head over its sub-heads,
    "TEDs" over simple / complex / all) parts nothing, nor does one in a row with words in one cell
    only (an underlined first line of a wrapped cell). Lines over the rule that end the cells above
    them a line lower (ICDAR's eu-004: a head's last line "(000)" fitted to the first row of figures)
    join those cells; lines under it that begin the next row's cells join them (docling's
    normal_4pages: a cell's first line fitted to the row above the rule)."""
    every = [w for s in slots for w in s.words]
    if not cuts or not every:
        return slots
    cuts = joined(cuts)
    left, right = min(w[0][0] for w in every), max(w[0][2] for w in every)
    stub = min(s.col for s in slots if s.words)
    r = 0
    while r <= max((s.row for s in slots), default=-1):
        cells = [s for s in slots if s.row == r and s.rowspan == 1 and s.words]
        words = [w for s in cells for w in s.words]
        cut = None
        if len([s for s in cells if s.words]) >= 2:
            height = min(w[0][3] - w[0][1] for w in words)
            for x0, y, x1 in cuts:
                mids = [(w[0][1] + w[0][3]) / 2 - y for w in words]
                if (
                    x0 <= left + RULE_REACH * height
                    and x1 >= right - RULE_REACH * height
                    and min(mids) < 0 < max(mids)
                    and all(abs(m) >= RULE_CLEAR * height for m in mids)
                ):
                    cut = y
                    break
        if cut is None:
            r += 1
            continue
        upper = {s.col: [w for w in s.words if w[0][1] + w[0][3] < 2 * cut] for s in cells}
        lower = {s.col: [w for w in s.words if w[0][1] + w[0][3] > 2 * cut] for s in cells}
        # A lone bullet glyph says nothing: a symbol font sets it higher or lower than its line.
        upper = {c: ws for c, ws in upper.items() if ws and not all(_BULLET_GLYPH.match(t) for _, t in ws)}
        lower = {c: ws for c, ws in lower.items() if ws and not all(_BULLET_GLYPH.match(t) for _, t in ws)}
        prv = {s.col: s for s in slots if s.row + s.rowspan == r and s.words}
        nxt = {s.col: s for s in slots if s.row == r + 1 and s.rowspan == 1 and s.words}
        # Lines over the rule that end, a line below, the cells above them in their columns (a head's
        # last line, "(000)") go up to those cells; lines under it that begin the next row's cells
        # go down. The rest of the row stays where it is.
        # A part with words in every column that the rest of the row or the neighbour row fills is a
        # row of its own (rows set a line apart look "wrapped" too: "Carbon monoxide (CO)" under
        # "Ammonia (NH3)").
        # A row holding only a label in the first column takes no part: a label under the rule over
        # one alone in its row are two rows ("All Randomly Assigned (N=4,667):" over "3-Year-Old
        # Cohort", ICDAR's us-008).
        # Neither moves over another rule across the table (a row ruled apart from the next).
        above = {c: _Slot(r, c, words=ws) for c, ws in upper.items()}
        below = {c: _Slot(r, c, words=ws) for c, ws in lower.items()}
        if (
            len(upper) < len(set(lower) | set(prv))
            and set(prv) != {stub}
            and all(c in prv and _goes_on(prv[c], above[c]) for c in upper)
            and not _ruled_apart(prv, above, slots, cuts)
        ):
            moved, into, first = upper, prv, False
        elif (
            len(lower) < len(set(upper) | set(nxt))
            and set(nxt) != {stub}
            and all(c in nxt and _goes_on(below[c], nxt[c]) for c in lower)
            and not _ruled_apart(below, nxt, slots, cuts)
        ):
            moved, into, first = lower, nxt, True
        else:
            moved, into, first = {}, {}, False
        if moved:
            for s in cells:
                if s.col in moved:
                    s.words = [w for w in s.words if w not in moved[s.col]]
                    cell = into[s.col]
                    cell.words = moved[s.col] + cell.words if first else cell.words + moved[s.col]
            r += 1
            continue
        slots = _cut_row(slots, r, [float("-inf"), cut], heads=False)
    return slots


def _cut_row(slots: list[_Slot], r: int, starts: Sequence[float], *, heads: bool = True) -> list[_Slot]:
    """Row ``r`` cut into one row a level of ``starts`` (ascending): each one-row cell's word goes to
    the last level its middle reaches (the first when none), rows below move down, cells spanning down
    over ``r`` span the new rows too. ``heads``: the new rows keep a header cell's mark (False: only
    the first does)."""
    k = len(starts)
    out: list[_Slot] = []
    for s in slots:
        if s.row == r and s.rowspan == 1:
            parts = [
                _Slot(r + i, s.col, 1, s.colspan, s.header and (heads or i == 0), s.box) for i in range(k)
            ]
            for w in s.words:
                mid = (w[0][1] + w[0][3]) / 2
                parts[max([i for i in range(k) if mid >= starts[i]], default=0)].words.append(w)
            out += parts
            continue
        if s.row > r:
            s.row += k - 1
        elif s.row + s.rowspan > r:
            s.rowspan += k - 1
        out.append(s)
    return out


def _lift_header_tails(slots: list[_Slot]) -> list[_Slot]:
    """A header cell's last line that the model put in the first body row goes back up.

    Why: a header cell wrapped over more lines than its neighbours ("number of enterprises" /
    "(000)") reaches below the model's header row, and its last line lands in the first row of
    figures ("(000) 2553"). Such a line stands above the row's own line of figures (the top of the
    row's one-line figure cells), right under the header cell of its column (under half a line),
    in a cell whose own text below it is a figure."""
    body_at = min((s.row for s in slots if _is_figure(s)), default=0)
    if body_at < 1:
        return slots
    row = [s for s in slots if s.row == body_at and s.rowspan == 1 and s.words]
    level = [min(w[0][1] for w in s.words) for s in row if _is_figure(s) and len(_bands(s.words)) == 1]
    if not level:
        return slots
    band_top = min(level)
    for s in row:
        lines = _bands(s.words)
        above = [
            a
            for a in slots
            if a.row + a.rowspan == body_at and a.words and a.col <= s.col < a.col + a.colspan
        ]
        if len(lines) < 2 or len(above) != 1:
            continue
        tail = [(m, ws) for m, ws in lines if m < band_top]
        rest = [w for m, ws in lines if m >= band_top for w in ws]
        if not tail or not rest or not _FIGURE.match(" ".join(t for _, t in rest)):
            continue
        height = min(w[0][3] - w[0][1] for w in s.words)
        if min(w[0][1] for _, ws in tail for w in ws) - max(w[0][3] for w in above[0].words) >= 0.5 * height:
            continue
        above[0].words += [w for _, ws in tail for w in ws]
        s.words = rest
    return slots


def _wrapped(upper: _Slot, lower: _Slot) -> bool:
    """Whether ``lower``'s words continue ``upper``'s text on the next line of one cell."""
    bottom = max(w[0][3] for w in upper.words)
    top = min(w[0][1] for w in lower.words)
    height = sorted(w[0][3] - w[0][1] for w in upper.words + lower.words)[0]
    return -0.5 * height <= top - bottom < 0.5 * height


COLUMN_REACH = 0.25  # × the line height: how far past a column's words a word of it may stand


def _merge_interleaved_columns(slots: list[_Slot]) -> None:
    """Words of a headless model column that stand inside its neighbour's column, in rows where the
    neighbour is empty, go to the neighbour's cells (the emptied column is dropped at the end).

    Why: the model sometimes gives a table one column too many and fits the last rows' figures to
    it (ICDAR's eu-023: "3.1%" and "1.0%" under "Often" came out in a fifth, headless column). Two
    columns that never both hold words in one row, whose words stand over the same stretch of the
    page, are one column; a column with a head of its own, or one beside it, is left alone."""
    cells = {(s.row, s.col): s for s in slots if s.colspan == 1 and s.rowspan == 1}
    body_at = _body_start(slots)
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


def _merge_flowing_columns(slots: list[_Slot]) -> list[_Slot]:
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
        out: list[_Slot] = []
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


def _flows_across(slots: Sequence[_Slot], c: int) -> bool:
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


def _strip_in_column(slots: Sequence[_Slot], c: int, body: float) -> float | None:
    """The middle of the widest white strip down column ``c`` (see ``_split_columns``), or None."""
    # A list's bullet glyphs stand a tab before their words: that gap parts no columns.
    words = {id(s): [w for w in s.words if not _LIST_MARK.match(w[1])] for s in slots}
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


def _covers(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] >= b[0] and a[1] >= b[1]


def _centre_in(b: Box, region: Box) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


def _rows(slots: list[_Slot], join: Callable[[str, str], str] | None) -> list[list[Cell]]:
    """Cells row by row, dropping rows with no text (the model's spare rows) and their spans."""
    n_rows = max(s.row + s.rowspan for s in slots)
    used = [r for r in range(n_rows) if any(s.words and s.row <= r < s.row + s.rowspan for s in slots)]
    index = {r: k for k, r in enumerate(used)}
    rows: list[list[Cell]] = [[] for _ in used]
    for s in sorted(slots, key=lambda s: (s.row, s.col)):
        covered = [r for r in range(s.row, s.row + s.rowspan) if r in index]
        if not covered:
            continue
        rows[index[covered[0]]].append(Cell(_cell_text(s.words, join), s.colspan, len(covered)))
    return [r for r in rows if r]


HEAD_ROWS = 3  # a head over a rule has at most this many rows


def _head_over_rule(slots: list[_Slot], cuts: Sequence[Rule]) -> None:
    """With no header row read, the first rows are the header where a rule drawn across the whole
    table runs under them and over the rest (a booktabs table's head rule: "Variable | Assumption" on
    ICDAR 2013's us-019, where the head is set like the body). Not in a table that draws a rule under
    most of its rows: there the first rule says nothing about a head."""
    every = [w for s in slots for w in s.words]
    if not cuts or not every or any(s.header for s in slots):
        return
    height = statistics.median(w[0][3] - w[0][1] for w in every)
    left, right = min(w[0][0] for w in every), max(w[0][2] for w in every)
    top, bottom = min(w[0][1] for w in every), max(w[0][3] for w in every)
    n_rows = max(s.row + s.rowspan for s in slots)
    across = sorted(
        y
        for x0, y, x1 in joined(cuts)
        if x0 <= left + RULE_REACH * height and x1 >= right - RULE_REACH * height and top < y < bottom
    )
    if not across:
        return
    above = {s.row + s.rowspan for s in slots if s.words and max(w[0][3] for w in s.words) <= across[0]}
    below = {s.row for s in slots if s.words and min(w[0][1] for w in s.words) >= across[0]}
    k = max(above, default=0)
    if not 1 <= k <= HEAD_ROWS or k != min(below, default=-1) or len(across) - 1 > (n_rows - k) / 2:
        return
    if n_rows - k < 2 or any(s.row < k < s.row + s.rowspan for s in slots):
        return
    for s in slots:
        if s.row < k:
            s.header = True


def _header_rows(slots: Sequence[_Slot]) -> int:
    heads = {s.row for s in slots if s.header}
    n = 0
    while n in heads:
        n += 1
    return n


MIN_REGION_SCORE = 0.5  # the layout model's table boxes below this are mostly a table's caption or a list
MIN_VETO_SCORE = 0.3  # a grid of words in no table box even this weak is no table (on a page the model saw)
MIN_LINE_SHARE = 0.5  # a line belongs to a region when this share of its box lies inside it


def snap(region: Box, lines: Sequence[TextLine]) -> tuple[Box, list[TextLine]] | None:
    """A model's table box → the box of the lines it holds (most of each line inside it), and those
    lines; None when it holds fewer than two. The model's box edges cut through words and margins; the
    words say where the table is."""
    from ocr_app.schema import union_box

    held = [ln for ln in lines if _share(ln.box, region) >= MIN_LINE_SHARE]
    held = _trim_heading(_trim_prose(_trim_side_caption(held)), lines, region)
    if len(held) < 2:
        return None
    held += _overhanging(held, lines, region)
    held += _column_beside(held, lines)
    held += _heads_above(held, lines)
    held += _rows_below(held, lines)
    return union_box([ln.box for ln in held]), held


ROWS_BELOW = 3  # a region's box may leave out this many of the table's last rows


def _in_columns(pieces: Sequence[TextLine], celled: Sequence[TextLine], left: float) -> bool:
    """Whether a row's pieces are set in the table's columns: the first at the table's left edge (a
    row's key), each other one flush with a cell of the rows above, left or right (a figure under its
    column's figures). A calculation under a table ("(c)  (d)" over "Indirect Rate (c)/(d)  870,038",
    ICDAR's us-009) starts elsewhere."""
    ordered = sorted(pieces, key=lambda ln: ln.box[0])
    tol = 0.5 * min(ln.box[3] - ln.box[1] for ln in pieces)
    return abs(ordered[0].box[0] - left) <= tol and all(
        any(abs(p.box[0] - c.box[0]) <= tol or abs(p.box[2] - c.box[2]) <= tol for c in celled)
        for p in ordered[1:]
    )


def _rows_below(held: list[TextLine], lines: Sequence[TextLine]) -> list[TextLine]:
    """The table's last rows right under a region that the layout model's box left out: each row as
    close under the one above as the region's rows stand, of two or more pieces, each a cell's text
    (no sentence) set in the region's columns (``_in_columns``). Why: a statement's total
    ("Profit for the year 8,206 (380)", bold under a rule) fell outside the box and was read as the
    first line of the paragraph under the table."""
    from ocr_app.structure.lines import group_rows

    taken = {id(ln) for ln in held}
    rows = group_rows(held)
    celled = [ln for r in rows if len(r.items) > 1 for ln in r.items]
    if len(rows) < 3 or not celled:
        return []
    pitch = statistics.median(b.box[1] - a.box[1] for a, b in itertools.pairwise(rows))
    left = min(ln.box[0] for ln in held)
    bottom = max(ln.box[3] for ln in held)
    last_top = rows[-1].box[1]
    out: list[TextLine] = []
    below = group_rows([ln for ln in lines if id(ln) not in taken and ln.box[1] >= bottom - 0.25 * pitch])
    for row in below[:ROWS_BELOW]:
        if (
            len(row.items) < 2
            or row.box[1] - last_top > 1.6 * pitch
            or any(_sentence(ln.text) or len(ln.text.split()) > HEADING_WORDS for ln in row.items)
            or not _in_columns(row.items, celled, left)
        ):
            break
        out += row.items
        last_top = row.box[1]
    return out


FRAME_INSIDE = 0.9  # a drawn grid this much inside a table region is that region's table
FRAME_WIDTH = 0.8  # … when it is at least this share of the region's width
FRAME_HEIGHT = 0.5  # … and of its height


def cut_at_frames(region: Box, frames: Sequence[Box]) -> Box:
    """A layout model's table box cut at the bottom of the drawn grid it holds.

    Why: the model's box reaches a line or two past a framed table, over the "Source: …" note under
    it; that note's words were read as a last row of the table (and the structure model, given the
    extra line, shifted its rows). The frame's bottom rule is where such a table ends; its top is left
    as it is (column heads set over a frame drawn around the body belong to the table)."""
    for f in frames:
        if (
            f[3] < region[3]
            and _share(f, region) >= FRAME_INSIDE
            and f[2] - f[0] >= FRAME_WIDTH * (region[2] - region[0])
            and f[3] - f[1] >= FRAME_HEIGHT * (region[3] - region[1])
        ):
            return (region[0], region[1], region[2], f[3])
    return region


OVERHANG_SHARE = 0.25  # a head overhanging the region's edge still has this share of its box inside


def _overhanging(held: list[TextLine], lines: Sequence[TextLine], region: Box) -> list[TextLine]:
    """Short lines beside held lines of the same row that run out past one side of the region: a head
    set wider than its column ("Change (%)" over "+4.7"), which the box cuts through. A cell's text,
    so at most ``HEAD_WORDS`` words, with ``OVERHANG_SHARE`` of it and a line's height inside (the
    figures of a table beside, whose right edge the box touches, are not)."""
    taken = {id(ln) for ln in held}
    out = []
    for ln in lines:
        x0, y0, x1, y1 = ln.box
        mid = (y0 + y1) / 2
        if (
            id(ln) not in taken
            and (region[0] <= x0 < region[2] < x1 or x0 < region[0] < x1 <= region[2])
            and _share(ln.box, region) >= OVERHANG_SHARE
            and min(x1, region[2]) - max(x0, region[0]) >= y1 - y0
            and region[1] <= mid <= region[3]
            and len(ln.text.split()) <= HEAD_WORDS
            and any(h.box[1] < mid < h.box[3] for h in held)
        ):
            out.append(ln)
    return out


MATE_ROWS = 0.5  # a column beside a region: pieces on at least this share of its rows of cells
MATE_GAP = 1.25  # × the widest gap between cells inside the region: how far beside it that column may stand


def _column_beside(held: list[TextLine], lines: Sequence[TextLine]) -> list[TextLine]:
    """A column of cells right beside a region that the layout model's box cut off: on each side, the
    nearest line beside each row of the region, where such lines stand on at least ``MATE_ROWS`` of
    its rows of two or more cells, are short (a cell's text, ``HEAD_WORDS`` words at most) and stand
    no further from the row than ``MATE_GAP`` times the widest gap between cells inside the region.
    Why: the model's box often ends short of a table's last column (a narrow "Change" column of small
    figures set flush right); those cells then came out as loose lines beside the table. Prose beside
    a table is long lines, the text of a column beside the table is further than its cell gaps, and
    a table beside this one has more columns further out (``_further``)."""
    from ocr_app.structure.lines import group_rows

    rows = [r for r in group_rows(held) if len(r.items) >= 2]
    gaps = [b.box[0] - a.box[2] for r in rows for a, b in pairwise(sorted(r.items, key=lambda i: i.box[0]))]
    if len(rows) < 3 or not gaps:
        return []
    reach = MATE_GAP * max(gaps)
    every = lines
    taken = {id(ln) for ln in held}
    top, bottom = min(r.box[1] for r in rows), max(r.box[3] for r in rows)
    lines = [ln for ln in lines if id(ln) not in taken and top <= (ln.box[1] + ln.box[3]) / 2 <= bottom]
    out: list[TextLine] = []
    for side in (1, -1):
        mates = []
        for r in rows:
            edge = max(i.box[2] for i in r.items) if side > 0 else min(i.box[0] for i in r.items)
            beside = [
                ln
                for ln in lines
                if id(ln) not in taken
                and r.box[1] <= (ln.box[1] + ln.box[3]) / 2 <= r.box[3]
                and 0 <= (ln.box[0] - edge if side > 0 else edge - ln.box[2]) <= reach
            ]
            if beside:
                mates.append(
                    min(beside, key=lambda ln: abs(ln.box[0] - edge) if side > 0 else abs(edge - ln.box[2]))
                )
        if (
            len(mates) >= MATE_ROWS * len(rows)
            and all(len(m.text.split()) <= HEAD_WORDS for m in mates)
            and not any(_further(m, lines, side, reach, taken) for m in mates)
        ):
            column = mates + _stacked_under(mates, every, held)
            out += column
            taken |= {id(m) for m in column}
    return out


def _stacked_under(mates: list[TextLine], lines: Sequence[TextLine], held: list[TextLine]) -> list[TextLine]:
    """The lines of a column beside a region that wrap under its cells (``_column_beside``): within
    a line's height of the mates' x-range, inside the region's height, each at most a line's height
    under a mate or under one taken so. Why: a cut-off "Due" column's "Q3" stands beside its row, but
    the "2026" under it stands beside a wrapped line of another cell and no row of cells."""
    x0, x1 = min(m.box[0] for m in mates), max(m.box[2] for m in mates)
    top, bottom = min(ln.box[1] for ln in held), max(ln.box[3] for ln in held)
    ids = {id(ln) for ln in (*mates, *held)}
    column = sorted(
        (
            ln
            for ln in lines
            if id(ln) not in ids
            and x0 - (ln.box[3] - ln.box[1]) <= ln.box[0]
            and ln.box[2] <= x1 + (ln.box[3] - ln.box[1])
            and top <= (ln.box[1] + ln.box[3]) / 2 <= bottom
        ),
        key=lambda ln: ln.box[1],
    )
    stack, out = list(mates), []
    for ln in column:
        height = ln.box[3] - ln.box[1]
        if any(0 <= ln.box[1] - m.box[3] <= height and _x_overlap(ln.box, m.box) > 0 for m in stack):
            stack.append(ln)
            out.append(ln)
    return out


def _further(mate: TextLine, lines: Sequence[TextLine], side: int, reach: float, taken: set[int]) -> bool:
    """Whether a line stands further out on ``mate``'s row within ``reach``: the column beside is
    then the first of a table beside this one, not this table's last."""
    mid = (mate.box[1] + mate.box[3]) / 2
    return any(
        id(ln) not in taken
        and ln is not mate
        and ln.box[1] <= mid <= ln.box[3]
        and 0 <= (ln.box[0] - mate.box[2] if side > 0 else mate.box[0] - ln.box[2]) <= reach
        for ln in lines
    )


# a measured value ("25.16%", "12,410", "-0.3"), which a row of heads does not hold (a year does)
_VALUE = re.compile(r"\d[.,]\d|\d\s*%")
HEAD_GAP = 1.5  # × the row height: how far above a region its column heads may stand


def _heads_above(held: list[TextLine], lines: Sequence[TextLine]) -> list[TextLine]:
    """The row of column heads right above a region that the layout model left out of it.

    Why: the model's box for a table whose heads stand apart, above a rule (years over the figures of
    a balance sheet, an empty first cell), often starts at the first body row; the heads then came out
    as a line of text above the table. Such a row is the first one above, at most ``HEAD_GAP`` rows
    higher, with the lines of heads wrapped over it (``_head_band``), each reaching into the region's
    width (a head may overhang its column), of short pieces (no sentence, no measured value: the last row of a table above holds figures) in two
    or more stacks (a wrapped head's lines one over the other), each standing over lines of the region
    (or within ``BESIDE`` of them: a year centred over its column's "$" and figures barely reaches
    into them) that no other stack stands near."""
    from ocr_app.schema import union_box
    from ocr_app.structure.lines import group_rows

    box = union_box([ln.box for ln in held])
    taken = {id(ln) for ln in held}
    height = statistics.median(ln.box[3] - ln.box[1] for ln in held)
    # (a head beside the region's first line may overlap it by up to half a line: "Site" centred down
    # the two head rows, the group heads "Nitrate (mg/l)" left out of the region over it)
    rows = group_rows([ln for ln in lines if id(ln) not in taken and ln.box[3] <= box[1] + 0.5 * height])
    above = [r for r in rows if box[1] - r.box[3] <= HEAD_GAP * height]
    if not above:
        return []
    pieces = _head_band(max(above, key=lambda r: r.box[3]), rows, height)
    # Each piece within the table's width; a head may overhang it (a left-set "Change (%)" is wider
    # than its column of figures).
    if any(p.box[2] < box[0] - height or p.box[0] > box[2] + height or not _head(p) for p in pieces):
        return []
    stacks: list[list[TextLine]] = []
    for p in sorted(pieces, key=lambda p: p.box[1]):
        home = next((st for st in stacks if any(_over(q.box, p.box) for q in st)), None)
        if home is None:
            stacks.append([p])
        else:
            home.append(p)
    if len(stacks) < 2:
        return []
    reach = -BESIDE * statistics.median(ln.size for ln in held)
    # A line alone in its row (a group label: "Operations" reaching under the next head) says nothing
    # of the columns.
    celled = [ln for r in group_rows(held) if len(r.items) > 1 for ln in r.items]
    under = [
        {id(ln) for ln in celled if any(_x_overlap(_inked(p), _inked(ln)) >= reach for p in st)}
        for st in stacks
    ]
    # each stack over lines of the region, no two over the same line: columns, not one label's words
    if any(not u for u in under) or any(a & b for i, a in enumerate(under) for b in under[i + 1 :]):
        return []
    return pieces


def _inked(ln: TextLine) -> Box:
    """A line's box narrowed to its words' x-range where the engine knows it (an OCR engine's line
    boxes are padded by a fraction of a line on each side)."""
    if not ln.words:
        return ln.box
    return (min(a for a, _ in ln.words), ln.box[1], max(b for _, b in ln.words), ln.box[3])


def _head(piece: TextLine) -> bool:
    """Short and no measured value: a column head's text (or two heads set close, read as one piece)."""
    return len(piece.text.split()) <= HEAD_WORDS and not _VALUE.search(piece.text)


HEAD_WORDS = 4  # a column head's line holds at most this many words
BESIDE = 0.25  # × the text size: a head this close beside a column's lines stands over them


def _over(top: Box, low: Box) -> bool:
    """Whether ``top`` stands over ``low``: they share half the narrower one's width (a head over its
    column's figures, or two heads read as one piece over two columns)."""
    return min(top[2], low[2]) - max(top[0], low[0]) >= 0.5 * min(top[2] - top[0], low[2] - low[0])


WRAP_GAP = 0.6  # × the row height: a head's wrapped first line stands this close above the rest of it
BAND_LINES = 3  # a band of heads is at most this many lines high


def _head_band(row: Row, rows: Sequence[Row], height: float) -> list[TextLine]:
    """The pieces of the heads' row with the heads' lines above it: rows that overlap the band in
    height (heads set in the middle of a row of two lines stand between its lines: "Project" beside
    "Budget" over "(€m)"), or stand right above it (at most ``WRAP_GAP`` of a line) with every piece
    over a piece of the band (a head's first lines), up to ``BAND_LINES`` lines in all."""
    band = list(row.items)
    top = row.box[1]
    for r in sorted((r for r in rows if r is not row and r.box[3] <= row.box[3]), key=lambda r: -r.box[3]):
        if row.box[3] - r.box[1] > BAND_LINES * height:
            break
        touching = r.box[3] > top
        wrapped = top - r.box[3] <= WRAP_GAP * height and all(
            _head(p) and any(_over(p.box, q.box) for q in band) for p in r.items
        )
        if not (touching or wrapped):
            break
        band += r.items
        top = min(top, r.box[1])
    return band


HEADING_WORDS = 8  # a heading is a short line


def _style(ln: TextLine) -> tuple[float, bool, str, int]:
    return (round(ln.size), ln.bold or ln.weight >= 600, ln.font, ln.color)


TITLE_SIZE_RATIO = 1.3  # a first row this much larger than the table's cells is a title over it


def _trim_heading(held: list[TextLine], lines: Sequence[TextLine], region: Box) -> list[TextLine]:
    """A region's first row that is a heading of the page, not the table's: one short line over a
    row of two or more cells, in a style no other line of the region has and that a short line
    outside the region has too (the page's other section headings: "Technical data" on the same
    dark bar as "Features" and "Ordering information"), or set ``TITLE_SIZE_RATIO`` larger than the
    table's cells (a slide's title on a bar like the table's header bar, one title a slide). The
    layout model's box often takes in the heading right above a table; it then came out as a header
    row."""
    from ocr_app.structure.lines import group_rows

    rows = group_rows(held)
    if len(rows) < 3 or len(rows[0].items) != 1 or len(rows[1].items) < 2:
        return held
    head = rows[0].items[0]
    style = _style(head)
    if len(head.text.split()) > HEADING_WORDS or any(_style(ln) == style for r in rows[1:] for ln in r.items):
        return held
    sizes = sorted(ln.size for r in rows[1:] for ln in r.items)
    if head.size >= TITLE_SIZE_RATIO * sizes[len(sizes) // 2]:
        return [ln for ln in held if ln is not head]  # set larger than the table: a slide's title
    twins = [
        ln
        for ln in lines
        if ln is not head
        and _share(ln.box, region) < MIN_LINE_SHARE
        and _style(ln) == style
        and len(ln.text.split()) <= HEADING_WORDS
    ]
    return [ln for ln in held if ln is not head] if twins else held


PROSE_WORDS = 8  # a row of one piece with this many words, across most of the region, is a sentence
_WORD = re.compile(r"[^\W\d_]{2}")  # a word, not a figure: two letters in a row (a monospaced row of
# figures is one piece of many "words" too)


_CAPTION = re.compile(
    r"^(?i:table|tab\.|exhibit|figure|fig\.|chart|tableau|tabelle|tabla|tabella)\s*(?:\d+|[IVX]+\b|[A-Z]-?\d+)"
)
_NOTE = re.compile(f"^{NOTE_LEAD}", re.I)


def _tail(above: Row, row: Row) -> bool:
    """Whether one-piece ``row`` goes on the line of ``above`` (same style, a line below)."""
    a, b = above.items[0], row.items[0]
    return _style(a) == _style(b) and b.box[1] - a.box[3] < 0.5 * (b.box[3] - b.box[1])


SIDE_CAPTION_LINES = 6  # a caption set beside its table is a short column


def _trim_side_caption(held: list[TextLine]) -> list[TextLine]:
    """A caption set beside its table, in the margin left of it (KOMA-Script's side captions:
    "Table 3.6.: Default font styles for the elements of the table of contents" in three short
    lines left of the table's columns), is not the table's first column: the region's top-left line
    opens with a caption label, no other line does, and it and the lines under it at its x (a line
    apart) lie wholly left of every other line of the region."""
    if len(held) < 3:
        return held
    first = min(held, key=lambda ln: (ln.box[1], ln.box[0]))
    if first.box[0] > min(ln.box[0] for ln in held) + 1.0 or not _CAPTION.match(first.text):
        return held
    if sum(1 for ln in held if _CAPTION.match(ln.text)) > 1:
        return held
    column = [first]
    for ln in sorted(held, key=lambda ln: ln.box[1]):
        last = column[-1]
        height = last.box[3] - last.box[1]
        if ln is not first and abs(ln.box[0] - first.box[0]) <= 0.5 * height and ln.box[1] > last.box[1]:
            if ln.box[1] - last.box[3] > height:
                break
            column.append(ln)
    edge = max(ln.box[2] for ln in column)
    # the second piece of a justified caption line parted at a wide space ("Default    font")
    taken = {id(ln) for ln in column}
    column += [
        ln
        for ln in held
        if id(ln) not in taken
        and ln.box[2] <= edge + 0.5 * (ln.box[3] - ln.box[1])
        and any(vertical_overlap(ln.box, c.box) >= 0.5 for c in column)
    ]
    taken = {id(ln) for ln in column}
    rest = [ln for ln in held if id(ln) not in taken]
    if len(column) > SIDE_CAPTION_LINES or not rest or min(ln.box[0] for ln in rest) <= edge:
        return held
    return rest


def _trim_prose(held: list[TextLine]) -> list[TextLine]:
    """Rows of prose at the top or bottom of a region (a paragraph or caption the box reached into)
    are not the table's: one piece a row, a sentence long (counted in words, not figures), across
    most of the region's width."""
    from ocr_app.schema import union_box
    from ocr_app.structure.lines import group_rows

    if len(held) < 3:
        return held
    box = union_box([ln.box for ln in held])
    width = max(box[2] - box[0], 1e-6)
    rows = sorted(group_rows(held), key=lambda r: r.box[1])

    def prose(row) -> bool:
        return (
            len(row.items) == 1
            and sum(1 for w in row.items[0].text.split() if _WORD.search(w)) >= PROSE_WORDS
            and (row.box[2] - row.box[0]) >= 0.6 * width
        )

    def in_a_column(k: int) -> bool:
        """Whether row ``k``'s piece goes on a cell of the row above: it starts where one of that
        row's pieces starts, right of the table's first column, a line under it (a description's
        last line, which the region's box holds; a paragraph under a table starts at the margin)."""
        if k == 0:
            return False
        piece, height = rows[k].items[0], rows[k].box[3] - rows[k].box[1]
        above = rows[k - 1]
        return (
            piece.box[0] > box[0] + 2 * height
            and piece.box[1] - above.box[3] < 0.5 * height
            and any(abs(p.box[0] - piece.box[0]) <= 0.5 * height for p in above.items)
        )

    def keyed(k: int) -> bool:
        """Whether row ``k``'s line is a key and its value one space apart, in the columns of the row
        above: it starts where that row's first piece does, and one of its words where the second
        does ("Returns: the nodeset resulting from the query or NULL" under "value: | the key value",
        its key the longest of a parameter list)."""
        if k == 0 or not rows[k].items[0].words:
            return False
        piece, height = rows[k].items[0], rows[k].box[3] - rows[k].box[1]
        above = sorted(rows[k - 1].items, key=lambda ln: ln.box[0])
        return (
            len(above) >= 2
            and abs(piece.box[0] - above[0].box[0]) <= 0.5 * height
            and any(abs(w[0] - above[1].box[0]) <= 0.5 * height for w in piece.words[1:])
        )

    def under(k: int) -> bool:  # a sentence under the table: no cell's next line, no key beside its value
        return prose(rows[k]) and not in_a_column(k) and not keyed(k)

    while rows and prose(rows[0]):
        rows.pop(0)
    while rows and under(len(rows) - 1):
        rows.pop()
    # A caption's label over the table ("Exhibit 19", "Table 3.2") and notes under it ("Source: …",
    # "Note: …") with the lines of their paragraphs, all rows of one piece, inside a frame drawn round
    # table and notes alike (ICDAR's us-014), are not the table's either.
    cells = [k for k, r in enumerate(rows) if len(r.items) >= 2]
    if cells:
        top = [k for k in range(cells[0]) if prose(rows[k]) or _CAPTION.match(rows[k].items[0].text)]
        while top and top[-1] + 1 < cells[0] and _tail(rows[top[-1]], rows[top[-1] + 1]):
            top.append(top[-1] + 1)  # the caption's last line ("… Initiatives, / 2006–07")
        end = [k for k in range(cells[-1] + 1, len(rows)) if under(k) or _NOTE.match(rows[k].items[0].text)]
        rows = rows[top[-1] + 1 if top else 0 : end[0] if end else len(rows)]
    keep = {id(i) for r in rows for i in r.items}
    return [ln for ln in held if id(ln) in keep]


def _share(b: Box, region: Box) -> float:
    area = max((b[2] - b[0]) * (b[3] - b[1]), 1e-6)
    return _overlap(b, region) / area


# The rules' reading of a region's lines: rows of cells, header rows, and the lines it took.
Rules = Callable[[list["TextLine"]], "tuple[list[list[Cell]], int, list[TextLine]] | None"]


def shape(rows: Sequence[Sequence[Cell]]) -> tuple[int, int]:
    """Rows and columns of a table (a row's width counts its cells' colspans)."""
    return len(rows), max((sum(c.colspan for c in row) for row in rows), default=0)


def tables_in_regions(
    image: Image.Image,
    regions: Sequence[Box],
    lines: Sequence[TextLine],
    *,
    body: float,
    model: TableStructureModel | None = None,
    join: Callable[[str, str], str] | None = None,
    rules: Rules | None = None,
    weak: Sequence[Box] = (),
    cuts: Sequence[Rule] = (),
    prose: list[Box] | None = None,
) -> tuple[list[LearnedTable], list[TextLine]]:
    """The tables read in ``regions`` (a layout model's table boxes), each from the lines it holds;
    the lines no table took. ``weak``: table boxes too weak to be read alone, which may still say
    that a box inside them is part of a wider table (``widen_nested``). ``prose``, when given, gets
    the boxes found to be columns of running text, which no later reading should take for a table.

    ``rules`` (the word-position finder over a region's lines) gives a second reading: it is kept
    when it separates at least as many rows and columns as the model sees (the model merges rows set
    without padding; the words' own gaps then say more), and when the model reads no grid. On
    ICDAR 2013's tables without rulings this choice scores adjacency F1 0.914 against the model's
    0.878 and the rules' 0.688 alone (docs/ACCURACY.md)."""
    rest = list(lines)
    tables: list[LearnedTable] = []
    for region in widen_nested(regions, rest, weak):
        snapped = snap(region, rest)
        if snapped is None:
            continue
        for part in [part for stacked in _stacked(*snapped) for part in _beside(*stacked)]:
            box, held = _below_top_rule(*part, cuts, body)
            if text_columns(held, body):
                logger.debug("region %s: columns of running text side by side, not a table", box)
                if prose is not None:
                    prose.append(box)
                continue
            if listing(held):
                logger.debug("region %s: a listing in a monospaced font, kept as code", box)
                continue
            table = _read_part(image, box, held, model=model, body=body, join=join, rules=rules, cuts=cuts)
            if table is None:
                logger.debug("region %s: the model's cells do not hold its words in a grid", box)
                continue
            tables.append(table)
            taken = {id(ln) for ln in table.lines}
            rest = [ln for ln in rest if id(ln) not in taken]
    return _join_continued(tables, body), rest


LISTING_SHARE = 0.8  # of a listing's characters, at least this share in a monospaced font


def listing(held: Sequence[TextLine]) -> bool:
    """Whether a region's lines are a listing in a monospaced font: every row of it holds code, and
    code holds most of its characters. A label set beside a line of code in another face (a browser's
    "Copy" button on a listing's last line, Node.js's API reference) leaves it a listing; a table's
    header row in the text face, over cells of code, is a row without code: a table."""
    if not held:
        return False
    total = sum(len(ln.text.strip()) for ln in held)
    code = sum(len(ln.text.strip()) for ln in held if ln.mono)
    rows = group_rows(list(held))
    return code >= LISTING_SHARE * total and all(any(i.mono for i in row.items) for row in rows)


def _sentence(text: str) -> bool:
    """Whether a line reads as (the end of) a sentence, not a label: ``PROSE_WORDS`` words, or four
    ending in a full stop. A spanning head over a table's rule ("THRESHOLD FOR RELEASES", "Alternate
    Calculation with Reinsurance") is neither."""
    words = sum(1 for w in text.split() if _WORD.search(w))
    return words >= PROSE_WORDS or (words >= 4 and text.rstrip().endswith("."))


def _below_top_rule(
    box: Box, held: list[TextLine], cuts: Sequence[Rule], body: float
) -> tuple[Box, list[TextLine]]:
    """A region's lines from its table's top rule down: one or two rows of one piece each, each a
    sentence (``_sentence``), over the first rule drawn across all the region's lines, with two rows
    or more under it, are a caption's last lines the layout model's box took in (ICDAR's eu-026 as a
    scan: "to three questions on the financial literacy task." over the double top rule became the
    table's first row). A head over a rule (pieces side by side, or a label spanning the columns)
    stays."""
    from ocr_app.schema import union_box
    from ocr_app.structure.lines import group_rows

    if not cuts or len(held) < 3:
        return box, held
    left, right = min(ln.box[0] for ln in held), max(ln.box[2] for ln in held)
    height = statistics.median(ln.box[3] - ln.box[1] for ln in held)
    across = sorted(
        y
        for x0, y, x1 in joined(cuts)
        if x0 <= left + RULE_REACH * height and x1 >= right - RULE_REACH * height and box[1] < y < box[3]
    )
    if not across:
        return box, held
    above = [ln for ln in held if (ln.box[1] + ln.box[3]) / 2 < across[0]]
    below = [ln for ln in held if (ln.box[1] + ln.box[3]) / 2 >= across[0]]
    over = group_rows(above)
    if not over or len(over) > 2 or len(group_rows(below)) < 2:
        return box, held
    if any(len(pieces(row.items, body)) > 1 or not _sentence(row.text) for row in over):
        return box, held
    return union_box([ln.box for ln in below]), below


NESTED_SHARE = 0.9  # a table box this much inside another lies in it
ROWS_BESIDE = 0.5  # the share of an inner box's rows that go on outside it, inside the outer box


def widen_nested(regions: Sequence[Box], lines: Sequence[TextLine], weak: Sequence[Box] = ()) -> list[Box]:
    """Table boxes in the order to read them, of one box inside another only the one that is the table.

    Why: the layout model boxes a statement's figures as one table and the whole statement (labels and
    figures) as another, weaker one; read first, the figures' box took the figures, and the labels left
    in the outer box were no table (the labels came out as headings and a paragraph). A table's row
    does not stop at a column: when most of the inner box's rows have words beside them, on the same
    row, inside the outer box and in no other table box, the outer box is the table. The outer box may
    be one of ``weak`` (table boxes too weak to be read alone). An outer box that only adds a caption
    above or notes below keeps today's order: the inner box is read first. And the converse: an outer
    box whose lines all lie in inner boxes side by side is tables side by side."""
    from ocr_app.structure.lines import group_rows

    def inside(ln: TextLine, box: Box) -> bool:
        return _share(ln.box, box) >= MIN_LINE_SHARE

    def area(b: Box) -> float:
        return max(b[2] - b[0], 0.0) * max(b[3] - b[1], 0.0)

    def within(inner: Box, outer: Box) -> bool:
        return inner != outer and area(outer) > area(inner) and _share(inner, outer) >= NESTED_SHARE

    out = list(regions)
    for outer in regions:
        # Tables side by side, each boxed, and one box around both: the outer box's lines all lie in
        # the inner boxes, which stand apart in x. Each is a table of its own (its own title, its own
        # heads); read as one, their rows were glued into one grid and their titles into one line.
        held = [ln for ln in lines if inside(ln, outer)]
        parts = [r for r in regions if within(r, outer)]
        apart = [
            r
            for r in parts
            if any(a[2] <= r[0] or r[2] <= a[0] for a in parts) and sum(inside(ln, r) for ln in held) >= 2
        ]
        if (
            len(apart) >= 2
            and held
            and sum(any(inside(ln, r) for r in apart) for ln in held) >= NESTED_SHARE * len(held)
        ):
            logger.debug("table box %s: tables side by side, read one by one", outer)
            out.remove(outer)
    boxes = [*out, *(w for w in weak if w not in out)]
    for inner in list(out):
        for outer in boxes:
            if not within(inner, outer):
                continue
            others = [r for r in boxes if r not in (inner, outer)]
            rows = group_rows([ln for ln in lines if inside(ln, inner)])
            beside = [
                ln
                for ln in lines
                if inside(ln, outer)
                and not inside(ln, inner)
                and not any(inside(ln, r) for r in others)
                and (ln.box[2] <= inner[0] or ln.box[0] >= inner[2])
            ]
            went_on = sum(
                1
                for r in rows
                if any(
                    min(r.box[3], ln.box[3]) - max(r.box[1], ln.box[1])
                    >= 0.5 * min(r.box[3] - r.box[1], ln.box[3] - ln.box[1])
                    for ln in beside
                )
            )
            if rows and went_on >= ROWS_BESIDE * len(rows):
                logger.debug("table box %s: its rows go on in %s, which is read instead", inner, outer)
                k = out.index(inner)
                out[k : k + 1] = [] if outer in out else [outer]
                break
    return out


def _label_row(row: Sequence[Cell]) -> bool:
    """A row whose only text is its first cell (a section label or a bar across the table)."""
    return bool(row) and bool(row[0].text.strip()) and not any(c.text.strip() for c in row[1:])


def _across(row: list[Cell], width: int) -> list[Cell]:
    """A label row whose label the model spans over some columns but not all → one cell across the
    table: nothing else stands in the row, so no column boundary is read where its span stops."""
    if len(row) > 1 and row[0].colspan > 1 and _label_row(row):
        return [Cell(row[0].text, width, row[0].rowspan)]
    return row


def _join_continued(tables: list[LearnedTable], body: float) -> list[LearnedTable]:
    """Tables read in two layout regions one right under the other, where the lower one starts with a
    label row (one label, no column heads: a bar or section label across the table) and both have the
    same columns and edges → one table. A table's first row names its columns; a part that starts with
    a label across is the rest of the table above (the layout model cut it at a filled bar)."""
    out: list[LearnedTable] = []
    for t in sorted(tables, key=lambda t: t.box[1]):
        t.rows = [_across(r, shape(t.rows)[1]) for r in t.rows]
        up = out[-1] if out else None
        if (
            up is not None
            and t.rows
            and _label_row(t.rows[0])
            and shape(up.rows)[1] == shape(t.rows)[1]
            and 0 <= t.box[1] - up.box[3] <= 2 * body
            and abs(t.box[0] - up.box[0]) <= body
            and abs(t.box[2] - up.box[2]) <= body
        ):
            out[-1] = LearnedTable(
                (up.box[0], up.box[1], max(up.box[2], t.box[2]), t.box[3]),
                [*up.rows, *t.rows],
                up.header_rows,
                [*up.lines, *t.lines],
            )
            continue
        out.append(t)
    return out


def _read_part(
    image: Image.Image,
    box: Box,
    held: list[TextLine],
    *,
    model: TableStructureModel | None,
    body: float,
    join: Callable[[str, str], str] | None,
    rules: Rules | None,
    cuts: Sequence[Rule] = (),
) -> LearnedTable | None:
    table = read_table(image, box, held, model=model, body=body, join=join, cuts=cuts)
    other = rules(held) if rules else None
    if table is not None and other is not None and (kept := _without_sentences(held, other[2], body)):
        # the region took in the sentences over (or under) the table the word grid reads: the model
        # reads the table alone
        from ocr_app.schema import union_box

        box, held = union_box([ln.box for ln in kept]), kept
        table = read_table(image, box, held, model=model, body=body, join=join, cuts=cuts)
    # Rows under a key the model spans over them count as one where the word grid holds all the
    # words the model's reading does (not where it left the heads out: eu-026 on a scan).
    whole = other is not None and table is not None and _words(other[0]) >= _words(table.read_rows)
    if other is not None and (
        table is None
        or (_figures_side_by_side(table.read_rows) and shape(other[0])[1] >= shape(table.read_rows)[1])
        or (whole and _broken_sentences(table.read_rows) > _broken_sentences(other[0]))
        or (whole and _heads_joined_to_body(table.read_rows, other[0], other[1]))
        or (
            # the model gave a head a column of its own and its values to the next head's span
            # (owners set flush right under a "Budget" spanning two columns): every column of the
            # word grid holds body cells, in as many rows
            whole
            and _head_only_columns(table.rows, table.header_rows)
            and not _head_only_columns(other[0], other[1])
            and len(other[0]) >= _keyed_rows(table.rows, table.header_rows)
        )
        or (
            _covers(
                shape(other[0]),
                (
                    _keyed_rows(table.read_rows, table.header_rows)
                    - _wrapped_lines(table.read_rows, other[0], table.header_rows)
                    - _split_head(table.read_rows, other[0], table.header_rows)
                    if whole
                    else len(table.read_rows),
                    shape(table.read_rows)[1],
                ),
            )
            and not _head_only_columns(other[0], other[1])
            # the same grid: spanning cells the model reads (a header over column groups, a bar
            # across the body) are structure the word positions cannot see
            and not (
                shape(other[0]) == shape(table.read_rows)
                and spans(table.read_rows) > spans(other[0])
                and _same_words(table.read_rows, other[0], max(table.header_rows, other[1]))
            )
        )
    ):
        table = LearnedTable(box, other[0], other[1], other[2])
    return table


def _without_sentences(
    held: Sequence[TextLine], grid: Sequence[TextLine], body: float
) -> list[TextLine] | None:
    """A region's lines without the rows of running text above or below the table the word grid
    reads in it, or None when there are none to leave out. Left out: every row from the region's edge
    to the sentence nearest the grid (``_sentence``), each a single piece, and no line of the grid
    among them (a slide's "Table detail" over "The table below sets out the figures by line." over
    the table, all in one layout box: the structure model took both lines in as rows and merged two
    columns). A head right over the grid (a label spanning a column group) is no sentence and stays."""
    from ocr_app.structure.lines import group_rows

    mine = {id(ln) for ln in grid}
    if not grid or len(grid) >= len(held) or not mine <= {id(ln) for ln in held}:
        return None
    top, bottom = min(ln.box[1] for ln in grid), max(ln.box[3] for ln in grid)
    rest = [ln for ln in held if id(ln) not in mine]
    above = group_rows([ln for ln in rest if ln.box[3] <= top + 0.2 * body])
    below = group_rows([ln for ln in rest if ln.box[1] >= bottom - 0.2 * body])
    if sum(len(r.items) for r in [*above, *below]) != len(rest):
        return None  # a line beside the grid's rows: not the grid's edge
    gone: list[TextLine] = []
    for side in (above, list(reversed(below))):
        last = max((k for k, r in enumerate(side) if _sentence(r.text)), default=-1)
        if any(len(pieces(r.items, body)) > 1 for r in side[: last + 1]):
            return None
        gone += [ln for r in side[: last + 1] for ln in r.items]
    if not gone:
        return None
    out = {id(ln) for ln in gone}
    return [ln for ln in held if id(ln) not in out]


def _norm(text: str) -> str:
    """A cell's text with its white space as one space (cells compared across two readings)."""
    return " ".join(text.split())


def _words(rows: Sequence[Sequence[Cell]]) -> int:
    """How much text a reading holds: its letters and digits (a word mended at a line-end hyphen by
    one reading and not the other counts the same)."""
    return sum(ch.isalnum() for row in rows for c in row for ch in c.text)


def _keyed_rows(rows: Sequence[Sequence[Cell]], head: int) -> int:
    """The rows of a reading, body rows under a key the model spans over them counted with it. Why:
    where rows are set without padding, the model reads a wrapped description's lines as rows under a
    key spanning them ("M2" over "Publish" and "quarterly water quality data"); the word positions'
    one row a key is then the better reading. A head spanning the header rows ("Site" beside a group's
    head and its years) is structure and counts as read."""
    n = under = 0
    for k, row in enumerate(rows):
        if under > 0:
            under -= 1
            continue
        n += 1
        under = row[0].rowspan - 1 if row and k >= head else 0
    return n


def _broken_sentences(rows: Sequence[Sequence[Cell]]) -> int:
    """How many cells of a reading start in the middle of a sentence: three words or more in lower
    case, under a cell of three words or more that ends no sentence. Why: where a table's rows are
    set as close as a cell's lines (a LaTeX ``p`` column), the model may cut a wrapped description
    between two of its lines ("… to four more" | "schools in the east" under it); the word grid's
    rows, each begun by a key, do not."""
    width = shape(rows)[1]
    if width < 2:
        return 0
    grid, under = _grid(rows, width)
    n = 0
    for r in range(1, len(grid)):
        for k in range(width):
            upper, lower = grid[r - 1][k].strip(), grid[r][k].strip()
            if (
                not under[r][k]
                and len(upper.split()) >= 3
                and len(lower.split()) >= 3  # ("no." under "Coronary heart disease": a head)
                and not upper.endswith(_SENTENCE_ENDS)
                and lower[:2].isalpha()
                and lower[:2].islower()
            ):
                n += 1
    return n


_SENTENCE_ENDS = (".", ":", ";", "!", "?")


def _heads_joined_to_body(
    model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int
) -> bool:
    """Whether the model read the word grid's one row of heads and its first body row as one row:
    most of its first row's cells are a head and the body cell under it ("Measure M1", "Description
    Replace the bearings …"). Why: a head row set right on the body (a filled bar over rows with no
    padding) may show the model no row boundary, where the weights and the key column do."""
    if head != 1 or len(rules) < 3 or not model or len(rules[0]) != len(rules[1]):
        return False
    joins = {
        _norm(f"{h.text} {b.text}") for h, b in zip(rules[0], rules[1], strict=True) if h.text and b.text
    }
    first = [_norm(c.text) for c in model[0] if c.text.strip()]
    return len(joins) >= 2 and sum(1 for t in first if t in joins) >= max(2, len(first) / 2)


def _wrapped_lines(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int) -> int:
    """The model's body rows that are a cell's wrapped line: no key, and each of its texts joins the
    text above it into one cell of the word grid's reading, or into the start of one ("Q1" over "2026"
    in a narrow "Due" column, "Q1 2026" in the grid). Why: the model cuts such a row where the wrapped line's gap looks like a
    row's; the word positions keep the row whole, and the rows then count as one."""
    width = shape(model)[1]
    if not model or not rules or width < 2:
        return 0
    grid, under = _grid(model, width)
    cells = {_norm(c.text) for row in rules for c in row if c.text.strip()}
    n = 0
    above = [_norm(t) for t in grid[max(head, 1)]] if len(grid) > max(head, 1) else []
    for r in range(max(head, 1) + 1, len(model)):
        texts = [(k, _norm(t)) for k, t in enumerate(grid[r]) if t.strip()]
        joined = {k: f"{above[k]} {t}" for k, t in texts if above[k]}
        if (
            texts
            and not grid[r][0].strip()
            and not any(under[r])
            and len(joined) == len(texts)
            and all(j in cells or any(c.startswith(f"{j} ") for c in cells) for j in joined.values())
        ):
            n += 1  # a wrapped line: the text above it grows (a cell of three lines or more)
            above = [joined.get(k, t) for k, t in enumerate(above)]
        else:
            above = [_norm(t) for t in grid[r]]
    return n


def _split_head(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int) -> int:
    """How many more header rows the model reads than the word grid where its header rows, put
    together column by column, are the word grid's one head row: each column's head in one of them
    only ("Change (%)" spanning two rows beside an empty cell over three columns, over "Region",
    "2023", "2024": one head row on a dark bar). Heads over column groups have two texts in a column
    and are structure the words cannot show."""
    width = shape(model)[1]
    top = min(max(head, HEAD_ROWS), len(model) - 1)  # the model often marks no header rows
    if top < 2 or not rules or shape(rules)[1] != width:
        return 0
    mine, theirs = _slots(model, width), [_norm(t) for t in _slots(rules, width)[0]]
    for n in range(top, 1, -1):
        cols = [[_norm(mine[r][k]) for r in range(n) if mine[r][k].strip()] for k in range(width)]
        if all(len(c) <= 1 for c in cols) and [c[0] if c else "" for c in cols] == theirs:
            return n - 1
    return 0


def _head_only_columns(rows: Sequence[Sequence[Cell]], head: int) -> bool:
    """Whether a word-grid reading has a column that holds no body cell: a head's second piece the
    grid cut off, not a column ("Domestic" and "(%)" set apart on a coloured bar, read by OCR as two
    pieces: ICDAR's eu-019 on a scan came out with eight columns for five), and the model's reading
    is taken. The first row counts as the head where the grid marked none (OCR's weights often show
    none)."""
    body = rows[max(head, 1) :]
    if not body:
        return False
    filled: set[int] = set()
    for row in body:
        k = 0
        for c in row:
            if c.text.strip():
                filled.update(range(k, k + c.colspan))
            k += c.colspan
    return len(filled) < shape(rows)[1]


def _figures_side_by_side(rows: Sequence[Sequence[Cell]]) -> bool:
    """Whether a cell spanning columns holds two figures or more side by side ("2,753,438 2,799,250"):
    the model merged a row's value cells, which no table spans; the word positions' reading, with as
    many columns, is then the better one (ICDAR's us-018, a head over column groups just above)."""
    return any(
        c.colspan > 1
        and len(tokens := c.text.split()) >= 2
        and all(any(ch.isdigit() for ch in t) and _FIGURE.match(t) for t in tokens)
        for row in rows
        for c in row
    )


def moved_lines(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]]) -> bool:
    """Whether the model's reading, as many rows as the rules' and of the same letters and digits,
    puts some of a row's in another row: a cell's wrapped line taken into the row above ("Use either
    1.5.0 or 1.5.2 Use either" over "1.5.0, 1.5.1 or 1.5.2"). Where the letters differ, one reading
    holds words the other left out (a column a grid lost), and this says nothing of which is right;
    spaces and hyphens differ with how each joins a wrapped word ("deprecated-" over "safe")."""

    def ink(rows: Sequence[Sequence[Cell]]) -> collections.Counter[str]:
        return collections.Counter(ch for row in rows for c in row for ch in c.text if ch.isalnum())

    return (
        len(model) == len(rules)
        and ink(model) == ink(rules)
        and any(ink([a]) != ink([b]) for a, b in zip(model, rules, strict=True))
    )


def spans(rows: Sequence[Sequence[Cell]]) -> int:
    """The cells of a reading that span more than one column or row."""
    return sum(1 for row in rows for c in row if c.colspan > 1 or c.rowspan > 1)


def inner_spans(rows: Sequence[Sequence[Cell]]) -> int:
    """``spans`` of a ruled reading, less a first or last row of one cell across the table: a title or
    a source note the table's frame holds ("Exhibit 9 …" over ICDAR's us-013 and "Source: …" under
    it) is no cell the model's reading merges or loses. A group's label across the table between its
    rows ("Operations") still counts."""
    width = shape(rows)[1]
    ends = [k for k in (0, len(rows) - 1) if rows and len(rows[k]) == 1 and rows[k][0].colspan == width]
    return spans([row for k, row in enumerate(rows) if k not in ends])


def _same_words(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int = 0) -> bool:
    """Whether the model's reading holds the rules' words where the rules have them: each spanning
    cell's text is one cell of the rules' reading (a head over a column group; not heads of three
    columns set one space apart, "Import Export Notes", nor one glued from two columns' lines,
    "Sampled Total students in"), the rows under its lowest span read the same as the rules' last
    rows (no head line moved into the first body row), and each body row (from ``head``) holds the
    rules' row's texts in the same places, a spanning cell's in its first row: a key spanning two
    rows of the model where the rules see a row's rest under the heads and the keyed row after it
    ("M2" beside "bridges on the ring road" and "Publish ...") is not the same table."""

    cells = {_norm(c.text) for row in rules for c in row}
    if any(
        c.text.strip() and _norm(c.text) not in cells
        for row in model
        for c in row
        if c.colspan > 1 or c.rowspan > 1
    ):
        return False
    width = shape(model)[1]
    tail: list[list[str]] = []  # the model's last rows, up to its lowest row a span reaches
    for row in reversed(model):
        if any(c.colspan > 1 or c.rowspan > 1 for c in row) or len(row) != width:
            break
        tail.insert(0, [_norm(c.text) for c in row])
    theirs = [[_norm(c.text) for c in row] for row in rules[len(rules) - len(tail) :]] if tail else []
    if tail != theirs:
        return False
    mine, other = _slots(model, width), _slots(rules, width)
    # the body starts under the header rows and under every cell of the first row ("State" beside
    # the heads over column groups and their "no." and "Rate")
    start = max(head, max((c.rowspan for c in model[0]), default=0) if model else 0)
    return len(mine) == len(other) and all(
        [_norm(t) for t in a] == [_norm(t) for t in b]
        for a, b in zip(mine[start:], other[start:], strict=True)
    )


def _slots(rows: Sequence[Sequence[Cell]], width: int) -> list[list[str]]:
    """A reading as a full grid of texts: a spanning cell's text in its first slot, the slots it
    covers empty."""
    return _grid(rows, width)[0]


def _grid(rows: Sequence[Sequence[Cell]], width: int) -> tuple[list[list[str]], list[list[bool]]]:
    """``_slots``, and for each slot whether a cell of an earlier row spans down over it."""
    grid = [[""] * width for _ in rows]
    taken = [[False] * width for _ in rows]
    under = [[False] * width for _ in rows]
    for r, row in enumerate(rows):
        k = 0
        for c in row:
            while k < width and taken[r][k]:
                k += 1
            if k >= width:
                break
            grid[r][k] = c.text
            for dr in range(c.rowspan):
                for dk in range(c.colspan):
                    if r + dr < len(rows) and k + dk < width:
                        taken[r + dr][k + dk] = True
                        under[r + dr][k + dk] = dr > 0
            k += c.colspan
    return grid, under


_LETTERS = re.compile(r"[^0-9a-z]+")
HEAD_ROWS = 3  # a repeated header is looked for among a region's first rows (a caption may come first)
STACK_GAP = 1.5  # × the region's median gap between rows: the white space that ends one table


def _stacked(box: Box, held: list[TextLine]) -> list[tuple[Box, list[TextLine]]]:
    """A region the layout model boxed over tables set one under the other → one part per table.

    Why: the model boxes two tables a little apart as one, and the structure model then reads one
    grid for both (the second's header becomes a body row, its rows drift). A table does not repeat
    its header row in its body: a row of words (no figures) that repeats one of the region's first
    rows, after a gap wider than the rows' usual gap, starts the next table."""
    from ocr_app.schema import union_box
    from ocr_app.structure.lines import group_rows

    rows = sorted(group_rows(held), key=lambda r: r.box[1])
    if len(rows) < 4:
        return [(box, held)]

    def key(row) -> str:
        return _LETTERS.sub("", " ".join(i.text for i in sorted(row.items, key=lambda i: i.box[0])).lower())

    gaps = [max(b.box[1] - a.box[3], 0.0) for a, b in pairwise(rows)]
    usual = sorted(gaps)[len(gaps) // 2]
    heads = [key(r) for r in rows[:HEAD_ROWS]]
    cuts = [
        k
        for k in range(2, len(rows) - 1)
        if key(rows[k])
        and key(rows[k]) in heads[: k - 1]
        and not any(ch.isdigit() for ch in key(rows[k]))
        and gaps[k - 1] > max(STACK_GAP * usual, 0.0)
    ]
    if not cuts:
        return [(box, held)]
    parts = []
    for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        lines = [i for r in rows[a:b] for i in r.items]
        parts.append((union_box([ln.box for ln in lines]), lines))
    logger.debug("region %s: %d tables one under the other", box, len(parts))
    return parts


def _beside(box: Box, held: list[TextLine]) -> list[tuple[Box, list[TextLine]]]:
    """A region the layout model boxed over two tables set side by side → one part per table, each
    from its row of heads down (``borderless.side_by_side``: the first head comes again after the
    row's widest gap). A line above the heads on one side alone is that table's title: left as text.
    Why: the structure model reads one grid of both, their titles as heads over column groups
    (issue 30, round 11)."""
    from ocr_app.schema import union_box
    from ocr_app.structure.borderless import side_by_side
    from ocr_app.structure.lines import group_rows

    rows = sorted(group_rows(held), key=lambda r: r.box[1])
    pair = side_by_side([r.items for r in rows])
    if pair is not None and pair[1] <= HEAD_ROWS:
        split, row = pair[0], rows[pair[1]]
        parts = []
        for left in (True, False):
            lines = [
                ln for ln in held if ((ln.box[0] + ln.box[2]) / 2 < split) == left and ln.box[3] > row.box[1]
            ]
            if lines:
                parts.append((union_box([ln.box for ln in lines]), lines))
        logger.debug("region %s: two tables side by side", box)
        return parts
    return [(box, held)]
