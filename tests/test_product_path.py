"""The product path's memory contract and whole-document streaming, on the CPU with the real engine.

What a GPU run measures (``bench/bench_product.py``) rests on these: unload drops every object that
held device memory (checked with weak references, through ``unload`` itself), the graph decoder is
built once and kept (no growth per request), pages are pulled from the document as slots free up, and
the slot plan follows the memory budget (checked with an object that has ``torch.cuda``'s memory
functions, since there is no GPU here).
"""

from __future__ import annotations

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")

from ocr_app.convert import Converter, ConvertOptions  # noqa: E402
from ocr_app.exceptions import GpuOutOfMemory  # noqa: E402
from ocr_app.models.deepseek_ocr2.decoding.scheduler import (  # noqa: E402
    SlotPlan,
    available_bytes,
    plan_capacity,
    plan_slots,
)
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine  # noqa: E402
from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt  # noqa: E402
from ocr_app.schema import PageImage, PageRequest  # noqa: E402
from ocr_app.settings import load_settings  # noqa: E402
from ocr_app.stack import build_engines  # noqa: E402
from tests.factories import make_pdf  # noqa: E402

GIB = 1024**3


def _request(index: int, max_new: int = 6) -> PageRequest:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (320, 400), "white")
    ImageDraw.Draw(img).text((20, 20), f"Page {index} text", fill="black")
    page = PageImage(image=img, index=index, source="t.png")
    return PageRequest(page=page, prompt=resolve_prompt("markdown"), mode="small", max_new_tokens=max_new)


def _graph_engine(tiny_checkpoint, **kw) -> DeepSeekOcr2Engine:
    s = load_settings(model=str(tiny_checkpoint), device="cpu", decoder="graph", max_new_tokens=8, **kw)
    return DeepSeekOcr2Engine(s)


def test_unload_releases_every_object_that_held_memory_and_reload_is_identical(tiny_checkpoint):
    eng = _graph_engine(tiny_checkpoint)
    features: list[weakref.ref] = []
    real_encode = eng.encode_images

    def encode_and_watch(batch_inputs):
        out = real_encode(batch_inputs)
        features.extend(weakref.ref(t) for t in out)
        return out

    eng.encode_images = encode_and_watch
    reqs = [_request(0), _request(1, max_new=3), _request(2)]
    first = dict(eng.predict_stream(iter(reqs)))  # a lazy iterable, as the converter passes it
    sched, dec = eng._decoder, eng._decoder.decoder
    assert dec is not None  # kept after the request (see the next test)
    held = {
        "model": weakref.ref(eng.model),
        "a weight": weakref.ref(next(eng.model.parameters())),
        "processor": weakref.ref(eng.processor),
        "scheduler": weakref.ref(sched),
        "decoder": weakref.ref(dec),
        **{f"decoder tensor {i}": weakref.ref(t) for i, t in enumerate(dec.device_tensors())},
        **{f"features {i}": r for i, r in enumerate(features)},
    }
    rel = [
        pair
        for m in eng.model.modules()
        if hasattr(m, "_ocr_app_rel_tables")
        for pair in m._ocr_app_rel_tables.values()
    ]
    assert rel, "the sliced SAM attention caches its rel-pos tables on the model"
    held.update({f"rel-pos table {i}": weakref.ref(t) for i, pair in enumerate(rel) for t in pair})
    assert len(dec.slots.k) == eng.model.config.text_config.num_hidden_layers  # K/V slots were allocated
    worker = sched._thread
    del sched, dec, rel
    eng.encode_images = DeepSeekOcr2Engine.encode_images.__get__(eng)

    eng.unload()
    gc.collect()
    alive = sorted(name for name, ref in held.items() if ref() is not None)
    assert alive == []
    assert worker is not None and not worker.is_alive()
    assert eng.describe()["decoder"] is None and eng.resident_bytes() == 0

    again = dict(eng.predict_stream(reqs))  # reload on demand
    assert [again[i].raw_text for i in range(3)] == [first[i].raw_text for i in range(3)]
    assert [again[i].num_tokens for i in range(3)] == [6, 3, 6]
    eng.unload()


def test_decoder_is_built_once_and_kept_across_requests(tiny_checkpoint):
    eng = _graph_engine(tiny_checkpoint, decode_max_slots=4)
    try:
        list(eng.predict_stream([_request(0), _request(1)]))
        sched = eng._decoder
        kept = eng.resident_bytes()
        info = eng.describe()["decoder"]
        assert kept > 0 and info["built"] and info["slots"] >= 2 and info["held_mib"] > 0
        for n in (1, 2, 1):  # later requests reuse the same slots: nothing is rebuilt or grown
            list(eng.predict_stream([_request(i) for i in range(n)]))
            assert eng._decoder is sched and eng.resident_bytes() == kept
        assert len(sched.capacities) == 1
        from ocr_app.ui.status_panel import engines_markdown

        panel = engines_markdown({"engines": {"deepseek": eng.describe()}, "default": "deepseek"})
        assert f"decoder: {info['slots']} pages in flight × {info['max_len']} tokens" in panel
    finally:
        eng.unload()


def test_document_pages_are_pulled_as_slots_free_up(tiny_checkpoint, tmp_path):
    """One slot, twice the vision batch in pages: the converter renders a page only when the engine
    takes it, and the engine takes the next page as soon as one finishes, all through one decoder."""
    from ocr_app.models.deepseek_ocr2.decoding.adapter import VISION_BATCH

    n = 2 * VISION_BATCH
    settings = load_settings(
        model=str(tiny_checkpoint),
        device="cpu",
        engine="deepseek",
        decoder="graph",
        decode_max_slots=1,
        idle_unload_s=0,
        cache_enabled=False,
    )
    engines = build_engines(settings)
    pdf = make_pdf(tmp_path / "doc.pdf", [f"page {i}" for i in range(n)])
    events = []
    opts = ConvertOptions(mode="small", max_new_tokens=4, formats=frozenset({"md", "json"}))
    try:
        [doc] = Converter(engines, settings).convert([pdf], tmp_path / "o", opts, progress=events.append)
        inner = engines.get("deepseek")
        while not hasattr(inner, "_decoder"):  # tiling → result cache → model manager → engine
            inner = inner.engine
        sched = inner._decoder
        assert sched.capacities == [1]
    finally:
        engines.unload_all()
    assert len(doc.pages) == n and all(p.status != "error" for p in doc.pages)
    stages = [(e.stage, e.page) for e in events if e.stage in ("render", "page_done")]
    first_done = stages.index(("page_done", next(p for s, p in stages if s == "page_done")))
    rendered_before = [p for s, p in stages[:first_done] if s == "render"]
    assert 1 <= len(rendered_before) < n  # not the whole document up front
    assert ("render", n) in stages[first_done:]


class GpuDouble:
    """torch.cuda's memory functions for a device of ``total`` bytes with ``used`` by others."""

    def __init__(self, total: int, allocated: int, used_by_others: int = 0) -> None:
        self.total, self.allocated, self.others = total, allocated, used_by_others

    def mem_get_info(self, device=None):
        return self.total - self.allocated - self.others, self.total

    def memory_allocated(self, device=None):
        return self.allocated

    def memory_reserved(self, device=None):
        return self.allocated


def test_pages_in_flight_follow_free_memory_or_the_budget(tiny_checkpoint):
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.decoding.scheduler import transient_reserve
    from ocr_app.models.deepseek_ocr2.estimate import kv_bytes_per_token

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32)
    gpu = GpuDouble(total=140 * GIB, allocated=7 * GIB)
    assert available_bytes(None, None, gpu) == 133 * GIB
    assert available_bytes(None, 8 * GIB, gpu) == 1 * GIB  # the budget, not the device, bounds it
    per_slot = kv_bytes_per_token(model.config, torch.float32) * 2048 + 8 * 2048
    big, small = transient_reserve(model, 4, 4), transient_reserve(model, 1, 1)
    assert big > small
    budget = 7 * GIB + big + 5 * per_slot + per_slot // 2  # room for 5.5 slots beside 4-page batches
    assert plan_capacity(model, 2048, 32, 32, 4, vision_batch=4, cuda=gpu) == 32
    assert plan_slots(
        model, 2048, 32, 32, prefill_batch=4, vision_batch=4, budget_bytes=budget, cuda=gpu
    ) == (SlotPlan(5, 4, 4))
    # a small budget: the batches beside the decoder shrink to one page before the slots do
    tight = 7 * GIB + small + 2 * per_slot
    assert plan_slots(model, 2048, 32, 32, prefill_batch=4, vision_batch=4, budget_bytes=tight, cuda=gpu) == (
        SlotPlan(2, 1, 1)
    )
    with pytest.raises(GpuOutOfMemory, match="budget"):
        plan_capacity(model, 2048, 1, 32, 4, budget_bytes=7 * GIB + small, vision_batch=4, cuda=gpu)
