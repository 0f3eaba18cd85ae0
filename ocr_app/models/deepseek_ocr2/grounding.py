"""Raw DeepSeek-OCR-2 text → blocks (label, pixel boxes, Markdown-ready content).

Why a hand-written scanner and not the official one-line regex: the model's text is untrusted. It can
stop mid-tag (token cap), loop, or emit half a box; the official regex silently loses such blocks and
``eval``s the coordinates. This parser never raises on model text and never evaluates it.

Grounded output looks like ``<|ref|>LABEL<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>`` followed by
the block's content up to the next ``<|ref|>``. Coordinates are on a 0–999 grid of the ORIGINAL page:
``x_px = x / 999 * width``.

Rules (all tested against stored raw outputs in ``tests/data/raw``):

- Text before the first ``<|ref|>`` (or a whole output without tags, as ``Free OCR.`` gives) becomes a
  ``text`` block without a box.
- A missing ``<|/ref|>`` ends the label at ``<|det|>`` or at the end of the line.
- A missing ``<|/det|>`` ends the box list where the list syntax ends; half a box is dropped.
- ``<|ref|>`` without ``<|det|>`` gives a block without a box.
- Boxes are ordered (x1 < x2, y1 < y2), clamped to the page and dropped when degenerate (zero area).
- Labels are normalised to lower snake-case; unknown labels are kept. An empty label becomes ``text``.
- Stray tags inside content are removed. Blocks with neither a box nor content are dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from ocr_app.schema import Block, Box, EngineOutput

logger = logging.getLogger(__name__)

EOS_TOKEN = "<｜end▁of▁sentence｜>"
BOS_TOKEN = "<｜begin▁of▁sentence｜>"
PAD_TOKEN = "<｜▁pad▁｜>"
REF_OPEN, REF_CLOSE = "<|ref|>", "<|/ref|>"
DET_OPEN, DET_CLOSE = "<|det|>", "<|/det|>"
GRID = 999  # the model's coordinate grid is 0..999 on both axes
DEFAULT_LABEL = "text"
MAX_LABEL_CHARS = 64

_NUM = r"[-+]?\d+(?:\.\d+)?"
_BOX_RE = re.compile(rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]")
# A box list without its closing tag: "[[..], [..]]" where the end may be cut anywhere.
_OPEN_LIST_RE = re.compile(r"\s*\[?(?:\s*\[[\d\s.,+-]*\]?\s*,?)*\s*\]?")
# Tags that may survive in content when the model garbles its output.
_STRAY_DET_RE = re.compile(re.escape(DET_OPEN) + r".*?" + re.escape(DET_CLOSE), re.DOTALL)
_STRAY_TAG_RE = re.compile(r"<\|/?(?:ref|det|grounding)\|>")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD_RE = re.compile(r"[^a-z0-9]+")


def clean_raw(raw: str, eos_tokens: Sequence[str] = (EOS_TOKEN,)) -> str:
    """Remove end/begin-of-sentence and pad tokens and normalise newlines.

    Why: the engine decodes with special tokens kept (they carry the grounding tags), so EOS/BOS/pad
    come along and must not reach the Markdown.
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    for tok in (*eos_tokens, BOS_TOKEN, PAD_TOKEN):
        if tok:
            text = text.replace(tok, "")
    return text.strip()


def normalise_label(label: str) -> str:
    """``"Sub Title"``, ``"subTitle"``, ``"sub-title"`` → ``"sub_title"``; empty → ``"text"``."""
    snake = _NON_WORD_RE.sub("_", _CAMEL_RE.sub("_", label.strip()).lower()).strip("_")
    return snake[:MAX_LABEL_CHARS].strip("_") or DEFAULT_LABEL


def grid_box_to_pixels(box: Sequence[float], width: int, height: int) -> Box | None:
    """Order, clamp and scale one 0–999 box to page pixels; None when it has no area."""
    x1, y1, x2, y2 = (float(v) for v in box)
    x1, x2 = sorted((x1, x2))
    y1, y2 = sorted((y1, y2))
    x1, x2 = (min(max(v, 0.0), GRID) for v in (x1, x2))
    y1, y2 = (min(max(v, 0.0), GRID) for v in (y1, y2))
    if x2 <= x1 or y2 <= y1:
        return None
    return (
        round(x1 / GRID * width, 2),
        round(y1 / GRID * height, 2),
        round(x2 / GRID * width, 2),
        round(y2 / GRID * height, 2),
    )


def _strip_blank_lines(text: str) -> str:
    """Drop surrounding blank lines and trailing spaces; keep the first line's indentation."""
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines).rstrip()


def _clean_content(text: str) -> str:
    text = _STRAY_DET_RE.sub("", text)
    text = _STRAY_TAG_RE.sub("", text)
    # Content normally starts on the line after the tags; spaces right after a tag are not indentation.
    head, sep, tail = text.partition("\n")
    return _strip_blank_lines(head.lstrip(" \t") + sep + tail)


def _parse_label(segment: str) -> tuple[str, int]:
    """Label text and the offset just after it (after ``<|/ref|>`` when present)."""
    close = segment.find(REF_CLOSE)
    det = segment.find(DET_OPEN)
    newline = segment.find("\n")
    if close != -1 and (det == -1 or close < det) and (newline == -1 or close < newline):
        return segment[:close], close + len(REF_CLOSE)
    ends = [i for i in (det, newline) if i != -1]
    end = min(ends) if ends else len(segment)
    return segment[:end], end


def _parse_det(segment: str, pos: int) -> tuple[list[list[float]], int]:
    """Boxes of a ``<|det|>`` list starting at ``pos`` (if any) and the offset where content starts."""
    start = pos
    while start < len(segment) and segment[start] in " \t":
        start += 1
    if not segment.startswith(DET_OPEN, start):
        return [], pos
    body_start = start + len(DET_OPEN)
    close = segment.find(DET_CLOSE, body_start)
    if close != -1:
        body, end = segment[body_start:close], close + len(DET_CLOSE)
    else:
        match = _OPEN_LIST_RE.match(segment, body_start)
        end = match.end() if match else body_start
        body = segment[body_start:end]
    boxes = [[float(v) for v in m.groups()] for m in _BOX_RE.finditer(body)]
    return boxes, end


def _make_block(label: str, grid_boxes: list[list[float]], content: str, width: int, height: int) -> Block:
    boxes = [b for b in (grid_box_to_pixels(g, width, height) for g in grid_boxes) if b is not None]
    if len(boxes) < len(grid_boxes):
        logger.debug("dropped %d degenerate box(es) of a %r block", len(grid_boxes) - len(boxes), label)
    return Block(label=label, text=_clean_content(content), boxes=boxes)


def parse_grounded(raw: str, width: int, height: int) -> list[Block]:
    """Parse raw model text into blocks with boxes in original-page pixels. Never raises on model text."""
    text = clean_raw(raw)
    segments = text.split(REF_OPEN)
    blocks: list[Block] = []
    lead = _clean_content(segments[0])
    if lead:
        blocks.append(Block(label=DEFAULT_LABEL, text=lead))
    for segment in segments[1:]:
        label_text, pos = _parse_label(segment)
        grid_boxes, pos = _parse_det(segment, pos)
        block = _make_block(normalise_label(label_text), grid_boxes, segment[pos:], width, height)
        if block.boxes or block.text:
            blocks.append(block)
    return blocks


def finish_output(output: EngineOutput, width: int, height: int) -> EngineOutput:
    """Make a DeepSeek output what every engine returns: clean raw text and blocks (in place).

    Why here: the DeepSeek wing (local engine and remote endpoints) owns its output grammar; the
    converter and front ends only ever see blocks.
    """
    output.raw_text = clean_raw(output.raw_text)
    if output.blocks is None:
        output.blocks = parse_grounded(output.raw_text, width, height)
    return output


def blocks_from_output(output: EngineOutput, width: int, height: int) -> list[Block]:
    """The engine's own blocks when it gives them (light OCR, text layer), else the parsed raw text."""
    if output.blocks is not None:
        return list(output.blocks)
    return parse_grounded(output.raw_text, width, height)


__all__ = [
    "blocks_from_output",
    "clean_raw",
    "finish_output",
    "grid_box_to_pixels",
    "normalise_label",
    "parse_grounded",
]
