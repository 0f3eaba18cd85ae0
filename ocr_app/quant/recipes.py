"""How each layer kind is quantised: one recipe per kind, in one registry both load paths use.

Why a registry: "keep attention at 8 bits", "leave the vision tower in bf16" or "try 3-bit routed
experts" is a change to one recipe — in the model's wing, or ``register_recipe`` from a plug-in or a
test — and the load-then-quantise path (``apply.quantize_model``), the streaming load
(``stream.stream_quantize``), the pre-quantised checkpoint (it is rebuilt from the recipe's module
entries) and the quantised-weights cache key (``recipe_signature``) all follow.

The kinds are the model's: its wing declares each with its built-in recipe
(``register_recipe(kind, fn, version, builtin=True)``) and lists, per unit, which kinds run on it
(``adapter.Unit``). This module holds the registry and the building blocks recipes are made of:
module replacement (``replace_linears``, ``quantize_linears_under``, ``quantize_experts``) and exact AWQ
scale folding (``fold_into_norm``, ``fold_into_rows``).

A recipe is a function of one ``LayerJob``: it replaces modules under ``job.prefix`` and records each in
``job.recipe["modules"]`` (formats: ``int8``, ``wq``, ``experts`` — see ``checkpoint.py``); AWQ
statistics go to ``job.stats``. A recipe that leaves its modules alone keeps them in the float dtype.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ConfigError
from ocr_app.quant.awq import expert_inputs, search_scales, swiglu_input
from ocr_app.quant.formats import group_size_for

if TYPE_CHECKING:
    import torch
    from torch import nn

    from ocr_app.quant.adapter import Unit
    from ocr_app.quant.awq import ScaleResult
    from ocr_app.quant.calibration import LayerActivations
    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)


@dataclass
class LayerJob:
    """One unit to quantise: ``prefix`` is its module path (a decoder layer, a vision block)."""

    model: nn.Module
    prefix: str
    preset: Preset
    recipe: dict[str, Any]  # the recipe being built ("modules": name → entry)
    acts: LayerActivations | None = None  # AWQ calibration inputs of this unit, or None (RTN)
    stats: dict[str, Any] = field(default_factory=dict)  # AWQ statistics of this unit

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
_BUILTIN: dict[str, LayerRecipe] = {}


def register_recipe(
    kind: str, apply: Callable[[LayerJob], None], version: str = "1", *, builtin: bool = False
) -> LayerRecipe:
    """Make ``apply`` the recipe of ``kind`` (replacing the one before) and return it. A model's wing
    declares its kinds with ``builtin=True``; a plug-in or a test replaces one of them, and
    ``restore_builtin`` puts the built-in back."""
    if not builtin and kind not in _BUILTIN:
        known = ", ".join(_BUILTIN) or "none (no model has registered its recipes)"
        raise ConfigError(f"Unknown layer kind {kind!r}; the kinds are {known}.")
    recipe = LayerRecipe(kind, apply, version)
    if builtin:
        _BUILTIN[kind] = recipe
    _RECIPES[kind] = recipe
    return recipe


def restore_builtin(kind: str | None = None) -> None:
    """Put the built-in recipe of ``kind`` (None: of every kind) back."""
    for k in list(_BUILTIN) if kind is None else [kind]:
        _RECIPES[k] = _BUILTIN[k]


def recipe_for(kind: str) -> LayerRecipe:
    try:
        return _RECIPES[kind]
    except KeyError:
        raise ConfigError(f"No recipe for layer kind {kind!r}: its model has not registered one.") from None


def recipe_signature(kinds: Iterable[str]) -> dict[str, str]:
    """Which function (and version) quantises each of ``kinds``: part of the quantised-weights cache key,
    so a changed recipe never reads weights quantised by another."""
    return {kind: recipe_for(kind).signature for kind in kinds}


def quantize_unit(
    model: nn.Module, unit: Unit, preset: Preset, recipe: dict[str, Any], acts: LayerActivations | None = None
) -> dict[str, Any]:
    """Run the recipe of each of ``unit``'s kinds, in order; return its AWQ statistics. Each AWQ search
    reads the calibration inputs, not the other kinds' results, and each fold touches only its own
    kind's norms and weights."""
    job = LayerJob(model, unit.prefix, preset, recipe, acts)
    for kind in unit.kinds:
        recipe_for(kind).apply(job)
    return job.stats


# --- building blocks ---------------------------------------------------------------------------------
MAX_SEARCH_TOKENS = 4096


def set_module(root: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, child, new)


def subsample(x: torch.Tensor, n: int = MAX_SEARCH_TOKENS, seed: int = 0) -> torch.Tensor:
    """At most ``n`` rows of ``x`` (a fixed random sample): the AWQ search's cost stays bounded."""
    import torch

    if x.shape[0] <= n:
        return x
    g = torch.Generator().manual_seed(seed)
    return x[torch.randperm(x.shape[0], generator=g)[:n].to(x.device)]


def record_stats(stats: dict[str, Any], key: str, r: ScaleResult) -> None:
    stats[key] = {"alpha": r.alpha, "err_rtn": r.err_rtn, "err_awq": r.err_awq}


def _wq_entry(q, bits: int, bias: bool, input_scale: bool) -> dict[str, Any]:
    return {"kind": "wq", "in_features": q.in_features, "out_features": q.out_features, "bits": bits,
            "group": q.group, "bias": bias, "input_scale": input_scale}  # fmt: skip


def replace_linears(
    job: LayerJob, rels: list[str], bits: int, input_scales: dict[str, Any] | None = None
) -> None:
    """The linears ``rels`` (relative to the unit) → 4/8-bit weight-only ``QuantLinear``, recorded as
    ``wq``; ``input_scales[rel]``: an AWQ scale the kernel applies to the input (one that could not be
    folded into a norm or a previous linear)."""
    from ocr_app.quant.modules import QuantLinear

    input_scales = input_scales or {}
    layer = job.module
    for rel in rels:
        lin = layer.get_submodule(rel)
        s = input_scales.get(rel)
        q = QuantLinear.from_float(lin.weight.data, lin.bias, bits=bits, input_scale=s)
        set_module(layer, rel, q)
        job.recipe["modules"][f"{job.prefix}.{rel}"] = _wq_entry(q, bits, lin.bias is not None, s is not None)


def quantize_linears_under(job: LayerJob, fmt: str = "int8") -> None:
    """Every ``nn.Linear`` under ``job.prefix`` → ``Int8Linear`` (``int8``: per-channel, weight-only by
    default, see ``ops.int8_linear``) or 8-bit weight-only ``QuantLinear`` (``w8``: one fused Triton GEMM
    per layer)."""
    from torch import nn

    from ocr_app.quant.modules import Int8Linear, QuantLinear

    for name, mod in list(job.module.named_modules()):
        if not isinstance(mod, nn.Linear):
            continue
        full = f"{job.prefix}.{name}"
        if fmt == "w8":
            q = QuantLinear.from_float(mod.weight.data, mod.bias, bits=8)
            entry = _wq_entry(q, 8, mod.bias is not None, False)
        else:
            q = Int8Linear.from_float(mod.weight.data, mod.bias)
            entry = {"kind": "int8", "in_features": mod.in_features, "out_features": mod.out_features,
                     "bias": mod.bias is not None}  # fmt: skip
        set_module(job.model, full, q)
        job.recipe["modules"][full] = entry


def fold_into_norm(norm: nn.Module, linears: list[nn.Module], scales: torch.Tensor) -> None:
    """AWQ scales of the linears a norm feeds, folded exactly (powers of two): the norm's weight divided,
    the linears' input columns multiplied."""
    norm.weight.div_(scales.to(norm.weight.device, norm.weight.dtype))
    for lin in linears:
        lin.weight.mul_(scales.to(lin.weight.device, lin.weight.dtype)[None, :])


def fold_into_rows(prev: nn.Module, nxt: nn.Module, scales: torch.Tensor) -> None:
    """AWQ scales of ``nxt``'s input folded into the output rows of ``prev``, which feeds it one to one
    (a value projection into the output projection, up into down)."""
    prev.weight.div_(scales.to(prev.weight.dtype)[:, None])
    if getattr(prev, "bias", None) is not None:
        prev.bias.div_(scales.to(prev.bias.dtype))
    nxt.weight.mul_(scales.to(nxt.weight.dtype)[None, :])


def quantize_experts(
    gate_up: torch.Tensor,
    down: torch.Tensor,
    bits: int,
    inputs: torch.Tensor | None,
    top_k: torch.Tensor | None,
    stats: dict[str, Any],
    device: torch.device | None = None,
    chunk: int | None = None,
) -> nn.Module:
    """Fused experts (transformers' layout: ``gate_up`` [E, 2I, H], ``down`` [E, H, I]) → ``QuantExperts``
    on ``device``, ``chunk`` experts at a time.

    With calibration ``inputs`` [T, H] and their routed expert ids ``top_k`` [T, k]: per-expert AWQ on the
    tokens routed to each expert (pooled rule below ``MIN_EXPERT_TOKENS``), the down-projection scales
    folded into the gate/up rows (exact: powers of two), the gate/up scales kept as the kernel's input
    scale. Why chunks: the float weights may live on the CPU (streaming load) and only a few experts'
    float32 temporaries then exist on the GPU at once.
    """
    import torch

    from ocr_app.quant.modules import EXPERT_CHUNK, QuantExperts

    e_count, two_i, hidden = gate_up.shape
    inter = two_i // 2
    device = device if device is not None else gate_up.device
    chunk = chunk or EXPERT_CHUNK
    awq = inputs is not None and top_k is not None
    q = QuantExperts(e_count, hidden, inter, bits, awq, gate_up.dtype, device)
    g_gu, g_dn = group_size_for(hidden), group_size_for(inter)
    pooled = 0
    err = {"gate_up_rtn": 0.0, "gate_up_awq": 0.0, "down_rtn": 0.0, "down_awq": 0.0}
    alphas = []
    for start in range(0, e_count, chunk):
        end = min(e_count, start + chunk)
        gu, dn = gate_up[start:end].to(device), down[start:end].to(device)
        s_gu = None
        if awq:
            s_gu = torch.ones(end - start, hidden, device=device)
            s_dn = torch.ones(end - start, inter, device=device)
            for j in range(end - start):
                e = start + j
                xe, was_pooled = expert_inputs(inputs, top_k, e, seed=e)
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
    if awq:
        stats["experts"] = {
            "pooled_experts": pooled,
            "mean_alpha_gate_up": sum(alphas) / len(alphas),
            **{k: v / e_count for k, v in err.items()},
        }
    return q


def experts_entry(q, bits: int) -> dict[str, Any]:
    return {"kind": "experts", "num_experts": q.num_experts, "hidden_dim": q.hidden_dim,
            "intermediate_dim": q.intermediate_dim, "bits": bits, "input_scale": q.input_scale_inv is not None}  # fmt: skip


__all__ = [
    "LayerJob",
    "LayerRecipe",
    "experts_entry",
    "fold_into_norm",
    "fold_into_rows",
    "quantize_experts",
    "quantize_linears_under",
    "quantize_unit",
    "recipe_for",
    "recipe_signature",
    "record_stats",
    "register_recipe",
    "replace_linears",
    "restore_builtin",
    "set_module",
    "subsample",
]
