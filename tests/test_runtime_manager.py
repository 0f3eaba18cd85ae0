"""ModelManager over the real DeepSeek-OCR-2 engine with the tiny checkpoint: single-flight loading,
idle unload that drops the model, reload, status, load errors."""

from __future__ import annotations

import gc
import queue
import threading
import time
import weakref

import pytest

from ocr_app.exceptions import ModelLoadError
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
from ocr_app.runtime.manager import IDLE_UNLOADED, LOADING, NOT_LOADED, READY, ModelManager
from ocr_app.schema import PageImage, PageRequest


class GatedEngine(DeepSeekOcr2Engine):
    """The real engine; ``load`` counts calls and can be held at a gate to widen the race window."""

    def __init__(self, settings, **kw) -> None:
        super().__init__(settings, **kw)
        self.load_calls = 0
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def load(self) -> None:
        if self.is_loaded:
            return
        self.load_calls += 1
        self.entered.set()
        assert self.gate.wait(20)
        super().load()


def _page(text: str, size=(600, 800), index: int = 0) -> PageImage:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((30, 30), text, fill="black")
    return PageImage(image=img, index=index, source="test.png")


def _req(page: PageImage) -> PageRequest:
    return PageRequest(page=page, prompt="<image>\nFree OCR.", mode="global", max_new_tokens=4)


@pytest.fixture
def settings(tiny_checkpoint):
    from ocr_app.settings import load_settings

    return load_settings(model=str(tiny_checkpoint), device="cpu", dtype="fp32", max_new_tokens=4)


class WatchedCondition(threading.Condition):
    """The manager's condition, telling the test who waits on it, with which timeout and how many
    requests were in flight: tests wait for the state they need instead of sleeping past it."""

    def __init__(self, mgr: ModelManager) -> None:
        super().__init__()
        self._mgr = mgr
        self.waits: queue.Queue[tuple[str, float | None, int, str]] = queue.Queue()

    def wait(self, timeout=None):
        mgr = self._mgr
        self.waits.put((threading.current_thread().name, timeout, mgr._in_flight, mgr._state))
        return super().wait(timeout)

    def until(self, pred, timeout: float = 30.0) -> tuple[str, float | None, int, str]:
        """The first wait that ``pred`` accepts (it happened, or ``queue.Empty`` after ``timeout``)."""
        end = time.monotonic() + timeout
        while True:
            entry = self.waits.get(timeout=max(0.0, end - time.monotonic()))
            if pred(*entry):
                return entry


def _watched(mgr: ModelManager) -> WatchedCondition:
    mgr._cond = WatchedCondition(mgr)
    return mgr._cond


def _wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_two_requests_during_load_cause_one_load(settings):
    engine = GatedEngine(settings)
    engine.gate.clear()
    mgr = ModelManager(engine, idle_unload_s=0)
    cond = _watched(mgr)
    pages = [_page("first page"), _page("second page", size=(700, 500))]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = mgr.predict_batch([_req(pages[i])])[0].raw_text
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"request-{i}") for i in range(2)]
    threads[0].start()
    assert engine.entered.wait(10)
    threads[1].start()
    cond.until(lambda who, timeout, busy, state: who == "request-1" and state == LOADING)
    assert engine.load_calls == 1  # the second request waits on the manager, it did not load
    engine.gate.set()
    for th in threads:
        th.join(60)
    assert not errors
    st = mgr.status()
    assert engine.load_calls == 1 and st.loads == 1 and st.state == READY
    assert st.requests_served == 2 and st.in_flight == 0 and st.load_seconds is not None
    # each request got its own page's output (compare with the engine run directly)
    assert results == {i: engine.predict_batch([_req(pages[i])])[0].raw_text for i in range(2)}
    mgr.close()
    assert mgr.status().state == NOT_LOADED and not engine.is_loaded


def test_idle_unload_frees_the_model_and_next_request_reloads(settings):
    engine = GatedEngine(settings)
    mgr = ModelManager(engine, idle_unload_s=0)  # off at first, switched on at runtime below
    assert mgr.status().state == NOT_LOADED and not engine.is_loaded  # lazy: nothing at construction
    page = _page("idle page")
    first = mgr.predict_batch([_req(page)])[0]
    model_ref = weakref.ref(engine.model)
    assert mgr.status().state == READY and mgr.status().last_used is not None
    time.sleep(0.4)
    assert mgr.status().state == READY  # idle unload disabled
    mgr.set_idle_unload(0.3)
    assert _wait_for(lambda: mgr.status().state == IDLE_UNLOADED, timeout=15)
    gc.collect()
    assert engine.model is None and model_ref() is None  # the weights are really gone
    assert mgr.status().unloads == 1
    second = mgr.predict_batch([_req(page)])[0]
    st = mgr.status()
    assert st.state == READY and st.loads == 2 and engine.load_calls == 2
    assert second.raw_text == first.raw_text
    mgr.close()


def test_no_idle_unload_while_a_request_runs(settings):
    engine = GatedEngine(settings)
    mgr = ModelManager(engine, idle_unload_s=0)
    cond = _watched(mgr)
    mgr.preload()
    assert mgr.status().state == READY
    started, release = threading.Event(), threading.Event()
    inner = engine.predict_stream

    def slow_stream(requests):
        started.set()
        assert release.wait(20)
        yield from inner(requests)

    engine.predict_stream = slow_stream  # the real engine, held mid-request
    th = threading.Thread(target=lambda: list(mgr.predict_stream([_req(_page("busy"))])))
    th.start()
    assert started.wait(10)
    mgr.set_idle_unload(0.05)  # the idle watcher starts now, with the request in flight
    # it saw the request and parked itself with no timeout: it cannot unload until the request ends,
    # however long that takes (this was: sleep 0.3 s and hope the watcher had looked meanwhile)
    cond.until(
        lambda who, timeout, busy, state: who.startswith("idle-unload") and timeout is None and busy == 1
    )
    assert mgr.status().state == READY and mgr.status().in_flight == 1
    release.set()
    th.join(60)
    assert mgr.status().requests_served == 1
    assert _wait_for(lambda: mgr.status().state == IDLE_UNLOADED)
    mgr.close()


def test_failed_load_is_reported_once_and_retried_on_the_next_request(tmp_path, settings):
    bad = settings.model_copy(update={"model": str(tmp_path / "no-such-model")})
    engine = GatedEngine(bad)
    engine.gate.clear()
    mgr = ModelManager(engine, idle_unload_s=0)
    cond = _watched(mgr)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            mgr.predict_batch([_req(_page("x"))])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, name=f"request-{i}") for i in range(2)]
    threads[0].start()
    assert engine.entered.wait(10)
    threads[1].start()
    cond.until(lambda who, timeout, busy, state: who == "request-1" and state == LOADING)
    engine.gate.set()
    for th in threads:
        th.join(30)
    assert len(errors) == 2 and all(isinstance(e, ModelLoadError) for e in errors)
    assert engine.load_calls == 1  # the waiting request did not start a second load
    st = mgr.status()
    assert st.state == "error" and "no-such-model" in (st.last_error or "")
    with pytest.raises(ModelLoadError):
        mgr.load()
    assert engine.load_calls == 2  # a new request tries again


class BatchRecorder(DeepSeekOcr2Engine):
    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.batches: list[int] = []

    def predict_batch(self, requests):
        self.batches.append(len(requests))
        return super().predict_batch(requests)


def test_describe_status_and_batches_stay_whole(settings):
    engine = BatchRecorder(settings)
    mgr = ModelManager(engine, settings)
    info = mgr.describe()
    assert info["state"] == NOT_LOADED and info["loaded"] is False and info["name"] == "deepseek"
    assert info["idle_unload_s"] == settings.idle_unload_s
    outs = mgr.predict_batch([_req(_page("status")), _req(_page("two", index=1))])
    assert engine.batches == [2] and len(outs) == 2  # the OOM guard passes the batch through whole
    st = mgr.status().to_dict()
    assert st["state"] == READY and st["requests_served"] == 2
    assert st["last_memory"]["cuda"] is False and st["last_memory"]["seconds"] > 0
    mgr.close()


def test_settings_drive_the_manager(settings):
    s = settings.model_copy(update={"idle_unload_s": 12.5, "oom_recovery": False})
    mgr = ModelManager(DeepSeekOcr2Engine(s), s)
    assert mgr.idle_unload_s == 12.5
    assert mgr._runner is mgr.engine  # OOM recovery off: requests go straight to the engine
    assert ModelManager(DeepSeekOcr2Engine(s), s, idle_unload_s=1).idle_unload_s == 1
    with pytest.raises(ValueError):
        ModelManager(DeepSeekOcr2Engine(s), idle_unload_s=-1)
