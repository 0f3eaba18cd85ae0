"""Which of a PDF page's paint shows on paper: a fill in the paper's colour or a transparent one draws
nothing, nor does a shape its clip leaves nothing of, nor a fill cut by its clip and laid on a ground
of its own colour (``unseen_paint`` says why only the cut ones).

Why: PyMuPDF's table finder builds a grid from every path's edges. A browser prints a code listing as
a grey panel with each line's own grey background on it, the lines' boxes running off to the left
and clipped to the panel (Node.js's API reference): the finder read those unseen edges as a ruled
table of the listing's words. Only what a reader sees may rule a table.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

WHITE = 0.97  # a fill at least this light in every channel is the paper's colour
SAME_COLOUR = 0.02  # fills whose channels differ by no more than this look alike
EDGE = 0.5  # points: a ground holds a shape whose visible part it covers within this


def invisible(path: dict) -> bool:
    """A fill-only path in white (or fully transparent): nothing shows on the paper. HTML-to-PDF
    printers paint every table cell's background this way when backgrounds are not printed."""
    if path.get("type") != "f" or not path.get("fill"):
        return False
    return min(path["fill"][:3]) >= WHITE or path.get("fill_opacity", 1.0) == 0


def _clipped(items: list[dict]) -> list[tuple[dict, tuple[float, float, float, float]]]:
    """Each drawn path (not the clips) of ``get_cdrawings(extended=True)`` with the part of its box that
    its clips leave (the box itself where no clip holds it; empty boxes have x0 ≥ x1 or y0 ≥ y1)."""
    stack: list[tuple[int, tuple[float, float, float, float]]] = []
    out = []
    for item in items:
        level = item.get("level", 0)
        while stack and stack[-1][0] >= level:
            stack.pop()
        kind = item.get("type")
        if kind == "clip":
            if item.get("scissor") is not None:
                stack.append((level, tuple(item["scissor"])))
            continue
        if kind not in ("f", "s", "fs") or item.get("rect") is None:
            continue
        x0, y0, x1, y1 = tuple(item["rect"])
        for _, (cx0, cy0, cx1, cy1) in stack:
            x0, y0, x1, y1 = max(x0, cx0), max(y0, cy0), min(x1, cx1), min(y1, cy1)
        out.append((item, (x0, y0, x1, y1)))
    return out


def _alike(a: tuple, b: tuple) -> bool:
    return all(abs(u - v) <= SAME_COLOUR for u, v in zip(a[:3], b[:3], strict=False))


def _holds(ground: tuple[float, float, float, float], box: tuple[float, float, float, float]) -> bool:
    return (
        ground[0] <= box[0] + EDGE
        and ground[1] <= box[1] + EDGE
        and ground[2] >= box[2] - EDGE
        and ground[3] >= box[3] - EDGE
    )


def _meets(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _cut(path: dict, box: tuple[float, float, float, float]) -> bool:
    """Whether the shape's clip cuts part of it away: a browser paints an inline box's background
    whole on every line the box wraps onto, shifted, and clips it to that line."""
    return any(abs(a - b) > EDGE for a, b in zip(tuple(path["rect"]), box, strict=True))


def unseen_paint(page: pymupdf.Page) -> set[int]:
    """The ``seqno`` of every path on ``page`` that draws nothing a reader sees: fills in the paper's
    colour or transparent (``invisible``), shapes wholly outside their clip (a shape of no area, such
    as a word processor's corner joints between cell borders, stays: the table finder joins its
    rulings there), and fills cut by their clip on a ground of their own colour: the last opaque fill
    painted under the shape's visible part covers all of it and has its colour (a line's background
    on its listing's panel).

    Why only the cut ones: a word processor shades a cell's paragraphs in the cell's own colour, whole.
    Those edges do not show either, but the form rules (``page_tables.ruled_tables``) read such a grid
    with them as a form of label/value lines, and without them as a table (docling's
    right_to_left_03, whose truth is text). The browser's clipped line grounds are what made tables
    of listings."""
    return _paint(page)[0]


Box = tuple[float, float, float, float]


def _paint(page: pymupdf.Page) -> tuple[set[int], dict[int, Box]]:
    """``unseen_paint``'s paths, and the part that shows of each fill its clip cuts (by ``seqno``).
    Read as PyMuPDF's plain tuples (``get_cdrawings``): only boxes and colours are looked at, and
    ``get_drawings`` would make a Point or Rect object of every item of every path first."""
    items = page.get_cdrawings(extended=True)
    unseen: set[int] = set()
    cut: dict[int, Box] = {}
    grounds: list[tuple[tuple, Box]] = []  # opaque fills, painting order
    for path, box in _clipped(items):
        seqno = path.get("seqno")
        if box[0] > box[2] or box[1] > box[3]:
            unseen.add(seqno)  # its clip leaves nothing of it
            continue
        if invisible(path):
            unseen.add(seqno)
            continue
        fill = path.get("fill")
        if path.get("type") != "f" or not fill:
            continue
        if _cut(path, box):
            # The ground is looked for only under a cut fill. Searched for every fill, it cost a
            # vector heat map of 80 × 80 cells 20 million box tests (3 CPU s), of 160 × 160 about 30 s.
            under = next((g for g in reversed(grounds) if _meets(g[1], box)), None)
            if under is not None and _holds(under[1], box) and _alike(under[0], fill):
                unseen.add(seqno)
                continue
            cut[seqno] = box
        if path.get("fill_opacity", 1.0) >= 1.0:
            grounds.append((fill, box))
    return unseen, cut


def shown_drawings(page: pymupdf.Page) -> list[dict]:
    """``page.get_drawings()`` without the paths ``unseen_paint`` finds, and each fill its clip cuts
    as the rectangle that shows of it.

    Why the cut fills: a browser paints a wrapped inline box's background whole on each line it
    wraps onto, shifted, and clips it to that line (rustc's ``--cfg foo="1" --cfg bar="2"`` in a
    table cell: its second line's ground ran from off the page into the next column). Its edges as
    drawn cut the cell's row in two and ruled a column through the table; a reader sees none of them.
    """
    import pymupdf

    try:
        unseen, cut = _paint(page)
    except Exception as exc:  # a refinement: all the paint is the safe answer
        logger.debug("clips unavailable: %s", exc)
        unseen, cut = set(), {}
    shown = []
    for p in page.get_drawings():
        seqno = p.get("seqno")
        if seqno in unseen:
            continue
        if seqno in cut:
            box = pymupdf.Rect(cut[seqno])
            p = {**p, "rect": box, "items": [("re", box, 1)]}
        shown.append(p)
    return shown
