"""DeepSeek-OCR-2 precisions and the one resolver that turns a requested ``dtype`` into one of them.

Why one resolver: the engine loads the model in the resolved precision, and every cache (results,
vision features) must key on that same answer — keyed on the *requested* ``auto``, a page computed in
``mixed`` could be served to a process that runs ``bf16``. The resolver is a pure function of plain
facts (device kind, bf16 support, free memory, an optional memory budget), so callers that must not
import torch (the result cache, ``ocr-app info``) can ask it with numbers from NVML, and the engine
asks it with numbers from torch.

``auto`` rule: not CUDA → ``fp32``; on CUDA ``budget.choose_preset`` (thresholds derived from
the memory estimate there: bf16 at ≥ 9.6 GiB, int8 at ≥ 5.8 GiB, else mixed; fp16 instead of bf16 on
GPUs without bf16) applied to the memory available: the free memory, capped by the budget when one is set
(``gpu_memory_gib``).
"""

from __future__ import annotations

import logging

from ocr_app.choices import (
    DTYPE_CHOICES,
    PRECISION_ALIASES,
    PRECISIONS,
    QUANT_PRESETS,
    DtypeSetting,
    Precision,
    canonical_precision,
)

logger = logging.getLogger(__name__)

GIB = 1 << 30

# The vocabulary is ``ocr_app.choices``' (settings read it without importing the wing); named here too
# because the wing is where a precision is added (plus its row in the quantisation presets).
__all__ = [
    "ALIASES",
    "DTYPE_CHOICES",
    "PRECISIONS",
    "QUANT_PRESETS",
    "TORCH_DTYPE_NAMES",
    "DtypeSetting",
    "Precision",
    "auto_preset_name",
    "available_bytes",
    "budget_bytes_from_settings",
    "canonical_precision",
    "precision_reason",
    "resolve_precision",
]
ALIASES = PRECISION_ALIASES
# torch dtype name of each float precision (quantised ones get theirs from the quant backend).
TORCH_DTYPE_NAMES: dict[str, str] = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def available_bytes(free_bytes: int | None, budget_bytes: int | None) -> int | None:
    """Memory the model may plan with: the free memory, capped by the budget (either may be unknown)."""
    known = [b for b in (free_bytes, budget_bytes) if b is not None]
    return min(known) if known else None


def resolve_precision(
    requested: str,
    *,
    device_kind: str,
    bf16_supported: bool = True,
    free_bytes: int | None = None,
    budget_bytes: int | None = None,
) -> str:
    """The precision to run: ``requested`` itself, or for ``auto`` the rule in the module docstring.

    ``device_kind`` is "cuda", "cpu" or "mps"; ``budget_bytes`` is the process's memory budget
    (``models.deepseek_ocr2.budget`` / ``gpu_memory_gib``) or None for "whatever is free".
    """
    name = canonical_precision(requested)
    if name != "auto":
        return name
    if device_kind != "cuda":
        return "fp32"
    from ocr_app.models.deepseek_ocr2.budget import choose_preset

    avail = available_bytes(free_bytes, budget_bytes)
    chosen, _why = choose_preset(avail, "cuda" if bf16_supported else "cuda-no-bf16")
    logger.debug("dtype auto → %s (%s, %s bytes available)", chosen, device_kind, avail)
    return chosen


def auto_preset_name(device: str, free_bytes: int | None = None, bf16_supported: bool = True) -> str:
    """What ``auto`` resolves to on ``device`` ("cpu", "cuda", "cuda:1") with ``free_bytes`` free."""
    kind = "cuda" if device.startswith("cuda") else device.split(":")[0]
    return resolve_precision("auto", device_kind=kind, bf16_supported=bf16_supported, free_bytes=free_bytes)


def budget_bytes_from_settings(settings: object) -> int | None:
    """The memory budget set by the user (``gpu_memory_gib``), in bytes; None when unset."""
    gib = getattr(settings, "gpu_memory_gib", None)
    return None if gib is None else int(float(gib) * GIB)


def precision_reason(requested: str, chosen: str, source: str) -> str:
    """Why ``chosen`` runs, in words for the GPU panel and ``ocr-app info``: "4.0 GiB budget → mixed"."""
    if canonical_precision(requested) != "auto":
        return f"--dtype {chosen}"
    return f"{source} → {chosen}"
