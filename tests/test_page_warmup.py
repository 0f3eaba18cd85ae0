"""A server's preload warms the shapes a first document meets (``page_warmup``), with the real tiny
engine on the CPU: blank pages go through the product path, the vision pass runs at every batch size on
the decoding thread, no page counts as served, and a setting or another decoder turns it off.

What it buys is measured on a GPU (``bench/profile_firstdoc.py``, ``*-preload`` scenarios)."""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")

from ocr_app.exceptions import EngineError  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.adapter import VISION_BATCH  # noqa: E402
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine  # noqa: E402
from ocr_app.models.deepseek_ocr2.page_warmup import WARM_TOKENS, blank_requests, warm_mode  # noqa: E402
from ocr_app.runtime.manager import ModelManager  # noqa: E402
from ocr_app.settings import load_settings  # noqa: E402


def _engine(tiny_checkpoint, **kw) -> DeepSeekOcr2Engine:
    opts = {"decoder": "graph", "mode": "small", "max_new_tokens": 8, **kw}
    return DeepSeekOcr2Engine(load_settings(model=str(tiny_checkpoint), device="cpu", **opts))


def _record_encodes(eng: DeepSeekOcr2Engine) -> list[tuple[str, int]]:
    """(thread name, pages) of every vision pass the engine runs from now on."""
    seen: list[tuple[str, int]] = []
    real = eng.encode_images

    def encode(batch_inputs):
        seen.append((threading.current_thread().name, int(batch_inputs["pixel_values"].shape[0])))
        return real(batch_inputs)

    eng.encode_images = encode  # type: ignore[method-assign]
    return seen


def test_preload_runs_blank_pages_and_every_vision_batch_on_the_decoding_thread(tiny_checkpoint):
    eng = _engine(tiny_checkpoint)
    manager = ModelManager(eng, idle_unload_s=0, oom_recovery=False)
    seen = _record_encodes(eng)
    try:
        manager.preload()
        report = eng.describe()["page_warmup"]
        assert report["pages"] == VISION_BATCH and report["vision_batches"] == VISION_BATCH
        assert report["mode"] == "small" and report["seconds"] > 0
        # the explicit passes: batch sizes 1..VISION_BATCH, in order, on the scheduler's worker
        explicit = seen[-VISION_BATCH:]
        assert [n for _, n in explicit] == list(range(1, VISION_BATCH + 1))
        assert {name for name, _ in seen} == {"ocr-decode"}
        # the blank pages went through the decoder itself (built once, kept for the first document)
        assert eng._decoder is not None and len(eng._decoder.capacities) == 1
        status = manager.status()
        assert status.requests_served == 0 and status.in_flight == 0 and status.state == "ready"
    finally:
        manager.unload()


def test_preload_warmup_off_or_generate_decoder_warms_nothing(tiny_checkpoint):
    for kw, why in (
        ({"preload_warmup": False}, "preload_warmup = false"),
        ({"decoder": "generate"}, "no graph"),
    ):
        eng = _engine(tiny_checkpoint, **kw)
        seen = _record_encodes(eng)
        try:
            eng.preload()
            assert eng.is_loaded
            assert why in eng.describe()["page_warmup"]["skipped"]
            assert seen == [] and eng._decoder is None
        finally:
            eng.unload()


def test_a_failed_warmup_is_reported_and_the_engine_still_serves(tiny_checkpoint):
    eng = _engine(tiny_checkpoint)
    real = eng.encode_images

    def broken(batch_inputs):
        if threading.current_thread().name == "ocr-decode" and batch_inputs["pixel_values"].shape[0] == 3:
            raise RuntimeError("boom at batch 3")
        return real(batch_inputs)

    eng.encode_images = broken  # type: ignore[method-assign]
    try:
        eng.preload()
        assert eng.describe()["page_warmup"] == {"error": "RuntimeError: boom at batch 3"}
        eng.encode_images = real  # type: ignore[method-assign]
        outs = eng.predict_batch(blank_requests(eng.settings, 2))
        assert len(outs) == 2 and all(o.num_tokens > 0 for o in outs)
    finally:
        eng.unload()


def test_call_on_worker_returns_results_and_errors_and_refuses_after_close(tiny_checkpoint):
    eng = _engine(tiny_checkpoint)
    try:
        eng.load()
        sched = eng.scheduler()
        assert (
            sched.call_on_worker(lambda: threading.current_thread().name).result(timeout=30) == "ocr-decode"
        )
        assert sched.call_on_worker(torch.is_inference_mode_enabled).result(timeout=30) is True
        with pytest.raises(ZeroDivisionError):
            sched.call_on_worker(lambda: 1 / 0).result(timeout=30)
        sched.close()
        with pytest.raises(EngineError, match="closed"):
            sched.call_on_worker(lambda: None)
    finally:
        eng.unload()


def test_blank_requests_follow_the_settings():
    s = load_settings(dpi=72, prompt="free", mode="auto")
    reqs = blank_requests(s, 3)
    assert [r.page.index for r in reqs] == [0, 1, 2]
    assert reqs[0].page.image.size == (595, 842) and reqs[0].page.image.getextrema() == ((255, 255),) * 3
    assert {(r.prompt, r.mode, r.max_new_tokens, r.use_cache) for r in reqs} == {
        ("free", "default", WARM_TOKENS, False)
    }
    assert warm_mode("small") == "small" and warm_mode("") == "default"
