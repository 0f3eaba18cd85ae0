"""Plugs the graph decoder into ``DeepSeekOcr2Engine`` (setting ``decoder``: auto | generate | graph).

Why a separate module: ``stream_pages`` is the decoding package's one entry point; the engine's
``predict_stream`` calls it when the graph decoder is on (``predict_batch`` goes through
``predict_stream``), so the engine keeps only the ``generate`` path itself. Pages are handed to the
engine's ``DecodeScheduler`` (continuous batching, shared by concurrent jobs of the same engine) while
the next ones go through the vision encoder, and each page is yielded the moment it finishes.

Whole-document feeding: ``stream_pages`` pulls page requests lazily from any iterable (the converter
renders pages as they are pulled) and keeps ``slots + vision batch`` pages submitted: while the decoder
thread decodes, this thread preprocesses and vision-encodes the next pages (``VISION_BATCH`` at a time,
fewer where the decoder's memory plan shrank it, one before the plan exists), so a
finished page's slot is refilled at once from the rest of the document, never in waves.

Stop reasons are the ``generate`` path's, from the same function (``guard.page_end``): END at EOS (EOS
not included in the ids), LENGTH at the cap, REPETITION when the capped tail loops or when the decoder
stopped a page early because it was looping (``LoopSpec``).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2.decoding.decoder import (
    DecodeRequest,
    DecodeResult,
    DecoderOptions,
)
from ocr_app.models.deepseek_ocr2.decoding.guard import page_end
from ocr_app.schema import EngineOutput, PageRequest

if TYPE_CHECKING:
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine, PreparedPage

logger = logging.getLogger(__name__)

DECODERS = ("auto", "generate", "graph")
VISION_BATCH = 8  # pages encoded at once next to the running decoder (reserved in its memory plan; H200,
# fused SAM layers: 27.6 ms/page at 4 pages, 20.6 at 8 — bench_vision)
BACKLOG_POLL_S = 0.005  # how often a feeder whose backlog is full looks whether the decoder took pages
_BUILD_LOCK = threading.Lock()  # two jobs starting at once must share one scheduler, not build two


def wants_graph_decoder(setting: str, device: Any) -> bool:
    """``auto``: the graph decoder on CUDA, ``generate`` elsewhere. ``graph`` on CPU runs the same
    decoder eagerly (identical tokens to ``generate``; useful to test it anywhere)."""
    choice = (setting or "auto").strip().lower()
    if choice not in DECODERS:
        raise ConfigError(f"decoder must be one of {', '.join(DECODERS)}, not {setting!r}")
    if choice == "auto":
        return getattr(device, "type", str(device)) == "cuda"
    return choice == "graph"


def scheduler_for(engine: DeepSeekOcr2Engine) -> DecodeScheduler:
    """The engine's scheduler, built on first use from its settings (guard, EOS ids, slots)."""
    with _BUILD_LOCK:
        return _scheduler_locked(engine)


def _scheduler_locked(engine: DeepSeekOcr2Engine) -> DecodeScheduler:
    sched = getattr(engine, "_decoder", None)
    if sched is not None and sched.model is engine.model:
        return sched
    sched = new_scheduler(engine)
    engine._decoder = sched
    return sched


def new_scheduler(engine: DeepSeekOcr2Engine) -> DecodeScheduler:
    """A scheduler for the engine's model from its settings (guard, EOS ids, slots, budget), not yet
    the engine's: ``scheduler_for`` keeps one; the kernel warm-up asks one what it would build."""
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler

    opts = DecoderOptions(guard=engine.guard_spec(), eos_ids=tuple(engine._eos_ids()), graphs="auto")
    return DecodeScheduler(
        engine.model,
        opts,
        max_slots=int(getattr(engine.settings, "decode_max_slots", 32)),
        budget_bytes=engine.budget_bytes,
        vision_batch=VISION_BATCH,
        encoder=lambda pages: encode_pages(engine, pages),
    )


def encode_pages(engine: DeepSeekOcr2Engine, pages: list[PreparedPage]) -> list[dict[str, Any]]:
    """The scheduler's encoder: vision features of preprocessed pages (the engine's cache first), as
    each page's prefill inputs. Runs on the decoding thread; notes each page's vision seconds."""
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    t0 = time.perf_counter()
    engine._attach_features(pages)
    out = []
    for page in pages:
        page.vision_s = (time.perf_counter() - t0) / len(pages)
        out.append(
            {"mm_encoder_outputs": {"image": BaseModelOutputWithPooling(pooler_output=[page.features])}}
        )
        page.features = None  # the prefill inputs hold them until the prefill; the page need not
    return out


def stream_pages(
    engine: DeepSeekOcr2Engine, requests: Iterable[tuple[int, PageRequest]]
) -> Iterator[tuple[int, EngineOutput]]:
    """Yield ``(index, output)`` as pages finish, for ``(index, request)`` pairs pulled lazily: up to
    ``slots + vision batch`` pages are in flight; the next ones are encoded while those decode."""

    sched = scheduler_for(engine)
    eos = set(engine._eos_ids())
    waiting: dict[Future, tuple[int, Any, dict[str, float], float]] = {}
    source = iter(requests)

    def ready(timeout: float | None) -> Iterator[tuple[int, EngineOutput]]:
        if not waiting:
            return
        done, _ = wait(list(waiting), timeout=timeout, return_when=FIRST_COMPLETED)
        for f in sorted(done, key=lambda f: waiting[f][0]):
            index, page, timings, t0 = waiting.pop(f)
            res: DecodeResult = f.result()  # raises the page's error (EngineError, OOM) to the caller
            ids, stop = page_end(res.tokens, eos, res.stop)
            t = dict(timings, vision=page.vision_s, prefill=res.first_token_s, decode=res.decode_s)
            t["total"] = time.perf_counter() - t0
            yield index, engine._output(page, ids, stop, t)

    try:
        yield from _feed(engine, sched, source, waiting, ready)
    finally:  # the caller stopped early (cancel, error): pages still queued or decoding are not wanted
        for f in waiting:
            f.cancel()


def _feed_stream(sched: DecodeScheduler) -> Any:
    """The scheduler's high-priority stream for preprocessing the next pages."""
    return sched.feed_stream()


def _feed(engine, sched, source, waiting, ready) -> Iterator[tuple[int, EngineOutput]]:
    import torch

    exhausted = False
    while True:
        batch = sched.encode_batch()
        # pages in flight up to the slots plus one batch, and at most two batches waiting for a slot
        slot_room = sched.slots() + batch - len(waiting)
        room = min(slot_room, 2 * batch - sched.backlog())
        chunk = [] if exhausted else list(itertools.islice(source, min(batch, max(0, room))))
        if room > 0 and not exhausted and len(chunk) < min(batch, room):
            exhausted = True
        if chunk:
            t0 = time.perf_counter()
            stream = _feed_stream(sched)
            with torch.inference_mode(), torch.cuda.stream(stream) if stream is not None else nullcontext():
                pages = [engine.preprocess(r) for _, r in chunk]
                if stream is not None:  # the decoder reads the pixels on its own stream: complete them
                    stream.synchronize()
            timings = {"preprocess": time.perf_counter() - t0}
            # the vision pass runs on the decoder's thread right before each page's prefill (scheduler)
            reqs = [
                DecodeRequest(p.input_ids, {}, p.max_new_tokens, key=i, payload=p)
                for (i, _), p in zip(chunk, pages, strict=True)
            ]
            for (i, _), page, f in zip(chunk, pages, sched.submit_many(reqs), strict=True):
                waiting[f] = (i, page, timings, t0)
            yield from ready(0)
            continue
        if not waiting:
            return
        # slots are free but the backlog is full: look again as soon as the decoder admits pages
        yield from ready(BACKLOG_POLL_S if slot_room > 0 and not exhausted else None)


__all__ = ["DECODERS", "new_scheduler", "scheduler_for", "stream_pages", "wants_graph_decoder"]
