"""OOM recovery, forced deterministically: the real DeepSeek-OCR-2 engine (tiny checkpoint) raises
``torch.OutOfMemoryError`` from its vision encoder when a condition on the batch holds."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from ocr_app.engine_api import Engine
from ocr_app.exceptions import EngineError, GpuOutOfMemory
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
from ocr_app.models.deepseek_ocr2.modes import smaller_modes
from ocr_app.runtime.manager import READY, ModelManager
from ocr_app.runtime.oom import OomRecovery, is_oom
from ocr_app.schema import EngineOutput, PageImage, PageRequest


class OomWhen(DeepSeekOcr2Engine):
    """The real engine; ``encode_images`` raises a CUDA-style OOM when ``condition(pixels, tiles)`` holds."""

    def __init__(self, settings, condition) -> None:
        super().__init__(settings)
        self.condition = condition
        self.calls: list[tuple[int, list[int]]] = []

    def encode_images(self, batch_inputs):
        pixels = batch_inputs["pixel_values"]
        tiles = [int(n) for n in batch_inputs["num_local_patches"]]
        self.calls.append((pixels.shape[0], tiles))
        if self.condition(pixels, tiles):
            raise torch.OutOfMemoryError(
                "CUDA out of memory. Tried to allocate 2.00 GiB (forced by the test)"
            )
        return super().encode_images(batch_inputs)


def _page(text: str, index: int, size=(600, 800), colour="white") -> PageImage:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, colour)
    ImageDraw.Draw(img).text((30, 30), text, fill="black" if colour == "white" else "white")
    return PageImage(image=img, index=index, source="doc.pdf", page_count=2)


def _req(page: PageImage, mode: str) -> PageRequest:
    return PageRequest(page=page, prompt="<image>\nFree OCR.", mode=mode, max_new_tokens=3)


@pytest.fixture
def settings(tiny_checkpoint):
    from ocr_app.settings import load_settings

    return load_settings(model=str(tiny_checkpoint), device="cpu", dtype="fp32", max_new_tokens=3)


def test_batch_split_then_fewer_tiles(settings):
    # OOM whenever more than one page or more than two tiles go through the encoder
    engine = OomWhen(settings, lambda pixels, tiles: pixels.shape[0] > 1 or max(tiles) > 2)
    frees: list[int] = []
    guard = OomRecovery(engine, free=lambda: frees.append(1))
    pages = [_page("page one", 0), _page("page two", 1)]
    outs = guard.predict_batch([_req(p, "default") for p in pages])

    ran_at = set()
    for out in outs:
        ours = [n for n in out.notes if n.startswith("GPU out of memory")]
        assert ours[0] == "GPU out of memory on a batch of 2 pages; retried in smaller batches"
        assert ours[1].startswith("GPU out of memory at mode default")
        ran_at.add(ours[1].rsplit("ran at mode ", 1)[1])
    assert len(ran_at) == 1 and ran_at <= {"default:4", "default:2"}  # fewer tiles, not yet global
    batch_sizes = [n for n, _ in engine.calls]
    assert batch_sizes[0] == 2 and set(batch_sizes[1:]) == {1}
    assert 1 <= max(engine.calls[-1][1]) <= 2  # the successful call ran at most two tiles
    assert outs[0].vision_tokens == 257 + 144 * engine.calls[-1][1][0]
    assert len(frees) == sum(1 for n, t in engine.calls if n > 1 or max(t) > 2)  # freed after every OOM

    engine.condition = lambda pixels, tiles: False  # same engine, no pressure: the result it computes
    mode = next(iter(ran_at))
    direct = engine.predict_batch([_req(pages[1], mode)])[0]
    assert outs[1].raw_text == direct.raw_text and outs[1].num_tokens == direct.num_tokens


def test_final_failure_is_for_that_page_only(settings):
    dark = lambda pixels, tiles: pixels.shape[0] > 1 or bool((pixels.mean(dim=(1, 2, 3)) < -0.9).any())  # noqa: E731
    engine = OomWhen(settings, dark)
    mgr = ModelManager(engine, idle_unload_s=0)  # OOM recovery is on by default
    good, bad = _page("fine", 0), _page("", 1, size=(800, 800), colour="black")  # square: no grey padding
    got = []
    with pytest.raises(GpuOutOfMemory, match=r"page 2 of doc\.pdf: GPU out of memory at every footprint"):
        for item in mgr.predict_stream([_req(good, "global"), _req(bad, "global")]):
            got.append(item)
    assert [i for i, _ in got] == [0]  # the good page came through before the error
    assert "GPU out of memory on a batch of 2 pages; retried in smaller batches" in got[0][1].notes
    st = mgr.status()
    assert st.state == READY and st.in_flight == 0 and st.requests_served == 1  # the process goes on
    with pytest.raises(GpuOutOfMemory):
        mgr.predict_batch([_req(bad, "global")])
    mgr.close()


def test_other_errors_are_not_retried(settings):
    def boom(pixels, tiles):
        raise ValueError("not memory")

    engine = OomWhen(settings, boom)
    with pytest.raises(ValueError, match="not memory"):
        OomRecovery(engine, free=lambda: None).predict_batch([_req(_page("a", 0), "default")])
    assert len(engine.calls) == 1


def test_is_oom_recognises_wrapped_and_message_forms():
    try:
        try:
            raise torch.OutOfMemoryError("CUDA out of memory")
        except torch.OutOfMemoryError as inner:
            raise EngineError("page failed") from inner
    except EngineError as wrapped:
        assert is_oom(wrapped)
    assert is_oom(RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"))
    assert not is_oom(RuntimeError("shape mismatch")) and not is_oom(ValueError("out of memory"))


def test_ladder_of_modes():
    from PIL import Image

    assert smaller_modes("default") == ["default:4", "default:2", "global"]
    assert smaller_modes("default:3") == ["default:2", "global"]
    assert smaller_modes("default:2") == ["global"]
    assert smaller_modes("global") == [] and smaller_modes("small") == []
    small_page = Image.new("RGB", (500, 400), "white")  # auto picks global for it: nothing smaller
    assert smaller_modes("auto", small_page) == []


class OomAfterFirstPage(DeepSeekOcr2Engine):
    """The real engine; a stream of several pages runs out of memory after its first page."""

    def predict_stream(self, requests):
        reqs = list(requests)
        for n, item in enumerate(super().predict_stream(reqs)):
            if n == 1 and len(reqs) > 1:
                raise torch.OutOfMemoryError(
                    "CUDA out of memory. Tried to allocate 1.00 GiB (forced by the test)"
                )
            yield item


def test_a_page_that_ran_out_of_memory_next_to_others_keeps_its_resolution(settings):
    engine = OomAfterFirstPage(settings)
    guard = OomRecovery(engine, free=lambda: None)
    pages = [_page("page one", 0), _page("page two", 1)]
    got = dict(guard.predict_stream(iter([_req(p, "default") for p in pages])))  # lazy, like the converter
    assert sorted(got) == [0, 1]
    survivor = got[1] if not any(n.startswith("GPU") for n in got[0].notes) else got[0]
    notes = [n for n in survivor.notes if n.startswith("GPU out of memory")]
    assert notes == [
        "GPU out of memory on a batch of 2 pages; retried in smaller batches"
    ]  # alone, same mode
    direct = engine.predict_batch([_req(pages[1] if survivor is got[1] else pages[0], "default")])[0]
    assert survivor.vision_tokens == direct.vision_tokens and survivor.raw_text == direct.raw_text


class Squeezed(Engine):
    """Not DeepSeek: an engine whose pages fit only at its own smallest footprint ("thumb"), which it
    offers through the interface's hooks. The runtime must use them without knowing any mode."""

    name = "squeezed"

    def __init__(self) -> None:
        self.events: list[str] = []

    def load(self) -> None:
        self.events.append("load")

    def unload(self) -> None:
        self.events.append("unload")

    @property
    def is_loaded(self) -> bool:
        return "load" in self.events

    def cap_memory(self) -> None:
        self.events.append("cap")

    def smaller_footprints(self, request: PageRequest) -> list[PageRequest]:
        return [replace(request, mode="half"), replace(request, mode="thumb")]

    def predict_batch(self, requests):
        self.events.extend(f"try {r.mode}" for r in requests)
        if any(r.mode != "thumb" for r in requests):
            raise RuntimeError("CUDA out of memory (forced by the test)")
        return [EngineOutput(engine=self.name, raw_text="ok", used_mode=r.mode) for r in requests]


def test_the_runtime_knows_an_engine_only_through_its_hooks():
    engine = Squeezed()
    mgr = ModelManager(engine, idle_unload_s=0)
    try:
        [out] = mgr.predict_batch([_req(_page("tight", 0), "full")])
    finally:
        mgr.unload()
    assert engine.events[:2] == ["cap", "load"]  # the budget holds before anything loads
    assert engine.events[2:5] == ["try full", "try half", "try thumb"]
    assert out.used_mode == "thumb" and "ran at mode thumb" in out.notes[-1]
