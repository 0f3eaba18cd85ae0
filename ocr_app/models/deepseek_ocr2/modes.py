"""Resolution modes: how a page is cut into vision views, and how many vision tokens that costs.

DeepSeek-OCR-2 sees a page as one global view (padded to a square) plus, optionally, 768 px tiles.
One view of S px gives (S / 16 / 4)² tokens (patch 16, downsample 4), and a separator token follows:

======== ============================================ ======================================
mode     views                                        vision tokens
======== ============================================ ======================================
global   one 1024 px global view                      256 + 1 = 257
default  1024 px global view + k tiles of 768 px      257 + 144·k, k = 0 (long side ≤ 768) or 2–6
default:N  like default with at most N tiles (2–6)    257 + 144·k, k ≤ N
small    one 768 px global view                       144 + 1 = 145 (experimental: quality unmeasured)
auto     global or default per page (rule below)      257 … 1121
======== ============================================ ======================================

Why explicit image-processor kwargs: the processor counts image tokens from ``size`` and ``tile_size``
while the image processor builds a ``tile_size`` global view when ``crop_to_patches=False``. With the
defaults that is a 768 px view (145 features) against 257 expanded tokens — the model then fails.
Each mode therefore sets every kwarg that matters, so token count == feature count (tested per mode).

``auto`` rule (cheap: one grey thumbnail of at most 512 px):

1. huge scans are downscaled first so their long side is at most 4608 px (6 × 768, the longest tile
   canvas the processor can build — nothing the model sees is lost, preprocessing memory is bounded);
2. a page whose long side is at most 1024 px → ``global`` (the global view already has every pixel);
3. a sparse page (edge density < 1.5 %: title pages, slides, photos, near-empty pages) → ``global``;
4. otherwise (normal or dense text) → ``default``.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ConfigError

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

PATCH_SIZE = 16
DOWNSAMPLE = 4
GLOBAL_SIZE = 1024
TILE_SIZE = 768
MIN_TILES = 2
MAX_TILES = 6
AUTO_MAX_SIDE = TILE_SIZE * MAX_TILES  # 4608
AUTO_SMALL_SIDE = GLOBAL_SIZE
AUTO_SPARSE_EDGE_DENSITY = 0.015
_THUMB_SIDE = 512
_EDGE_STEP = 40  # grey-level jump between neighbouring thumbnail pixels that counts as an edge

MODES: dict[str, str] = {
    "auto": "Pick per page: global for small or sparse pages, default for text pages; downscales huge scans.",
    "default": "1024 px global view + 2–6 tiles of 768 px (257 + 144 per tile = up to 1121 vision tokens).",
    "global": "One 1024 px global view, no tiles (257 vision tokens): fast, for sparse or small pages.",
    "small": "One 768 px global view (145 vision tokens): fastest; experimental, quality unmeasured.",
}


@dataclass
class ModeSpec:
    """A concrete mode: kwargs for the image processor and an optional pre-downscale of the page."""

    name: str
    images_kwargs: dict[str, Any]
    max_side: int | None = None  # downscale the page (keeping aspect) so its long side is at most this
    reason: str = ""  # why ``auto`` chose this mode (empty for explicit modes)
    stats: dict[str, float] = field(default_factory=dict)


def _tiled_kwargs(max_tiles: int) -> dict[str, Any]:
    return {
        "crop_to_patches": True,
        "min_patches": MIN_TILES,
        "max_patches": max_tiles,
        "tile_size": TILE_SIZE,
        "size": {"height": GLOBAL_SIZE, "width": GLOBAL_SIZE},
    }


def _global_view(side: int) -> dict[str, Any]:
    # tile_size=side makes the image processor build a side-px global view (it uses tile_size when
    # crop_to_patches is False) and the processor count (side/64)² + 1 tokens: consistent.
    return {"crop_to_patches": False, "tile_size": side, "size": {"height": side, "width": side}}


# Fixed modes: name -> image-processor kwargs. ``register_mode`` adds one (with its MODES line).
_FIXED: dict[str, dict[str, Any]] = {
    "default": _tiled_kwargs(MAX_TILES),
    "global": _global_view(GLOBAL_SIZE),
    "small": _global_view(TILE_SIZE),
}
_DEFAULT_N = re.compile(r"default:(\d+)")


def register_mode(name: str, description: str, images_kwargs: dict[str, Any]) -> None:
    """Add a fixed resolution mode: the one place a new mode goes (UI and CLI list it from ``MODES``)."""
    key = name.strip().lower()
    if key == "auto" or _DEFAULT_N.fullmatch(key):
        raise ConfigError(f"'{name}' is a reserved mode name.")
    _FIXED[key] = dict(images_kwargs)
    MODES[key] = description


def tile_limit(mode: str) -> int | None:
    """Most tiles a mode may cut (``default`` 6, ``default:N`` N), None for modes without tiles.
    The mode grammar is parsed here only (the OOM ladder asks this)."""
    name = (mode or "").strip().lower()
    if m := _DEFAULT_N.fullmatch(name):
        return int(m.group(1))
    kwargs = _FIXED.get(name)
    if kwargs and kwargs.get("crop_to_patches"):
        return int(kwargs["max_patches"])
    return None


def _fixed_spec(name: str) -> ModeSpec:
    if name in _FIXED:
        return ModeSpec(name, dict(_FIXED[name]))
    n = tile_limit(name)
    if n is not None:
        if not MIN_TILES <= n <= MAX_TILES:
            raise ConfigError(f"Mode '{name}': the tile limit must be between {MIN_TILES} and {MAX_TILES}.")
        return ModeSpec(name, _tiled_kwargs(n))
    raise ConfigError(f"Unknown resolution mode '{name}'. Choose one of: {', '.join(MODES)} (or default:N).")


def check_mode(mode: str) -> str:
    """The normalised mode name, or ``ConfigError`` listing every mode (no page, no model needed)."""
    name = (mode or "").strip().lower()
    if name != "auto":
        _fixed_spec(name)
    return name


def page_stats(image: Image.Image) -> dict[str, float]:
    """Ink ratio and edge density of a grey thumbnail (long side ≤ 512 px) of the page."""
    import numpy as np

    grey = image.convert("L")
    grey.thumbnail((_THUMB_SIDE, _THUMB_SIDE))
    a = np.asarray(grey, dtype=np.int16)
    background = int(np.median(a))
    ink = float(np.mean(np.abs(a - background) > 60))
    dx = np.abs(np.diff(a, axis=1)) > _EDGE_STEP
    dy = np.abs(np.diff(a, axis=0)) > _EDGE_STEP
    edges = float((dx.sum() + dy.sum()) / max(1, dx.size + dy.size))
    return {"ink_ratio": round(ink, 4), "edge_density": round(edges, 4)}


def resolve_mode(mode: str, image: Image.Image) -> ModeSpec:
    """Turn a mode name into a concrete ``ModeSpec`` for this page (``auto`` looks at the page)."""
    name = (mode or "").strip().lower()
    if name != "auto":
        return _fixed_spec(name)
    w, h = image.size
    long_side = max(w, h)
    max_side = AUTO_MAX_SIDE if long_side > AUTO_MAX_SIDE else None
    if long_side <= AUTO_SMALL_SIDE:
        spec = _fixed_spec("global")
        spec.reason = f"auto: small page ({w}×{h} ≤ {AUTO_SMALL_SIDE} px) → global"
    else:
        stats = page_stats(image)
        if stats["edge_density"] < AUTO_SPARSE_EDGE_DENSITY:
            spec = _fixed_spec("global")
            spec.reason = f"auto: sparse page (edge density {stats['edge_density']:.3f}) → global"
        else:
            spec = _fixed_spec("default")
            spec.reason = f"auto: text page (edge density {stats['edge_density']:.3f}) → default"
        spec.stats = stats
    spec.max_side = max_side
    if max_side:
        spec.reason += f"; downscaled from {w}×{h} to long side {max_side}"
    logger.debug("%s", spec.reason)
    return spec


def scaled_size(spec: ModeSpec, size: tuple[int, int]) -> tuple[int, int]:
    """The (width, height) the page has after the mode's pre-downscale (identity when none applies)."""
    w, h = size
    if spec.max_side is None or max(w, h) <= spec.max_side:
        return w, h
    scale = spec.max_side / max(w, h)
    return max(1, round(w * scale)), max(1, round(h * scale))


def apply_max_side(spec: ModeSpec, image: Image.Image) -> Image.Image:
    """Downscale the page as ``scaled_size`` says (LANCZOS: antialiased, keeps thin strokes)."""
    target = scaled_size(spec, image.size)
    if target == image.size:
        return image
    from PIL import Image as PILImage

    return image.resize(target, PILImage.Resampling.LANCZOS)


def view_geometries() -> list[tuple[int, int]]:
    """``(global view side, tile side or 0)`` of every fixed mode (``auto`` and ``default:N`` pick
    among these): the view shapes the vision encoder can be given, for its kernel warm-up."""
    out = set()
    for kw in _FIXED.values():
        out.add((int(kw["size"]["height"]), int(kw["tile_size"]) if kw.get("crop_to_patches") else 0))
    return sorted(out)


def tokens_per_view(side: int) -> int:
    q = math.ceil(side / PATCH_SIZE / DOWNSAMPLE)
    return q * q


def num_tiles(spec: ModeSpec, image_size: tuple[int, int]) -> int:
    """How many 768 px tiles the image processor will cut (the processors' own rule: it is called)."""
    kw = spec.images_kwargs
    w, h = scaled_size(spec, image_size)
    tile = kw["tile_size"]
    if not kw.get("crop_to_patches") or max(w, h) <= tile:
        return 0
    from ocr_app.models.deepseek_ocr2.native_processor import get_optimal_tiled_canvas

    cols, rows = get_optimal_tiled_canvas((h, w), (tile, tile), kw["min_patches"], kw["max_patches"])
    return cols * rows


def vision_tokens(spec: ModeSpec, image_size: tuple[int, int]) -> int:
    """Vision tokens (= image features) for a page of ``image_size`` (width, height) in this mode."""
    kw = spec.images_kwargs
    return (
        tokens_per_view(kw["size"]["height"])
        + tokens_per_view(kw["tile_size"]) * num_tiles(spec, image_size)
        + 1  # view separator
    )


__all__ = [
    "MODES",
    "ModeSpec",
    "apply_max_side",
    "num_tiles",
    "page_stats",
    "register_mode",
    "resolve_mode",
    "scaled_size",
    "tile_limit",
    "tokens_per_view",
    "view_geometries",
    "vision_tokens",
]


TILE_STEPS = (4, 2)  # tile limits tried before dropping to the global view


def smaller_modes(mode: str, image: Any = None) -> list[str]:
    """Modes to try after an OOM at ``mode``, smallest footprint last (the engine's
    ``smaller_footprints``: fewer tiles, then the global view)."""
    name = (mode or "default").strip().lower()
    if name == "auto" and image is not None:
        name = resolve_mode("auto", image).name
    tiles = MAX_TILES if name == "auto" else tile_limit(name)
    if tiles is None:
        return []  # global / small: nothing smaller worth its quality loss
    return [f"default:{n}" for n in TILE_STEPS if n < tiles] + ["global"]
