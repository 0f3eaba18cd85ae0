"""DeepSeek-OCR-2's vision tower as plain torch modules: SAM ViT-B, then a Qwen2-style encoder whose
learned queries read SAM's features.

Why: the native loader builds the model without transformers (issue 32: importing its model machinery was
~3 s of a 10 s cold start). Module paths and parameter names are transformers' own
(``sam_encoder.layers.N.attn.qkv`` …), so checkpoints, the quantiser's units, the bounded SAM attention
(``sam_attention``) and the fused SAM layers (``sam_kernels``) see the same model either way; results equal
transformers' ``DeepseekOcr2VisionModel`` up to float rounding (tested on the tiny model).

Data flow of one view (global 1024 px or a 768 px tile): 16 px patches → SAM blocks (windowed attention
with decomposed relative positions, global at a few layers) → neck and two stride-2 convolutions
(64×64 → 16×16 tokens for 1024 px, 12×12 for 768 px) → with as many learned queries appended → the
encoder (bidirectional over the image tokens, causal for the queries) → the queries' outputs are the view's
features.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ocr_app.models.deepseek_ocr2.native_config import EncoderConfig, SamConfig, VisionConfig

GLOBAL_QUERIES = 256  # 16 × 16 queries for the 1024 px view
TILE_QUERIES = 144  # 12 × 12 for a 768 px view


# Layers whose parameters are never initialised: every value comes from the checkpoint. Why: on the meta
# device torch's init functions run Python decompositions; the first build of the full model paid ~1.5 s
# importing and tracing them. Subclasses, so ``isinstance(m, nn.Linear)`` (the quantiser) still holds.
class Linear(nn.Linear):
    def reset_parameters(self) -> None:
        pass


class Conv2d(nn.Conv2d):
    def reset_parameters(self) -> None:
        pass


class LayerNorm(nn.LayerNorm):
    def reset_parameters(self) -> None:
        pass


class Embedding(nn.Embedding):
    def reset_parameters(self) -> None:
        pass


def activation(name: str) -> nn.Module:
    """The activations these configs name (transformers' ``gelu`` is the exact, erf-based one)."""
    table = {"gelu": nn.GELU, "silu": nn.SiLU, "swish": nn.SiLU, "relu": nn.ReLU}
    if name not in table:
        raise ValueError(f"activation {name!r} is not built by the native modules")
    return table[name]()


# --- SAM ------------------------------------------------------------------------------------------
class SamPatchEmbed(nn.Module):
    def __init__(self, c: SamConfig) -> None:
        super().__init__()
        self.projection = Conv2d(c.num_channels, c.hidden_size, kernel_size=c.patch_size, stride=c.patch_size)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.projection(pixel_values).permute(0, 2, 3, 1)  # [B, H, W, C]


class SamAttention(nn.Module):
    """Multi-head attention over a window (or the whole view) with decomposed relative positions."""

    def __init__(self, c: SamConfig, window_size: int) -> None:
        super().__init__()
        side = window_size or c.image_size // c.patch_size
        head_dim = c.hidden_size // c.num_attention_heads
        self.num_attention_heads = c.num_attention_heads
        self.scale = head_dim**-0.5
        self.dropout = c.attention_dropout
        self.qkv = Linear(c.hidden_size, 3 * c.hidden_size, bias=c.qkv_bias)
        self.proj = Linear(c.hidden_size, c.hidden_size)
        self.use_rel_pos = c.use_rel_pos
        if self.use_rel_pos:
            self.rel_pos_h = nn.Parameter(torch.zeros(2 * side - 1, head_dim))
            self.rel_pos_w = nn.Parameter(torch.zeros(2 * side - 1, head_dim))

    @staticmethod
    def get_rel_pos(q_size: int, k_size: int, rel_pos: torch.Tensor) -> torch.Tensor:
        """Table ``[q_size, k_size, C]``: the embedding of each query-key offset, the learned table
        linearly resized when the view's side differs from the one it was trained at."""
        span = 2 * max(q_size, k_size) - 1
        table = F.interpolate(
            rel_pos.reshape(1, rel_pos.shape[0], -1).transpose(1, 2), size=span, mode="linear"
        )
        table = table.reshape(-1, span).permute(1, 0)
        q = torch.arange(q_size)[:, None] * max(k_size / q_size, 1.0)
        k = torch.arange(k_size)[None, :] * max(q_size / k_size, 1.0)
        offsets = (q - k) + (k_size - 1) * max(q_size / k_size, 1.0)
        return table[offsets.long()]

    def rel_bias(self, query: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """``[B·heads, H·W, H·W]`` bias: row and column offsets' embeddings dotted with each query."""
        table_h = self.get_rel_pos(height, height, self.rel_pos_h)
        table_w = self.get_rel_pos(width, width, self.rel_pos_w)
        q = query.reshape(query.shape[0], height, width, -1)
        rel_h = torch.einsum("bhwc,hkc->bhwk", q, table_h)
        rel_w = torch.einsum("bhwc,wkc->bhwk", q, table_w)
        bias = rel_h[:, :, :, :, None] + rel_w[:, :, :, None, :]
        return bias.reshape(query.shape[0], height * width, height * width)

    def forward(self, hidden_states: torch.Tensor, output_attentions: bool | None = None):
        """``[B, H, W, C]`` → ``([B, H, W, C], None)`` (the tuple is transformers' layout)."""
        b, h, w, _ = hidden_states.shape
        heads, t = self.num_attention_heads, h * w
        qkv = self.qkv(hidden_states).reshape(b, t, 3, heads, -1).permute(2, 0, 3, 1, 4)
        query, key, value = qkv.reshape(3, b * heads, t, -1).unbind(0)
        bias = self.rel_bias(query, h, w).reshape(b, heads, t, t) if self.use_rel_pos else None
        out = F.scaled_dot_product_attention(
            query.view(b, heads, t, -1),
            key.view(b, heads, t, -1),
            value.view(b, heads, t, -1),
            attn_mask=bias,
        )
        out = out.view(b, heads, h, w, -1).permute(0, 2, 3, 1, 4).reshape(b, h, w, -1)
        return self.proj(out), None


class SamMLP(nn.Module):
    def __init__(self, c: SamConfig) -> None:
        super().__init__()
        self.lin1 = Linear(c.hidden_size, c.mlp_dim)
        self.lin2 = Linear(c.mlp_dim, c.hidden_size)
        self.act = activation(c.hidden_act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(self.act(self.lin1(x)))


class SamLayer(nn.Module):
    """Pre-norm block; ``window_size`` 0 = attention over the whole view."""

    def __init__(self, c: SamConfig, window_size: int) -> None:
        super().__init__()
        self.layer_norm1 = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.attn = SamAttention(c, window_size)
        self.layer_norm2 = LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.mlp = SamMLP(c)
        self.window_size = window_size

    @staticmethod
    def window_partition(x: torch.Tensor, window: int) -> tuple[torch.Tensor, tuple[int, int]]:
        """``[B, H, W, C]`` → zero-padded windows ``[B·nWin, window, window, C]`` and the padded size."""
        b, h, w, c = x.shape
        ph, pw = (window - h % window) % window, (window - w % window) % window
        x = F.pad(x, (0, 0, 0, pw, 0, ph))
        hp, wp = h + ph, w + pw
        x = x.reshape(b, hp // window, window, wp // window, window, c)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().reshape(-1, window, window, c), (hp, wp)

    @staticmethod
    def window_unpartition(
        windows: torch.Tensor, window: int, padded: tuple[int, int], size: tuple[int, int]
    ) -> torch.Tensor:
        hp, wp = padded
        h, w = size
        b = windows.shape[0] // (hp * wp // window // window)
        x = windows.reshape(b, hp // window, wp // window, window, window, -1)
        x = x.permute(0, 1, 3, 2, 4, 5).contiguous().reshape(b, hp, wp, -1)
        return x[:, :h, :w, :].contiguous()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        residual = hidden_states
        x = self.layer_norm1(hidden_states)
        if self.window_size > 0:
            size = (x.shape[1], x.shape[2])
            x, padded = self.window_partition(x, self.window_size)
        x = self.attn(x)[0]
        if self.window_size > 0:
            x = self.window_unpartition(x, self.window_size, padded, size)
        x = residual + x
        return x + self.mlp(self.layer_norm2(x))


class ChannelsFirstLayerNorm(LayerNorm):
    """LayerNorm over the channels of ``[B, C, H, W]``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class SamNeck(nn.Module):
    def __init__(self, c: SamConfig) -> None:
        super().__init__()
        self.conv1 = Conv2d(c.hidden_size, c.output_channels, kernel_size=1, bias=False)
        self.layer_norm1 = ChannelsFirstLayerNorm(c.output_channels, eps=1e-6)
        self.conv2 = Conv2d(c.output_channels, c.output_channels, kernel_size=3, padding=1, bias=False)
        self.layer_norm2 = ChannelsFirstLayerNorm(c.output_channels, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer_norm1(self.conv1(x.permute(0, 3, 1, 2)))
        return self.layer_norm2(self.conv2(x))


class SamDownsample(nn.Module):
    """Two stride-2 convolutions: 4× fewer tokens per side, into the encoder's width."""

    def __init__(self, c: SamConfig) -> None:
        super().__init__()
        first, second = c.downsample_channels
        self.conv1 = Conv2d(c.output_channels, first, kernel_size=3, stride=2, padding=1, bias=False)
        self.conv2 = Conv2d(first, second, kernel_size=3, stride=2, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x))


class SamEncoder(nn.Module):
    def __init__(self, c: SamConfig) -> None:
        super().__init__()
        self.config = c
        self.patch_embed = SamPatchEmbed(c)
        side = c.image_size // c.patch_size
        self.pos_embed = nn.Parameter(torch.zeros(1, side, side, c.hidden_size)) if c.use_abs_pos else None
        self.layers = nn.ModuleList(
            SamLayer(c, 0 if i in c.global_attn_indexes else c.window_size)
            for i in range(c.num_hidden_layers)
        )
        self.neck = SamNeck(c)
        self.proj = SamDownsample(c)

    def position(self, height: int, width: int) -> torch.Tensor:
        """The absolute position table at this view's size (bicubic, antialiased, in float32)."""
        pos = self.pos_embed
        if pos.shape[1] == height and pos.shape[2] == width:
            return pos
        resized = F.interpolate(
            pos.permute(0, 3, 1, 2).to(torch.float32), size=(height, width), mode="bicubic",
            align_corners=False, antialias=True,
        )  # fmt: skip
        return resized.to(pos.dtype).permute(0, 2, 3, 1)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``[B, 3, S, S]`` → ``[B, C, S/64, S/64]``."""
        x = self.patch_embed(pixel_values)
        if self.pos_embed is not None:
            x = x + self.position(x.shape[1], x.shape[2])
        for layer in self.layers:
            x = layer(x)
        return self.proj(self.neck(x))


# --- the Qwen2-style encoder ----------------------------------------------------------------------
class RMSNorm(nn.Module):
    """``weight · x / rms(x)``, computed in float32 (``variance_epsilon``: the decoder's fused norm
    kernels read it under this name)."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dtype)


class RotaryEmbedding(nn.Module):
    """Default RoPE: ``cos``/``sin`` of position × inverse frequency, in the input's dtype.

    ``inv_freq`` is a float32 buffer made on the CPU even inside a meta-device build (it is not in the
    checkpoint); moving the model moves it."""

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float, device="cpu") / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(
            x.dtype
        )


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    """RoPE on ``q``/``k`` ``[B, heads, T, D]`` with ``cos``/``sin`` ``[B, T, D]`` (the decode step calls
    it by this name from the attention module's own module)."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class EncoderAttention(nn.Module):
    def __init__(self, c: EncoderConfig, layer_idx: int) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.head_dim = c.head_dim
        self.num_heads = c.num_attention_heads
        self.num_key_value_heads = c.num_key_value_heads
        self.num_key_value_groups = c.num_attention_heads // c.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = Linear(c.hidden_size, c.num_attention_heads * self.head_dim, bias=True)
        self.k_proj = Linear(c.hidden_size, c.num_key_value_heads * self.head_dim, bias=True)
        self.v_proj = Linear(c.hidden_size, c.num_key_value_heads * self.head_dim, bias=True)
        self.o_proj = Linear(c.num_attention_heads * self.head_dim, c.hidden_size, bias=False)

    def forward(
        self, x: torch.Tensor, position_embeddings, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, *position_embeddings)
        groups = self.num_key_value_groups
        if groups > 1 and attention_mask is not None:
            # A mask with ``enable_gqa`` leaves SDPA only its math kernel on CUDA (flash takes no mask, the
            # memory-efficient kernel no GQA): a quarter of the vision pass's GPU time on an H100. The
            # key/value heads repeated (t ≤ 512 tokens, so a few hundred KiB) let the fused kernel run it.
            k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
            groups = 1
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask, scale=self.scaling, enable_gqa=groups > 1
        )
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class GatedMLP(nn.Module):
    """``down(act(gate x) · up x)`` (SwiGLU with SiLU)."""

    def __init__(self, hidden: int, intermediate: int, act: str, bias: bool = False) -> None:
        super().__init__()
        self.hidden_size, self.intermediate_size = hidden, intermediate
        self.gate_proj = Linear(hidden, intermediate, bias=bias)
        self.up_proj = Linear(hidden, intermediate, bias=bias)
        self.down_proj = Linear(intermediate, hidden, bias=bias)
        self.act_fn = activation(act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class EncoderLayer(nn.Module):
    def __init__(self, c: EncoderConfig, layer_idx: int) -> None:
        super().__init__()
        self.self_attn = EncoderAttention(c, layer_idx)
        self.mlp = GatedMLP(c.hidden_size, c.intermediate_size, c.hidden_act)
        self.input_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)

    def forward(
        self, x: torch.Tensor, position_embeddings, attention_mask: torch.Tensor | None
    ) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), position_embeddings, attention_mask)
        return x + self.mlp(self.post_attention_layernorm(x))


def image_query_mask(tokens: int, image_tokens: int, device: torch.device) -> torch.Tensor:
    """Boolean ``[tokens, tokens]`` (True = may attend): image tokens see every image token, each query
    the image tokens and the queries up to itself."""
    i = torch.arange(tokens, device=device)
    causal = i[None, :] <= i[:, None]
    both_image = (i[:, None] < image_tokens) & (i[None, :] < image_tokens)
    return causal | both_image


class VisionEncoder(nn.Module):
    def __init__(self, c: EncoderConfig) -> None:
        super().__init__()
        self.config = c
        self.layers = nn.ModuleList(EncoderLayer(c, i) for i in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(c.head_dim, float(c.rope_parameters["rope_theta"]))

    def forward(self, inputs_embeds: torch.Tensor, num_patches: int) -> torch.Tensor:
        t = inputs_embeds.shape[1]
        positions = torch.arange(t, device=inputs_embeds.device)[None]
        mask = image_query_mask(t, num_patches, inputs_embeds.device)
        rope = self.rotary_emb(inputs_embeds, positions)
        x = inputs_embeds
        for layer in self.layers:
            x = layer(x, rope, mask)
        return self.norm(x)


class VisionTower(nn.Module):
    """SAM then the encoder with the view's learned queries; returns the queries' outputs."""

    def __init__(self, c: VisionConfig) -> None:
        super().__init__()
        self.config = c
        self.sam_encoder = SamEncoder(c.sam_config)
        self.vision_encoder = VisionEncoder(c.encoder_config)
        hidden = c.encoder_config.hidden_size
        self.query_768_resolution = Embedding(TILE_QUERIES, hidden)
        self.query_1024_resolution = Embedding(GLOBAL_QUERIES, hidden)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``[B, 3, S, S]`` → ``[B, (S/64)², encoder hidden]``."""
        x = self.sam_encoder(pixel_values).flatten(2).transpose(1, 2)
        b, n, _ = x.shape
        queries = self.query_768_resolution.weight if n <= TILE_QUERIES else self.query_1024_resolution.weight
        x = torch.cat([x, queries.unsqueeze(0).expand(b, -1, -1)], dim=1)
        return self.vision_encoder(x, n)[:, n:, :]


__all__ = [
    "GatedMLP",
    "RMSNorm",
    "RotaryEmbedding",
    "SamAttention",
    "SamEncoder",
    "SamLayer",
    "VisionTower",
    "activation",
    "apply_rotary_pos_emb",
    "image_query_mask",
]
