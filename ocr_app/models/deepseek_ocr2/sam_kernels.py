"""Fused SAM layer for the CUDA vision pass: the layer's copies and small elementwise ops as four kernels.

Why: at 64 pages the vision pass is ~40 % of GPU time, and on an H200 most of SAM's share was not the
GEMMs or the attention but generic strided copies around them (window partition and unpartition,
qkv permutes, the inputs of the rel-pos einsums, the cats and pads of the augmented attention): four
default pages spent 45 of SAM's 105 ms in them. ``torch.compile`` of the layers fused them (57 ms) but
costs ~28 s per process, more than the whole cold-start budget; these hand-written Triton kernels
compile once into Triton's on-disk cache. What each kernel replaces (``sam_triton``):

* ``ln_partition``: LayerNorm 1 + zero padding to whole windows + window partition, one pass
  (padding tokens are 0, as ``F.pad`` after the norm makes them);
* ``augment_qkv``: from the qkv linear's output (strided read), the folded-bias attention's inputs
  (``sam_attention._augmented_attention``) in one pass, the two rel-pos einsums included (each image
  row's tokens share their height table, each column's their width table, so both are small ``tl.dot``):
  ``q' = [q·scale, rel_h, rel_w, 0]``, ``k' = [k, onehot_h, onehot_w, 0]``, ``v' = [v, 0]``;
* ``merge_heads``: the attention output's first ``head_dim`` columns back to ``[views, T, heads·C]``;
* ``add_ln``: window unpartition + crop + residual add + LayerNorm 2 (global layers: add + norm).

The linears, the MLP and the attention core stay cuBLAS / cuDNN. Results equal transformers' layer up to
rounding (reduction orders differ). CPU models keep the unfused path; the tests run these kernels on the
CPU under ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import functools
import logging
import types
from typing import TYPE_CHECKING, Any

from ocr_app.models.deepseek_ocr2.decoding.kernels import available  # the decoder's Triton check, one place

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

_FORCE = "_ocr_app_fused_any_device"  # tests: run the kernels on CPU tensors (Triton's interpreter)
# False: values zero-padded to the query's head size (flash attention needs equal sizes). True hands
# SDPA values of the plain head size (a half to a third of the value bytes and of the P·V work), in a
# token-major layout (no merge copy if the backend returns that layout), which only some backends
# take: ``bench/bench_vision.py`` measures it as the variant ``fused_narrow_v``.
NARROW_V = False


@functools.cache
def _k() -> Any:
    from ocr_app.models.deepseek_ocr2 import sam_triton

    return sam_triton


def _launch(kernel: Any, grid: tuple, *args: Any, **kwargs: Any) -> None:
    """Triton's own launch path, through the project's one launch point (``quant.launch``: the kernel
    warm-up collects launches there)."""
    from ocr_app.quant.launch import launch

    launch(kernel, grid, *args, fast=False, **kwargs)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


MERGE_TOKENS = 32  # tokens per merge_heads program


def _rows_per_program(block_c: int) -> int:
    return max(1, 4096 // block_c)


# --- launchers ---------------------------------------------------------------------------------------
def ln_partition(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float, window: int):
    """LayerNorm of ``x`` [B, H, W, C] (any strides) cut into zero-padded windows
    [B·nWin, window, window, C], as transformers' ``window_partition(layer_norm1(x))``."""
    import torch

    k = _k()
    b, h, w, c = x.shape
    n_wh, n_ww = _cdiv(h, window), _cdiv(w, window)
    out = torch.empty(b * n_wh * n_ww, window, window, c, dtype=x.dtype, device=x.device)
    n_rows = out.numel() // c
    block_c = k.next_pow2(c)
    rows = _rows_per_program(block_c)
    _launch(
        k.ln_partition, (_cdiv(n_rows, rows),),
        x, weight, bias, out, n_rows, h, w, n_wh, n_ww, *x.stride(), float(eps),
        C=c, WS=window, ROWS=rows, BLOCK_C=block_c,
    )  # fmt: skip
    return out


def add_ln(
    attn_out: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    window: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(h, layer_norm(h))`` with ``h = residual + unpartition(attn_out)``: ``residual`` [B, H, W, C]
    (any strides); ``attn_out`` is windows [B·nWin, window, window, C] (``window > 0``, padding cropped)
    or [B, H, W, C] (``window == 0``)."""
    import torch

    k = _k()
    b, h, w, c = residual.shape
    attn_out = attn_out.contiguous()
    n_wh, n_ww = (_cdiv(h, window), _cdiv(w, window)) if window > 0 else (1, 1)
    hidden = torch.empty(b, h, w, c, dtype=residual.dtype, device=residual.device)
    normed = torch.empty_like(hidden)
    n_rows = b * h * w
    block_c = k.next_pow2(c)
    rows = _rows_per_program(block_c)
    _launch(
        k.add_ln, (_cdiv(n_rows, rows),),
        attn_out, residual, weight, bias, hidden, normed, n_rows, h, w, n_wh, n_ww, *residual.stride(),
        float(eps), C=c, WS=window, ROWS=rows, BLOCK_C=block_c,
    )  # fmt: skip
    return hidden, normed


def augmented_width(head_dim: int, height: int, width: int) -> int:
    """Head size of the folded-bias attention: ``head_dim + H + W`` rounded up to a multiple of 8."""
    d = head_dim + height + width
    return d + (-d % 8)


def augment_config(height: int, width: int) -> dict[str, int]:
    """``augment_qkv``'s tile sizes and warps for an H×W view (one place: the launcher and the sm_90
    compile check in the tests use it)."""
    k = _k()
    hp, wp = max(16, k.next_pow2(height)), max(16, k.next_pow2(width))  # tl.dot needs 16 on each side
    # tokens per chunk: 32 (8 warps) keeps a 64-wide view's tiles in registers: ~80 per thread on
    # sm_90, no spills (tests compile it with Triton's toolchain, no GPU needed)
    bt = min(32, max(hp, wp))
    return {"HP": hp, "WP": wp, "BT": bt, "PADP": 32, "num_warps": 4 if bt <= 16 else 8}


def augment_qkv(
    qkv: torch.Tensor,
    table_h: torch.Tensor,
    table_w: torch.Tensor,
    heads: int,
    scale: float,
    *,
    narrow_v: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The folded-bias attention's ``(q', k', v')``, each [views, heads, H·W, D'], from the qkv linear's
    output [views, H, W, 3·C] and the rel-pos tables [H, H, C/heads], [W, W, C/heads]
    (``sam_attention._augmented_attention`` builds the same tensors with torch ops), contiguous.
    ``narrow_v``: ``v'`` without the zero padding ([…, C/heads]), and all three laid out token-major
    ([views, T, heads, D] in memory), so that an attention kernel that takes a value head size unlike
    the query's can return its output already in the merged-heads layout."""
    import torch

    k = _k()
    views, h, w, c3 = qkv.shape
    c = c3 // 3
    hd = c // heads
    if hd & (hd - 1):
        raise ValueError(f"head size {hd} is not a power of two")
    t = h * w
    qkv = qkv.reshape(views, t, c3)
    if qkv.stride(-1) != 1:
        qkv = qkv.contiguous()
    table_h, table_w = table_h.contiguous(), table_w.contiguous()
    dp = augmented_width(hd, h, w)
    vw = hd if narrow_v else dp

    def alloc(width: int) -> torch.Tensor:
        if narrow_v:
            return torch.empty(views, t, heads, width, dtype=qkv.dtype, device=qkv.device).transpose(1, 2)
        return torch.empty(views, heads, t, width, dtype=qkv.dtype, device=qkv.device)

    q, kk, v = alloc(dp), alloc(dp), alloc(vw)
    prec = "ieee" if qkv.dtype == torch.float32 else "tf32"  # 16-bit inputs are exact in TF32
    _launch(
        k.augment_qkv, (views, heads, max(h, w)), qkv, table_h, table_w, q, kk, v, h, w, dp, vw, float(scale),
        qkv.stride(0), qkv.stride(1), table_h.stride(0), table_h.stride(1), table_w.stride(0), table_w.stride(1),
        *q.stride()[:3], *v.stride()[:3],
        C=c, HD=hd, PREC=prec, **augment_config(h, w),
    )  # fmt: skip
    return q, kk, v


def merge_heads(out: torch.Tensor, head_dim: int) -> torch.Tensor:
    """[views, heads, T, D'] (any strides) → [views, T, heads·head_dim], the first ``head_dim`` columns;
    a view, no copy, when ``out`` already is that layout in memory."""
    import torch

    views, heads, t, width = out.shape
    c = heads * head_dim
    if width == head_dim and out.transpose(1, 2).is_contiguous():
        return out.transpose(1, 2).reshape(views, t, c)
    k = _k()
    if out.stride(-1) != 1:
        out = out.contiguous()
    merged = torch.empty(views, t, c, dtype=out.dtype, device=out.device)
    _launch(
        k.merge_heads, (views, heads, _cdiv(t, MERGE_TOKENS)),
        out, merged, t, heads, out.stride(0), out.stride(1), out.stride(2), C=c, HD=head_dim, BT=MERGE_TOKENS,
    )  # fmt: skip
    return merged


# --- the fused layer ---------------------------------------------------------------------------------
def fused_attention(attn: Any, windows: torch.Tensor) -> torch.Tensor:
    """SAM attention (rel-pos bias folded into q·k) on ``windows`` [views, H, W, C] → [views, H, W, C]."""
    import torch.nn.functional as F

    from ocr_app.models.deepseek_ocr2.sam_attention import _rel_tables

    views, h, w, c = windows.shape
    heads = attn.num_attention_heads
    qkv = attn.qkv(windows)
    table_h, table_w = _rel_tables(attn, h, w)
    q, k, v = augment_qkv(qkv, table_h, table_w, heads, attn.scale, narrow_v=NARROW_V)
    out = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    merged = merge_heads(out, c // heads)
    return attn.proj(merged.view(views, h, w, c))


def _runs_fused(layer: Any, x: torch.Tensor) -> bool:
    """CUDA inference only: the kernels have no backward, so a pass that records gradients keeps
    transformers' layer."""
    import torch

    if not (x.is_cuda or layer.__dict__.get(_FORCE)) or x.numel() == 0:  # no views: nothing to launch
        return False
    return not (torch.is_grad_enabled() and (x.requires_grad or layer.layer_norm1.weight.requires_grad))


def _fused_layer_forward(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
    """Drop-in for ``DeepseekOcr2SamVisionLayer.forward`` (same output up to rounding)."""
    if not _runs_fused(self, hidden_states):
        return type(self).forward(self, hidden_states)
    import torch

    if hidden_states.is_cuda and hidden_states.device.index != torch.cuda.current_device():
        with torch.cuda.device(hidden_states.device):  # Triton launches on the thread's current GPU
            return _fused_layer(self, hidden_states)
    return _fused_layer(self, hidden_states)


def _fused_layer(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
    ln1, ln2, attn, window = self.layer_norm1, self.layer_norm2, self.attn, self.window_size
    if window > 0:
        x = ln_partition(hidden_states, ln1.weight, ln1.bias, ln1.eps, window)
    else:
        x = ln1(hidden_states)
    x = fused_attention(attn, x) if attn.use_rel_pos else attn(x)[0]
    hidden, normed = add_ln(x, hidden_states, ln2.weight, ln2.bias, ln2.eps, window)
    return hidden + self.mlp(normed)


def is_fused(model: Any) -> bool:
    """Whether ``model``'s SAM layers run the fused forward."""
    return any(getattr(m.__dict__.get("forward"), "__func__", None) is _fused_layer_forward
               for m in _sam_layers(model))  # fmt: skip


# SAM layer classes by name: transformers' and the native one (``native_vision``); no import of either.
SAM_LAYER_CLASSES = frozenset({"DeepseekOcr2SamVisionLayer", "SamLayer"})


def _sam_layers(model: Any) -> list:
    return [m for m in model.modules() if any(c.__name__ in SAM_LAYER_CLASSES for c in type(m).__mro__)]


def fuse_sam_layers(model: Any, enabled: bool = True, *, any_device: bool = False) -> int:
    """Give every SAM layer of a CUDA ``model`` the fused forward (in place); ``enabled=False`` restores
    transformers' own. ``any_device``: also on CPU (tests, with ``TRITON_INTERPRET=1``).
    Returns the number of layers fused."""
    layers = _sam_layers(model)
    count = 0
    for layer in layers:
        layer.__dict__.pop("forward", None)
        layer.__dict__.pop(_FORCE, None)
        if not enabled:
            continue
        on_cuda = layer.layer_norm1.weight.is_cuda
        head_dim = layer.layer_norm1.normalized_shape[0] // layer.attn.num_attention_heads
        if not (on_cuda or any_device) or head_dim & (head_dim - 1):  # the kernels tile a head: 2^k
            continue
        if not available():
            logger.warning("Triton is not importable: the SAM layers stay unfused")
            return 0
        layer.forward = types.MethodType(_fused_layer_forward, layer)
        if any_device:
            layer.__dict__[_FORCE] = True
        count += 1
    if layers:
        logger.info("SAM layers fused: %d of %d", count, len(layers))
    return count
