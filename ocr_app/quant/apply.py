"""Apply a precision preset to a loaded float model, in place: AWQ scale folding, module replacement.

The recipe returned (and written as ``quant_recipe.json``) lists every replaced module with its
shape and format, so a pre-quantised checkpoint can be rebuilt with empty modules and loaded directly.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ocr_app.quant.awq import expert_inputs, search_scales, swiglu_input
from ocr_app.quant.formats import group_size_for

if TYPE_CHECKING:
    import torch
    from torch import nn

    from ocr_app.quant.calibration import Calibration, LayerActivations
    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)

RECIPE_FORMAT = "ocr-app-quant"
RECIPE_VERSION = 1
MAX_SEARCH_TOKENS = 4096
FP16_LIMIT = 65000.0


def set_module(root: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, child, new)


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


def _subsample(x: torch.Tensor, n: int = MAX_SEARCH_TOKENS, seed: int = 0) -> torch.Tensor:
    import torch

    if x.shape[0] <= n:
        return x
    g = torch.Generator().manual_seed(seed)
    return x[torch.randperm(x.shape[0], generator=g)[:n].to(x.device)]


def _entry(kind: str, **kw: Any) -> dict[str, Any]:
    return {"kind": kind, **kw}


def quantize_vision(
    model: nn.Module, recipe: dict[str, Any], fmt: str = "int8", prefix: str = "model.vision_tower"
) -> None:
    """Every ``nn.Linear`` of the vision tower (SAM + Qwen2-style encoder) → ``Int8Linear`` (``int8``:
    weight-only by default, see ``ops.int8_linear``) or 8-bit weight-only ``QuantLinear`` (``w8``: one fused Triton GEMM per layer)."""
    from torch import nn

    from ocr_app.quant.modules import Int8Linear, QuantLinear

    root = model.get_submodule(prefix)
    for name, mod in list(root.named_modules()):
        if isinstance(mod, nn.Linear):
            full = f"{prefix}.{name}"
            if fmt == "w8":
                q = QuantLinear.from_float(mod.weight.data, mod.bias, bits=8)
                entry = _entry("wq", in_features=q.in_features, out_features=q.out_features, bits=8,
                               group=q.group, bias=mod.bias is not None, input_scale=False)  # fmt: skip
            else:
                q = Int8Linear.from_float(mod.weight.data, mod.bias)
                entry = _entry("int8", in_features=mod.in_features, out_features=mod.out_features,
                               bias=mod.bias is not None)  # fmt: skip
            set_module(model, full, q)
            recipe["modules"][full] = entry


def _record(stats: dict[str, Any], key: str, r) -> None:
    stats[key] = {"alpha": r.alpha, "err_rtn": r.err_rtn, "err_awq": r.err_awq}


def _quantize_layer(
    model: nn.Module, i: int, bits: int, acts: LayerActivations | None, recipe: dict[str, Any]
) -> dict[str, Any]:
    import torch

    from ocr_app.quant.modules import QuantLinear

    prefix = f"model.language_model.layers.{i}"
    layer = model.get_submodule(prefix)
    attn, mlp = layer.self_attn, layer.mlp
    sparse = hasattr(mlp, "experts")
    stats: dict[str, Any] = {}
    input_scales: dict[str, torch.Tensor] = {}
    hidden = attn.q_proj.in_features

    def lw(mod):
        return mod.weight.data

    with torch.no_grad():
        if acts is not None:
            g = group_size_for(hidden)
            x = _subsample(acts.attn_in)
            r = search_scales(x, [lw(attn.q_proj), lw(attn.k_proj), lw(attn.v_proj)], bits, g)
            _record(stats, "qkv", r)
            s_qkv = r.scales.to(layer.input_layernorm.weight.device)
            xo = _subsample(acts.o_in)
            r_o = search_scales(xo, [lw(attn.o_proj)], bits, group_size_for(attn.o_proj.in_features))
            _record(stats, "o_proj", r_o)
            s_o = r_o.scales
            mlp_x = _subsample(acts.mlp_in)
            ffn = mlp.shared_experts if sparse else mlp
            r_gu = search_scales(mlp_x, [lw(ffn.gate_proj), lw(ffn.up_proj)], bits, g)
            _record(stats, "shared_gate_up" if sparse else "dense_gate_up", r_gu)
            xd = swiglu_input(mlp_x, lw(ffn.gate_proj), lw(ffn.up_proj))
            r_d = search_scales(xd, [lw(ffn.down_proj)], bits, group_size_for(ffn.down_proj.in_features))
            _record(stats, "shared_down" if sparse else "dense_down", r_d)
            # --- fold (exact: powers of two) ---
            layer.input_layernorm.weight.div_(s_qkv.to(layer.input_layernorm.weight.dtype))
            for lin in (attn.q_proj, attn.k_proj, attn.v_proj):
                lin.weight.mul_(s_qkv.to(lin.weight.dtype)[None, :])
            if attn.v_proj.out_features == attn.o_proj.in_features:  # no GQA: v rows feed o columns 1:1
                attn.v_proj.weight.div_(s_o.to(attn.v_proj.weight.dtype)[:, None])
                if attn.v_proj.bias is not None:
                    attn.v_proj.bias.div_(s_o.to(attn.v_proj.bias.dtype))
                attn.o_proj.weight.mul_(s_o.to(attn.o_proj.weight.dtype)[None, :])
            else:
                input_scales["self_attn.o_proj"] = s_o
            s_gu = r_gu.scales
            if sparse:  # the norm also feeds the router and the routed experts: scale in the kernel
                input_scales["mlp.shared_experts.gate_proj"] = s_gu
                input_scales["mlp.shared_experts.up_proj"] = s_gu
            else:
                layer.post_attention_layernorm.weight.div_(
                    s_gu.to(layer.post_attention_layernorm.weight.dtype)
                )
                for lin in (ffn.gate_proj, ffn.up_proj):
                    lin.weight.mul_(s_gu.to(lin.weight.dtype)[None, :])
            ffn.up_proj.weight.div_(r_d.scales.to(ffn.up_proj.weight.dtype)[:, None])
            ffn.down_proj.weight.mul_(r_d.scales.to(ffn.down_proj.weight.dtype)[None, :])

        names = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
        ffn_prefix = "mlp.shared_experts" if sparse else "mlp"
        names += [f"{ffn_prefix}.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
        for rel in names:
            lin = layer.get_submodule(rel)
            s = input_scales.get(rel)
            q = QuantLinear.from_float(lin.weight.data, lin.bias, bits=bits, input_scale=s)
            set_module(layer, rel, q)
            recipe["modules"][f"{prefix}.{rel}"] = _entry(
                "wq", in_features=q.in_features, out_features=q.out_features, bits=bits, group=q.group,
                bias=lin.bias is not None, input_scale=s is not None,
            )  # fmt: skip
        if sparse:
            ex = mlp.experts
            q = quantize_experts(
                ex.gate_up_proj.data,
                ex.down_proj.data,
                bits,
                acts,
                stats,
                layer.input_layernorm.weight.device,
            )
            set_module(layer, "mlp.experts", q)
            recipe["modules"][f"{prefix}.mlp.experts"] = _entry(
                "experts", num_experts=q.num_experts, hidden_dim=q.hidden_dim, intermediate_dim=q.intermediate_dim,
                bits=bits, input_scale=q.input_scale_inv is not None,
            )  # fmt: skip
    return stats


def quantize_experts(
    gate_up: torch.Tensor,
    down: torch.Tensor,
    bits: int,
    acts: LayerActivations | None,
    stats: dict[str, Any],
    device: torch.device | None = None,
    chunk: int | None = None,
) -> nn.Module:
    """Fused experts → ``QuantExperts`` on ``device``, ``chunk`` experts at a time.

    With ``acts``: per-expert AWQ on the tokens routed to each expert (pooled rule below
    ``MIN_EXPERT_TOKENS``), the down-projection scales folded into the gate/up rows (exact: powers of
    two), the gate/up scales kept as the kernel's input scale. Why chunks: the float weights may live on
    the CPU (streaming load) and only a few experts' float32 temporaries then exist on the GPU at once.
    """
    import torch

    from ocr_app.quant.modules import EXPERT_CHUNK, QuantExperts

    e_count, two_i, hidden = gate_up.shape
    inter = two_i // 2
    device = device if device is not None else gate_up.device
    chunk = chunk or EXPERT_CHUNK
    q = QuantExperts(e_count, hidden, inter, bits, acts is not None, gate_up.dtype, device)
    g_gu, g_dn = group_size_for(hidden), group_size_for(inter)
    pooled = 0
    err = {"gate_up_rtn": 0.0, "gate_up_awq": 0.0, "down_rtn": 0.0, "down_awq": 0.0}
    alphas = []
    for start in range(0, e_count, chunk):
        end = min(e_count, start + chunk)
        gu, dn = gate_up[start:end].to(device), down[start:end].to(device)
        s_gu = None
        if acts is not None:
            s_gu = torch.ones(end - start, hidden, device=device)
            s_dn = torch.ones(end - start, inter, device=device)
            for j in range(end - start):
                e = start + j
                xe, was_pooled = expert_inputs(acts.mlp_in, acts.topk, e, seed=e)
                pooled += int(was_pooled)
                r = search_scales(xe, [gu[j]], bits, g_gu)
                s_gu[j] = r.scales
                xd = swiglu_input(xe, gu[j, :inter], gu[j, inter:])
                r_d = search_scales(xd, [dn[j]], bits, g_dn)
                s_dn[j] = r_d.scales
                err["gate_up_rtn"] += r.err_rtn
                err["gate_up_awq"] += r.err_awq
                err["down_rtn"] += r_d.err_rtn
                err["down_awq"] += r_d.err_awq
                alphas.append(r.alpha)
            gu[:, inter:, :].div_(s_dn.to(gu.dtype)[:, :, None])
            dn.mul_(s_dn.to(dn.dtype)[:, None, :])
        q.fill(start, gu, dn, s_gu)
        del gu, dn
    if acts is not None:
        stats["experts"] = {
            "pooled_experts": pooled,
            "mean_alpha_gate_up": sum(alphas) / len(alphas),
            **{k: v / e_count for k, v in err.items()},
        }
    return q


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
    if preset.vision is not None:
        quantize_vision(model, recipe, preset.vision)
    if preset.decoder_bits:
        layers = model.model.language_model.layers
        for i in range(len(layers)):
            acts = calibration.layers[i] if (preset.awq and calibration is not None) else None
            recipe["layer_stats"][str(i)] = _quantize_layer(model, i, preset.decoder_bits, acts, recipe)
            logger.info("quantised decoder layer %d/%d", i + 1, len(layers))
    return recipe
