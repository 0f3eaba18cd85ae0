"""SAM's convolutions as matrix products on CUDA: no cuDNN plan per input shape.

Why: cuDNN picks an algorithm for every new input shape of a convolution, on the host: 4-60 ms each on
an H200 (``bench/bench_first_calls.py``: the 3x3 neck conv 60 ms at one view and again 34 ms at eight;
the 16x16 patch embedding 111 ms), and SAM's convolution inputs follow how many views a vision batch
holds. The first document after a load spent 0.35 s in 24 such first calls (``profile_firstdoc.py``)
and every new batch composition paid again. The same convolutions as matrix products go to cuBLAS, which
has no per-shape search worth the name (0.2-5 ms), and the patch embedding is faster that way too
(0.07 vs 0.30 ms at one view, 0.16 vs 1.85 ms at seven):

* the patch embedding (kernel = stride, no padding): non-overlapping patches are a reshape, then one GEMM;
* a 1x1 convolution: one GEMM over channels;
* a 3x3 convolution (neck, downsampling): ``unfold`` (im2col) then one GEMM per chunk of views, the chunk
  sized so the unfolded block stays under ``IM2COL_BYTES``.

Results equal the convolutions up to rounding (fp32 accumulation in both). Applied to CUDA models (or any
device with ``any_device``, for tests); ``enabled=False`` restores the modules' own forwards.
"""

from __future__ import annotations

import logging
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

logger = logging.getLogger(__name__)

IM2COL_BYTES = 64 * 2**20  # largest unfolded block of one 3x3 convolution's chunk of views


def patch_embed_forward(self: Any, pixel_values: torch.Tensor) -> torch.Tensor:
    """Drop-in for the SAM patch embedding's forward: ``[N, C, H, W]`` → ``[N, H/k, W/k, hidden]``."""
    conv = self.projection
    k = conv.kernel_size[0]
    n, c, h, w = pixel_values.shape
    x = pixel_values.to(conv.weight.dtype)
    patches = x.view(n, c, h // k, k, w // k, k).permute(0, 2, 4, 1, 3, 5).reshape(-1, c * k * k)
    weight = conv.weight.view(conv.out_channels, -1)
    import torch

    out = torch.addmm(conv.bias, patches, weight.t()) if conv.bias is not None else patches @ weight.t()
    return out.view(n, h // k, w // k, conv.out_channels)


def conv_forward(self: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    """Drop-in for ``nn.Conv2d.forward`` of a 1x1 or 3x3 convolution (no groups, no dilation)."""
    import torch
    import torch.nn.functional as F

    n, c, h, w = x.shape
    weight = self.weight.view(self.out_channels, -1)
    kh, kw = self.kernel_size
    if (kh, kw) == (1, 1) and self.stride == (1, 1) and self.padding in ((0, 0), "valid"):
        out = x.permute(0, 2, 3, 1).reshape(-1, c) @ weight.t()
        if self.bias is not None:
            out = out + self.bias
        return out.view(n, h, w, -1).permute(0, 3, 1, 2)
    sh, sw = self.stride
    ph, pw = self.padding
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    per_view = c * kh * kw * ho * wo * x.element_size()
    chunk = max(1, IM2COL_BYTES // max(per_view, 1))
    outs = []
    for start in range(0, n, chunk):
        cols = F.unfold(x[start : start + chunk], (kh, kw), padding=(ph, pw), stride=(sh, sw))
        y = weight @ cols  # [out, C·k·k] @ [views, C·k·k, L] → [views, out, L]
        if self.bias is not None:
            y = y + self.bias.view(1, -1, 1)
        outs.append(y.view(-1, self.out_channels, ho, wo))
    return outs[0] if len(outs) == 1 else torch.cat(outs)


def _convertible(conv: Any) -> bool:
    return (
        conv.groups == 1
        and conv.dilation == (1, 1)
        and conv.padding_mode == "zeros"
        and isinstance(conv.padding, tuple)
        and conv.kernel_size in ((1, 1), (3, 3))
    )


def sam_encoders(model: Any) -> list[Any]:
    """The SAM encoders of ``model``: modules with a patch embedding whose projection is a
    non-overlapping convolution (the class name is not asked: transformers' and the wing's own models)."""
    out = []
    for module in model.modules():
        embed = getattr(module, "patch_embed", None)
        proj = getattr(embed, "projection", None)
        if (
            proj is not None
            and tuple(proj.kernel_size) == tuple(proj.stride)
            and tuple(proj.padding) == (0, 0)
        ):
            out.append(module)
    return out


def matmul_convs(model: Any, enabled: bool = True, *, any_device: bool = False) -> int:
    """Give the SAM encoders' patch embedding and 1x1/3x3 convolutions of a CUDA ``model`` the matmul
    forwards (in place); ``enabled=False`` restores their own. Returns how many modules were changed."""
    from torch import nn

    count = 0
    for encoder in sam_encoders(model):
        embed = encoder.patch_embed
        convs = [m for m in encoder.modules() if isinstance(m, nn.Conv2d) and m is not embed.projection]
        on_cuda = embed.projection.weight.is_cuda
        for module in (embed, *convs):
            module.__dict__.pop("forward", None)
        if not enabled or not (on_cuda or any_device):
            continue
        embed.forward = types.MethodType(patch_embed_forward, embed)
        count += 1
        for conv in convs:
            if _convertible(conv):
                conv.forward = types.MethodType(conv_forward, conv)
                count += 1
    if count:
        logger.info("SAM convolutions as matrix products: %d modules", count)
    return count


__all__ = ["IM2COL_BYTES", "conv_forward", "matmul_convs", "patch_embed_forward", "sam_encoders"]
