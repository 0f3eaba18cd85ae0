"""End-to-end quantisation flows: quantise a checkpoint once to a directory (``ocr-app quantize``), or
while loading (streamed, then kept in the quantised-weights cache), and the backend a model's loader
calls for ``int8`` / ``mixed``. Both flows use ``stream.py``: the float model never sits whole on the
GPU. ``quantize_loaded`` quantises a model already in memory (tests, benchmarks). Every flow is handed
the model's ``QuantAdapter``: this package knows no model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.quant.presets import Preset, get_preset

if TYPE_CHECKING:
    import torch

    from ocr_app.quant.adapter import QuantAdapter
    from ocr_app.quant.stream import ProgressFn

logger = logging.getLogger(__name__)

DEFAULT_CALIB_PAGES = 8
ON_THE_FLY_CALIB_PAGES = 4


def _float_dtype(preset: Preset) -> torch.dtype:
    import torch

    return getattr(torch, preset.float_dtype)


def calibrate(model, processor, pages: int, adapter: QuantAdapter, seed: int = 0):
    """Render ``pages`` calibration pages and record the activations they produce in the chained units."""
    from ocr_app.quant.calibration import collect_activations, render_calibration_pages

    batches = adapter.calibration_batches(processor, render_calibration_pages(pages, seed=seed))
    return collect_activations(model, batches, adapter)


def quantize_loaded(
    model, processor, preset: Preset, calib_pages: int = DEFAULT_CALIB_PAGES, *, adapter: QuantAdapter
) -> dict[str, Any]:
    """Quantise an already loaded float model in place (AWQ calibration first when the preset asks)."""
    from ocr_app.quant.apply import quantize_model

    calibrate_now = preset.awq and calib_pages > 0
    calibration = calibrate(model, processor, calib_pages, adapter) if calibrate_now else None
    recipe = quantize_model(model, preset, calibration, adapter=adapter)
    del calibration
    return recipe


def _default_device() -> torch.device:
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def quantize_checkpoint(
    src: str | Path,
    out: str | Path,
    preset_name: str = "mixed",
    calib_pages: int = DEFAULT_CALIB_PAGES,
    device: str | None = None,
    progress: ProgressFn | None = None,
    *,
    adapter: QuantAdapter,
) -> Path:
    """``ocr-app quantize``: stream the float checkpoint ``src`` through the quantiser (the same path and
    peak as a streaming load), write a loadable directory."""
    import torch

    from ocr_app.quant.checkpoint import save_quantized
    from ocr_app.quant.stream import stream_quantize

    preset = get_preset(preset_name)
    if not preset.quantized:
        from ocr_app.exceptions import ConfigError

        raise ConfigError(f"preset {preset_name!r} is not a quantised preset; use int8 or mixed")
    dev = torch.device(device) if device else _default_device()
    dtype = PresetBackend(preset.name, adapter).compute_dtype(dev)
    model, recipe, _ = stream_quantize(
        src, preset, dev, dtype, adapter=adapter, calib_pages=calib_pages, progress=progress
    )
    return save_quantized(model, recipe, out, src)


class PresetBackend:
    """The quantisation backend a model's loader calls for a quantised preset, with the model's
    ``adapter`` (the loader passes it; this package knows no model)."""

    def __init__(
        self, preset_name: str, adapter: QuantAdapter, calib_pages: int = ON_THE_FLY_CALIB_PAGES
    ) -> None:
        self.preset_name = preset_name
        self.adapter = adapter
        self.calib_pages = calib_pages

    def compute_dtype(self, device: torch.device) -> torch.dtype:
        """bf16 on GPUs with bf16, fp16 on older GPUs, fp32 on the CPU (where bf16 matmuls are slow)."""
        import torch

        if device.type == "cuda":
            return (
                torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
            )
        return torch.float32

    def load_model(
        self,
        model_dir: Path,
        device: torch.device,
        dtype: torch.dtype,
        *,
        cache_dir: str | Path | None = None,
        progress: ProgressFn | None = None,
        prefetch: Any = None,
        skeleton: Callable[[Path, torch.dtype], Any] | None = None,
    ):
        """A pre-quantised directory loads directly (from ``prefetch``, its file already being read onto
        ``device``, when given); a float checkpoint is quantised while it streams in
        (``stream.py``), or read from the quantised-weights cache under ``cache_dir`` when it was before.
        ``skeleton``: the model's own builder of an empty model from a checkpoint directory (a wing's
        native modules), used for every load of quantised weights instead of transformers' classes.

        The returned model carries ``ocr_quant_info`` (preset, where the weights came from, seconds, and
        ``load_breakdown``: the seconds of each step of a load that read quantised weights).
        """
        from ocr_app.quant.checkpoint import is_quantized_checkpoint, load_quantized, read_recipe

        t0 = time.perf_counter()
        info: dict[str, Any] = {"preset": self.preset_name, "quantize_seconds": None, "cache_path": None}
        if is_quantized_checkpoint(model_dir):
            found = read_recipe(model_dir)["preset"]
            if found != self.preset_name:
                logger.warning("asked for preset %s but %s holds a %s checkpoint: loading it", self.preset_name,
                               model_dir, found)  # fmt: skip
            steps: dict[str, float] = {}
            model, _ = load_quantized(model_dir, device, dtype, timings=steps, prefetch=prefetch,
                                      adapter=self.adapter, skeleton=skeleton)  # fmt: skip
            info.update(preset=found, source="pre-quantised checkpoint", load_breakdown=steps)
        else:
            model = self._load_streamed(Path(model_dir), device, dtype, cache_dir, progress, info, skeleton)
        info["load_seconds"] = time.perf_counter() - t0
        model.ocr_quant_info = info
        return model

    def _load_streamed(self, model_dir, device, dtype, cache_dir, progress, info, skeleton=None):
        from ocr_app.exceptions import ModelLoadError
        from ocr_app.quant.checkpoint import DamagedCheckpointError, load_quantized
        from ocr_app.quant.store import SUBDIR, QuantStore
        from ocr_app.quant.stream import stream_quantize

        t0 = time.perf_counter()
        store = QuantStore(Path(cache_dir) / SUBDIR) if cache_dir is not None else None
        key = store.key(model_dir, self.preset_name, self.calib_pages, self.adapter) if store else None
        hit = store.lookup(key) if store else None
        steps = {"key_s": time.perf_counter() - t0}
        if hit is not None:
            logger.info(
                "quantised weights for %s (%s) from the cache at %s", model_dir, self.preset_name, hit
            )
            # the very loader of a pre-quantised checkpoint, checking the weights as it reads them: a cache
            # hit costs the key and the checksum on top, nothing else; a damaged entry (cut short,
            # overwritten, bytes flipped) costs a re-quantisation
            try:
                checksum = store.entry(hit)["weights_checksum"]
                model, _ = load_quantized(
                    hit, device, dtype, timings=steps, adapter=self.adapter, checksum=checksum,
                    skeleton=skeleton,
                )  # fmt: skip
            except (DamagedCheckpointError, ModelLoadError, OSError, KeyError, ValueError) as exc:
                store.remove_damaged(hit, f"{type(exc).__name__}: {exc}")
                info["cache_damaged"] = str(hit)
            else:
                info.update(source="cache", cache_path=str(hit), quantize_seconds=_entry_seconds(hit),
                            load_breakdown=steps)  # fmt: skip
                return model
        preset = get_preset(self.preset_name, bf16_supported=dtype != _fp16())
        model, recipe, report = stream_quantize(
            model_dir,
            preset,
            device,
            dtype,
            adapter=self.adapter,
            calib_pages=self.calib_pages,
            progress=progress,
        )
        info.update(source="quantised now", quantize_seconds=report.seconds, peak_bytes=report.peak_bytes)
        if store is not None:
            try:
                path = store.save(key, model, recipe, model_dir, {"quantize_seconds": report.seconds,
                                                                  "device": report.device})  # fmt: skip
                info["cache_path"] = str(path)
            except OSError as exc:  # a full or read-only disk costs the next load a re-quantisation only
                logger.warning("could not store the quantised weights in %s: %s", store.root, exc)
        return model


def _fp16():
    import torch

    return torch.float16


def _entry_seconds(path: Path) -> float | None:
    import json

    from ocr_app.quant.store import ENTRY_FILE

    try:
        return json.loads((path / ENTRY_FILE).read_text()).get("quantize_seconds")
    except (OSError, ValueError):
        return None
