"""Precision presets: what each quantised precision does to each part of a model.

| preset | vision linears | decoder linears + routed experts | the rest |
|---|---|---|---|
| ``bf16`` / ``fp16`` / ``fp32`` | float | float | float |
| ``int8`` | INT8 per-channel weights (W8A16) | 8-bit weights, group 128, RTN | float |
| ``mixed`` | INT8 per-channel weights (W8A16) | 4-bit weights, group 128, AWQ | float |

"The rest" = every tensor under no unit of the model's adapter (embeddings, output head, projector,
router, norms): they decide tokens and box coordinates and are about 10 % of an OCR model's weights, so
they stay in the float dtype (bf16, or fp16 on GPUs without bf16).

A preset says the formats; how each of a model's layer kinds (for an OCR model: vision, attention,
dense MLP, shared experts, routed experts) applies them is that kind's recipe, registered by the model's
wing in ``recipes.py``'s registry.

``auto`` is resolved by the model wing's precision resolver (it needs the model's memory estimate, so
this package does not call it); the names and aliases are ``ocr_app.choices``'.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ocr_app.choices import PRECISION_ALIASES as ALIASES
from ocr_app.choices import canonical_precision
from ocr_app.exceptions import ConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Preset:
    """What a preset does: the float dtype name, and the quantised formats (None = float)."""

    name: str
    float_dtype: str  # "bfloat16" | "float16" | "float32"
    vision: str | None = None  # "int8" (Int8Linear, per-channel) or "w8" (8-bit group-quantised QuantLinear)
    decoder_bits: int | None = None  # 4 or 8 (weight-only, grouped)
    awq: bool = False
    fp16_guard: bool = False

    @property
    def quantized(self) -> bool:
        return self.vision is not None or self.decoder_bits is not None


PRESETS: dict[str, Preset] = {
    "bf16": Preset("bf16", "bfloat16"),
    "fp16": Preset("fp16", "float16", fp16_guard=True),
    "fp32": Preset("fp32", "float32"),
    "int8": Preset("int8", "bfloat16", vision="int8", decoder_bits=8),
    "mixed": Preset("mixed", "bfloat16", vision="int8", decoder_bits=4, awq=True),
}
__all__ = ["ALIASES", "PRESETS", "Preset", "get_preset"]


def get_preset(name: str, bf16_supported: bool = True) -> Preset:
    """The preset called ``name`` (not ``auto``). Quantised presets on a GPU without bf16 keep fp16."""
    try:
        key = canonical_precision(name)
    except ConfigError:
        key = ""
    if key not in PRESETS:
        raise ConfigError(f"unknown dtype preset {name!r}; choose one of auto, {', '.join(PRESETS)}")
    preset = PRESETS[key]
    if preset.quantized and not bf16_supported:
        preset = Preset(
            preset.name, "float16", preset.vision, preset.decoder_bits, preset.awq, fp16_guard=True
        )
    return preset
