"""Fair admission in the one decoder every conversion shares: a short request is not stuck behind a long job.

The scheduler runs the tiny random checkpoint on the CPU. What is checked is the ORDER in which pages
enter the decoder — the scheduler's encoder runs on the decoding thread right before each page's prefill,
so its calls are the admission order — and the order in which requests finish; never wall-clock times.
The test holds the decoder on an event while it submits the next request, so each scenario starts from
the same state whatever the machine's speed.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from ocr_app.models.deepseek_ocr2.decoding.admission import FairQueue  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.decoder import DecodeRequest, DecoderOptions  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler  # noqa: E402

OPTS = DecoderOptions(guard=GuardSpec(0, 0), loop=LoopSpec(max_period=0), check_every=4)


@pytest.fixture(scope="module")
def model(random_checkpoint):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(random_checkpoint, dtype=torch.float32).eval()


class Gate:
    """The scheduler's encoder: records each admitted page's payload and, on its first call, holds the
    decoding thread until the test has submitted what must be waiting when the first pages run."""

    def __init__(self) -> None:
        self.order: list[tuple[str, int]] = []
        self.started = threading.Event()
        self.go = threading.Event()

    def __call__(self, payloads):
        self.order.extend(payloads)
        if not self.started.is_set():
            self.started.set()
            assert self.go.wait(timeout=120)
        return [{} for _ in payloads]


def _pages(name: str, n: int, new_tokens: int) -> list[DecodeRequest]:
    return [
        DecodeRequest([0, 5 + i, 6, 7], {}, new_tokens, key=(name, i), payload=(name, i)) for i in range(n)
    ]


def _scheduler(model, gate: Gate, slots: int) -> DecodeScheduler:
    return DecodeScheduler(model, OPTS, max_slots=slots, vision_batch=1, encoder=gate)


def test_a_one_page_request_takes_the_next_free_slot_ahead_of_a_long_jobs_queue(model):
    gate = Gate()
    sched = _scheduler(model, gate, slots=2)
    try:
        long = sched.submit_many(_pages("long", 8, 12), expect=2, group="long")
        assert gate.started.wait(timeout=120)  # the long job's first pages are being admitted
        short = sched.submit_many(_pages("short", 1, 12), group="short")
        assert sched.backlog(group="short") == 1 and sched.groups() == 2
        gate.go.set()
        short[0].result(timeout=300)
        assert not long[-1].done()  # the long job is still decoding when the short request is served
        for f in long:
            assert len(f.result(timeout=300).tokens) == 12  # and every one of its pages is served
    finally:
        sched.close()
    assert sched.capacities == [2]
    # FIFO over pages would admit long 2..7 first; the short request gets the first slot that frees
    assert gate.order[:3] == [("long", 0), ("long", 1), ("short", 0)]
    assert [p for p in gate.order if p[0] == "long"] == [("long", i) for i in range(8)]  # in order


def test_two_long_jobs_share_the_slots_turn_by_turn(model):
    gate = Gate()
    sched = _scheduler(model, gate, slots=2)
    try:
        a = sched.submit_many(_pages("a", 5, 8), expect=2, group="a")
        assert gate.started.wait(timeout=120)
        b = sched.submit_many(_pages("b", 5, 8), group="b")
        gate.go.set()
        for f in a + b:
            f.result(timeout=300)
    finally:
        sched.close()
    # a holds both slots when b arrives; from then on a freed slot goes to whoever holds fewer
    assert gate.order[:2] == [("a", 0), ("a", 1)]
    later = [name for name, _ in gate.order[2:]]
    assert later == ["b", "a", "b", "a", "b", "a", "b", "b"]  # FIFO: a a a b b b b b


def test_cancelled_pages_of_a_request_leave_the_queue_and_free_room_at_once(model):
    """A cancelled conversion cancels its futures: those pages stop counting in the backlog at once
    and are never admitted; the other request goes on."""
    gate = Gate()
    sched = _scheduler(model, gate, slots=2)
    try:
        gone = sched.submit_many(_pages("gone", 6, 30), expect=2, group="gone")
        assert gate.started.wait(timeout=120)
        stay = sched.submit_many(_pages("stay", 3, 6), group="stay")
        assert sched.backlog(group="gone") == 4
        for f in gone:
            f.cancel()
        assert sched.backlog(group="gone") == 0 and sched.backlog(every=True) == 3
        gate.go.set()
        assert [len(f.result(timeout=300).tokens) for f in stay] == [6, 6, 6]
    finally:
        sched.close()
    assert [p for p in gate.order if p[0] == "gone"] == [("gone", 0), ("gone", 1)]  # only the first two


def test_fair_queue_order_without_a_model():
    """The queue alone: fewest held slots first, ties to the group served least recently, pages that do
    not fit are passed by their group's next page, cancelled pages are dropped."""
    from concurrent.futures import Future

    q = FairQueue()
    futures = {}
    for g, n in (("a", 4), ("b", 2), ("c", 1)):
        for i in range(n):
            futures[(g, i)] = Future()
            q.push(g, (g, i), futures[(g, i)])
    got = [r for _, r, _ in q.take(4, lambda r: True, {"a": 3})]
    assert got == [("b", 0), ("c", 0), ("b", 1), ("a", 0)]
    futures[("a", 1)].cancel()
    assert {g: sum(not f.cancelled() for f in fs) for g, fs in q.waiting().items()} == {"a": 2}
    assert [r for _, r, _ in q.take(5, lambda r: r != ("a", 2), {"a": 1})] == [("a", 3)]
    assert list(q.requests()) == [("a", 2)]


def test_a_short_document_streams_through_the_engine_while_a_long_one_decodes(tiny_checkpoint):
    """Two page streams through the real DeepSeek engine (graph decoder, eager on CPU, 2 slots): a
    1-page document submitted while a 12-page document holds both slots and has six more pages queued
    gets the next free slot (FIFO would give it the ninth) and the same text as on an idle engine; the
    long document loses no page."""
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.settings import load_settings

    def request(index: int) -> PageRequest:
        from PIL import Image, ImageDraw

        img = Image.new("RGB", (320, 400), "white")
        ImageDraw.Draw(img).text((20, 20), f"Page {index}", fill="black")
        return PageRequest(
            page=PageImage(image=img, index=index, source="t.png"), prompt="markdown", mode="small"
        )

    settings = load_settings(
        model=str(tiny_checkpoint), device="cpu", max_new_tokens=10, decoder="graph", decode_max_slots=2
    )
    engine = DeepSeekOcr2Engine(settings)
    engine.load()
    try:
        alone = engine.predict_batch([request(99)])[0].raw_text
        sched = engine._decoder
        groups: list[object] = []
        long_in, short_in = threading.Event(), threading.Event()
        submit, attach = sched.submit_many, engine.attach_features

        def spy_submit(requests, expect=0, group=None):  # instrumentation only: the real method runs
            futures = submit(requests, expect, group)
            if group not in groups:
                groups.append(group)
            (long_in if len(groups) == 1 else short_in).set()
            return futures

        def held_encoder(pages):  # the decoding thread's first vision pass waits for the short request
            assert short_in.wait(timeout=300)
            return attach(pages)

        sched.submit_many, engine.attach_features = spy_submit, held_encoder
        finished: list[tuple[str, int]] = []
        outputs: dict[str, list] = {"long": [], "short": []}
        lock = threading.Lock()

        def run(name, pages):
            for i, out in engine.predict_stream(pages):
                with lock:
                    finished.append((name, i))
                    outputs[name].append(out)

        t_long = threading.Thread(target=run, args=("long", [request(i) for i in range(12)]))
        t_long.start()
        assert long_in.wait(timeout=300)
        t_short = threading.Thread(target=run, args=("short", [request(99)]))
        t_short.start()
        t_short.join(timeout=300)
        t_long.join(timeout=300)
    finally:
        engine.unload()
    assert [o.raw_text for o in outputs["short"]] == [alone]
    assert sorted(i for name, i in finished if name == "long") == list(range(12))
    before = finished[: finished.index(("short", 0))]
    assert len(before) <= 3, finished  # pages 0-1, perhaps the page admitted beside it; FIFO: 8


def test_a_cancelled_job_stops_waiting_and_its_pages_leave_the_decoder(tiny_checkpoint):
    """A job is cancelled while its long pages decode: the engine's stream ends without waiting for
    them (``PageRequest.cancel``), the decoder drops them at its next chunk, and the next request runs."""
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.settings import load_settings

    settings = load_settings(
        model=str(tiny_checkpoint), device="cpu", max_new_tokens=400, decoder="graph", decode_max_slots=2
    )
    engine = DeepSeekOcr2Engine(settings)
    engine.load()
    cancel, admitted = threading.Event(), threading.Event()

    def request(index: int, **kw) -> PageRequest:
        from PIL import Image

        page = PageImage(image=Image.new("RGB", (320, 400), "white"), index=index, source="t.png")
        return PageRequest(page=page, prompt="markdown", mode="small", **kw)

    try:
        engine.predict_batch([request(0, max_new_tokens=2)])  # the decoder exists before the gate
        sched = engine._decoder
        attach = engine.attach_features

        def gate(pages):  # lets the test cancel once the job's pages are in the decoder
            out = attach(pages)
            admitted.set()
            return out

        engine.attach_features = gate
        got = []
        job = threading.Thread(
            target=lambda: got.extend(engine.predict_stream([request(i, cancel=cancel) for i in range(3)]))
        )
        job.start()
        assert admitted.wait(timeout=300)
        cancel.set()
        job.join(timeout=300)
        assert not job.is_alive() and got == []  # ended without the pages it no longer wants
        engine.attach_features = attach
        after = engine.predict_batch([request(9, max_new_tokens=3)])[0]
        dec = sched.decoder
        assert after.num_tokens == 3 and dec.busy_slots == [] and sched.backlog(every=True) == 0
        assert dec.steps < 400  # the cancelled pages stopped long before their 400 tokens
    finally:
        engine.unload()


def test_a_small_request_that_finds_every_slot_taken_parks_a_long_page_and_starts_at_once(model):
    """4 slots all held by a long job: with the small-request policy on (cap 2), a one-page request is
    admitted at the next cycle — one of the long job's pages is parked (its K/V rows and state set
    aside) — and decodes with steps of its own, so it ends before the long job's first pages; the parked
    page resumes afterwards and every page's tokens are exactly those of a run without the policy. With
    the policy off the small request waits for the first long pages to end, then enters with the next
    long page."""

    def run(cap: int) -> tuple[dict, list, dict]:
        gate = Gate()
        sched = DecodeScheduler(
            model, OPTS, max_slots=4, vision_batch=1, encoder=gate, small_request_batch=cap
        )
        steps: list[int] = []
        encode = gate.__call__
        ended: list[tuple[str, int]] = []

        def stepped(payloads):  # the decoder's step count when each page is admitted
            steps.extend([sched.decoder.steps if sched.decoder else 0] * len(payloads))
            return encode(payloads)

        sched.encoder = stepped
        try:
            long = sched.submit_many(_pages("long", 9, 24), expect=4, group="long")
            assert gate.started.wait(timeout=120)
            short = sched.submit_many(_pages("short", 1, 24), group="short")
            for k, f in [(("long", i), f) for i, f in enumerate(long)] + [(("short", 0), short[0])]:
                f.add_done_callback(lambda _f, k=k: ended.append(k))
            gate.go.set()
            tokens = {("long", i): f.result(timeout=300).tokens for i, f in enumerate(long)}
            tokens[("short", 0)] = short[0].result(timeout=300).tokens
        finally:
            sched.close()
        at = {(name, i): s for (name, i), s in zip(gate.order, steps, strict=True)}
        return at, ended, tokens

    (at, ended, tokens), (at_off, ended_off, tokens_off) = run(2), run(0)
    assert at[("short", 0)] < at[("long", 4)]  # admitted while the first four long pages still decode
    assert ended.index(("short", 0)) < min(ended.index(("long", i)) for i in range(4))
    assert at_off[("short", 0)] == at_off[("long", 4)]  # policy off: it waited for the first wave
    assert ended_off.index(("short", 0)) > ended_off.index(("long", 0))
    assert tokens == tokens_off and all(len(t) == 24 for t in tokens.values())  # parking lost nothing


def test_park_and_unpark_move_a_pages_kv_rows_and_state_into_another_slot(model):
    """A parked page comes back in another slot with the same K/V rows, tokens, lengths and flags, and
    its next tokens are those it would have decoded had it never left; the slot it left is free for
    another page meanwhile."""
    from ocr_app.models.deepseek_ocr2.decoding.decoder import PageDecoder

    def decoder() -> PageDecoder:
        return PageDecoder(model, capacity=3, max_len=64, options=OPTS)

    reqs = [DecodeRequest([0, 5 + i, 6, 7, 8 + 3 * i], {}, 20, key=("p", i)) for i in range(2)]
    ref = decoder()
    ref.admit(reqs)
    for _ in range(5):
        ref.run_chunk()
    want = {r.key: r.tokens for _, r in ref.collect()}

    dec = decoder()
    dec.admit(reqs)
    dec.run_chunk()
    kv_len = int(dec.slots.kv_len[0])
    k0 = [k[0, :, :kv_len].clone() for k in dec.slots.k]
    seq0 = dec.slots.seq[0].clone()
    dec.park(0)
    assert dec.free_slots == [0, 2] and dec.parked == [("p", 0)]
    dec.admit([DecodeRequest([0, 9, 9, 9, 9, 9], {}, 8, key=("other", 0))])  # takes slot 0, overwrites it
    assert dec.slot_key[0] == ("other", 0)
    dec.run_chunk()
    dec.unpark(2)
    assert dec.parked == [] and dec.slot_key[2] == ("p", 0)
    assert int(dec.slots.kv_len[2]) == kv_len and torch.equal(dec.slots.seq[2], seq0)
    assert all(torch.equal(k[2, :, :kv_len], k_) for k, k_ in zip(dec.slots.k, k0, strict=True))
    assert bool(dec.slots.active[2]) and not bool(dec.slots.done[2])
    for _ in range(6):
        dec.run_chunk()
    got = {r.key: r.tokens for _, r in dec.collect()}
    assert got[("p", 0)] == want[("p", 0)] and got[("p", 1)] == want[("p", 1)]
    assert len(got[("other", 0)]) == 8
