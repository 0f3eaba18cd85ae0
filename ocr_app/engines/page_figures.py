"""Figures on a text-layer page, and the text that belongs to them.

Why: the words inside a chart or a diagram (ticks, axis titles, labels) are no paragraph of the page,
and a panel drawn behind a list or a listing is no figure. Pictures and drawings big enough to be
figures are found here, and the lines inside them are marked so the document rooms keep their text
without joining it to the body.
"""

from __future__ import annotations

import itertools
import logging
import re
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ocr_app.engines.drawing_clusters import cluster_drawings
from ocr_app.engines.page_tables import RULE_THICKNESS
from ocr_app.engines.paint import invisible
from ocr_app.engines.pdf_drawings import Paths, drawn_paths
from ocr_app.structure.cell_lines import BULLET
from ocr_app.structure.headings import NOTE_LINE, NUMBERED_HEADING
from ocr_app.structure.lines import Row, TextLine, group_rows, stacked_runs
from ocr_app.structure.paragraphs import CAPTION

if TYPE_CHECKING:
    import pymupdf


logger = logging.getLogger(__name__)


def figure_regions(
    page: pymupdf.Page,
    body_pt: float,
    panels: Sequence[pymupdf.Rect] = (),
    words: Sequence[pymupdf.Point] = (),
    *,
    paths: Paths = None,
) -> list[pymupdf.Rect]:
    """Pictures and drawings big enough to be figures (page coordinates, unrotated).

    Full-page backgrounds are not figures. A drawing cluster must be at least three body lines tall,
    so a heading on a shaded bar or above a rule is never inside one. A cluster that is one of the
    ``panels`` (``panel_rects``: a filled shape with nothing else drawn inside) is text on a ground,
    and one of filled rectangles with text on them is a table's shading (``_Shapes.shaded_cells``; ``words``:
    the centres of the text lines). Paint that does not show (``paint.invisible``) is not looked at.
    """
    import pymupdf

    area = abs(page.rect) or 1.0
    regions: list[pymupdf.Rect] = []
    try:
        for info in page.get_image_info():
            r = pymupdf.Rect(info["bbox"]) & page.rect
            if not r.is_empty and 0.002 * area <= abs(r) <= 0.7 * area:
                regions.append(r)
        shown = [{**p, "rect": pymupdf.Rect(p["rect"])} for p in drawn_paths(page, paths) if not invisible(p)]
        shapes = _Shapes(shown, words)
        for r in cluster_drawings(page, shown):
            big = 0.02 * area <= abs(r) <= 0.5 * area and r.height >= 4 * body_pt and r.width >= 4 * body_pt
            if big and not any(_same_rect(r, p) for p in panels) and not shapes.shaded_cells(r):
                regions.append(r)
    except Exception as exc:  # figure detection is a refinement; the text must not be lost over it
        logger.debug("figure regions unavailable: %s", exc)
    return regions


CELL_SHARE = 0.5  # of a cluster's filled rectangles, at least this share holding text: shaded cells


class _Shapes:
    """A page's visible paths as arrays, for ``shaded_cells`` (pages of ICDAR 2013 draw thousands of
    paths; testing them one by one as PyMuPDF objects cost up to 0.6 CPU s a page)."""

    def __init__(self, paths: list[dict], words: Sequence[pymupdf.Point]) -> None:
        import numpy as np

        self.boxes = np.array([tuple(p["rect"]) for p in paths], dtype=float).reshape(-1, 4)
        self.filled = np.array(
            [p.get("type") == "f" and all(it[0] == "re" for it in p["items"]) for p in paths], dtype=bool
        )
        self.words = np.array([(w.x, w.y) for w in words], dtype=float).reshape(-1, 2)

    def shaded_cells(self, region: pymupdf.Rect) -> bool:
        """Whether a drawing cluster is a table's shading: only filled rectangles (no strokes, no
        curves) and at least half of them with text set on them (cells on fills, a striped or dark
        header). A chart's bars are filled rectangles too, but its labels stand beside them, and it
        draws axes."""
        b = self.boxes
        inside = (
            (b[:, 0] >= region.x0) & (b[:, 1] >= region.y0) & (b[:, 2] <= region.x1) & (b[:, 3] <= region.y1)
        )
        if not inside.any() or not self.filled[inside].all():
            return False
        cells, w = b[inside], self.words
        on = (
            (w[None, :, 0] >= cells[:, None, 0])
            & (w[None, :, 0] <= cells[:, None, 2])
            & (w[None, :, 1] >= cells[:, None, 1])
            & (w[None, :, 1] <= cells[:, None, 3])
        )
        return int(on.any(axis=1).sum()) >= CELL_SHARE * len(cells)


def panel_rects(page: pymupdf.Page, body_pt: float, *, paths: Paths = None) -> list[pymupdf.Rect]:
    """Filled shapes with nothing else drawn inside them, at least four body lines tall and wide:
    panels of a slide, shaded sidebars, call-out boxes (page coordinates, unrotated).

    Why: the text on such a shape is text set on a coloured ground, read like any other text (a
    panel's title, its bullets with their wrapped lines), not the labels of a diagram; a chart or a
    diagram draws its axes, bars, arrows or boxes inside its frame. A rounded rectangle counts (its
    corners are curves of the same path); a ground under other grounds or one that reaches the page's
    edge (a slide's or a spread's background) does not.
    """
    import numpy as np
    import pymupdf

    try:
        paths = drawn_paths(page, paths)
    except Exception as exc:  # panels are a refinement; the text must not be lost over them
        logger.debug("drawings unavailable: %s", exc)
        return []
    boxes = np.array([p["rect"] for p in paths if p.get("rect") is not None], dtype=float).reshape(-1, 4)
    big = 4 * body_pt
    area = page.rect  # asked once: PyMuPDF bounds the page anew each time (25,600 cells of a heat map: 0.3 s)
    panels: list[pymupdf.Rect] = []
    for path in paths:
        if not path.get("fill") or path.get("rect") is None:
            continue
        r = pymupdf.Rect(path["rect"])
        # A ground that reaches the page's edge is the page's (or a spread's) background: a panel
        # stands inside the margins.
        inside = r.x0 > area.x0 and r.y0 > area.y0 and r.x1 < area.x1 and r.y1 < area.y1
        if r.width < big or r.height < big or not inside:
            continue
        # Another shape inside (a bar, a gridline, a nested box): a drawing, not a plain ground. A
        # shape that holds this one (a background, the panel's own outline) does not count.
        x0, y0, x1, y1 = boxes.T
        into = (x0 < r.x1 - 1) & (x1 > r.x0 + 1) & (y0 < r.y1 - 1) & (y1 > r.y0 + 1)
        holds = (x0 <= r.x0) & (y0 <= r.y0) & (x1 >= r.x1) & (y1 >= r.y1)
        if not (into & ~holds).any():
            panels.append(r)
    return panels


def _same_rect(a: pymupdf.Rect, b: pymupdf.Rect, tol: float = 1.0) -> bool:
    return all(abs(u - v) <= tol for u, v in zip(a, b, strict=True))


def mark_figure_text(
    page: pymupdf.Page,
    lines: list[TextLine],
    scale: float,
    body_pt: float,
    panels: Sequence[pymupdf.Rect] = (),
    *,
    paths: Paths = None,
) -> None:
    """Flag lines whose centre lies inside a figure region (their text stays, as text).

    A region holding fewer than three lines (a boxed heading), mostly sentences (a text box, a
    sidebar) or mostly list items (a list whose items are code on grey grounds, its markers drawn) is
    not a figure: diagram labels are short, and stand alone.
    """
    import pymupdf

    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    back = ~matrix
    centres = [pymupdf.Point((ln.box[0] + ln.box[2]) / 2, (ln.box[1] + ln.box[3]) / 2) * back for ln in lines]
    regions = figure_regions(page, body_pt, panels, centres, paths=paths)
    if not regions:
        return
    for number, region in enumerate(regions, start=1):
        r = region * matrix
        inside = [
            ln
            for ln in lines
            if r.x0 <= (ln.box[0] + ln.box[2]) / 2 <= r.x1 and r.y0 <= (ln.box[1] + ln.box[3]) / 2 <= r.y1
        ]
        sentences = sum(1 for ln in inside if len(ln.text.split()) >= 6)
        figure = (
            len(inside) >= 3
            and sentences <= 0.5 * len(inside)
            and not (stacked_text(inside) and _bare_ground(page, region, body_pt, paths))
            and not (_word_grid(inside) and _rules_only(page, region, paths))
            and not _listing(inside)
            and sum(1 for ln in inside if ln.text.startswith(BULLET)) <= 0.5 * len(inside)
        )
        labels = _axis_labels(r, lines, inside, body_pt * scale) if figure or not inside else []
        # A chart whose labels all stand outside its drawn area shows itself by its ticks.
        if figure or sum(1 for ln in labels if all(_LABEL_TOKEN.match(w) for w in ln.text.split())) >= 3:
            for ln in inside + labels:
                if not ln.in_figure:  # overlapping regions: the first one keeps its lines
                    ln.in_figure, ln.figure = True, number


AXIS_REACH = 1.5  # × the body size: how far outside a chart's drawn area its labels stand
AXIS_PASSES = 2  # ticks beside the area, then the axis title beyond them
_LABEL_TOKEN = re.compile(r"^[\d.,%≥≤<>+\-–—/()$€£]+$")


def _axis_labels(
    area: pymupdf.Rect, lines: list[TextLine], inside: list[TextLine], body: float
) -> list[TextLine]:
    """Short lines within reach of a chart's drawn area, no larger than its own labels: its ticks
    ("0 0-4 5-14 ... ≥65", "140"), then its axis titles ("Age Group", "Year", one set upright). A
    chart's area is what it draws; its labels are set around it, and came out as text, a bold axis
    title as a heading. A line that reads as a sentence, a note, a caption or a numbered title stays
    out."""
    size = (statistics.median(ln.size for ln in inside) if inside else body) * 1.1
    box = [area.x0, area.y0, area.x1, area.y1]
    taken = {id(ln) for ln in inside}
    out: list[TextLine] = []
    reach = AXIS_REACH * body
    for _ in range(AXIS_PASSES):
        found = [
            ln
            for ln in lines
            if id(ln) not in taken
            and not ln.in_figure
            and ln.size <= size
            and box[0] - reach < ln.box[2]
            and ln.box[0] < box[2] + reach
            and box[1] - reach < ln.box[3]
            and ln.box[1] < box[3] + reach
            and (_label_like(ln.text) or _upright(ln))
        ]
        if not found:
            break
        out += found
        taken.update(id(ln) for ln in found)
        box = [
            min(box[0], *(ln.box[0] for ln in found)),
            min(box[1], *(ln.box[1] for ln in found)),
            max(box[2], *(ln.box[2] for ln in found)),
            max(box[3], *(ln.box[3] for ln in found)),
        ]
    return out


def _upright(ln: TextLine) -> bool:
    """Whether a line of words runs up or down the page (a chart's vertical axis title; a bullet's
    glyph box is as narrow, and no label)."""
    words = sum(c.isalnum() for c in ln.text)
    return words >= 2 and ln.box[3] - ln.box[1] > 2 * (ln.box[2] - ln.box[0])


def _label_like(text: str) -> bool:
    """A chart's label: a few words or a row of figures, no sentence, note, caption or numbered title."""
    words = text.split()
    if not any(c.isalnum() for c in text):
        return False  # a list's bullet beside its item, a mark: no label of a chart
    if text.rstrip().endswith((".", ":")) or CAPTION.match(text) or NOTE_LINE.match(text):
        return False
    if NUMBERED_HEADING.match(text):
        return False
    return len(words) <= 3 or sum(1 for w in words if _LABEL_TOKEN.match(w)) >= 0.8 * len(words)


def stacked_text(lines: Sequence[TextLine]) -> bool:
    """Whether a region's lines are set one under another as text is (a sidebar's head over a list
    wrapped in a narrow column): each line right under the one above it (less than
    ``STACK_GAP`` of a line's height between, or overlapping by as little) and starting within ``STACK_INDENT`` sizes of it, for
    ``STACK_SHARE`` of the lines, with ``STACK_WORDS`` words a line on average. A diagram's labels
    stand apart, side by side or one word each (an axis's ticks)."""
    rows = sorted(lines, key=lambda ln: ln.box[1])
    words = sum(len(ln.text.split()) for ln in rows)
    stacked = sum(
        1
        for a, b in itertools.pairwise(rows)
        if -STACK_GAP * (a.box[3] - a.box[1]) <= b.box[1] - a.box[3] <= STACK_GAP * (a.box[3] - a.box[1])
        and abs(b.box[0] - a.box[0]) <= STACK_INDENT * a.size
    )
    return words >= STACK_WORDS * len(rows) and stacked + 1 >= STACK_SHARE * len(rows)


def _listing(lines: Sequence[TextLine]) -> bool:
    """Whether a region's lines are a listing on its panel: all in a monospaced face, half of them or
    more starting at its left edge (the rest indented), or its rows set one right under another
    (``_dense``). Why: a code panel drawn with a rounded border (GitHub's style, npm's docs) is no plain
    ground, and its lines of a few words each were read as a diagram's labels, loose text. A diagram's
    labels stand apart, not at one edge. An API's synopsis sets its rows in columns (type, name,
    arguments) with the arguments' lines under the first one's, so few of its pieces start at the edge;
    its rows still follow at the listing's line pitch (libxslt's reference)."""
    if not lines or not all(ln.mono for ln in lines):
        return False
    left = min(ln.box[0] for ln in lines)
    at_edge = sum(1 for ln in lines if ln.box[0] - left <= 0.5 * ln.size)
    return at_edge >= 0.5 * len(lines) or _dense(group_rows(lines))


LISTING_ROWS = 3  # a listing told by its line pitch alone has at least this many rows


def _dense(rows: Sequence[Row]) -> bool:
    """Whether ``rows`` (top to bottom) follow one right under another, as the lines of one block of
    text do (``stacked_runs``)."""
    return len(rows) >= LISTING_ROWS and len(stacked_runs(rows)) == 1


def _bare_ground(page: pymupdf.Page, region: pymupdf.Rect, body_pt: float, paths: Paths = None) -> bool:
    """Whether all that is drawn in ``region`` is a filled ground under it and small marks (a list's bullets,
    at most ``MARK_SIZE`` body sizes): a shaded box of text. A chart draws its curves, bars and axes
    across it. Drawings that cannot be read count as a chart."""
    import pymupdf

    try:
        paths = drawn_paths(page, paths)
    except Exception:  # a broken content stream: the region stays a figure
        return False
    area = region.width * region.height
    for path in paths:
        r = pymupdf.Rect(path.get("rect") or (0, 0, 0, 0)) & region
        if r.is_empty:
            continue
        small = r.width <= MARK_SIZE * body_pt and r.height <= MARK_SIZE * body_pt
        ground = "f" in (path.get("type") or "") and r.width * r.height >= GROUND_SHARE * area
        if not small and not ground:
            return False
    return True


def _word_grid(lines: Sequence[TextLine]) -> bool:
    """Two rows or more of three words or more side by side: cells, not a diagram's labels (an
    axis's ticks stand in one row or one column)."""
    return sum(1 for row in group_rows(lines) if len(row.items) >= 3) >= 2


def _rules_only(page: pymupdf.Page, region: pymupdf.Rect, paths: Paths = None) -> bool:
    """Whether all that is drawn in ``region`` is rules (strokes or rectangles at most
    ``RULE_THICKNESS`` thick, straight across or down): a table's frame and the rules under its
    heads, open where a column broke it. A chart draws bars, curves or marks."""
    import pymupdf

    try:
        paths = drawn_paths(page, paths)
    except Exception:  # a broken content stream: the region stays a figure
        return False
    seen = False
    for path in paths:
        r = pymupdf.Rect(path.get("rect") or (0, 0, 0, 0))
        if (r & region).is_empty or invisible(path):
            continue
        if min(r.width, r.height) > RULE_THICKNESS:
            return False
        seen = True
    return seen


MARK_SIZE = 1.0
GROUND_SHARE = 0.8
STACK_GAP = 0.6
STACK_INDENT = 2.0
STACK_SHARE = 0.8
STACK_WORDS = 2.5
