"""Glyphs drawn twice at one place: a text shadow, or bold faked by printing a word again a hair to the
side. A reader sees one word; PyMuPDF reads every copy, so a shadowed heading came out as "Abstract
Abstract" and lost its match with the outline (Sphinx's "nature" theme, PowerPoint's shadowed titles,
old fake-bold PDFs).

Only the copy drawn last is kept: it lies on top, so its colour is the one a reader sees (a white shadow
sits under dark text)."""

from __future__ import annotations

import logging
import unicodedata

logger = logging.getLogger(__name__)

NEAR_X = 0.5  # copies lie within half the narrower glyph's width across: "ll" sits one width apart
NEAR_Y = 0.25  # and within a quarter of the font size up or down: lines are a whole size apart
# Right-to-left letters and combining marks: a ligature ("لا") splits one glyph's box among its letters,
# and a mark sits on its letter; they are never read as copies.
_JOINED = frozenset({"R", "AL", "NSM"})
CELL = 3.0  # points: the grid the copies are looked up in (shadows and fake bold move by 0.2-2 pt)


def drop_overprints(blocks: list[dict]) -> int:
    """Remove, in place, from a page's rawdict ``blocks`` every glyph that a later glyph of the same
    character covers (``NEAR_X``, ``NEAR_Y``), where it is a copy (``_copies``); spans and lines left
    with no glyph go too. Returns how many glyphs went."""
    last: dict[tuple[str, int, int], list[tuple[dict, dict]]] = {}
    covered: dict[int, list[dict]] = {}  # id(span) → its glyphs a later glyph covers
    suspects = _suspects(blocks)
    if not suspects:
        return 0  # most pages: no glyph lies on another
    for block in blocks:
        for line in block.get("lines", ()):
            if id(line) not in suspects:
                continue  # sideways (its "ll" lies a narrow letter's width apart), or no glyph on another
            for span in line["spans"]:
                size = span.get("size", 10.0) or 10.0
                for ch in span.get("chars", ()):
                    c = ch["c"]
                    if c.isspace() or unicodedata.bidirectional(c) in _JOINED:
                        continue
                    x0, y0, *_ = ch["bbox"]
                    gx, gy = int(x0 // CELL), int(y0 // CELL)
                    under = _covered(last, c, gx, gy, ch, size)
                    if under is not None:
                        other, key, entry = under
                        covered.setdefault(id(entry[1]), []).append(other)
                        last[key].remove(entry)
                    last.setdefault((c, gx, gy), []).append((ch, span))
    gone = _copies(blocks, covered)
    if gone:
        _prune(blocks, gone)
        logger.debug("dropped %d overprinted glyphs", len(gone))
    return len(gone)


def _suspects(blocks: list[dict]) -> set[int]:
    """ids of the upright lines that may hold a glyph a later one covers: a line with a glyph that
    starts before the middle of an earlier one, and lines that reach over each other with glyph tops
    within ``NEAR_Y`` of a size. Every pair ``_covered`` can find lies in these lines (a copy overlaps
    its original by half a glyph across and starts within a quarter of a size up or down), so the
    glyph-by-glyph search runs on them alone; on most pages there are none.

    Why: the search looks up every glyph's neighbours, ≈ 8 ms of a page's CPU; this test is numpy over
    the glyphs' boxes."""
    import numpy as np

    lines = [ln for b in blocks for ln in b.get("lines", ()) if _upright(ln)]
    boxes = [[ch["bbox"] for s in ln["spans"] for ch in s.get("chars", ())] for ln in lines]
    keep = [k for k, bx in enumerate(boxes) if bx]
    if not keep:
        return set()
    counts = np.array([len(boxes[k]) for k in keep])
    flat = np.array([b[:4] for k in keep for b in boxes[k]], dtype=float)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    x0, y0, x1 = flat[:, 0], flat[:, 1], flat[:, 2]
    # Within a line: a glyph starting before the middle of an earlier one (the running maximum of the
    # middles, each line lifted above the last so that no line's maximum reaches the next).
    span = float(np.ptp(flat[:, [0, 2]])) + 1.0
    lift = np.repeat(np.arange(len(keep)) * 4.0 * span, counts)
    middles = np.maximum.accumulate((x0 + x1) / 2 - x0.min() + lift)
    before = np.empty_like(middles)
    before[1:] = middles[:-1]
    before[starts] = -np.inf  # a line's first glyph has none before it (starts[0] is 0)
    back = np.maximum.reduceat(x0 - x0.min() + lift < before, starts)
    # Across lines: glyphs side by side (x-extents overlap) with tops within a quarter of a size.
    left, right = np.minimum.reduceat(x0, starts), np.maximum.reduceat(x1, starts)
    high, low = np.minimum.reduceat(y0, starts), np.maximum.reduceat(y0, starts)  # the glyphs' tops
    size = np.array([max((s.get("size", 10.0) or 10.0) for s in lines[k]["spans"]) for k in keep])
    reach = NEAR_Y * np.maximum(size[:, None], size[None, :])
    over = (
        (np.minimum(right[:, None], right[None, :]) > np.maximum(left[:, None], left[None, :]))
        & (high[:, None] <= low[None, :] + reach)
        & (high[None, :] <= low[:, None] + reach)
    )
    np.fill_diagonal(over, False)
    flagged = back.astype(bool) | over.any(axis=1)
    return {id(lines[keep[k]]) for k in np.flatnonzero(flagged)}


def _upright(line: dict) -> bool:
    dx, dy = line.get("dir", (1.0, 0.0))
    return dx > 0 and abs(dy) < 1e-3


def _copies(blocks: list[dict], covered: dict[int, list[dict]]) -> set[int]:
    """ids of the covered glyphs that are copies: two or more in their span, or their span's one glyph.
    A shadow or a second print covers words; one letter of a line lying on the same letter of
    another (Node.js's "Skip to content", printed on every page over the text: its "n" on the "n" of
    "On macOS:") is a coincidence, and taking it out parted the running head it belongs to."""
    gone: set[int] = set()
    if not covered:
        return gone  # most pages: nothing lies on anything
    for block in blocks:
        for line in block.get("lines", ()):
            for span in line["spans"]:
                under = covered.get(id(span))
                if not under:
                    continue
                seen = sum(1 for ch in span.get("chars", ()) if not ch["c"].isspace())
                if len(under) >= 2 or seen == 1:
                    gone.update(id(ch) for ch in under)
    return gone


def _covered(
    last: dict[tuple[str, int, int], list[tuple[dict, dict]]], c: str, gx: int, gy: int, ch: dict, size: float
) -> tuple[dict, tuple[str, int, int], tuple[dict, dict]] | None:
    """The earlier glyph of character ``c`` that ``ch`` lies on, with its grid key and entry."""
    x0, y0, x1, _ = ch["bbox"]
    for kx in (gx - 1, gx, gx + 1):
        for ky in (gy - 1, gy, gy + 1):
            for entry in last.get((c, kx, ky), ()):
                other, span = entry
                ox0, oy0, ox1, _ = other["bbox"]
                width = min(x1 - x0, ox1 - ox0)
                other_size = span.get("size", size) or size
                if width <= 0 or not 0.9 <= other_size / size <= 1.1:
                    continue
                if abs(ox0 - x0) < NEAR_X * width and abs(oy0 - y0) < NEAR_Y * size:
                    return other, (c, kx, ky), entry
    return None


def _prune(blocks: list[dict], gone: set[int]) -> None:
    """Take the ``gone`` glyphs out of their spans; a span, and a line, left with no glyph but spaces
    goes as a whole (a line of spaces would be read as a line of nothing)."""
    for block in blocks:
        if "lines" not in block:
            continue
        touched = False
        for line in block["lines"]:
            if not any(id(ch) in gone for s in line["spans"] for ch in s.get("chars", ())):
                continue
            touched = True
            kept = []
            for span in line["spans"]:
                left = [ch for ch in span.get("chars", ()) if id(ch) not in gone]
                if len(left) != len(span.get("chars", ())):
                    if not any(not ch["c"].isspace() for ch in left):
                        continue
                    span["chars"] = left
                    span["bbox"] = _union([ch["bbox"] for ch in left])
                kept.append(span)
            if not any(not ch["c"].isspace() for s in kept for ch in s.get("chars", ())):
                kept = []
            line["spans"] = kept
            if kept:
                line["bbox"] = _union([s["bbox"] for s in kept])
        block["lines"] = [ln for ln in block["lines"] if ln["spans"]]
        if touched:
            block["lines"] = _rejoined(block["lines"])


def _rejoined(lines: list[dict]) -> list[dict]:
    """A block's lines with each line that goes on where the one before it ends, on its baseline, joined
    to it. Why: a shadow drawn between the words of a line parts it in PyMuPDF ("5.2. " + the shadow of
    "Programs using …", then "Programs using …"); without the shadow it is one line again, and a
    section number left alone at a page's top reads as a running head."""
    out: list[dict] = []
    for line in lines:
        prev = out[-1] if out else None
        if prev is not None and _goes_on(prev, line):
            prev["spans"] = prev["spans"] + line["spans"]
            prev["bbox"] = _union([prev["bbox"], line["bbox"]])
            continue
        out.append(line)
    return out


def _goes_on(prev: dict, line: dict) -> bool:
    size = max(s.get("size", 10.0) or 10.0 for s in prev["spans"])
    (px0, py0, px1, py1), (x0, y0, _, y1) = prev["bbox"], line["bbox"]
    return (
        _upright(prev)
        and _upright(line)
        and abs(y0 - py0) <= NEAR_Y * size
        and abs(y1 - py1) <= NEAR_Y * size
        and -0.1 * size <= x0 - px1 <= 0.5 * size
        and px0 < x0
    )


def _union(boxes: list) -> tuple[float, float, float, float]:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
