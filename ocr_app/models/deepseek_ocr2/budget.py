"""The GPU memory budget of this process, and the ``auto`` precision rule that reads it.

Why one place: the precision preset, the pages kept in flight and the OOM ladder all plan within the same
number, and the process caps itself to it, so a user's ``--gpu-memory 4`` means the same to every part.
The budget is ``settings.gpu_memory_gib`` when set (never more than the device's free memory), else the
device's free memory; on the CPU there is none.

``auto`` rule (:func:`choose_preset`): the most precise preset whose need fits the budget, where

    need(preset) = weights(preset) + one default page's transient peak (``estimate.estimate_page_bytes``:
    full config, 1121 vision tokens, sliced SAM attention at 256 MiB), times ``HEADROOM`` = 1.35

and the headroom pays for a second page in flight, the graph decoder's buffers and allocator
fragmentation. Weights come from the parameter counts of the full model (GUIDE §1): experts 2.422 B,
vision 0.453 B, other decoder 0.182 B (quantised by ``int8``/``mixed``), embeddings + lm_head 0.331 B
(always float). That gives bf16 ≈ 9.6 GiB, int8 ≈ 5.8 GiB, mixed ≈ 4.2 GiB: so ≥ 10 GiB → bf16,
≈ 6 GiB → int8, below that (≈ 4 GiB) → mixed, the smallest there is (its one-page need is 3.1 GiB).
GPUs without bf16 choose fp16 at the bf16 threshold, else mixed (fp16 activations).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

GIB = 1 << 30
HEADROOM = 1.35
DEFAULT_PAGE_VISION_TOKENS = 1121  # default mode, a full A4 page: global view + 6 tiles
DEFAULT_PAGE_PROMPT_TOKENS = 12
DEFAULT_PAGE_NEW_TOKENS = 2048
SAM_SLICE_BYTES = 256 << 20  # settings.vision_attn_mb default
# Parameters of the full model (GUIDE §1, counted on the full config).
QUANTISED_DECODER_PARAMS = 2.422e9 + 0.182e9  # routed experts + attention, dense layer, shared experts
VISION_PARAMS = 0.453e9
FLOAT_PARAMS = 0.331e9 + 1.1e6  # embeddings + lm_head + projector
GROUP = 128  # group size of the 4/8-bit decoder formats: one bf16 scale and one bf16 min per group


@dataclass(frozen=True)
class Budget:
    """GPU bytes this process may use (None: no GPU budget, e.g. on the CPU) and where that came from,
    in words for the GPU panel ("4.0 GiB budget", "free memory 79.1 GiB")."""

    bytes: int | None
    source: str


def weight_bytes(preset: str) -> int:
    """Weight bytes of the full model in ``preset`` (bf16/fp16/fp32, int8, mixed)."""
    float_b = {"fp32": 4}.get(preset, 2)
    if preset in ("bf16", "fp16", "fp32"):
        return int((QUANTISED_DECODER_PARAMS + VISION_PARAMS + FLOAT_PARAMS) * float_b)
    bits = {"int8": 8, "mixed": 4}[preset]
    decoder = QUANTISED_DECODER_PARAMS * (bits / 8 + 2 * 2 / GROUP)
    vision = VISION_PARAMS * 1.0  # INT8 per-channel weights (scales are negligible)
    return int(decoder + vision + FLOAT_PARAMS * 2)


@lru_cache(maxsize=1)
def _page_bytes() -> int:
    from ocr_app.models.deepseek_ocr2.configs import config_dict
    from ocr_app.models.deepseek_ocr2.estimate import estimate_page_bytes

    est = estimate_page_bytes(config_dict("full"), DEFAULT_PAGE_VISION_TOKENS, DEFAULT_PAGE_PROMPT_TOKENS,
                              DEFAULT_PAGE_NEW_TOKENS, "bf16", attn_slice_bytes=SAM_SLICE_BYTES)  # fmt: skip
    return est.total_bytes


def need_bytes(preset: str) -> int:
    """Budget ``preset`` needs under the auto rule (weights + one page, times ``HEADROOM``)."""
    return int((weight_bytes(preset) + _page_bytes()) * HEADROOM)


def choose_preset(budget_bytes: int | None, device_kind: str) -> tuple[str, str]:
    """The ``auto`` preset for ``budget_bytes`` on ``device_kind`` ("cpu", "cuda", or "cuda-no-bf16"
    for GPUs without bf16), and why, e.g. ``("mixed", "4.0 GiB < 5.8 GiB that int8 needs")``."""
    if device_kind == "cpu" or not device_kind.startswith("cuda"):
        return "fp32", "CPU: fp32 (bf16 matmuls are slow there)"
    if budget_bytes is None:
        return "mixed", "GPU budget unknown: the smallest preset"
    have = budget_bytes / GIB
    top = "fp16" if device_kind == "cuda-no-bf16" else "bf16"
    ladder = [top] if device_kind == "cuda-no-bf16" else ["bf16", "int8"]
    for name in ladder:
        need = need_bytes("bf16" if name == "fp16" else name)
        if budget_bytes >= need:
            return name, f"{have:.1f} GiB ≥ {need / GIB:.1f} GiB that {name} needs"
    last = ladder[-1]
    need = need_bytes("bf16" if last == "fp16" else last)
    return "mixed", f"{have:.1f} GiB < {need / GIB:.1f} GiB that {last} needs"


def _device(device: Any):
    import torch

    return device if isinstance(device, torch.device) else torch.device(str(device))


def resolve_budget(settings: Settings, device: Any) -> Budget:
    """The budget on ``device``: ``settings.gpu_memory_gib`` (capped at the free memory), else the free
    memory; ``Budget(None, …)`` on the CPU."""
    if not str(device).startswith("cuda"):
        return Budget(None, "CPU: no GPU budget")
    import torch

    dev = _device(device)
    free, _total = torch.cuda.mem_get_info(dev)
    gib = getattr(settings, "gpu_memory_gib", None)
    if gib is None:
        return Budget(int(free), f"free memory {free / GIB:.1f} GiB")
    want = int(gib * GIB)
    if free < want:
        return Budget(int(free), f"free memory {free / GIB:.1f} GiB (below the {gib:.1f} GiB budget)")
    return Budget(want, f"{gib:.1f} GiB budget")


def apply_cap(budget: Budget, device: Any) -> None:
    """Cap this process's CUDA allocations at ``budget.bytes`` on ``device``
    (``torch.cuda.set_per_process_memory_fraction``); nothing on the CPU or without a budget."""
    if budget.bytes is None or not str(device).startswith("cuda"):
        return
    import torch

    dev = _device(device)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    total = torch.cuda.get_device_properties(index).total_memory
    fraction = min(1.0, budget.bytes / total)
    torch.cuda.set_per_process_memory_fraction(fraction, index)
    logger.info("GPU %d capped at %.2f GiB (%s, fraction %.4f)", index, budget.bytes / GIB, budget.source,
                fraction)  # fmt: skip
