"""A scanned page's lines as the light engine measures them: their size and words from their ink,
the page's skew, and the marks the detector misses (list bullets, the dashes of empty cells).

Why: RapidOCR's boxes carry no type size, no word places and no bullets; the layout rooms need all
three to tell a heading, a table's columns and a list. They are read here from each line's crop of
the page image, and the boxes from the deskewed frame are carried back to the page as displayed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ocr_app.schema import OcrLine
from ocr_app.structure import ink
from ocr_app.structure.lines import TextLine, unrotate_box

if TYPE_CHECKING:
    pass

X_HEIGHT_EM = 0.5  # x-height / font size of common text fonts (Helvetica 0.52, Times 0.45)
CAP_HEIGHT_EM = 0.72  # cap height / font size


def text_size(crop: Any, text: str) -> float:
    """Font size (in pixels) of one detected line, from its ink (``crop``: ``ink.line_crop``).

    Why not the box height: detection boxes are padded in proportion to their own shape, and
    ascenders/descenders change them per line, so a 1.5× heading measured only 1.2× the body.
    The x-height of the line's letters (``ink.letter_height``) is proportional to the font size
    whatever the letters; lines without lower-case letters measure the cap height instead and are
    corrected. The crop is deskewed with the line's own quadrilateral, so rotated scans measure the
    same. Where too few letters stand apart (a short or smudged line), the x-height band of the ink's
    row profile stands in.
    """
    import numpy as np

    letters, x_height = ink.letter_height(crop, text)
    if letters > 0:
        return letters / (X_HEIGHT_EM if x_height else CAP_HEIGHT_EM)
    lower = any(c.islower() for c in text)
    h = crop.shape[0]
    rows = (crop < 128).sum(axis=1).astype(np.float64)
    peak = float(rows.max())
    if peak <= 0:
        return float(h) / 2.6  # no ink found: the padded box is ~2.6× the x-height... best effort
    if not lower:
        # Capitals and digits: their ink extent is the cap height (dense rows say little here).
        band = np.nonzero(rows > 0.05 * peak)[0]
        return float(band[-1] - band[0] + 1) / CAP_HEIGHT_EM
    # Soft count of the dense rows (sub-pixel stable): 0 below 25 % of the peak, 1 above 75 %.
    core = float(np.clip((rows - 0.25 * peak) / (0.5 * peak), 0.0, 1.0).sum())
    return max(core, 1.0) / X_HEIGHT_EM


def small_caps_lines(crops: Sequence[Any], texts: Sequence[str]) -> tuple[list[float], list[str]]:
    """Each line's capitals' size where it is set in small capitals, else 0 (``TextLine.caps_size``,
    as the text layer gives it), and its text with the small capitals in lower case where the ink
    tells them (``ink.small_caps``)."""
    read = [ink.small_caps(c, t) for c, t in zip(crops, texts, strict=True)]
    return [h / CAP_HEIGHT_EM for h, _ in read], [t for _, t in read]


def estimate_skew(quads: Sequence[Any]) -> float:
    """Page rotation in degrees (image coordinates), the median slope of long text lines; 0 if unsure."""
    import math

    angles = []
    for q in quads:
        dx, dy = float(q[1][0] - q[0][0]), float(q[1][1] - q[0][1])
        height = math.hypot(float(q[3][0] - q[0][0]), float(q[3][1] - q[0][1]))
        if math.hypot(dx, dy) >= 4 * max(height, 1.0):
            angles.append(math.degrees(math.atan2(dy, dx)))
    if len(angles) < 3:
        return 0.0
    angle = statistics.median(angles)
    return angle if abs(angle) <= 10 else 0.0


def quad_box(q: Any) -> tuple[float, float, float, float]:
    return (float(q[:, 0].min()), float(q[:, 1].min()), float(q[:, 0].max()), float(q[:, 1].max()))


def box_corners(b: tuple[float, float, float, float]) -> Any:
    import numpy as np

    return np.asarray([[b[0], b[1]], [b[2], b[1]], [b[2], b[3]], [b[0], b[3]]], dtype=np.float64)


def affine_points(matrix: Any, points: Any) -> Any:
    return points @ matrix[:, :2].T + matrix[:, 2]


def clip_box(b: tuple[float, float, float, float], w: int, h: int) -> tuple[float, float, float, float]:
    return (max(b[0], 0.0), max(b[1], 0.0), min(b[2], float(w)), min(b[3], float(h)))


def line_sizes(crops: Sequence[Any], texts: Sequence[str]) -> list[float]:
    """The size of every line from its ink (``text_size``), measured on its crop of the original image.

    Why the ink alone: the detection box's height varies with the line's letters and the detector's
    padding (26 to 30 px for body lines of one page), and blending it in compressed real differences
    (a 2.2× title measured 1.95×); the letters' x-height is stable to ±5 % between body lines and
    measures a 2.2× title at 2.2-2.4×, a 1.5× heading at 1.5-1.6× (Helvetica and Times, 144 DPI).
    """
    return [text_size(c, t) for c, t in zip(crops, texts, strict=True)]


def recover_bullets(grey: Any, lines: list[TextLine]) -> list[TextLine]:
    """Put back list bullets the detector missed.

    Why: PP-OCR's detector drops small round bullets ("•"), which turns a list into a paragraph.
    A bullet is a small, compact blob of ink just left of a line, centred on it, in space no other
    line covers; such a line gets a "•" marker (the layout then makes it a list item). Sizes are the
    lines' em estimates (``text_size``): a bullet is 0.09-0.34 em wide, within 1.65 em of the text.
    """
    import numpy as np

    h_img, _w_img = grey.shape[:2]
    out: list[TextLine] = []
    for line in lines:
        if line.text[:1] in "•·-–*●▪" or line.size <= 0:
            out.append(line)
            continue
        x1, y1, x2, y2 = line.box
        cy = (y1 + y2) / 2
        s = line.size
        rx0, rx1 = int(max(0, x1 - 1.65 * s)), int(max(0, x1 + 0.075 * s))
        ry0, ry1 = int(max(0, cy - 0.34 * s)), int(min(h_img, cy + 0.34 * s))
        if rx1 - rx0 < 2 or ry1 - ry0 < 2:
            out.append(line)
            continue
        region = (rx0, ry0, rx1, ry1)
        if any(o is not line and _overlaps(region, o.box) for o in lines):
            out.append(line)
            continue
        ink = grey[ry0:ry1, rx0:rx1] < 128
        ys, xs = np.nonzero(ink)
        if len(xs) == 0:
            out.append(line)
            continue
        bw, bh = xs.max() - xs.min() + 1, ys.max() - ys.min() + 1
        fill = len(xs) / float(bw * bh)
        if bw <= 0.34 * s and bh <= 0.34 * s and bw >= 0.09 * s and fill >= 0.5 and xs.min() > 0:
            bullet_x = rx0 + float(xs.min())
            out.append(TextLine(f"• {line.text}", (bullet_x, y1, x2, y2), line.size, line.bold))
        else:
            out.append(line)
    return out


DASH_MIN_WIDTH = 0.1  # × the line height (and 3 px): a nil dash is at least this wide ...
DASH_MAX_WIDTH = 1.2  # ... and at most this wide (a rule under a group's head is wider)
DASH_MAX_HEIGHT = 0.25  # × the line height: a dash is a thin bar
DASH_MIN_ASPECT = 2.0  # width over height


def recover_dashes(
    grey: Any, lines: list[TextLine], boxes: Sequence[tuple[float, float, float, float]]
) -> list[TextLine]:
    """Put back the dashes of empty table cells the detector missed, as lines of their own.

    Why: PP-OCR's detector drops a lone dash (a nil value, "-"): a statistical table's empty cells
    came out empty, and its rows lost cells (ICDAR 2013's eu-018, eu-001, us-024 and us-018 as scans).
    Only inside ``boxes`` (the layout model's tables): a thin, short bar of ink, wider than tall, that
    no read line covers, level with the middle of a read line of its row (a cell beside other cells).
    Sizes are ratios of the median line height there."""
    import cv2
    import numpy as np

    out = list(lines)
    h_img, w_img = grey.shape[:2]
    for box in boxes:
        inside = [ln for ln in lines if _overlaps(box, ln.box)]
        if not inside:
            continue
        height = statistics.median(ln.box[3] - ln.box[1] for ln in inside)
        size = statistics.median(ln.size for ln in inside)
        x0, y0 = int(max(0, box[0])), int(max(0, box[1]))
        x1, y1 = int(min(w_img, box[2] + 1)), int(min(h_img, box[3] + 1))
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        ink_mask = (grey[y0:y1, x0:x1] < 128).astype(np.uint8)
        count, _, stats, _ = cv2.connectedComponentsWithStats(ink_mask, connectivity=8)
        for k in range(1, count):
            cx, cy, bw, bh, area = (int(v) for v in stats[k])
            dash = (x0 + cx, y0 + cy, x0 + cx + bw, y0 + cy + bh)
            if not (
                max(3.0, DASH_MIN_WIDTH * height) <= bw <= DASH_MAX_WIDTH * height
                and bh <= DASH_MAX_HEIGHT * height
                and bw >= DASH_MIN_ASPECT * bh
                and area >= 0.6 * bw * bh
            ):
                continue
            if any(_overlaps(_grown(ln.box, 0.15 * height), dash) for ln in out):
                continue
            mid = (dash[1] + dash[3]) / 2
            if not any(abs((ln.box[1] + ln.box[3]) / 2 - mid) <= 0.25 * height for ln in inside):
                continue
            # A line box around the bar, one line tall, centred on it.
            line_box = (float(dash[0]), mid - height / 2, float(dash[2]), mid + height / 2)
            out.append(
                TextLine(_dash_glyph(bw, size), line_box, size, words=((float(dash[0]), float(dash[2])),))
            )
    return out


def _dash_glyph(width: float, em: float) -> str:
    """The dash a bar's width says it is, against the type's em (``TextLine.size``): an em dash is
    about an em wide, an en dash half of one, a hyphen a third."""
    if em <= 0:
        return "-"
    return "—" if width >= 0.8 * em else "–" if width >= 0.42 * em else "-"


def _grown(box: tuple[float, float, float, float], by: float) -> tuple[float, float, float, float]:
    return (box[0] - by, box[1] - by, box[2] + by, box[3] + by)


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def word_xs(quad: Any, spans: Sequence[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """Words' places along a line's top edge (fractions, ``ink.word_spans``) as x-ranges in the frame
    the quadrilateral is in (the deskewed one: its top edge runs level)."""
    left, right = float(quad[0][0]), float(quad[1][0])
    return tuple((left + a * (right - left), left + b * (right - left)) for a, b in spans)


def ocr_lines(
    quads: Sequence[Any],
    words: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    crops: Sequence[Any],
    turns: int,
    display: tuple[int, int],
) -> list[OcrLine]:
    """The recognised lines on the page as displayed, each boxed from its ink's first column to its last
    (a detection box is padded by a few pixels on each side): its first and last word's where the ink
    shows the words, else the crop's inked columns."""
    lines = []
    for q, (text, spans), crop in zip(quads, words, crops, strict=True):
        if not text.strip():
            continue
        x0, y0, x1, y1 = quad_box(q)
        extent = (spans[0][0], spans[-1][1]) if spans else _ink_extent(crop)
        if extent is not None:
            xs = word_xs(q, [extent])[0]
            x0, x1 = max(x0, xs[0]), min(x1, xs[1])
        box = unrotate_box((x0, y0, x1, y1), turns, *display) if turns else (x0, y0, x1, y1)
        lines.append(OcrLine(text, box, turns))
    return lines


def _ink_extent(crop: Any) -> tuple[float, float] | None:
    """The first and last inked column of a line crop, as fractions of its width (None: no ink)."""
    import numpy as np

    if crop is None or getattr(crop, "size", 0) == 0:
        return None
    cols = np.nonzero((crop < 128).any(axis=0))[0]
    if len(cols) == 0:
        return None
    width = float(crop.shape[1])
    return float(cols[0]) / width, float(cols[-1] + 1) / width
