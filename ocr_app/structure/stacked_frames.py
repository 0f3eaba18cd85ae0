"""A layout model's table box laid over several drawn tables set one under another, with a heading
between each two: one region per table.

Why: a reference manual sets a small framed table under each section heading ("Class Direction",
"Predefined directions", …), and the layout model boxes a whole stack of them as one table. Read as one
region, the headings became rows spanning the table (``<td colspan="2">Class Direction</td>``): the
outline lost them and seven tables came out as two. The frames the rulings draw say where each table
starts and ends; a line between two frames set larger than the frames' own text is a heading, not a
row, so the region is cut there. Frames with no such line between them (row groups drawn as boxes, a
table's body in two frames under one head) stay one region.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from itertools import pairwise

from ocr_app.schema import Box
from ocr_app.structure.heading_tiers import MIN_HEADING_RATIO
from ocr_app.structure.lines import TextLine, group_rows
from ocr_app.structure.regions import overlap

FRAME_INSIDE = 0.9  # a frame this much inside the region is one of its tables
FRAME_WIDTH = 0.8  # … when it is at least this share of the region's width


def _centre_in(line: TextLine, top: float, bottom: float) -> bool:
    return top <= (line.box[1] + line.box[3]) / 2 <= bottom


def split_at_frames(region: Box, frames: Sequence[Box], lines: Sequence[TextLine]) -> list[Box]:
    """``region`` cut into one box per run of frames that no heading parts; ``[region]`` when fewer
    than two frames lie in it or no heading stands beside them.

    A heading is a row of one line, between two frames or between a frame and the region's edge, set
    in a heading size against the frames' median text size (``MIN_HEADING_RATIO``, the ratio the
    document's heading sizes are found by). A part starts under the last heading above its first
    frame (column heads set over a frame stay with their table) and ends at its last frame's bottom
    rule, or at the region's foot when no heading stands below that frame."""
    held = sorted(
        (
            f
            for f in frames
            if overlap(f, region) >= FRAME_INSIDE and f[2] - f[0] >= FRAME_WIDTH * (region[2] - region[0])
        ),
        key=lambda f: f[1],
    )
    if len(held) < 2 or any(b[1] < a[3] for a, b in pairwise(held)):
        return [region]
    framed = [ln for ln in lines if any(_centre_in(ln, f[1], f[3]) for f in held)]
    if not framed:
        return [region]
    size = statistics.median(ln.size for ln in framed)

    def heads(top: float, bottom: float) -> list[Box]:
        between = [
            ln
            for ln in lines
            if _centre_in(ln, top, bottom) and ln.box[0] < region[2] and ln.box[2] > region[0]
        ]
        return [
            row.box
            for row in group_rows(between)
            if len(row.items) == 1 and row.items[0].size >= MIN_HEADING_RATIO * size
        ]

    above = heads(region[1], held[0][1])
    top = max((h[3] for h in above), default=region[1])
    parts: list[Box] = []
    for a, b in pairwise(held):
        if found := heads(a[3], b[1]):
            parts.append((region[0], top, region[2], a[3]))
            top = max(h[3] for h in found)
    below = heads(held[-1][3], region[3])
    if not (parts or above or below):
        return [region]
    parts.append((region[0], top, region[2], held[-1][3] if below else max(region[3], held[-1][3])))
    return parts
