"""Which of a page's lines a table region holds.

Why: the layout model's table box is a guess of where a table stands. It may leave out the table's last
rows, its column heads or a column beside it, and it may reach into the page's heading, a side
caption, a paragraph or a listing. Here the box is grown and trimmed by the page's lines, and of boxes
nested in one another only the table is kept (``widen_nested``).
"""

from __future__ import annotations

import itertools
import logging
import re
import statistics
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from ocr_app.structure.lines import group_rows, vertical_overlap
from ocr_app.structure.rule_frames import joined, pieces
from ocr_app.structure.slot_rows import RULE_REACH
from ocr_app.structure.table_html import NOTE_LEAD
from ocr_app.structure.table_slots import box_overlap, x_overlap

if TYPE_CHECKING:
    from ocr_app.schema import Box
    from ocr_app.structure.lines import Row, Rule, TextLine

logger = logging.getLogger(__name__)

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
            or any(reads_as_sentence(ln.text) or len(ln.text.split()) > HEADING_WORDS for ln in row.items)
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
        if any(0 <= ln.box[1] - m.box[3] <= height and x_overlap(ln.box, m.box) > 0 for m in stack):
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
        {id(ln) for ln in celled if any(x_overlap(_inked(p), _inked(ln)) >= reach for p in st)}
        for st in stacks
    ]
    if any(not u for u in under):
        under = _nearest_columns(stacks, celled, height) or under
    # each stack over lines of the region, no two over the same line: columns, not one label's words
    if any(not u for u in under) or any(a & b for i, a in enumerate(under) for b in under[i + 1 :]):
        return []
    return pieces


# × the row height: a head centred over a column of figures set flush right stands this near them
NEAR_HEAD = 2.0


def _nearest_columns(
    stacks: list[list[TextLine]], celled: list[TextLine], height: float
) -> list[set[int]] | None:
    """Each stack's column: the lines of the region's column nearest it, within ``NEAR_HEAD`` rows and
    clearly nearer than the next (by half a row), or None where a stack has none. Why: heads centred
    over wide columns whose figures are set flush right (or keys flush left) stand over none of their
    lines: "Budget" a row's height left of its "647" (the probe's rows-labelled-wide-centred), and the
    heads came out as a line of text over the table."""
    columns: list[tuple[float, float, set[int]]] = []
    for ln in sorted(celled, key=lambda ln: _inked(ln)[0]):
        a, b = _inked(ln)[0], _inked(ln)[2]
        if columns and a <= columns[-1][1] + 0.5 * height:
            x0, x1, ids = columns[-1]
            columns[-1] = (x0, max(x1, b), ids | {id(ln)})
        else:
            columns.append((a, b, {id(ln)}))
    out: list[set[int]] = []
    for st in stacks:
        a, b = min(_inked(p)[0] for p in st), max(_inked(p)[2] for p in st)
        near = sorted((max(x0 - b, a - x1, 0.0), k) for k, (x0, x1, _) in enumerate(columns))
        if (
            not near
            or near[0][0] > NEAR_HEAD * height
            or (len(near) > 1 and near[1][0] - near[0][0] < 0.5 * height)
        ):
            return None
        out.append(columns[near[0][1]][2])
    return out


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
    return box_overlap(b, region) / area


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


def reads_as_sentence(text: str) -> bool:
    """Whether a line reads as (the end of) a sentence, not a label: ``PROSE_WORDS`` words, or four
    ending in a full stop. A spanning head over a table's rule ("THRESHOLD FOR RELEASES", "Alternate
    Calculation with Reinsurance") is neither."""
    words = sum(1 for w in text.split() if _WORD.search(w))
    return words >= PROSE_WORDS or (words >= 4 and text.rstrip().endswith("."))


def below_top_rule(
    box: Box, held: list[TextLine], cuts: Sequence[Rule], body: float
) -> tuple[Box, list[TextLine]]:
    """A region's lines from its table's top rule down: one or two rows of one piece each, each a
    sentence (``reads_as_sentence``), over the first rule drawn across all the region's lines, with two rows
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
    if any(len(pieces(row.items, body)) > 1 or not reads_as_sentence(row.text) for row in over):
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
