"""transformers' empty DeepSeek-OCR-2 filled from a ``weights.WeightPrefetch`` (the ``transformers``
loader's opt-in ``weight_prefetch`` path).

:func:`assemble` turns the file's tensors into the model's state dict with transformers' own conversion
table (hub names → module names, per-expert tensors → fused experts), on the device, and
:func:`load_prefetched` assigns it to a skeleton built without weight initialisation. The result
matches ``from_pretrained`` (names, dtypes — the router stays float32 — and values; tested). Kept apart
from the reader so that the native loader's imports never reach transformers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError

if TYPE_CHECKING:
    import torch

    from ocr_app.models.deepseek_ocr2.weights import WeightPrefetch


def _fp32_names(model: Any, dtype: torch.dtype) -> re.Pattern | None:
    """Parameters transformers keeps in float32 at this dtype (the MoE router: ``gate.weight``)."""
    plan_fn = getattr(model, "_get_dtype_plan", None)
    plan = plan_fn(dtype) if callable(plan_fn) else {}
    keep = [k for k in plan if str(plan[k]).endswith("float32")]
    return re.compile("|".join(re.escape(k) for k in keep)) if keep else None


def assemble(model: Any, tensors: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The model's state dict from the checkpoint's tensors: names through transformers' conversion
    table (renamings, per-expert tensors merged by its converters, on the tensors' device), floating
    tensors cast to ``dtype`` except those transformers keeps in float32."""
    from ocr_app.quant.conversion import plan_targets

    keep32 = _fp32_names(model, dtype)
    state: dict[str, torch.Tensor] = {}
    for name, target in plan_targets(model, list(tensors)).items():
        x = target.build(tensors)
        if x.is_floating_point():
            want = dtype
            if keep32 is not None and keep32.search(name):
                import torch

                want = torch.float32
            x = x.to(want)
        state[name] = x
    return state


def load_prefetched(config: Any, prefetch: WeightPrefetch, dtype: torch.dtype, device: Any) -> Any:
    """``DeepseekOcr2ForConditionalGeneration`` on ``device`` from a finished (or running) prefetch.

    The skeleton is built while the read may still run; tied weights are tied after the assignment."""
    from ocr_app.quant.conversion import empty_model

    config.dtype = dtype
    model = empty_model(config)
    state = assemble(model, prefetch.result(), dtype)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if unexpected:
        raise ModelLoadError(f"the checkpoint has tensors the model does not: {sorted(unexpected)[:5]}")
    tied = set(getattr(model, "_tied_weights_keys", None) or {})
    if missing:
        model.tie_weights()
        still = [k for k in missing if k not in tied or getattr(model.get_parameter(k), "is_meta", False)]
        if still:
            raise ModelLoadError(f"the checkpoint lacks tensors of the model: {sorted(still)[:5]}")
    model.to(device)  # non-persistent buffers (rotary tables) were built on the CPU
    return model


__all__ = ["assemble", "load_prefetched"]
