"""Parking an idle model in host memory and waking it with one copy (``park.py``, the engine's
``park``, the manager's idle path), on the tiny DeepSeek-OCR-2 model on the CPU.

The CPU has no separate device memory, so the mechanics are checked with the CPU as the "device":
every tensor the model owns is replaced by a host copy (new storage), derived caches are dropped, and
the woken model reads the page to the same text. The 0 MiB and the wake time are GPU figures
(``bench/bench_product.py``'s park phase, docs/PERFORMANCE.md)."""

from __future__ import annotations

import threading
import time

import pytest

torch = pytest.importorskip("torch")

from ocr_app.models.deepseek_ocr2 import park as park_mod  # noqa: E402
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine  # noqa: E402
from ocr_app.runtime.manager import IDLE_UNLOADED, READY, ModelManager  # noqa: E402
from ocr_app.schema import PageImage, PageRequest  # noqa: E402


@pytest.fixture
def settings(tiny_checkpoint):
    from ocr_app.settings import load_settings

    return load_settings(model=str(tiny_checkpoint), device="cpu", dtype="fp32", max_new_tokens=6)


def _req() -> PageRequest:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (600, 800), "white")
    ImageDraw.Draw(img).text((30, 30), "parked page", fill="black")
    return PageRequest(page=PageImage(image=img, index=0, source="p.png"), prompt="<image>\nFree OCR.",
                       mode="global", max_new_tokens=6)  # fmt: skip


def test_park_moves_every_tensor_drops_caches_and_wake_puts_them_back():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 4))
    model[1].weight = model[0].weight  # tied: one host copy, still tied after the wake
    model[0].register_buffer("table", torch.arange(4.0))
    model[1].plain = torch.ones(2)  # a tensor attribute that is no parameter or buffer
    model[1].cache = {"k": torch.zeros(3)}  # a derived cache: dropped
    model[0].strided = torch.arange(6.0).view(2, 3).t()  # a strided view: parked strided, apart
    x = torch.randn(2, 4)
    ref = model(x)
    ptrs = {n: t.data_ptr() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    parked = park_mod.park(model, torch.device("cpu"))
    assert parked.caches_dropped == 1 and not hasattr(model[1], "cache")
    # three parameters (the tied weight once), the buffer and the plain attribute
    assert len(parked.places) == 6
    assert parked.bytes == 4 * (16 + 4 + 4 + 4 + 2 + 6)
    assert model[0].strided.stride() == (1, 3) and torch.equal(
        model[0].strided, torch.arange(6.0).view(2, 3).t()
    )
    assert all(t.data_ptr() != ptrs[n] for n, t in [*model.named_parameters(), *model.named_buffers()])
    assert model[1].weight is model[0].weight
    # one exact-size host block (torch's pinned allocator rounds each block up to a power of two)
    arena = parked.arena.untyped_storage().data_ptr()
    assert all(t.untyped_storage().data_ptr() == arena for t in [*model.parameters(), *model.buffers()])
    assert parked.arena.numel() == 5 * park_mod.ALIGN and not parked.pinned
    report = park_mod.wake(parked)
    assert report["bytes"] == parked.bytes
    torch.testing.assert_close(model(x), ref)
    assert torch.equal(model[1].plain, torch.ones(2)) and torch.equal(model[0].table, torch.arange(4.0))


def test_engine_parks_on_a_gpu_and_wakes_with_the_same_reading(settings, monkeypatch):
    """The engine's GPU branch with the CPU standing in for the GPU: ``park`` frees the decoder and
    parks the weights (not loaded, ``parked_gib`` stated), ``load`` wakes them, the page reads the same."""
    from types import SimpleNamespace

    engine = DeepSeekOcr2Engine(settings)
    engine.load()
    first = engine.predict_batch([_req()])[0].raw_text
    model = engine.model
    cpu = engine.device
    real = park_mod.park
    monkeypatch.setattr(park_mod, "park", lambda m, device: real(m, cpu))
    engine.device = SimpleNamespace(type="cuda")
    engine.park()
    engine.device = cpu
    assert not engine.is_loaded and engine.model is model and engine._decoder is None
    info = engine.describe()
    parked_bytes = engine._parked.bytes
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    assert parked_bytes >= weights and info["parked_gib"] == round(parked_bytes / 2**30, 3)
    assert not info["loaded"]
    engine.load()
    assert engine.is_loaded and engine.describe()["parked_gib"] is None
    assert engine.last_wake["bytes"] == parked_bytes
    assert engine.predict_batch([_req()])[0].raw_text == first
    engine.unload()
    assert engine.model is None and not engine.is_loaded


def test_engine_park_off_a_gpu_or_switched_off_unloads(settings):
    engine = DeepSeekOcr2Engine(settings)
    engine.load()
    engine.park()  # CPU: nothing to free on a device, so the host memory goes back too
    assert engine.model is None and engine.describe()["parked_gib"] is None


class ParkRecorder(DeepSeekOcr2Engine):
    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.calls: list[str] = []

    def park(self) -> None:
        self.calls.append("park")
        super().park()

    def unload(self) -> None:
        self.calls.append("unload")
        super().unload()


def test_the_managers_idle_unload_parks_and_an_explicit_unload_unloads(settings):
    engine = ParkRecorder(settings)
    mgr = ModelManager(engine, idle_unload_s=0.2)
    mgr.predict_batch([_req()])
    deadline = time.monotonic() + 15
    while mgr.status().state != IDLE_UNLOADED and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mgr.status().state == IDLE_UNLOADED
    assert engine.calls[0] == "park"  # on the CPU the engine's park then unloads (its fallback)
    mgr.predict_batch([_req()])
    assert mgr.status().state == READY
    engine.calls.clear()
    mgr.close()
    assert engine.calls == ["unload"] and threading.active_count() >= 1


def test_info_states_what_an_idle_unload_keeps(settings, tiny_checkpoint):
    from ocr_app.info import _idle_line

    files = sum(f.stat().st_size for f in tiny_checkpoint.glob("*.safetensors"))
    line = _idle_line(settings, "bf16 (--dtype)", gpu=True)
    assert "pinned host memory" in line and f"{files / 2**30:.2f} GiB, as the checkpoint" in line
    assert "dropped from memory" in _idle_line(settings, "fp32 on the CPU", gpu=False)
    off = settings.model_copy(update={"idle_park": False})
    assert "GPU and host memory" in _idle_line(off, "bf16 (--dtype)", gpu=True)
    assert _idle_line(settings.model_copy(update={"idle_unload_s": 0}), "", gpu=True).startswith("off")
