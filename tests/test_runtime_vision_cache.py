"""Vision-feature cache: content keys, LRU by bytes, disk store, threads, and bit-identical generation
through the real tiny model's ``mm_encoder_outputs`` input."""

from __future__ import annotations

import threading

import torch

from ocr_app.runtime.vision_cache import VisionFeatureCache, content_key

MIB = 1024**2


def _mib_tensor(seed: int, mib: float = 1.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(int(mib * MIB) // 4, generator=g)


def test_equal_mean_and_std_do_not_collide():
    a = torch.arange(3 * 64 * 64, dtype=torch.float32).reshape(3, 64, 64)
    b = a.flip(-1)  # same values, other order: identical mean, std, min, max
    assert a.mean() == b.mean() and a.std() == b.std()
    assert content_key(a, mode="default") != content_key(b, mode="default")


def test_key_covers_bytes_dtype_shape_mode_and_missing_views():
    a = torch.rand(2, 3, 8, 8)
    assert content_key(a, mode="m") == content_key(a.clone(), mode="m")
    assert content_key(a, mode="m") != content_key(a, mode="global")
    assert content_key(a) != content_key(a.to(torch.bfloat16))
    assert content_key(a) != content_key(a.reshape(4, 3, 8, 4))
    assert content_key(a) != content_key(a, None)
    c = a.clone()
    c[1, 2, 7, 7] += 1e-6  # one element, tiny change
    assert content_key(a) != content_key(c)
    assert content_key(a.to(torch.bfloat16)) == content_key(a.to(torch.bfloat16).clone())


def test_lru_evicts_by_bytes_and_get_refreshes_recency():
    cache = VisionFeatureCache(int(2.5 * MIB))
    cache.put("a", [_mib_tensor(1)])
    cache.put("b", [_mib_tensor(2)])
    assert cache.get("a") is not None  # a is now more recent than b
    cache.put("c", [_mib_tensor(3)])
    assert "b" not in cache and "a" in cache and "c" in cache
    assert cache.bytes == 2 * MIB and len(cache) == 2
    cache.put("big", [_mib_tensor(4, mib=3)])  # larger than the whole cache: not kept
    assert "big" not in cache and cache.bytes == 2 * MIB
    s = cache.stats()
    assert (s.hits, s.evictions, s.entries, s.bytes) == (1, 1, 2, 2 * MIB)
    assert cache.get("b") is None and cache.stats().misses == 1


def test_values_are_cpu_copies_and_exact():
    cache = VisionFeatureCache(10 * MIB)
    t = torch.randn(5, 7).to(torch.bfloat16)
    cache.put("k", [t, t * 2])
    t.zero_()  # the caller reusing its buffer must not change the cached value
    got = cache.get("k")
    assert got is not None and len(got) == 2
    assert got[0].dtype == torch.bfloat16 and got[0].abs().sum() > 0
    assert torch.equal(got[1], got[0] * 2)


def test_disk_store_survives_a_new_instance_and_is_namespaced(tmp_path):
    t = torch.randn(257, 16).to(torch.bfloat16)
    one = VisionFeatureCache(MIB, disk_dir=tmp_path, namespace="model-a|bf16")
    one.put("page", [t])
    two = VisionFeatureCache(MIB, disk_dir=tmp_path, namespace="model-a|bf16")
    got = two.get("page")
    assert got is not None and torch.equal(got[0], t) and two.stats().disk_hits == 1
    assert two.get("page") is not None and two.stats().hits == 1  # now in memory
    other = VisionFeatureCache(MIB, disk_dir=tmp_path, namespace="model-b|bf16")
    assert other.get("page") is None  # another checkpoint never sees these features


def test_disk_torn_file_is_a_miss_and_is_removed(tmp_path):
    cache = VisionFeatureCache(MIB, disk_dir=tmp_path)
    cache.put("k", [torch.ones(3)])
    files = list(tmp_path.glob("*/*.safetensors"))
    assert len(files) == 1
    files[0].write_bytes(b"\x00garbage")
    fresh = VisionFeatureCache(MIB, disk_dir=tmp_path)
    assert fresh.get("k") is None and not files[0].exists()


def test_disk_bound_evicts_oldest(tmp_path):
    import os

    cache = VisionFeatureCache(0, disk_dir=tmp_path, disk_max_bytes=int(2.5 * MIB))
    for i, key in enumerate(("a", "b", "c")):
        cache.put(key, [_mib_tensor(i)])
        for f in tmp_path.glob("*/*.safetensors"):  # make mtimes strictly ordered
            st = f.stat()
            os.utime(f, (st.st_atime, st.st_mtime - 10))
    assert len(cache) == 0  # memory bound 0: disk only
    assert 2 * MIB <= cache.stats().disk_bytes <= 2.5 * MIB
    assert cache.get("a") is None and cache.get("c") is not None
    cache.clear()
    assert cache.stats().disk_bytes == 0


def test_threads_keep_the_byte_bound():
    cache = VisionFeatureCache(int(4.5 * MIB))
    vals = [_mib_tensor(i, mib=0.5) for i in range(8)]

    def worker(w: int) -> None:
        for r in range(40):
            k = f"k{(w * 7 + r) % 20}"
            if cache.get(k) is None:
                cache.put(k, [vals[r % 8]])

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    s = cache.stats()
    assert s.bytes <= 4.5 * MIB and s.entries == s.bytes // (MIB // 2)
    assert s.hits + s.misses == 160


def test_from_settings(tmp_path, monkeypatch):
    from ocr_app.settings import load_settings

    monkeypatch.setenv("DEEPSEEK_OCR_VISION_CACHE_MB", "3")
    monkeypatch.setenv("DEEPSEEK_OCR_VISION_CACHE_DISK", "true")
    monkeypatch.setenv("DEEPSEEK_OCR_CACHE_DIR", str(tmp_path))
    cache = VisionFeatureCache.from_settings(load_settings(model="some/model"))
    assert cache.max_bytes == 3 * MIB and cache.disk_dir == tmp_path / "vision"
    assert "some/model" in cache.namespace


def _page(text: str, size, index: int):
    from PIL import Image, ImageDraw

    from ocr_app.schema import PageImage

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((40, 40), text, fill="black")
    return PageImage(image=img, index=index, source="doc.png")


def test_engine_results_bit_identical_with_and_without_the_cache(tiny_checkpoint, tmp_path):
    """The real engine: no cache vs cache filled (encoder) vs a fresh cache read from disk vs another prompt."""
    from dataclasses import replace

    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.schema import PageRequest
    from ocr_app.settings import load_settings

    settings = load_settings(model=str(tiny_checkpoint), device="cpu", dtype="fp32", max_new_tokens=6)
    reqs = [
        PageRequest(page=_page("Cache me 0123", (700, 900), 0), prompt="<image>\nFree OCR.", mode="global"),
        PageRequest(page=_page("Another page", (900, 600), 1), prompt="<image>\nFree OCR.", mode="global"),
    ]

    def cache() -> VisionFeatureCache:
        return VisionFeatureCache(64 * MIB, disk_dir=tmp_path, namespace="tiny|fp32")

    def facts(outs):
        return [(o.raw_text, o.num_tokens, o.stop_reason, o.vision_tokens) for o in outs]

    reference = DeepSeekOcr2Engine(settings).predict_batch(reqs)
    filling = DeepSeekOcr2Engine(settings, vision_cache=cache())
    first = filling.predict_batch(reqs)
    assert filling.vision_cache.stats().puts == 2
    reading = DeepSeekOcr2Engine(settings, vision_cache=cache())  # new process: features come from disk
    second = reading.predict_batch(reqs)
    assert reading.vision_cache.stats().disk_hits == 2
    assert all("vision features from cache" in o.notes for o in second)
    assert not any("vision features from cache" in o.notes for o in first)
    assert facts(first) == facts(reference) and facts(second) == facts(reference)

    # a re-run with another prompt skips the encoder too, and matches the uncached engine
    other = [replace(reqs[0], prompt="<image>\nParse the figure.")]
    again = reading.predict_batch(other)
    assert "vision features from cache" in again[0].notes and reading.vision_cache.stats().hits == 1
    assert facts(again) == facts(DeepSeekOcr2Engine(settings).predict_batch(other))
