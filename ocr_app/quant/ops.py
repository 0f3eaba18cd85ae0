"""Quantised matmuls with two interchangeable paths: Triton kernels (GPU, or CPU under
``TRITON_INTERPRET=1``) and plain torch (CI, GPUs without Triton).

Why two paths with one contract: CI has no GPU, so the torch path is what tests exercise end to end and
the reference the kernels are checked against; the GPU runs the kernels, which never synchronise with
the host (fixed launch shapes, routing read on the device), so decode steps can be graph-captured.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ocr_app.quant.options import ENV_BACKEND, Backend, KernelOptions, resolve  # noqa: F401

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

# Unused optional pointers are passed as None (a null constexpr): Triton's launcher validates every
# tensor argument with a driver call (cuPointerGetAttribute), which is costly on virtualised GPUs.
# Knobs (backend, fast launch, GEMV bounds, GEMV accumulation) come in a ``KernelOptions`` (options.py);
# every public op takes ``options=None`` = the process default read once from the environment.
GEMV_MIN_PROGRAMS = 264  # two per SM on an H100/H200


@dataclass(frozen=True)
class QWeight:
    """A group-quantised weight stack: codes [E, N, K/2] (4-bit) or [E, N, K] (8-bit) uint8,
    ``scale``/``wmin`` [E, N, K/group]. Plain linears have E = 1."""

    codes: torch.Tensor
    scale: torch.Tensor
    wmin: torch.Tensor
    bits: int
    group: int
    in_features: int

    @property
    def out_features(self) -> int:
        return self.codes.shape[1]

    def dequantize(self, experts: torch.Tensor | int | None = None) -> torch.Tensor:
        """Float32 weights [E, N, K] (or [N, K] for one expert index)."""
        from ocr_app.quant.formats import dequantize_groups, unpack_int4

        codes, scale, wmin = self.codes, self.scale, self.wmin
        if experts is not None:
            codes, scale, wmin = codes[experts], scale[experts], wmin[experts]
        q = unpack_int4(codes) if self.bits == 4 else codes
        return dequantize_groups(q, scale, wmin, self.group)


def _triton_ok() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def pick_backend(x: torch.Tensor, backend: Backend = "auto", options: KernelOptions | None = None) -> str:
    """``auto``: Triton on CUDA tensors when Triton imports, torch otherwise. ``options.backend``
    (``OCR_APP_QUANT_BACKEND``) overrides ``auto`` (tests drive the kernels under the Triton interpreter)."""
    if backend == "auto":
        backend = resolve(options).backend
    if backend == "auto":
        return "triton" if x.is_cuda and _triton_ok() else "torch"
    if backend == "triton" and not _triton_ok():
        raise RuntimeError("the Triton backend was requested but triton is not installed")
    return backend


# --------------------------------------------------------------------------------------------- linear
def wq_linear(
    x: torch.Tensor,
    w: QWeight,
    bias: torch.Tensor | None = None,
    input_scale_inv: torch.Tensor | None = None,
    backend: Backend = "auto",
    options: KernelOptions | None = None,
) -> torch.Tensor:
    """``y = (x * input_scale_inv) @ W^T + bias`` with a group-quantised ``W`` (W4A16 / W8A16)."""
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if pick_backend(x, backend, options) == "triton":
        y = _wq_linear_triton(x2, w, input_scale_inv, bias, resolve(options))
    else:
        xf = x2.float()
        if input_scale_inv is not None:
            xf = xf * input_scale_inv.reshape(-1).float()
        y = xf @ w.dequantize(0).t()
        if bias is not None:
            y = y + bias.float()
        y = y.to(x.dtype)
    return y.reshape(*lead, w.out_features)


def _gemv_launch(
    opts: KernelOptions,
    x,
    w: QWeight,
    out,
    n_out,
    idx,
    isc,
    rw,
    x_div,
    gate_up,
    bias=None,
    more=(),
    up_ptr=False,
):
    """``more``: extra weights whose columns follow ``w``'s (one launch for q/k/v), or with ``up_ptr``
    the up projection of a gate/up pair held in its own tensors."""
    import triton

    from ocr_app.quant import triton_kernels as tk
    from ocr_app.quant.formats import kernel_block_k, kernel_unroll
    from ocr_app.quant.launch import launch

    rows = out.shape[0]
    # enough programs to cover the GPU at one token: narrow row blocks when rows × N is small
    block_n = 32
    while block_n > 8 and rows * triton.cdiv(n_out, block_n) < GEMV_MIN_PROGRAMS:
        block_n //= 2
    block_k = kernel_block_k(w.in_features, w.group, cap=128)
    grid = (rows, triton.cdiv(n_out, block_n))
    w1 = more[0] if more else None
    w2 = more[1] if len(more) > 1 else None
    launch(
        tk.wq_gemv_kernel,
        grid,
        x,
        x.stride(0),
        w.codes,
        w.scale,
        w.wmin,
        idx,
        isc,
        rw,
        out,
        out.stride(0),
        n_out,
        w.codes.shape[1],
        w.in_features,
        w.group,
        bias,
        None if w1 is None else w1.codes,
        None if w1 is None else w1.scale,
        None if w1 is None else w1.wmin,
        None if w2 is None else w2.codes,
        None if w2 is None else w2.scale,
        None if w2 is None else w2.wmin,
        w.out_features,
        0 if w1 is None else w1.out_features,
        X_DIV=x_div,
        BITS=w.bits,
        HAS_IDX=idx is not None,
        HAS_ISC=isc is not None,
        HAS_RW=rw is not None,
        HAS_BIAS=bias is not None,
        GATE_UP=gate_up,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
        UNROLL=kernel_unroll(w.in_features, block_k),
        ACC2D=opts.gemv_acc2d and block_n <= 16,  # wider blocks would spill the 2-D accumulators
        SEGS=1 if up_ptr else 1 + len(more),
        UP_PTR=up_ptr,
        num_warps=4,
        fast=opts.fast_launch,
    )


def _same_layout(ws: list[QWeight]) -> bool:
    w0 = ws[0]
    return all(
        w.codes.shape[0] == 1
        and w.bits == w0.bits
        and w.group == w0.group
        and w.in_features == w0.in_features
        for w in ws
    )


def fused_launch_ok(x: torch.Tensor, ws: list[QWeight]) -> bool:
    """Whether ``wq_linear_concat`` / ``wq_gate_up`` can run ``ws`` in one launch on ``x``: rows present,
    one layout, segment boundaries on 32-column blocks, Triton on this device."""
    return (
        (x.is_cuda or os.environ.get("TRITON_INTERPRET") == "1")
        and x.shape[0] > 0
        and 1 <= len(ws) <= 3
        and _same_layout(ws)
        and all(w.out_features % 32 == 0 for w in ws[:-1])
        and _triton_ok()
    )


def wq_linear_concat(
    x: torch.Tensor, ws: list[QWeight], options: KernelOptions | None = None
) -> torch.Tensor:
    """``cat([x @ W_i^T for W_i in ws], -1)`` in one GEMV launch (decode: q, k and v of a layer).

    Needs ``fused_launch_ok``; every weight's column count must be a multiple of 32.
    """
    import torch

    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    n = sum(w.out_features for w in ws)
    out = torch.empty(x2.shape[0], n, device=x.device, dtype=x.dtype)
    opts = resolve(options)
    if x2.shape[0] <= opts.dense_gemv_max_rows:
        _gemv_launch(opts, x2, ws[0], out, n, None, None, None, 1, False, more=tuple(ws[1:]))
    else:
        _rows_launch(opts, x2, ws[0], out, n, None, None, False, more=tuple(ws[1:]))
    return out.reshape(*x.shape[:-1], n)


def wq_gate_up(
    x: torch.Tensor,
    gate: QWeight,
    up: QWeight,
    input_scale_inv: torch.Tensor | None = None,
    options: KernelOptions | None = None,
) -> torch.Tensor:
    """``silu(x @ G^T) * (x @ U^T)`` in one GEMV launch (decode: a SwiGLU MLP's first half)."""
    import torch

    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    out = torch.empty(x2.shape[0], gate.out_features, device=x.device, dtype=x.dtype)
    isc = None if input_scale_inv is None else input_scale_inv.reshape(1, -1)
    opts = resolve(options)
    if x2.shape[0] <= opts.dense_gemv_max_rows:
        _gemv_launch(
            opts, x2, gate, out, gate.out_features, None, isc, None, 1, True, more=(up,), up_ptr=True
        )
    else:
        _rows_launch(opts, x2, gate, out, gate.out_features, isc, None, True, more=(up,), up_ptr=True)
    return out.reshape(*x.shape[:-1], gate.out_features)


def _rows_launch(
    opts: KernelOptions, x, w: QWeight, out, n_out, isc, bias, gate_up, more=(), up_ptr=False, meta=None
):
    """Dense rows through the tensor-core kernel (decode batches above ``dense_gemv_max_rows``), with
    the GEMV's fusions: ``more`` weights as further output columns, or the up projection (``up_ptr``).
    Column blocks (16 or 32) never straddle a segment: segments start on 32-column boundaries."""
    import triton

    from ocr_app.quant.formats import kernel_block_k

    m = x.shape[0]
    bm = _block_m(m)
    meta = dict(meta or {})
    # tuned on an H200 at 8–32 rows (docs/PERFORMANCE.md): 128-channel K-tiles, 32 columns up to 16
    # rows and 16 above (``_rows_block_n``), four pipeline stages
    block_n = meta.pop("BLOCK_N", _rows_block_n(m))
    meta = {"BLOCK_K": kernel_block_k(w.in_features, w.group, cap=128), "num_stages": 4, **meta}
    w1 = more[0] if more else None
    w2 = more[1] if len(more) > 1 else None
    segs = {
        "w1_ptr": None if w1 is None else w1.codes,
        "s1_ptr": None if w1 is None else w1.scale,
        "m1_ptr": None if w1 is None else w1.wmin,
        "w2_ptr": None if w2 is None else w2.codes,
        "s2_ptr": None if w2 is None else w2.scale,
        "m2_ptr": None if w2 is None else w2.wmin,
        "N0": w.out_features,
        "N1": 0 if w1 is None else w1.out_features,
        "SEGS": 1 if up_ptr else 1 + len(more),
        "UP_PTR": up_ptr,
    }
    _gemm_launch(
        opts, x, w, out, m, n_out, None, None, triton.cdiv(m, bm), bm, isc, None, 1, gate_up, bias,
        block_n=block_n, extra=segs, meta=meta,
    )  # fmt: skip


def _gemm_launch(
    opts: KernelOptions,
    x,
    w: QWeight,
    out,
    m,
    n_out,
    rows,
    bexp,
    num_blocks,
    block_m,
    isc,
    rw,
    x_div,
    gate_up,
    bias=None,
    block_n: int = 64,
    extra: dict | None = None,
    meta: dict | None = None,
):
    """``meta``: launch parameters to override (``BLOCK_K``, ``num_warps``, ``num_stages``): tuning benches."""
    import triton

    from ocr_app.quant import triton_kernels as tk
    from ocr_app.quant.formats import kernel_block_k
    from ocr_app.quant.launch import launch

    grid = (num_blocks, triton.cdiv(n_out, block_n))
    launch(
        tk.wq_gemm_kernel,
        grid,
        x,
        x.stride(0),
        w.codes,
        w.scale,
        w.wmin,
        rows,
        bexp,
        isc,
        rw,
        out,
        out.stride(0),
        m,
        n_out,
        w.codes.shape[1],
        w.in_features,
        w.group,
        w.codes.shape[0],
        bias,
        X_DIV=x_div,
        BITS=w.bits,
        HAS_IDX=rows is not None,
        HAS_ISC=isc is not None,
        HAS_RW=rw is not None,
        HAS_BIAS=bias is not None,
        GATE_UP=gate_up,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        **{
            "BLOCK_K": kernel_block_k(w.in_features, w.group),
            "num_warps": 4,
            "num_stages": 3,
            **(extra or {}),
            **(meta or {}),
        },
        fast=opts.fast_launch,
    )


def _block_m(rows_per_group: float) -> int:
    if rows_per_group <= 16:
        return 16
    if rows_per_group <= 48:
        return 32
    return 64


def _wq_linear_triton(
    x2: torch.Tensor, w: QWeight, isc: torch.Tensor | None, bias, opts: KernelOptions
) -> torch.Tensor:
    import torch

    x2 = x2.contiguous()
    m = x2.shape[0]
    out = torch.empty(m, w.out_features, device=x2.device, dtype=x2.dtype)
    if m == 0:
        return out
    route = dense_route(m, opts)
    if route[0] == "gemv":
        _gemv_launch(opts, x2, w, out, w.out_features, None, isc, None, 1, False, bias)
    elif route[0] == "rows":  # decode batches: narrow column blocks to fill the GPU
        _rows_launch(opts, x2, w, out, w.out_features, isc, bias, False)
    else:
        import triton

        bm = route[1]
        _gemm_launch(
            opts, x2, w, out, m, w.out_features, None, None, triton.cdiv(m, bm), bm, isc, None, 1, False, bias
        )
    return out


# ------------------------------------------------------------------------------------- launch routes
# Which kernel and tile sizes a row count gets. The launchers branch on these, and the kernel warm-up
# (models/deepseek_ocr2/kernel_warmup.py) asks them which token counts launch different binaries: row
# counts themselves are not specialised (triton_kernels), so tokens with one route share every binary.
def dense_route(rows: int, options: KernelOptions | None = None) -> tuple:
    """How a quantised linear runs ``rows`` tokens: ``("gemv", rows)`` (its column block follows the
    rows), ``("rows", block_m, block_n)`` (decode batches) or ``("gemm", block_m)`` (prefill)."""
    opts = resolve(options)
    if rows <= opts.dense_gemv_max_rows:
        return ("gemv", rows)
    if rows <= GEMV_MIN_PROGRAMS:
        return ("rows", _block_m(rows), _rows_block_n(rows))
    return ("gemm", _block_m(rows))


def moe_route(
    tokens: int,
    top_k: int,
    experts: int,
    options: KernelOptions | None = None,
    gemv_max_rows: int | None = None,
) -> tuple:
    """How routed quantised experts run ``tokens`` tokens: ``("gemv", pairs)``, ``("scan", pairs
    block)`` (decode batches) or ``("gemm", block_m)`` (prefill, pairs sorted by expert)."""
    opts = resolve(options)
    pairs = tokens * top_k
    if pairs <= (opts.decode_gemv_max_rows if gemv_max_rows is None else gemv_max_rows):
        return ("gemv", pairs)
    if tokens <= opts.moe_scan_max_tokens:
        return ("scan", _next_pow2(pairs))
    return ("gemm", _block_m(pairs / experts))


def token_classes(
    low: int, high: int, top_k: int, experts: int, options: KernelOptions | None = None
) -> list[int]:
    """The first token count in ``[low, high]`` of each distinct (dense, experts) route: one forward
    at each of them launches every binary a forward of any count in the range launches.

    Each route holds over one contiguous range of counts (thresholds and block sizes grow with the
    count), so the range is sampled every 64 counts and bisected where the route changes: a few hundred
    route evaluations instead of one per count (this runs at every load)."""
    opts = resolve(options)

    def key(rows: int) -> tuple:
        return dense_route(rows, opts), moe_route(rows, top_k, experts, opts)

    low = max(1, low)
    if high < low:
        return []
    points = sorted({*range(low, high + 1, 64), high})
    firsts = [low]
    for a, b in itertools.pairwise(points):
        ka = key(a)
        while ka != key(b):  # the first count after ``a`` whose route differs, then on from there
            lo, hi = a, b
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if key(mid) == ka else (lo, mid)
            firsts.append(hi)
            a, ka = hi, key(hi)
    return firsts


def _next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _rows_block_n(rows: int) -> int:
    # tuned on an H200 at 8–32 rows (docs/PERFORMANCE.md): 32 columns up to 16 rows and 16 above
    return 32 if rows <= 16 else 16


# ------------------------------------------------------------------------------------------------ MoE
def align_pairs(
    top_k_index: torch.Tensor, num_experts: int, block_m: int
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Group (token, slot) pairs by expert into blocks of ``block_m`` rows, on the device, no sync.

    Returns ``rows`` [num_blocks * block_m] (pair ids; ``P`` marks padding), ``block_expert``
    [num_blocks] (``num_experts`` marks an unused block) and the fixed upper bound ``num_blocks`` =
    ceil(P / block_m) + E, which depends on shapes only.
    """
    import torch

    flat = top_k_index.reshape(-1).long()
    p = flat.numel()
    dev = flat.device
    num_blocks = -(-p // block_m) + num_experts
    counts = torch.zeros(num_experts, dtype=torch.long, device=dev).scatter_add_(
        0, flat, torch.ones_like(flat)
    )
    blocks_per = (counts + block_m - 1) // block_m
    block_end = torch.cumsum(blocks_per, 0)
    block_start = block_end - blocks_per
    count_start = torch.cumsum(counts, 0) - counts
    sorted_e, order = torch.sort(flat, stable=True)
    rank = torch.arange(p, device=dev) - count_start[sorted_e]
    dest = block_start[sorted_e] * block_m + rank
    rows = torch.full((num_blocks * block_m,), p, dtype=torch.long, device=dev).scatter_(0, dest, order)
    block_expert = torch.searchsorted(block_end, torch.arange(num_blocks, device=dev), right=True)
    return rows, block_expert, num_blocks


def moe_experts(
    x: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up: QWeight,
    down: QWeight,
    input_scale_inv: torch.Tensor | None = None,
    backend: Backend = "auto",
    options: KernelOptions | None = None,
) -> torch.Tensor:
    """Routed experts: ``Σ_slots w · down_e(silu(gate_e(x s_e⁻¹)) · up_e(x s_e⁻¹))`` for x [T, H].

    Same contract as transformers' experts ``forward(hidden_states, top_k_index, top_k_weights)``.
    Expert ids outside ``[0, E)`` are not expected (the router never produces them).
    """
    if pick_backend(x, backend, options) == "triton":
        return _moe_triton(x, top_k_index, top_k_weights, gate_up, down, input_scale_inv, options)
    return _moe_torch(x, top_k_index, top_k_weights, gate_up, down, input_scale_inv)


def _moe_torch(x, top_k_index, top_k_weights, gate_up: QWeight, down: QWeight, isc):
    import torch

    out = torch.zeros(x.shape[0], down.out_features, dtype=torch.float32, device=x.device)
    inter = gate_up.out_features // 2
    for e in torch.unique(top_k_index).tolist():
        tok, slot = torch.where(top_k_index == e)
        xe = x[tok].float()
        if isc is not None:
            xe = xe * isc[e].float()
        gu = xe @ gate_up.dequantize(e).t()
        h = torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:]
        h = h.to(x.dtype).float()  # the kernels keep the intermediate in the activation dtype
        y = (h @ down.dequantize(e).t()) * top_k_weights[tok, slot, None].float()
        out.index_add_(0, tok, y)
    return out.to(x.dtype)


def _moe_triton(x, top_k_index, top_k_weights, gate_up: QWeight, down: QWeight, isc, options):
    t = x.shape[0]
    y = moe_pairs(x, top_k_index, top_k_weights, gate_up, down, isc, options=options)
    return y.view(t, top_k_index.shape[1], down.out_features).sum(1).to(x.dtype)


def moe_pairs(
    x: torch.Tensor,
    top_k_index: torch.Tensor,
    top_k_weights: torch.Tensor,
    gate_up: QWeight,
    down: QWeight,
    input_scale_inv: torch.Tensor | None = None,
    gemv_max_rows: int | None = None,
    options: KernelOptions | None = None,
) -> torch.Tensor:
    """Routed experts per (token, slot) pair on the GPU kernels: float32 [T · top_k, H], each row
    already multiplied by its routing weight; summing over slots is left to the caller (the graph
    decoder folds it into one kernel with the shared experts' output).

    Up to ``gemv_max_rows`` pairs (default ``decode_gemv_max_rows``) run through the GEMV kernel, which
    reads the routing directly; up to ``moe_scan_max_tokens`` tokens through the expert scan; more are
    sorted by expert for the tensor-core GEMM.
    """
    import torch

    x = x.contiguous()
    isc = input_scale_inv
    t, _ = x.shape
    topk = top_k_index.shape[1]
    p = t * topk
    inter = gate_up.out_features // 2
    hidden = down.out_features
    num_experts = gate_up.codes.shape[0]
    idx = top_k_index.reshape(-1).contiguous()
    rw = top_k_weights.reshape(-1).contiguous()
    h = torch.empty(p, inter, device=x.device, dtype=x.dtype)
    y = torch.empty(p, hidden, device=x.device, dtype=torch.float32)
    if p == 0:
        return y
    opts = resolve(options)
    route = moe_route(t, topk, num_experts, opts, gemv_max_rows)
    if route[0] == "gemv":
        _gemv_launch(opts, x, gate_up, h, inter, idx, isc, None, topk, True)
        _gemv_launch(opts, h, down, y, hidden, idx, None, rw, 1, False)
    elif route[0] == "scan":
        _scan_launch(opts, x, gate_up, h, inter, idx, isc, None, t, topk, True)
        _scan_launch(opts, h, down, y, hidden, idx, None, rw, t, topk, False)
    else:
        bm = route[1]
        rows, bexp, nblocks = align_pairs(top_k_index, num_experts, bm)
        _gemm_launch(opts, x, gate_up, h, p, inter, rows, bexp, nblocks, bm, isc, None, topk, True)
        _gemm_launch(opts, h, down, y, p, hidden, rows, bexp, nblocks, bm, None, rw, 1, False)
    return y


def _scan_launch(
    opts: KernelOptions, x, w: QWeight, out, n_out, idx, isc, rw, t, topk, gate_up, meta: dict | None = None
):
    """The expert-scan kernel: one program per (expert, 32 columns); experts nobody picked exit at once.
    ``meta`` overrides launch parameters (``BLOCK_N``, ``BLOCK_K``, ``num_warps``, ``num_stages``)."""
    import triton

    from ocr_app.quant import triton_kernels as tk
    from ocr_app.quant.formats import kernel_block_k
    from ocr_app.quant.launch import launch

    params = {
        "BLOCK_N": 32,
        "BLOCK_K": kernel_block_k(w.in_features, w.group),
        "num_warps": 4,
        "num_stages": 2,
        **(meta or {}),
    }  # tuned on an H200 at 8–64 tokens (docs/PERFORMANCE.md)
    block_n = params["BLOCK_N"]
    launch(
        tk.wq_moe_scan_kernel,
        (w.codes.shape[0], triton.cdiv(n_out, block_n)),
        x, x.stride(0), w.codes, w.scale, w.wmin, idx, isc, rw, out, out.stride(0),
        t, n_out, w.codes.shape[1], w.in_features, w.group,
        TOPK=topk,
        KP=triton.next_power_of_2(topk),
        TKP=triton.next_power_of_2(t * topk),
        BITS=w.bits,
        HAS_ISC=isc is not None,
        GATE_UP=gate_up,
        BLOCK_M=16,  # an expert's pairs in a decode batch: a few per expert
        **params,
        fast=opts.fast_launch,
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------- INT8
def int8_linear(
    x: torch.Tensor,
    qweight: torch.Tensor,
    wscale: torch.Tensor,
    bias: torch.Tensor | None = None,
    backend: Backend = "auto",
    act_bits: int = 16,
    options: KernelOptions | None = None,
) -> torch.Tensor:
    """INT8 per-channel weights; activations in their own dtype (``act_bits=16``, the default) or
    dynamically quantised per token (``act_bits=8``, W8A8).

    Why W8A16 by default: the vision tower runs only in prefill, where matmuls are compute-bound. There
    the weight is dequantised in one elementwise pass (int8 × scale → activation dtype, ~N·K bytes of
    traffic, transient) and multiplied by cuBLAS in the activation dtype, so its speed is bf16's. The
    W8A8 path (``torch._int_mm``) measured slower than bf16 on an H200 (cuBLAS picks an sm80 IMMA
    kernel) and needs two extra kernel launches per layer. The scale is rounded to the activation
    dtype (≤ 2⁻⁹ relative in bf16, below the int8 step).
    """
    import torch

    if act_bits == 16:
        w = qweight * (wscale if wscale.dtype == x.dtype else wscale.to(x.dtype))[:, None]
        return torch.nn.functional.linear(x, w, bias)
    return _int8_w8a8(x, qweight, wscale, bias, backend, resolve(options))


def _int8_w8a8(x, qweight, wscale, bias, backend: Backend, opts: KernelOptions) -> torch.Tensor:
    """Dynamic W8A8: per-token INT8 activations × per-channel INT8 weights, int32 accumulate.

    GPU: one Triton pass quantises the rows, ``torch._int_mm`` (cuBLAS IMMA) multiplies, one Triton
    pass rescales and adds the bias. CPU: the same math with torch ops (``_int_mm`` runs on CPU too).
    """
    import torch

    from ocr_app.quant.formats import quantize_rows_int8

    lead = x.shape[:-1]
    k = x.shape[-1]
    n = qweight.shape[0]
    x2 = x.reshape(-1, k).contiguous()
    m = x2.shape[0]
    use_triton = pick_backend(x, backend, opts) == "triton"
    if use_triton and x.is_cuda and m > 16 and k % 8 == 0 and n % 8 == 0:
        import triton

        from ocr_app.quant import triton_kernels as tk
        from ocr_app.quant.launch import launch

        q = torch.empty(m, k, device=x.device, dtype=torch.int8)
        xs = torch.empty(m, device=x.device, dtype=torch.float32)
        bk = triton.next_power_of_2(k)
        fast = opts.fast_launch
        launch(tk.int8_rowquant_kernel, (m,), x2, x2.stride(0), q, xs, k, BLOCK_K=bk, num_warps=8, fast=fast)
        try:
            acc = torch._int_mm(q, qweight.t())
        except RuntimeError as exc:  # a shape/layout cuBLAS rejects: same math in float
            logger.warning("torch._int_mm failed (%s); INT8 layer falls back to float matmul", exc)
            acc = q.float() @ qweight.float().t()
        out = torch.empty(m, n, device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
        launch(
            tk.int8_epilogue_kernel,
            grid,
            acc, xs, wscale, bias, out, m, n,
            HAS_BIAS=bias is not None, BLOCK_M=64, BLOCK_N=64, fast=fast,
        )  # fmt: skip
        return out.reshape(*lead, n)
    q, xs = quantize_rows_int8(x2)
    if x.is_cuda:  # tiny shapes _int_mm rejects: same math in float
        acc = q.float() @ qweight.float().t()
    else:
        acc = torch._int_mm(q, qweight.t()).float() if m > 0 else q.float() @ qweight.float().t()
    out = acc * xs[:, None] * wscale.float()[None, :]
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype).reshape(*lead, n)
