"""Triton kernels of the decode step (imported only on CUDA through ``kernels``).

Module-level because Triton resolves the helpers a kernel calls through the module's globals.
See ``kernels`` for what each kernel fuses and why.

Integer arguments that change with the batch (rows ``T``/``B``) or the slot length (``L``) are not
specialised (``do_not_specialize``): Triton would otherwise compile a binary per value class (1, a
multiple of 16, other), so a batch composition not seen before compiled in the middle of a document
(docs/PERFORMANCE.md, "The first page"). Sizes fixed by the model (hidden, vocabulary, experts) and
strides stay specialised: they are what lets the compiler prove rows aligned for 16-byte accesses.
"""

import triton
import triton.language as tl

from ocr_app.quant.triton_kernels import slot_of

next_pow2 = triton.next_power_of_2


@triton.jit
def add_rmsnorm(
    x_ptr, r_ptr, w_ptr, out_ptr, res_ptr, n_cols, eps, HAS_RES: tl.constexpr, BLOCK: tl.constexpr
):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=m, other=0.0).to(tl.float32)
    if HAS_RES:
        r = tl.load(r_ptr + row * n_cols + offs, mask=m, other=0.0).to(tl.float32)
        h = (r + x).to(res_ptr.dtype.element_ty)  # torch rounds the residual sum to the model dtype
        tl.store(res_ptr + row * n_cols + offs, h, mask=m)
        x = h.to(tl.float32)
    var = tl.sum(x * x, axis=0) / n_cols
    y = (x * tl.rsqrt(var + eps)).to(out_ptr.dtype.element_ty).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + offs, (w * y).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def _rot(x_ptr, c, s, d, rot, sign):
    # q*cos + rotate_half(q)*sin with torch's per-op rounding to the storage dtype
    dt = x_ptr.dtype.element_ty
    x = tl.load(x_ptr + d).to(tl.float32)
    xr = tl.load(x_ptr + rot).to(tl.float32) * sign
    a = (x * c).to(dt).to(tl.float32)
    b = (xr * s).to(dt).to(tl.float32)
    return (a + b).to(dt)


@triton.jit
def rope_kv(
    q_ptr, k_ptr, v_ptr, cos_ptr, sin_ptr, pos_ptr, qo_ptr, kc_ptr, vc_ptr,
    sq, sk, sv, s_slot, s_head, s_pos,
    H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0)
    h = tl.program_id(1)
    half: tl.constexpr = D // 2
    d = tl.arange(0, D)
    rot = tl.where(d < half, d + half, d - half)
    sign = tl.where(d < half, -1.0, 1.0)
    c = tl.load(cos_ptr + b * D + d).to(tl.float32)
    s = tl.load(sin_ptr + b * D + d).to(tl.float32)
    q = _rot(q_ptr + b * sq + h * D, c, s, d, rot, sign)
    tl.store(qo_ptr + (b * H + h) * D + d, q)
    if h < HKV:
        pos = tl.load(pos_ptr + b)
        dst = b * s_slot + h * s_head + pos * s_pos + d
        k = _rot(k_ptr + b * sk + h * D, c, s, d, rot, sign)
        tl.store(kc_ptr + dst, k)
        v = tl.load(v_ptr + b * sv + h * D + d)
        tl.store(vc_ptr + dst, v)


@triton.jit
def route_topk(logits_ptr, idx_ptr, wt_ptr, scale, E, TOPK: tl.constexpr, EP: tl.constexpr):
    # softmax over one token's fp32 router logits, greedy top-k, routed scaling
    t = tl.program_id(0)
    e = tl.arange(0, EP)
    em = e < E
    acc = tl.load(logits_ptr + t * E + e, mask=em, other=float("-inf"))
    p = tl.exp(acc - tl.max(acc, axis=0))
    p = p / tl.sum(p, axis=0)
    p = tl.where(em, p, -1.0)
    for j in tl.static_range(TOPK):
        best = tl.max(p, axis=0)
        arg = tl.min(tl.where(p == best, e, EP), axis=0)  # first index among ties
        tl.store(idx_ptr + t * TOPK + j, arg)
        tl.store(wt_ptr + t * TOPK + j, best * scale)
        p = tl.where(e == arg, -2.0, p)


@triton.jit
def moe_combine(y_ptr, shared_ptr, out_ptr, N, TOPK: tl.constexpr, BLOCK: tl.constexpr):
    # out = (sum_j y[t, j]) rounded to the model dtype, + shared expert output (torch's order and roundings)
    t = tl.program_id(0)
    nb = tl.program_id(1)
    n = nb * BLOCK + tl.arange(0, BLOCK)
    m = n < N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in tl.static_range(TOPK):
        acc += tl.load(y_ptr + (t * TOPK + j) * N + n, mask=m, other=0.0)
    dt = out_ptr.dtype.element_ty
    sh = tl.load(shared_ptr + t * N + n, mask=m, other=0.0).to(tl.float32)
    out = acc.to(dt).to(tl.float32) + sh
    tl.store(out_ptr + t * N + n, out.to(dt), mask=m)


@triton.jit(do_not_specialize=["T"])
def moe_up(
    x_ptr, w_ptr, idx_ptr, h_ptr, T, K, INTER,
    TOPK: tl.constexpr, KP: tl.constexpr, TKP: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr,
):  # fmt: skip
    e = tl.program_id(0)
    nb = tl.program_id(1)
    tk = tl.arange(0, TKP)
    ids = tl.load(idx_ptr + tk, mask=tk < T * TOPK, other=-1)
    if tl.sum((ids == e).to(tl.int32), axis=0) > 0:
        dt = h_ptr.dtype.element_ty
        n = nb * BN + tl.arange(0, BN)
        nm = n < INTER
        wbase = w_ptr + e.to(tl.int64) * (2 * INTER * K)
        for m0 in range(0, T, BM):
            rows = m0 + tl.arange(0, BM)
            rmask = rows < T
            has, j = slot_of(idx_ptr, rows, rmask, e, TOPK, KP)
            if tl.sum(has.to(tl.int32), axis=0) > 0:
                g = tl.zeros([BM, BN], dtype=tl.float32)
                u = tl.zeros([BM, BN], dtype=tl.float32)
                for k0 in range(0, K, BK):
                    kk = k0 + tl.arange(0, BK)
                    km = kk < K
                    x = tl.load(
                        x_ptr + rows[:, None] * K + kk[None, :], mask=has[:, None] & km[None, :], other=0.0
                    )
                    wg = tl.load(
                        wbase + n[:, None] * K + kk[None, :], mask=nm[:, None] & km[None, :], other=0.0
                    )
                    wu = tl.load(
                        wbase + (n[:, None] + INTER) * K + kk[None, :],
                        mask=nm[:, None] & km[None, :],
                        other=0.0,
                    )
                    if IEEE:
                        g += tl.dot(x, tl.trans(wg), input_precision="ieee")
                        u += tl.dot(x, tl.trans(wu), input_precision="ieee")
                    else:
                        g += tl.dot(x, tl.trans(wg))
                        u += tl.dot(x, tl.trans(wu))
                g = g.to(dt).to(tl.float32)
                u = u.to(dt).to(tl.float32)
                a = (g / (1.0 + tl.exp(-g))).to(dt).to(tl.float32)
                out = (a * u).to(dt)
                dst = h_ptr + (rows[:, None] * TOPK + j[:, None]) * INTER + n[None, :]
                tl.store(dst, out, mask=has[:, None] & nm[None, :])


@triton.jit(do_not_specialize=["T"])
def moe_down(
    h_ptr, w_ptr, idx_ptr, wt_ptr, y_ptr, T, INTER, N,
    TOPK: tl.constexpr, KP: tl.constexpr, TKP: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr,
):  # fmt: skip
    e = tl.program_id(0)
    nb = tl.program_id(1)
    tk = tl.arange(0, TKP)
    ids = tl.load(idx_ptr + tk, mask=tk < T * TOPK, other=-1)
    if tl.sum((ids == e).to(tl.int32), axis=0) > 0:
        dt = h_ptr.dtype.element_ty
        n = nb * BN + tl.arange(0, BN)
        nm = n < N
        wbase = w_ptr + e.to(tl.int64) * (N * INTER)
        for m0 in range(0, T, BM):
            rows = m0 + tl.arange(0, BM)
            rmask = rows < T
            has, j = slot_of(idx_ptr, rows, rmask, e, TOPK, KP)
            if tl.sum(has.to(tl.int32), axis=0) > 0:
                acc = tl.zeros([BM, BN], dtype=tl.float32)
                pair = rows * TOPK + j
                for k0 in range(0, INTER, BK):
                    kk = k0 + tl.arange(0, BK)
                    km = kk < INTER
                    a = tl.load(
                        h_ptr + pair[:, None] * INTER + kk[None, :],
                        mask=has[:, None] & km[None, :],
                        other=0.0,
                    )
                    w = tl.load(
                        wbase + n[:, None] * INTER + kk[None, :], mask=nm[:, None] & km[None, :], other=0.0
                    )
                    if IEEE:
                        acc += tl.dot(a, tl.trans(w), input_precision="ieee")
                    else:
                        acc += tl.dot(a, tl.trans(w))
                wt = tl.load(wt_ptr + pair, mask=has, other=0.0)
                y = acc.to(dt).to(tl.float32) * wt[:, None]
                tl.store(y_ptr + pair[:, None] * N + n[None, :], y, mask=has[:, None] & nm[None, :])


@triton.jit
def argmax_partial(x_ptr, val_ptr, idx_ptr, V, NB, BLOCK: tl.constexpr):
    # stage 1 of a row argmax over a wide vocabulary: one program per (row, block of BLOCK ids)
    r = tl.program_id(0)
    b = tl.program_id(1)
    offs = b * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r.to(tl.int64) * V + offs, mask=offs < V, other=float("-inf"))
    best = tl.max(x, axis=0)
    arg = tl.min(tl.where(x == best, offs, V), axis=0)  # first index among ties, like torch.argmax
    tl.store(val_ptr + r * NB + b, best)
    tl.store(idx_ptr + r * NB + b, arg)


@triton.jit
def argmax_final(val_ptr, idx_ptr, out_ptr, NB, V, NBP: tl.constexpr):
    r = tl.program_id(0)
    j = tl.arange(0, NBP)
    m = j < NB
    v = tl.load(val_ptr + r * NB + j, mask=m, other=float("-inf"))
    i = tl.load(idx_ptr + r * NB + j, mask=m, other=V)
    best = tl.max(v, axis=0)
    tl.store(out_ptr + r, tl.min(tl.where(v == best, i, V), axis=0).to(tl.int64))


@triton.jit(do_not_specialize=["L"])
def ngram_ban(
    logits_ptr, seq_ptr, kv_ptr, start_ptr, ex_ptr, V, L, NEX,
    N: tl.constexpr, W: tl.constexpr, JP: tl.constexpr, CP: tl.constexpr, EXP: tl.constexpr,
):  # fmt: skip
    # the no-repeat rule of guard.ban_repeated_ngrams_ for one row (sequence = kv_len + 1 tokens)
    r = tl.program_id(0)
    seq_len = tl.load(kv_ptr + r) + 1
    start = tl.load(start_ptr + r)
    if seq_len - start >= N:
        row = seq_ptr + r.to(tl.int64) * L
        j = tl.arange(0, JP)
        c = tl.arange(0, CP)
        cm = c < N - 1
        first = seq_len - W + j  # where each candidate n-gram starts
        valid = (j < W - N + 1) & (first >= start)
        toks = tl.load(row + first[:, None] + c[None, :], mask=valid[:, None] & cm[None, :], other=-1)
        pre = tl.load(row + seq_len - (N - 1) + c, mask=cm, other=-1)
        eq = (toks == pre[None, :]) | (c[None, :] >= N - 1)
        match = (tl.sum(eq.to(tl.int32), axis=1) == CP) & valid
        banned = tl.load(row + first + N - 1, mask=valid, other=0)
        e = tl.arange(0, EXP)
        ex = tl.load(ex_ptr + e, mask=e < NEX, other=-1)
        exempt = tl.sum((banned[:, None] == ex[None, :]).to(tl.int32), axis=1) > 0
        tl.store(logits_ptr + r.to(tl.int64) * V + banned, float("-inf"), mask=match & ~exempt)


@triton.jit(do_not_specialize=["L", "B"])
def finish_token(
    nxt_ptr, seq_ptr, kv_ptr, gen_ptr, maxnew_ptr, code_ptr, done_ptr, active_ptr, eos_ptr, NEOS, L, B,
    BLOCK: tl.constexpr, EP: tl.constexpr,
):  # fmt: skip
    # bookkeeping of decode._take_token for rows [0, B): append, count, advance, stop flags
    r = tl.arange(0, BLOCK)
    m = r < B
    active = tl.load(active_ptr + r, mask=m, other=0) != 0
    done = tl.load(done_ptr + r, mask=m, other=1) != 0
    run = m & active & (done == 0)
    nxt = tl.load(nxt_ptr + r, mask=m, other=0)
    kv = tl.load(kv_ptr + r, mask=m, other=0)
    at = tl.minimum(kv + 1, L - 1)
    tl.store(seq_ptr + r.to(tl.int64) * L + at, nxt, mask=run)
    gen = tl.load(gen_ptr + r, mask=m, other=0) + 1
    tl.store(gen_ptr + r, gen, mask=run)
    tl.store(kv_ptr + r, kv + 1, mask=run)
    e = tl.arange(0, EP)
    eos = tl.load(eos_ptr + e, mask=e < NEOS, other=-1)
    is_eos = run & (tl.sum((nxt[:, None] == eos[None, :]).to(tl.int32), axis=1) > 0)
    is_len = run & (gen >= tl.load(maxnew_ptr + r, mask=m, other=0))
    stop = is_eos | is_len
    tl.store(code_ptr + r, tl.where(is_eos, 1, 2).to(tl.int64), mask=stop)
    tl.store(done_ptr + r, stop, mask=stop)


@triton.jit(do_not_specialize=["chunk"])
def attn_partial(
    q_ptr, kc_ptr, vc_ptr, pos_ptr, po_ptr, plse_ptr, s_slot, s_head, s_pos, chunk, scale,
    H: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr, NSP: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    # one (row, head, split): softmax-weighted V over keys [split·chunk, min(+chunk, pos + 1)) with the
    # split's own max and log-sum-exp; splits past the row's length store nothing (attn_reduce skips them)
    b = tl.program_id(0)
    h = tl.program_id(1)
    sp = tl.program_id(2)
    length = (tl.load(pos_ptr + b) + 1).to(tl.int32)
    start = sp * chunk
    if start < length:
        end = tl.minimum(start + chunk, length)
        d = tl.arange(0, D)
        q = tl.load(q_ptr + (b * H + h) * D + d).to(tl.float32) * scale
        base = b * s_slot + (h // GROUP) * s_head
        n = start + tl.arange(0, BLOCK_N)
        live = n < end
        kv = base + n[:, None] * s_pos + d[None, :]
        k = tl.load(kc_ptr + kv, mask=live[:, None], other=0.0).to(tl.float32)
        s = tl.where(live, tl.sum(k * q[None, :], 1), float("-inf"))
        m_i = tl.max(s, 0)
        p = tl.exp(s - m_i)
        v = tl.load(vc_ptr + kv, mask=live[:, None], other=0.0).to(tl.float32)
        acc = tl.sum(p[:, None] * v, 0)
        l_i = tl.sum(p, 0)
        for n0 in range(start + BLOCK_N, end, BLOCK_N):
            n = n0 + tl.arange(0, BLOCK_N)
            live = n < end
            kv = base + n[:, None] * s_pos + d[None, :]
            k = tl.load(kc_ptr + kv, mask=live[:, None], other=0.0).to(tl.float32)
            s = tl.where(live, tl.sum(k * q[None, :], 1), float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 0))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new)
            v = tl.load(vc_ptr + kv, mask=live[:, None], other=0.0).to(tl.float32)
            acc = acc * alpha + tl.sum(p[:, None] * v, 0)
            l_i = l_i * alpha + tl.sum(p, 0)
            m_i = m_new
        at = (b * H + h) * NSP + sp
        tl.store(po_ptr + at * D + d, acc / l_i)
        tl.store(plse_ptr + at, m_i + tl.log(l_i))


@triton.jit(do_not_specialize=["chunk"])
def attn_reduce(
    po_ptr, plse_ptr, pos_ptr, o_ptr, chunk, H: tl.constexpr, D: tl.constexpr, NSP: tl.constexpr
):  # fmt: skip
    # the splits of one (row, head) merged by their log-sum-exp; output row-major [B, H·D]
    b = tl.program_id(0)
    h = tl.program_id(1)
    length = tl.load(pos_ptr + b) + 1
    n_live = (length + chunk - 1) // chunk
    sp = tl.arange(0, NSP)
    live = sp < n_live
    at = (b * H + h) * NSP + sp
    lse = tl.load(plse_ptr + at, mask=live, other=float("-inf"))
    w = tl.where(live, tl.exp(lse - tl.max(lse, 0)), 0.0)
    d = tl.arange(0, D)
    part = tl.load(po_ptr + at[:, None] * D + d[None, :], mask=live[:, None], other=0.0)
    out = tl.sum(part * w[:, None], 0) / tl.sum(w, 0)
    tl.store(o_ptr + (b * H + h) * D + d, out.to(o_ptr.dtype.element_ty))
