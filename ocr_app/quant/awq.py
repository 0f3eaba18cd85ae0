"""AWQ activation-aware scale search (compact implementation; see the library evaluation in the report).

For a group of weights W that read the same input X, AWQ picks per-input-channel scales
``s = mean|X|^α`` (normalised, α on a grid) minimising ``‖X Q(W·diag(s))ᵀ diag(s)⁻¹ … − X Wᵀ‖²``:
salient channels (large activations) get larger weight magnitudes before rounding, so they lose less.
α = 0 is plain round-to-nearest (RTN), so the chosen scales are never worse than RTN on the calibration
activations.

Our choices: scales are rounded to powers of two, which makes folding them into a bf16 RMSNorm weight,
into the previous linear's rows or into the kernel's input multiply exact in bf16/fp16. Experts that
receive fewer than ``MIN_EXPERT_TOKENS`` calibration tokens use the layer's pooled MoE input (all tokens
that reached the layer) for both the statistics and the error, instead of a noisy handful of rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ocr_app.quant.formats import fake_quantize

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

ALPHA_GRID: tuple[float, ...] = tuple(i / 20 for i in range(20))
MIN_EXPERT_TOKENS = 16
POOLED_SAMPLE = 512


@dataclass(frozen=True)
class ScaleResult:
    """Chosen scales [K] (powers of two), α, and the output MSE of RTN (α=0) and of the choice."""

    scales: torch.Tensor
    alpha: float
    err_rtn: float
    err_awq: float


def scales_from_stats(x_mean: torch.Tensor, alpha: float) -> torch.Tensor:
    """``s = mean|x|^α``, normalised by sqrt(max·min), rounded to powers of two."""
    import torch

    if alpha == 0:
        return torch.ones_like(x_mean)
    s = x_mean.float().clamp(min=1e-4).pow(alpha)
    s = s / (s.max() * s.min()).sqrt()
    return torch.exp2(torch.round(torch.log2(s)))


def output_error(x: torch.Tensor, w: torch.Tensor, s: torch.Tensor, bits: int, group: int, ref=None) -> float:
    """MSE between ``x Wᵀ`` and the quantised layer with scales ``s`` on the same input (float32)."""
    xf = x.float()
    w = w.float()
    if ref is None:
        ref = xf @ w.t()
    wq = fake_quantize(w * s[None, :], bits, group) / s[None, :]
    return (xf @ wq.t() - ref).pow(2).mean().item()


def search_scales(
    x: torch.Tensor,
    weights: list[torch.Tensor],
    bits: int,
    group: int,
    grid: tuple[float, ...] = ALPHA_GRID,
    x_stats: torch.Tensor | None = None,
) -> ScaleResult:
    """Grid search of α for the weights ``[N_i, K]`` that share input ``x`` [T, K].

    ``x_stats`` overrides the per-channel mean |x| (used for pooled expert statistics).
    """
    import torch

    xf = x.float()
    w = torch.cat([t.float() for t in weights], 0)
    ref = xf @ w.t()
    x_mean = x_stats.float() if x_stats is not None else xf.abs().mean(0)
    best: tuple[float, float, torch.Tensor] | None = None
    err_rtn = float("nan")
    for alpha in grid:
        s = scales_from_stats(x_mean, alpha)
        err = output_error(xf, w, s, bits, group, ref)
        if alpha == 0:
            err_rtn = err
        if best is None or err < best[0]:
            best = (err, alpha, s)
    assert best is not None
    return ScaleResult(scales=best[2], alpha=best[1], err_rtn=err_rtn, err_awq=best[0])


def expert_inputs(
    x: torch.Tensor, top_k_index: torch.Tensor, expert: int, seed: int = 0
) -> tuple[torch.Tensor, bool]:
    """Calibration rows for one expert: the tokens routed to it, or — when fewer than
    ``MIN_EXPERT_TOKENS`` — a fixed sample of the layer's pooled input. Returns (rows, pooled)."""
    import torch

    rows = (top_k_index == expert).any(-1)
    if int(rows.sum()) >= MIN_EXPERT_TOKENS:
        return x[rows], False
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(x.shape[0], generator=g)[:POOLED_SAMPLE].to(x.device)
    return x[pick], True


def swiglu_input(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """The down projection's input ``silu(x Wgᵀ) · (x Wuᵀ)`` recomputed in float32 from float weights
    (cheaper than recording it for every expert)."""
    import torch

    xf = x.float()
    return torch.nn.functional.silu(xf @ gate.float().t()) * (xf @ up.float().t())
