"""Fidelity checks of the quantised model: AWQ against round-to-nearest per layer kind, on activations
with injected outlier channels, and logit agreement with the float model.

Why held-out rows: AWQ's grid contains α = 0 (= RTN), so on its own calibration rows it can never lose;
the scales are searched on half of the rows and both methods are scored on the other half.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ocr_app.quant.awq import output_error, search_scales, swiglu_input
from ocr_app.quant.formats import group_size_for

if TYPE_CHECKING:
    import torch

    from ocr_app.quant.calibration import Calibration

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


def layer_kind_errors(
    model, calibration: Calibration, bits: int = 4, max_rows: int = 2048
) -> dict[str, dict]:
    """AWQ vs RTN for every quantised decoder layer kind (first dense and first sparse layer), on the
    recorded inputs with injected outliers. Returns ``{kind: {"rtn": e, "awq": e, "ratio": awq/rtn}}``."""
    import torch

    layers = model.model.language_model.layers
    dense_i = next(i for i, ly in enumerate(layers) if not hasattr(ly.mlp, "experts"))
    sparse_i = next(i for i, ly in enumerate(layers) if hasattr(ly.mlp, "experts"))
    out: dict[str, dict] = {}

    def add(kind, x, weights):
        x = inject_outliers(x[:max_rows])
        rtn, awq = awq_vs_rtn(x, weights, bits)
        out[kind] = {"rtn": rtn, "awq": awq, "ratio": awq / rtn if rtn > 0 else float("nan")}

    with torch.no_grad():
        for i, tag in ((dense_i, "dense"), (sparse_i, "sparse")):
            layer, acts = layers[i], calibration.layers[i]
            attn = layer.self_attn
            add(f"{tag}.qkv", acts.attn_in, [attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
            add(f"{tag}.o_proj", acts.o_in, [attn.o_proj.weight])
            ffn = layer.mlp.shared_experts if tag == "sparse" else layer.mlp
            name = "shared" if tag == "sparse" else "dense"
            x_ffn = inject_outliers(acts.mlp_in[:max_rows])
            add(f"{name}.gate_up", acts.mlp_in, [ffn.gate_proj.weight, ffn.up_proj.weight])
            add(
                f"{name}.down",
                swiglu_input(x_ffn, ffn.gate_proj.weight, ffn.up_proj.weight),
                [ffn.down_proj.weight],
            )
            if tag == "sparse":
                ex = layer.mlp.experts
                e = int(torch.bincount(acts.topk.reshape(-1).cpu()).argmax())
                xe = acts.mlp_in[(acts.topk == e).any(-1)]
                inter = ex.gate_up_proj.shape[1] // 2
                add("expert.gate_up", xe, [ex.gate_up_proj[e]])
                xd = swiglu_input(
                    inject_outliers(xe[:max_rows]), ex.gate_up_proj[e, :inter], ex.gate_up_proj[e, inter:]
                )
                add("expert.down", xd, [ex.down_proj[e]])
    return out


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
