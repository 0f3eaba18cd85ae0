"""How far the light engine's reading of a page can be trusted: a score, and a reason when it cannot.

Why beyond the recogniser's scores: PP-OCR reads print. On handwriting it still returns words with
scores near 0.9 (a jittery letter is often close to some printed one), so a letter written by hand
came out as half-garbage marked ``ok``; on a script outside its models (Arabic) it detects lines but
recognises nothing, and the page came out ``empty`` as if blank. The page image tells both apart:
handwritten letters wander off their baseline (``structure.ink.baseline_wander``), and a script that
joins its letters draws long strokes along its baseline.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ocr_app.structure import ink

logger = logging.getLogger(__name__)

LOW_CONFIDENCE = 0.75  # mean recognition score below this: the page is flagged "low confidence"
INKED_PAGE = 0.005  # fraction of dark pixels above which a page is not blank
HANDWRITING_WANDER = 0.035  # print measures ≤ 0.02 of the line height, handwriting 0.04-0.1
WANDER_PENALTY = 8.0  # handwriting: confidence ≤ 1 - this × wander (0.035 → 0.72, 0.06 → 0.52)
JOINED_SCRIPT = 0.4  # longest baseline stroke / line height: Arabic 0.45-0.55, Latin 0.15-0.31


@dataclass
class Trust:
    """The page's confidence (None: nothing to score), the reason to distrust it, notes for the user."""

    confidence: float | None
    suspect: str | None = None
    notes: list[str] = field(default_factory=list)


def page_confidence(texts: Sequence[str], scores: Sequence[float] | None) -> float | None:
    """RapidOCR's line scores averaged by line length: one number for "can this page's text be trusted".

    Why length-weighted: a page read upside down gives many short garbage lines with middling scores; a
    clean page a few long lines scoring 0.99. None when there are no scores (nothing read).
    """
    if not scores or not texts:
        return None
    weights = [max(len(t), 1) for t in texts]
    return float(sum(float(s) * w for s, w in zip(scores, weights, strict=False)) / sum(weights))


def judge(
    grey: Any, quads: Sequence[Any], texts: Sequence[str], scores: Sequence[float], unread: Sequence[Any]
) -> Trust:
    """The trust in one page's reading.

    ``quads``/``texts``/``scores``: the recognised lines; ``unread``: line quadrilaterals the detector
    found on a page where nothing was recognised (empty otherwise; the caller runs detection alone).
    """
    confidence = page_confidence(texts, scores)
    if confidence is None:
        if float((grey < ink.INK_LEVEL).mean()) < INKED_PAGE:
            return Trust(None)
        script = joined_script(grey, unread)
        reason = (
            f"no text recognised although the page is not blank: its {len(unread)} text lines look like "
            f"{script}, a script outside the light engine's models (they read Latin letters and Chinese)"
            if script
            else "no text recognised although the page is not blank (a script outside the light engine's "
            "models, which read Latin letters and Chinese, or only pictures)"
        )
        return Trust(0.0, reason, [f"low confidence: {reason}"])
    wander = ink.page_wander([ink.baseline_wander(ink.line_crop(grey, q)) for q in quads])
    if wander is not None and wander >= HANDWRITING_WANDER:
        confidence = min(confidence, max(1.0 - WANDER_PENALTY * wander, 0.0))
        reason = (
            f"handwriting: letters stray {100 * wander:.1f} % of the line height from their baseline "
            "(print: under 2 %); the light engine's models read print, so words may be wrong"
        )
        return Trust(confidence, reason, [f"low confidence: {reason}"])
    if confidence < LOW_CONFIDENCE:
        note = (
            f"low confidence: mean recognition score {confidence:.2f}; the page's script may be "
            "outside the light engine's models (Latin letters and Chinese), or the scan is poor"
        )
        return Trust(confidence, None, [note])
    return Trust(confidence)


def joined_script(grey: Any, quads: Sequence[Any]) -> str | None:
    """Names "Arabic script (or Persian, Urdu)" when the lines join their letters on one baseline, else None."""
    import statistics

    strokes = [ink.joining_stroke(ink.line_crop(grey, q)) for q in quads]
    strokes = [s for s in strokes if s > 0]
    if len(strokes) < 2:
        return None
    stroke = statistics.median(strokes)
    logger.debug("unread lines: baseline strokes %.2f × the line height", stroke)
    return (
        "Arabic script (or Persian, Urdu: letters joined on one baseline)"
        if stroke >= JOINED_SCRIPT
        else None
    )
