"""Integer weight formats: group size rule, 4/8-bit group quantisation, INT8 per-channel.

Why a "split-half" 4-bit layout: byte ``j`` of a row holds input channel ``j`` in its low nibble and
channel ``j + K/2`` in its high nibble. A kernel then reads one byte tile and feeds two independent
K-tiles to the dot product without any interleave shuffle, and every K-tile of ``BLOCK_K`` channels
stays inside one quantisation group (see ``kernel_block_k``), so it needs one scale per row and tile.

Asymmetric min/scale form ``w ≈ q * scale + min`` (q in 0..2^bits-1) is AWQ's zero-point format with
the zero folded into ``min``: one fused multiply-add per weight when dequantising.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

MAX_GROUP = 128


def group_size_for(in_features: int, max_group: int = MAX_GROUP) -> int:
    """Group size rule: the largest power of two ≤ ``max_group`` that divides ``in_features``.

    Why: 128 is the default (AWQ g128), but tiny test models (64, 32 wide) and odd widths such as an
    ``intermediate_size`` of 6848 = 64·107 need a smaller group so every group is full.
    A width must be a multiple of 16 (two 8-channel halves, tensor-core tiles).
    """
    if in_features % 16:
        raise ValueError(f"in_features={in_features} must be a multiple of 16 for group quantisation")
    group = max_group
    while in_features % group:
        group //= 2
    return group


def kernel_unroll(in_features: int, block_k: int, cap: int = 8) -> int:
    """K-tiles per unrolled GEMV iteration: the largest divisor of the tile count that is ≤ ``cap``."""
    tiles = (in_features // 2) // block_k
    return max(d for d in range(1, cap + 1) if tiles % d == 0)


def kernel_block_k(in_features: int, group: int, cap: int = 64) -> int:
    """Channels per K-tile in the kernels: divides the group and half the width, so no tile straddles
    a group and the high-nibble half starts on a tile boundary."""
    block = cap
    while block > 1 and (group % block or (in_features // 2) % block):
        block //= 2
    return block


def quantize_groups(
    w: torch.Tensor, bits: int, group: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Round-to-nearest asymmetric group quantisation of ``w`` [..., N, K] (any leading dims).

    Returns integer codes (uint8, same shape as ``w``), scales and mins [..., N, K // group] in float32.
    """
    import torch

    qmax = (1 << bits) - 1
    shape = w.shape
    wg = w.float().reshape(*shape[:-1], shape[-1] // group, group)
    wmin = wg.amin(-1)
    wmax = wg.amax(-1)
    scale = ((wmax - wmin) / qmax).clamp(min=1e-8)
    q = torch.round((wg - wmin.unsqueeze(-1)) / scale.unsqueeze(-1)).clamp_(0, qmax)
    return q.to(torch.uint8).reshape(shape), scale, wmin


def dequantize_groups(q: torch.Tensor, scale: torch.Tensor, wmin: torch.Tensor, group: int) -> torch.Tensor:
    """Inverse of :func:`quantize_groups` in float32 (codes unpacked, shape [..., N, K])."""
    shape = q.shape
    qg = q.float().reshape(*shape[:-1], shape[-1] // group, group)
    return (qg * scale.float().unsqueeze(-1) + wmin.float().unsqueeze(-1)).reshape(shape)


def fake_quantize(w: torch.Tensor, bits: int, group: int) -> torch.Tensor:
    """Quantise then dequantise (float32): what the model computes with, used by the AWQ search."""
    q, s, m = quantize_groups(w, bits, group)
    return dequantize_groups(q, s, m, group)


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """Pack 4-bit codes [..., K] into bytes [..., K/2] in the split-half layout."""
    half = q.shape[-1] // 2
    return (q[..., :half] | (q[..., half:] << 4)).contiguous()


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`pack_int4`."""
    import torch

    return torch.cat([packed & 0xF, packed >> 4], dim=-1)


def quantize_int8_per_channel(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-channel INT8: ``w ≈ q * scale[:, None]``, q in -127..127."""
    import torch

    scale = (w.float().abs().amax(-1) / 127.0).clamp(min=1e-8)
    q = torch.round(w.float() / scale.unsqueeze(-1)).clamp_(-127, 127).to(torch.int8)
    return q, scale


def quantize_rows_int8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic symmetric per-row (per-token) INT8 of activations [M, K]: the reference math the Triton
    kernel reproduces."""
    import torch

    scale = (x.float().abs().amax(-1) / 127.0).clamp(min=1e-8)
    q = torch.round(x.float() / scale.unsqueeze(-1)).clamp_(-127, 127).to(torch.int8)
    return q, scale
