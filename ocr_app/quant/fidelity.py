"""Fidelity checks of a quantised model: AWQ against round-to-nearest on activations with injected
outlier channels (a model's wing runs it per layer kind), and logit agreement with the float model.

Why held-out rows: AWQ's grid contains α = 0 (= RTN), so on its own calibration rows it can never lose;
the scales are searched on half of the rows and both methods are scored on the other half.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ocr_app.quant.awq import output_error, search_scales
from ocr_app.quant.formats import group_size_for

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def inject_outliers(
    x: torch.Tensor, n_channels: int = 8, factor: float = 30.0, seed: int = 0
) -> torch.Tensor:
    """Copy of ``x`` [T, K] (float32) with ``n_channels`` fixed channels multiplied by ``factor``, the
    pattern LLM activations show (a few channels 10-100× larger than the rest)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    ch = torch.randperm(x.shape[-1], generator=g)[:n_channels].to(x.device)
    out = x.float().clone()
    out[:, ch] *= factor
    return out


def awq_vs_rtn(x: torch.Tensor, weights: list[torch.Tensor], bits: int = 4) -> tuple[float, float]:
    """(RTN error, AWQ error): output MSE on held-out rows (odd) after searching on the even rows."""
    import torch

    w = torch.cat([t.float() for t in weights], 0)
    group = group_size_for(w.shape[1])
    x_cal, x_eval = x[0::2], x[1::2]
    r = search_scales(x_cal, [w], bits, group)
    ones = torch.ones(w.shape[1], device=w.device)
    return output_error(x_eval, w, ones, bits, group), output_error(x_eval, w, r.scales, bits, group)


def logit_agreement(ref: torch.Tensor, test: torch.Tensor) -> dict[str, float]:
    """Mean per-position cosine similarity and top-1 agreement of two logit tensors [..., V]."""
    import torch

    a = ref.float().reshape(-1, ref.shape[-1])
    b = test.float().reshape(-1, test.shape[-1])
    cos = torch.nn.functional.cosine_similarity(a, b, dim=-1)
    top1 = (a.argmax(-1) == b.argmax(-1)).float()
    return {
        "cosine_mean": cos.mean().item(),
        "cosine_min": cos.min().item(),
        "top1_agreement": top1.mean().item(),
    }
