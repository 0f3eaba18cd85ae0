"""DeepSeek-OCR-2 as the quantiser sees it: its layer kinds and their recipes, its units, its calibration
inputs and the activations AWQ reads (``ADAPTER``, an ``ocr_app.quant.adapter.QuantAdapter``).

Why here: ``ocr_app.quant`` knows no model (formats, kernels, AWQ, streaming, store); everything that
names this model's modules lives in its wing. Importing this module registers the built-in recipe of
each kind in ``ocr_app.quant.recipes``' registry; the loader hands ``ADAPTER`` to the quantiser's
backend, and ``ocr-app quantize`` does the same.

The kinds and what the built-in recipes do with a preset (``ocr_app.quant.presets``):

| kind | modules | built-in recipe |
|---|---|---|
| ``vision`` | every ``nn.Linear`` of a SAM block or a vision-encoder layer | ``preset.vision``: ``int8`` (Int8Linear) or ``w8`` |
| ``attention`` | q/k/v/o projections of a decoder layer | ``preset.decoder_bits``, group 128, AWQ on q/k/v (scale folded into ``input_layernorm``) and o (into ``v_proj``) |
| ``dense_mlp`` | gate/up/down of the dense layer (layer 0) | ``preset.decoder_bits``, AWQ folded into ``post_attention_layernorm`` and ``up_proj`` |
| ``shared_experts`` | gate/up/down of the shared experts | as ``dense_mlp``, but the gate/up scale is the kernel's input scale (the norm also feeds the router) |
| ``routed_experts`` | the 64 fused routed experts | ``preset.decoder_bits``, per-expert AWQ (``quantize_experts``) |

To change how one kind is quantised, change its function here and bump its version in ``BUILTIN`` (the
quantised-weights cache key holds it), or call ``ocr_app.quant.recipes.register_recipe(kind, fn)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
from ocr_app.quant.adapter import Unit
from ocr_app.quant.awq import search_scales, swiglu_input
from ocr_app.quant.calibration import Recorded, tap_input, tap_output
from ocr_app.quant.formats import group_size_for
from ocr_app.quant.recipes import (
    LayerJob,
    experts_entry,
    fold_into_norm,
    fold_into_rows,
    quantize_experts,
    quantize_linears_under,
    record_stats,
    register_recipe,
    replace_linears,
    set_module,
    subsample,
)

if TYPE_CHECKING:
    import torch
    from PIL import Image

logger = logging.getLogger(__name__)

LAYER_KINDS: tuple[str, ...] = ("vision", "attention", "dense_mlp", "shared_experts", "routed_experts")
VISION = "model.vision_tower"
DECODER = "model.language_model.layers"
CALIB_PROMPT = "<image>\n<|grounding|>Convert the document to markdown."
CALIB_SAM_ATTN_MB = 64  # SAM's attention bias slice while calibration pages go through a streamed model
_EXPERT_TENSORS = ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")


def _lw(mod) -> torch.Tensor:
    return mod.weight.data


# --- the built-in recipes ----------------------------------------------------------------------------
def vision_recipe(job: LayerJob) -> None:
    """Every vision ``nn.Linear`` under ``job.prefix`` in ``preset.vision``'s format (None: float)."""
    if job.preset.vision is not None:
        quantize_linears_under(job, job.preset.vision)


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
            qkv = [attn.q_proj, attn.k_proj, attn.v_proj]
            r = search_scales(subsample(job.acts["attn_in"]), [_lw(m) for m in qkv], bits,
                              group_size_for(attn.q_proj.in_features))  # fmt: skip
            record_stats(job.stats, "qkv", r)
            r_o = search_scales(subsample(job.acts["o_in"]), [_lw(attn.o_proj)], bits,
                                group_size_for(attn.o_proj.in_features))  # fmt: skip
            record_stats(job.stats, "o_proj", r_o)
            fold_into_norm(layer.input_layernorm, qkv, r.scales)
            if attn.v_proj.out_features == attn.o_proj.in_features:  # no GQA: v rows feed o columns 1:1
                fold_into_rows(attn.v_proj, attn.o_proj, r_o.scales)
            else:
                input_scales["self_attn.o_proj"] = r_o.scales
        rels = [f"self_attn.{p}" for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
        replace_linears(job, rels, bits, input_scales)


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
            mlp_x = subsample(job.acts["mlp_in"])
            g = group_size_for(ffn.gate_proj.in_features)
            r_gu = search_scales(mlp_x, [_lw(ffn.gate_proj), _lw(ffn.up_proj)], bits, g)
            record_stats(job.stats, "shared_gate_up" if sparse else "dense_gate_up", r_gu)
            xd = swiglu_input(mlp_x, _lw(ffn.gate_proj), _lw(ffn.up_proj))
            r_d = search_scales(xd, [_lw(ffn.down_proj)], bits, group_size_for(ffn.down_proj.in_features))
            record_stats(job.stats, "shared_down" if sparse else "dense_down", r_d)
            if sparse:  # the norm also feeds the router and the routed experts: scale in the kernel
                input_scales[f"{ffn_prefix}.gate_proj"] = r_gu.scales
                input_scales[f"{ffn_prefix}.up_proj"] = r_gu.scales
            else:
                fold_into_norm(layer.post_attention_layernorm, [ffn.gate_proj, ffn.up_proj], r_gu.scales)
            fold_into_rows(ffn.up_proj, ffn.down_proj, r_d.scales)
        rels = [f"{ffn_prefix}.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
        replace_linears(job, rels, bits, input_scales)


def dense_mlp_recipe(job: LayerJob, bits: int | None = None) -> None:
    """The dense layer's gate/up/down at ``preset.decoder_bits``, AWQ folded into its norm."""
    _ffn_recipe(job, sparse=False, bits=bits)


def shared_experts_recipe(job: LayerJob, bits: int | None = None) -> None:
    """The shared experts' gate/up/down at ``preset.decoder_bits`` (gate/up scale in the kernel)."""
    _ffn_recipe(job, sparse=True, bits=bits)


def routed_experts_recipe(job: LayerJob, bits: int | None = None) -> None:
    """The fused routed experts → ``QuantExperts`` at ``preset.decoder_bits`` (per-expert AWQ on the
    tokens the router sent to each)."""
    import torch

    bits = bits or job.preset.decoder_bits
    if not bits:
        return
    layer = job.module
    ex = layer.mlp.experts
    acts = job.acts
    with torch.no_grad():
        q = quantize_experts(
            ex.gate_up_proj.data,
            ex.down_proj.data,
            bits,
            acts["mlp_in"] if acts is not None else None,
            acts.get("topk") if acts is not None else None,
            job.stats,
            layer.input_layernorm.weight.device,
        )
    set_module(layer, "mlp.experts", q)
    job.recipe["modules"][f"{job.prefix}.mlp.experts"] = experts_entry(q, bits)


# kind → (recipe, version): bump a version when its recipe's output changes, so the quantised-weights
# cache (keyed by each kind's recipe signature) quantises again instead of serving the old weights.
BUILTIN: dict[str, tuple[Callable[[LayerJob], None], str]] = {
    "vision": (vision_recipe, "1"),
    "attention": (attention_recipe, "1"),
    "dense_mlp": (dense_mlp_recipe, "1"),
    "shared_experts": (shared_experts_recipe, "1"),
    "routed_experts": (routed_experts_recipe, "1"),
}


# --- the adapter -------------------------------------------------------------------------------------
class DeepSeekOcr2QuantAdapter:
    """DeepSeek-OCR-2's answers to the quantiser's questions (``ocr_app.quant.adapter.QuantAdapter``)."""

    name = "deepseek-ocr2"
    kinds = LAYER_KINDS

    def units(self, model: Any) -> list[Unit]:
        """SAM blocks and vision-encoder layers (``vision``), then the decoder layers, chained: attention
        and the dense MLP (layer 0) or attention, shared and routed experts (the sparse layers)."""
        tower = model.model.vision_tower
        units = [
            Unit(f"{VISION}.sam_encoder.layers.{i}", ("vision",))
            for i in range(len(tower.sam_encoder.layers))
        ]
        units += [
            Unit(f"{VISION}.vision_encoder.layers.{i}", ("vision",))
            for i in range(len(tower.vision_encoder.layers))
        ]
        for i, layer in enumerate(model.model.language_model.layers):
            sparse = hasattr(layer.mlp, "experts")
            kinds = (
                ("attention", "shared_experts", "routed_experts") if sparse else ("attention", "dense_mlp")
            )
            units.append(Unit(f"{DECODER}.{i}", kinds, chained=True))
        return units

    def calibration_batches(
        self,
        processor: Any,
        pages: list[tuple[Image.Image, str]],
        max_text_tokens: int = 384,
        **images_kwargs: Any,
    ) -> list[dict]:
        """``image + grounding prompt + the page's Markdown`` (cut at ``max_text_tokens``), one page per
        batch; ``images_kwargs`` go to the image processor (e.g. ``max_patches=2`` for fewer tiles)."""
        tok = processor.tokenizer
        batches = []
        for img, md in pages:
            ids = tok(md, add_special_tokens=False)["input_ids"][:max_text_tokens]
            text = CALIB_PROMPT + tok.decode(ids)
            batches.append(dict(processor(images=img, text=text, return_tensors="pt", **images_kwargs)))
        return batches

    def record_inputs(self, layer: Any, rec: Recorded) -> list[Any]:
        """Attention input (after the input norm), ``o_proj`` input, MLP input (after the post-attention
        norm) and, in a sparse layer, the router's chosen experts (``topk``: its output's third part)."""
        handles = [
            tap_input(layer.self_attn.q_proj, rec, "attn_in"),
            tap_input(layer.self_attn.o_proj, rec, "o_in"),
            tap_input(layer.mlp, rec, "mlp_in"),
        ]
        if hasattr(layer.mlp, "gate"):
            handles.append(tap_output(layer.mlp.gate, rec, "topk", pick=lambda out: out[2]))
        return handles

    def offloadable(self, name: str) -> bool:
        return name.endswith(_EXPERT_TENSORS)

    def prepare(self, model: Any) -> None:
        """Calibration pages go through SAM with a small bias slice, so the vision pass of a streamed
        model stays well below one decoder layer's memory."""
        bound_sam_attention(model, CALIB_SAM_ATTN_MB)


def register_builtin_recipes() -> None:
    """Declare this model's layer kinds with their built-in recipes (idempotent)."""
    for kind, (fn, version) in BUILTIN.items():
        register_recipe(kind, fn, version, builtin=True)


register_builtin_recipes()
ADAPTER = DeepSeekOcr2QuantAdapter()

__all__ = [
    "ADAPTER",
    "BUILTIN",
    "CALIB_PROMPT",
    "LAYER_KINDS",
    "DeepSeekOcr2QuantAdapter",
    "register_builtin_recipes",
]
