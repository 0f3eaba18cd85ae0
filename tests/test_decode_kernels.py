"""The fused Triton decode kernels on CPU through Triton's interpreter (``TRITON_INTERPRET=1``).

References are plain torch (and transformers' own ``apply_rotary_pos_emb``) in float32, drawn fresh per
shape. The interpreter casts float32→bfloat16 by truncation (the GPU rounds to nearest), so exactness
is checked in float32; the GPU benchmark checks bf16 behaviour.
"""

from __future__ import annotations

import os
from dataclasses import replace

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels then run in numpy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from ocr_app.models.deepseek_ocr2.decoding import kernels as dk  # noqa: E402


def _decode(model, requests, options, slots):
    """Decode through the public path (the scheduler's futures); (results in input order, the decoder's
    kernel choice read before the scheduler closes)."""
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler

    sched = DecodeScheduler(model, options, max_slots=slots)
    try:
        got = [f.result(timeout=600) for f in sched.submit_many(requests)]
        step = sched.decoder.step
        return got, (step.fused, step._fused_moe, step._qkv, step._swiglu)
    finally:
        sched.close()


def test_add_rmsnorm_matches_transformers_rmsnorm():
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import DeepseekOcr2TextRMSNorm

    g = torch.Generator().manual_seed(0)
    norm = DeepseekOcr2TextRMSNorm(40, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(40, generator=g))
    x, r = torch.randn(2, 3, 40, generator=g), torch.randn(2, 3, 40, generator=g)
    out, res = dk.add_rmsnorm(x, norm.weight, norm.variance_epsilon, r)
    assert torch.equal(res, r + x)
    torch.testing.assert_close(out, norm(r + x), rtol=1e-6, atol=1e-6)
    out2, res2 = dk.add_rmsnorm(x, norm.weight, norm.variance_epsilon)
    assert res2 is not None and torch.equal(res2, x)
    torch.testing.assert_close(out2, norm(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2)])
def test_rope_kv_matches_apply_rotary_and_writes_only_each_rows_position(heads, kv_heads):
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import apply_rotary_pos_emb

    g = torch.Generator().manual_seed(heads + kv_heads)
    b, d, slots, length = 3, 16, 5, 12
    q = torch.randn(b, heads * d + 8, generator=g)[:, : heads * d]  # a strided view, like a fused qkv
    k, v = torch.randn(b, kv_heads * d, generator=g), torch.randn(b, kv_heads * d, generator=g)
    pos = torch.tensor([3, 0, 11])
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    emb = torch.cat([pos[:, None] * inv] * 2, -1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]
    kc = torch.full((slots, kv_heads, length, d), 7.0)
    vc = torch.full((slots, kv_heads, length, d), 7.0)
    qo = dk.rope_kv(q, k, v, cos, sin, pos, kc, vc, heads, kv_heads, d)
    qr, kr = apply_rotary_pos_emb(
        q.reshape(b, 1, heads, d).transpose(1, 2), k.view(b, 1, kv_heads, d).transpose(1, 2), cos, sin
    )
    torch.testing.assert_close(qo, qr, rtol=0, atol=1e-6)
    written = torch.zeros(slots, length, dtype=torch.bool)
    for row in range(b):
        torch.testing.assert_close(kc[row, :, pos[row]], kr[row, :, 0], rtol=0, atol=1e-6)
        assert torch.equal(vc[row, :, pos[row]], v.view(b, kv_heads, d)[row])
        written[row, pos[row]] = True
    assert (kc.permute(0, 2, 1, 3)[~written] == 7.0).all()  # nothing else was touched
    assert (vc.permute(0, 2, 1, 3)[~written] == 7.0).all()


def test_route_matches_softmax_topk():
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(5, 48, generator=g), torch.randn(8, 48, generator=g)
    idx, wt = dk.route(x, w, 3, 2.5)
    top_w, top_i = torch.topk((x @ w.T).softmax(-1), 3, dim=-1)
    assert torch.equal(idx, top_i)
    torch.testing.assert_close(wt, top_w * 2.5)


@pytest.mark.parametrize("tokens", [1, 5, 20])
def test_moe_experts_match_loop_reference_including_idle_experts(tokens):
    g = torch.Generator().manual_seed(tokens)
    experts, hidden, inter, top_k = 8, 48, 24, 2
    gate_up = torch.randn(experts, 2 * inter, hidden, generator=g) * 0.1
    down = torch.randn(experts, hidden, inter, generator=g) * 0.1
    x = torch.randn(tokens, hidden, generator=g)
    idx = torch.stack([torch.randperm(experts - 2, generator=g)[:top_k] for _ in range(tokens)])  # 6, 7 idle
    wt = torch.rand(tokens, top_k, generator=g)
    y = dk.moe_experts(x, gate_up, down, idx, wt)
    ref = torch.zeros(tokens, hidden)
    for t in range(tokens):
        for j in range(top_k):
            gate, up = (gate_up[idx[t, j]] @ x[t]).chunk(2)
            ref[t] += wt[t, j] * (down[idx[t, j]] @ (torch.nn.functional.silu(gate) * up))
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # a whole decode through Triton's interpreter
def test_fused_decoder_equals_generate(tiny_checkpoint):
    """The whole fused step (kernels="triton") reproduces ``generate`` with the guard (fp32)."""
    from transformers import AutoModelForImageTextToText, LogitsProcessorList

    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec, NoRepeatNGramGuard
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeRequest, DecoderOptions

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [[0, *torch.randint(5, 390, (n,), generator=g).tolist()] for n in (7, 12)]
    n_new, exempt = 8, (400, 401)
    want = []
    for p in prompts:
        t = torch.tensor([p])
        guard = NoRepeatNGramGuard(GuardSpec(2, 6, exempt), prompt_length=len(p))
        out = model.generate(
            input_ids=t, attention_mask=torch.ones_like(t), max_new_tokens=n_new, do_sample=False,
            logits_processor=LogitsProcessorList([guard]), eos_token_id=None, pad_token_id=0,
        )  # fmt: skip
        want.append(out[0, len(p) :].tolist())
    opts = DecoderOptions(guard=GuardSpec(2, 6, exempt), loop=LoopSpec(0), kernels="triton", check_every=4)
    got, (fused, moe, _, _) = _decode(model, [DecodeRequest(p, {}, n_new) for p in prompts], opts, 2)
    assert fused and moe == [None, "float", "float"]  # layer 0 is the dense MLP
    assert [r.tokens for r in got] == want
    # the same through torch's SDPA over length buckets (the pre-kernel path, still selectable)
    sdpa = replace(opts, attention="sdpa")
    got2, _ = _decode(model, [DecodeRequest(p, {}, n_new) for p in prompts], sdpa, 2)
    assert [r.tokens for r in got2] == want


@pytest.mark.slow  # a whole decode through Triton's interpreter, both expert paths
def test_fused_decoder_with_quantized_experts_equals_generate(tiny_checkpoint, monkeypatch):
    """``mixed`` in the fused step: routing and combine fused around the W4 expert kernels (``pairs``),
    through both expert paths (GEMV, and the sorted GEMM when the pairs exceed its bound)."""
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeRequest, DecoderOptions
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.options import KernelOptions, set_kernel_options
    from ocr_app.quant.presets import get_preset

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    quantize_model(model, get_preset("mixed"), adapter=ADAPTER)
    g = torch.Generator().manual_seed(3)
    prompts = [[0, *torch.randint(5, 390, (n,), generator=g).tolist()] for n in (7, 12, 9)]
    n_new = 6
    want = []
    for p in prompts:  # the module path (torch kernels on CPU) is the reference
        t = torch.tensor([p])
        out = model.generate(
            input_ids=t, attention_mask=torch.ones_like(t), max_new_tokens=n_new, do_sample=False,
            eos_token_id=None, pad_token_id=0,
        )  # fmt: skip
        want.append(out[0, len(p) :].tolist())
    opts = DecoderOptions(guard=GuardSpec(0, 0), loop=LoopSpec(0), kernels="triton", check_every=4)
    for bound in (256, 2):  # 3 pages × top-2 = 6 pairs: GEMV, then sorted GEMM
        set_kernel_options(model, KernelOptions(decode_gemv_max_rows=bound))
        got, (fused, moe, qkv, swiglu) = _decode(
            model, [DecodeRequest(p, {}, n_new) for p in prompts], opts, 4
        )
        assert fused and moe == [None, "quant", "quant"]
        assert all(p is not None for p in qkv) and all(p is not None for p in swiglu)
        assert [r.tokens for r in got] == want, bound


def test_replaced_experts_are_not_fused():
    """A quantized or custom experts module keeps its own forward (no fused kernel on its weights)."""

    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = torch.nn.Linear(2, 2)  # no 3-D gate_up_proj
            self.gate = torch.nn.Module()
            self.shared_experts = torch.nn.Linear(2, 2)

    assert not dk.fusable_moe(Custom())
    assert not dk.fusable_moe(torch.nn.Linear(2, 2))
    assert dk.moe_kind(Custom()) is None and dk.moe_kind(torch.nn.Linear(2, 2)) is None


def test_moe_combine_adds_shared_output_like_transformers():
    g = torch.Generator().manual_seed(7)
    experts, hidden, inter, top_k, tokens = 8, 48, 24, 2, 3
    gate_up = torch.randn(experts, 2 * inter, hidden, generator=g) * 0.1
    down = torch.randn(experts, hidden, inter, generator=g) * 0.1
    x = torch.randn(tokens, hidden, generator=g)
    idx = torch.stack([torch.randperm(experts, generator=g)[:top_k] for _ in range(tokens)])
    wt = torch.rand(tokens, top_k, generator=g)
    shared = torch.randn(tokens, hidden, generator=g)
    routed = dk.moe_experts(x, gate_up, down, idx, wt)
    torch.testing.assert_close(dk.moe_experts(x, gate_up, down, idx, wt, shared=shared), routed + shared)


def test_argmax_matches_torch_including_ties_and_banned_ids():
    g = torch.Generator().manual_seed(11)
    logits = torch.randn(3, 9000, generator=g)
    logits[0, 8500] = logits[0, 20] = 50.0  # a tie across blocks: the first index wins
    logits[1, :] = float("-inf")
    logits[1, 4097] = -1.0
    logits[2, logits[2].argmax()] = float("-inf")  # a banned maximum
    assert torch.equal(dk.argmax(logits), logits.argmax(-1))
    assert dk.argmax(logits)[0].item() == 20


@pytest.mark.parametrize(("n", "w"), [(3, 10), (1, 4), (5, 40)])
def test_ngram_ban_kernel_equals_guard_processor(n, w):
    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, NoRepeatNGramGuard

    g = torch.Generator().manual_seed(n + w)
    exempt, prompt, vocab = (40, 41), 5, 48
    rows = torch.randint(0, 4, (6, 64), generator=g)
    rows[:3, 12:] = rows[:3, 8:12].repeat(1, 13)[:, :52]  # loops: many repeated n-grams
    rows[rows == 2] = exempt[0]
    lengths = torch.tensor([prompt + 1, prompt + n, prompt + 17, prompt + 30, prompt + 59, prompt + 40])
    logits = torch.zeros(6, vocab)
    dk.ngram_ban_(
        logits, rows, lengths - 1, torch.full((6,), prompt), GuardSpec(n, w, exempt), torch.tensor(exempt)
    )
    for i, length in enumerate(lengths.tolist()):
        want = NoRepeatNGramGuard(GuardSpec(n, w, exempt), prompt_length=prompt).banned_mask(
            rows[i : i + 1, :length], vocab
        )
        assert torch.equal(torch.isinf(logits[i : i + 1]), want), (i, length)
    assert torch.isinf(logits).any()


def test_finish_token_bookkeeping():
    seq = torch.zeros(4, 16, dtype=torch.long)
    kv = torch.tensor([3, 5, 7, 2])
    gen, max_new = torch.tensor([1, 4, 2, 0]), torch.tensor([9, 5, 9, 9])
    code = torch.zeros(4, dtype=torch.long)
    done = torch.tensor([False, False, False, True])
    active = torch.tensor([True, True, True, True])
    nxt = torch.tensor([11, 12, 99, 13])  # row 2 emits EOS (99), row 1 reaches its cap, row 3 is done
    dk.finish_token(nxt, seq, kv, gen, max_new, code, done, active, torch.tensor([99]), 4)
    assert seq[0, 4] == 11 and seq[1, 6] == 12 and seq[2, 8] == 99 and seq[3].sum() == 0
    assert kv.tolist() == [4, 6, 8, 2] and gen.tolist() == [2, 5, 3, 0]
    assert code.tolist() == [0, 2, 1, 0] and done.tolist() == [False, True, True, True]


def test_layer_forward_hooks_run_in_the_module_step(tiny_checkpoint):
    """A forward hook on the decoder layers (the fp16 overflow clamp works this way) turns the fused
    step off and runs after every layer, as in the model's own forward."""
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeRequest, DecoderOptions

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    calls = []

    def clamp(_mod, _args, out):
        calls.append(out.shape)
        return out.clamp(-1e4, 1e4)

    for layer in model.model.language_model.layers:
        layer.register_forward_hook(clamp)
    opts = DecoderOptions(guard=GuardSpec(0, 0), loop=LoopSpec(0), kernels="triton", check_every=2)
    got, (fused, _, _, _) = _decode(model, [DecodeRequest([0, 5, 6, 7], {}, 3)], opts, 1)
    assert not fused and len(got[0].tokens) == 3
    prefill_calls = 3  # the model's own forward during prefill: one call per layer
    assert len(calls) == prefill_calls + 3 * 2  # + 2 decode steps (chunks of 2) × 3 layers


def _attention_reference(q, kc, vc, pos, scale):
    heads, kv_heads = q.shape[1], kc.shape[1]
    rows = []
    for r in range(q.shape[0]):
        n = int(pos[r]) + 1
        k = kc[r, :, :n].repeat_interleave(heads // kv_heads, 0)
        v = vc[r, :, :n].repeat_interleave(heads // kv_heads, 0)
        rows.append((torch.softmax((q[r] @ k.transpose(-1, -2)) * scale, -1) @ v).reshape(-1))
    return torch.stack(rows)


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2)])
def test_decode_attention_reads_each_rows_own_length_across_splits(heads, kv_heads):
    """Split-K attention equals softmax(q·kᵀ)·v over keys [0, pos] of each row's own slot: one key, a
    length ending inside a split, and the last position, with GQA; keys past a row's length (filled with
    huge values here) must not leak in."""
    g = torch.Generator().manual_seed(heads * 10 + kv_heads)
    b, d, slots, length = 3, 32, 5, 300
    kc = torch.randn(slots, kv_heads, length, d, generator=g)
    vc = torch.randn(slots, kv_heads, length, d, generator=g)
    q = torch.randn(b, heads, 1, d, generator=g)
    pos = torch.tensor([0, 137, 299])
    poisoned_k, poisoned_v = kc.clone(), vc.clone()
    for r in range(b):
        poisoned_k[r, :, int(pos[r]) + 1 :] = 1e4
        poisoned_v[r, :, int(pos[r]) + 1 :] = -1e4
    want = _attention_reference(q, kc, vc, pos, 0.17)
    for min_chunk in (64, dk.ATTN_MIN_CHUNK):  # five splits, ending mid-block; then one split
        got = dk.decode_attention(q, poisoned_k, poisoned_v, pos, 0.17, length, min_chunk=min_chunk)
        assert got.shape == (b, heads * d)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_decode_attention_fits_only_power_of_two_heads_and_whole_groups():
    assert dk.attention_fits(10, 10, 128) and dk.attention_fits(14, 2, 64)
    assert not dk.attention_fits(10, 10, 80)  # tl.arange needs a power of two
    assert not dk.attention_fits(10, 4, 128)  # a query head without its own K/V group


def test_the_fused_step_keys_graphs_by_batch_only(tiny_checkpoint):
    """With the split-K attention the decoder asks for one shape per batch bucket (length = the slot
    length), so no CUDA graph is captured for a new length in the middle of a document; with
    ``attention="sdpa"`` it keeps length buckets; another word is refused."""
    from transformers import AutoModelForImageTextToText

    from ocr_app.exceptions import ConfigError
    from ocr_app.models.deepseek_ocr2.decoding.decoder import PageDecoder
    from ocr_app.models.deepseek_ocr2.decoding.guard import LoopSpec
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecoderOptions

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    shapes: dict[str, list] = {}
    for attention in ("auto", "sdpa"):
        opts = DecoderOptions(
            kernels="triton", attention=attention, len_step=16, check_every=4, loop=LoopSpec(0)
        )
        dec = PageDecoder(model, capacity=2, max_len=96, options=opts)
        seen = shapes.setdefault(attention, [])
        dec.graphs.run = lambda step, b, lb, steps, seen=seen: seen.append((b, lb))
        dec.slots.ensure_kv()
        for used in (10, 40, 70):  # a page growing through three length buckets
            dec.slots.host_kv_len[0] = used
            dec.slot_key[0] = "page"
            dec.run_chunk()
        assert dec.step.length_free is (attention == "auto")
        dec.release()
    assert shapes["auto"] == [(1, 96)] * 3
    assert [lb for _, lb in shapes["sdpa"]] == [16, 48, 80]
    with pytest.raises(ConfigError, match="attention must be auto or sdpa"):
        PageDecoder(
            model, capacity=1, max_len=32, options=DecoderOptions(kernels="triton", attention="flash")
        )
