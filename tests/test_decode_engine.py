"""The DeepSeek engine with ``decoder="graph"`` (the graph decoder, eager on CPU) against ``generate``.

Both engines load the tiny checkpoint through the real loader; the generate engine's output is the
expected value (computed by the library, never written by hand).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ocr_app.exceptions import ConfigError  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.adapter import wants_graph_decoder  # noqa: E402
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine  # noqa: E402
from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt  # noqa: E402
from ocr_app.schema import PageImage, PageRequest, StopReason  # noqa: E402
from ocr_app.settings import load_settings  # noqa: E402


def _request(size, index, max_new=None):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((20, 20), f"Page {index}", fill="black")
    page = PageImage(image=img, index=index, source="t.png")
    return PageRequest(page=page, prompt=resolve_prompt("markdown"), mode="small", max_new_tokens=max_new)


@pytest.fixture(scope="module")
def engines(tiny_checkpoint):
    made = {}
    for dec in ("generate", "graph"):
        s = load_settings(model=str(tiny_checkpoint), device="cpu", max_new_tokens=12, decoder=dec)
        made[dec] = DeepSeekOcr2Engine(s, batch_size=2)
        made[dec].load()
    yield made
    for e in made.values():
        e.unload()


def test_graph_decoder_engine_equals_generate_engine(engines):
    reqs = [_request((300, 400), 0), _request((500, 300), 1, max_new=5), _request((320, 320), 2, max_new=9)]
    want = engines["generate"].predict_batch(reqs)
    got = engines["graph"].predict_batch(reqs)
    assert [o.raw_text for o in got] == [o.raw_text for o in want]
    assert [o.stop_reason for o in got] == [o.stop_reason for o in want]
    assert [o.num_tokens for o in got] == [o.num_tokens for o in want] == [12, 5, 9]
    assert all(o.stop_reason is StopReason.LENGTH for o in got)
    assert {"preprocess", "vision", "prefill", "decode", "total"} <= set(got[0].timings)


def test_stream_yields_each_page_once_and_short_pages_first(engines):
    reqs = [_request((300, 400), 0, max_new=40), _request((300, 400), 1, max_new=2)]  # stops read every 16
    order = [i for i, _ in engines["graph"].predict_stream(reqs)]
    assert sorted(order) == [0, 1]
    assert order[0] == 1  # both decode together: the 2-token page finishes first


def test_unload_closes_the_scheduler_and_reload_works(engines):
    eng = engines["graph"]
    reqs = [_request((300, 400), 0)]
    want = engines["generate"].predict_batch(reqs)[0]
    got = eng.predict_batch(reqs)[0]
    assert (got.raw_text, got.stop_reason, got.num_tokens) == (
        want.raw_text,
        want.stop_reason,
        want.num_tokens,
    )
    sched = eng._decoder
    assert sched is not None
    eng.unload()
    assert eng._decoder is None and sched._closed
    eng.load()  # the fixture's later users get a working engine again
    assert eng.predict_batch(reqs)[0].raw_text == want.raw_text


def test_decoder_setting():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert wants_graph_decoder("auto", cuda) and not wants_graph_decoder("auto", cpu)
    assert wants_graph_decoder("graph", cpu) and not wants_graph_decoder("generate", cuda)
    with pytest.raises(ConfigError, match="decoder must be one of"):
        wants_graph_decoder("fast", cpu)
    with pytest.raises(ValueError):
        load_settings(decoder="fast")


def test_a_native_model_falls_back_to_the_plain_graph_decoder(tiny_checkpoint, engines, monkeypatch):
    """The native model has no ``generate``: after a failure of the full graph decoder the remaining pages
    (and later calls) run through the plain one (module step, no CUDA graphs, no fused kernels), with the
    same tokens, and say so; a second failure there is raised, not retried."""
    import ocr_app.models.deepseek_ocr2.decoding.adapter as adapter

    real = adapter.stream_pages
    options = []

    def breaks_once(engine, sched, requests):
        options.append(sched.options)
        stream = real(engine, sched, requests)
        yield next(stream)
        if len(options) == 1:
            raise RuntimeError("CUDA error: graph capture failed")
        yield from stream

    monkeypatch.setattr(adapter, "stream_pages", breaks_once)
    s = load_settings(model=str(tiny_checkpoint), device="cpu", max_new_tokens=12, decoder="graph")
    engine = DeepSeekOcr2Engine(s, batch_size=2)
    try:
        reqs = [_request((300, 400), 0), _request((500, 300), 1), _request((320, 320), 2)]
        got = dict(engine.predict_stream(reqs))
        assert engine.describe()["loader"] == "native" and not hasattr(engine.model, "generate")
        want = engines["generate"].predict_batch(reqs)
        assert [got[i].raw_text for i in range(3)] == [o.raw_text for o in want]
        plain = [i for i in range(3) if any("plain graph decoder" in n for n in got[i].notes)]
        assert len(plain) == 2
        assert (options[0].graphs, options[0].kernels) == ("auto", "auto")
        assert (options[1].graphs, options[1].kernels) == ("off", "torch")
        engine.predict_batch(reqs[:1])
        assert len(options) == 3 and options[2].kernels == "torch"  # stays plain
    finally:
        engine.unload()


def test_a_broken_graph_decoder_falls_back_to_generate(tiny_checkpoint, engines, monkeypatch):
    """A driver/kernel failure inside the graph decoder (simulated after the first page) must not fail
    the conversion: the remaining pages run through generate, say so, and the decoder stays off."""
    import ocr_app.models.deepseek_ocr2.decoding.adapter as adapter

    real = adapter.stream_pages
    calls = []

    def breaks_after_one_page(engine, sched, requests):
        calls.append(engine)
        stream = real(engine, sched, requests)
        yield next(stream)
        raise RuntimeError("CUDA error: graph capture failed")

    monkeypatch.setattr(adapter, "stream_pages", breaks_after_one_page)
    s = load_settings(
        model=str(tiny_checkpoint), device="cpu", max_new_tokens=12, decoder="graph", loader="transformers"
    )
    engine = DeepSeekOcr2Engine(s, batch_size=2)
    try:
        reqs = [_request((300, 400), 0), _request((500, 300), 1), _request((320, 320), 2)]
        got = dict(engine.predict_stream(reqs))
        want = engines["generate"].predict_batch(reqs)
        assert sorted(got) == [0, 1, 2]
        assert [got[i].raw_text for i in range(3)] == [o.raw_text for o in want]
        fell_back = [i for i in range(3) if any("graph decoder off: RuntimeError" in n for n in got[i].notes)]
        assert len(fell_back) == 2  # the first page came from the graph decoder, the other two did not
        engine.predict_batch(reqs[:1])
        assert calls == [engine]  # switched off for good: the second call never tried the graph decoder
    finally:
        engine.unload()
