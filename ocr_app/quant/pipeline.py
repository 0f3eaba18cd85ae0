"""End-to-end quantisation flows: quantise a checkpoint once to a directory, or quantise on the fly
while loading, and the backend the DeepSeek engine's loader calls for ``int8`` / ``mixed``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.quant.presets import Preset, get_preset

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

DEFAULT_CALIB_PAGES = 8
ON_THE_FLY_CALIB_PAGES = 4
# Calibrate on the GPU only when the float model fits there with this much headroom.
GPU_CALIB_HEADROOM = 1.5


def _float_dtype(preset: Preset) -> torch.dtype:
    import torch

    return getattr(torch, preset.float_dtype)


def calibrate(model, processor, pages: int, seed: int = 0):
    """Render ``pages`` calibration pages and record the decoder activations they produce."""
    from ocr_app.quant.calibration import calibration_batches, collect_activations, render_calibration_pages

    batches = calibration_batches(processor, render_calibration_pages(pages, seed=seed))
    return collect_activations(model, batches)


def quantize_loaded(
    model, processor, preset: Preset, calib_pages: int = DEFAULT_CALIB_PAGES
) -> dict[str, Any]:
    """Quantise an already loaded float model in place (AWQ calibration first when the preset asks)."""
    from ocr_app.quant.apply import quantize_model

    calibration = calibrate(model, processor, calib_pages) if (preset.awq and calib_pages > 0) else None
    recipe = quantize_model(model, preset, calibration)
    del calibration
    return recipe


def _weights_bytes(model_dir: Path) -> int:
    return sum(f.stat().st_size for f in model_dir.glob("*.safetensors"))


def _work_device(model_dir: Path, device: torch.device) -> torch.device:
    """Where to calibrate/quantise: the target GPU when the float model fits with headroom, else CPU."""
    import torch

    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        if free >= GPU_CALIB_HEADROOM * _weights_bytes(model_dir):
            return device
        logger.info("float model does not fit on %s with headroom: quantising on the CPU", device)
    return torch.device("cpu")


def quantize_checkpoint(
    src: str | Path,
    out: str | Path,
    preset_name: str = "mixed",
    calib_pages: int = DEFAULT_CALIB_PAGES,
    device: str | None = None,
) -> Path:
    """``ocr-app quantize``: load the float checkpoint ``src``, quantise, write a loadable directory."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from ocr_app.quant.checkpoint import save_quantized

    preset = get_preset(preset_name)
    if not preset.quantized:
        from ocr_app.exceptions import ConfigError

        raise ConfigError(f"preset {preset_name!r} is not a quantised preset; use int8 or mixed")
    src = Path(src)
    dev = (
        torch.device(device)
        if device
        else _work_device(src, torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    )
    dtype = _float_dtype(preset)
    processor = AutoProcessor.from_pretrained(src)
    model = AutoModelForImageTextToText.from_pretrained(src, dtype=dtype, device_map=str(dev)).eval()
    recipe = quantize_loaded(model, processor, preset, calib_pages)
    return save_quantized(model, recipe, out, src)


class PresetBackend:
    """The ``QuantBackend`` the engine loader calls (see ``engines/deepseek/loading.py``)."""

    def __init__(self, preset_name: str, calib_pages: int = ON_THE_FLY_CALIB_PAGES) -> None:
        self.preset_name = preset_name
        self.calib_pages = calib_pages

    def compute_dtype(self, device: torch.device) -> torch.dtype:
        """bf16 on GPUs with bf16, fp16 on older GPUs, fp32 on the CPU (where bf16 matmuls are slow)."""
        import torch

        if device.type == "cuda":
            return (
                torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
            )
        return torch.float32

    def load_model(self, model_dir: Path, device: torch.device, dtype: torch.dtype):
        """A pre-quantised directory loads directly; a float checkpoint is quantised on the fly."""
        from ocr_app.quant.checkpoint import is_quantized_checkpoint, load_quantized, read_recipe

        if is_quantized_checkpoint(model_dir):
            found = read_recipe(model_dir)["preset"]
            if found != self.preset_name:
                logger.warning("asked for preset %s but %s holds a %s checkpoint: loading it", self.preset_name,
                               model_dir, found)  # fmt: skip
            model, _ = load_quantized(model_dir, device, dtype)
        else:
            model = self.quantize_on_the_fly(model_dir, device, dtype)
        return model

    def quantize_on_the_fly(self, model_dir: Path, device: torch.device, dtype: torch.dtype):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        from ocr_app.quant.apply import guard_fp16

        preset = get_preset(self.preset_name)
        work = _work_device(model_dir, device)
        logger.info("quantising %s on the fly (%s) on %s", model_dir, self.preset_name, work)
        processor = AutoProcessor.from_pretrained(model_dir)
        model = AutoModelForImageTextToText.from_pretrained(
            model_dir, dtype=dtype, device_map=str(work)
        ).eval()
        quantize_loaded(model, processor, preset, self.calib_pages)
        model.to(device)
        if dtype == torch.float16:
            guard_fp16(model)
        if work.type == "cuda":
            torch.cuda.empty_cache()
        return model
