"""Ruled tables on a page image: the cell grid from its drawn lines, for engines that see pixels.

Why: OCR gives text lines, not cells. A ruled table whose cells wrap onto several lines, or whose
header cells span columns, cannot be rebuilt from text alignment alone (``passes.tables.detect_tables``);
its rulings say where every cell is. Horizontal and vertical rulings are found with OpenCV
morphology (an opening with a long thin kernel keeps only long straight strokes, never letters);
grid lines are where ruling segments cluster; two neighbouring grid slots are one merged cell where
the ruling between them is missing. Tables drawn without vertical rulings are left to the text
alignment detection.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ocr_app.schema import Box
from ocr_app.structure.cell_lines import set_apart, stacked_row
from ocr_app.structure.lines import TextLine, group_rows
from ocr_app.structure.paragraphs import join_lines
from ocr_app.structure.table_html import Cell, header_rows, join_cell_lines

logger = logging.getLogger(__name__)

INK = 160  # grey level below which a pixel is ink
FAINT = 18  # a ruling may be this much darker than the paper around it only (light grey rules)
MAX_THICK = 0.4  # × line_px: a ruling is thinner than this (a shaded band is no ruling)
MIN_SIDE = 40  # a table is at least this many pixels wide and high
COVER = 0.6  # a ruling separates two slots when it covers this share of their common edge


@dataclass
class Segment:
    """One straight ruling: ``pos`` across it, ``start``..``end`` along it (pixels)."""

    pos: float
    start: float
    end: float


@dataclass
class GridCell:
    """A cell of a ruled grid: its slot range and its box (pixels)."""

    row: int
    col: int
    rowspan: int
    colspan: int
    box: Box


@dataclass
class RuledGrid:
    box: Box
    cols: list[float]  # x of the vertical grid lines, left to right
    rows: list[float]  # y of the horizontal grid lines, top to bottom
    cells: list[GridCell]  # row-major by top-left slot


def _boxes(mask: Any) -> list[tuple[int, int, int, int]]:
    """Bounding boxes (x, y, w, h) of the mask's connected blobs (outer contours: ~100× faster than
    ``connectedComponentsWithStats`` on a page)."""
    import cv2

    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    return [cv2.boundingRect(c) for c in contours]


def _segments(mask: Any, horizontal: bool, thick: float, *, bars: Any = None) -> list[Segment]:
    """The rulings of a mask of long strokes. A band thicker than ``thick`` is no ruling; with
    ``bars`` (the ink the strokes come from), a solid horizontal bar a row high (a table's head set
    light on a dark fill) gives its top and bottom edges, which frame its row as rulings do. Why:
    Word's table styles set the head white on a blue bar and part the body rows by pale rules; the
    bar's foot was no ruling, so the grid began a row down and its first body row was read as the
    head (the probe's word-* documents)."""
    out: list[Segment] = []
    for x, y, w, h in _boxes(mask):
        if (h if horizontal else w) > thick:
            if bars is not None and horizontal and h <= BAR_ROWS * thick and _solid(bars, x, y, w, h):
                out += [
                    Segment(float(y), float(x), float(x + w)),
                    Segment(float(y + h), float(x), float(x + w)),
                ]
            continue  # a band, not a ruling
        if horizontal:
            out.append(Segment(y + h / 2, float(x), float(x + w)))
        else:
            out.append(Segment(x + w / 2, float(y), float(y + h)))
    return out


BAR_ROWS = 7.5  # × ``thick`` (0.4 of a line's height): a head's bar is at most three lines high
BAR_SOLID = 0.9  # share of a bar's box its fill covers


def _solid(mask: Any, x: int, y: int, w: int, h: int) -> bool:
    return float((mask[y : y + h, x : x + w] > 0).mean()) >= BAR_SOLID


def _cluster(values: list[float], tol: float) -> list[float]:
    """Positions closer than ``tol`` are one grid line (their mean)."""
    groups: list[list[float]] = []
    for v in sorted(values):
        if groups and v - groups[-1][-1] <= tol:
            groups[-1].append(v)
        else:
            groups.append([v])
    return [sum(g) / len(g) for g in groups]


def _covers(segments: list[Segment], pos: float, a: float, b: float, tol: float) -> bool:
    """Whether rulings at ``pos`` cover most of the span ``a``..``b``."""
    covered = 0.0
    for s in segments:
        if abs(s.pos - pos) <= tol:
            covered += max(0.0, min(b, s.end) - max(a, s.start))
    return covered >= COVER * (b - a)


def rule_ink(grey: Any) -> Any:
    """Pixels that may belong to a ruling: text-dark ink, or a thin stroke at least ``FAINT`` darker
    than the paper or shading around it (a grey-level black-hat). Why not the text's ink level alone:
    tables are often ruled in light grey (LibreOffice's and DocBook's defaults render at 176-229 on
    white paper); why not a lighter global level: a shaded header band would then be one blob of
    "ink" swallowing the rulings in it."""
    import cv2
    import numpy as np

    arr = np.asarray(grey)
    thin = cv2.morphologyEx(arr, cv2.MORPH_BLACKHAT, cv2.getStructuringElement(cv2.MORPH_RECT, (7, 7)))
    return (((arr < INK) | (thin >= FAINT)) * 255).astype(np.uint8)


def find_grids(grey: Any, *, line_px: float = 20.0, text_boxes: Sequence[Box] = ()) -> list[RuledGrid]:
    """Ruled grids (≥ 2 × 2 slots) on a grey page image; ``line_px`` is about one text line's height.

    The kernels are longer than any letter (``2 × line_px``), so text never passes as a ruling; the
    cores of ``text_boxes`` (OCR lines) are blanked before horizontal rulings are looked for, since a
    faint threshold can join a word's letters into one long run.
    """
    import cv2
    import numpy as np

    ink = rule_ink(grey)
    length = max(int(2 * line_px), 15)
    horiz = _horizontal(ink, length, text_boxes)
    vert = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, length)))
    thick = max(MAX_THICK * line_px, 6.0)
    hsegs, vsegs = _segments(horiz, True, thick, bars=ink), _segments(vert, False, thick)
    if len(hsegs) < 3 or len(vsegs) < 2:
        return []
    joined = cv2.dilate(horiz | vert, np.ones((5, 5), np.uint8))
    grids: list[RuledGrid] = []
    tol = 4.0
    for x, y, w, h in sorted(_boxes(joined), key=lambda b: (b[1], b[0])):
        if w < MIN_SIDE or h < MIN_SIDE:
            continue
        x0, y0, x1, y1 = float(x), float(y), float(x + w), float(y + h)
        hs = [s for s in hsegs if y0 <= s.pos <= y1 and s.start >= x0 - tol and s.end <= x1 + tol]
        vs = [s for s in vsegs if x0 <= s.pos <= x1 and s.start >= y0 - tol and s.end <= y1 + tol]
        rows = _cluster([s.pos for s in hs], tol)
        cols = _cluster([s.pos for s in vs], tol)
        if len(rows) < 3 or len(cols) < 2:
            continue  # one row, or no column rulings: a frame or a rule, not a ruled table
        sides = _open_sides(cols, rows, hs, tol, line_px)
        rows, cols = _open_ends(rows, cols, vs, tol, line_px), sides
        if len(cols) < 3:
            continue  # one column
        grid = _grid(rows, cols, hs, vs, tol, ink)
        if grid is not None:
            grids.append(grid)
    return grids


def _horizontal(ink: Any, length: int, text_boxes: Sequence[Box]) -> Any:
    """The ink of horizontal strokes at least ``length`` long, with the cores of the text lines blanked
    first (a faint threshold can join a word's letters into one long run)."""
    import cv2
    import numpy as np

    flat = ink.copy()
    for x0, y0, x1, y1 in text_boxes:
        pad = 0.25 * (y1 - y0)
        flat[int(y0 + pad) : int(np.ceil(y1 - pad)), int(x0) : int(np.ceil(x1))] = 0
    return cv2.morphologyEx(flat, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (length, 1)))


def horizontal_rules(
    grey: Any, *, line_px: float = 20.0, text_boxes: Sequence[Box] = ()
) -> list[tuple[float, float, float]]:
    """The page image's horizontal rulings, (x0, y, x1) in pixels, at least four line heights long: what
    frames a table drawn by rules alone (``structure.rule_frames``) and parts its rows, as the text
    layer's drawn rules do on a born-digital page."""
    length = max(int(4 * line_px), 30)
    thick = max(MAX_THICK * line_px, 6.0)
    ink = rule_ink(grey)
    return [
        (s.start, s.pos, s.end)
        for s in _segments(_horizontal(ink, length, text_boxes), True, thick)
        if not _inside_band(ink, s, thick)
    ]


BAND_SHARE = 0.5  # a pixel row this full of ink along a ruling's length is more of the same band


def _inside_band(ink: Any, seg: Segment, thick: float) -> bool:
    """Whether a horizontal ruling lies inside a band of ink, farther than ``thick`` from both its top
    and bottom edges, counting as the band's every row at least ``BAND_SHARE`` ink along the ruling.
    Why: blanking the text lines' cores cuts a table head's dark fill into strips as thin as rulings
    between its rows of light lettering, and the rows through the lettering are still mostly ink. The
    strips along the fill's top and bottom edges stay: those edges frame and part a table as rules do.
    A ruling under a line of dark text has paper beside it: the letters ink a fifth of a row, not half."""
    x0, x1 = max(int(seg.start), 0), int(seg.end) + 1
    row = min(max(round(seg.pos), 0), ink.shape[0] - 1)
    reach = int(thick) + 1

    def inked(y: int) -> bool:
        return 0 <= y < ink.shape[0] and float(ink[y, x0:x1].mean()) >= BAND_SHARE * 255

    return all(inked(row - k) for k in range(1, reach + 1)) and all(
        inked(row + k) for k in range(1, reach + 1)
    )


def _open_sides(
    cols: list[float], rows: list[float], hs: list[Segment], tol: float, line_px: float
) -> list[float]:
    """Column edges with the table's open sides added: when the top and bottom rules run on past the
    outermost vertical ruling (a table whose first or last column has no outer border), their ends are
    the table's edges."""

    def ends(y: float) -> tuple[float, float]:
        near = [s for s in hs if abs(s.pos - y) <= tol]
        return min(s.start for s in near), max(s.end for s in near)

    (top_left, top_right), (bottom_left, bottom_right) = ends(rows[0]), ends(rows[-1])
    left, right = max(top_left, bottom_left), min(top_right, bottom_right)
    out = list(cols)
    if cols[0] - left > line_px:
        out.insert(0, left)
    if right - cols[-1] > line_px:
        out.append(right)
    return out


def _open_ends(
    rows: list[float], cols: list[float], vs: list[Segment], tol: float, line_px: float
) -> list[float]:
    """Row edges with the table's open ends added: where every column ruling runs on a line or more
    past the last (or first) horizontal ruling and they stop together, their ends are the table's
    edge. Why: a table broken across two columns or pages leaves its last row open, ruled at its
    sides only (the browser and word processors do); that row was read as a line of text under the
    grid ("M2 Publish Environment Q1 quarterly 2026 water")."""

    def reach(pick: Any) -> list[float]:
        out = []
        for x in cols:
            near = [s for s in vs if abs(s.pos - x) <= tol]
            if not near:
                return []
            out.append(pick(near))
        return out

    out = list(rows)
    foot = reach(lambda near: max(s.end for s in near))
    if foot and min(foot) - rows[-1] >= line_px and max(foot) - min(foot) <= 2 * tol:
        out.append(min(foot))
    head = reach(lambda near: min(s.start for s in near))
    if head and rows[0] - max(head) >= line_px and max(head) - min(head) <= 2 * tol:
        out.insert(0, max(head))
    return out


def _grid(
    rows: list[float], cols: list[float], hs: list[Segment], vs: list[Segment], tol: float, ink: Any = None
) -> RuledGrid | None:
    """Slots between grid lines, merged where the ruling between two neighbours is missing. With the
    page's ``ink``, a column's ruling may also be a stroke standing a row high only (``_stands``)."""
    nr, nc = len(rows) - 1, len(cols) - 1
    parent = list(range(nr * nc))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for r in range(nr):
        for c in range(nc):
            if (
                c + 1 < nc
                and not _covers(vs, cols[c + 1], rows[r], rows[r + 1], tol)
                and not (ink is not None and _stands(ink, cols[c + 1], rows[r], rows[r + 1], tol))
            ):
                parent[find(r * nc + c + 1)] = find(r * nc + c)
            if r + 1 < nr and not _covers(hs, rows[r + 1], cols[c], cols[c + 1], tol):
                parent[find((r + 1) * nc + c)] = find(r * nc + c)
    groups: dict[int, list[tuple[int, int]]] = {}
    for r in range(nr):
        for c in range(nc):
            groups.setdefault(find(r * nc + c), []).append((r, c))
    cells: list[GridCell] = []
    for slots in groups.values():
        r0, r1 = min(r for r, _ in slots), max(r for r, _ in slots)
        c0, c1 = min(c for _, c in slots), max(c for _, c in slots)
        if len(slots) != (r1 - r0 + 1) * (c1 - c0 + 1):
            return None  # merged slots that are no rectangle: a drawing, not a table
        cells.append(
            GridCell(r0, c0, r1 - r0 + 1, c1 - c0 + 1, (cols[c0], rows[r0], cols[c1 + 1], rows[r1 + 1]))
        )
    cells.sort(key=lambda g: (g.row, g.col))
    return RuledGrid((cols[0], rows[0], cols[-1], rows[-1]), cols, rows, cells)


def _stands(ink: Any, x: float, top: float, bottom: float, tol: float) -> bool:
    """Whether a stroke of ``ink`` stands at column edge ``x`` from row edge ``top`` to ``bottom``.
    Why: the opening that finds rulings keeps strokes two lines long, and a head row over a label row
    spanning the table ("Staff") is ruled into columns for its own height only (1.5 lines): its
    columns were lost and its heads read as one cell. At a column edge the grid's longer rulings
    place, a stroke through the whole row is that column's ruling; no letter spans a row's height."""
    import numpy as np

    y0, y1 = round(top) + 2, round(bottom) - 2
    x0, x1 = max(round(x - tol), 0), round(x + tol) + 1
    if y1 <= y0 or x1 <= x0:
        return False
    band = np.asarray(ink)[y0:y1, x0:x1] > 0
    return bool(band.size) and float(band.mean(axis=0).max()) >= STROKE_COVER


STROKE_COVER = 0.95  # share of a row's height a column's stroke inks (anti-aliasing, a crossing)


def row_shading(grey: Any, grid: RuledGrid) -> list[bool]:
    """Per grid row, whether its background is shaded (a header band): the median of its non-ink
    pixels is clearly darker than white."""
    import numpy as np

    arr = np.asarray(grey)
    out = []
    for r in range(len(grid.rows) - 1):
        y0, y1 = int(grid.rows[r]) + 3, int(grid.rows[r + 1]) - 2
        x0, x1 = int(grid.cols[0]) + 3, int(grid.cols[-1]) - 2
        band = arr[y0:y1, x0:x1]
        paper = band[band >= INK] if band.size else band
        out.append(bool(paper.size) and float(np.median(paper)) < 235)
    return out


MIN_FILL = 0.4  # a grid with fewer filled cells is a form or a drawing, not a table
MAX_MERGED_SHARE = 0.3  # more merged cells than this share: boxes of a diagram, not a table


class GridTable(NamedTuple):
    """A ruled table read from the page image: box, rows of cells with their spans and header rows
    (first, as ``pipeline.build_blocks`` takes tables), whether the rulings part every row and column
    its words show (``exact``: no grid row holds two or more cells of values stacked one a line, no
    cell holds pieces a column gap apart; ``structure.cell_lines``), and the lines in it."""

    box: Box
    rows: list[list[Cell]]
    header_rows: int
    exact: bool
    lines: list[TextLine]


def grid_tables(
    grey: Any, lines: list[TextLine], *, line_px: float = 20.0
) -> tuple[list[GridTable], list[TextLine]]:
    """Ruled tables on the page image filled with the OCR lines whose centre lies in each cell, and
    the lines that are in no table."""
    tables: list[GridTable] = []
    used: set[int] = set()
    for grid in find_grids(grey, line_px=line_px, text_boxes=[ln.box for ln in lines]):
        lines = cut_at_rulings(lines, grid)
        rows: list[list[Cell]] = [[] for _ in range(len(grid.rows) - 1)]
        bold: list[list[bool]] = [[] for _ in range(len(grid.rows) - 1)]
        held: list[list[tuple[list, float, float]]] = [[] for _ in range(len(grid.rows) - 1)]
        ids: set[int] = set()
        for cell in grid.cells:
            x0, y0, x1, y1 = cell.box
            inside = [
                ln
                for ln in lines
                if id(ln) not in used
                and x0 <= (ln.box[0] + ln.box[2]) / 2 <= x1
                and y0 <= (ln.box[1] + ln.box[3]) / 2 <= y1
            ]
            ids.update(id(ln) for ln in inside)
            bold[cell.row].extend(ln.bold for ln in inside)
            text_rows = group_rows(inside)
            held[cell.row].append((text_rows, x0, x1))
            text = join_cell_lines([r.text for r in text_rows], join=join_lines)
            rows[cell.row].append(Cell(text, cell.colspan, cell.rowspan))
        cells = [c for row in rows for c in row]
        filled = sum(1 for c in cells if c.text)
        merged = sum(1 for c in cells if c.colspan > 1 or c.rowspan > 1)
        if filled < MIN_FILL * len(cells) or merged > MAX_MERGED_SHARE * len(cells):
            logger.debug(
                "ruled grid at %s skipped: %d of %d cells filled, %d merged",
                grid.box,
                filled,
                len(cells),
                merged,
            )
            continue
        used |= ids
        heavy = [all(b) if b else None for b in bold]
        exact = not any(stacked_row(r) or any(set_apart(c[0], OCR_GAP) for c in r) for r in held)
        head = header_rows(heavy, row_shading(grey, grid))
        box = grid.box
        heads = _heads_on_top(lines, grid, used)
        if heads:
            # The heads' row, one cell a column, over the grid's rows.
            rows.insert(
                0,
                [
                    Cell(" ".join(ln.text for ln in heads if _column(ln, grid) == k))
                    for k in range(len(grid.cols) - 1)
                ],
            )
            head += 1
            used |= {id(ln) for ln in heads}
            ids |= {id(ln) for ln in heads}
            box = (box[0], min(box[1], *(ln.box[1] for ln in heads)), box[2], box[3])
        inside = [ln for ln in lines if id(ln) in ids]
        tables.append(GridTable(box, rows, head, exact, inside))
    return tables, [ln for ln in lines if id(ln) not in used]


OCR_GAP = 1.5  # × a line's height: pieces of one OCR row this far apart in one cell stand in two columns
HEAD_REACH = 0.3  # × a line's height: a head may end this far above the grid's top edge


def _column(ln: TextLine, grid: RuledGrid) -> int | None:
    """The grid column that holds the whole line (its ink within the column's rulings), or None."""
    tol = 0.1 * (ln.box[3] - ln.box[1])
    return next(
        (
            k
            for k, (a, b) in enumerate(zip(grid.cols, grid.cols[1:], strict=False))
            if ln.box[0] >= a - tol and ln.box[2] <= b + tol
        ),
        None,
    )


def _heads_on_top(lines: Sequence[TextLine], grid: RuledGrid, used: set[int]) -> list[TextLine]:
    """The column heads of a grid that starts under them: the lines of one row across the grid's top
    edge or just above it, each inside one column, in at least two columns and half of them. Why:
    heads set light on a dark bar (ICDAR's us-032) leave the bar's top edge no ruling (a band that
    thick is no line), so the grid starts at the bar's foot and its heads fall above it. A caption
    right over a grid runs across a column's ruling, and then no line is taken."""
    top = grid.rows[0]
    band = [
        ln
        for ln in lines
        if id(ln) not in used
        and (ln.box[1] + ln.box[3]) / 2 < top
        and ln.box[3] >= top - HEAD_REACH * (ln.box[3] - ln.box[1])
        and ln.box[2] > grid.cols[0]
        and ln.box[0] < grid.cols[-1]
    ]
    if not band or len(group_rows(band)) != 1:
        return []
    columns = [_column(ln, grid) for ln in band]
    if any(k is None for k in columns):
        return []
    filled = len(set(columns))
    return band if filled >= 2 and filled >= 0.5 * (len(grid.cols) - 1) else []


def cut_at_rulings(lines: list[TextLine], grid: RuledGrid) -> list[TextLine]:
    """The lines with those the OCR read across a column ruling of ``grid`` cut there, at the space
    between the words on either side ("212471 X" over the size and type columns). Only lines whose
    words' places are known (``TextLine.words``) can be cut; others stay whole."""
    inner = grid.cols[1:-1]
    out: list[TextLine] = []
    for ln in lines:
        x0, y0, x1, y1 = ln.box
        cy = (y0 + y1) / 2
        crossed = [x for x in inner if x0 < x < x1] if grid.rows[0] <= cy <= grid.rows[-1] else []
        tokens = ln.text.split()
        if not crossed or len(ln.words) != len(tokens):
            out.append(ln)
            continue
        pieces: list[list[int]] = [[]]
        for k, (a, b) in enumerate(ln.words):
            while len(pieces) <= len(crossed) and (a + b) / 2 > crossed[len(pieces) - 1]:
                pieces.append([])
            pieces[-1].append(k)
        for part in (p for p in pieces if p):
            words = tuple(ln.words[k] for k in part)
            box = (words[0][0], y0, words[-1][1], y1)
            out.append(replace(ln, text=" ".join(tokens[k] for k in part), box=box, words=words))
    return out
