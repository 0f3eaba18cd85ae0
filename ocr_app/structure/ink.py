"""What the ink of a scanned text line says beyond its text: stroke weight, baseline regularity, shape.

Why: an OCR engine returns words and boxes, not fonts. On a scan, bold (section titles and table
headers set bold at body size), handwriting (letters that wander off a common baseline) and a script
the recogniser cannot read (Arabic joins its letters on one strong baseline) are visible only in the
pixels. Each measure here works on one line crop, deskewed with the line's own quadrilateral, and is a
ratio (to the line's height or the page's median), so it holds at any resolution.
"""

from __future__ import annotations

import logging
import re
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


DARK_GROUND = 128  # a line crop whose median grey is darker than this is light text on a dark ground


def dark_on_light(crop: Any) -> Any:
    """A line crop with its ink dark on a light ground: light text on a dark bar (a heading on a
    coloured band, a table's dark header) turned over. Measured as it stands, the bar itself was the
    ink, and an 11 pt heading on a band came out larger than the page's 20 pt title."""
    import numpy as np

    return 255 - crop if float(np.median(crop)) < DARK_GROUND else crop


_SHORT = frozenset("acemnorsuvwxz")  # lower-case letters without ascender or descender


def letter_height(crop: Any, text: str) -> tuple[float, bool]:
    """Height in pixels of the line's typical letter, and whether it is the x-height (True) or, for a
    line without short lower-case letters (capitals, digits), the cap height. 0 when too few letters
    stand apart.

    Why letters and not the row profile: a line's rows of dense ink depend on its letters — a line
    of "called debconf(7) to help" has ascender rows as dense as its x-height band and a serif font's
    baseline row outweighs both, so a band measured from the profile varied 1.8× between body lines
    of one page (12 to 21 px at 144 DPI), while the x-height letters stay within ±1 px. The letters
    are the ink's connected components that are tall enough to be letters (not dots, commas,
    hyphens), not long runs (a rule, joined words) and not cut by the crop's edge (a neighbour line's
    descenders). Short letters (a, c, e, m, n, o, …) are the lowest of them: the x-height is the
    middle of that lowest share of the heights (the share the text's short letters make of its
    characters), refined to a sub-pixel mean of the heights near it.
    """
    import numpy as np

    heights = _letter_heights(crop)
    if len(heights) < 3:
        return 0.0, True
    chars = [c for c in text if c.isalnum()]
    short = sum(1 for c in chars if c in _SHORT) / max(len(chars), 1)
    if short == 0:
        mark = float(np.median(heights))  # capitals and digits: one height
    else:
        mark = float(np.percentile(heights, min(max(50 * short, 5), 50)))
    near = heights[np.abs(heights - mark) <= max(1.0, 0.1 * mark)]
    # An interpolated percentile can fall between two far-apart heights: then none lies near it.
    return (float(near.mean()) if len(near) else mark), short > 0


def _letter_heights(crop: Any) -> Any:
    """The heights of the crop's letters, left to right: its ink's connected components tall enough to
    be letters, not long runs, not cut by the crop's top or bottom edge (``letter_height``)."""
    import cv2
    import numpy as np

    ink = (crop < INK_LEVEL).astype(np.uint8)
    h = crop.shape[0]
    _count, _labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    top, height = stats[1:, cv2.CC_STAT_TOP], stats[1:, cv2.CC_STAT_HEIGHT]
    width = stats[1:, cv2.CC_STAT_WIDTH]
    keep = (height >= 0.2 * h) & (width <= 3 * height) & (top > 0) & (top + height < h)
    order = np.argsort(stats[1:, cv2.CC_STAT_LEFT][keep], kind="stable")
    return height[keep][order].astype(np.float64)


def _letters_mask(crop: Any) -> Any:
    """The crop's ink without the pieces cut by its top or bottom edge (a neighbour line's
    descenders or ascenders that the padded box caught)."""
    import cv2
    import numpy as np

    ink = (crop < INK_LEVEL).astype(np.uint8)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    top, height = stats[:, cv2.CC_STAT_TOP], stats[:, cv2.CC_STAT_HEIGHT]
    cut = (top <= 0) | (top + height >= crop.shape[0])
    cut[0] = True  # the background
    # A component cut by the edge that reaches the line's middle is the line's own (a tall bracket).
    middle = (top <= crop.shape[0] // 2) & (top + height > crop.shape[0] // 2)
    return ~np.isin(labels, np.nonzero(cut & ~middle)[0]) & (ink > 0)


WORD_GAP_WEIGHT = 0.15  # how much a boundary may move (in characters) for one character-width of gap


def word_spans(crop: Any, text: str) -> tuple[str, list[tuple[float, float]]]:
    """Where each word of ``text`` (``text.split()``) stands on the line's crop: ``(start, end)`` as
    fractions of the crop's width, with the text (a space the recogniser missed between a word and
    a number put back: "Sample1,068.1" → "Sample 1,068.1"); no spans when the ink does not show the
    words apart.

    Why: an OCR line of a table often holds several cells set a space apart ("7,761.8 (139.1)
    3,535.9"), and the table pass can cut it only where the column gaps of the other rows fall
    between two of its words; a word's place estimated from its characters' share of the line is off
    by several characters on proportional type. The ink shows the words: its blank column runs. The
    words' boundaries are the blank runs that are widest and nearest where the characters' share puts
    them (one run per space of the text, in order: a small dynamic programme). The ink and the text
    must then agree: no word-wide run left over, each word as wide as its letters make likely.
    """
    tokens = text.split()
    if not tokens or crop.shape[1] <= 1:
        return text, []
    spans = _spans(crop, tokens)
    if spans is not None:
        return text, spans
    # A missed space between letters and digits ("Sample1,068.1"): try the text with it put back.
    parts = [re.sub(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z]{2})", " ", t).split() for t in tokens]
    respaced = [w for p in parts for w in p]
    if len(respaced) > len(tokens) and (spans := _spans(crop, respaced)) is not None:
        return " ".join(respaced), spans
    return text, []


def _spans(crop: Any, tokens: list[str]) -> list[tuple[float, float]] | None:
    import numpy as np

    width = crop.shape[1]
    cols = np.nonzero(_letters_mask(crop).any(axis=0))[0]
    if len(cols) == 0:
        return None
    x0, x1 = int(cols[0]), int(cols[-1]) + 1
    if len(tokens) == 1:
        return [(x0 / width, x1 / width)]
    # Blank runs between the first and last ink column: (start, end).
    inked = np.zeros(x1 - x0, dtype=bool)
    inked[cols - x0] = True
    edges = np.diff(np.concatenate(([1], inked.astype(np.int8), [1])))
    opens, closes = np.nonzero(edges == -1)[0], np.nonzero(edges == 1)[0]
    runs = [(x0 + int(a), x0 + int(b)) for a, b in zip(opens, closes, strict=True)]
    need = len(tokens) - 1
    if len(runs) < need:
        return None
    chars = sum(len(t) for t in tokens) + need  # one space between words
    char_w = (x1 - x0) / chars
    starts = [sum(len(t) + 1 for t in tokens[:i]) for i in range(len(tokens))]
    expected = [x0 + (starts[i + 1] - 0.5) * char_w for i in range(need)]
    chosen = _choose_runs(runs, expected, char_w)
    narrowest = min(b - a for a, b in chosen)
    if any(b - a >= max(narrowest, 0.5 * char_w) for a, b in runs if (a, b) not in chosen):
        return None  # a word-wide gap the text has no space for
    bounds = [x0, *[c for r in chosen for c in r], x1]
    spans = [(bounds[2 * i], bounds[2 * i + 1]) for i in range(len(tokens))]
    for (a, b), t in zip(spans, tokens, strict=True):
        share = (b - a) / (char_w * len(t))
        if not 0.3 <= share <= 3.0 and not (len(t) <= 2 and share <= 4.0):
            return None
    return [(a / width, b / width) for a, b in spans]


def _choose_runs(runs: list[tuple[int, int]], expected: list[float], char_w: float) -> list[tuple[int, int]]:
    """One blank run per expected boundary, in order, maximising the runs' widths (in characters)
    less ``WORD_GAP_WEIGHT`` × their distance (in characters) from where the boundary is expected."""
    import numpy as np

    n, m = len(expected), len(runs)
    gain = np.array(
        [
            [(b - a) / char_w - WORD_GAP_WEIGHT * abs((a + b) / 2 - e) / char_w for a, b in runs]
            for e in expected
        ]
    )
    best = np.full((n, m), -np.inf)
    back = np.zeros((n, m), dtype=int)
    best[0] = gain[0]
    for i in range(1, n):
        prefix = np.maximum.accumulate(best[i - 1])
        arg = np.zeros(m, dtype=int)
        for j in range(1, m):
            arg[j] = arg[j - 1] if best[i - 1][arg[j - 1]] >= best[i - 1][j] else j
        best[i, 1:] = prefix[:-1] + gain[i, 1:]
        back[i, 1:] = [arg[j - 1] for j in range(1, m)]
    j = int(np.argmax(best[n - 1]))
    picks = [j]
    for i in range(n - 1, 0, -1):
        j = int(back[i][j])
        picks.append(j)
    return [runs[k] for k in reversed(picks)]


def stroke_width(crop: Any) -> float:
    """Mean stroke width of the ink in pixels: ink area over half its outline.

    Why this measure: a stroke of width w and length L covers w·L pixels and has an outline of ≈ 2·L
    pixels, whatever the letters; bold type has wider strokes at the same size. 0 without ink.
    A stroke's edge is where its grey is halfway between the line's ink and its paper: for black
    type that is ``INK_LEVEL``; coloured type (a report's headings in dark blue, grey 55) cut at
    ``INK_LEVEL`` lost its anti-aliased edges and measured as regular as the black text.
    """
    import cv2
    import numpy as np

    if crop.size == 0:
        return 0.0
    darkest, paper = np.percentile(crop, (2, 95))
    ink = crop < max(INK_LEVEL, (darkest + paper) / 2)
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


SMALL_CAPS_TALL = (1.2, 1.8)  # a capital's height over the small capitals' (fonts: 1.25-1.6)
_NOT_CAPITAL_HEIGHT = frozenset("()[]{}/|\\QJ@$")  # glyphs taller or lower than a capital


def small_caps(crop: Any, text: str) -> tuple[float, str]:
    """The capitals' height in pixels when the line is set in small capitals (else 0), and its text
    written as set where the ink shows each word's first letter and the rest (``_small_caps_text``;
    else as read).

    Why: OCR reads "Method" set in small capitals as "METHOD", and the line measured by its letters'
    median height (``letter_height``: the small capitals, taken for capitals) came out at 0.7 × the
    body, so a section title set so was text. In small capitals a word's first letter stands taller
    than the rest; in capitals all stand alike. A line of capitals only (no lower case read), four
    letters or more, is small capitals where its tallest letters are a few (at most one a word or
    figure), 1.2-1.8 × the height of the rest. Lines with glyphs taller than a capital (brackets,
    slashes, Q, J) are not judged. The text layer gives such a title as written ("Method"), and so
    does this where it can tell each letter's height."""
    import numpy as np

    letters = [c for c in text if c.isalpha()]
    if len(letters) < 4 or any(c.islower() for c in letters) or _NOT_CAPITAL_HEIGHT & set(text):
        return 0.0, text
    heights = _letter_heights(crop)
    if len(heights) < 4:
        return 0.0, text
    small = float(np.median(heights))
    tall = heights >= SMALL_CAPS_TALL[0] * small
    # Each word's first letter stands tall, and figures; so does a section number in Roman numerals
    # ("IV. RESULTS" in IEEE's template: the numeral set in capitals).
    starts = sum(len(w) if _ROMAN.match(w) else 1 for w in text.split()) + sum(c.isdigit() for c in text)
    count = int(tall.sum())
    if not 0 < count <= min(starts, len(heights) // 2) or float(heights.max()) > SMALL_CAPS_TALL[1] * small:
        return 0.0, text
    return float(np.median(heights[tall])), _small_caps_text(crop, text, float(heights[tall].max()), small)


def _small_caps_text(crop: Any, text: str, capital: float, small: float) -> str:
    """``text`` (a line in small capitals, read in capitals) as written: each word whose first letter's
    ink rises to the capitals' height and the rest's does not written with a capital and the rest in
    lower case; one whose letters all stay at the small capitals' height in lower case ("by"); a Roman
    numeral or a figure as read. The whole ``text`` as read where the ink does not show its words
    apart (``word_spans``) or a word other than a numeral has a capital further in: a half-cased line
    ("THRESHOLD for releases", ICDAR's eu-001 as a scan) reads worse than one in capitals."""
    import numpy as np

    tokens = text.split()
    spans = _spans(crop, tokens)
    if spans is None:
        return text
    ink = _letters_mask(crop)
    rows = np.where(ink.any(axis=0), ink.argmax(axis=0), crop.shape[0])  # each column's top ink
    if not ink.any():
        return text
    bottom = float(np.median(rows[rows < crop.shape[0]])) + small  # about the baseline
    reach = bottom - (capital + small) / 2  # a column whose ink rises over this is a capital's
    width = crop.shape[1]
    out = []
    for token, (a, b) in zip(tokens, spans, strict=True):
        letters = sum(c.isalnum() for c in token)
        if not token[:1].isalpha() or any(c.isdigit() for c in token) or letters < 2:
            out.append(token)
            continue
        x0, x1 = round(a * width), round(b * width)
        step = (x1 - x0) / len(token)
        first, rest = rows[x0 : round(x0 + 0.9 * step)], rows[round(x0 + 1.2 * step) : x1]
        if len(first) == 0 or len(rest) == 0:
            return text
        if (rest < reach).any():  # a capital further in: a Roman numeral stays, else the line is unsure
            if not _ROMAN.match(token):
                return text
            out.append(token)
        else:
            out.append(token[0] + token[1:].lower() if (first < reach).any() else token.lower())
    return " ".join(out)


_ROMAN = re.compile(r"^[IVXLC]+[.)]?$")


UNDERLINE_COVER = 0.85  # share of the text's width an underline's row inks (skipping descenders)


def underlined(grey: Any, quad: Any) -> bool:
    """Whether a line is underlined: a row at or under its letters' baseline inked along at least
    ``UNDERLINE_COVER`` of the text's width, and not beyond it (a rule under a heading that runs on
    across the column is no underline), with no such row over the letters (a box drawn round the
    line: a callout, a table's cell). Why: older reports and typescripts mark section titles by an
    underline at body size and weight; a scan shows it only in the pixels. The quadrilateral is
    widened by the line's height each side and by half of it above and below, so the rule's ends, a
    low underline and a frame's top are seen."""
    import cv2
    import numpy as np

    q = np.asarray(quad, dtype=np.float64)
    h0 = float(np.linalg.norm(q[3] - q[0]))
    w0 = float(np.linalg.norm(q[1] - q[0]))
    if h0 < 4 or w0 < 2 * h0:
        return False
    u, v = (q[1] - q[0]) / w0, (q[3] - q[0]) / h0
    side, up = round(h0) * u, round(0.5 * h0) * v  # whole pixels: no blur from a half-pixel shift
    wide = np.asarray([q[0] - side - up, q[1] + side - up, q[2] + side + up, q[3] - side + up])
    ink = dark_on_light(line_crop(grey, wide)) < INK_LEVEL
    _count, _labels, stats, _ = cv2.connectedComponentsWithStats(ink.astype(np.uint8), connectivity=8)
    left, top = stats[1:, cv2.CC_STAT_LEFT], stats[1:, cv2.CC_STAT_TOP]
    width, height = stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT]
    middle, above = left + width / 2, round(0.5 * h0)  # the line's box starts ``above`` rows down
    letter = (
        (height >= 0.2 * h0)
        & (width <= 3 * height)
        & (top >= above)
        & (top < above + h0)
        & (middle > h0)
        & (middle < h0 + w0)
    )
    if int(letter.sum()) < 3:
        return False
    crown, baseline = int(top[letter].min()), int(np.median((top + height)[letter]))
    # The text's width from its ink over the baseline (a descender joined to the underline is no
    # letter, but its bowl is the text's).
    lo, hi = round(0.8 * h0), round(1.2 * h0 + w0)
    cols = np.nonzero(ink[crown : max(baseline - 1, crown + 1), lo:hi].any(axis=0))[0]
    if len(cols) == 0:
        return False
    x0, x1 = lo + int(cols[0]), lo + int(cols[-1]) + 1
    if any(ink[r, x0:x1].mean() >= UNDERLINE_COVER for r in range(max(crown - above, 0), crown)):
        return False  # a rule over the letters too: framed
    margin, reach = max(round(0.15 * h0), 1), round(0.5 * h0)
    for r in range(max(baseline - 1, 0), min(baseline + round(0.4 * h0), ink.shape[0])):
        row = ink[r]
        if row[x0:x1].mean() < UNDERLINE_COVER:
            continue
        before, after = row[max(x0 - reach, 0) : max(x0 - margin, 0)], row[x1 + margin : x1 + reach]
        return bool(before.size and after.size and before.mean() <= 0.2 and after.mean() <= 0.2)
    return False


def bold_flags(strokes: Sequence[float], texts: Sequence[str]) -> list[bool]:
    """Which lines are set bold: a stroke well wider than the page's regular text.

    The regular stroke is the 30th percentile of the page's strokes weighted by text length: bold is
    the minority style on nearly any page, though on a short one (a table with a bold header and a
    column of numbers) it may be a third of the characters. Why not relative to each line's size:
    the measured size of a body line varies by ±20 % with its letters, the stroke by ±2 % (measured:
    body 2.04-2.12 px, bold header 2.84-2.90 px at 144 DPI). Larger type has wider strokes too, but
    larger lines are headings by their size anyway. Lines of fewer than three letters or digits are
    never called bold (too little ink to measure); a page set all in one weight has no bold lines.
    Digits count: a table's head row of years ("2024", "2025") set bold is as much ink as a word, and
    not counting them left such a row plain under a bold row of words, so it was read as a body row.
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
    glyphs = [sum(c.isalnum() for c in t) for t in texts]
    return [s >= BOLD_STROKE_GAIN * norm and n >= 3 for s, n in zip(strokes, glyphs, strict=True)]


ITALIC_SLANT = 6.0  # degrees: strokes leaning this far or more are italic (upright type: -3-3°)
ITALIC_GAIN = 1.04  # ... where standing them upright sharpens the ink's columns by this much
ITALIC_WORDS = 12  # only lines this short are judged (a heading's length; a paragraph's slant is no cue)
_SHEARS = tuple(range(-6, 25, 3))  # degrees tried


def italic_flags(crops: Sequence[Any], texts: Sequence[str]) -> list[bool]:
    """Which short lines are set in italics, from the ink: the shear that stands a line's strokes
    upright. Why: a scan has no font names, and reports and papers set their lowest headings in
    italics at body size ("Limitations", "A. Grading scale"). Lines of more than ``ITALIC_WORDS`` words
    or fewer than four letters are not judged (a short figure's profile is noise: "377" upright read
    21°). Measured at 144 DPI on the printed probe's scans: italic sans lines 9-12° with a gain of
    1.14-1.25, italic Times 6-9° with 1.05-1.12, upright lines -6-3° with at most 1.04 leaning right."""
    out = []
    for crop, text in zip(crops, texts, strict=True):
        if len(text.split()) > ITALIC_WORDS or sum(c.isalpha() for c in text) < 4:
            out.append(False)
            continue
        angle, gain = slant(crop)
        out.append(angle >= ITALIC_SLANT and gain >= ITALIC_GAIN)
    return out


def slant(crop: Any) -> tuple[float, float]:
    """The lean of a line's strokes in degrees (positive: to the right, as italics lean) and how much
    shearing it upright sharpens the ink's column profile over leaving it (sum of squared column
    counts per ink pixel; 1.0 for upright type). (0, 1) without ink."""
    import numpy as np

    ys, xs = np.nonzero(dark_on_light(crop) < INK_LEVEL)
    if len(xs) == 0:
        return 0.0, 1.0
    mid = crop.shape[0] / 2

    def sharpness(deg: float) -> float:
        cols = np.round(xs + (ys - mid) * np.tan(np.radians(deg))).astype(int)
        counts = np.bincount(cols - cols.min()).astype(float)
        return float((counts**2).sum()) / len(xs)

    scores = {deg: sharpness(deg) for deg in _SHEARS}
    best = max(scores, key=scores.__getitem__)
    return float(best), scores[best] / max(scores[0], 1e-9)


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
