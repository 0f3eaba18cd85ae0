"""What the ink of a scanned text line says beyond its text: stroke weight, baseline regularity, shape.

Why: an OCR engine returns words and boxes, not fonts. On a scan, bold (section titles and table
headers set bold at body size), handwriting (letters that wander off a common baseline) and a script
the recogniser cannot read (Arabic joins its letters on one strong baseline) are visible only in the
pixels. Each measure here works on one line crop, deskewed with the line's own quadrilateral, and is a
ratio (to the line's height or the page's median), so it holds at any resolution.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)

INK_LEVEL = 128  # grey level below which a pixel is ink (pages are binarised the same way elsewhere)
BOLD_STROKE_GAIN = 1.25  # stroke ≥ this × the page's median stroke → bold


def line_crop(grey: Any, quad: Any) -> Any:
    """The line's pixels, deskewed: its quadrilateral mapped onto an upright rectangle (white border)."""
    import cv2
    import numpy as np

    q = np.asarray(quad, dtype=np.float32)
    w = max(round(float(np.linalg.norm(q[1] - q[0]))), 1)
    h = max(round(float(np.linalg.norm(q[3] - q[0]))), 1)
    target = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    return cv2.warpPerspective(grey, cv2.getPerspectiveTransform(q, target), (w, h), borderValue=255)


def stroke_width(crop: Any) -> float:
    """Mean stroke width of the ink in pixels: ink area over half its outline.

    Why this measure: a stroke of width w and length L covers w·L pixels and has an outline of ≈ 2·L
    pixels, whatever the letters; bold type has wider strokes at the same size. 0 without ink.
    """
    import cv2
    import numpy as np

    ink = crop < INK_LEVEL
    # A rule the box caught (a table's rule under a header row) is no letter: runs of ink longer
    # than 1.5 × the line's height are dropped before measuring.
    run = max(round(1.5 * crop.shape[0]), 3)
    rules = cv2.morphologyEx(ink.astype(np.uint8), cv2.MORPH_OPEN, np.ones((1, run), np.uint8)) > 0
    ink &= ~rules
    area = int(ink.sum())
    if area == 0:
        return 0.0
    padded = np.pad(ink, 1, constant_values=False)
    inner = padded[1:-1, 1:-1] & padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:]
    outline = area - int(inner.sum())
    return 2.0 * area / max(outline, 1)


def bold_flags(strokes: Sequence[float], texts: Sequence[str]) -> list[bool]:
    """Which lines are set bold: a stroke well wider than the page's regular text.

    The regular stroke is the 30th percentile of the page's strokes weighted by text length: bold is
    the minority style on nearly any page, though on a short one (a table with a bold header and a
    column of numbers) it may be a third of the characters. Why not relative to each line's size:
    the measured size of a body line varies by ±20 % with its letters, the stroke by ±2 % (measured:
    body 2.04-2.12 px, bold header 2.84-2.90 px at 144 DPI). Larger type has wider strokes too, but
    larger lines are headings by their size anyway. Lines of fewer than three letters are never
    called bold (too little ink to measure); a page set all in one weight has no bold lines.
    """
    weighted = sorted((s, max(len(t), 1)) for s, t in zip(strokes, texts, strict=True) if s > 0)
    if not weighted:
        return [False] * len(strokes)
    quantile, acc, norm = 0.3 * sum(w for _, w in weighted), 0, weighted[-1][0]
    for s, w in weighted:
        acc += w
        if acc >= quantile:
            norm = s
            break
    letters = [sum(c.isalpha() for c in t) for t in texts]
    return [s >= BOLD_STROKE_GAIN * norm and n >= 3 for s, n in zip(strokes, letters, strict=True)]


def baseline_wander(crop: Any) -> float | None:
    """How far the letters of one line stray from a straight baseline, relative to the line's height.

    Why: printed letters sit on one line (round letters overshoot it by ~2 % of the size); handwritten
    ones wander by 10-30 %. Measured on the ink's connected components (letters, or joined words): the
    bottoms of those that rest on the baseline (not descenders, not dots), against a straight line fitted
    through them. None when the line has too few components to tell.
    """
    import cv2
    import numpy as np

    ink = (crop < INK_LEVEL).astype(np.uint8)
    h = crop.shape[0]
    count, _labels, stats, _centroids = cv2.connectedComponentsWithStats(ink, connectivity=8)
    comps = [stats[k] for k in range(1, count) if stats[k][cv2.CC_STAT_HEIGHT] >= 0.25 * h]
    if len(comps) < 6:
        return None
    xs = np.array([c[cv2.CC_STAT_LEFT] + c[cv2.CC_STAT_WIDTH] / 2 for c in comps], dtype=np.float64)
    bottoms = np.array([c[cv2.CC_STAT_TOP] + c[cv2.CC_STAT_HEIGHT] for c in comps], dtype=np.float64)
    median = float(np.median(bottoms))
    keep = np.abs(bottoms - median) <= 0.3 * h  # descenders reach further: they are not on the baseline
    if keep.sum() < 5:
        return None
    slope, intercept = np.polyfit(xs[keep], bottoms[keep], 1)
    residual = bottoms[keep] - (slope * xs[keep] + intercept)
    return float(np.median(np.abs(residual)) / h)


def page_wander(values: Sequence[float | None]) -> float | None:
    """The page's baseline wander: the median over its lines that could be measured (None: < 3)."""
    measured = [v for v in values if v is not None]
    return statistics.median(measured) if len(measured) >= 3 else None


def joining_stroke(crop: Any) -> float:
    """Longest run of ink along the line's densest rows, relative to the line's height.

    Why: scripts that join their letters (Arabic, Persian, Urdu) draw one horizontal stroke along
    the baseline through several letters: runs of 0.45-0.55 × the line height (measured, Amiri and
    Naskh at 16 pt). Latin, Cyrillic, Greek and CJK letters stand apart: 0.15-0.31 (serifs and
    crossbars), up to ≈ 0.47 where a rule crosses the line.
    """
    import numpy as np

    ink = crop < INK_LEVEL
    h = crop.shape[0]
    if not ink.any():
        return 0.0
    densest = int(np.argmax(ink.sum(axis=1)))
    best = 0
    for r in range(max(densest - 2, 0), min(densest + 3, h)):
        edges = np.diff(np.concatenate(([0], ink[r].astype(np.int8), [0])))
        starts, ends = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
        if len(starts):
            best = max(best, int((ends - starts).max()))
    return best / h
