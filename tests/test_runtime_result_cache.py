"""Result cache: keys, hit/miss/clear, bounded by bytes, concurrent writers (threads and processes),
and CachedEngine over the real engine with the tiny checkpoint (a hit never loads the model)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading

import pytest

from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
from ocr_app.runtime.result_cache import CachedEngine, ResultCache, model_fingerprint, output_to_dict
from ocr_app.schema import Block, EngineOutput, PageImage, PageRequest, StopReason

KIB = 1024


def _page(text: str, size=(600, 800), index: int = 0) -> PageImage:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((30, 30), text, fill="black")
    return PageImage(image=img, index=index, source="doc.png")


def _req(page: PageImage, prompt: str = "<image>\nFree OCR.", **kw) -> PageRequest:
    return PageRequest(page=page, prompt=prompt, mode=kw.pop("mode", "global"), max_new_tokens=3, **kw)


def _output(i: int, pad: int = 0) -> EngineOutput:
    return EngineOutput(
        engine="deepseek-ocr2",
        raw_text=f"<|ref|>text<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>page {i}" + "x" * pad,
        blocks=[Block(label="table", text="<table></table>", boxes=[(1.0, 2.0, 3.5, 4.25)])],
        stop_reason=StopReason.LENGTH,
        num_tokens=7,
        vision_tokens=257,
        timings={"total": 1.5},
        notes=["n"],
    )


FP = {"model": "m", "dtype": "bf16"}


def test_key_separates_pixels_prompt_mode_settings_and_engine():
    a, b = _page("alpha"), _page("alphb")
    k = ResultCache.make_key(_req(a), engine="e", fingerprint=FP)
    assert k == ResultCache.make_key(_req(_page("alpha")), engine="e", fingerprint=dict(FP))
    others = {
        ResultCache.make_key(_req(b), engine="e", fingerprint=FP),
        ResultCache.make_key(_req(a, prompt="<image>\nOther."), engine="e", fingerprint=FP),
        ResultCache.make_key(_req(a, mode="default"), engine="e", fingerprint=FP),
        ResultCache.make_key(_req(a), engine="e", fingerprint={**FP, "dtype": "fp16"}),
        ResultCache.make_key(_req(a), engine="light", fingerprint=FP),
    }
    assert k not in others and len(others) == 5


def test_hit_roundtrip_miss_and_clear(tmp_path):
    cache = ResultCache(tmp_path, 1024 * KIB)
    assert cache.get("ab" * 20) is None
    out = _output(1)
    cache.put("ab" * 20, out)
    got = cache.get("ab" * 20)
    assert got == out and got.blocks[0].boxes == [(1.0, 2.0, 3.5, 4.25)]
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1 and len(cache) == 1
    assert cache.clear() == 1 and cache.get("ab" * 20) is None and len(cache) == 0


def test_bounded_by_bytes_evicts_least_recent(tmp_path):
    cache = ResultCache(tmp_path, 10 * KIB)
    keys = [f"{i:02d}" * 20 for i in range(6)]
    for i, k in enumerate(keys):
        cache.put(k, _output(i, pad=3000))  # ~3.3 KiB each
        for f in tmp_path.glob("*/*.json"):  # strictly ordered mtimes, oldest first
            os.utime(f, (f.stat().st_atime, f.stat().st_mtime - 5))
    assert cache.size_bytes() <= 10 * KIB and len(cache) < 6
    assert cache.get(keys[-1]) is not None and cache.get(keys[0]) is None


def test_torn_entry_is_a_miss_and_removed(tmp_path):
    cache = ResultCache(tmp_path, 1024 * KIB)
    cache.put("cd" * 20, _output(2))
    path = next(tmp_path.glob("*/*.json"))
    path.write_text('{"v": 1, "output": {"engi')
    assert cache.get("cd" * 20) is None and not path.exists()


def _writer(directory: str, worker: int, n: int) -> None:
    cache = ResultCache(directory, 64 * KIB)
    for r in range(n):
        cache.put(f"{r % 10:02d}" * 20, _output(worker * 1000 + r, pad=500))  # shared keys
        cache.put(f"w{worker}r{r:03d}".ljust(40, "0"), _output(r, pad=500))  # own keys


def test_concurrent_writers_leave_only_whole_entries(tmp_path):
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    readers_ok: list[bool] = []

    def reader() -> None:
        cache = ResultCache(tmp_path, 64 * KIB)
        for r in range(200):
            out = cache.get(f"{r % 10:02d}" * 20)
            readers_ok.append(out is None or out.raw_text.startswith("<|ref|>text"))

    th = threading.Thread(target=reader)
    th.start()
    threads = [threading.Thread(target=_writer, args=(str(tmp_path), 10 + w, 40)) for w in range(2)]
    for t in threads:
        t.start()
    for t in [*threads, th]:
        t.join()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert all(readers_ok) and len(readers_ok) == 200
    files = list(tmp_path.glob("*/*"))
    assert not [f for f in files if f.suffix != ".json"]  # no temporary file left behind
    for f in files:
        json.loads(f.read_text())  # every entry is whole
    assert ResultCache(tmp_path, 64 * KIB).size_bytes() <= 64 * KIB + 5 * 1024  # bound, give or take a race


class CountingEngine(DeepSeekOcr2Engine):
    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.pages_run = 0

    def predict_stream(self, requests):
        self.pages_run += len(requests)
        yield from super().predict_stream(requests)


@pytest.fixture
def settings(tiny_checkpoint, tmp_path):
    from ocr_app.settings import load_settings

    return load_settings(model=str(tiny_checkpoint), device="cpu", dtype="fp32", cache_dir=tmp_path)


def test_cached_engine_over_the_real_engine(settings):
    first = CachedEngine.from_settings(CountingEngine(settings), settings)
    p1, p2 = _page("one"), _page("two")
    outs = first.predict_batch([_req(p1), _req(p2)])
    assert first.engine.pages_run == 2 and len(first.cache) == 2

    # a fresh process-like instance: answers from disk without loading the model
    second = CachedEngine.from_settings(CountingEngine(settings), settings)
    again = list(second.predict_stream([_req(p2), _req(p1)]))
    assert second.engine.pages_run == 0 and not second.engine.is_loaded
    assert [i for i, _ in again] == [0, 1]
    for (_, hit), ref in zip(again, [outs[1], outs[0]], strict=True):
        assert hit.notes[-1] == "result cache hit"
        hit.notes.pop()
        assert output_to_dict(hit) == output_to_dict(ref)

    # a different prompt misses; use_cache=False bypasses both ways
    mixed = second.predict_batch([_req(p1), _req(p1, prompt="<image>\nParse the figure.")])
    assert second.engine.pages_run == 1 and "result cache hit" in mixed[0].notes
    second.predict_batch([_req(p2, use_cache=False)])
    assert second.engine.pages_run == 2 and len(second.cache) == 3
    second.cache.clear()
    second.predict_batch([_req(p1)])
    assert second.engine.pages_run == 3


def test_model_fingerprint_changes_with_the_weights(tiny_checkpoint, tmp_path):
    import shutil

    copy = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, copy)
    before = model_fingerprint(str(copy))
    assert before == model_fingerprint(str(copy))
    weights = next(copy.glob("*.safetensors"))
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert model_fingerprint(str(copy)) != before
    assert model_fingerprint("org/not-downloaded") == "org/not-downloaded"
