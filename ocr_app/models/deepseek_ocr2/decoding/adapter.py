"""Plugs the graph decoder into an engine (setting ``decoder``: auto | generate | graph).

Why a separate module: ``stream_pages`` is the decoding package's one entry point; the engine's
``predict_stream`` calls it when the graph decoder is on (``predict_batch`` goes through
``predict_stream``), so the engine keeps only the ``generate`` path itself. Pages are handed to the
engine's ``DecodeScheduler`` (continuous batching, shared by concurrent jobs of the same engine; the
engine builds it with ``build_scheduler`` and owns it) while the next ones go through the vision
encoder, and each page is yielded the moment it finishes. The engine is seen only through the public
``interface.PageSource`` protocol: this module never imports it.

Whole-document feeding: ``stream_pages`` pulls page requests lazily from any iterable (the converter
renders pages as they are pulled) and keeps ``slots + vision batch`` pages submitted: while the decoder
thread decodes, this thread preprocesses and vision-encodes the next pages (``VISION_BATCH`` at a time,
fewer where the decoder's memory plan shrank it, one before the plan exists), so a
finished page's slot is refilled at once from the rest of the document, never in waves.

Several documents at once (app users, API calls, a CLI batch): each ``stream_pages`` call is one
request group of the engine's one scheduler. Pages waiting for a slot hold their preprocessed pixels, so
the waiting pages of all groups together stay near two vision batches, split evenly between the groups
with pages in flight (at least one page each, so a newcomer is never shut out by a long job's queue);
the scheduler then gives free slots to the group holding the fewest. A job cancelled meanwhile
(``PageRequest.cancel``) stops waiting at once: its pages leave the queue and their slots.

Stop reasons are the ``generate`` path's, from the same function (``guard.page_end``): END at EOS (EOS
not included in the ids), LENGTH at the cap, REPETITION when the capped tail loops or when the decoder
stopped a page early because it was looping (``LoopSpec``).
"""

from __future__ import annotations

import itertools
import logging
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
    from ocr_app.models.deepseek_ocr2.decoding.interface import PageSource
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler

logger = logging.getLogger(__name__)

DECODERS = ("auto", "generate", "graph")
VISION_BATCH = 8  # pages encoded at once next to the running decoder (reserved in its memory plan; H200,
# fused SAM layers: 27.6 ms/page at 4 pages, 20.6 at 8 — bench_vision)
BACKLOG_POLL_S = 0.005  # how often a feeder whose backlog is full looks whether the decoder took pages
CANCEL_POLL_S = 0.1  # how often a stream waiting for its pages looks whether its job was cancelled


def wants_graph_decoder(setting: str, device: Any) -> bool:
    """``auto``: the graph decoder on CUDA, ``generate`` elsewhere. ``graph`` on CPU runs the same
    decoder eagerly (identical tokens to ``generate``; useful to test it anywhere)."""
    choice = (setting or "auto").strip().lower()
    if choice not in DECODERS:
        raise ConfigError(f"decoder must be one of {', '.join(DECODERS)}, not {setting!r}")
    if choice == "auto":
        return getattr(device, "type", str(device)) == "cuda"
    return choice == "graph"


def build_scheduler(
    source: PageSource,
    *,
    max_slots: int,
    budget_bytes: int | None,
    small_request_batch: int = 0,
    plain: bool = False,
    attention: str = "auto",
) -> DecodeScheduler:
    """A scheduler for ``source``'s loaded model (guard, EOS ids, slots); the engine keeps it between
    requests and closes it on unload. ``small_request_batch``: see ``DecodeScheduler``. ``plain``: no
    CUDA graphs and no fused kernels (the module step; what a model without ``generate`` falls back to
    when the full decoder failed on this GPU). ``attention``: ``DecoderOptions.attention``."""
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler

    opts = DecoderOptions(
        guard=source.guard_spec(),
        eos_ids=tuple(source.eos_ids()),
        graphs="off" if plain else "auto",
        kernels="torch" if plain else "auto",
        attention=attention,
    )
    return DecodeScheduler(
        source.model,
        opts,
        max_slots=max_slots,
        budget_bytes=budget_bytes,
        vision_batch=VISION_BATCH,
        encoder=lambda pages: encode_pages(source, pages),
        small_request_batch=small_request_batch,
    )


def encode_pages(source: PageSource, pages: list[Any]) -> list[dict[str, Any]]:
    """The scheduler's encoder: vision features of preprocessed pages (the engine's cache first), as
    each page's prefill inputs. Runs on the decoding thread; notes each page's vision seconds."""
    wrap = _feature_wrapper(source.model)
    t0 = time.perf_counter()
    source.attach_features(pages)
    out = []
    for page in pages:
        page.vision_s = (time.perf_counter() - t0) / len(pages)
        out.append({"mm_encoder_outputs": {"image": wrap(pooler_output=[page.features])}})
        page.features = None  # the prefill inputs hold them until the prefill; the page need not
    return out


def _feature_wrapper(model: Any) -> Any:
    """The class that carries precomputed vision features into ``model``'s forward: transformers' own
    output class for its model (it nests it in its outputs), the light dataclass for the native one (no
    transformers import on that path)."""
    if hasattr(model, "generate"):
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        return BaseModelOutputWithPooling
    from ocr_app.models.deepseek_ocr2.native_outputs import ImageFeatures

    return ImageFeatures


def stream_pages(
    source: PageSource, sched: DecodeScheduler, requests: Iterable[tuple[int, PageRequest]]
) -> Iterator[tuple[int, EngineOutput]]:
    """Yield ``(index, output)`` as pages finish, for ``(index, request)`` pairs pulled lazily: up to
    ``slots + vision batch`` pages are in flight; the next ones are encoded while those decode."""
    group = object()  # this document's pages: one request in the scheduler's fair admission
    eos = set(source.eos_ids())
    waiting: dict[Future, tuple[int, Any, dict[str, float], float]] = {}
    cancels: list[Any] = []  # the cancel events of the jobs whose pages these are (``PageRequest.cancel``)

    def noted(pairs: Iterable[tuple[int, PageRequest]]) -> Iterator[tuple[int, PageRequest]]:
        for i, r in pairs:
            if r.cancel is not None and all(c is not r.cancel for c in cancels):
                cancels.append(r.cancel)
            yield i, r

    def ready(timeout: float | None) -> Iterator[tuple[int, EngineOutput]]:
        if not waiting:
            return
        end = None if timeout is None else time.perf_counter() + timeout
        while True:  # wait in short slices: a cancelled job stops waiting at once
            left = CANCEL_POLL_S if end is None else max(0.0, min(CANCEL_POLL_S, end - time.perf_counter()))
            done, _ = wait(list(waiting), timeout=left, return_when=FIRST_COMPLETED)
            if done or (end is not None and time.perf_counter() >= end):
                break
            if any(c.is_set() for c in cancels):
                raise _Cancelled
        for f in sorted(done, key=lambda f: waiting[f][0]):
            index, page, timings, t0 = waiting.pop(f)
            res: DecodeResult = f.result()  # raises the page's error (EngineError, OOM) to the caller
            ids, stop = page_end(res.tokens, eos, res.stop)
            t = dict(timings, vision=page.vision_s, prefill=res.first_token_s, decode=res.decode_s)
            t["total"] = time.perf_counter() - t0
            yield index, source.page_output(page, ids, stop, t)

    try:
        yield from _feed(source, sched, noted(requests), waiting, ready, group)
    except _Cancelled:  # the job was cancelled: its pages leave the queue and their slots now
        logger.info("a cancelled conversion dropped %d page(s) in flight", len(waiting))
    finally:  # the caller stopped early (cancel, error): pages still queued or decoding are not wanted
        for f in waiting:
            f.cancel()


class _Cancelled(Exception):
    """The job these pages belong to was cancelled while they were in flight."""


def _feed_stream(sched: DecodeScheduler) -> Any:
    """The scheduler's high-priority stream for preprocessing the next pages."""
    return sched.feed_stream()


def backlog_share(batch: int, groups: int) -> int:
    """Pages one request may keep waiting for a slot: two vision batches split between the requests
    with pages in flight, at least one (so nobody is shut out by another request's queue)."""
    return max(1, (2 * batch) // max(1, groups))


def _feed(source: PageSource, sched, requests, waiting, ready, group) -> Iterator[tuple[int, EngineOutput]]:
    import torch

    exhausted = False
    while True:
        batch = sched.encode_batch()
        # pages in flight up to the slots plus one batch, and this request's share of the pages
        # waiting for a slot (``backlog_share``)
        slot_room = sched.slots() + batch - len(waiting)
        room = min(slot_room, backlog_share(batch, sched.groups()) - sched.backlog(group))
        chunk = [] if exhausted else list(itertools.islice(requests, min(batch, max(0, room))))
        if room > 0 and not exhausted and len(chunk) < min(batch, room):
            exhausted = True
        if chunk:
            t0 = time.perf_counter()
            stream = _feed_stream(sched)
            with torch.inference_mode(), torch.cuda.stream(stream) if stream is not None else nullcontext():
                pages = [source.preprocess(r) for _, r in chunk]
                if stream is not None:  # the decoder reads the pixels on its own stream: complete them
                    stream.synchronize()
            timings = {"preprocess": time.perf_counter() - t0}
            # the vision pass runs on the decoder's thread right before each page's prefill (scheduler)
            reqs = [
                DecodeRequest(p.input_ids, {}, p.max_new_tokens, key=i, payload=p)
                for (i, _), p in zip(chunk, pages, strict=True)
            ]
            for (i, _), page, f in zip(chunk, pages, sched.submit_many(reqs, group=group), strict=True):
                waiting[f] = (i, page, timings, t0)
            yield from ready(0)
            continue
        if not waiting:
            if exhausted:
                return
            # nothing in flight yet no room: counts of a page that just failed are being updated
            time.sleep(BACKLOG_POLL_S)
            continue
        # slots are free but this request's backlog is full: look again soon (the decoder admits pages)
        yield from ready(BACKLOG_POLL_S if slot_room > 0 and not exhausted else None)


__all__ = ["DECODERS", "backlog_share", "build_scheduler", "stream_pages", "wants_graph_decoder"]
