"""Triton kernels of the fused SAM layer (imported only when a kernel runs, through ``sam_kernels``).

Module-level because Triton resolves the helpers a kernel calls through the module's globals.
See ``sam_kernels`` for what each kernel replaces and why. Sizes are not specialised
(``do_not_specialize``): the vision pass sees a few per layer kind, and each specialisation is one more
compile at cold start. Strides are (Triton's default: equal to 1, or a multiple of 16), which is what
lets the compiler prove rows contiguous and aligned and use 16-byte loads and stores.
"""

import triton
import triton.language as tl

next_pow2 = triton.next_power_of_2


@triton.jit
def _layer_norm_rows(v, cmask, w_ptr, b_ptr, cols, eps, C: tl.constexpr):
    """LayerNorm of fp32 rows [R, BLOCK_C] (padding columns masked), as torch computes it: fp32 stats."""
    mean = tl.sum(v, 1) / C
    d = tl.where(cmask[None, :], v - mean[:, None], 0.0)
    var = tl.sum(d * d, 1) / C
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
    return d * rstd[:, None] * w[None, :] + b[None, :]


@triton.jit(do_not_specialize=["n_rows", "H", "W", "n_wh", "n_ww"])
def ln_partition(
    x_ptr, w_ptr, b_ptr, out_ptr, n_rows, H, W, n_wh, n_ww, sxb, sxh, sxw, sxc, eps,
    C: tl.constexpr, WS: tl.constexpr, ROWS: tl.constexpr, BLOCK_C: tl.constexpr,
):  # fmt: skip
    # one output row = one token of one window; rows past the image (the window padding) are zeros
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    win = rows // (WS * WS)
    inner = rows % (WS * WS)
    b = win // (n_wh * n_ww)
    wi = win % (n_wh * n_ww)
    y = (wi // n_ww) * WS + inner // WS
    x = (wi % n_ww) * WS + inner % WS
    live = rows < n_rows
    valid = live & (y < H) & (x < W)
    src = b * sxb + y * sxh + x * sxw
    v = tl.load(x_ptr + src[:, None] + cols[None, :] * sxc, mask=valid[:, None] & cmask[None, :], other=0.0)
    out = _layer_norm_rows(v.to(tl.float32), cmask, w_ptr, b_ptr, cols, eps, C)
    out = tl.where(valid[:, None], out, 0.0)
    dst = out_ptr + rows[:, None] * C + cols[None, :]
    tl.store(dst, out.to(out_ptr.dtype.element_ty), mask=live[:, None] & cmask[None, :])


@triton.jit(do_not_specialize=["n_rows", "H", "W", "n_wh", "n_ww"])
def add_ln(
    a_ptr, r_ptr, w_ptr, b_ptr, h_ptr, o_ptr, n_rows, H, W, n_wh, n_ww, srb, srh, srw, src_c, eps,
    C: tl.constexpr, WS: tl.constexpr, ROWS: tl.constexpr, BLOCK_C: tl.constexpr,
):  # fmt: skip
    # one output row = one token of the image; with WS > 0 its attention row is read from its window
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_C)
    cmask = cols < C
    live = rows < n_rows
    m2 = live[:, None] & cmask[None, :]
    b = rows // (H * W)
    p = rows % (H * W)
    y = p // W
    x = p % W
    if WS > 0:
        win = b * (n_wh * n_ww) + (y // WS) * n_ww + x // WS
        src = win * (WS * WS) + (y % WS) * WS + x % WS
    else:
        src = rows
    a = tl.load(a_ptr + src[:, None] * C + cols[None, :], mask=m2, other=0.0).to(tl.float32)
    r_off = b * srb + y * srh + x * srw
    r = tl.load(r_ptr + r_off[:, None] + cols[None, :] * src_c, mask=m2, other=0.0).to(tl.float32)
    h = (r + a).to(h_ptr.dtype.element_ty)  # torch rounds the residual sum to the model dtype
    tl.store(h_ptr + rows[:, None] * C + cols[None, :], h, mask=m2)
    out = _layer_norm_rows(h.to(tl.float32), cmask, w_ptr, b_ptr, cols, eps, C)
    tl.store(o_ptr + rows[:, None] * C + cols[None, :], out.to(o_ptr.dtype.element_ty), mask=m2)


@triton.jit(do_not_specialize=["H", "W", "DP", "VW"])
def augment_qkv(
    qkv_ptr, th_ptr, tw_ptr, q_ptr, k_ptr, v_ptr, H, W, DP, VW, scale,
    s_qb, s_qt, s_h0, s_h1, s_w0, s_w1, s_ob, s_oh, s_ot, s_vb, s_vh, s_vt,
    C: tl.constexpr, HD: tl.constexpr, HP: tl.constexpr, WP: tl.constexpr, BT: tl.constexpr,
    PADP: tl.constexpr, PREC: tl.constexpr,
):  # fmt: skip
    # Program (view b, head, image row/column r), tokens in chunks of BT. Row r: k and its one-hot
    # columns, v, then q·scale and rel_h = q · table_h[r]ᵀ (all tokens of a row share r). Column r:
    # rel_w = q · table_w[r]ᵀ. One phase at a time keeps few tiles live (registers, no spills).
    # Outputs are written through (view, head, token) strides: q' and k' share theirs, v' has its own
    # (its rows are VW wide: D' zero-padded, or the head size). D' and VW are runtime values, so the
    # 1024 px views and the 768 px tiles share one compiled kernel (HP = WP = 64).
    # The dots take fp32 operands: with PREC "tf32" for 16-bit inputs that is exact (a bf16/fp16 value
    # fits TF32's mantissa) and runs on tensor cores; Triton's interpreter multiplies 16-bit operands
    # as raw integers.
    bv = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    r = tl.program_id(2)
    d = tl.arange(0, HD)
    base = qkv_ptr + bv * s_qb + head * HD
    o0 = bv * s_ob + head * s_oh
    v0 = bv * s_vb + head * s_vh
    dt = q_ptr.dtype.element_ty
    kh = tl.arange(0, HP)
    kw = tl.arange(0, WP)
    j8 = tl.arange(0, 8)
    pad = tl.arange(0, PADP)
    tb = tl.arange(0, BT)
    if r < H:
        tab = tl.load(th_ptr + r * s_h0 + kh[:, None] * s_h1 + d[None, :], mask=(kh < H)[:, None], other=0.0)
        tab = tab.to(tl.float32)
        for c0 in range(0, W, BT):
            w = c0 + tb  # tokens r*W + w of row r
            m = (w < W)[:, None]
            t = r * W + w
            src = base + t[:, None] * s_qt + d[None, :]
            row = o0 + t * s_ot
            row_v = v0 + t * s_vt
            # k' = [k, onehot(h = r), onehot(w), 0]
            k = tl.load(src + C, mask=m, other=0.0)
            tl.store(k_ptr + row[:, None] + d[None, :], k.to(dt), mask=m)
            one_h = tl.where(kh[None, :] == r, 1.0, 0.0) + tl.zeros([BT, HP], tl.float32)
            tl.store(k_ptr + row[:, None] + HD + kh[None, :], one_h.to(dt), mask=m & (kh < H)[None, :])
            one_w = tl.where(kw[None, :] == w[:, None], 1.0, 0.0)
            tl.store(k_ptr + row[:, None] + HD + H + kw[None, :], one_w.to(dt), mask=m & (kw < W)[None, :])
            zq = HD + H + W + j8  # q and k: < 8 zero columns after the rel/one-hot ones
            zeros8 = tl.zeros([BT, 8], tl.float32).to(dt)
            tl.store(k_ptr + row[:, None] + zq[None, :], zeros8, mask=m & (zq < DP)[None, :])
            # v' = [v, 0]
            v = tl.load(src + 2 * C, mask=m, other=0.0)
            tl.store(v_ptr + row_v[:, None] + d[None, :], v.to(dt), mask=m)
            zeros = tl.zeros([BT, PADP], tl.float32).to(dt)
            for j in range(0, VW - HD, PADP):
                zv = HD + j + pad
                tl.store(v_ptr + row_v[:, None] + zv[None, :], zeros, mask=m & (zv < VW)[None, :])
            # q' = [q·scale, rel_h, (rel_w: column pass), 0]
            q = tl.load(src, mask=m, other=0.0).to(tl.float32)
            tl.store(q_ptr + row[:, None] + d[None, :], (q * scale).to(dt), mask=m)
            rel_h = tl.dot(q, tl.trans(tab), input_precision=PREC)  # [BT, HP]
            tl.store(q_ptr + row[:, None] + HD + kh[None, :], rel_h.to(dt), mask=m & (kh < H)[None, :])
            tl.store(q_ptr + row[:, None] + zq[None, :], zeros8, mask=m & (zq < DP)[None, :])
    if r < W:
        tab_w = tl.load(
            tw_ptr + r * s_w0 + kw[:, None] * s_w1 + d[None, :], mask=(kw < W)[:, None], other=0.0
        )
        tab_w = tab_w.to(tl.float32)
        for c0 in range(0, H, BT):
            h = c0 + tb  # tokens h*W + r of column r
            m = (h < H)[:, None]
            tc = h * W + r
            qc = tl.load(base + tc[:, None] * s_qt + d[None, :], mask=m, other=0.0).to(tl.float32)
            rel_w = tl.dot(qc, tl.trans(tab_w), input_precision=PREC)  # [BT, WP]
            dst = q_ptr + o0 + tc[:, None] * s_ot + HD + H + kw[None, :]
            tl.store(dst, rel_w.to(dt), mask=m & (kw < W)[None, :])


@triton.jit(do_not_specialize=["T", "heads"])
def merge_heads(
    o_ptr, m_ptr, T, heads, s_b, s_h, s_t, C: tl.constexpr, HD: tl.constexpr, BT: tl.constexpr
):  # fmt: skip
    # [views, heads, T, D'] (any strides, first HD columns) → [views, T, heads·HD]
    bv = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    t = tl.program_id(2) * BT + tl.arange(0, BT)
    tm = t < T
    d = tl.arange(0, HD)
    x = tl.load(o_ptr + bv * s_b + head * s_h + t[:, None] * s_t + d[None, :], mask=tm[:, None])
    tl.store(m_ptr + (bv * T + t)[:, None] * C + head * HD + d[None, :], x, mask=tm[:, None])
