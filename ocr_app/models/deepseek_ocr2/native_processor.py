"""DeepSeek-OCR-2's processor without transformers or torchvision: the tokenizer through the
``tokenizers`` library, the image preprocessing with PIL, NumPy and torch.

Why: the native loader must not import transformers (issue 32), and transformers' image processor for this
model needs torchvision (~1 s of import). Outputs equal transformers' ``DeepseekOcr2Processor`` with its
torchvision-backed ``DeepseekOcr2ImageProcessor`` (tested, exactly): the same ids and decoded text, the same
pixel tensors — the page as uint8, resized with torch's antialiased bicubic (the kernel torchvision calls),
cut into ``tile_size`` tiles on the grid ``get_optimal_tiled_canvas`` picks (when the page is larger than a
tile), the global view resized to ``size`` (``tile_size`` without tiles) and padded to a square with gray
127, all normalised with mean = std = 0.5 — and the same prompt expansion (``<image>`` → one token per vision
feature: (S/64)² per view plus a separator).

Nothing heavy is imported at module import: ``modes`` takes ``get_optimal_tiled_canvas`` from here.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from ocr_app.exceptions import ModelLoadError

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

IMAGE_TOKEN = "<image>"
# PIL resampling codes → torch.nn.functional.interpolate modes (torchvision's mapping for these three)
_RESAMPLE = {0: "nearest-exact", 2: "bilinear", 3: "bicubic"}


# --- tiling ------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def tile_grids(min_tiles: int, max_tiles: int) -> tuple[tuple[int, int], ...]:
    """Every ``(columns, rows)`` grid with ``min_tiles`` … ``max_tiles`` tiles, fewest tiles first (a
    stable sort of the column-major enumeration: ties keep that order)."""
    grids = [
        (c, r)
        for c in range(1, max_tiles + 1)
        for r in range(1, max_tiles + 1)
        if min_tiles <= c * r <= max_tiles
    ]
    return tuple(sorted(grids, key=lambda g: g[0] * g[1]))


@functools.lru_cache(maxsize=256)
def get_optimal_tiled_canvas(
    image_size: tuple[int, int], tile_size: tuple[int, int], min_tiles: int, max_tiles: int
) -> tuple[int, int]:
    """``(columns, rows)`` of tiles for an image of ``(height, width)``: the grid whose aspect ratio is
    closest to the image's; on a tie the later (larger) grid wins while the image covers more than half
    of it (the rule of transformers' image processor for this model)."""
    height, width = image_size
    tile_h, tile_w = tile_size
    ratio, area = width / height, width * height
    best, best_diff = (1, 1), float("inf")
    for cols, rows in tile_grids(min_tiles, max_tiles):
        diff = abs(ratio - cols / rows)
        if diff < best_diff:
            best, best_diff = (cols, rows), diff
        elif diff == best_diff and area > 0.5 * tile_h * tile_w * cols * rows:
            best = (cols, rows)
    return best


# --- tokenizer ---------------------------------------------------------------------------------------
def _token_text(value: Any) -> str | None:
    """A special token from tokenizer_config.json: a string, or an AddedToken dict's ``content``."""
    if isinstance(value, dict):
        return value.get("content")
    return value


class NativeTokenizer:
    """The checkpoint's ``tokenizer.json`` through ``tokenizers``, with the calls the project makes on
    transformers' fast tokenizer (ids, special tokens, ``decode`` keeping special tokens)."""

    def __init__(self, tokenizer: Any, settings: dict[str, Any] | None = None) -> None:
        settings = settings or {}
        self._tok = tokenizer
        self.bos_token = _token_text(settings.get("bos_token"))
        self.eos_token = _token_text(settings.get("eos_token"))
        self.pad_token = _token_text(settings.get("pad_token"))
        self.unk_token = _token_text(settings.get("unk_token"))
        self.clean_up_tokenization_spaces = bool(settings.get("clean_up_tokenization_spaces", False))
        if self.clean_up_tokenization_spaces:
            raise ModelLoadError("tokenizers with clean_up_tokenization_spaces are not read natively")

    @classmethod
    def from_dir(cls, directory: str | Path) -> NativeTokenizer:
        from tokenizers import Tokenizer

        directory = Path(directory)
        path = directory / "tokenizer.json"
        if not path.is_file():
            raise ModelLoadError(f"{directory} has no tokenizer.json")
        cfg = directory / "tokenizer_config.json"
        settings = json.loads(cfg.read_text()) if cfg.is_file() else {}
        return cls(Tokenizer.from_file(str(path)), settings)

    def _id(self, token: str | None) -> int | None:
        return None if token is None else self._tok.token_to_id(token)

    @property
    def bos_token_id(self) -> int | None:
        return self._id(self.bos_token)

    @property
    def eos_token_id(self) -> int | None:
        return self._id(self.eos_token)

    @property
    def pad_token_id(self) -> int | None:
        return self._id(self.pad_token)

    @property
    def unk_token_id(self) -> int | None:
        return self._id(self.unk_token)

    def __len__(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def convert_tokens_to_ids(self, tokens: str | list[str]) -> Any:
        if isinstance(tokens, str):
            return self._id(tokens)
        return [self._id(t) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | list[int]) -> Any:
        if isinstance(ids, int):
            return self._tok.id_to_token(ids)
        return [self._tok.id_to_token(i) for i in ids]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self._tok.encode(text, add_special_tokens=add_special_tokens).ids

    def __call__(
        self, text: str | list[str], add_special_tokens: bool = True, return_tensors: str | None = None
    ) -> dict[str, Any]:
        texts = [text] if isinstance(text, str) else list(text)
        ids = [self.encode(t, add_special_tokens) for t in texts]
        out: dict[str, Any] = {"input_ids": ids, "attention_mask": [[1] * len(i) for i in ids]}
        if return_tensors == "pt":
            import torch

            if len({len(i) for i in ids}) > 1:
                raise ValueError("texts of different lengths cannot make one tensor (no padding here)")
            out = {k: torch.tensor(v, dtype=torch.long) for k, v in out.items()}
        elif isinstance(text, str):
            out = {k: v[0] for k, v in out.items()}
        return out

    def decode(
        self, ids: Any, skip_special_tokens: bool = False, clean_up_tokenization_spaces: bool | None = None
    ) -> str:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, int):
            ids = [ids]
        if clean_up_tokenization_spaces:
            raise ValueError("clean_up_tokenization_spaces is not implemented by the native tokenizer")
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def batch_decode(self, sequences: Any, **kwargs: Any) -> list[str]:
        return [self.decode(s, **kwargs) for s in sequences]


# --- images ------------------------------------------------------------------------------------------
class ImagesKwargs(TypedDict, total=False):
    """What the image processor takes per call (``device``: preprocess on that GPU)."""

    size: dict[str, int]
    tile_size: int
    crop_to_patches: bool
    min_patches: int
    max_patches: int
    resample: int
    background_color: list[int]
    device: Any


IMAGE_DEFAULTS: dict[str, Any] = {
    "size": {"height": 1024, "width": 1024},
    "tile_size": 768,
    "crop_to_patches": True,
    "min_patches": 2,
    "max_patches": 6,
    "resample": 3,
    "background_color": [127, 127, 127],
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "rescale_factor": 1 / 255,
    "do_rescale": True,
    "do_normalize": True,
    "do_resize": True,
    "do_convert_rgb": True,
}


class NativeImageProcessor:
    """Page → ``pixel_values`` [1, 3, S, S], ``pixel_values_local`` [k, 3, T, T] (or absent),
    ``num_local_patches`` [k] (module doc)."""

    valid_kwargs = ImagesKwargs

    def __init__(self, **settings: Any) -> None:
        known = {k: settings.get(k, v) for k, v in IMAGE_DEFAULTS.items()}
        self.__dict__.update(known)
        if not (self.do_resize and self.do_rescale and self.do_normalize and self.do_convert_rgb):
            raise ModelLoadError("image processors that skip resize/rescale/normalise are not read natively")
        if int(self.resample) not in _RESAMPLE:
            raise ModelLoadError(
                f"resample {self.resample} is not read natively (bicubic, bilinear, nearest)"
            )

    def __call__(self, images: Any, return_tensors: str | None = "pt", **kwargs: Any) -> dict[str, Any]:
        return self.preprocess(images, **kwargs)

    def preprocess(self, images: Any, **kwargs: Any) -> dict[str, Any]:
        import torch

        opts = {k: kwargs.get(k, getattr(self, k)) for k in ImagesKwargs.__annotations__ if k != "device"}
        device = kwargs.get("device")
        images = images if isinstance(images, (list, tuple)) else [images]
        globals_, locals_, counts = [], [], []
        for image in images:
            x = _to_tensor(image, device)
            tiles = self._tiles(x, opts)
            counts.append(0 if tiles is None else tiles.shape[0])
            if tiles is not None:
                locals_.append(tiles)
            globals_.append(self._global_view(x, opts))
        out: dict[str, Any] = {
            "pixel_values": torch.stack(globals_),
            "num_local_patches": torch.tensor(counts, dtype=torch.long),
        }
        if locals_:
            out["pixel_values_local"] = torch.cat(locals_)
        return out

    def _tiles(self, x: torch.Tensor, o: dict[str, Any]) -> torch.Tensor | None:
        h, w = x.shape[-2:]
        tile = int(o["tile_size"])
        if not o["crop_to_patches"] or max(h, w) <= tile:
            return None
        cols, rows = get_optimal_tiled_canvas(
            (h, w), (tile, tile), int(o["min_patches"]), int(o["max_patches"])
        )
        canvas = resize(x[None], (tile * rows, tile * cols), int(o["resample"]))[0]
        tiles = canvas.reshape(3, rows, tile, cols, tile).permute(1, 3, 0, 2, 4).reshape(-1, 3, tile, tile)
        return self._normalize(tiles)

    def _global_view(self, x: torch.Tensor, o: dict[str, Any]) -> torch.Tensor:
        h, w = x.shape[-2:]
        side = int(o["size"]["height"]) if o["crop_to_patches"] else int(o["tile_size"])
        scale = side / max(h, w)
        view = resize(x[None], (round(h * scale), round(w * scale)), int(o["resample"]))[0]
        return self._normalize(pad_to_square(view, o["background_color"]))

    def _normalize(self, x: torch.Tensor) -> torch.Tensor:
        """(x − mean·255) / (std·255) in float32: rescale and normalise fused, as transformers does."""
        import torch

        mean = torch.tensor(self.image_mean, device=x.device) * (1.0 / self.rescale_factor)
        std = torch.tensor(self.image_std, device=x.device) * (1.0 / self.rescale_factor)
        shape = (-1, 1, 1)
        return x.to(torch.float32).sub_(mean.view(shape)).div_(std.view(shape))


def _to_tensor(image: Any, device: Any) -> torch.Tensor:
    """A PIL page as a contiguous uint8 ``[3, H, W]`` tensor (transparency composited on white)."""
    import numpy as np
    import torch

    if getattr(image, "mode", None) != "RGB":
        from PIL import Image as PILImage

        if "A" in image.getbands() or image.info.get("transparency") is not None:
            rgba = image.convert("RGBA")
            image = PILImage.alpha_composite(PILImage.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
        image = image.convert("RGB")
    x = torch.from_numpy(np.array(image)).permute(2, 0, 1).contiguous()
    return x if device is None else x.to(device)


def resize(
    x: torch.Tensor, size: tuple[int, int], resample: int = 3, *, uint8_kernel: bool | None = None
) -> torch.Tensor:
    """``[B, 3, H, W]`` uint8 resized to ``size`` = (height, width), antialiased: on the CPU torch's uint8
    kernel, elsewhere through float32 with rounding and clamping (torchvision's two paths; ``uint8_kernel``
    picks one, for tests)."""
    import platform

    import torch
    import torch.nn.functional as F

    if tuple(x.shape[-2:]) == tuple(size):
        return x
    mode = _RESAMPLE[resample]
    smooth = mode in ("bilinear", "bicubic")
    kwargs = {"align_corners": False, "antialias": True} if smooth else {}
    native_uint8 = mode == "nearest-exact" or (
        x.device.type == "cpu"
        and (
            mode == "bicubic"
            or torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
            or platform.machine() in ("aarch64", "arm64")
        )
    )
    if uint8_kernel is not None:
        native_uint8 = uint8_kernel
    if native_uint8:
        return F.interpolate(x, size=list(size), mode=mode, **kwargs)
    y = F.interpolate(x.to(torch.float32), size=list(size), mode=mode, **kwargs)
    if mode == "bicubic":
        y = y.clamp_(0, 255)
    return y.round_().to(torch.uint8)


def pad_to_square(x: torch.Tensor, color: list[int]) -> torch.Tensor:
    """``[3, H, W]`` centred on a square of ``color`` (the extra column/row, if odd, right/bottom)."""
    import torch

    h, w = x.shape[-2:]
    if h == w:
        return x
    side = max(h, w)
    out = torch.empty(3, side, side, dtype=x.dtype, device=x.device)
    out.copy_(torch.tensor(color, dtype=x.dtype, device=x.device).view(3, 1, 1).expand(3, side, side))
    top, left = (side - h) // 2, (side - w) // 2
    out[:, top : top + h, left : left + w] = x
    return out


# --- the processor -----------------------------------------------------------------------------------
class NativeProcessor:
    """Prompt with ``<image>`` + page → ``input_ids`` (the image token repeated once per vision feature)
    and the image processor's tensors; ``tokenizer``, ``image_processor`` and ``image_token_id`` as on
    transformers' processor."""

    def __init__(
        self, image_processor: NativeImageProcessor, tokenizer: NativeTokenizer,
        patch_size: int = 16, downsample_ratio: int = 4,
    ) -> None:  # fmt: skip
        self.image_processor = image_processor
        self.tokenizer = tokenizer
        self.patch_size = int(patch_size)
        self.downsample_ratio = int(downsample_ratio)
        self.image_token = IMAGE_TOKEN
        self.image_token_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
        if self.image_token_id is None:
            raise ModelLoadError(f"the tokenizer has no {IMAGE_TOKEN} token")

    @classmethod
    def from_dir(cls, directory: str | Path) -> NativeProcessor:
        directory = Path(directory)
        settings: dict[str, Any] = {}
        for name in ("processor_config.json", "preprocessor_config.json"):
            path = directory / name
            if path.is_file():
                settings = {**json.loads(path.read_text()), **settings}
        image = settings.get("image_processor", settings)
        image = {k: v for k, v in image.items() if k in IMAGE_DEFAULTS}
        return cls(
            NativeImageProcessor(**image),
            NativeTokenizer.from_dir(directory),
            settings.get("patch_size", 16),
            settings.get("downsample_ratio", 4),
        )

    def tokens_per_image(self, num_tiles: int, size: dict[str, int] | None, tile_size: int | None) -> int:
        side = int((size or self.image_processor.size)["height"])
        tile = int(tile_size or self.image_processor.tile_size)
        per = self.patch_size * self.downsample_ratio
        return math.ceil(side / per) ** 2 + math.ceil(tile / per) ** 2 * num_tiles + 1

    def __call__(self, images: Any = None, text: str | list[str] | None = None, return_tensors: str = "pt",
                 **kwargs: Any) -> dict[str, Any]:  # fmt: skip
        if text is None:
            raise ValueError("You have to specify text.")
        texts = [text] if isinstance(text, str) else list(text)
        out: dict[str, Any] = {}
        if images is not None:
            out = self.image_processor.preprocess(images, **kwargs)
            counts = [int(n) for n in out["num_local_patches"]]
            expanded, i = [], 0
            for t in texts:
                parts = t.split(self.image_token)
                pieces = [parts[0]]
                for rest in parts[1:]:
                    if i >= len(counts):
                        raise ValueError("more <image> tokens in the text than images")
                    n = self.tokens_per_image(counts[i], kwargs.get("size"), kwargs.get("tile_size"))
                    pieces += [self.image_token * n, rest]
                    i += 1
                expanded.append("".join(pieces))
            if i != len(counts):
                raise ValueError(f"{len(counts)} images but {i} <image> tokens in the text")
            texts = expanded
        enc = self.tokenizer(texts, return_tensors=return_tensors)
        return {**enc, **out}


def load_processor(directory: str | Path) -> NativeProcessor:
    return NativeProcessor.from_dir(directory)


__all__ = [
    "NativeImageProcessor",
    "NativeProcessor",
    "NativeTokenizer",
    "get_optimal_tiled_canvas",
    "load_processor",
    "pad_to_square",
    "resize",
    "tile_grids",
]
