"""The text a searchable PDF lays over a page: runs of plain text, each with its box in page pixels, in
reading order.

Why runs per line: a viewer finds a word where its run puts it, so a run should cover one line of the
page. The light engine gives its recognised lines (``PageResult.lines``): each is one run, ordered by the
block it lies in (the blocks are in reading order) and then top to bottom, left to right. Engines that
give blocks only (DeepSeek-OCR-2's grounding boxes, a remote server's) give one box per block: the
block's plain text is split into as many runs as lines the box holds — its own lines when it has them,
else wrapped at spaces to the line count the box's shape implies — and each run gets its band of the
box. Pure Python (no PyMuPDF): ``render.invisible_text`` draws the runs.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ocr_app.schema import Block, Box, OcrLine, union_box

if TYPE_CHECKING:
    from ocr_app.schema import PageResult

# A line of text is about this many font sizes tall, a character about half a font size wide: enough to
# tell how many lines a block's box holds from its shape and its number of characters.
LINE_EM = 1.2
CHAR_EM = 0.5

_TAG = re.compile(r"<[^>]+>")
_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.S | re.I)
_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", re.S | re.I)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HEADING = re.compile(r"^#{1,6}\s+")
_BULLET = re.compile(r"^[-*+]\s+")
_MATH_FENCE = re.compile(r"^(\\\[|\\\]|\$\$)|(\\\[|\\\]|\$\$)$")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")
_WIDE = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True)
class TextRun:
    """One run of invisible text: its plain text, its box in page pixels and the quarter turns
    (counter-clockwise) that make it upright, as ``OcrLine.turns``. ``own_line``: the box is the line's
    own (a recognised line's ink), so the text spans it; otherwise it is a share of a block's box, which
    may be wider than the line's text and is only filled as far as its height allows."""

    text: str
    box: Box
    turns: int = 0
    own_line: bool = False


def page_runs(page: PageResult) -> list[TextRun]:
    """Every run of ``page`` in reading order: its recognised lines when the engine gave them, else its
    blocks' text."""
    if page.lines:
        return [TextRun(ln.text, ln.box, ln.turns, True) for ln in ordered_lines(page.lines, page.blocks)]
    return [run for block in page.blocks for run in block_runs(block)]


def plain_line(text: str) -> str:
    """One line of a block's Markdown as the words a reader sees (markers, links, tags and escapes off)."""
    line = _HEADING.sub("", text.strip())
    line = _BULLET.sub("", line)
    line = _IMAGE.sub("", line)
    line = _LINK.sub(r"\1", line)
    line = line.replace("**", "").replace("__", "").replace("`", "")
    line = _TAG.sub(" ", line)
    line = _ESCAPE.sub(r"\1", line)
    line = _MATH_FENCE.sub("", line.strip())
    return " ".join(html.unescape(line).split())


def block_lines(block: Block) -> list[str]:
    """The plain lines of a block: a table's rows (cells a space apart), else its text's lines."""
    text = block.text or ""
    if "<table" in text.lower():
        rows = [" ".join(plain_line(c) for c in _CELL.findall(row)) for row in _ROW.findall(text)]
        return [" ".join(r.split()) for r in rows if r.strip()]
    lines = (plain_line(raw) for raw in text.splitlines() if not raw.strip().startswith("```"))
    return [ln for ln in lines if ln]


def text_width_em(text: str) -> float:
    """About how wide ``text`` is in font sizes (CJK characters are square, others about half)."""
    wide = len(_WIDE.findall(text))
    return wide + CHAR_EM * (len(text) - wide)


def lines_in_box(text: str, box: Box) -> int:
    """How many lines ``text`` fills in ``box`` if it is set to fill the box (at least 1): n lines of size
    h / (n * LINE_EM) are as long as the text is wide at that size, so n² = width_em * h / (LINE_EM * w)."""
    w, h = box[2] - box[0], box[3] - box[1]
    if w <= 0 or h <= 0:
        return 1
    return max(1, round(math.sqrt(text_width_em(text) * h / (LINE_EM * w))))


def wrap(text: str, n: int) -> list[str]:
    """``text`` cut into ``n`` lines of about equal width, at spaces (between characters for text
    without spaces, e.g. CJK)."""
    if n <= 1:
        return [text]
    words = text.split(" ") if " " in text else list(text)
    sep = " " if " " in text else ""
    target = text_width_em(text) / n
    lines: list[str] = []
    current: list[str] = []
    for word in words:
        candidate = sep.join([*current, word])
        if current and text_width_em(candidate) > target and len(lines) < n - 1:
            lines.append(sep.join(current))
            current = [word]
        else:
            current.append(word)
    lines.append(sep.join(current))
    return [ln for ln in lines if ln]


def bands(box: Box, n: int) -> list[Box]:
    """``box`` cut into ``n`` horizontal bands of equal height, top to bottom."""
    x0, y0, x1, y1 = box
    step = (y1 - y0) / max(n, 1)
    return [(x0, y0 + i * step, x1, y0 + (i + 1) * step) for i in range(n)]


def block_runs(block: Block) -> list[TextRun]:
    """A block's runs: one per box when it has a box per line, else its lines (each wrapped to its share
    of the lines the box holds) in bands of its box."""
    lines = block_lines(block)
    if not lines or not block.boxes:
        return []
    box = union_box(block.boxes)
    total = lines_in_box(" ".join(lines), box)
    if len(block.boxes) == len(lines) and (len(lines) > 1 or total == 1):
        return [TextRun(t, b) for t, b in zip(lines, block.boxes, strict=True)]
    if total > len(lines):
        width = sum(text_width_em(ln) for ln in lines) or 1.0
        lines = [part for ln in lines for part in wrap(ln, round(total * text_width_em(ln) / width))]
    return [TextRun(t, b) for t, b in zip(lines, bands(box, len(lines)), strict=True)]


def _overlap(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def ordered_lines(lines: Sequence[OcrLine], blocks: Sequence[Block]) -> list[OcrLine]:
    """``lines`` in reading order: by the block each lies in most (blocks come in reading order; lines in
    no block go last), then in rows top to bottom (a row: lines whose middles lie within half a line of
    each other, as a table's cells), each row left to right."""
    boxes = [union_box(b.boxes) if b.boxes else None for b in blocks]

    def rank(line: OcrLine) -> int:
        best, where = 0.0, len(blocks)
        for i, box in enumerate(boxes):
            if box is not None and (area := _overlap(line.box, box)) > best:
                best, where = area, i
        return where

    groups: dict[int, list[OcrLine]] = {}
    for line in lines:
        groups.setdefault(rank(line), []).append(line)
    out: list[OcrLine] = []
    for key in sorted(groups):
        out.extend(_rows(groups[key]))
    return out


def _rows(lines: list[OcrLine]) -> list[OcrLine]:
    by_middle = sorted(lines, key=lambda ln: (ln.box[1] + ln.box[3]) / 2)
    out: list[OcrLine] = []
    row: list[OcrLine] = []
    for line in by_middle:
        if row:
            first = row[0]
            half = min(first.box[3] - first.box[1], line.box[3] - line.box[1]) / 2
            if abs((line.box[1] + line.box[3]) / 2 - (first.box[1] + first.box[3]) / 2) > half:
                out.extend(sorted(row, key=lambda ln: ln.box[0]))
                row = []
        row.append(line)
    out.extend(sorted(row, key=lambda ln: ln.box[0]))
    return out


__all__ = ["TextRun", "block_lines", "block_runs", "lines_in_box", "ordered_lines", "page_runs", "wrap"]
