"""Drop-in quantised modules: ``QuantLinear`` (W4/W8 group-quantised, weight-only), ``Int8Linear``
(INT8 per-channel weights; W8A16, or W8A8 with ``act_bits = 8``) and ``QuantExperts`` (transformers' fused experts contract).

Why buffers, not parameters: the weights are integer codes (no gradients) and ``model.to(dtype)``
must cast only the float scales. Every module can be built empty (for loading a pre-quantised
checkpoint without ever allocating float weights) and filled by ``load_state_dict``.
"""

from __future__ import annotations

import logging

import torch
from torch import nn

from ocr_app.quant import ops  # noqa: F401  (the kernels' module; tests patch through it)
from ocr_app.quant.formats import group_size_for, pack_int4, quantize_groups, quantize_int8_per_channel
from ocr_app.quant.ops import QWeight, int8_linear, moe_experts, moe_pairs, wq_linear
from ocr_app.quant.options import KernelOptions, resolve

logger = logging.getLogger(__name__)

# Experts quantised at once: bounds float32 temporaries to ~4 experts (≈ 150 MB at full size).
EXPERT_CHUNK = 4


def _code_cols(in_features: int, bits: int) -> int:
    return in_features // 2 if bits == 4 else in_features


def _quantize_stack(
    w: torch.Tensor, bits: int, group: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q, s, m = quantize_groups(w, bits, group)
    return (pack_int4(q) if bits == 4 else q), s, m


class QuantLinear(nn.Module):
    """``nn.Linear`` replacement with a 4- or 8-bit group-quantised weight (W4A16/W8A16).

    ``input_scale_inv`` (optional, [in_features]) is AWQ's activation scale where it could not be
    folded into the previous op; it is applied inside the kernel.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bits: int = 4,
        group: int | None = None,
        bias: bool = False,
        has_input_scale: bool = False,
        dtype: torch.dtype = torch.bfloat16,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_options: KernelOptions | None = None  # None: the process default
        self.in_features, self.out_features, self.bits = in_features, out_features, bits
        self.group = group or group_size_for(in_features)
        g = in_features // self.group
        self.register_buffer(
            "qweight",
            torch.empty(1, out_features, _code_cols(in_features, bits), dtype=torch.uint8, device=device),
        )
        self.register_buffer("scales", torch.empty(1, out_features, g, dtype=dtype, device=device))
        self.register_buffer("mins", torch.empty(1, out_features, g, dtype=dtype, device=device))
        self.register_buffer("bias", torch.empty(out_features, dtype=dtype, device=device) if bias else None)
        self.register_buffer(
            "input_scale_inv",
            torch.empty(1, in_features, dtype=dtype, device=device) if has_input_scale else None,
        )

    @classmethod
    def from_float(
        cls,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        bits: int = 4,
        group: int | None = None,
        input_scale: torch.Tensor | None = None,
        dtype: torch.dtype | None = None,
    ) -> QuantLinear:
        """Quantise ``weight`` [N, K]. With ``input_scale`` s, stores Q(W·diag(s)) and s⁻¹ (exact when
        s holds powers of two, which the AWQ search guarantees)."""
        dtype = dtype or weight.dtype
        n, k = weight.shape
        mod = cls(k, n, bits, group, bias is not None, input_scale is not None, dtype, weight.device)
        w = weight.float()
        if input_scale is not None:
            w = w * input_scale.float()[None, :]
            mod.input_scale_inv.copy_((1.0 / input_scale.float())[None, :])
        codes, s, m = _quantize_stack(w[None], bits, mod.group)
        mod.qweight.copy_(codes)
        mod.scales.copy_(s)
        mod.mins.copy_(m)
        if bias is not None:
            mod.bias.copy_(bias)
        return mod

    @property
    def qw(self) -> QWeight:
        return QWeight(self.qweight, self.scales, self.mins, self.bits, self.group, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return wq_linear(x, self.qw, self.bias, self.input_scale_inv, options=self.kernel_options)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, bits={self.bits}, group={self.group}"


class Int8Linear(nn.Module):
    """``nn.Linear`` replacement with INT8 per-channel weights. ``act_bits`` 16 (default) computes in
    the activation dtype (W8A16, see ``ops.int8_linear``); 8 quantises activations per token (W8A8)."""

    act_bits = 16

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        dtype: torch.dtype = torch.bfloat16,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_options: KernelOptions | None = None  # None: the process default
        self.in_features, self.out_features = in_features, out_features
        self.register_buffer(
            "qweight", torch.empty(out_features, in_features, dtype=torch.int8, device=device)
        )
        # float32 on purpose: the epilogue multiplies in float32 and model.to(bf16) must not round it
        self.register_buffer("wscale", torch.empty(out_features, dtype=torch.float32, device=device))
        self.register_buffer("bias", torch.empty(out_features, dtype=dtype, device=device) if bias else None)

    def _load_from_state_dict(self, *args, **kwargs):
        self.__dict__.pop("_scale_cache", None)
        super()._load_from_state_dict(*args, **kwargs)

    def _apply(self, fn, recurse=True):  # keep wscale in float32 across .to(dtype)
        out = super()._apply(fn, recurse)
        if self.wscale.dtype != torch.float32:
            self.wscale = self.wscale.float()
        return out

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: torch.Tensor | None) -> Int8Linear:
        n, k = weight.shape
        mod = cls(k, n, bias is not None, weight.dtype, weight.device)
        q, s = quantize_int8_per_channel(weight)
        mod.qweight.copy_(q)
        mod.wscale.copy_(s)
        if bias is not None:
            mod.bias.copy_(bias)
        return mod

    def _scale_for(self, dtype: torch.dtype) -> torch.Tensor:
        """``wscale`` in the activation dtype, converted once (weights are fixed at inference; loading a
        state dict drops the copy)."""
        key = (dtype, self.wscale.data_ptr())
        cached = self.__dict__.get("_scale_cache")
        if cached is None or cached[0] != key:
            cached = self.__dict__["_scale_cache"] = (key, self.wscale.to(dtype))
        return cached[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.act_bits == 8:
            return int8_linear(
                x, self.qweight, self.wscale, self.bias, act_bits=8, options=self.kernel_options
            )
        return int8_linear(x, self.qweight, self._scale_for(x.dtype), self.bias, options=self.kernel_options)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, int8 w8a{self.act_bits}"


class QuantExperts(nn.Module):
    """Fused routed experts with group-quantised ``gate_up_proj`` [E, 2I, H] and ``down_proj``
    [E, H, I]; ``forward(hidden_states, top_k_index, top_k_weights)`` like transformers' experts.

    ``input_scale_inv`` [E, H] holds each expert's AWQ activation scale (experts share their input
    with the router and the shared experts, so per-expert scales cannot be folded into the norm).
    """

    def __init__(
        self,
        num_experts: int,
        hidden_dim: int,
        intermediate_dim: int,
        bits: int = 4,
        has_input_scale: bool = False,
        dtype: torch.dtype = torch.bfloat16,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.kernel_options: KernelOptions | None = None  # None: the process default
        self.num_experts, self.hidden_dim, self.intermediate_dim, self.bits = (
            num_experts,
            hidden_dim,
            intermediate_dim,
            bits,
        )
        self.group_gate_up = group_size_for(hidden_dim)
        self.group_down = group_size_for(intermediate_dim)
        e, h, i = num_experts, hidden_dim, intermediate_dim
        kw = {"device": device}
        self.register_buffer(
            "gate_up_qweight", torch.empty(e, 2 * i, _code_cols(h, bits), dtype=torch.uint8, **kw)
        )
        self.register_buffer(
            "gate_up_scales", torch.empty(e, 2 * i, h // self.group_gate_up, dtype=dtype, **kw)
        )
        self.register_buffer(
            "gate_up_mins", torch.empty(e, 2 * i, h // self.group_gate_up, dtype=dtype, **kw)
        )
        self.register_buffer("down_qweight", torch.empty(e, h, _code_cols(i, bits), dtype=torch.uint8, **kw))
        self.register_buffer("down_scales", torch.empty(e, h, i // self.group_down, dtype=dtype, **kw))
        self.register_buffer("down_mins", torch.empty(e, h, i // self.group_down, dtype=dtype, **kw))
        self.register_buffer(
            "input_scale_inv", torch.empty(e, h, dtype=dtype, **kw) if has_input_scale else None
        )

    @classmethod
    def from_float(
        cls,
        gate_up: torch.Tensor,
        down: torch.Tensor,
        bits: int = 4,
        input_scale: torch.Tensor | None = None,
        dtype: torch.dtype | None = None,
    ) -> QuantExperts:
        """Quantise fused expert weights (AWQ scales already folded, ``input_scale`` [E, H] optional).

        Works ``EXPERT_CHUNK`` experts at a time (see :meth:`fill`), so the float32 temporaries stay a
        small fraction of one layer instead of several copies of all 64 experts.
        """
        dtype = dtype or gate_up.dtype
        e, two_i, h = gate_up.shape
        mod = cls(e, h, two_i // 2, bits, input_scale is not None, dtype, gate_up.device)
        for start in range(0, e, EXPERT_CHUNK):
            end = min(e, start + EXPERT_CHUNK)
            s = None if input_scale is None else input_scale[start:end]
            mod.fill(start, gate_up[start:end], down[start:end], s)
        return mod

    def fill(
        self,
        start: int,
        gate_up: torch.Tensor,
        down: torch.Tensor,
        input_scale: torch.Tensor | None = None,
    ) -> None:
        """Quantise experts ``start … start + len(gate_up)`` into this module's buffers (any device:
        the float chunk is moved to the buffers' device first)."""
        dev = self.gate_up_qweight.device
        end = start + gate_up.shape[0]
        gu = gate_up.to(dev).float()
        if input_scale is not None:
            s = input_scale.to(dev).float()
            gu = gu * s[:, None, :]
            self.input_scale_inv[start:end].copy_(1.0 / s)
        for name, w, group in (
            ("gate_up", gu, self.group_gate_up),
            ("down", down.to(dev).float(), self.group_down),
        ):
            codes, s, m = _quantize_stack(w, self.bits, group)
            getattr(self, f"{name}_qweight")[start:end].copy_(codes)
            getattr(self, f"{name}_scales")[start:end].copy_(s)
            getattr(self, f"{name}_mins")[start:end].copy_(m)

    @property
    def gate_up(self) -> QWeight:
        return QWeight(
            self.gate_up_qweight,
            self.gate_up_scales,
            self.gate_up_mins,
            self.bits,
            self.group_gate_up,
            self.hidden_dim,
        )

    @property
    def down(self) -> QWeight:
        return QWeight(
            self.down_qweight,
            self.down_scales,
            self.down_mins,
            self.bits,
            self.group_down,
            self.intermediate_dim,
        )

    def forward(
        self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
    ) -> torch.Tensor:
        return moe_experts(
            hidden_states,
            top_k_index,
            top_k_weights,
            self.gate_up,
            self.down,
            self.input_scale_inv,
            options=self.kernel_options,
        )

    def pairs(
        self,
        hidden_states: torch.Tensor,
        top_k_index: torch.Tensor,
        top_k_weights: torch.Tensor,
        gemv_max_rows: int | None = None,
    ) -> torch.Tensor:
        """Per (token, slot) results [T, top_k, H] in float32, routing weights applied (GPU kernels;
        the graph decoder sums them together with the shared experts' output). ``gemv_max_rows``
        defaults to ``KernelOptions.decode_gemv_max_rows``."""
        t, top_k = top_k_index.shape
        options = resolve(self.kernel_options)
        gemv_max_rows = options.decode_gemv_max_rows if gemv_max_rows is None else gemv_max_rows
        y = moe_pairs(
            hidden_states,
            top_k_index,
            top_k_weights,
            self.gate_up,
            self.down,
            self.input_scale_inv,
            gemv_max_rows,
            options=options,
        )
        return y.view(t, top_k, self.hidden_dim)

    def extra_repr(self) -> str:
        return (
            f"experts={self.num_experts}, hidden={self.hidden_dim}, inter={self.intermediate_dim}, "
            f"bits={self.bits}, groups=({self.group_gate_up}, {self.group_down})"
        )
