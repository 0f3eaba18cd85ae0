"""How each layer kind is quantised: one recipe per kind, in one registry both load paths use.

Why a registry: "keep attention at 8 bits", "leave the vision tower in bf16" or "try 3-bit routed
experts" is a change to one recipe — here, or ``register_recipe`` from a plug-in or a test — and the
load-then-quantise path (``apply.quantize_model``), the streaming load (``stream.stream_quantize``), the
pre-quantised checkpoint (it is rebuilt from the recipe's module entries) and the quantised-weights
cache key (``recipe_signature``) all follow.

The kinds (``LAYER_KINDS``) and what the built-in recipes do with a preset (``presets.py``):

| kind | modules | built-in recipe |
|---|---|---|
| ``vision`` | every ``nn.Linear`` of the vision tower | ``preset.vision``: ``int8`` (Int8Linear) or ``w8`` |
| ``attention`` | q/k/v/o projections of a decoder layer | ``preset.decoder_bits``, group 128, AWQ on q/k/v (scale folded into ``input_layernorm``) and o (into ``v_proj``) |
| ``dense_mlp`` | gate/up/down of the dense layer (layer 0) | ``preset.decoder_bits``, AWQ folded into ``post_attention_layernorm`` and ``up_proj`` |
| ``shared_experts`` | gate/up/down of the shared experts | as ``dense_mlp``, but the gate/up scale is the kernel's input scale (the norm also feeds the router) |
| ``routed_experts`` | the 64 fused routed experts | ``preset.decoder_bits``, per-expert AWQ (``quantize_experts``) |

A recipe is a function of one ``LayerJob``: it replaces modules under ``job.prefix`` and records each in
``job.recipe["modules"]`` (formats: ``int8``, ``wq``, ``experts`` — see ``checkpoint.py``); AWQ
statistics go to ``job.stats``. A recipe that leaves its modules alone keeps them in the float dtype.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from ocr_app.exceptions import ConfigError
from ocr_app.quant.awq import expert_inputs, search_scales, swiglu_input
from ocr_app.quant.formats import group_size_for

if TYPE_CHECKING:
    import torch
    from torch import nn

    from ocr_app.quant.calibration import LayerActivations
    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)

LayerKind = Literal["vision", "attention", "dense_mlp", "shared_experts", "routed_experts"]
LAYER_KINDS: tuple[str, ...] = get_args(LayerKind)
DECODER = "model.language_model.layers"


@dataclass
class LayerJob:
    """One unit to quantise: a decoder layer (``prefix`` = its module path) or a part of the vision tower."""

    model: nn.Module
    prefix: str
    preset: Preset
    recipe: dict[str, Any]  # the recipe being built ("modules": name → entry)
    acts: LayerActivations | None = None  # AWQ calibration inputs of this decoder layer, or None (RTN)
    stats: dict[str, Any] = field(default_factory=dict)  # AWQ statistics of this layer

    @property
    def module(self) -> nn.Module:
        return self.model.get_submodule(self.prefix)


@dataclass(frozen=True)
class LayerRecipe:
    """A kind's recipe; ``version`` enters the quantised-weights cache key (bump it when the output
    of the function changes)."""

    kind: str
    apply: Callable[[LayerJob], None]
    version: str = "1"

    @property
    def signature(self) -> str:
        return f"{self.apply.__module__}.{self.apply.__qualname__}@{self.version}"


_RECIPES: dict[str, LayerRecipe] = {}


def register_recipe(kind: str, apply: Callable[[LayerJob], None], version: str = "1") -> LayerRecipe:
    """Make ``apply`` the recipe of ``kind`` (replacing the one before) and return it. A plug-in or a
    test calls this; ``restore_builtin`` puts the built-in back."""
    if kind not in LAYER_KINDS:
        raise ConfigError(f"Unknown layer kind {kind!r}; the kinds are {', '.join(LAYER_KINDS)}.")
    recipe = LayerRecipe(kind, apply, version)
    _RECIPES[kind] = recipe
    return recipe


def recipe_for(kind: str) -> LayerRecipe:
    return _RECIPES[kind]


def recipe_signature() -> dict[str, str]:
    """Which function (and version) quantises each kind: part of the quantised-weights cache key, so a
    changed recipe never reads weights quantised by another."""
    return {kind: _RECIPES[kind].signature for kind in LAYER_KINDS}


def quantize_vision_part(model: nn.Module, prefix: str, preset: Preset, recipe: dict[str, Any]) -> None:
    """Run the ``vision`` recipe on the vision-tower modules under ``prefix``."""
    _RECIPES["vision"].apply(LayerJob(model, prefix, preset, recipe))


def quantize_decoder_layer(
    model: nn.Module, i: int, preset: Preset, acts: LayerActivations | None, recipe: dict[str, Any]
) -> dict[str, Any]:
    """Run every kind's recipe on decoder layer ``i`` (attention, then its MLP kinds); return its AWQ
    statistics. The order is fixed: each AWQ search reads the calibration inputs, not the other kinds'
    results, and each fold touches only its own kind's norms and weights."""
    job = LayerJob(model, f"{DECODER}.{i}", preset, recipe, acts)
    sparse = hasattr(job.module.mlp, "experts")
    kinds = ("attention", "shared_experts", "routed_experts") if sparse else ("attention", "dense_mlp")
    for kind in kinds:
        _RECIPES[kind].apply(job)
    return job.stats


# --- primitives -------------------------------------------------------------------------------------
MAX_SEARCH_TOKENS = 4096


def set_module(root: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, child, new)


def _subsample(x: torch.Tensor, n: int = MAX_SEARCH_TOKENS, seed: int = 0) -> torch.Tensor:
    import torch

    if x.shape[0] <= n:
        return x
    g = torch.Generator().manual_seed(seed)
    return x[torch.randperm(x.shape[0], generator=g)[:n].to(x.device)]


def _entry(kind: str, **kw: Any) -> dict[str, Any]:
    return {"kind": kind, **kw}


def _record(stats: dict[str, Any], key: str, r) -> None:
    stats[key] = {"alpha": r.alpha, "err_rtn": r.err_rtn, "err_awq": r.err_awq}


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


# --- the built-in recipes ----------------------------------------------------------------------------
def _lw(mod) -> torch.Tensor:
    return mod.weight.data


def _replace_linears(job: LayerJob, rels: list[str], bits: int, input_scales: dict[str, Any]) -> None:
    """``rels`` (relative to the layer) → 4/8-bit weight-only ``QuantLinear``, recorded as ``wq``."""
    from ocr_app.quant.modules import QuantLinear

    layer = job.module
    for rel in rels:
        lin = layer.get_submodule(rel)
        s = input_scales.get(rel)
        q = QuantLinear.from_float(lin.weight.data, lin.bias, bits=bits, input_scale=s)
        set_module(layer, rel, q)
        job.recipe["modules"][f"{job.prefix}.{rel}"] = _entry(
            "wq", in_features=q.in_features, out_features=q.out_features, bits=bits, group=q.group,
            bias=lin.bias is not None, input_scale=s is not None,
        )  # fmt: skip


def vision_recipe(job: LayerJob) -> None:
    """Every vision ``nn.Linear`` under ``job.prefix`` in ``preset.vision``'s format (None: float)."""
    if job.preset.vision is not None:
        quantize_vision(job.model, job.recipe, job.preset.vision, prefix=job.prefix)


def attention_recipe(job: LayerJob, bits: int | None = None) -> None:
    """q/k/v/o at ``preset.decoder_bits``; with calibration, AWQ scales folded exactly (powers of two)
    into ``input_layernorm`` (q/k/v) and ``v_proj`` rows (o; with GQA the kernel's input scale)."""
    import torch

    bits = bits or job.preset.decoder_bits
    if not bits:
        return
    layer = job.module
    attn = layer.self_attn
    input_scales: dict[str, Any] = {}
    with torch.no_grad():
        if job.acts is not None:
            x = _subsample(job.acts.attn_in)
            r = search_scales(x, [_lw(attn.q_proj), _lw(attn.k_proj), _lw(attn.v_proj)], bits,
                              group_size_for(attn.q_proj.in_features))  # fmt: skip
            _record(job.stats, "qkv", r)
            s_qkv = r.scales.to(layer.input_layernorm.weight.device)
            xo = _subsample(job.acts.o_in)
            r_o = search_scales(xo, [_lw(attn.o_proj)], bits, group_size_for(attn.o_proj.in_features))
            _record(job.stats, "o_proj", r_o)
            s_o = r_o.scales
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
        rels = [f"self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
        _replace_linears(job, rels, bits, input_scales)


def _ffn_recipe(job: LayerJob, sparse: bool, bits: int | None) -> None:
    import torch

    bits = bits or job.preset.decoder_bits
    if not bits:
        return
    layer = job.module
    ffn_prefix = "mlp.shared_experts" if sparse else "mlp"
    ffn = layer.get_submodule(ffn_prefix)
    input_scales: dict[str, Any] = {}
    with torch.no_grad():
        if job.acts is not None:
            mlp_x = _subsample(job.acts.mlp_in)
            g = group_size_for(ffn.gate_proj.in_features)
            r_gu = search_scales(mlp_x, [_lw(ffn.gate_proj), _lw(ffn.up_proj)], bits, g)
            _record(job.stats, "shared_gate_up" if sparse else "dense_gate_up", r_gu)
            xd = swiglu_input(mlp_x, _lw(ffn.gate_proj), _lw(ffn.up_proj))
            r_d = search_scales(xd, [_lw(ffn.down_proj)], bits, group_size_for(ffn.down_proj.in_features))
            _record(job.stats, "shared_down" if sparse else "dense_down", r_d)
            s_gu = r_gu.scales
            if sparse:  # the norm also feeds the router and the routed experts: scale in the kernel
                input_scales[f"{ffn_prefix}.gate_proj"] = s_gu
                input_scales[f"{ffn_prefix}.up_proj"] = s_gu
            else:
                norm = layer.post_attention_layernorm
                norm.weight.div_(s_gu.to(norm.weight.dtype))
                for lin in (ffn.gate_proj, ffn.up_proj):
                    lin.weight.mul_(s_gu.to(lin.weight.dtype)[None, :])
            ffn.up_proj.weight.div_(r_d.scales.to(ffn.up_proj.weight.dtype)[:, None])
            ffn.down_proj.weight.mul_(r_d.scales.to(ffn.down_proj.weight.dtype)[None, :])
        rels = [f"{ffn_prefix}.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
        _replace_linears(job, rels, bits, input_scales)


def dense_mlp_recipe(job: LayerJob, bits: int | None = None) -> None:
    """The dense layer's gate/up/down at ``preset.decoder_bits``, AWQ folded into its norm."""
    _ffn_recipe(job, sparse=False, bits=bits)


def shared_experts_recipe(job: LayerJob, bits: int | None = None) -> None:
    """The shared experts' gate/up/down at ``preset.decoder_bits`` (gate/up scale in the kernel)."""
    _ffn_recipe(job, sparse=True, bits=bits)


def routed_experts_recipe(job: LayerJob, bits: int | None = None) -> None:
    """The fused routed experts → ``QuantExperts`` at ``preset.decoder_bits`` (per-expert AWQ)."""
    import torch

    bits = bits or job.preset.decoder_bits
    if not bits:
        return
    layer = job.module
    ex = layer.mlp.experts
    with torch.no_grad():
        q = quantize_experts(
            ex.gate_up_proj.data,
            ex.down_proj.data,
            bits,
            job.acts,
            job.stats,
            layer.input_layernorm.weight.device,
        )
    set_module(layer, "mlp.experts", q)
    job.recipe["modules"][f"{job.prefix}.mlp.experts"] = _entry(
        "experts", num_experts=q.num_experts, hidden_dim=q.hidden_dim, intermediate_dim=q.intermediate_dim,
        bits=bits, input_scale=q.input_scale_inv is not None,
    )  # fmt: skip


# kind → (recipe, version): bump a version when its recipe's output changes, so the quantised-weights
# cache (keyed by ``recipe_signature``) quantises again instead of serving the old weights.
BUILTIN: dict[str, tuple[Callable[[LayerJob], None], str]] = {
    "vision": (vision_recipe, "1"),
    "attention": (attention_recipe, "1"),
    "dense_mlp": (dense_mlp_recipe, "1"),
    "shared_experts": (shared_experts_recipe, "1"),
    "routed_experts": (routed_experts_recipe, "1"),
}


def restore_builtin(kind: str | None = None) -> None:
    """Put the built-in recipe of ``kind`` (None: of every kind) back."""
    for k in LAYER_KINDS if kind is None else (kind,):
        register_recipe(k, *BUILTIN[k])


restore_builtin()

__all__ = [
    "LAYER_KINDS",
    "LayerJob",
    "LayerKind",
    "LayerRecipe",
    "quantize_decoder_layer",
    "quantize_vision_part",
    "recipe_for",
    "recipe_signature",
    "register_recipe",
    "restore_builtin",
]
