"""Clusters of a page's drawings: the boxes PyMuPDF's ``Page.cluster_drawings`` returns, found with a
grid of the paths' boxes instead of a scan of every path for every cluster.

Why: PyMuPDF grows each cluster from its first path by testing every remaining path against the
cluster's box, again after every growth, so its time goes with the paths times the clusters. The
figure search (``page_figures.figure_regions``) asks for the clusters on every page: a figure whose
labels are 6,000 outlined glyphs, each a path of its own, cost PyMuPDF 6-10 CPU s, and this 0.1 s
(``bench/accuracy/heavy_pages.py``). The answer
is the same: a cluster is the least set of paths, grown from its first path in PyMuPDF's order
(bottom, then left), whose box no other path comes within the tolerance of. Which paths join it does
not depend on the order they are tested in, so looking only at the paths in the grid's cells around
the box finds the same ones.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

TOLERANCE = 3.0  # points: PyMuPDF's default x and y tolerance for neighbouring paths
CELL = 24.0  # points: the grid's cell side


def cluster_drawings(page: pymupdf.Page, drawings: Sequence[dict[str, Any]]) -> list[pymupdf.Rect]:
    """``page.cluster_drawings(drawings=drawings)`` with its defaults (tolerance 3 pt, the page as
    the clip, boxes no wider and no taller than the tolerance left out), in its order."""
    import pymupdf

    area = page.rect
    rects = [
        p["rect"]
        for p in drawings
        if p["rect"].x0 >= area.x0
        and p["rect"].x1 <= area.x1
        and p["rect"].y0 >= area.y0
        and p["rect"].y1 <= area.y1
    ]
    boxes = [(r.x0, r.y0, r.x1, r.y1) for r in sorted(rects, key=lambda r: (r.y1, r.x0))]
    if any(b[0] > b[2] or b[1] > b[3] for b in boxes):
        # A box turned inside out widens a cluster point by point in PyMuPDF's order; leave it to it.
        return page.cluster_drawings(drawings=list(drawings))
    joined = {tuple(b) for b in join(boxes)}
    out = [pymupdf.Rect(b) for b in sorted(joined, key=lambda b: (b[3], b[0], b[1], b[2]))]
    return [r for r in out if r.width > TOLERANCE and r.height > TOLERANCE]


def join(
    boxes: Sequence[tuple[float, float, float, float]], tol: float = TOLERANCE
) -> list[tuple[float, ...]]:
    """The clusters' boxes of ``boxes`` (x0, y0, x1, y1, none inside out), taken as seeds in their
    order: each seed grows by every box that comes within ``tol`` of it, until none does."""
    grid: dict[tuple[int, int], list[int]] = defaultdict(list)
    for k, (x0, y0, x1, y1) in enumerate(boxes):
        for cell in _cells(x0, y0, x1, y1):
            grid[cell].append(k)
    alive = [True] * len(boxes)
    out: list[tuple[float, ...]] = []
    for seed, box in enumerate(boxes):
        if not alive[seed]:
            continue
        alive[seed] = False
        bx0, by0, bx1, by1 = box
        grown = True
        while grown:
            grown = False
            near = {
                k for cell in _cells(bx0 - tol, by0 - tol, bx1 + tol, by1 + tol) for k in grid.get(cell, ())
            }
            for k in near:
                if not alive[k]:
                    continue
                x0, y0, x1, y1 = boxes[k]
                if x1 < bx0 - tol or x0 > bx1 + tol or y1 < by0 - tol or y0 > by1 + tol:
                    continue
                alive[k] = False
                bx0, by0, bx1, by1 = min(bx0, x0), min(by0, y0), max(bx1, x1), max(by1, y1)
                grown = True
        out.append((bx0, by0, bx1, by1))
    return out


def _cells(x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i in range(int(x0 // CELL), int(x1 // CELL) + 1)
        for j in range(int(y0 // CELL), int(y1 // CELL) + 1)
    ]


def holding_text(paths: Sequence[dict[str, Any]], words: Sequence[Sequence[float]]) -> list[dict[str, Any]]:
    """The paths of the clusters (``join``, by their ``rect``) that a word's box (x0, y0, x1, y1) comes
    within the tolerance of; all of them where a box is turned inside out.

    Why: PyMuPDF's table finder keeps no table without text, yet it joins every path of a page into
    clusters and their edges into cells first, in time that grows with the paths times the clusters and
    with the square of the crossing points: a vector heat map of 80 × 80 cells cost it 1.7 CPU s, a
    figure labelled with 6,000 outlined glyphs 5.5 s, each for no table. The clusters are apart by more
    than the finder's own 3 pt tolerance, so a cluster without a word rules no table of its own."""
    boxes = [(p["rect"][0], p["rect"][1], p["rect"][2], p["rect"][3]) for p in paths]
    if any(b[0] > b[2] or b[1] > b[3] for b in boxes):
        return list(paths)
    tol = TOLERANCE
    clusters = join(sorted(boxes, key=lambda b: (b[3], b[0])))
    held = [
        c
        for c in clusters
        if any(
            w[0] < c[2] + tol and w[2] > c[0] - tol and w[1] < c[3] + tol and w[3] > c[1] - tol for w in words
        )
    ]
    return [
        p
        for p, b in zip(paths, boxes, strict=True)
        if any(c[0] <= b[0] and c[1] <= b[1] and c[2] >= b[2] and c[3] >= b[3] for c in held)
    ]
