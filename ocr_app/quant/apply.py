"""Apply a precision preset to a loaded float model, in place: each layer kind by its recipe
(``recipes.py``: AWQ scale folding, module replacement), plus the fp16 overflow guard.

The recipe returned (and written as ``quant_recipe.json``) lists every replaced module with its
shape and format, so a pre-quantised checkpoint can be rebuilt with empty modules and loaded directly.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ocr_app.quant.recipes import (
    LAYER_KINDS,
    quantize_decoder_layer,
    quantize_experts,
    quantize_vision,
    quantize_vision_part,
    set_module,
)

if TYPE_CHECKING:
    from torch import nn

    from ocr_app.quant.calibration import Calibration
    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)

RECIPE_FORMAT = "ocr-app-quant"
RECIPE_VERSION = 1
FP16_LIMIT = 65000.0


def guard_fp16(model: nn.Module) -> list[Any]:
    """fp16 overflow guard: clamp every vision/decoder layer output to ±65000 (inf becomes finite).

    Why: some activations of bf16-trained models exceed fp16's 65504 on GPUs without bf16; clamping in
    place costs one elementwise op per layer, needs no host sync, and keeps CUDA graphs capturable.
    """
    import torch

    def clamp(_mod, _args, out):
        t = out[0] if isinstance(out, tuple) else out
        if torch.is_tensor(t) and t.dtype == torch.float16:
            t.clamp_(-FP16_LIMIT, FP16_LIMIT)
        return out

    handles = []
    for mod in model.modules():
        cls = type(mod).__name__
        if cls.endswith(("DecoderLayer", "EncoderLayer", "SamVisionLayer")):
            handles.append(mod.register_forward_hook(clamp))
    logger.info("fp16 guard on %d layers", len(handles))
    return handles


def quantize_model(
    model: nn.Module, preset: Preset, calibration: Calibration | None = None
) -> dict[str, Any]:
    """Quantise ``model`` in place per ``preset``; AWQ when the preset asks and ``calibration`` is given.

    Returns the recipe (JSON-serialisable).
    """
    if preset.awq and calibration is None:
        logger.warning(
            "preset %s asks for AWQ but no calibration was given: plain round-to-nearest", preset.name
        )
    recipe: dict[str, Any] = {
        "format": RECIPE_FORMAT,
        "version": RECIPE_VERSION,
        "preset": preset.name,
        "float_dtype": preset.float_dtype,
        "awq": bool(preset.awq and calibration is not None),
        "calibration": {"pages": calibration.pages, "tokens": calibration.tokens} if calibration else None,
        "modules": {},
        "layer_stats": {},
    }
    quantize_vision_part(model, "model.vision_tower", preset, recipe)
    layers = model.model.language_model.layers
    for i in range(len(layers)):
        acts = calibration.layers[i] if (preset.awq and calibration is not None) else None
        stats = quantize_decoder_layer(model, i, preset, acts, recipe)
        if stats or preset.decoder_bits:
            recipe["layer_stats"][str(i)] = stats
        logger.info("quantised decoder layer %d/%d", i + 1, len(layers))
    return recipe


__all__ = [
    "FP16_LIMIT",
    "LAYER_KINDS",
    "RECIPE_FORMAT",
    "RECIPE_VERSION",
    "guard_fp16",
    "quantize_experts",
    "quantize_model",
    "quantize_vision",
    "set_module",
]
