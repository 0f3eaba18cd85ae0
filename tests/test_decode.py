"""The fast decoder against transformers' own ``generate`` on the tiny checkpoint (CPU, fp32).

Every expected token sequence here is computed by the library itself (greedy ``generate`` with the
project's ``NoRepeatNGramGuard``), never written by hand; the decoder must reproduce it exactly while
batching pages of different prompt lengths through fewer slots than pages.
"""

from __future__ import annotations

import threading
from concurrent.futures import as_completed

import pytest

torch = pytest.importorskip("torch")

from ocr_app.exceptions import ConfigError, EngineError  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.decoder import (  # noqa: E402
    DecodeRequest,
    DecoderOptions,
    PageDecoder,
    batch_bucket,
    length_bucket,
)
from ocr_app.models.deepseek_ocr2.decoding.guard import (  # noqa: E402
    GuardSpec,
    LoopSpec,
    NoRepeatNGramGuard,
    exempt_token_ids,
    find_repetition,
)
from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler  # noqa: E402
from ocr_app.schema import StopReason  # noqa: E402

NO_LOOP = LoopSpec(max_period=0)


@pytest.fixture(scope="module")
def tiny(random_checkpoint):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(random_checkpoint, dtype=torch.float32).eval()
    processor = AutoProcessor.from_pretrained(random_checkpoint)
    return model, processor


@pytest.fixture(scope="module")
def exempt(tiny):
    return tuple(exempt_token_ids(tiny[1].tokenizer))


def _prompts(seed: int, lengths) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [[0, *torch.randint(5, 390, (n,), generator=g).tolist()] for n in lengths]


def _generate(model, ids: list[int], n_new: int, guard=None, eos=None, **model_inputs) -> list[int]:
    from transformers import LogitsProcessorList

    t = torch.tensor([ids])
    procs = LogitsProcessorList([guard] if guard is not None else [])
    with torch.inference_mode():
        out = model.generate(
            input_ids=t,
            attention_mask=torch.ones_like(t),
            max_new_tokens=n_new,
            do_sample=False,
            logits_processor=procs,
            eos_token_id=eos,
            pad_token_id=0,
            **model_inputs,
        )
    return out[0, t.shape[1] :].tolist()


def _decode(model, requests, options, *, slots, context=None):
    """Decode ``requests`` through the public path (the scheduler's futures, as ``stream_pages`` uses it);
    results in input order."""
    sched = DecodeScheduler(model, options, max_slots=slots, context=context)
    try:
        got = [f.result(timeout=300) for f in sched.submit_many(requests)]
        assert len(sched.capacities) == 1 and sched.capacities[0] <= slots  # one decoder, within its slots
        return got
    finally:
        sched.close()


# --- decoder vs generate ---------------------------------------------------------------------------
def test_decoder_equals_generate_with_guard_and_fewer_slots_than_pages(tiny, exempt):
    model, _ = tiny
    prompts = _prompts(0, (7, 12, 30))
    n_new, n, w = 24, 2, 10
    want = [
        _generate(model, p, n_new, NoRepeatNGramGuard(GuardSpec(n, w, exempt), prompt_length=len(p)))
        for p in prompts
    ]
    opts = DecoderOptions(guard=GuardSpec(n, w, exempt), loop=NO_LOOP, check_every=5)
    reqs = [DecodeRequest(p, {}, n_new, key=i) for i, p in enumerate(prompts)]
    got = _decode(model, reqs, opts, slots=2)  # 3 pages through 2 slots
    assert [r.tokens for r in got] == want
    assert [r.key for r in got] == list(range(3))
    assert all(r.stop is StopReason.LENGTH for r in got)
    unguarded = [_generate(model, p, n_new) for p in prompts]
    assert unguarded != want  # the guard changed the output, so the comparison covers it


def test_decoder_equals_generate_with_image_features(tiny, exempt):
    from PIL import Image
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    model, processor = tiny
    img = Image.new("RGB", (320, 240), "white")
    enc = processor(images=img, text="<image>\nFree OCR.", return_tensors="pt")
    with torch.inference_mode():
        feats = model.get_image_features(
            enc["pixel_values"], enc.get("pixel_values_local"), enc["num_local_patches"]
        ).pooler_output
    ids = enc["input_ids"][0].tolist()
    mm = {"image": BaseModelOutputWithPooling(pooler_output=list(feats))}
    guard = NoRepeatNGramGuard(GuardSpec(4, 30, exempt), prompt_length=len(ids))
    want = _generate(model, ids, 24, guard, mm_encoder_outputs=mm)
    opts = DecoderOptions(guard=GuardSpec(4, 30, exempt), loop=NO_LOOP, check_every=8, prefill_batch=2)
    reqs = [DecodeRequest(ids, {"mm_encoder_outputs": mm}, 24) for _ in range(2)]  # one batched prefill
    got = _decode(model, reqs, opts, slots=2, context=len(ids) + 32)
    assert [r.tokens for r in got] == [want, want]
    assert got[0].prompt_len == len(ids)


def test_stops_on_eos_and_per_page_length(tiny):
    model, _ = tiny
    prompts = _prompts(1, (6, 9, 14))
    free = [_generate(model, p, 20) for p in prompts]
    eos = free[0][7]  # a token the first page emits at step 7: make it the EOS id
    want = [_generate(model, p, cap, eos=eos) for p, cap in zip(prompts, (20, 5, 13), strict=True)]
    opts = DecoderOptions(guard=GuardSpec(0, 0), loop=NO_LOOP, eos_ids=(eos,), check_every=4)
    got = _decode(
        model, [DecodeRequest(p, {}, c) for p, c in zip(prompts, (20, 5, 13), strict=True)], opts, slots=4
    )
    assert [r.tokens for r in got] == want
    first = free[0].index(eos)
    assert got[0].tokens == free[0][: first + 1] and got[0].stop is StopReason.END
    for r, cap in zip(got[1:], (5, 13), strict=True):
        assert r.stop is (StopReason.END if r.tokens[-1] == eos else StopReason.LENGTH)
        assert len(r.tokens) <= cap


@pytest.fixture(scope="module")
def looping():
    """Random weights over a 400-id vocabulary: greedy decoding falls into short loops within 96 tokens
    (checked below), which the loop detector needs; the real-vocabulary models do not loop that fast."""
    from transformers import DeepseekOcr2Config, DeepseekOcr2ForConditionalGeneration

    from ocr_app.models.deepseek_ocr2.configs import config_dict

    torch.manual_seed(0)
    cfg = DeepseekOcr2Config(**config_dict("tiny", text={"vocab_size": 400}, image_token_id=399))
    return DeepseekOcr2ForConditionalGeneration(cfg).eval()


def test_loop_early_stop_is_a_prefix_of_generate(looping):
    model = looping
    prompts = _prompts(0, (7, 12))
    spec = LoopSpec(max_period=16, min_repeats=3, min_span=24, agreement=1.0)
    full = [_generate(model, p, 96) for p in prompts]
    assert any(
        find_repetition(f, LoopSpec(max_period=16, min_repeats=3, min_span=24, agreement=1.0)) for f in full
    )
    opts = DecoderOptions(guard=GuardSpec(0, 0), loop=spec)
    got = _decode(model, [DecodeRequest(p, {}, 96) for p in prompts], opts, slots=2, context=256)
    for r, f in zip(got, full, strict=True):
        assert r.tokens == f[: len(r.tokens)]
        if r.stop is StopReason.REPETITION:
            assert len(r.tokens) < 96
            assert find_repetition(
                r.tokens, LoopSpec(max_period=16, min_repeats=3, min_span=24, agreement=1.0)
            )
    assert any(r.stop is StopReason.REPETITION for r in got)


def test_context_bounds_new_tokens_and_compaction_keeps_results(tiny):
    model, _ = tiny
    prompts = _prompts(2, (5, 40, 8, 9))
    caps = (3, 200, 4, 6)  # page 1 runs past the 64-token context: bounded to 64 - 41
    opts = DecoderOptions(guard=GuardSpec(0, 0), loop=NO_LOOP, check_every=2)
    want = [_generate(model, p, min(c, 64 - len(p))) for p, c in zip(prompts, caps, strict=True)]
    got = _decode(
        model,
        [DecodeRequest(p, {}, c) for p, c in zip(prompts, caps, strict=True)],
        opts,
        slots=4,
        context=64,
    )
    assert [r.tokens for r in got] == want
    assert len(got[1].tokens) == 64 - 41 and got[1].stop is StopReason.LENGTH
    # compaction: a lone long page in the top slot moves down to slot 0
    dec2 = PageDecoder(model, capacity=4, max_len=64, options=opts)
    dec2.admit(
        [DecodeRequest(p, {}, c, key=i) for i, (p, c) in enumerate(zip(prompts, (2, 2, 2, 12), strict=True))]
    )
    dec2.run_chunk(2)
    assert len(dec2.collect()) == 3
    assert dec2.busy_slots == [3] and dec2.compact() == 1 and dec2.busy_slots == [0]
    rest = []
    while dec2.busy_slots:
        dec2.run_chunk()
        rest += dec2.collect()
    assert rest[0][1].tokens == _generate(model, prompts[3], 12)


def test_bad_inputs_raise_clear_errors(tiny):
    model, _ = tiny
    dec = PageDecoder(model, capacity=1, max_len=32, options=DecoderOptions(graphs="off"))
    with pytest.raises(EngineError, match="no room"):
        dec.admit([DecodeRequest(list(range(5, 40)), {}, 4)])
    with pytest.raises(EngineError, match="free decode slots"):
        dec.admit([DecodeRequest([0, 5], {}, 4), DecodeRequest([0, 6], {}, 4)])
    with pytest.raises(ConfigError, match="CUDA graphs need a CUDA device"):
        PageDecoder(model, capacity=1, max_len=32, options=DecoderOptions(graphs="on"))
    with pytest.raises(ConfigError, match="graphs must be"):
        PageDecoder(model, capacity=1, max_len=32, options=DecoderOptions(graphs="sometimes"))
    sched = DecodeScheduler(model, DecoderOptions(), context=32)
    with pytest.raises(EngineError, match="does not fit"):
        sched.submit(DecodeRequest(list(range(5, 40)), {}, 4))
    sched.close()


def test_buckets():
    assert [batch_bucket(n, 32) for n in (1, 2, 3, 5, 9, 17, 32)] == [1, 2, 4, 8, 16, 32, 32]
    assert batch_bucket(3, 3) == 3  # the capacity itself when no bucket fits below it
    assert [length_bucket(n, 256, 8192) for n in (1, 256, 257, 1200, 9000)] == [256, 256, 512, 1280, 8192]


# --- scheduler: concurrent jobs, streaming -----------------------------------------------------
def test_scheduler_serves_concurrent_jobs_and_streams(tiny, exempt):
    model, _ = tiny
    opts = DecoderOptions(guard=GuardSpec(3, 20, exempt), loop=NO_LOOP, check_every=4)
    sched = DecodeScheduler(model, opts, max_slots=2)
    jobs = {"a": _prompts(4, (6, 11, 8)), "b": _prompts(5, (9, 4))}
    caps = {"a": (12, 30, 5), "b": (20, 7)}
    results: dict[str, list] = {}

    def job(name):
        reqs = [
            DecodeRequest(p, {}, c, key=(name, i))
            for i, (p, c) in enumerate(zip(jobs[name], caps[name], strict=False))
        ]
        futures = sched.submit_many(reqs)
        index = {id(f): i for i, f in enumerate(futures)}
        results[name] = [(index[id(f)], f.result()) for f in as_completed(futures, timeout=120)]

    threads = [threading.Thread(target=job, args=(n,)) for n in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    sched.close()
    for name, prompts in jobs.items():
        order = [i for i, _ in results[name]]
        assert sorted(order) == list(range(len(prompts)))
        for i, res in results[name]:
            p = prompts[i]
            assert res.key == (name, i)
            assert res.tokens == _generate(
                model, p, caps[name][i], NoRepeatNGramGuard(GuardSpec(3, 20, exempt), prompt_length=len(p))
            )
    # streaming: the 5-token page of job a finishes before its 30-token page
    order_a = [i for i, _ in results["a"]]
    assert order_a.index(2) < order_a.index(1)
    assert sched.decoder is None  # released after close


def test_plan_capacity_rounds_to_buckets_within_max_slots(tiny):
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import plan_capacity

    model, _ = tiny  # CPU: no VRAM bound, only buckets and max_slots
    assert [plan_capacity(model, 256, n, 32) for n in (1, 3, 5, 20, 40)] == [1, 4, 8, 32, 32]
    assert plan_capacity(model, 256, 5, 3) == 3


def test_decoder_runs_quantized_modules_like_generate(tiny_checkpoint):
    """The quant helper's drop-in modules (QuantLinear, QuantExperts) go through the module step."""
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.decoding.kernels import fusable_moe
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.presets import get_preset

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    quantize_model(model, get_preset("mixed"), adapter=ADAPTER)
    assert not fusable_moe(model.model.language_model.layers[1].mlp)
    prompts = _prompts(6, (7, 12))
    want = [_generate(model, p, 12) for p in prompts]
    opts = DecoderOptions(guard=GuardSpec(0, 0), loop=NO_LOOP)
    assert [
        r.tokens for r in _decode(model, [DecodeRequest(p, {}, 12) for p in prompts], opts, slots=2)
    ] == want


def test_scheduler_sizes_the_decoder_for_announced_pages(tiny):
    model, _ = tiny
    sched = DecodeScheduler(model, DecoderOptions(guard=GuardSpec(0, 0), loop=NO_LOOP), max_slots=32)
    first = sched.submit_many([DecodeRequest([0, 5, 6], {}, 40)], expect=5)  # 4 more pages will follow
    rest = sched.submit_many([DecodeRequest([0, 7, 8], {}, 3) for _ in range(4)])
    assert [len(f.result(timeout=60).tokens) for f in first + rest] == [40, 3, 3, 3, 3]
    assert sched.capacities == [8]  # one decoder sized for all five pages (bucket 8), not for the first
    sched.close()


def test_a_cancelled_page_frees_its_slot_and_the_scheduler_goes_on(tiny):
    """A conversion that stops early cancels its futures: the decoder drops those pages at once and
    keeps serving (no result is set on a cancelled future)."""
    model, _ = tiny
    sched = DecodeScheduler(
        model, DecoderOptions(guard=GuardSpec(0, 0), loop=NO_LOOP, check_every=2), max_slots=2
    )
    try:
        long, short = sched.submit_many([DecodeRequest([0, 5, 6], {}, 200), DecodeRequest([0, 7, 8], {}, 4)])
        assert len(short.result(timeout=120).tokens) == 4
        assert long.cancel()  # the caller goes away while the long page decodes
        again = sched.submit(DecodeRequest([0, 9, 10], {}, 3))
        assert len(again.result(timeout=120).tokens) == 3
        dec = sched.decoder
        assert dec is not None and dec.busy_slots == [] and len(sched.capacities) == 1
        assert dec.steps < 200  # the long page stopped when it was cancelled, not at its cap
    finally:
        sched.close()


def test_encoder_runs_on_the_decoding_thread_in_vision_batches_and_a_failure_stays_in_its_group(tiny):
    """Pages submitted with a ``payload`` get their model inputs from the scheduler's encoder, on the
    decoding thread, at most ``vision_batch`` pages per call, right before their prefill; a group whose
    encoder call fails fails alone and the other pages still decode (same tokens as given inputs)."""
    model, _ = tiny
    prompts = _prompts(3, (9, 9, 9, 9, 9))
    calls: list[tuple[str, list[int]]] = []

    def encoder(payloads):
        calls.append((threading.current_thread().name, list(payloads)))
        if 4 in payloads:
            raise RuntimeError("vision pass failed")
        return [{} for _ in payloads]

    opts = DecoderOptions(loop=NO_LOOP, check_every=4)
    sched = DecodeScheduler(model, opts, max_slots=8, vision_batch=2, encoder=encoder)
    try:
        futures = sched.submit_many(
            [DecodeRequest(p, {}, 6, key=i, payload=i) for i, p in enumerate(prompts)]
        )
        outcomes = []
        for f in futures:
            try:
                outcomes.append(f.result(timeout=300).tokens)
            except EngineError as exc:
                outcomes.append(str(exc))
        assert sched.backlog() == 0
    finally:
        sched.close()
    assert calls and all(name == "ocr-decode" for name, _ in calls)
    assert all(len(group) <= 2 for _, group in calls)
    assert sorted(i for _, group in calls for i in group) == [0, 1, 2, 3, 4]
    assert "vision pass failed" in outcomes[4]
    reference = _decode(model, [DecodeRequest(p, {}, 6) for p in prompts[:4]], opts, slots=8)
    assert outcomes[:4] == [r.tokens for r in reference]


def test_a_page_without_inputs_needs_an_encoder(tiny):
    model, _ = tiny
    sched = DecodeScheduler(model, DecoderOptions(loop=NO_LOOP), max_slots=2)
    try:
        [f] = sched.submit_many([DecodeRequest(_prompts(4, (5,))[0], {}, 3, payload="page")])
        with pytest.raises(EngineError, match="without an encoder"):
            f.result(timeout=300)
    finally:
        sched.close()
