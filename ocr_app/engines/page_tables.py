"""Tables a text-layer page draws, and the checks that weigh the layout model's table boxes.

Why: a grid drawn with rulings (or cell fills) says where its rows and columns are better than word
positions do; PyMuPDF's table finder reads it, and the cells get the text of our own lines. A grid
that is a form, a diagram of boxes or a frame drawn around text is not a table. The layout model's
table boxes are then read around the grids found here (``TextLayerEngine._learned_tables``).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ocr_app.engines.drawing_clusters import holding_text
from ocr_app.engines.paint import shown_drawings
from ocr_app.engines.pdf_drawings import Paths, drawn_paths
from ocr_app.engines.pdf_spans import MONO_FONTS, TYPE3_FONT, mono_span
from ocr_app.schema import Box
from ocr_app.structure.cell_lines import BULLET, set_apart, set_between, wrapped
from ocr_app.structure.lines import Row, TextLine, group_rows, is_rtl
from ocr_app.structure.paragraphs import join_lines
from ocr_app.structure.regions import overlap
from ocr_app.structure.stacked_frames import split_at_frames
from ocr_app.structure.table_html import Cell, header_rows, join_cell_lines

if TYPE_CHECKING:
    import pymupdf

    from ocr_app.structure.learned_tables import LearnedTable
    from ocr_app.structure.regions import Region

logger = logging.getLogger(__name__)

MIN_TABLE_FILL = 0.4  # a ruled grid with fewer filled cells is a form, not a table
MANY_PATHS = 2_000  # drawings past which only their clusters that hold a word go to the table finder


def _has_rulings(page: pymupdf.Page, minimum: int = 6, *, paths: Paths = None) -> bool:
    """Whether the page draws enough lines/rectangles to hold a ruled table, and anything that may
    rule a column (cheap gate: ``find_tables`` costs up to 0.4 CPU s a page, most of it reading the
    page's characters).

    Why the column: a page whose drawings are level strokes alone (rules under heads, above
    footnotes, under links; a table ruled across only, which the word rules and the layout model
    read) gives PyMuPDF's finder no upright edge, so no grid of two columns. It takes an edge as
    upright wherever its ends stand at two heights, so a line that is not exactly level counts, and
    so do a closed path's closing line, a rectangle, a quad, a curve (the box of a shape may frame
    text) and any fill (``paint.shown_drawings`` hands a fill its clip cuts to the finder as a
    rectangle). 23 of ICDAR 2013's pages asked the finder for nothing this way."""
    count, column = 0, False
    for path in drawn_paths(page, paths):
        items = path.get("items", ())
        count += sum(1 for item in items if item[0] in ("l", "re"))
        column = column or _rules_column(path, items)
        if count >= minimum and column:
            return True
    return False


def _rules_column(path: dict, items: Sequence[tuple]) -> bool:
    """Whether a path may give the table finder an upright edge (``_has_rulings``)."""
    if path.get("fill") is not None or "f" in (path.get("type") or ""):
        return True
    if any(item[0] != "l" or item[1][1] != item[2][1] for item in items):
        return True
    return bool(path.get("closePath") and items and items[-1][2][1] != items[0][1][1])


def _lines_in(r: pymupdf.Rect, lines: list[TextLine]) -> list[TextLine]:
    return [
        ln
        for ln in lines
        if r.x0 <= (ln.box[0] + ln.box[2]) / 2 <= r.x1 and r.y0 <= (ln.box[1] + ln.box[3]) / 2 <= r.y1
    ]


Grid = list[tuple[tuple[float, float, float, float], list[list[str]]]]
# A found table: box (display pixels), rows of cells, leading header rows (0 when unknown).
TableGrid = tuple[tuple[float, float, float, float], list[list[Cell]], int]


class RuledGrid(NamedTuple):
    """A table read from its rulings (a ``TableGrid`` with one more fact). ``exact``: the rulings
    part every row and column the words show, so the grid's cells and spans are the table's: no grid
    row holds two or more cells of several text rows each, no cell holds pieces set a column gap
    apart (a shaded bar read as one cell across the table), and every grid column starts a filled
    cell (no slivers between rulings that do not line up)."""

    box: tuple[float, float, float, float]
    rows: list[list[Cell]]
    header_rows: int
    exact: bool = False


MAX_MERGED_SHARE = 0.3  # more merged cells than this share: boxes of a diagram, not a table
MAX_CELL_WORDS = 80  # a "cell" with more words is a framed text box
HEADER_WEIGHT = 600  # a row set at least this heavy all through (semibold, bold) is a header row


def _find_tables(page: pymupdf.Page) -> list:
    """``page.find_tables`` on the rulings alone, and only on the paint a reader sees
    (``paint.shown_drawings``: a listing's line backgrounds on its panel ruled no table), less the
    grounds of inline code (``_code_grounds``).

    Why ``use_layout=False``: once ``pymupdf.layout`` is imported (pymupdf4llm does it; the
    ``pymupdf-layout`` package it pulls in makes that possible), PyMuPDF gates the ruled grids by the
    layout model's own table boxes, and then returned a shrunken grid for a plain ruled table. The
    same page would give other tables depending on what is installed and what the process imported
    before; without the gate it gives one result. Older PyMuPDF (< 1.27) has no such option.
    """
    grounds = _code_grounds(page, shown := shown_drawings(page))
    shown = [p for k, p in enumerate(shown) if k not in grounds]
    if len(shown) > MANY_PATHS:
        # A figure of thousands of paths (a heat map, a plot's markers, outlined glyphs) costs the
        # finder seconds for no table: only the drawings' clusters that hold a word go to it. Below
        # this count the other clusters still nudge a table's edges (20 of the sets' 2,776 pages
        # read their grids a point or two apart without them); no page of the sets draws more than 898.
        shown = holding_text(shown, [w[:4] for w in page.get_text("words")])
        if not shown:
            return []
    try:
        return page.find_tables(strategy="lines", use_layout=False, paths=shown).tables
    except TypeError:  # PyMuPDF before the layout gate
        return page.find_tables(strategy="lines", paths=shown).tables


def _code_grounds(page: pymupdf.Page, paths: list[dict]) -> set[int]:
    """Indexes into ``paths`` of the grey grounds under inline code: a fill at most
    ``CODE_GROUND_HEIGHT`` times the type's size tall whose text is one run of monospaced words (no
    gap of a type size in it; a row's shading holds its cells apart). Its width says nothing: an
    inline box a line break cuts runs on to the line's end, and the browser draws it so.

    Why: the table finder rules a grid with every fill's edges. A code value that wraps in its cell
    (Node.js's "'iso-8859-" over "2'") has a ground on each line, and their edges cut the cell's row in
    two: the table came out with every such row split and its neighbour cell spanning both."""
    import numpy as np

    if not any(MONO_FONTS.search(f[3]) or f[2] == "Type3" for f in page.get_fonts()):
        return set()  # no typewriter face on the page (most pages): no code, and no text to read
    spans = [
        s
        for block in page.get_text("dict", flags=0)["blocks"]
        for line in block.get("lines", ())
        for s in line["spans"]
        if s["text"].strip()
    ]
    mono = np.array([mono_span(s) or _fixed_pitch(s) for s in spans], dtype=bool)
    if not mono.any():
        return set()
    box = np.array([s["bbox"] for s in spans], dtype=float).reshape(-1, 4)
    cx, cy = (box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2
    size = np.array([s["size"] for s in spans], dtype=float)
    tallest = CODE_GROUND_HEIGHT * float(size[mono].max())
    out: set[int] = set()
    for k, path in enumerate(paths):
        r = path.get("rect")
        if path.get("type") != "f" or r is None or r.height > tallest:
            continue
        at = np.flatnonzero((cx >= r.x0) & (cx <= r.x1) & (cy >= r.y0) & (cy <= r.y1))
        if not at.size or not mono[at].all() or r.height > CODE_GROUND_HEIGHT * size[at].max():
            continue
        order = at[np.argsort(box[at, 0])]
        if np.all(box[order[1:], 0] - box[order[:-1], 2] <= size[at].max()):
            out.add(k)  # one run of code words: no cells side by side
    return out


CODE_GROUND_HEIGHT = 1.6
FIXED_PITCH = 0.6  # × the size: a typewriter face's advance (Courier, Liberation Mono, Source Code Pro)


def _fixed_pitch(span: dict) -> bool:
    """Whether a Type3 span (no font flags: Chromium draws mdBook's inline code so) advances a
    typewriter's ``FIXED_PITCH`` em a character, within 4 %."""
    text = span["text"]
    if not TYPE3_FONT.match(span["font"]) or not text:
        return False
    advance = (span["bbox"][2] - span["bbox"][0]) / len(text)
    return abs(advance - FIXED_PITCH * span["size"]) <= 0.04 * FIXED_PITCH * span["size"]


def read_drawn_grids(page: pymupdf.Page, *, paths: Paths = None) -> list:
    """The grids ``_find_tables`` finds on a page that draws rulings; none where it fails (a table
    finder's failure, or drawings that cannot be read, must not lose the page's text: the rules then
    look for tables in the words)."""
    try:
        return _find_tables(page) if _has_rulings(page, paths=paths) else []
    except Exception as exc:
        logger.warning("ruled tables not looked for (%s); using the geometric table detection", exc)
        return []


def _edges(values: list[float], tol: float = 1.0) -> list[float]:
    """Distinct coordinates (values closer than ``tol`` are one)."""
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > tol:
            out.append(v)
    return out


def _spans(x0: float, x1: float, edges: list[float], tol: float = 1.0) -> int:
    return max(1, sum(1 for e in edges if x0 - tol <= e < x1 - tol))


def _fills(page: pymupdf.Page, paths: Paths = None) -> list[tuple[float, float, float, float]]:
    """Rectangles filled with a colour other than white (row shading), in page coordinates."""
    rects = []
    try:
        for path in drawn_paths(page, paths):
            fill = path.get("fill")
            if fill and any(c < 0.97 for c in fill[:3]) and path.get("rect") is not None:
                rects.append(tuple(path["rect"]))
    except Exception as exc:  # shading is a hint only
        logger.debug("fills unavailable: %s", exc)
    return rects


def _shaded(box: tuple[float, float, float, float], fills: list[tuple[float, float, float, float]]) -> bool:
    x0, y0, x1, y1 = box
    area = max((x1 - x0) * (y1 - y0), 1e-6)
    covered = 0.0
    for f in fills:
        w, h = min(x1, f[2]) - max(x0, f[0]), min(y1, f[3]) - max(y0, f[1])
        if w > 0 and h > 0:
            covered += w * h
    return covered >= 0.8 * area


def ruled_tables(
    page: pymupdf.Page,
    lines: list[TextLine],
    scale: float,
    frames: list[Box] | None = None,
    found: list | None = None,
    *,
    paths: Paths = None,
) -> tuple[list[RuledGrid], Grid, list[TextLine]]:
    """Tables drawn with rulings, found by PyMuPDF's ``find_tables``; cell text from our own lines.
    Returns the tables, the forms (sparse grids: one text line per grid row) and the other lines.

    Why: a ruled table whose cells wrap onto several lines defeats the geometric detection in
    ``layout`` (a wrapped row has fewer cells). PyMuPDF finds the cell grid from the rulings; we fill
    each cell with the text lines whose centre lies in it (``extract()`` loses spaces here; each line
    goes to one cell, a cell's rows read in their script's direction), keep a wrapped cell's lines
    together, give merged cells their ``colspan``/``rowspan`` (from the cell boxes against the grid's
    column and row edges) and mark bold or shaded leading rows as the header. A right-to-left table
    starts at its right column. Frames around prose (``_frames_text``), diagrams and text boxes
    (``_drawing_not_table``) are left to the text; grids of bold labels beside plain answers
    (``_labels_and_values``) and sparse grids are forms; a grid of painted cells that is a piece of a
    table shaded row by row (``_shading_piece``) is left to the word grid. Only pages that draw
    rulings are searched: ``find_tables`` costs ~0.3 s a page. ``frames`` gets every grid's box.
    ``found``: the grids ``read_drawn_grids`` returned, where asked already (``split_running`` needs them).
    """
    import pymupdf

    found = read_drawn_grids(page, paths=paths) if found is None else found
    if not found:
        return [], [], lines
    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    tables: list[RuledGrid] = []
    forms: Grid = []
    used: set[int] = set()
    fills: list[tuple[float, float, float, float]] | None = None
    for table in found:
        if table.row_count < 2 or table.col_count < 2:
            continue
        if frames is not None:  # every grid found, read here or not: where a drawn table ends
            frames.append(tuple(pymupdf.Rect(table.bbox) * matrix))
        col_edges = _edges([c[0] for c in table.cells if c is not None])
        row_edges = _edges([r.bbox[1] for r in table.rows])
        paths = drawn_paths(page, paths)
        if _shading_piece(table, paths, lines, matrix):
            logger.debug("grid of fills at %s skipped: a piece of a table shaded row by row", table.bbox)
            continue
        rows: list[list[Cell]] = []
        heavy: list[bool | None] = []  # row → all its lines bold (None: empty row)
        col_heavy: dict[int, set[bool]] = collections.defaultdict(set)  # column → bold / not bold lines
        taken: set[int] = set()  # cells of a grid with spans overlap: each line goes to one cell
        col_filled = [False] * table.col_count
        stacked = False  # a grid row with two or more cells of several text rows: rows not ruled apart
        apart = False  # a cell holding pieces set a column gap apart: columns not ruled apart
        for at, row in enumerate(table.rows):
            cells: list[Cell] = []
            weights: list[bool] = []
            texts: list[tuple[list[Row], float, float]] = []  # each cell's text rows and edges
            for k, cell in enumerate(row.cells):
                if cell is None:
                    # A slot covered by a merged cell (to its left or above) has no cell of its own;
                    # an uncovered one is an empty cell.
                    if not _covered(table, row, k, col_edges):
                        cells.append(Cell(""))
                    continue
                inside = [ln for ln in _lines_in(pymupdf.Rect(cell) * matrix, lines) if id(ln) not in taken]
                taken.update(id(ln) for ln in inside)
                weights += [ln.bold or ln.weight >= HEADER_WEIGHT for ln in inside]
                col_heavy[k].update(
                    (ln.weight or (700 if ln.bold else 400)) >= HEADER_WEIGHT for ln in inside
                )
                # Row by row, each row in its script's direction (pieces of a right-to-left line read
                # from the right); a wrapped cell's rows joined, a new item or stacked value kept apart.
                text_rows = group_rows(inside)
                x0, _, x1, _ = pymupdf.Rect(cell) * matrix
                texts.append((text_rows, x0, x1))
                # A list item's mark set a tab before its words is no second column.
                apart |= set_apart(text_rows)
                text = join_cell_lines([r.text for r in text_rows], join=join_lines)
                if text and k < len(col_filled):
                    col_filled[k] = True
                cells.append(
                    Cell(text, _spans(cell[0], cell[2], col_edges), _spans(cell[1], cell[3], row_edges))
                )
            rows.append(cells)
            heavy.append(all(weights) if weights else None)
            head = at == 0 and table.row_count >= 3  # a header row, ruled off from rows ruled apart
            tall = sum(len(r) >= 2 and not wrapped(r, a, b, head) for r, a, b in texts)
            stacked |= tall >= 2 and not set_between(texts)
        cells_total = sum(len(row) for row in rows)
        filled = sum(1 for row in rows for c in row if c.text)
        box = pymupdf.Rect(table.bbox) * matrix
        if _frames_text(rows, filled):
            continue  # its lines stay text: the layout reads them as paragraphs, columns, headings
        pairs = not all(col_filled) and all(sum(1 for c in row if c.text) <= 2 for row in rows)
        if filled < MIN_TABLE_FILL * cells_total or pairs or _labels_and_values(col_heavy, rows):
            # A form laid out on a grid (labels and answers in scattered boxes, label/value pairs
            # beside empty boxes, bold labels beside plain answers), not a table: each grid row
            # becomes one line of text, its cells in reading order ("label value").
            forms.append(((box.x0, box.y0, box.x1, box.y1), _form_lines(rows)))
            used.update(taken)
            continue
        if _drawing_not_table(rows):
            logger.debug("ruled grid at %s skipped: a diagram or a text box, not a table", box)
            continue
        used.update(taken)
        if any(any(c.text for c in row) for row in rows):
            if is_rtl(" ".join(c.text for row in rows for c in row)):
                rows = [row[::-1] for row in rows]  # a right-to-left table starts at its right column
            if fills is None:
                fills = _fills(page, paths)
            shaded = [_shaded(tuple(r.bbox), fills) for r in table.rows]
            rows, head = _without_slivers(rows, header_rows(heavy, shaded))
            tables.append(
                RuledGrid(
                    (box.x0, box.y0, box.x1, box.y1), rows, head, _exact(rows, col_filled, stacked or apart)
                )
            )
    return tables, forms, [ln for ln in lines if id(ln) not in used]


def _without_slivers(rows: list[list[Cell]], head: int) -> tuple[list[list[Cell]], int]:
    """The grid's rows with each sliver joined to the row under it, and the header rows left: a
    sliver is a row whose own cells are all empty, every other cell spanning down, and whose empty
    places the next row's cells fill one for one. Why: a stray edge across one cell (a browser's
    "Skip to content" link printed over a table's repeated header on each page) cuts the row in two;
    the other cells then span both, and the header read as two rows, one empty."""
    out = [list(row) for row in rows]
    k = 0
    while k + 1 < len(out):
        own = [c for c in out[k] if c.rowspan == 1]
        spanning = any(c.rowspan > 1 for c in out[k])
        below = out[k + 1]
        if (
            not spanning
            or not own
            or any(c.text for c in own)
            or [c.colspan for c in own] != [c.colspan for c in below]
        ):
            k += 1
            continue
        fill = iter(below)
        out[k] = [
            next(fill) if c.rowspan == 1 else dataclasses.replace(c, rowspan=c.rowspan - 1) for c in out[k]
        ]
        del out[k + 1]
        head -= k + 1 < head  # both were header rows: one is left
    return out, head


def _form_lines(rows: list[list[Cell]]) -> list[list[str]]:
    """A form's grid rows as lines of text, each its cells in reading order ("label value")."""
    rtl = is_rtl(" ".join(c.text for row in rows for c in row))
    text_rows = [
        [" ".join(c.text.replace("\n", " ") for c in (reversed(row) if rtl else row) if c.text)]
        for row in rows
    ]
    return [r for r in text_rows if r[0]]


def _exact(rows: list[list[Cell]], col_filled: list[bool], mixed: bool) -> bool:
    """``RuledGrid.exact``: no cells mixing rows or columns (``mixed``), and every grid column and
    every grid row starts a filled cell (rulings that do not line up cut slivers of empty cells)."""
    return not mixed and all(col_filled) and all(any(c.text for c in row) for row in rows)


RULE_THICKNESS = 2.0  # points: a filled rectangle this thin is a drawn rule, not a ground


def _shading_piece(table, paths: list[dict], lines: list[TextLine], matrix: pymupdf.Matrix) -> bool:
    """Whether a grid PyMuPDF found from the edges of filled cells alone (no stroke, no rule drawn
    as a thin rectangle) is a piece of a larger table: a row of words just above or below it sits in
    its columns. Why: a table shaded row by row (or only its header and some rows), with each cell's
    background painted apart as HTML and word processors print them, gives one grid per run of
    shaded rows; the unshaded rows between are left out, and the table came out in pieces. Left to
    the word grid and the layout model, it is read whole."""
    import pymupdf

    bbox = pymupdf.Rect(table.bbox)
    for p in paths:
        r = pymupdf.Rect(p["rect"])
        if not r.intersects(bbox):
            continue
        if p.get("type") != "f" or min(r.width, r.height) <= RULE_THICKNESS:
            return False  # a stroked line or a thin rule: the grid is ruled
    box = bbox * matrix
    cols = sorted({(round(c[0], 1), round(c[2], 1)) for c in table.cells if c is not None})
    cols = [(pymupdf.Rect(a, bbox.y0, b, bbox.y1) * matrix) for a, b in cols]
    height = box.height / max(table.row_count, 1)
    tol = 0.25 * height

    def in_columns(row: Row) -> bool:
        """Every piece of the row inside one of the grid's columns, two or more columns filled."""
        homes = [
            {k for k, c in enumerate(cols) if c.x0 - tol <= it.box[0] and it.box[2] <= c.x1 + tol}
            for it in row.items
        ]
        return len(row.items) >= 2 and all(homes) and len(set().union(*homes)) >= 2

    near = [
        ln
        for ln in lines
        if box.x0 - tol <= ln.box[0]
        and ln.box[2] <= box.x1 + tol
        and (0 <= box.y0 - ln.box[3] <= 1.5 * height or 0 <= ln.box[1] - box.y1 <= 1.5 * height)
    ]
    return any(in_columns(row) for row in group_rows(near))


def centre_in(b: tuple[float, float, float, float], region: tuple[float, float, float, float]) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


PIECE_SHARE = 0.5  # a grid at most this share of a table region's area, inside it, is a piece of that table


def piece_of(box: Box, region: Box) -> bool:
    """Whether a grid lies inside a table region and covers at most ``PIECE_SHARE`` of it."""
    area = max((box[2] - box[0]) * (box[3] - box[1]), 1e-6)
    return overlap(box, region) >= 0.9 and area <= PIECE_SHARE * (region[2] - region[0]) * (
        region[3] - region[1]
    )


def tables_apart(regions: list[Box], frames: Sequence[Box], lines: Sequence[TextLine]) -> list[Box]:
    """The layout model's table boxes, each box over several framed tables with headings between them
    cut into one region per table (``structure.stacked_frames``)."""
    parts = [split_at_frames(r, frames, lines) for r in regions]
    return _distinct([box for p in parts for box in p]) if any(len(p) > 1 for p in parts) else regions


def _distinct(regions: list[Box]) -> list[Box]:
    """Regions without those that mostly cover an earlier one: two of the layout model's boxes over one
    stack of framed tables give the same parts (``split_at_frames``)."""
    out: list[Box] = []
    for r in regions:
        if not any(overlap(r, k) > 0.8 and overlap(k, r) > 0.8 for k in out):
            out.append(r)
    return out


def weak_boxes(detected: Sequence[Region], read: Sequence[Box]) -> list[Box]:
    """The layout model's table boxes too weak to be read alone and not read already: they may still
    say that a box inside them is part of a wider table (``table_bounds.widen_nested``)."""
    from ocr_app.structure import learned_tables as lt

    return [
        r.box
        for r in detected
        if lt.MIN_VETO_SCORE <= r.score < lt.MIN_REGION_SCORE
        and not any(overlap(r.box, t) > 0.5 for t in read)
    ]


def outside_prose(boxes: list[Box], prose: Sequence[Box]) -> list[Box]:
    """The layout model's table boxes that are not mostly columns of running text: such a box (the GNU
    FDL set in seven narrow columns) vouches for no grid of words either."""
    return [b for b in boxes if not any(overlap(b, p) > 0.5 for p in prose)]


def lines_without(lines: list[TextLine], taken: Sequence[TextLine]) -> list[TextLine]:
    gone = {id(ln) for ln in taken}
    return [ln for ln in lines if id(ln) not in gone]


def bold_labels(box: tuple[float, float, float, float], lines: list[TextLine]) -> bool:
    """A form of bold labels left of plain answers (``_labels_and_values``): it stays lines of text."""
    inside = [ln for ln in lines if centre_in(ln.box, box)]
    bold = [ln for ln in inside if ln.bold or ln.weight >= HEADER_WEIGHT]
    plain = [ln for ln in inside if ln not in bold]
    return bool(bold and plain) and max(ln.box[2] for ln in bold) <= min(ln.box[0] for ln in plain) + 1


def form_pairs(rows: list[list[Cell]]) -> bool:
    """Rows of at most two filled cells beside a column left empty: label/value pairs of a form."""
    width = max((sum(c.colspan for c in row) for row in rows), default=0)
    filled_cols: set[int] = set()
    for row in rows:
        k = 0
        for c in row:
            if c.text:
                filled_cols.update(range(k, k + c.colspan))
            k += c.colspan
    return len(filled_cols) < width and all(sum(1 for c in row if c.text) <= 2 for row in rows)


def bold_header(table: LearnedTable) -> int:
    """Leading rows of a learned table set bold (or heavier) where the body is not: its header.

    Counted in the table's rows, by their words: a row is bold when most of its words are set in bold
    lines of the table and in no plain one (a small plain "restated" under a year stays in the heads).
    Counting text lines instead took a head set in the middle of two header rows ("Region" beside
    "2025" over "Q1") for a row of its own, and the first body row into the header."""
    bold = {w for ln in table.lines if ln.bold or ln.weight >= HEADER_WEIGHT for w in ln.text.split()}
    plain = {w for ln in table.lines if not (ln.bold or ln.weight >= HEADER_WEIGHT) for w in ln.text.split()}
    heavy: list[bool | None] = []
    for row in table.rows:
        words = [w for c in row for w in c.text.split()]
        strong = sum(1 for w in words if w in bold and w not in plain)
        heavy.append(2 * strong > len(words) if words else None)
    n = header_rows(heavy, [False] * len(heavy))
    return n if n < len(table.rows) else 0


def _drawing_not_table(rows: list[list[Cell]]) -> bool:
    """A ruled grid that is no table: a diagram drawn with boxes (most cells merged across the grid's
    lines) or a framed text box (a cell of prose, with no column heads over it). Its lines are then
    read as ordinary text."""
    cells = [c for row in rows for c in row]
    merged = sum(1 for c in cells if c.colspan > 1 or c.rowspan > 1)
    if merged > MAX_MERGED_SHARE * len(cells):
        return True
    return not _column_heads(rows) and any(len(c.text.split()) > MAX_CELL_WORDS for c in cells)


def _column_heads(rows: list[list[Cell]]) -> bool:
    """Whether a grid's first row is three or more short column heads: a table's, whatever paragraph
    its cells hold (npm's flags, each described at length)."""
    head = [c.text for c in rows[0]] if rows else []
    return len(head) >= 3 and all(t and len(t.split()) <= HEAD_CELL_WORDS for t in head)


def _covered(table, row, k: int, col_edges: list[float]) -> bool:
    """Whether slot ``k`` of ``row`` lies inside a merged cell of the table (it then has no cell)."""
    starts = [r.cells[k][0] for r in table.rows if k < len(r.cells) and r.cells[k] is not None]
    if not starts and k >= len(col_edges):
        return True
    cx, cy = (min(starts) if starts else col_edges[k]) + 0.5, (row.bbox[1] + row.bbox[3]) / 2
    return any(
        c is not None and c[0] <= cx <= c[2] and c[1] <= cy <= c[3] for r in table.rows for c in r.cells
    )


PROSE_CELL_WORDS = 40  # a grid cell holding this many words is a paragraph


def _labels_and_values(heavy: dict[int, set[bool]], rows: list[list[Cell]]) -> bool:
    """Whether a grid is a form of bold labels beside plain answers: two columns hold text, one only
    bold lines, the other only regular ones, and no header row (a bold line over the answers).
    Such a grid reads as "label value" lines, like the other forms."""
    columns = [col for col, kinds in heavy.items() if kinds]
    if len(columns) != 2 or sum(1 for row in rows if any(c.text for c in row)) < 3:
        return False
    if sorted(tuple(heavy[c]) for c in columns) != [(False,), (True,)]:
        return False
    # A form's labels are words ("Name", "Date of birth"); a column of bold figures (versions, years,
    # item numbers) keys the rows of a table, here one whose header row a page break left on the page
    # before (Node.js's Node-API version matrix).
    bold = next(c for c in columns if heavy[c] == {True})
    keys = [row[bold].text for row in rows if bold < len(row) and row[bold].text]
    return sum(1 for text in keys if sum(ch.isalpha() for ch in text) >= 2) * 2 > len(keys)


HEAD_CELL_WORDS = 3  # a column head is a few words


def _frames_text(rows: list[list[Cell]], filled: int) -> bool:
    """Whether a ruled grid is a frame drawn around text rather than a table or a form: at most two
    filled cells (a boxed title beside a logo), or at most three rows of which one holds a paragraph
    (a back cover's boxed columns of prose), or every filled cell a list's item (browsers draw a
    bullet as a disc, and an item in code on its shaded ground made a grid of it); never a grid under
    a row of three or more short heads (npm's flag table, two tall rows on a page before the break).
    Why: a table of one or two cells of prose loses the text's paragraphs, headings and reading
    order."""
    if filled <= 2:
        return True
    if all(c.text.startswith(BULLET) for row in rows for c in row if c.text):
        return True  # a list's drawn marks beside its items' shaded code ("• preinstall"): no grid
    if _column_heads(rows):
        return False  # a row of column heads over the prose: a table's piece a page break cut short
    texted = [row for row in rows if any(c.text for c in row)]
    return len(texted) <= 3 and any(len(c.text.split()) >= PROSE_CELL_WORDS for row in texted for c in row)
