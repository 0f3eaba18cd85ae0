"""Huge pages (large scans, posters) read as overlapping tiles, then merged back into one page.

Why a wrapper engine: DeepSeek-OCR-2 sees a page through a 1024 px global view plus at most a few
768 px crops, and the light engine detects text on a downscaled copy; on a 12,000 × 9,000 px scan both
would read text a few pixels high. Every engine gets the same treatment by wrapping it: a page whose
long side exceeds ``max_side`` is cut into tiles of at most ``tile_size`` px, each tile is an ordinary
page request to the inner engine, and the tiles' blocks are mapped back to page pixels and merged.

Overlap: at least the tallest text line on the page (measured on a cheap horizontal ink projection of
a downscaled copy, per vertical strip), so a line lying across a horizontal tile border is whole in one
of the two tiles. Merge, in this order:
1. a block cut by an inner tile border (it touches that border) is dropped when another tile's block
   covers most of it: that other tile saw it whole;
2. duplicates (a block seen whole by two tiles in their overlap) are suppressed: box overlap plus
   similar text (non-maximum suppression, keeping the longer text);
3. a line wider than the overlap that crosses a vertical border is cut in both tiles: the left and
   right pieces are stitched, the text they both read in the overlap kept once;
4. blocks are put in reading order (top to bottom in bands of one line height, then left to right).
"""

from __future__ import annotations

import difflib
import itertools
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ocr_app.engine_api import Engine, WrappedEngine
from ocr_app.schema import Block, Box, EngineOutput, PageImage, PageRequest, StopReason

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

_WORST = [StopReason.ERROR, StopReason.REPETITION, StopReason.LENGTH, StopReason.END, StopReason.NONE]


@dataclass(frozen=True)
class TilePlan:
    """How a page is cut: grid, tile size, overlap and each tile's box in page pixels."""

    cols: int
    rows: int
    tile_width: int
    tile_height: int
    overlap: int
    line_height: int  # tallest text line found (px); the overlap is at least this
    tiles: tuple[tuple[int, int, int, int], ...]  # (x0, y0, x1, y1), row-major

    def to_dict(self) -> dict[str, object]:
        return {
            "grid": [self.cols, self.rows],
            "tile_size": [self.tile_width, self.tile_height],
            "overlap_px": self.overlap,
            "tallest_line_px": self.line_height,
            "tiles": [list(t) for t in self.tiles],
        }


def tallest_line(image: Image.Image, *, strip_px: int, work_side: int = 1500) -> int:
    """Height (page px) of the tallest run of inked rows, per vertical strip of ``strip_px``.

    Why strips: on a page with columns the lines of two columns rarely align, and a projection over
    the full width would merge them into one tall "line". Runs taller than a third of a strip are
    pictures, not text, and are ignored.
    """
    import numpy as np

    w, h = image.size
    scale = min(1.0, work_side / max(w, h))
    small = image.convert("L").resize((max(1, round(w * scale)), max(1, round(h * scale))))
    grey = np.asarray(small)
    ink = grey < min(128, float(grey.mean()) - 40)  # dark on light; robust to a grey background
    strip = max(1, round(strip_px * scale))
    limit = strip / 3
    best = 0
    for x in range(0, ink.shape[1], strip):
        rows = ink[:, x : x + strip].any(axis=1)
        run = 0
        for filled in [*rows.tolist(), False]:
            if filled:
                run += 1
                continue
            if run <= limit:
                best = max(best, run)
            run = 0
    return math.ceil((best + 2) / scale)  # +2: one row of blur on each side at the small scale


def _starts(length: int, tile: int, overlap: int) -> list[int]:
    if length <= tile:
        return [0]
    n = math.ceil((length - overlap) / (tile - overlap))
    step = (length - tile) / (n - 1)
    return [round(i * step) for i in range(n)]


def plan_tiles(size: tuple[int, int], tile_size: int, line_height: int, min_overlap: int) -> TilePlan:
    """Evenly spaced tiles of at most ``tile_size`` px whose overlap is ≥ max(line, min_overlap)."""
    w, h = size
    overlap = min(max(line_height, min_overlap), tile_size // 2)
    xs, ys = _starts(w, tile_size, overlap), _starts(h, tile_size, overlap)
    tw, th = min(w, tile_size), min(h, tile_size)
    tiles = tuple((x, y, x + tw, y + th) for y in ys for x in xs)
    # actual overlap after spacing tiles evenly (never less than asked)
    gaps = [tw - (b - a) for a, b in itertools.pairwise(xs)] + [
        th - (b - a) for a, b in itertools.pairwise(ys)
    ]
    real = min(gaps) if gaps else overlap
    return TilePlan(len(xs), len(ys), tw, th, real, line_height, tiles)


@dataclass
class _Piece:
    block: Block
    box: Box
    tile: int
    cut: dict[str, bool] = field(default_factory=dict)  # left/right/top/bottom: touches an inner border

    @property
    def area(self) -> float:
        return max(0.0, self.box[2] - self.box[0]) * max(0.0, self.box[3] - self.box[1])


def _inter(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, w) * max(0.0, h)


def _similar(a: str, b: str) -> float:
    """Share of the shorter text found in the longer one (a piece cut at a border counts as similar)."""
    a, b = " ".join(a.split()).lower(), " ".join(b.split()).lower()
    if not a or not b:
        return 1.0 if a == b else 0.0
    short, long_ = sorted((a, b), key=len)
    blocks = difflib.SequenceMatcher(None, short, long_, autojunk=False).get_matching_blocks()
    return sum(m.size for m in blocks) / len(short)


def _opposite_cuts(p: _Piece, q: _Piece) -> bool:
    """Left and right pieces of one long line: they are stitched, not de-duplicated. Pieces with
    (nearly) the same box are one block that merely ends on both borders: a duplicate."""
    opposite = (p.cut.get("right") and q.cut.get("left")) or (p.cut.get("left") and q.cut.get("right"))
    return bool(opposite) and _inter(p.box, q.box) < 0.97 * min(p.area, q.area)


def stitch_text(left: str, right: str, window: int = 60) -> str:
    """Join two pieces of one line that both read the overlap: the common run is kept once."""
    a, b = left.rstrip(), right.lstrip()
    tail, head = a[-window:], b[:window]
    m = difflib.SequenceMatcher(None, tail, head, autojunk=False).find_longest_match(
        0, len(tail), 0, len(head)
    )
    if m.size >= 3 or (m.size >= 2 and m.size == min(len(tail), len(head))):
        return a[: len(a) - len(tail) + m.a] + b[m.b :]
    return f"{a} {b}"


def merge_tiles(
    tile_blocks: Sequence[Sequence[Block]], plan: TilePlan, page_size: tuple[int, int]
) -> list[Block]:
    """Blocks of every tile (in page pixels) → the page's blocks: see the module docstring."""
    w, h = page_size
    eps = max(3.0, plan.overlap * 0.04)
    pieces: list[_Piece] = []
    for t, blocks in enumerate(tile_blocks):
        x0, y0, x1, y1 = plan.tiles[t]
        for block in blocks:
            box = block.box
            if box is None:  # a block without a box cannot be placed: keep it from the first tile only
                if not any(p.block.text == block.text and p.box == (0, 0, 0, 0) for p in pieces):
                    pieces.append(_Piece(block, (0.0, 0.0, 0.0, 0.0), t))
                continue
            cut = {
                "left": x0 > 0 and box[0] <= x0 + eps,
                "right": x1 < w and box[2] >= x1 - eps,
                "top": y0 > 0 and box[1] <= y0 + eps,
                "bottom": y1 < h and box[3] >= y1 - eps,
            }
            pieces.append(_Piece(block, box, t, cut))

    # 1. pieces cut at a top/bottom border that another tile saw (mostly) whole; one at a time, smallest
    # first, so two pieces that cover each other do not both go
    for p in sorted(pieces, key=lambda p: p.area):
        if (p.cut.get("top") or p.cut.get("bottom")) and any(
            q is not p
            and q.tile != p.tile
            and _inter(p.box, q.box) >= 0.6 * p.area
            and q.area >= 0.9 * p.area
            for q in pieces
        ):
            pieces.remove(p)

    # 2. duplicates from overlapping tiles: same place, similar text → keep the fuller one
    pieces.sort(key=lambda p: (-len(p.block.text), -p.area))
    kept: list[_Piece] = []
    for p in pieces:
        dup = any(
            q.tile != p.tile
            and not _opposite_cuts(p, q)
            and _inter(p.box, q.box) >= 0.5 * min(p.area, q.area) > 0
            and _similar(p.block.text, q.block.text) >= 0.6
            for q in kept
        )
        if not dup:
            kept.append(p)

    # 3. stitch left/right pieces of lines that cross a vertical border
    changed = True
    while changed:
        changed = False
        for a in kept:
            if not a.cut.get("right"):
                continue
            for b in kept:
                if b is a or b.tile == a.tile or not b.cut.get("left"):
                    continue
                vo = min(a.box[3], b.box[3]) - max(a.box[1], b.box[1])
                hmin = min(a.box[3] - a.box[1], b.box[3] - b.box[1])
                if vo < 0.5 * hmin or not (b.box[0] < a.box[2] + eps and b.box[0] > a.box[0]):
                    continue
                box = (min(a.box[0], b.box[0]), min(a.box[1], b.box[1]), max(a.box[2], b.box[2]),
                       max(a.box[3], b.box[3]))  # fmt: skip
                text = stitch_text(a.block.text, b.block.text)
                merged = Block(a.block.label, text, [box])
                cut = {"left": a.cut.get("left", False), "right": b.cut.get("right", False),
                       "top": False, "bottom": False}  # fmt: skip
                kept = [p for p in kept if p is not a and p is not b] + [_Piece(merged, box, b.tile, cut)]
                changed = True
                break
            if changed:
                break

    # 4. reading order: bands of one line height, top to bottom, then left to right
    band = max(1, plan.line_height)
    kept.sort(key=lambda p: (int(p.box[1] // band), p.box[0]))
    return [p.block for p in kept]


class TilingEngine(WrappedEngine):
    """Pages whose long side exceeds ``max_side`` are read as overlapping tiles by the inner engine."""

    def __init__(self, engine: Engine, *, max_side: int = 4000, tile_size: int = 3000, min_overlap: int = 96):
        super().__init__(engine)
        if tile_size < 256:
            from ocr_app.exceptions import ConfigError

            raise ConfigError(f"tile_size must be at least 256 px, not {tile_size}")
        self.max_side = max_side
        self.tile_size = tile_size
        self.min_overlap = min_overlap

    def describe(self) -> dict[str, object]:
        info = dict(self.engine.describe())
        info["tiling"] = {"max_side": self.max_side, "tile_size": self.tile_size}
        return info

    def needs_tiling(self, page: PageImage) -> bool:
        return self.max_side > 0 and max(page.size) > self.max_side

    def plan(self, image: Image.Image) -> TilePlan:
        line = tallest_line(image, strip_px=self.tile_size)
        return plan_tiles(image.size, self.tile_size, line, self.min_overlap)

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        results = dict(self.predict_stream(requests))
        return [results[i] for i in range(len(requests))]

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Small pages pass through; a tiled page is yielded once all its tiles are read. Requests are
        pulled lazily (a tiled page becomes its tiles when the inner engine asks for them), so a whole
        document still streams through the inner engine."""
        owner: list[tuple[int, int]] = []  # sub-request → (request index, tile number; -1 = whole page)
        plans: dict[int, TilePlan] = {}
        originals: dict[int, PageRequest] = {}

        def subs() -> Iterator[PageRequest]:
            for i, req in enumerate(requests):
                if not self.needs_tiling(req.page):
                    owner.append((i, -1))
                    yield req
                    continue
                plan = plans[i] = self.plan(req.page.image)
                originals[i] = req
                logger.info("page %d: %d×%d tiles, overlap %d px", req.page.index + 1, plan.cols, plan.rows,
                            plan.overlap)  # fmt: skip
                for t, box in enumerate(plan.tiles):
                    owner.append((i, t))
                    yield _tile_request(req, box)

        got: dict[int, dict[int, EngineOutput]] = {}
        for j, out in self.engine.predict_stream(subs()):
            i, t = owner[j]
            if t < 0:
                yield i, out
                continue
            got.setdefault(i, {})[t] = out
            if len(got[i]) == len(plans[i].tiles):
                yield i, self._merge(originals.pop(i), plans.pop(i), got.pop(i))

    def _merge(self, req: PageRequest, plan: TilePlan, outs: dict[int, EngineOutput]) -> EngineOutput:
        tile_blocks, raws, notes = [], [], []
        for t, box in enumerate(plan.tiles):
            out = outs[t]
            x0, y0, _x1, _y1 = box
            blocks = out.blocks or []  # engines return blocks in the tile's pixels (DeepSeek's wing parses)
            tile_blocks.append([_shift(b, x0, y0) for b in blocks])
            if out.raw_text:
                raws.append(f"<!-- tile {t + 1} of {len(plan.tiles)} at x={x0} y={y0} -->\n{out.raw_text}")
            notes.extend(n for n in out.notes if n not in notes)
        blocks = merge_tiles(tile_blocks, plan, req.page.size)
        first = outs[0]
        timings: dict[str, float] = {}
        for out in outs.values():
            for k, v in out.timings.items():
                timings[k] = timings.get(k, 0.0) + v
        stops = {o.stop_reason for o in outs.values()}
        g, r = plan.cols, plan.rows
        notes.insert(
            0, f"tiled: {g}×{r} tiles of {plan.tile_width}×{plan.tile_height} px, overlap {plan.overlap} px"
        )
        return EngineOutput(
            engine=first.engine,
            raw_text="\n\n".join(raws),
            blocks=blocks,
            stop_reason=next(s for s in _WORST if s in stops),
            num_tokens=sum(o.num_tokens for o in outs.values()),
            vision_tokens=sum(o.vision_tokens for o in outs.values()),
            timings=timings,
            notes=notes,
            tiling=plan.to_dict(),
        )


def _tile_request(req: PageRequest, box: tuple[int, int, int, int]) -> PageRequest:
    page = req.page
    tile = PageImage(
        image=page.image.crop(box),
        index=page.index,
        source=page.source,
        dpi=page.dpi,
        pdf_path=None,  # a tile has no text layer of its own
        page_count=page.page_count,
    )
    return replace(req, page=tile)  # the same ask (prompt, locate text, mode, cap) for one tile


def _shift(block: Block, dx: int, dy: int) -> Block:
    boxes: list[Any] = [(b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy) for b in block.boxes]
    return Block(block.label, block.text, boxes)


__all__ = ["TilePlan", "TilingEngine", "merge_tiles", "plan_tiles", "stitch_text", "tallest_line"]
