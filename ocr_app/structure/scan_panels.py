"""Filled panels of a scanned page, from its pixels: the containers the text layer takes from drawings.

Why: a slide's boxes side by side (a head and two lines of text in each) line their rows up like a
table's, and on a scan they came out as a three-column table (the probe's decks, issue 30, round 45).
The text layer knows them as filled shapes (``page_figures.panel_rects``) and reads each whole
(``passes.tables.across_panels``, ``passes.columns``); a scan has only pixels. A panel there is a
region tinted away from the paper, solid (its text lies on it), close to a rectangle, at least four
body lines tall and wide, inside the page's margins, and holding nothing else drawn: outside its text
lines its pixels keep to its fill's level, and no patch of another level (a box in the box) lies on it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ocr_app.schema import Box

logger = logging.getLogger(__name__)

TINT = 10  # grey levels under the paper's: a pixel on a ground (the probe's light-blue panels: 22)
BIG = 4.0  # × the body size: a panel is at least this tall and wide (as on the text layer)
SOLID = 0.92  # the region covers this share of its bounding box (rounded corners: 0.97)
PLAIN = 0.03  # at most this share of its pixels outside text lines strays from its fill ...
STRAY = 24  # ... by more than this many grey levels (a chart's bars and axes, a picture)
NEST = 8  # a patch this many grey levels off the fill, wider than a stroke, is a shape drawn inside
MAX_SHARE = 0.6  # a ground over more of the page than this is the page's (a tinted scan, a cover)


def chroma(rgb: Any, matrix: Any = None) -> Any:
    """How coloured each pixel is (max - min of its channels, 0-255), in the frame ``matrix`` (the
    deskewing rotation, None: as it stands) turns the page into. A pale yellow box on a grey one is one
    grey level off it (242 against 243), and 40 levels off it in colour."""
    import cv2
    import numpy as np

    channels = cv2.split(np.asarray(rgb))  # (numpy's max over the channel axis: 75 ms a page)
    out = cv2.subtract(
        cv2.max(cv2.max(channels[0], channels[1]), channels[2]),
        cv2.min(cv2.min(channels[0], channels[1]), channels[2]),
    )
    if matrix is not None:
        h, w = out.shape
        out = cv2.warpAffine(out, matrix, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)
    return out


def filled_panels(
    grey: Any, lines: Sequence[Any], body: float, colour: Callable[[], Any] | None = None
) -> list[Box]:
    """Boxes (page pixels) of the filled panels on ``grey`` (the page, 0-255), ``lines``: its text lines
    (``.box``), ``body``: its body size in pixels, ``colour``: makes the page's ``chroma`` (None: grey
    only), asked once, and only where a ground is found."""
    import cv2
    import numpy as np

    h, w = grey.shape[:2]
    if body <= 0 or h < 8 or w < 8:
        return []
    paper = float(np.percentile(grey[:: max(1, h // 200), :: max(1, w // 200)], 90))
    tinted = (grey < paper - TINT).astype(np.uint8)
    # Strokes of type and ruled lines are thinner than half a body line; a ground is wider.
    k = max(3, int(0.5 * body))
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (k, k))
    solid = cv2.morphologyEx(tinted, cv2.MORPH_OPEN, kernel)
    contours, _ = cv2.findContours(solid, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    out: list[Box] = []
    text = tints = None
    for contour in contours:
        x, y, cw, ch = cv2.boundingRect(contour)
        if cw < BIG * body or ch < BIG * body or x <= 1 or y <= 1 or x + cw >= w - 1 or y + ch >= h - 1:
            continue
        if cw * ch > MAX_SHARE * w * h or cv2.contourArea(contour) < SOLID * cw * ch:
            continue
        if text is None:  # the text lines' mask, made once, where a ground is found
            text = np.zeros((h, w), dtype=bool)
            for ln in lines:
                x0, y0, x1, y1 = (round(v) for v in ln.box)
                text[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)] = True
        inner = grey[y : y + ch, x : x + cw]
        ground = inner[~text[y : y + ch, x : x + cw]]
        if ground.size == 0:
            continue
        fill = float(np.median(ground))
        if np.count_nonzero(np.abs(ground.astype(np.int16) - fill) > STRAY) > PLAIN * ground.size:
            continue
        # A box inside the box (IBM's redbook: a yellow panel on a grey one, a figure), however light:
        # a patch off the fill that survives the same opening as the ground did. Type's edges, a
        # border's line and the scanner's noise do not.
        off = np.abs(inner.astype(np.int16) - fill) > NEST
        if colour is not None:
            if tints is None:
                tints = colour()
            tint = tints[y : y + ch, x : x + cw].astype(np.int16)
            off |= np.abs(tint - float(np.median(tint[~text[y : y + ch, x : x + cw]]))) > NEST
        off &= ~text[y : y + ch, x : x + cw]
        off[:k, :] = off[-k:, :] = False  # the panel's own border and rounded corners
        off[:, :k] = off[:, -k:] = False
        if cv2.morphologyEx(off.astype(np.uint8), cv2.MORPH_OPEN, kernel).any():
            continue
        out.append((float(x), float(y), float(x + cw), float(y + ch)))
    logger.debug("%d filled panels", len(out))
    return out
