"""Triton kernels: W4/W8 group-quantised GEMV and grouped GEMM (MoE), INT8 activation quant/epilogue.

Imported only when a kernel runs (never at package import): CI has Triton but no GPU, and checks these
kernels under ``TRITON_INTERPRET=1``.

Weights: ``w`` [E, N, K/2] uint8 (4-bit, split-half layout) or [E, N, K] uint8 (8-bit); ``scale`` and
``wmin`` [E, N, K/GROUP] in the activation dtype; dequantised ``w = q * scale + wmin``.
Every launch has shapes fixed by the input shapes and reads the routing from device memory: no host
synchronisation, so a decode step that calls these can be captured in a CUDA graph.

Row counts (``M``, ``T``: tokens of a prefill, pages of a decode batch) are not specialised
(``do_not_specialize``): one binary per launch configuration serves every batch, so the set of binaries
is closed and compiled at load (``models/deepseek_ocr2/kernel_warmup.py``). Weight sizes and strides
stay specialised (alignment proofs for wide loads).
"""

from __future__ import annotations

import logging

import triton
import triton.language as tl

logger = logging.getLogger(__name__)


@triton.jit
def _load_w_tile(w_base, offs_n, offs_k, n_mask, HALF, BITS: tl.constexpr):
    """One K-tile of codes for both halves: (lo [BN, BK], hi [BN, BK]) as float32."""
    if BITS == 4:
        pw = tl.load(w_base + offs_n[:, None] * HALF + offs_k[None, :], mask=n_mask[:, None], other=0)
        lo = (pw & 0xF).to(tl.float32)
        hi = (pw >> 4).to(tl.float32)
    else:
        row = w_base + offs_n[:, None] * (2 * HALF) + offs_k[None, :]
        lo = tl.load(row, mask=n_mask[:, None], other=0).to(tl.float32)
        hi = tl.load(row + HALF, mask=n_mask[:, None], other=0).to(tl.float32)
    return lo, hi


@triton.jit
def _group_params(s_base, m_base, offs_n, n_mask, k0, HALF, G, GROUP):
    """Scales and mins of the groups holding K-tile ``k0`` of both halves: (s_lo, m_lo, s_hi, m_hi) [BN]."""
    g_lo = k0 // GROUP
    g_hi = (HALF + k0) // GROUP
    s_lo = tl.load(s_base + offs_n * G + g_lo, mask=n_mask, other=0).to(tl.float32)
    m_lo = tl.load(m_base + offs_n * G + g_lo, mask=n_mask, other=0).to(tl.float32)
    s_hi = tl.load(s_base + offs_n * G + g_hi, mask=n_mask, other=0).to(tl.float32)
    m_hi = tl.load(m_base + offs_n * G + g_hi, mask=n_mask, other=0).to(tl.float32)
    return s_lo, m_lo, s_hi, m_hi


@triton.jit
def _dequant_tile(w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS: tl.constexpr):
    """Dequantised tiles (lo, hi) [BN, BK] in float32: ``q s + m``."""
    lo, hi = _load_w_tile(w_base, offs_n, offs_k, n_mask, HALF, BITS)
    s_lo, m_lo, s_hi, m_hi = _group_params(s_base, m_base, offs_n, n_mask, k0, HALF, G, GROUP)
    return lo * s_lo[:, None] + m_lo[:, None], hi * s_hi[:, None] + m_hi[:, None]


@triton.jit
def _gemv_rows(
    x_lo, x_hi, w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS: tl.constexpr
):
    """Contribution of one K-tile to a GEMV row block: ``Σ_k x_k (q s + m)`` = ``s Σ x q + m Σ x``."""
    lo, hi = _load_w_tile(w_base, offs_n, offs_k, n_mask, HALF, BITS)
    s_lo, m_lo, s_hi, m_hi = _group_params(s_base, m_base, offs_n, n_mask, k0, HALF, G, GROUP)
    part = s_lo * tl.sum(lo * x_lo[None, :], 1) + m_lo * tl.sum(x_lo, 0)
    part += s_hi * tl.sum(hi * x_hi[None, :], 1) + m_hi * tl.sum(x_hi, 0)
    return part


@triton.jit
def _gemv_tile_2d(
    x_lo, x_hi, w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS: tl.constexpr
):
    """One K-tile's elementwise products ``x_k (q s + m)`` [BN, BK], reduced once after the K loop."""
    w_lo, w_hi = _dequant_tile(w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS)
    return w_lo * x_lo[None, :] + w_hi * x_hi[None, :]


@triton.jit
def _gemv_step(
    acc, acc2, x_lo, x_hi, w, s, m, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS: tl.constexpr,
    ACC2D: tl.constexpr,
):  # fmt: skip
    """Add one K-tile to the GEMV accumulators: the [BN] sums, or the [BN, BK] products (``ACC2D``)."""
    if ACC2D:
        acc2 += _gemv_tile_2d(x_lo, x_hi, w, s, m, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS)
    else:
        acc += _gemv_rows(x_lo, x_hi, w, s, m, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS)
    return acc, acc2


@triton.jit
def _segment(
    col,
    w_ptr,
    s_ptr,
    m_ptr,
    w1_ptr,
    s1_ptr,
    m1_ptr,
    w2_ptr,
    s2_ptr,
    m2_ptr,
    N0,
    N1,
    N_OUT,
    SEGS: tl.constexpr,
):
    """The weight that output column ``col`` belongs to when up to three weights form one output (w, w1,
    w2 with N0, N1 and N_OUT − N0 − N1 columns): its pointers, first column and width. A uniform branch
    per program: segment boundaries fall on column-block boundaries."""
    seg_start = N0 * 0
    seg_n = N_OUT
    if SEGS >= 2:
        if col >= N0:
            if SEGS == 3 and col >= N0 + N1:
                w_ptr, s_ptr, m_ptr = w2_ptr, s2_ptr, m2_ptr
                seg_start = N0 + N1
                seg_n = N_OUT - N0 - N1
            else:
                w_ptr, s_ptr, m_ptr = w1_ptr, s1_ptr, m1_ptr
                seg_start = N0
                seg_n = N1
        else:
            seg_n = N0
    return w_ptr, s_ptr, m_ptr, seg_start, seg_n


@triton.jit
def wq_gemv_kernel(
    x_ptr,
    stride_xm,
    w_ptr,
    s_ptr,
    m_ptr,
    idx_ptr,
    isc_ptr,
    rw_ptr,
    out_ptr,
    stride_om,
    N_OUT,
    N_W,
    K,
    GROUP,
    b_ptr,
    w1_ptr,
    s1_ptr,
    m1_ptr,
    w2_ptr,
    s2_ptr,
    m2_ptr,
    N0,
    N1,
    X_DIV: tl.constexpr,
    BITS: tl.constexpr,
    HAS_IDX: tl.constexpr,
    HAS_ISC: tl.constexpr,
    HAS_RW: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    GATE_UP: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UNROLL: tl.constexpr,
    ACC2D: tl.constexpr = False,
    SEGS: tl.constexpr = 1,
    UP_PTR: tl.constexpr = False,
):
    """Decode path: one program per (output row, N-block). Output row p reads activation row
    ``p // X_DIV`` and expert ``idx[p]`` (MoE pairs) or expert 0 (plain linear). ``ACC2D``: keep
    [BLOCK_N, BLOCK_K] partial products and reduce once at the end instead of once per K-tile.

    ``SEGS`` 2 or 3: the output columns are the concatenation of up to three weights (w, w1, w2 with
    N0, N1 and N_OUT − N0 − N1 columns, each a multiple of BLOCK_N), e.g. q/k/v in one launch.
    ``UP_PTR`` (with ``GATE_UP``): the up projection is ``w1`` instead of the rows after the gate's.
    """
    p = tl.program_id(0)
    pid_n = tl.program_id(1)
    col = pid_n * BLOCK_N
    w_ptr, s_ptr, m_ptr, seg_start, seg_n = _segment(
        col, w_ptr, s_ptr, m_ptr, w1_ptr, s1_ptr, m1_ptr, w2_ptr, s2_ptr, m2_ptr, N0, N1, N_OUT, SEGS
    )
    if HAS_IDX:  # noqa: SIM108 - constexpr branch in a Triton kernel
        e = tl.load(idx_ptr + p).to(tl.int64)
    else:
        e = 0
    xrow = (p // X_DIV).to(tl.int64)
    HALF = K // 2
    G = K // GROUP
    offs_n = col - seg_start + tl.arange(0, BLOCK_N)
    n_mask = offs_n < seg_n
    row_bytes = HALF if BITS == 4 else K
    w_base = w_ptr + e * N_W * row_bytes
    s_base = s_ptr + e * N_W * G
    m_base = m_ptr + e * N_W * G
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK_N], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    acc2_u = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    if GATE_UP:  # the up projection: its own tensors, or the rows after the gate's
        if UP_PTR:
            w_u = w1_ptr + e * N_W * row_bytes
            s_u = s1_ptr + e * N_W * G
            m_u = m1_ptr + e * N_W * G
        else:
            w_u = w_base + N_OUT * row_bytes
            s_u = s_base + N_OUT * G
            m_u = m_base + N_OUT * G
    # UNROLL K-tiles per iteration: their loads are independent and issued together, which is what
    # a latency-bound GEMV (one token, a few KB per program) needs.
    for k_outer in range(0, HALF, BLOCK_K * UNROLL):
        for u in tl.static_range(UNROLL):
            k0 = k_outer + u * BLOCK_K
            offs_k = k0 + tl.arange(0, BLOCK_K)
            x_lo = tl.load(x_ptr + xrow * stride_xm + offs_k).to(tl.float32)
            x_hi = tl.load(x_ptr + xrow * stride_xm + HALF + offs_k).to(tl.float32)
            if HAS_ISC:
                x_lo = x_lo * tl.load(isc_ptr + e * K + offs_k).to(tl.float32)
                x_hi = x_hi * tl.load(isc_ptr + e * K + HALF + offs_k).to(tl.float32)
            acc, acc2 = _gemv_step(
                acc, acc2, x_lo, x_hi, w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP,
                BITS, ACC2D,
            )  # fmt: skip
            if GATE_UP:
                acc_u, acc2_u = _gemv_step(
                    acc_u, acc2_u, x_lo, x_hi, w_u, s_u, m_u, offs_n, offs_k, n_mask, k0, HALF, G, GROUP,
                    BITS, ACC2D,
                )  # fmt: skip
    if ACC2D:
        acc = tl.sum(acc2, 1)
        acc_u = tl.sum(acc2_u, 1)
    if GATE_UP:
        acc = acc * tl.sigmoid(acc) * acc_u
    if HAS_RW:
        acc = acc * tl.load(rw_ptr + p).to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=n_mask, other=0).to(tl.float32)
    out_cols = seg_start + offs_n
    tl.store(out_ptr + p.to(tl.int64) * stride_om + out_cols, acc.to(out_ptr.dtype.element_ty), mask=n_mask)


@triton.jit
def _dequant_tile_t(w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS: tl.constexpr):
    """Dequantised transposed tiles (lo, hi) [BK, BN] in float32; the caller casts for ``tl.dot``."""
    w_lo, w_hi = _dequant_tile(w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS)
    return tl.trans(w_lo), tl.trans(w_hi)


@triton.jit(do_not_specialize=["M"])
def wq_gemm_kernel(
    x_ptr,
    stride_xm,
    w_ptr,
    s_ptr,
    m_ptr,
    rows_ptr,
    bexp_ptr,
    isc_ptr,
    rw_ptr,
    out_ptr,
    stride_om,
    M,
    N_OUT,
    N_W,
    K,
    GROUP,
    E,
    b_ptr,
    X_DIV: tl.constexpr,
    BITS: tl.constexpr,
    HAS_IDX: tl.constexpr,
    HAS_ISC: tl.constexpr,
    HAS_RW: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    GATE_UP: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    w1_ptr=None,
    s1_ptr=None,
    m1_ptr=None,
    w2_ptr=None,
    s2_ptr=None,
    m2_ptr=None,
    N0=0,
    N1=0,
    SEGS: tl.constexpr = 1,
    UP_PTR: tl.constexpr = False,
):
    """Tensor-core tiles: prefill, and decode batches of dense rows. With ``HAS_IDX`` the rows of block b
    are the (token, expert) pairs ``rows[b*BM:(b+1)*BM]`` that all belong to expert ``bexp[b]`` (sorted and
    padded on the device); blocks past the last expert carry expert ``E`` and do no work.

    Without ``HAS_IDX``, ``SEGS`` and ``UP_PTR`` mean what they mean in ``wq_gemv_kernel`` (q/k/v as one
    output; a gate/up pair held in two weights), so a decode step keeps its fused launches at any row
    count: the GEMV re-reads and re-dequantises a weight tile once per row, this kernel once per 16."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    arange_m = tl.arange(0, BLOCK_M)
    HALF = K // 2
    G = K // GROUP
    col = pid_n * BLOCK_N
    w_ptr, s_ptr, m_ptr, seg_start, seg_n = _segment(
        col, w_ptr, s_ptr, m_ptr, w1_ptr, s1_ptr, m1_ptr, w2_ptr, s2_ptr, m2_ptr, N0, N1, N_OUT, SEGS
    )
    if HAS_IDX:
        e = tl.load(bexp_ptr + pid_m).to(tl.int64)
        rows = tl.load(rows_ptr + pid_m * BLOCK_M + arange_m).to(tl.int64)
        active = e < E
        row_mask = (rows < M) & active
        e = tl.minimum(e, E - 1)
        k_end = tl.where(active, HALF, 0)
    else:
        e = 0
        rows = (pid_m * BLOCK_M + arange_m).to(tl.int64)
        row_mask = rows < M
        k_end = HALF
    xrows = rows // X_DIV
    offs_n = col - seg_start + tl.arange(0, BLOCK_N)
    n_mask = offs_n < seg_n
    row_bytes = HALF if BITS == 4 else K
    w_base = w_ptr + e * N_W * row_bytes
    s_base = s_ptr + e * N_W * G
    m_base = m_ptr + e * N_W * G
    if UP_PTR:  # the up projection: its own tensors (expert 0), or the rows after the gate's
        w_u = w1_ptr + e * N_W * row_bytes
        s_u = s1_ptr + e * N_W * G
        m_u = m1_ptr + e * N_W * G
    else:
        w_u = w_base + N_OUT * row_bytes
        s_u = s_base + N_OUT * G
        m_u = m_base + N_OUT * G
    DT = x_ptr.dtype.element_ty
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k_end, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        x_row_ptr = x_ptr + xrows[:, None] * stride_xm
        x_lo = tl.load(x_row_ptr + offs_k[None, :], mask=row_mask[:, None], other=0)
        x_hi = tl.load(x_row_ptr + HALF + offs_k[None, :], mask=row_mask[:, None], other=0)
        if HAS_ISC:
            x_lo = (x_lo.to(tl.float32) * tl.load(isc_ptr + e * K + offs_k).to(tl.float32)[None, :]).to(DT)
            x_hi = (
                x_hi.to(tl.float32) * tl.load(isc_ptr + e * K + HALF + offs_k).to(tl.float32)[None, :]
            ).to(DT)
        w_lo, w_hi = _dequant_tile_t(w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS)
        acc = tl.dot(x_lo, w_lo.to(DT), acc)
        acc = tl.dot(x_hi, w_hi.to(DT), acc)
        if GATE_UP:
            u_lo, u_hi = _dequant_tile_t(w_u, s_u, m_u, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS)
            acc_u = tl.dot(x_lo, u_lo.to(DT), acc_u)
            acc_u = tl.dot(x_hi, u_hi.to(DT), acc_u)
    if GATE_UP:
        acc = acc * tl.sigmoid(acc) * acc_u
    if HAS_RW:
        rw = tl.load(rw_ptr + rows, mask=row_mask, other=0).to(tl.float32)
        acc = acc * rw[:, None]
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=n_mask, other=0).to(tl.float32)[None, :]
    out_ptrs = out_ptr + rows[:, None] * stride_om + (seg_start + offs_n)[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=row_mask[:, None] & n_mask[None, :])


@triton.jit
def slot_of(idx_ptr, rows, rmask, e, TOPK: tl.constexpr, KP: tl.constexpr):
    """For token rows: whether one of their ``TOPK`` routing slots is expert ``e``, and which slot."""
    jj = tl.arange(0, KP)
    rid = tl.load(
        idx_ptr + rows[:, None] * TOPK + jj[None, :], mask=rmask[:, None] & (jj[None, :] < TOPK), other=-1
    )
    match = rid == e
    has = tl.sum(match.to(tl.int32), axis=1) > 0
    j = tl.sum(tl.where(match, jj[None, :], 0), axis=1)
    return has, j


@triton.jit(do_not_specialize=["T"])
def wq_moe_scan_kernel(
    x_ptr,
    stride_xm,
    w_ptr,
    s_ptr,
    m_ptr,
    idx_ptr,
    isc_ptr,
    rw_ptr,
    out_ptr,
    stride_om,
    T,
    N_OUT,
    N_W,
    K,
    GROUP,
    TOPK: tl.constexpr,
    KP: tl.constexpr,
    TKP: tl.constexpr,
    BITS: tl.constexpr,
    HAS_ISC: tl.constexpr,
    GATE_UP: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """Decode batches of routed experts without a global sort: one program per (expert, column block)
    scans the few tokens' routing (``T·TOPK`` ids), exits when no pair picked its expert, and otherwise
    packs that expert's pairs into tiles of ``BLOCK_M`` rows and dequantises each weight tile once per
    tile (tensor cores), so the work follows the expert's pairs, not the batch size.

    Why: the GEMV re-reads an expert's weights once per (token, slot) pair, and the sorted GEMM needs
    five small sort/scan launches per layer; at 16–64 tokens both cost more than the matmuls.
    ``GATE_UP``: x = tokens [T, K], out = ``silu(gate)·up`` per pair [T·TOPK, N_OUT]; else x = those
    pairs' activations, out = pair rows times their routing weight (float32)."""
    e = tl.program_id(0)
    pid_n = tl.program_id(1)
    pairs_all = tl.arange(0, TKP)
    ids = tl.load(idx_ptr + pairs_all, mask=pairs_all < T * TOPK, other=-1)
    match = ids == e
    count = tl.sum(match.to(tl.int32), axis=0)
    if count > 0:
        # the pairs that picked this expert, packed: rank r = the r-th of them in pair order
        rank = tl.where(match, tl.cumsum(match.to(tl.int32), axis=0) - 1, -1)
        HALF = K // 2
        G = K // GROUP
        row_bytes = HALF if BITS == 4 else K
        e64 = e.to(tl.int64)
        w_base = w_ptr + e64 * N_W * row_bytes
        s_base = s_ptr + e64 * N_W * G
        m_base = m_ptr + e64 * N_W * G
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        n_mask = offs_n < N_OUT
        DT = x_ptr.dtype.element_ty
        for c0 in range(0, count, BLOCK_M):
            r = c0 + tl.arange(0, BLOCK_M)
            has = r < count
            pair = tl.sum(tl.where(rank[None, :] == r[:, None], pairs_all[None, :], 0), axis=1).to(tl.int64)
            xrow = pair // TOPK if GATE_UP else pair
            acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for k0 in range(0, HALF, BLOCK_K):
                offs_k = k0 + tl.arange(0, BLOCK_K)
                x_row_ptr = x_ptr + xrow[:, None] * stride_xm
                x_lo = tl.load(x_row_ptr + offs_k[None, :], mask=has[:, None], other=0)
                x_hi = tl.load(x_row_ptr + HALF + offs_k[None, :], mask=has[:, None], other=0)
                if HAS_ISC:
                    i_lo = tl.load(isc_ptr + e64 * K + offs_k).to(tl.float32)
                    i_hi = tl.load(isc_ptr + e64 * K + HALF + offs_k).to(tl.float32)
                    x_lo = (x_lo.to(tl.float32) * i_lo[None, :]).to(DT)
                    x_hi = (x_hi.to(tl.float32) * i_hi[None, :]).to(DT)
                w_lo, w_hi = _dequant_tile_t(
                    w_base, s_base, m_base, offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS
                )
                acc = tl.dot(x_lo, w_lo.to(DT), acc)
                acc = tl.dot(x_hi, w_hi.to(DT), acc)
                if GATE_UP:
                    u_lo, u_hi = _dequant_tile_t(
                        w_base + N_OUT * row_bytes, s_base + N_OUT * G, m_base + N_OUT * G,
                        offs_n, offs_k, n_mask, k0, HALF, G, GROUP, BITS,
                    )  # fmt: skip
                    acc_u = tl.dot(x_lo, u_lo.to(DT), acc_u)
                    acc_u = tl.dot(x_hi, u_hi.to(DT), acc_u)
            if GATE_UP:
                acc = acc * tl.sigmoid(acc) * acc_u
            else:
                acc = acc * tl.load(rw_ptr + pair, mask=has, other=0).to(tl.float32)[:, None]
            dst = out_ptr + pair[:, None] * stride_om + offs_n[None, :]
            tl.store(dst, acc.to(out_ptr.dtype.element_ty), mask=has[:, None] & n_mask[None, :])


@triton.jit
def int8_rowquant_kernel(x_ptr, stride_xm, q_ptr, scale_ptr, K, BLOCK_K: tl.constexpr):
    """One pass per row: absmax → scale → round → int8 (dynamic per-token activation quantisation)."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_K)
    mask = offs < K
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), 0) / 127.0, 1e-8)
    q = x / scale
    q = tl.where(q >= 0, tl.floor(q + 0.5), tl.ceil(q - 0.5))
    q = tl.minimum(tl.maximum(q, -127.0), 127.0)
    tl.store(q_ptr + row * K + offs, q.to(tl.int8), mask=mask)
    tl.store(scale_ptr + row, scale)


@triton.jit(do_not_specialize=["M"])
def int8_epilogue_kernel(
    acc_ptr,
    xs_ptr,
    ws_ptr,
    b_ptr,
    out_ptr,
    M,
    N,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """``out = acc * xs[:, None] * ws[None, :] + bias`` in one pass over the int32 product."""
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    acc = tl.load(acc_ptr + offs_m[:, None] * N + offs_n[None, :], mask=mask, other=0).to(tl.float32)
    xs = tl.load(xs_ptr + offs_m, mask=offs_m < M, other=0)
    ws = tl.load(ws_ptr + offs_n, mask=offs_n < N, other=0)
    out = acc * xs[:, None] * ws[None, :]
    if HAS_BIAS:
        out += tl.load(b_ptr + offs_n, mask=offs_n < N, other=0).to(tl.float32)[None, :]
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], out.to(out_ptr.dtype.element_ty), mask=mask)
