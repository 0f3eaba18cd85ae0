"""Column gutters that an OCR detector read across: where to cut its line boxes in two.

Why: a text detector joins words whose gap is small against the line's height, and a narrow gutter
between two columns (6-8 pt on a 9-10 pt body) is such a gap. Each detected "line" then holds one
line of the left column and one of the right, read as one sentence: the page comes out interleaved.
On the page image the gutter is plain to see: a strip of paper that stays blank down the height of
many lines, at the same x, while word spaces move from line to line. Cutting the boxes there and
reading each half on its own gives the layout two columns to order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ocr_app.schema import Box

logger = logging.getLogger(__name__)

MIN_LINES = 4  # a gutter shows over at least this many wide lines
BLANK_SHARE = 0.8  # ... and is blank in at least this share of the wide lines that reach over it
MIN_WIDTH = 0.3  # ... over at least this × the line height (a word space in justified text moves)
INK_LEVEL = 128


def find_gutters(grey: Any, boxes: Sequence[Box]) -> list[tuple[float, float]]:
    """x-ranges blank in most wide line boxes: gutters the detector read across (empty: none).

    A wide box reaches over at least 40 % of the text's width; only the middle of the text block
    (20-80 % of its width) can hold a gutter, so ragged line ends and indents never make one.
    """
    import numpy as np

    if len(boxes) < MIN_LINES:
        return []
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    span = right - left
    heights = sorted(b[3] - b[1] for b in boxes)
    line_h = heights[len(heights) // 2]
    wide = [b for b in boxes if b[2] - b[0] >= 0.4 * span]
    if len(wide) < MIN_LINES or span <= 0:
        return []
    width = grey.shape[1]
    blank = np.zeros(width, dtype=np.int32)
    reach = np.zeros(width, dtype=np.int32)
    for x0, y0, x1, y1 in wide:
        xa, xb = max(int(x0), 0), min(int(np.ceil(x1)), width)
        ya, yb = max(int(y0), 0), min(int(np.ceil(y1)), grey.shape[0])
        if xb <= xa or yb <= ya:
            continue
        ink = (grey[ya:yb, xa:xb] < INK_LEVEL).any(axis=0)
        blank[xa:xb] += ~ink
        reach[xa:xb] += 1
    good = (reach >= MIN_LINES) & (blank >= BLANK_SHARE * np.maximum(reach, 1))
    lo, hi = left + 0.2 * span, left + 0.8 * span
    gutters: list[tuple[float, float]] = []
    x = 0
    while x < width:
        if not good[x]:
            x += 1
            continue
        start = x
        while x < width and good[x]:
            x += 1
        if x - start >= MIN_WIDTH * line_h and lo <= (start + x) / 2 <= hi:
            gutters.append((float(start), float(x)))
    if gutters:
        logger.debug("gutters read across by the detector: %s", gutters)
    return gutters


def cut_at_gutters(grey: Any, box: Box, gutters: Sequence[tuple[float, float]]) -> list[Box]:
    """``box`` cut at every gutter it reaches over with ink on both sides: the pieces left to right
    (``[box]`` when it crosses none). Pieces are trimmed to the gutter's edges."""
    import numpy as np

    pieces = [box]
    for g0, g1 in sorted(gutters):
        x0, y0, x1, y1 = pieces[-1]
        if not (x0 < g0 and g1 < x1):
            continue
        ya, yb = max(int(y0), 0), min(int(np.ceil(y1)), grey.shape[0])
        strip = grey[ya:yb, int(g0) : int(np.ceil(g1))]
        left_ink = (grey[ya:yb, max(int(x0), 0) : int(g0)] < INK_LEVEL).any()
        right_ink = (grey[ya:yb, int(np.ceil(g1)) : int(np.ceil(x1))] < INK_LEVEL).any()
        if strip.size == 0 or (strip < INK_LEVEL).any() or not (left_ink and right_ink):
            continue
        pieces[-1:] = [(x0, y0, g0, y1), (g1, y0, x1, y1)]
    return pieces
