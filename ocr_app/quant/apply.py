"""Apply a precision preset to a loaded float model, in place: each unit the model's adapter lists, by its
layer kinds' recipes (``recipes.py``: AWQ scale folding, module replacement), plus the fp16 overflow guard.

The recipe returned (and written as ``quant_recipe.json``) lists every replaced module with its
shape and format, so a pre-quantised checkpoint can be rebuilt with empty modules and loaded directly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ocr_app.quant.recipes import quantize_unit, set_module

if TYPE_CHECKING:
    from torch import nn

    from ocr_app.quant.adapter import QuantAdapter
    from ocr_app.quant.calibration import Calibration
    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)

RECIPE_FORMAT = "ocr-app-quant"
RECIPE_VERSION = 1
FP16_LIMIT = 65000.0


def new_recipe(preset: Preset, units: Iterable[str], **fields: Any) -> dict[str, Any]:
    """The recipe both load paths fill in: format, preset, the units (prefixes), the replaced modules
    (``"modules"``) and each chained unit's AWQ statistics (``"layer_stats"``)."""
    return {
        "format": RECIPE_FORMAT,
        "version": RECIPE_VERSION,
        "preset": preset.name,
        "float_dtype": preset.float_dtype,
        "awq": False,
        "calibration": None,
        **fields,
        "units": list(units),
        "modules": {},
        "layer_stats": {},
    }


def guard_fp16(model: nn.Module, prefixes: Iterable[str]) -> list[Any]:
    """fp16 overflow guard: clamp the output of every unit under ``prefixes`` (the vision blocks and
    decoder layers) to ±65000 (inf becomes finite).

    Why: some activations of bf16-trained models exceed fp16's 65504 on GPUs without bf16; clamping in
    place costs one elementwise op per layer, needs no host sync, and keeps CUDA graphs capturable.
    """
    import torch

    def clamp(_mod, _args, out):
        t = out[0] if isinstance(out, tuple) else out
        if torch.is_tensor(t) and t.dtype == torch.float16:
            t.clamp_(-FP16_LIMIT, FP16_LIMIT)
        return out

    handles = [model.get_submodule(p).register_forward_hook(clamp) for p in prefixes]
    logger.info("fp16 guard on %d layers", len(handles))
    return handles


def quantize_model(
    model: nn.Module, preset: Preset, calibration: Calibration | None = None, *, adapter: QuantAdapter
) -> dict[str, Any]:
    """Quantise ``model`` in place per ``preset``, unit by unit as ``adapter`` lists them; AWQ when the
    preset asks and ``calibration`` (``calibration.collect_activations``) is given.

    Returns the recipe (JSON-serialisable).
    """
    if preset.awq and calibration is None:
        logger.warning(
            "preset %s asks for AWQ but no calibration was given: plain round-to-nearest", preset.name
        )
    units = adapter.units(model)
    awq = bool(preset.awq and calibration is not None)
    cal = {"pages": calibration.pages, "tokens": calibration.tokens} if calibration else None
    recipe = new_recipe(preset, [u.prefix for u in units], awq=awq, calibration=cal)
    chained = [u for u in units if u.chained]
    for unit in units:
        if not unit.chained:
            quantize_unit(model, unit, preset, recipe)
            continue
        i = chained.index(unit)
        acts = calibration.layers[i] if awq else None
        stats = quantize_unit(model, unit, preset, recipe, acts)
        if stats or preset.decoder_bits:
            recipe["layer_stats"][str(i)] = stats
        logger.info("quantised %s (%d/%d)", unit.prefix, i + 1, len(chained))
    return recipe


__all__ = [
    "FP16_LIMIT",
    "RECIPE_FORMAT",
    "RECIPE_VERSION",
    "guard_fp16",
    "new_recipe",
    "quantize_model",
    "set_module",
]
