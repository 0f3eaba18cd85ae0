"""All local GPUs: one model engine per device behind a pool, placed through the product path.

No GPU here, so the devices are two engines on the CPU (``device="cpu,cpu"``, labelled cpu#0 and
cpu#1): the same registry, pool, model managers and converter as ``cuda:0,cuda:1``.
"""

from __future__ import annotations

import json

import pytest
from factories import make_pdf

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.engines.devices import device_labels, parse_devices
from ocr_app.engines.pool import EnginePool, read_by
from ocr_app.exceptions import ConfigError, EngineError
from ocr_app.settings import Settings
from ocr_app.stack import build_engines

PAGES = 6


def _pool(engines) -> EnginePool:
    engine = engines.get("deepseek")
    while not isinstance(engine, EnginePool):
        engine = engine.engine
    return engine


def _convert(tiny_checkpoint, tmp_path, device: str, name: str, patch=None):
    settings = Settings(
        model=str(tiny_checkpoint), device=device, engine="deepseek", decoder="generate",
        idle_unload_s=0, cache_enabled=False, decode_max_slots=2,
    )  # fmt: skip
    engines = build_engines(settings)
    if patch:
        patch(_pool(engines))
    pdf = make_pdf(tmp_path / "doc.pdf", [f"Page {i + 1} text" for i in range(PAGES)], page_size=(300, 400))
    try:
        opts = ConvertOptions(mode="global", max_new_tokens=5, formats=frozenset({"json"}))
        [doc] = Converter(engines, settings).convert([pdf], tmp_path / name, opts)
    finally:
        engines.unload_all()
    return doc, json.loads(doc.outputs["json"].read_text())["pages"], engines


def test_pages_spread_over_two_devices_in_order_and_match_one_device(tiny_checkpoint, tmp_path):
    _, single, _ = _convert(tiny_checkpoint, tmp_path, "cpu", "one")
    doc, pages, engines = _convert(tiny_checkpoint, tmp_path, "cpu,cpu", "two")
    assert doc.ok and [p["page_number"] for p in pages] == list(range(1, PAGES + 1))
    by = [read_by(p["notes"]) for p in pages]
    assert set(by) == {"cpu#0", "cpu#1"}  # both devices read pages
    # same weights, greedy decoding: each page's text is the one a single device reads for that page
    assert [p["markdown"] for p in pages] == [p["markdown"] for p in single]
    members = engines.describe()["engines"]["deepseek"]["pool"]["members"]
    assert [m["label"] for m in members] == ["cpu#0", "cpu#1"]
    assert sum(m["pages_read"] for m in members) == PAGES
    assert all(m["engine"]["device"] in ("cpu", "cpu#0", "cpu#1") for m in members)


def test_a_failing_device_loses_no_page(tiny_checkpoint, tmp_path):
    calls = {"n": 0}

    def break_second_device(pool: EnginePool) -> None:
        member = pool.members[1]
        inner = member.engine

        def dying(requests):
            calls["n"] += 1
            raise EngineError("CUDA error: an illegal memory access was encountered")

        inner.predict_stream = dying  # the device dies on its first pages

    doc, pages, engines = _convert(tiny_checkpoint, tmp_path, "cpu,cpu", "fail", patch=break_second_device)
    assert calls["n"] >= 1  # the broken device was given pages
    assert doc.ok and [p["page_number"] for p in pages] == list(range(1, PAGES + 1))
    assert {read_by(p["notes"]) for p in pages} == {"cpu#0"}  # its pages were read by the other one
    [_, broken] = engines.describe()["engines"]["deepseek"]["pool"]["members"]
    assert broken["state"] in ("down", "retrying") and "illegal memory access" in broken["last_error"]


def test_device_lists():
    assert parse_devices("auto", cuda_count=1) == ["auto"]
    assert parse_devices("auto", cuda_count=4) == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert parse_devices("cuda:0, cuda:1", cuda_count=2) == ["cuda:0", "cuda:1"]
    assert device_labels(["cpu", "cpu", "cuda:1"]) == ["cpu#0", "cpu#1", "cuda:1"]
    with pytest.raises(ConfigError, match="has 2 CUDA"):
        parse_devices("cuda:0,cuda:5", cuda_count=2)
    with pytest.raises(ConfigError, match="index"):
        parse_devices("cuda,cuda:1", cuda_count=2)


def test_gpu_panel_shows_each_gpu_and_each_member(monkeypatch):
    """The status panel of a two-GPU pool: one memory line per GPU, one state line per device."""
    import ocr_app.runtime.vram as vram
    from ocr_app.engines.devices import build_device_pool
    from ocr_app.engines.registry import EngineSet
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.runtime.manager import ModelManager
    from ocr_app.runtime.vram import VramHistory, VramSnapshot
    from ocr_app.ui import status_panel

    settings = Settings(idle_unload_s=0)
    pool = build_device_pool(settings, ["cuda:0", "cuda:1"], lambda s: ModelManager(DeepSeekOcr2Engine(s), s))
    read: list[object] = []

    def fake_snapshot(device=None, **_):
        read.append(device)
        index = vram.parse_device_index(device)
        return VramSnapshot(available=True, timestamp=0.0, device_index=index, device_name=f"H200 #{index}",
                            total_bytes=140 << 30, used_bytes=(10 + index) << 30)  # fmt: skip

    monkeypatch.setattr(vram, "snapshot", fake_snapshot)
    describe = EngineSet(engines={"deepseek": pool}, default="deepseek").describe()
    text, _, has_gpu = status_panel.panel_update(VramHistory(), describe, settings)
    assert has_gpu and read == ["cuda:0", "cuda:1"]
    assert "GPU 0: H200 #0 · 10.00 / 140.00 GiB" in text and "GPU 1: H200 #1 · 11.00 / 140.00 GiB" in text
    assert "device `cuda:0`: up, 0 in flight, 0 pages read, model not loaded" in text
    assert "device `cuda:1`: up" in text


def test_concurrent_jobs_share_each_devices_slots():
    """Two jobs at once (two UI users, a CLI batch): the pool counts pages in flight per device across
    both, so no device ever holds more than its slots, and both jobs get every page back in order."""
    import threading
    import time

    from PIL import Image

    from ocr_app.engine_api import Engine
    from ocr_app.engines.pool import PoolMember
    from ocr_app.schema import EngineOutput, PageImage, PageRequest

    class Device(Engine):
        """Stands in for one GPU's engine: counts the pages it holds at once."""

        def __init__(self) -> None:
            self.now = self.peak = 0
            self.lock = threading.Lock()

        def load(self) -> None:
            pass

        def unload(self) -> None:
            pass

        @property
        def is_loaded(self) -> bool:
            return True

        def predict_batch(self, requests):
            with self.lock:
                self.now += len(requests)
                self.peak = max(self.peak, self.now)
            time.sleep(0.05)
            with self.lock:
                self.now -= len(requests)
            return [EngineOutput(engine="x", raw_text=r.page.source + str(r.page.index)) for r in requests]

    devices = [Device(), Device()]
    pool = EnginePool(
        [PoolMember(f"cuda:{i}", d, slots=2) for i, d in enumerate(devices)], kind="device", chunk=2
    )
    results: dict[str, list[str]] = {}

    def job(name: str) -> None:
        reqs = [PageRequest(page=PageImage(Image.new("RGB", (8, 8)), i, name), prompt="p") for i in range(10)]
        results[name] = [o.raw_text for o in pool.predict_batch(reqs)]

    threads = [threading.Thread(target=job, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {n: [f"{n}{i}" for i in range(10)] for n in ("a", "b")}
    assert [d.peak for d in devices] == [2, 2]  # full, never over
    assert sum(m.served for m in pool.members) == 20 and all(m.served > 0 for m in pool.members)


def test_gpu_count_from_nvml_respects_cuda_visible_devices(monkeypatch):
    """Counting GPUs must not import torch (seconds) in a process that may only use remote endpoints."""
    import importlib.machinery
    import sys
    import types

    from ocr_app.engines.devices import cuda_device_count

    fake = types.ModuleType("pynvml")
    fake.__spec__ = importlib.machinery.ModuleSpec("pynvml", None)
    fake.nvmlInit = lambda: None
    fake.nvmlShutdown = lambda: None
    fake.nvmlDeviceGetCount = lambda: 4
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert cuda_device_count() == 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert cuda_device_count() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,-1,2")
    assert cuda_device_count() == 1
    assert parse_devices("auto") == ["auto"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert parse_devices("auto") == ["cuda:0", "cuda:1", "cuda:2"]

    def no_driver():
        raise RuntimeError("NVML Shared Library Not Found")

    fake.nvmlInit = no_driver
    assert cuda_device_count() == 0
    assert "torch" not in sys.modules
