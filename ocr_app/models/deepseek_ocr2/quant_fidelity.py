"""AWQ against round-to-nearest for each of DeepSeek-OCR-2's decoder layer kinds (the test and the
quantisation bench read it): the generic measure (``ocr_app.quant.fidelity``) applied to this model's
modules, which only its wing names."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ocr_app.quant.awq import swiglu_input
from ocr_app.quant.fidelity import awq_vs_rtn, inject_outliers

if TYPE_CHECKING:
    from ocr_app.quant.calibration import Calibration

logger = logging.getLogger(__name__)


def layer_kind_errors(
    model, calibration: Calibration, bits: int = 4, max_rows: int = 2048
) -> dict[str, dict]:
    """AWQ vs RTN for every quantised decoder layer kind (first dense and first sparse layer), on the
    recorded inputs (``calibration.collect_activations`` with ``ADAPTER``) with injected outliers.
    Returns ``{kind: {"rtn": e, "awq": e, "ratio": awq/rtn}}``."""
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
            add(f"{tag}.qkv", acts["attn_in"], [attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
            add(f"{tag}.o_proj", acts["o_in"], [attn.o_proj.weight])
            ffn = layer.mlp.shared_experts if tag == "sparse" else layer.mlp
            name = "shared" if tag == "sparse" else "dense"
            x_ffn = inject_outliers(acts["mlp_in"][:max_rows])
            add(f"{name}.gate_up", acts["mlp_in"], [ffn.gate_proj.weight, ffn.up_proj.weight])
            add(
                f"{name}.down",
                swiglu_input(x_ffn, ffn.gate_proj.weight, ffn.up_proj.weight),
                [ffn.down_proj.weight],
            )
            if tag == "sparse":
                ex = layer.mlp.experts
                e = int(torch.bincount(acts["topk"].reshape(-1).cpu()).argmax())
                xe = acts["mlp_in"][(acts["topk"] == e).any(-1)]
                inter = ex.gate_up_proj.shape[1] // 2
                add("expert.gate_up", xe, [ex.gate_up_proj[e]])
                xd = swiglu_input(
                    inject_outliers(xe[:max_rows]), ex.gate_up_proj[e, :inter], ex.gate_up_proj[e, inter:]
                )
                add("expert.down", xd, [ex.down_proj[e]])
    return out
