"""Can a reader trust a page's text? ``empty`` and ``low_confidence`` decided from what the engine gave.

Why a separate step: every engine can return "nothing" or garbage without failing (the text layer of a
scan, the light engine on a page turned 180°, the pages a repaired PDF lost). Marking such pages "ok"
hides them in a long document; this step looks at the parsed blocks, the page image and the engine's own
confidence and says which pages need a look, with a reason in words.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ocr_app.choices import engine_kind
from ocr_app.schema import Block, EngineOutput

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

DEFAULT_MIN_CONFIDENCE = 0.8  # light engine: clean pages score 0.95-0.99, a page turned 90/180° 0.65-0.75
INK_DELTA = 60  # grey levels a pixel must differ from the page background to count as ink
BLANK_INK_FRACTION = 1e-4  # below this share of ink pixels a page is blank (one short line is ~8e-4)
_FIGURE_LABELS = frozenset({"image", "figure"})


def has_content(blocks: Sequence[Block]) -> bool:
    """Whether the blocks carry any text or a figure."""
    return any(b.text.strip() or (b.label in _FIGURE_LABELS and b.boxes) for b in blocks)


def ink_fraction(image: Image.Image) -> float:
    """Share of pixels that differ clearly from the page background (the median grey)."""
    import numpy as np

    grey = np.asarray(image.convert("L"), dtype=np.int16)
    if grey.size == 0:
        return 0.0
    background = int(np.median(grey[:: max(1, grey.shape[0] // 64), :: max(1, grey.shape[1] // 64)]))
    return float((np.abs(grey - background) > INK_DELTA).mean())


def is_blank(image: Image.Image) -> bool:
    """Whether the page image has (almost) no ink: a blank page or one a repaired PDF lost."""
    return ink_fraction(image) < BLANK_INK_FRACTION


def assess(
    blocks: Sequence[Block],
    image: Image.Image | None,
    output: EngineOutput,
    *,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
) -> tuple[str | None, str]:
    """``(quality, reason)``: ``("empty", …)``, ``("low_confidence", …)`` or ``(None, "")``."""
    if not has_content(blocks):
        if image is not None and is_blank(image):
            return "empty", "no text found; the page image is blank"
        reads_scans = engine_kind(output.engine).capabilities.reads_scans
        if output.suspect and reads_scans:
            # The engine saw text it could not read (a script outside its models): not an empty page.
            return "low_confidence", output.suspect
        if not reads_scans:  # the text layer
            return "empty", "no text found: the page has no usable text layer (a scan?); use an OCR engine"
        return "empty", f"no text found: the {output.engine or 'OCR'} engine read nothing on this page"
    if output.suspect:
        return "low_confidence", output.suspect
    if output.confidence is not None and output.confidence < min_confidence:
        return (
            "low_confidence",
            f"engine confidence {output.confidence:.3f} is below {min_confidence:g} "
            "(a rotated, blurred or non-text page?)",
        )
    return None, ""
