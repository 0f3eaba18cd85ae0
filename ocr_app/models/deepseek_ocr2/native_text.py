"""DeepSeek-OCR-2's language model as plain torch modules: a DeepSeek-V2-style decoder (standard
multi-head attention with RoPE, one dense layer, then MoE layers with shared experts and a softmax top-k
router) and a minimal K/V cache.

Why: see ``native_vision``. Module paths and parameter names are transformers' own
(``layers.N.mlp.experts.gate_up_proj`` as fused 3-D weights, the router's ``gate.weight`` kept in float32),
so the graph decoder's fused step (``decoding.kernels``), the quantiser's recipes and its drop-in modules
work on either model. This forward serves the prefill (the graph decoder's step runs the layers itself),
the kernel warm-up's dry run and the tests; it is not a ``generate`` implementation.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ocr_app.models.deepseek_ocr2.native_config import TextConfig
from ocr_app.models.deepseek_ocr2.native_outputs import DecoderOutput
from ocr_app.models.deepseek_ocr2.native_vision import (
    Embedding,
    GatedMLP,
    Linear,
    RMSNorm,
    RotaryEmbedding,
    activation,
    apply_rotary_pos_emb,
)


class LayerKV:
    """One layer's cached keys and values, ``[B, kv_heads, T, head_dim]`` (transformers' layout)."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.keys is None:
            self.keys, self.values = k, v
        else:
            self.keys, self.values = torch.cat([self.keys, k], -2), torch.cat([self.values, v], -2)
        return self.keys, self.values


class KVCache:
    """Keys and values of every layer, grown by each forward (``layers[i].keys`` is what the graph
    decoder copies into its slots after a prefill)."""

    def __init__(self, num_layers: int) -> None:
        self.layers = [LayerKV() for _ in range(num_layers)]

    def get_seq_length(self) -> int:
        keys = self.layers[0].keys
        return 0 if keys is None else int(keys.shape[-2])


class TextAttention(nn.Module):
    def __init__(self, c: TextConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = c.head_dim
        self.num_heads = c.num_attention_heads
        self.num_key_value_heads = c.num_key_value_heads
        self.num_key_value_groups = c.num_attention_heads // c.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        bias = c.attention_bias
        self.q_proj = Linear(c.hidden_size, c.num_attention_heads * self.head_dim, bias=bias)
        self.k_proj = Linear(c.hidden_size, c.num_key_value_heads * self.head_dim, bias=bias)
        self.v_proj = Linear(c.hidden_size, c.num_key_value_heads * self.head_dim, bias=bias)
        self.o_proj = Linear(c.num_attention_heads * self.head_dim, c.hidden_size, bias=bias)

    def forward(self, x: torch.Tensor, position_embeddings, mask: torch.Tensor | None, cache: KVCache | None):
        """``mask``: None = causal over ``x`` alone (no cached positions), else a boolean
        ``[B, 1, T, T_total]``."""
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, *position_embeddings)
        if cache is not None:
            k, v = cache.layers[self.layer_idx].update(k, v)
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=mask is None and t > 1, scale=self.scaling,
            enable_gqa=self.num_key_value_groups > 1,
        )  # fmt: skip
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class TextExperts(nn.Module):
    """The routed experts as two fused 3-D weights: ``gate_up_proj`` ``[E, 2·I, H]`` (gate rows first)
    and ``down_proj`` ``[E, H, I]``."""

    def __init__(self, c: TextConfig) -> None:
        super().__init__()
        self.num_experts = c.num_experts
        self.hidden_dim = c.hidden_size
        self.intermediate_dim = c.moe_intermediate_size
        self.gate_up_proj = nn.Parameter(
            torch.empty(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim)
        )
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, self.hidden_dim, self.intermediate_dim))
        self.act_fn = activation(c.hidden_act)

    def forward(
        self, x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
    ) -> torch.Tensor:
        """``x`` ``[N, H]``; each token's chosen experts and their weights ``[N, k]``."""
        if _grouped_mm_ok(x, self.gate_up_proj):
            return self._grouped(x, top_k_index, top_k_weights)
        out = torch.zeros_like(x)
        for e in top_k_index.unique().tolist():
            token, slot = torch.where(top_k_index == e)
            gate, up = F.linear(x[token], self.gate_up_proj[e]).chunk(2, dim=-1)
            y = F.linear(self.act_fn(gate) * up, self.down_proj[e]) * top_k_weights[token, slot, None]
            out.index_add_(0, token, y.to(out.dtype))
        return out

    def _grouped(
        self, x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
    ) -> torch.Tensor:
        """All (token, expert) pairs sorted by expert through two grouped GEMMs (CUDA, 16-bit weights):
        a long prefill runs 2 launches per layer instead of 2 per expert hit."""
        n, k = top_k_index.shape
        experts, order = torch.sort(top_k_index.reshape(-1))
        counts = torch.histc(experts.int(), bins=self.num_experts, min=0, max=self.num_experts - 1)
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
        rows = x[order // k].to(self.gate_up_proj.dtype)
        gate, up = _grouped_mm(rows, self.gate_up_proj.transpose(-2, -1), offs).chunk(2, dim=-1)
        y = _grouped_mm(self.act_fn(gate) * up, self.down_proj.transpose(-2, -1), offs)
        y = y * top_k_weights.reshape(-1)[order, None]
        out = torch.zeros(n * k, x.shape[-1], dtype=y.dtype, device=x.device).index_copy_(0, order, y)
        return out.view(n, k, -1).sum(dim=1).to(x.dtype)


def _grouped_mm_ok(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (
        x.is_cuda
        and weight.dtype in (torch.bfloat16, torch.float16)
        and (hasattr(F, "grouped_mm") or hasattr(torch, "_grouped_mm"))
        and torch.cuda.get_device_capability(x.device) >= (8, 0)
    )


def _grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    fn = getattr(F, "grouped_mm", None) or torch._grouped_mm
    return fn(a, b, offs=offs)


class TopkRouter(nn.Module):
    """Softmax over the experts (float32), top-k (optionally within the best groups), scaled weights.
    Returns ``(logits, weights, indices)``."""

    def __init__(self, c: TextConfig) -> None:
        super().__init__()
        self.top_k = c.num_experts_per_tok
        self.num_experts = c.num_experts
        self.hidden_dim = c.hidden_size
        self.weight = nn.Parameter(torch.zeros(self.num_experts, self.hidden_dim, dtype=torch.float32))
        self.routed_scaling_factor = c.routed_scaling_factor
        self.topk_method = c.topk_method
        self.num_group = c.n_group
        self.topk_group = c.topk_group

    def forward(self, x: torch.Tensor):
        x = x.view(-1, self.hidden_dim)
        logits = F.linear(x.float(), self.weight.float())
        scores = logits.softmax(dim=-1, dtype=torch.float32)
        if self.topk_method == "group_limited_greedy":
            grouped = scores.view(-1, self.num_group, self.num_experts // self.num_group)
            best = torch.topk(grouped.max(dim=-1).values, k=self.topk_group, dim=-1, sorted=False)[1]
            keep = torch.zeros_like(grouped[..., 0]).scatter_(1, best, 1).bool()
            scores = scores.masked_fill(~keep[..., None].expand_as(grouped).reshape(scores.shape), 0.0)
        weights, indices = torch.topk(scores, k=self.top_k, dim=-1, sorted=False)
        return logits, weights * self.routed_scaling_factor, indices


class TextMoe(nn.Module):
    def __init__(self, c: TextConfig) -> None:
        super().__init__()
        self.experts = TextExperts(c)
        self.gate = TopkRouter(c)
        self.shared_experts = GatedMLP(
            c.hidden_size, c.moe_intermediate_size * c.n_shared_experts, c.hidden_act, c.mlp_bias
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, weights, indices = self.gate(x)
        routed = self.experts(x.view(-1, x.shape[-1]), indices, weights).view(x.shape)
        return routed + self.shared_experts(x)


class TextDecoderLayer(nn.Module):
    def __init__(self, c: TextConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = TextAttention(c, layer_idx)
        if c.mlp_layer_types[layer_idx] == "sparse":
            self.mlp: nn.Module = TextMoe(c)
        else:
            self.mlp = GatedMLP(c.hidden_size, c.intermediate_size, c.hidden_act, c.mlp_bias)
        self.input_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)

    def forward(self, x, position_embeddings, mask, cache) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), position_embeddings, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class TextDecoder(nn.Module):
    """Embeddings, decoder layers, final norm (``model.language_model``)."""

    def __init__(self, c: TextConfig) -> None:
        super().__init__()
        self.config = c
        self.padding_idx = c.pad_token_id
        self.vocab_size = c.vocab_size
        self.embed_tokens = Embedding(c.vocab_size, c.hidden_size, c.pad_token_id)
        self.layers = nn.ModuleList(TextDecoderLayer(c, i) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(c.head_dim, float(c.rope_parameters["rope_theta"]))

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        past_key_values: KVCache | None = None,
    ) -> DecoderOutput:
        """``attention_mask``: optional ``[B, T_total]`` of 1 (real) / 0 (padding) over cached and new
        positions; ``cache`` (alias ``past_key_values``) grows by this call's keys and values."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("give exactly one of input_ids and inputs_embeds")
        x = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        cache = cache if cache is not None else past_key_values
        if use_cache and cache is None:
            cache = KVCache(len(self.layers))
        past = cache.get_seq_length() if cache is not None else 0
        b, t = x.shape[:2]
        if position_ids is None:
            position_ids = (torch.arange(t, device=x.device) + past)[None].expand(b, -1)
        mask = None
        if past or attention_mask is not None:
            k = torch.arange(past + t, device=x.device)
            mask = (k[None, :] <= (torch.arange(t, device=x.device) + past)[:, None])[None, None]
            if attention_mask is not None:
                mask = mask & attention_mask[:, None, None, :].bool()
        rope = self.rotary_emb(x, position_ids)
        for layer in self.layers:
            x = layer(x, rope, mask, cache)
        return DecoderOutput(last_hidden_state=self.norm(x), cache=cache)


__all__ = [
    "KVCache",
    "TextAttention",
    "TextDecoder",
    "TextExperts",
    "TextMoe",
    "TopkRouter",
    "apply_rotary_pos_emb",
]
