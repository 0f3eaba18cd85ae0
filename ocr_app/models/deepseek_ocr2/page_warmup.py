"""A preloaded server's first document at full speed: blank pages through the product path at load.

Why: with every Triton kernel compiled at load (``kernel_warmup``), the first 16-page document after a
load still took 1.3-1.7× the same document later on an H200 (``bench/profile_firstdoc.py``, 2026-12-02:
2.68 s against 1.58 s in a later process). The sampled difference was first calls: the vision pass at
each new batch size (cuBLAS set-up per matmul shape, Triton binaries read from the disk cache), the
decoder's first build and graph captures, the first prefill, the image processor's first pages. They
depend on shapes, not on content, so a few blank pages of the common page geometry meet them.

Measured (H200, bf16, 16 pages, later process; ``profile_firstdoc.py``, docs/PERFORMANCE.md "Round 6"):
the first document 1.74-1.80× the steady one without it, 1.08-1.16× with it; the warm-up itself 2.6-3.0 s.

Where it runs: ``preload`` only (``--preload`` on a server: "answer the first request at full speed").
A lazily loaded model has its first document waiting already; warming there would only delay it.
The vision passes run on the decoding thread (``DecodeScheduler.call_on_worker``), the thread and
stream that meet those shapes in a document.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from ocr_app.schema import PageImage, PageRequest

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler
    from ocr_app.schema import EngineOutput

logger = logging.getLogger(__name__)

A4_POINTS = (595, 842)  # portrait A4; US letter resolves to the same tile grid in the default mode
WARM_TOKENS = 4  # decode steps per warm page: enough to build the decoder and capture its first graphs
WARM_SOURCE = "warm-up"


class WarmTarget(Protocol):
    """What the warm-up takes from the engine (``DeepSeekOcr2Engine`` has these members)."""

    settings: Any

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]: ...

    def preprocess(self, request: PageRequest) -> Any: ...

    def encode_images(self, batch_inputs: dict[str, Any]) -> list[Any]: ...

    def scheduler(self) -> DecodeScheduler: ...


def warm_mode(mode: str) -> str:
    """The resolution mode whose shapes a document meets: the settings' mode, but ``auto`` (which would
    read a blank page as sparse, ``global``) warms the tiled ``default`` of text pages."""
    name = (mode or "").strip().lower()
    return "default" if name in ("", "auto") else name


def blank_requests(settings: Any, pages: int) -> list[PageRequest]:
    """``pages`` white portrait A4 pages at the settings' DPI, prompt and mode; no vision cache."""
    from PIL import Image

    dpi = int(getattr(settings, "dpi", 144))
    size = (round(A4_POINTS[0] * dpi / 72), round(A4_POINTS[1] * dpi / 72))
    image = Image.new("RGB", size, "white")
    return [
        PageRequest(
            page=PageImage(image=image, index=i, source=WARM_SOURCE, dpi=dpi, page_count=pages),
            prompt=str(getattr(settings, "prompt", "markdown")),
            mode=warm_mode(str(getattr(settings, "mode", "default"))),
            max_new_tokens=WARM_TOKENS,
            use_cache=False,
        )
        for i in range(pages)
    ]


def warm_pages(engine: WarmTarget) -> dict[str, Any]:
    """Run one vision batch of blank pages through ``engine.predict_stream`` (the product path), then
    the vision pass at every batch size from 1 to the scheduler's vision batch on the decoding thread.
    Returns the seconds, pages and batch sizes for ``describe()``."""
    t0 = time.perf_counter()
    sched = engine.scheduler()
    batch = max(1, int(sched.vision_batch))
    requests = blank_requests(engine.settings, batch)
    for _ in engine.predict_stream(requests):
        pass
    pixels = engine.preprocess(requests[0]).pixels

    def encode_each_batch() -> None:
        import torch

        local = pixels["pixel_values_local"]
        for n in range(1, batch + 1):
            engine.encode_images(
                {
                    "pixel_values": torch.cat([pixels["pixel_values"]] * n),
                    "pixel_values_local": None if local is None else torch.cat([local] * n),
                    "num_local_patches": list(pixels["num_local_patches"]) * n,
                }
            )
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()  # the warm-up's seconds include its GPU work

    sched.call_on_worker(encode_each_batch).result()
    seconds = round(time.perf_counter() - t0, 3)
    logger.info("warm-up: %d blank pages and vision batches 1-%d in %.2f s", batch, batch, seconds)
    return {"seconds": seconds, "pages": batch, "vision_batches": batch, "mode": requests[0].mode}


__all__ = ["WARM_TOKENS", "blank_requests", "warm_mode", "warm_pages"]
