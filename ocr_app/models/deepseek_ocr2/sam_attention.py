"""Memory-bounded SAM attention for DeepSeek-OCR-2's vision tower.

Why: SAM's four global-attention layers add a decomposed relative-position bias of
heads × tokens² per view (12 × 2304² for a 768 px tile, 12 × 4096² for the 1024 px global view). The
transformers SDPA layer materialises that bias for the whole batch at once, so a page's 6 tiles cost
~0.8 GiB of bias alone, which sets the page's peak memory: more than a 3.5 GiB budget allows next to
2.4 GiB of quantised weights. Here the bias is built and consumed in slices of (view, head) pairs that
fit ``budget_mb``, so the whole page still goes through the tower in one call (one launch per op,
full-width GEMMs) and only the attention core is sliced. Attention is independent per (view, head),
so the result is the same as the unsliced layer.

On CUDA the bias is not built at all: it is folded into the query/key dot product
(``_augmented_attention``), which a fused attention kernel computes without tokens² memory; the sliced
bias stays for the CPU (and is what ``attn_slice_bytes`` budgets, an upper bound on CUDA).

Also: transformers rebuilds the relative-position tables on every call (an interpolation and a
host-to-device copy of CPU indices per layer); they depend only on the weights, so they are built once
per layer and size and reused.
"""

from __future__ import annotations

import logging
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

DEFAULT_BUDGET_MB = 256


def _rel_tables(attn: Any, height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Relative-position tables [H, H, C] and [W, W, C], built once per size and kept per size: the
    global layers see both the 1024 px view and the 768 px tiles of every page, and one kept entry was
    rebuilt twice per page (an interpolation and a host-to-device copy each time). Weights are fixed at
    inference; ``bound_sam_attention`` drops the tables when it is applied again."""
    key = (height, width, attn.rel_pos_h.data_ptr(), attn.rel_pos_w.data_ptr(), attn.rel_pos_h.dtype)
    cache = attn.__dict__.setdefault("_ocr_app_rel_tables", {})
    tables = cache.get(key)
    if tables is None:
        tables = cache[key] = (
            attn.get_rel_pos(height, height, attn.rel_pos_h),
            attn.get_rel_pos(width, width, attn.rel_pos_w),
        )
    return tables


def _forward(self: Any, hidden_states: torch.Tensor, output_attentions: bool | None = None):
    """Drop-in for the SAM attention ``forward``: SDPA with the bias built per slice of (view, head)."""
    import torch
    import torch.nn.functional as F

    batch, height, width, _ = hidden_states.shape
    heads, tokens = self.num_attention_heads, height * width
    qkv = self.qkv(hidden_states).reshape(batch, tokens, 3, heads, -1).permute(2, 0, 3, 1, 4)
    # [B·heads, tokens, C], as transformers lays them out
    query, key, value = qkv.reshape(3, batch * heads, tokens, -1).unbind(0)
    pairs = batch * heads
    if not self.use_rel_pos:
        out = F.scaled_dot_product_attention(query[None], key[None], value[None], scale=self.scale)[0]
    else:
        table_h, table_w = _rel_tables(self, height, width)
        q5 = query.reshape(pairs, height, width, -1)
        rel_h = torch.einsum("bhwc,hkc->bhwk", q5, table_h)  # [pairs, H, W, H]
        rel_w = torch.einsum("bhwc,wkc->bhwk", q5, table_w)  # [pairs, H, W, W]
        if self.__dict__.get("_ocr_app_augmented", query.is_cuda):
            out = _augmented_attention(query, key, value, rel_h, rel_w, self.scale)
            return self.proj(_merge_heads(out, batch, heads, height, width)), None
        per_pair = tokens * tokens * query.element_size()
        step = max(1, min(pairs, self._ocr_app_budget_bytes // per_pair))
        parts = []
        for s in range(0, pairs, step):
            e = min(pairs, s + step)
            bias = (rel_h[s:e, :, :, :, None] + rel_w[s:e, :, :, None, :]).reshape(1, e - s, tokens, tokens)
            parts.append(
                F.scaled_dot_product_attention(
                    query[None, s:e], key[None, s:e], value[None, s:e], attn_mask=bias, scale=self.scale
                )[0]
            )
            del bias
        out = parts[0] if len(parts) == 1 else torch.cat(parts, 0)
    return self.proj(_merge_heads(out, batch, heads, height, width)), None


def _merge_heads(out: torch.Tensor, batch: int, heads: int, height: int, width: int) -> torch.Tensor:
    """[B·heads, tokens, C] → [B, H, W, heads·C], as transformers lays the output out."""
    return (
        out.reshape(batch, heads, height, width, -1).permute(0, 2, 3, 1, 4).reshape(batch, height, width, -1)
    )


def _augmented_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    rel_h: torch.Tensor,
    rel_w: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """Attention with the decomposed relative-position bias folded into the dot product.

    Why: the bias of key (kh, kw) for a query is ``rel_h[q, kh] + rel_w[q, kw]``. Appending
    ``[rel_h[q], rel_w[q]]`` to the (pre-scaled) query and the one-hot rows of ``kh`` and ``kw`` to
    each key makes ``q'·k' = scale·q·k + bias`` exactly, so a fused (flash) kernel computes it with no
    tokens² bias in memory: on an H200 the bias's elementwise build and copies were ~60 % of the
    vision pass. Head size grows from C to C + H + W (64 → 192 for the 1024 px view), padded to a
    multiple of 8; values are zero-padded to match and the padding is cut from the output.
    ``query/key/value``: [pairs, tokens, C]; ``rel_h``: [pairs, H, W, H]; ``rel_w``: [pairs, H, W, W].
    """
    import torch
    import torch.nn.functional as F

    pairs, tokens, c = query.shape
    height, width = rel_h.shape[1], rel_w.shape[2]
    rows = torch.arange(tokens, device=query.device)
    onehot_h = F.one_hot(rows // width, height).to(query.dtype).expand(pairs, -1, -1)
    onehot_w = F.one_hot(rows % width, width).to(query.dtype).expand(pairs, -1, -1)
    q = torch.cat(
        [query * scale, rel_h.reshape(pairs, tokens, height), rel_w.reshape(pairs, tokens, width)], -1
    )
    k = torch.cat([key, onehot_h, onehot_w], -1)
    pad = -q.shape[-1] % 8
    if pad:
        q, k = F.pad(q, (0, pad)), F.pad(k, (0, pad))
    v = F.pad(value, (0, q.shape[-1] - c))
    return F.scaled_dot_product_attention(q[None], k[None], v[None], scale=1.0)[0][..., :c]


# SAM attention classes by name: transformers' (its SDPA variant subclasses it) and the native one
# (``native_vision``). By name, through the class hierarchy: no import of either model's module here.
SAM_ATTENTION_CLASSES = frozenset({"DeepseekOcr2SamVisionAttention", "SamAttention"})


def is_sam_attention(module: Any) -> bool:
    """Whether ``module`` is a SAM attention layer of either DeepSeek-OCR-2 implementation."""
    return any(c.__name__ in SAM_ATTENTION_CLASSES for c in type(module).__mro__)


def attn_slice_bytes(model: Any) -> int | None:
    """The bias budget the model's SAM attention runs with (None: the layer's own forward)."""
    for module in model.modules():
        if is_sam_attention(module):
            return module.__dict__.get("_ocr_app_budget_bytes") if "forward" in module.__dict__ else None
    return None


def bound_sam_attention(model: Any, budget_mb: int = DEFAULT_BUDGET_MB) -> int:
    """Make every SAM attention layer of ``model`` slice its bias to ``budget_mb`` (in place).

    ``budget_mb <= 0`` restores the layer's own forward. Returns the number of layers changed.
    """
    count = 0
    for module in model.modules():
        if not is_sam_attention(module):
            continue
        module.__dict__.pop("_ocr_app_rel_tables", None)
        if budget_mb <= 0:
            module.__dict__.pop("forward", None)
        else:
            module._ocr_app_budget_bytes = int(budget_mb) << 20
            module.forward = types.MethodType(_forward, module)
        count += 1
    if count:
        logger.info(
            "SAM attention: %d layers, bias budget %s MiB", count, budget_mb if budget_mb > 0 else "off"
        )
    return count
