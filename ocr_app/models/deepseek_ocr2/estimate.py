"""Memory estimate of a page (or a batch of pages) for DeepSeek-OCR-2, used to size batches to free VRAM.

Why a formula and not a trial run: the batch size must be chosen before the first forward, and a wrong
guess costs an OOM retry. The terms and how they compare with measured peaks are in docs/RUNTIME.md.

Peak transient memory (on top of the weights) is the larger of two phases:

* vision pass: SAM's global-attention layers build a relative-position bias of
  ``views · heads · N² · bytes`` (N = (side/16)² patches; 4096 for the 1024 px global view, 2304 for a
  768 px tile) and hold it twice (the broadcast sum and its reshape into the SDPA mask). All tiles of the
  batch go through SAM in one call, so this term grows with tiles × pages and dominates everything else.
  With the sliced SAM attention (``models/deepseek_ocr2/sam_attention.py``, ``attn_slice_bytes``) only one
  slice of the bias exists at a time (also held twice), plus the per-axis terms it is summed from.
* language pass: KV cache ``2 · layers · kv_heads · head_dim · bytes`` per token over prompt + new
  tokens, prefill activations per prompt token, and float32 logits of the last position.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

from ocr_app.models.deepseek_ocr2.modes import GLOBAL_SIZE, PATCH_SIZE, TILE_SIZE, tokens_per_view

logger = logging.getLogger(__name__)

# View sizes and tokens per view are the resolution modes' (declared once, in modes.py).
GLOBAL_SIDE = GLOBAL_SIZE  # px, global view
TILE_SIDE = TILE_SIZE  # px, one local tile
PATCH = PATCH_SIZE  # SAM patch size
GLOBAL_TOKENS = tokens_per_view(GLOBAL_SIZE)  # 256
TILE_TOKENS = tokens_per_view(TILE_SIZE)  # 144

_DTYPE_BYTES = {
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "fp32": 4,
    "float32": 4,
    "float": 4,
    "int8": 1,
    "fp8": 1,
}


def dtype_bytes(dtype: Any) -> int:
    """Bytes per element of an activation dtype (``torch.bfloat16`` or a name like "bf16")."""
    name = str(dtype).lower().removeprefix("torch.")
    if name in _DTYPE_BYTES:
        return _DTYPE_BYTES[name]
    raise ValueError(f"unknown dtype for the memory estimate: {dtype!r}")


def _get(cfg: Any, name: str, default: Any = None) -> Any:
    if cfg is None:
        return default
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


@dataclass(frozen=True)
class TextDims:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    moe_intermediate: int
    experts_per_token: int
    vocab: int


@dataclass(frozen=True)
class SamDims:
    heads: int
    hidden: int
    mlp_dim: int


def text_dims(config: Any) -> TextDims:
    """Decoder dimensions from a ``DeepseekOcr2Config`` (or its ``to_dict()``)."""
    tc = _get(config, "text_config", config)
    hidden = int(_get(tc, "hidden_size"))
    heads = int(_get(tc, "num_attention_heads"))
    kv = int(_get(tc, "num_key_value_heads", heads) or heads)
    head_dim = int(_get(tc, "head_dim", None) or hidden // heads)
    return TextDims(
        layers=int(_get(tc, "num_hidden_layers")),
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate=int(_get(tc, "intermediate_size", 4 * hidden)),
        moe_intermediate=int(_get(tc, "moe_intermediate_size", 0) or 0),
        experts_per_token=int(_get(tc, "num_experts_per_tok", 0) or 0),
        vocab=int(_get(tc, "vocab_size")),
    )


def sam_dims(config: Any) -> SamDims:
    """SAM encoder dimensions; transformers' defaults (ViT-B) where the config leaves them out."""
    vc = _get(config, "vision_config", None)
    sc = _get(vc, "sam_config", None)
    hidden = int(_get(sc, "hidden_size", 768) or 768)
    return SamDims(
        heads=int(_get(sc, "num_attention_heads", 12) or 12),
        hidden=hidden,
        mlp_dim=int(_get(sc, "mlp_dim", None) or 4 * hidden),
    )


def kv_bytes_per_token(config: Any, dtype: Any = "bf16") -> int:
    """KV cache bytes per token: 2 (K and V) · layers · kv_heads · head_dim · bytes."""
    d = text_dims(config)
    return 2 * d.layers * d.kv_heads * d.head_dim * dtype_bytes(dtype)


def tiles_for(vision_tokens: int) -> int:
    """Tiles of a page from its vision-token count (257 + 144·tiles; 0 for a global-only page)."""
    return max(0, (vision_tokens - GLOBAL_TOKENS - 1) // TILE_TOKENS)


def sam_pass_bytes(
    config: Any, views: int, side: int, dtype: Any = "bf16", attn_slice_bytes: int | None = None
) -> int:
    """Peak transient bytes of one SAM call over ``views`` images of ``side`` px.

    ``attn_slice_bytes``: the bias budget of the sliced SAM attention; None = transformers' layer.
    """
    if views <= 0:
        return 0
    b = dtype_bytes(dtype)
    s = sam_dims(config)
    n = (side // PATCH) ** 2
    pairs = views * s.heads
    if attn_slice_bytes is None:
        bias = 2 * pairs * n * n * b  # rel-pos bias: broadcast sum + SDPA mask copy
    else:  # one slice of (view, head) pairs, held twice as above, + the per-axis terms (pairs × N × (H + W))
        per_pair = n * n * b
        bias = 2 * min(pairs, max(1, attn_slice_bytes // per_pair)) * per_pair
        bias += 2 * pairs * n * (side // PATCH) * b
        bias += views * n * 4 * s.hidden * b  # q/k/v laid out per head, and the slices' outputs
    hidden = views * n * (3 * s.hidden + s.mlp_dim + 2 * s.hidden) * b  # qkv, MLP, residual stream
    return bias + hidden


@dataclass(frozen=True)
class MemoryEstimate:
    """Transient bytes for one batch, by term (weights not included)."""

    batch: int
    tiles_per_page: int
    tokens_per_page: int  # prompt (vision + text) + new tokens
    kv_bytes_per_token: int
    kv_bytes: int
    vision_bytes: int  # peak of the SAM passes (global, then all tiles of the batch)
    features_bytes: int  # projected vision features kept for the language pass
    prefill_bytes: int  # language prefill activations
    logits_bytes: int  # float32 logits of the last position per page

    @property
    def language_bytes(self) -> int:
        return self.kv_bytes + self.features_bytes + self.prefill_bytes + self.logits_bytes

    @property
    def total_bytes(self) -> int:
        """Peak above the weights: the larger of the vision phase and the language phase."""
        return max(self.vision_bytes + self.features_bytes, self.language_bytes)

    def peak_with_weights(self, weight_bytes: int) -> int:
        return weight_bytes + self.total_bytes

    def to_dict(self) -> dict[str, int]:
        d = asdict(self)
        d["language_bytes"] = self.language_bytes
        d["total_bytes"] = self.total_bytes
        return d


def estimate_page_bytes(
    config: Any,
    vision_tokens: int,
    prompt_tokens: int,
    max_new_tokens: int,
    dtype: Any = "bf16",
    batch: int = 1,
    attn_slice_bytes: int | None = None,
) -> MemoryEstimate:
    """Estimate the transient memory of ``batch`` pages of ``vision_tokens`` each.

    ``prompt_tokens`` counts the text tokens of the prompt (BOS + instruction), without the vision tokens.
    ``attn_slice_bytes`` is the sliced SAM attention's budget (None: transformers' unsliced layer).
    """
    if batch < 1 or vision_tokens < 0 or prompt_tokens < 0 or max_new_tokens < 0:
        raise ValueError("batch must be ≥ 1 and token counts ≥ 0")
    b = dtype_bytes(dtype)
    d = text_dims(config)
    tiles = tiles_for(vision_tokens)
    prompt_len = vision_tokens + prompt_tokens
    seq = prompt_len + max_new_tokens
    per_tok = kv_bytes_per_token(config, dtype)
    vision = max(
        sam_pass_bytes(config, batch, GLOBAL_SIDE, dtype, attn_slice_bytes),
        sam_pass_bytes(config, batch * tiles, TILE_SIDE, dtype, attn_slice_bytes),
    )
    # prefill: residual + qkv/o + the larger MLP (dense layer 0, or routed experts × top-k) per token
    mlp = max(2 * d.intermediate, 2 * d.moe_intermediate * max(d.experts_per_token, 1))
    per_token_act = (2 * d.hidden + (d.heads + 2 * d.kv_heads) * d.head_dim + mlp) * b
    return MemoryEstimate(
        batch=batch,
        tiles_per_page=tiles,
        tokens_per_page=seq,
        kv_bytes_per_token=per_tok,
        kv_bytes=batch * seq * per_tok,
        vision_bytes=vision,
        features_bytes=batch * vision_tokens * d.hidden * b,
        prefill_bytes=batch * prompt_len * per_token_act,
        logits_bytes=batch * d.vocab * 4,
    )


def max_batch_for(
    free_bytes: int,
    config: Any,
    vision_tokens: int,
    prompt_tokens: int,
    max_new_tokens: int,
    dtype: Any = "bf16",
    *,
    safety: float = 0.85,
    limit: int = 64,
    attn_slice_bytes: int | None = None,
) -> int:
    """Largest batch whose estimate fits in ``safety · free_bytes`` (0 when not even one page fits)."""
    budget = int(free_bytes * safety)
    best = 0
    for n in range(1, limit + 1):
        est = estimate_page_bytes(
            config,
            vision_tokens,
            prompt_tokens,
            max_new_tokens,
            dtype,
            batch=n,
            attn_slice_bytes=attn_slice_bytes,
        )
        if est.total_bytes > budget:
            break
        best = n
    logger.debug("max batch %d for %.2f GiB free", best, free_bytes / 1024**3)
    return best


def model_weight_bytes(model: Any) -> int:
    """Bytes held by a model's parameters and buffers (for ``peak_with_weights``)."""
    total = 0
    for t in list(model.parameters()) + list(model.buffers()):
        total += t.numel() * t.element_size()
    return total
