"""The fused SAM layer's Triton kernels on CPU through Triton's interpreter (``TRITON_INTERPRET=1``).

References are transformers' own SAM layer pieces (``window_partition``, ``window_unpartition``,
``get_decomposed_rel_pos``, the layer's ``forward``) on the tiny config (hidden 32, 2 heads of 16,
window 14), in float32, with every norm weight, bias and rel-pos table drawn at random so that a
padding token written as the norm's bias, or a bias term in the wrong column, shows. Shapes are small
(the interpreter runs each program in numpy): 18×18 tokens need window padding (18 → 28), 14×28 do not.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels then run in numpy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from ocr_app.models.deepseek_ocr2 import sam_kernels as sk  # noqa: E402
from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model  # noqa: E402

TOL = {"rtol": 1e-5, "atol": 1e-5}
LAUNCHERS = ("ln_partition", "augment_qkv", "merge_heads", "add_ln")


@pytest.fixture
def launches(monkeypatch):
    """Counts of each kernel launcher's calls (the fused path ran, not transformers' layer)."""
    counts = dict.fromkeys(LAUNCHERS, 0)
    for name in LAUNCHERS:
        real = getattr(sk, name)

        def spy(*a, _real=real, _name=name, **kw):
            counts[_name] += 1
            return _real(*a, **kw)

        monkeypatch.setattr(sk, name, spy)
    return counts


@pytest.fixture(scope="module")
def sam():
    model = random_model(config_dict("tiny"), torch.device("cpu"), torch.float32, seed=0)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.model.vision_tower.sam_encoder.named_parameters():
            if "layer_norm" in name or "rel_pos" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5 + (1.0 if name.endswith("weight") else 0.0))
    return model.model.vision_tower.sam_encoder


def _layers(sam):
    windowed = next(layer for layer in sam.layers if layer.window_size > 0)
    global_ = next(layer for layer in sam.layers if layer.window_size == 0)
    assert windowed.window_size == 14
    return windowed, global_


@pytest.mark.parametrize("hw", [(18, 18), (14, 28)])
def test_ln_partition_matches_norm_pad_partition(sam, hw):
    layer, _ = _layers(sam)
    g = torch.Generator().manual_seed(hw[0])
    # a permuted input, as the patch embedding hands the first layer a [B, C, H, W] tensor's permute
    x = torch.randn(2, 32, *hw, generator=g).permute(0, 2, 3, 1)
    ln = layer.layer_norm1
    with torch.inference_mode():
        ref, _ = layer.window_partition(ln(x), 14)
        out = sk.ln_partition(x, ln.weight, ln.bias, ln.eps, 14)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, **TOL)
    if hw == (18, 18):  # padding tokens are zeros, not the norm's bias
        assert torch.equal(out[1, :, 4:], torch.zeros_like(out[1, :, 4:]))
        assert ln.bias.abs().min() > 0


@pytest.mark.parametrize(("hw", "window"), [((18, 18), 14), ((14, 28), 14), ((18, 18), 0)])
def test_add_ln_matches_unpartition_crop_add_norm(sam, hw, window):
    windowed, global_ = _layers(sam)
    layer = windowed if window else global_
    g = torch.Generator().manual_seed(hw[1] + window)
    h, w = hw
    residual = torch.randn(2, 32, h, w, generator=g).permute(0, 2, 3, 1)
    if window:
        ph, pw = -(-h // 14) * 14, -(-w // 14) * 14
        attn_out = torch.randn(2 * (ph // 14) * (pw // 14), 14, 14, 32, generator=g)
        unpart = layer.window_unpartition(attn_out, 14, (ph, pw), (h, w))
    else:
        attn_out = torch.randn(2, h, w, 32, generator=g)
        unpart = attn_out
    ln = layer.layer_norm2
    with torch.inference_mode():
        ref_h = residual + unpart
        ref_n = ln(ref_h)
        hidden, normed = sk.add_ln(attn_out, residual, ln.weight, ln.bias, ln.eps, window)
    torch.testing.assert_close(hidden, ref_h, **TOL)
    torch.testing.assert_close(normed, ref_n, **TOL)


@pytest.mark.parametrize("hw", [(14, 14), (9, 9), (6, 11), (36, 40)])  # (36, 40): 2 chunks a row and a column
def test_augment_qkv_folds_transformers_rel_pos_bias_into_qk(sam, hw):
    """``q'·k'ᵀ`` is transformers' ``scale·q·kᵀ + decomposed_rel_pos``; ``v'`` is v then zeros; the
    tensors equal the torch construction of ``sam_attention._augmented_attention``."""
    from ocr_app.models.deepseek_ocr2.sam_attention import _rel_tables

    _, layer = _layers(sam)
    attn = layer.attn
    h, w = hw
    views, heads, hd = (2 if h * w < 400 else 1), attn.num_attention_heads, 16
    x = torch.randn(views, h, w, 32, generator=torch.Generator().manual_seed(h * w))
    with torch.inference_mode():
        qkv = attn.qkv(x)
        parts = (
            qkv.reshape(views, h * w, 3, heads, hd)
            .permute(2, 0, 3, 1, 4)
            .reshape(3, views * heads, h * w, hd)
        )
        query, key, value = parts.unbind(0)
        table_h, table_w = _rel_tables(attn, h, w)
        q4, k4, v4 = sk.augment_qkv(qkv, table_h, table_w, heads, attn.scale)
        assert q4.is_contiguous() and k4.is_contiguous() and v4.is_contiguous()
        q, k, v = (x.reshape(views * heads, h * w, -1) for x in (q4, k4, v4))
        bias = attn.get_decomposed_rel_pos(query, attn.rel_pos_h, attn.rel_pos_w, (h, w), (h, w))
        ref_logits = (query * attn.scale) @ key.transpose(-2, -1) + bias.reshape(views * heads, h * w, h * w)
        # the torch construction the kernel replaces
        q5 = query.reshape(-1, h, w, hd)
        rel_h = torch.einsum("bhwc,hkc->bhwk", q5, table_h).reshape(-1, h * w, h)
        rel_w = torch.einsum("bhwc,wkc->bhwk", q5, table_w).reshape(-1, h * w, w)
        rows = torch.arange(h * w)
        one_h = torch.nn.functional.one_hot(rows // w, h).float().expand(views * heads, -1, -1)
        one_w = torch.nn.functional.one_hot(rows % w, w).float().expand(views * heads, -1, -1)
    dp = sk.augmented_width(hd, h, w)
    assert dp % 8 == 0 and q.shape == k.shape == v.shape == (views * heads, h * w, dp)
    pad = dp - hd - h - w
    torch.testing.assert_close(
        q, torch.cat([query * attn.scale, rel_h, rel_w, q.new_zeros(*q.shape[:2], pad)], -1), **TOL
    )
    assert torch.equal(k, torch.cat([key, one_h, one_w, k.new_zeros(*k.shape[:2], pad)], -1))
    assert torch.equal(v, torch.cat([value, v.new_zeros(*v.shape[:2], dp - hd)], -1))
    torch.testing.assert_close(q @ k.transpose(-2, -1), ref_logits, rtol=1e-4, atol=1e-4)
    nq, nk, nv = sk.augment_qkv(qkv, table_h, table_w, heads, attn.scale, narrow_v=True)
    assert nv.shape == (views, heads, h * w, hd) and nv.transpose(1, 2).is_contiguous()  # token-major
    assert torch.equal(nq, q4) and torch.equal(nk, k4)
    assert torch.equal(nv.reshape(views * heads, h * w, hd), value)


def test_merge_heads_reads_any_layout():
    g = torch.Generator().manual_seed(3)
    views, heads, t, dp, hd = 3, 2, 20, 40, 16
    # the attention output in the [views, T, heads, D'] layout some SDPA backends return
    out = torch.randn(views, t, heads, dp, generator=g).transpose(1, 2)
    merged = sk.merge_heads(out, hd)
    assert torch.equal(merged, out[..., :hd].permute(0, 2, 1, 3).reshape(views, t, heads * hd))
    # already merged in memory (narrow values, token-major): a view of the same storage, no kernel
    narrow = out[..., :hd].contiguous().transpose(1, 2).contiguous().transpose(1, 2)
    view = sk.merge_heads(narrow, hd)
    assert view.data_ptr() == narrow.data_ptr() and torch.equal(view, merged)


@pytest.mark.parametrize(
    ("kind", "hw", "narrow_v"),
    [
        ("windowed", (18, 18), False),
        ("windowed", (14, 28), False),
        ("global", (9, 9), False),
        ("global", (9, 9), True),
    ],
)
def test_fused_layer_matches_transformers_layer(sam, kind, hw, narrow_v, launches, monkeypatch):
    monkeypatch.setattr(sk, "NARROW_V", narrow_v)
    windowed, global_ = _layers(sam)
    layer = windowed if kind == "windowed" else global_
    x = torch.randn(2, 32, *hw, generator=torch.Generator().manual_seed(7)).permute(0, 2, 3, 1)
    with torch.inference_mode():
        ref = type(layer).forward(layer, x)
        layer.__dict__[sk._FORCE] = True
        try:
            out = sk._fused_layer_forward(layer, x)
        finally:
            del layer.__dict__[sk._FORCE]
    assert out.shape == ref.shape == (2, *hw, 32)
    torch.testing.assert_close(out, ref, **TOL)
    windows = int(kind == "windowed")
    assert launches == {"ln_partition": windows, "augment_qkv": 1, "merge_heads": 1, "add_ln": 1}


def test_fuse_sam_layers_runs_the_encoder_and_restores(sam, launches):
    """Through the model's own encoder forward (hooks, layer loop): fused output equals transformers'
    up to rounding; CPU models are left alone unless asked; a pass recording gradients stays unfused."""
    model = torch.nn.Module()
    model.sam = sam
    pixels = torch.randn(1, 3, 288, 288, generator=torch.Generator().manual_seed(5))  # 18×18 tokens
    with torch.inference_mode():
        ref = sam(pixels).last_hidden_state
        assert sk.fuse_sam_layers(model) == 0 and not sk.is_fused(model)  # CPU: unfused
        assert sk.fuse_sam_layers(model, any_device=True) == 2 and sk.is_fused(model)
        try:
            out = sam(pixels).last_hidden_state
        finally:
            sk.fuse_sam_layers(model, enabled=False)
        assert not sk.is_fused(model)
        assert torch.equal(sam(pixels).last_hidden_state, ref)
    torch.testing.assert_close(out, ref, **TOL)
    assert launches == {
        "ln_partition": 1,
        "augment_qkv": 2,
        "merge_heads": 2,
        "add_ln": 2,
    }  # 1 windowed + 1 global
    sk.fuse_sam_layers(model, any_device=True)
    try:
        # an empty batch of views goes to transformers' layer (and its error), not to zero-size launches
        with torch.inference_mode(), pytest.raises(RuntimeError, match="0 elements"):
            sam.layers[0](torch.zeros(0, 18, 18, 32))
        assert launches["ln_partition"] == 1
        with torch.enable_grad():
            x = torch.randn(1, 18, 18, 32, requires_grad=True)
            layer = sam.layers[0]
            y = layer(x)
            assert launches["add_ln"] == 2  # no kernel ran: the kernels have no backward
            assert torch.equal(y.detach(), type(layer).forward(layer, x).detach())
            y.sum().backward()
            assert x.grad is not None
    finally:
        sk.fuse_sam_layers(model, enabled=False)


def test_loader_fuses_per_setting_and_only_cuda_models(tiny_checkpoint, monkeypatch):
    from ocr_app.models.deepseek_ocr2 import loading

    seen = []
    real = loading.fuse_sam_layers
    monkeypatch.setattr(
        loading, "fuse_sam_layers", lambda model, enabled: seen.append(enabled) or real(model, enabled)
    )
    for enabled in (True, False):
        model, _ = loading.load_model(
            str(tiny_checkpoint), torch.device("cpu"), torch.float32, vision_fused=enabled
        )
        assert not sk.is_fused(model)  # a CPU model keeps transformers' layer even with the setting on
    assert seen == [True, False]
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.settings import Settings

    assert Settings().vision_fused is True
    settings = Settings(
        _env_file=None, model=str(tiny_checkpoint), device="cpu", dtype="fp32", vision_fused="0"
    )
    engine = DeepSeekOcr2Engine(settings)  # the setting reaches the loader through the engine
    engine.load()
    engine.unload()
    assert seen == [True, False, False]


def _trunc_bf16(x: torch.Tensor) -> torch.Tensor:
    """fp32 → bf16 as Triton's interpreter converts (truncation; the GPU rounds to nearest)."""
    return (x.float().contiguous().view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)


def test_kernels_in_bf16_store_their_fp32_results(sam):
    """bf16 (the GPU's dtype): each kernel computes in fp32 from the bf16 inputs and stores the result
    once in bf16, so its output is the fp32 kernel's output (on the same inputs) converted once."""
    from ocr_app.models.deepseek_ocr2.sam_attention import _rel_tables

    windowed, global_ = _layers(sam)
    g = torch.Generator().manual_seed(13)
    bf = torch.bfloat16
    x = torch.randn(2, 32, 18, 18, generator=g).permute(0, 2, 3, 1).to(bf)
    ln = windowed.layer_norm1
    w, b = ln.weight.to(bf), ln.bias.to(bf)
    out = sk.ln_partition(x, w, b, ln.eps, 14)
    assert out.dtype == bf and torch.equal(
        out, _trunc_bf16(sk.ln_partition(x.float(), w.float(), b.float(), ln.eps, 14))
    )
    attn_out = torch.randn(8, 14, 14, 32, generator=g).to(bf)
    hidden, normed = sk.add_ln(attn_out, x, w, b, ln.eps, 14)
    hidden32, _ = sk.add_ln(attn_out.float(), x.float(), w.float(), b.float(), ln.eps, 14)
    assert torch.equal(hidden, _trunc_bf16(hidden32))  # the residual sum is rounded before the norm
    _, norm32 = sk.add_ln(torch.zeros(2, 18, 18, 32), hidden.float(), w.float(), b.float(), ln.eps, 0)
    assert torch.equal(normed, _trunc_bf16(norm32))  # the norm of the rounded sum, stored once
    attn = global_.attn
    qkv = torch.randn(2, 9, 9, 96, generator=g).to(bf)
    th, tw = (t.to(bf) for t in _rel_tables(attn, 9, 9))
    got = sk.augment_qkv(qkv, th, tw, 2, attn.scale)
    want = sk.augment_qkv(qkv.float(), th.float(), tw.float(), 2, attn.scale)
    for a, e in zip(got, want, strict=True):
        assert a.dtype == bf and torch.equal(a, _trunc_bf16(e))


@pytest.mark.parametrize("kind", ["windowed", "global"])
def test_fused_layer_in_bf16_is_as_close_to_fp32_as_transformers_bf16_layer(sam, kind, launches):
    """bf16 (the GPU's dtype) end to end: the fused layer is about as close to the fp32 layer as
    transformers' bf16 layer (the interpreter converts fp32→bf16 by truncation, the GPU to nearest)."""
    import copy

    windowed, global_ = _layers(sam)
    layer32 = windowed if kind == "windowed" else global_
    layer = copy.deepcopy(layer32).to(torch.bfloat16)
    x32 = torch.randn(1, 32, 18, 18, generator=torch.Generator().manual_seed(11)).permute(0, 2, 3, 1)
    x = x32.to(torch.bfloat16)
    with torch.inference_mode():
        exact = type(layer32).forward(layer32, x.float())  # fp32 layer on the same (bf16-rounded) input
        ref = type(layer).forward(layer, x).float()
        layer.__dict__[sk._FORCE] = True
        out = sk._fused_layer_forward(layer, x)
    assert out.dtype == torch.bfloat16 and launches["add_ln"] == 1
    err_ref = (ref - exact).abs().max().item()
    err = (out.float() - exact).abs().max().item()
    # transformers' bf16 layer is within ~1 bf16 step of fp32 here (0.015 at outputs up to 3.6); the
    # interpreter's truncation at the fused kernels' stores adds a little (0.022 and 0.015 measured)
    assert 0 < err <= 2 * err_ref, (err, err_ref)


SM90_CHECK = r"""
import os, subprocess, tempfile, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from ocr_app.models.deepseek_ocr2 import sam_kernels as sk, sam_triton as st

tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
bf = "*bf16"


def build(fn, types, consts, ones=(), num_warps=4):
    # as the production launch specialises: unit channel strides are constants, pointers 16-byte
    # aligned, the other strides multiples of 16; sizes (do_not_specialize) stay plain integers
    plain = {fn.arg_names[x] if isinstance(x, int) else x for x in fn.do_not_specialize}
    consts = {**consts, **{n: 1 for n in ones if n not in plain}}
    sig = {n: ("constexpr" if n in consts else types.get(n, "i32")) for n in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names)
             if n not in consts and n not in plain and (sig[n].startswith("*") or n.startswith("s"))}
    src = ASTSource(fn, sig, constexprs=consts, attrs=attrs)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    path = tempfile.mktemp(suffix=".cubin")
    with open(path, "wb") as f:
        f.write(kernel.asm["cubin"])
    usage = subprocess.run([tool, "--dump-resource-usage", path], capture_output=True, text=True).stdout
    ptx = kernel.asm["ptx"]
    vec = f"v4ld={ptx.count('ld.global.v4')} v4st={ptx.count('st.global.v4')}"
    print("USAGE", fn.__name__, vec, usage.strip().splitlines()[-1])


# the full model's shapes: C 768, 12 heads of 64, windows of 14, global views of 64 and 48 tokens a side
rows = sk._rows_per_program(1024)
build(st.ln_partition, {"x_ptr": bf, "w_ptr": bf, "b_ptr": bf, "out_ptr": bf, "eps": "fp32"},
      {"C": 768, "WS": 14, "ROWS": rows, "BLOCK_C": 1024}, ones=("sxc",))
for ws in (14, 0):
    build(st.add_ln, {"a_ptr": bf, "r_ptr": bf, "w_ptr": bf, "b_ptr": bf, "h_ptr": bf, "o_ptr": bf, "eps": "fp32"},
          {"C": 768, "WS": ws, "ROWS": rows, "BLOCK_C": 1024}, ones=("src_c",))
for side in (14, 48, 64):
    cfg = sk.augment_config(side, side)
    warps = cfg.pop("num_warps")
    build(st.augment_qkv, {"qkv_ptr": bf, "th_ptr": bf, "tw_ptr": bf, "q_ptr": bf, "k_ptr": bf, "v_ptr": bf,
                           "scale": "fp32"}, {"C": 768, "HD": 64, "PREC": "tf32", **cfg}, num_warps=warps)
build(st.merge_heads, {"o_ptr": bf, "m_ptr": bf}, {"C": 768, "HD": 64, "BT": sk.MERGE_TOKENS})
"""


def test_kernels_compile_for_sm90_without_register_spills():
    """The interpreter checks the arithmetic, not what the GPU compiler accepts: compile every kernel at
    the full model's shapes for sm_90 (H100/H200) through Triton's own toolchain (no GPU needed), and
    check ptxas kept every tile in registers (no stack, no local memory) and rows move in 16-byte
    loads and stores (these kernels are memory-bound)."""
    import subprocess
    import sys
    from pathlib import Path

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists():
        pytest.skip(f"Triton's NVIDIA toolchain is not installed ({tool})")
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(root)
    res = subprocess.run([sys.executable, "-c", SM90_CHECK], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [x for x in res.stdout.splitlines() if x.startswith("USAGE")]
    assert len(lines) == 7, res.stdout
    for line in lines:
        assert "STACK:0 " in line and "LOCAL:0 " in line, line
        assert "v4ld=0 " not in line, line  # rows read with 16-byte loads (aligned, contiguous)
        if "augment_qkv" not in line:  # its one-hot/rel columns start at H: not 16-byte aligned
            assert "v4st=0 " not in line, line


@pytest.mark.parametrize(("window", "hw"), [(14, (18, 18)), (0, (9, 9))])
def test_fused_layer_with_a_width_that_is_not_a_power_of_two(window, hw, launches):
    """The full model's width (768) is not a power of two: rows are masked to C inside a 1024-wide block.
    Same here at 48 (3 heads of 16) in a 64-wide block."""
    from transformers.models.deepseek_ocr2.configuration_deepseek_ocr2 import DeepseekOcr2SamVisionConfig
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import DeepseekOcr2SamVisionLayer

    cfg = DeepseekOcr2SamVisionConfig(hidden_size=48, num_attention_heads=3, mlp_dim=96)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    layer = DeepseekOcr2SamVisionLayer(cfg, window_size=window).eval()
    with torch.no_grad():
        for p in layer.parameters():
            p.normal_(0, 0.5)
    x = torch.randn(1, *hw, 48, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        ref = type(layer).forward(layer, x)
        layer.__dict__[sk._FORCE] = True
        out = sk._fused_layer_forward(layer, x)
    assert launches["add_ln"] == 1
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


def test_without_triton_the_layers_stay_unfused(sam, monkeypatch, caplog):
    monkeypatch.setattr(sk, "available", lambda: False)
    with caplog.at_level("WARNING", logger=sk.logger.name):
        assert sk.fuse_sam_layers(sam, any_device=True) == 0
    assert not sk.is_fused(sam) and "Triton is not importable" in caplog.text


def test_native_sam_layers_fuse_and_match_transformers_encoder(sam, launches):
    """The native SAM encoder (``native_vision``), given the same weights, is found and fused by the same
    call (class checks go by name, no transformers import) and gives transformers' output."""
    from ocr_app.models.deepseek_ocr2.native_config import SamConfig
    from ocr_app.models.deepseek_ocr2.native_vision import SamEncoder

    native = SamEncoder(SamConfig(config_dict("tiny")["vision_config"]["sam_config"])).eval()
    native.load_state_dict(sam.state_dict())
    model = torch.nn.Module()
    model.sam = native
    pixels = torch.randn(1, 3, 288, 288, generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        ref = sam(pixels).last_hidden_state
        torch.testing.assert_close(native(pixels), ref, **TOL)
        assert sk.fuse_sam_layers(model, any_device=True) == 2 and sk.is_fused(model)
        try:
            out = native(pixels)
        finally:
            sk.fuse_sam_layers(model, enabled=False)
    torch.testing.assert_close(out, ref, **TOL)
    assert launches == {"ln_partition": 1, "augment_qkv": 2, "merge_heads": 2, "add_ln": 2}
