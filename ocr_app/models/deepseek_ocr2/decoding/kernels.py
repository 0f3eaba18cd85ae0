"""Fused Triton kernels for the decode step (GPU only; the eager module path is the reference).

Why: a decode step of the full model is ~950 small kernels when it calls the model's modules one op at a
time (RMSNorm alone is 8 elementwise kernels, RoPE 10, the grouped_mm experts path ~18 with a radix
sort), and on an H200 each costs 2–5 µs whatever its size: the step is bound by kernel count, not by
memory. These kernels fold each of those groups into one launch:

* ``add_rmsnorm``: residual add + RMSNorm (HF's order and bf16 roundings);
* ``rope_kv``: RoPE on q and k (bit-exact bf16 emulation of ``apply_rotary_pos_emb``) and the K/V write
  into the slot cache at each row's position;
* ``decode_attention``: split-K attention of one token per row over its slot's keys, lengths read on the
  device (no mask, no per-shape plan: one CUDA graph per batch serves every length);
* ``route``: fp32 router logits (cuBLAS), then softmax, greedy top-k and routed scaling in one kernel;
* ``moe_experts``: routed experts without sorting: one program per (expert, column block) that exits at
  once when no token picked the expert, otherwise runs all its tokens through ``tl.dot`` (gate/up +
  SiLU·up, then down · routing weight); per-(token, slot) results are summed in fp32 like transformers
  and added to the shared experts' output in one more kernel.
* quantised experts (``ocr_app.quant``'s ``QuantExperts``) keep their own W4 kernels for the experts
  (``pairs``); the step still fuses routing and the combine with the shared experts around them.

All launches are host-sync free (graph-capturable). Results match the module path to bf16 rounding, not
bit for bit (reduction orders differ); ``bench/bench_decode.py`` reports where greedy tokens diverge.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def available() -> bool:
    """Whether Triton can be imported (the kernels then run on CUDA tensors)."""
    try:
        import triton  # noqa: F401
    except Exception:  # pragma: no cover - depends on the install
        return False
    return True


def _launch(kernel: Any, grid: tuple, *args: Any, **kwargs: Any) -> None:
    """Triton's own launch path (these run inside CUDA graphs), through the project's one launch point
    (``quant.launch``: the kernel warm-up collects launches there)."""
    from ocr_app.quant.launch import launch

    launch(kernel, grid, *args, fast=False, **kwargs)


def _collecting() -> bool:
    from ocr_app.quant.launch import collecting_now

    return collecting_now()


@functools.cache
def _k() -> Any:
    from ocr_app.models.deepseek_ocr2.decoding import triton_ops as decode_triton

    return decode_triton


# --- launchers ---------------------------------------------------------------------------------------
def add_rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None):
    """``(norm(residual + x), residual + x)``; without ``residual``: ``(norm(x), x)``. Rows = all but last dim."""
    import torch

    k = _k()
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    out = torch.empty_like(x2)
    res = torch.empty_like(x2) if residual is not None else x2
    r2 = residual.reshape(-1, n) if residual is not None else x2
    _launch(
        k.add_rmsnorm, (x2.shape[0],), x2, r2, weight, out, res, n, float(eps),
        HAS_RES=residual is not None, BLOCK=k.next_pow2(n),
    )  # fmt: skip
    return out.view(x.shape), res.view(x.shape)


def rope_kv(q, k, v, cos, sin, pos, k_cache, v_cache, heads: int, kv_heads: int, head_dim: int):
    """Rotated q as ``[B, heads, 1, head_dim]``; rotated k and v written to the caches at ``pos``.

    ``q``/``k``/``v`` are ``[B, heads·head_dim]`` rows (any row stride); caches ``[slots, kv, L, D]``.
    """
    import torch

    kk = _k()
    b = q.shape[0]
    qo = torch.empty((b, heads, 1, head_dim), dtype=q.dtype, device=q.device)
    _launch(
        kk.rope_kv, (b, heads),
        q, k, v, cos, sin, pos, qo, k_cache, v_cache,
        q.stride(0), k.stride(0), v.stride(0),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        H=heads, HKV=kv_heads, D=head_dim,
    )  # fmt: skip
    return qo


# split-K decode attention: at most this many key chunks per row, each at least ATTN_MIN_CHUNK keys
ATTN_SPLITS = 32
ATTN_MIN_CHUNK = 256
ATTN_BLOCK = 64


def attention_fits(heads: int, kv_heads: int, head_dim: int) -> bool:
    """Whether ``decode_attention`` takes this geometry (a power-of-two head size, whole GQA groups)."""
    return head_dim >= 16 and head_dim & (head_dim - 1) == 0 and heads % kv_heads == 0


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    pos: torch.Tensor,
    scale: float,
    max_len: int,
    min_chunk: int = ATTN_MIN_CHUNK,
) -> torch.Tensor:
    """One query token per row over its own slot's keys ``[0, pos[row]]``: ``[B, heads·head_dim]``.

    ``q`` is ``[B, heads, 1, head_dim]`` (``rope_kv``'s), caches ``[slots, kv_heads, L, head_dim]``;
    ``max_len`` bounds every row's length (the grid's split count; splits past a row's own length exit at
    once). Why not SDPA: cuDNN's attention builds an execution plan per new shape (65–840 ms each on an
    H200), paid by every CUDA graph of a new (batch, length) bucket in the first document, and it needs a
    length mask built each step. Here lengths come from ``pos`` on the device, so one graph serves every
    length, and each row reads only its own keys (flash-decoding: key chunks in parallel, merged by their
    log-sum-exp). Neither kernel's binary depends on the batch, the length or ``max_len``.
    """
    import torch

    kk = _k()
    b, heads, _, d = q.shape
    kv_heads = k_cache.shape[1]
    per = -(-max(1, max_len) // ATTN_SPLITS)
    chunk = max(min_chunk, -(-per // ATTN_BLOCK) * ATTN_BLOCK)
    splits = -(-max(1, max_len) // chunk)
    part = torch.empty((b, heads, ATTN_SPLITS, d), dtype=torch.float32, device=q.device)
    lse = torch.empty((b, heads, ATTN_SPLITS), dtype=torch.float32, device=q.device)
    _launch(
        kk.attn_partial, (b, heads, splits),
        q, k_cache, v_cache, pos, part, lse,
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), chunk, float(scale),
        H=heads, GROUP=heads // kv_heads, D=d, NSP=ATTN_SPLITS, BLOCK_N=ATTN_BLOCK,
    )  # fmt: skip
    out = torch.empty((b, heads * d), dtype=q.dtype, device=q.device)
    _launch(kk.attn_reduce, (b, heads), part, lse, pos, out, chunk, H=heads, D=d, NSP=ATTN_SPLITS)
    return out


def route(x: torch.Tensor, weight: torch.Tensor, top_k: int, scale: float):
    """Greedy top-k routing: (indices [T, k] int64, weights [T, k] fp32) from fp32 router logits.

    The logits are transformers' own fp32 ``F.linear`` (one cuBLAS call spreads the 64×hidden weight
    read over the whole GPU; a one-program-per-token kernel took 47 µs per layer on an H200).
    """
    import torch
    import torch.nn.functional as F

    kk = _k()
    t = x.shape[0]
    e = weight.shape[0]
    logits = F.linear(x.to(torch.float32), weight.to(torch.float32))
    idx = torch.empty((t, top_k), dtype=torch.long, device=x.device)
    wt = torch.empty((t, top_k), dtype=torch.float32, device=x.device)
    _launch(kk.route_topk, (t,), logits, idx, wt, float(scale), e, TOPK=top_k, EP=kk.next_pow2(e))
    if _collecting():  # a dry run: later ops may index with the routing (the sorted expert GEMM does)
        idx.zero_()
        wt.zero_()
    return idx, wt


def moe_experts(
    x: torch.Tensor,
    gate_up: torch.Tensor,
    down: torch.Tensor,
    idx: torch.Tensor,
    wt: torch.Tensor,
    shared: torch.Tensor | None = None,
):
    """Routed experts for ``x`` [T, hidden]: Σ_j w[t,j] · down_e(silu(gate_e x) · up_e x), summed in fp32.

    With ``shared`` (the shared experts' output) the result is ``routed + shared`` as transformers adds it.
    """
    import torch

    kk = _k()
    t, hidden = x.shape
    e, two_i, _ = gate_up.shape
    inter = two_i // 2
    top_k = idx.shape[1]
    ieee = x.dtype == torch.float32
    bm = 16 if t <= 16 else (32 if t <= 32 else 64)
    kp, tkp = kk.next_pow2(top_k), kk.next_pow2(t * top_k)
    h = torch.empty((t, top_k, inter), dtype=x.dtype, device=x.device)
    bn = 32
    _launch(
        kk.moe_up, (e, -(-inter // bn)),
        x, gate_up, idx, h, t, hidden, inter, TOPK=top_k, KP=kp, TKP=tkp, BM=bm, BN=bn, BK=128, IEEE=ieee,
    )  # fmt: skip
    y = torch.empty((t, top_k, hidden), dtype=torch.float32, device=x.device)
    _launch(
        kk.moe_down, (e, -(-hidden // bn)),
        h, down, idx, wt, y, t, inter, hidden, TOPK=top_k, KP=kp, TKP=tkp, BM=bm, BN=bn, BK=128, IEEE=ieee,
    )  # fmt: skip
    if shared is None:
        return y.sum(dim=1).to(x.dtype)
    return combine(y, shared)


def combine(y: torch.Tensor, shared: torch.Tensor) -> torch.Tensor:
    """``Σ_slots y[t, j]`` (float32, rounded to the model dtype) ``+ shared[t]``, as transformers adds them."""
    import torch

    kk = _k()
    t, top_k, hidden = y.shape
    out = torch.empty_like(shared).reshape(t, hidden)
    _launch(
        kk.moe_combine, (t, -(-hidden // 256)),
        y.contiguous(), shared.reshape(t, hidden).contiguous(), out, hidden, TOPK=top_k, BLOCK=256,
    )  # fmt: skip
    return out


def quant_moe_experts(
    x: torch.Tensor, experts: Any, idx: torch.Tensor, wt: torch.Tensor, shared: torch.Tensor
):
    """Routed quantised experts (their own kernels, ``experts.pairs``) + the shared experts' output."""
    return combine(experts.pairs(x, idx, wt), shared)


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """Row argmax (first index among ties, like ``torch.argmax``) in two passes over the whole GPU.

    Why: ``torch.argmax`` reduces one 129k-wide row with a single block (28 µs on an H200 at batch 1).
    """
    import torch

    kk = _k()
    rows, vocab = logits.shape
    block = 4096
    nb = -(-vocab // block)
    vals = torch.empty((rows, nb), dtype=logits.dtype, device=logits.device)
    idx = torch.empty((rows, nb), dtype=torch.int32, device=logits.device)
    _launch(kk.argmax_partial, (rows, nb), logits, vals, idx, vocab, nb, BLOCK=block)
    out = torch.empty(rows, dtype=torch.long, device=logits.device)
    _launch(kk.argmax_final, (rows,), vals, idx, out, nb, vocab, NBP=kk.next_pow2(nb))
    return out


def ngram_ban_(logits, seq, kv_len, guard_start, spec: Any, exempt) -> None:
    """In place on ``logits`` [B, V]: ``guard.ban_repeated_ngrams_`` for rows [0, B) whose
    sequence is ``kv_len + 1`` tokens long, in one launch."""
    import torch

    if not spec.enabled:
        return
    kk = _k()
    b, vocab = logits.shape
    n, w = spec.ngram_size, spec.window
    ex = exempt if exempt is not None else torch.full((1,), -1, dtype=torch.long, device=logits.device)
    _launch(
        kk.ngram_ban, (b,),
        logits, seq, kv_len, guard_start, ex, vocab, seq.shape[1], ex.numel(),
        N=n, W=w, JP=kk.next_pow2(w - n + 1), CP=kk.next_pow2(max(1, n - 1)), EXP=kk.next_pow2(ex.numel()),
    )  # fmt: skip


def finish_token(nxt, seq, kv_len, gen_count, max_new, stop_code, done, active, eos, rows: int) -> None:
    """``step.DecodeStep.take_token``'s bookkeeping for rows [0, rows) in one launch. The block covers
    every slot (``seq``'s rows), not ``rows``: one binary for every batch bucket (a single program of
    at most 64 masked lanes either way)."""
    kk = _k()
    _launch(
        kk.finish_token, (1,),
        nxt, seq, kv_len, gen_count, max_new, stop_code, done, active, eos, eos.numel(), seq.shape[1], rows,
        BLOCK=kk.next_pow2(seq.shape[0]), EP=kk.next_pow2(eos.numel()),
    )  # fmt: skip


def fusable_moe(mlp: Any) -> bool:
    """Whether ``mlp`` is transformers' DeepSeek MoE block with plain fused 3-D expert weights.

    Quantized or otherwise replaced experts (another class, no 3-D ``gate_up_proj``) keep their own
    forward: the step then calls the module.
    """
    import torch

    experts = getattr(mlp, "experts", None)
    gate = getattr(mlp, "gate", None)
    if experts is None or gate is None or getattr(mlp, "shared_experts", None) is None:
        return False
    gu, dn = getattr(experts, "gate_up_proj", None), getattr(experts, "down_proj", None)
    ok = (
        isinstance(gu, torch.nn.Parameter)
        and isinstance(dn, torch.nn.Parameter)
        and gu.dim() == 3
        and dn.dim() == 3
        and gu.dtype in (torch.bfloat16, torch.float16, torch.float32)
        and getattr(gate, "topk_method", "greedy") == "greedy"
        and not getattr(experts, "has_bias", False)
        and getattr(experts, "is_transposed", False) is False
        and getattr(experts, "is_concatenated", True) is True
        and type(experts.act_fn).__name__ in ("SiLU", "SiLUActivation")
    )
    return bool(ok)


def moe_kind(mlp: Any) -> str | None:
    """How the fused step runs ``mlp``: ``"float"`` (fused expert kernels on its 3-D weights),
    ``"quant"`` (fused routing and combine around quantised experts that offer ``pairs``) or None (the
    module's own forward)."""
    if fusable_moe(mlp):
        return "float"
    experts, gate = getattr(mlp, "experts", None), getattr(mlp, "gate", None)
    if experts is None or gate is None or getattr(mlp, "shared_experts", None) is None:
        return None
    w = getattr(gate, "weight", None)
    ok = (
        callable(getattr(experts, "pairs", None))
        and w is not None
        and w.dim() == 2
        and w.shape[0] == getattr(experts, "num_experts", -1)
        and getattr(gate, "topk_method", "greedy") == "greedy"
        and hasattr(gate, "top_k")
        and hasattr(gate, "routed_scaling_factor")
    )
    return "quant" if ok else None


def quant_qkv(attn: Any) -> list | None:
    """q/k/v's quantised weights when one GEMV launch can compute all three (quantised linears with
    one layout, no bias, no input scale); None keeps three module calls."""
    projs = [getattr(attn, n, None) for n in ("q_proj", "k_proj", "v_proj")]
    if not all(hasattr(p, "qw") and p.bias is None and p.input_scale_inv is None for p in projs):
        return None
    ws = [p.qw for p in projs]
    w0 = ws[0]
    same = all(w.bits == w0.bits and w.group == w0.group and w.in_features == w0.in_features for w in ws)
    return ws if same and all(w.out_features % 32 == 0 for w in ws[:-1]) else None


def quant_swiglu(ffn: Any) -> tuple | None:
    """(gate, up, input scale) of a SwiGLU MLP whose gate and up are quantised linears that one GEMV
    launch can run (same layout and input scale, SiLU); None keeps the module call."""
    import torch

    g, u = getattr(ffn, "gate_proj", None), getattr(ffn, "up_proj", None)
    act = type(getattr(ffn, "act_fn", None)).__name__
    if not (hasattr(g, "qw") and hasattr(u, "qw") and hasattr(ffn, "down_proj")):
        return None
    if act not in ("SiLU", "SiLUActivation") or g.bias is not None or u.bias is not None:
        return None
    gi, ui = g.input_scale_inv, u.input_scale_inv
    if (gi is None) != (ui is None) or (gi is not None and not torch.equal(gi, ui)):
        return None
    gw, uw = g.qw, u.qw
    if (gw.bits, gw.group, gw.in_features, gw.out_features) != (
        uw.bits,
        uw.group,
        uw.in_features,
        uw.out_features,
    ):
        return None
    return gw, uw, gi


def project_qkv(attn: Any, x: torch.Tensor, plan: list | None):
    """q, k, v rows for ``x`` [B, hidden]: one fused GEMV launch when ``plan`` allows it at this B."""
    if plan is not None:
        from ocr_app.quant import ops

        if ops.fused_launch_ok(x, plan):
            options = getattr(attn.q_proj, "kernel_options", None)  # the model's KernelOptions
            return ops.wq_linear_concat(x, plan, options).split([w.out_features for w in plan], -1)
    return attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)


def swiglu(ffn: Any, x: torch.Tensor, plan: tuple | None) -> torch.Tensor:
    """``down(silu(gate x) · up x)``, gate and up in one fused GEMV launch when ``plan`` allows it."""
    if plan is not None:
        from ocr_app.quant import ops

        gate, up, isc = plan
        if ops.fused_launch_ok(x, [gate, up]):
            options = getattr(ffn.gate_proj, "kernel_options", None)  # the model's KernelOptions
            return ffn.down_proj(ops.wq_gate_up(x, gate, up, isc, options))
    return ffn(x)


def fusable_norm(norm: Any) -> bool:
    """transformers' RMSNorm (weight · x/rms, computed in fp32) — not a replaced or hub-kernel module."""
    w = getattr(norm, "weight", None)
    return w is not None and w.dim() == 1 and hasattr(norm, "variance_epsilon")
