"""Continuous batching of pages over one ``PageDecoder``, fed from any thread.

Why a worker thread: pages of one document and of concurrent jobs (two UI users, a CLI batch) should
decode together, and a long page must not hold short ones back. Callers ``submit`` pages (thread-safe)
and get a ``Future`` per page; one worker owns the GPU state, prefills new pages into free slots between
decode chunks, frees a slot the moment its page finishes and resolves that page's future right away,
so results stream out in finishing order (``adapter.stream_pages`` waits on the futures). Pages are
submitted with a ``group`` (one request: a document's page stream); a free slot goes to the group that
holds the fewest (``admission.FairQueue``), so a short request is not stuck behind a long job's queue.

Why the decoder is kept between requests: rebuilding it per request re-allocated the K/V slots and
re-captured every graph (seconds per request), and a release racing with the end of a request showed up
as "kept N MiB" in the memory log. So the decoder is sized once, up front, from the memory estimate and
the free memory or the budget (``plan_capacity``: K/V bytes per token × slot length × slots, after
reserving one vision batch and one prefill batch), and then kept: a request never grows it. What it
holds is ``resident_bytes()`` (the memory log subtracts it) and ``describe()`` (the GPU panel shows it).
It is rebuilt only when idle and a page needs a longer context than its slots have (slot lengths are
coarse buckets, ``SLOT_LENGTHS``, so that is rare), and released by ``close()`` (engine unload).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, replace
from typing import Any

from ocr_app.exceptions import EngineError, GpuOutOfMemory
from ocr_app.models.deepseek_ocr2.decoding.admission import SMALL_REQUEST_PAGES, FairQueue
from ocr_app.models.deepseek_ocr2.decoding.decoder import (
    BATCH_BUCKETS,
    DecodeRequest,
    DecoderOptions,
    PageDecoder,
    capture_lock,
    release_cuda_workspaces,
)

logger = logging.getLogger(__name__)

PREFILL_VISION_TOKENS = 1121  # the largest default-mode page: reserve prefill room for it
SLOT_LENGTHS = (2048, 4096, 8192)  # slot lengths a decoder is built with (then the model's context)
# a small request that finds every slot taken parks up to this many pages of larger ones (``_make_room``)
PARK_PAGES = SMALL_REQUEST_PAGES
# steps of a small request's own rows before each step of the whole batch (``PageDecoder.run_chunk``)
PRIORITY_STEPS = 2
SLACK_BYTES = 256 * 1024**2  # graphs' activations, logits, cuBLAS workspaces, fragmentation


def slot_length(need: int, context: int) -> int:
    """The coarse slot length for ``need`` tokens: few sizes, so a kept decoder rarely rebuilds."""
    for n in SLOT_LENGTHS:
        if need <= n:
            return min(n, context)
    return context


def transient_reserve(model: Any, vision_batch: int, prefill_batch: int) -> int:
    """Bytes to keep free next to the decoder: the vision pass of ``vision_batch`` pages (run by the
    engine's thread while the decoder works) plus the language prefill of ``prefill_batch`` pages
    (run by the decoder's thread), both at the largest default-mode page, plus slack."""
    from ocr_app.models.deepseek_ocr2.estimate import estimate_page_bytes
    from ocr_app.models.deepseek_ocr2.sam_attention import attn_slice_bytes

    dtype = model.lm_head.weight.dtype
    sliced = attn_slice_bytes(model)
    vision = estimate_page_bytes(
        model.config, PREFILL_VISION_TOKENS, 16, 0, dtype, batch=max(1, vision_batch), attn_slice_bytes=sliced
    )
    prefill = estimate_page_bytes(
        model.config,
        PREFILL_VISION_TOKENS,
        16,
        0,
        dtype,
        batch=max(1, prefill_batch),
        attn_slice_bytes=sliced,
    )
    return vision.vision_bytes + vision.features_bytes + prefill.language_bytes + SLACK_BYTES


def available_bytes(device: Any, budget_bytes: int | None, cuda: Any = None) -> int:
    """Memory this process may still allocate on ``device``: free device memory plus the allocator's
    cached blocks, bounded by ``budget_bytes`` minus what is allocated when a budget is set.
    ``cuda``: ``torch.cuda`` (default) or an object with the same functions."""
    if cuda is None:
        import torch

        cuda = torch.cuda
    free, _ = cuda.mem_get_info(device)
    allocated = cuda.memory_allocated(device)
    avail = free + max(0, cuda.memory_reserved(device) - allocated)
    if budget_bytes is not None:
        avail = min(avail, int(budget_bytes) - allocated)
    return int(avail)


@dataclass(frozen=True)
class SlotPlan:
    """Pages in flight, and the batches the transient reserve beside them was sized for."""

    slots: int
    vision_batch: int  # pages the engine encodes at once next to the running decoder
    prefill_batch: int  # pages of equal prompt length prefilled in one forward


def plan_slots(
    model: Any,
    max_len: int,
    wanted: int,
    max_slots: int,
    *,
    prefill_batch: int = 1,
    vision_batch: int = 1,
    budget_bytes: int | None = None,
    cuda: Any = None,
) -> SlotPlan:
    """Slots to allocate: ``wanted`` rounded up to a batch bucket, bounded by ``max_slots`` and, on a
    GPU, by the memory left (free VRAM, or ``budget_bytes``) after ``transient_reserve``.

    Where memory is tight (a small card or budget), the vision and prefill batches shrink (down to one
    page) before the slots do: at least ``min(wanted, 4)`` slots, else one page at a time with as many
    slots as fit. ``cuda``: ``torch.cuda`` (default) or an object with the same functions (then the
    memory bound applies whatever the model's device). Raises ``GpuOutOfMemory`` if not one page fits.
    """
    from ocr_app.models.deepseek_ocr2.estimate import kv_bytes_per_token

    want = min(max(1, wanted), max_slots)
    want = next((b for b in BATCH_BUCKETS if b >= want), want)
    want = min(want, max_slots)
    vb, pb = max(1, vision_batch), max(1, prefill_batch)
    device = model.lm_head.weight.device
    if device.type != "cuda" and cuda is None:
        return SlotPlan(want, vb, pb)
    per_slot = kv_bytes_per_token(model.config, model.lm_head.weight.dtype) * max_len + 8 * max_len
    avail = available_bytes(device, budget_bytes, cuda)
    where = f"{budget_bytes / 1024**3:.2f} GiB budget" if budget_bytes is not None else "free VRAM"
    tries = sorted({(vb, pb), (min(vb, 2), min(pb, 2)), (1, 1)}, reverse=True)
    for i, (v, p) in enumerate(tries):
        fits = int((avail - transient_reserve(model, v, p)) // per_slot)
        last = i == len(tries) - 1
        if fits >= min(want, 4) or (last and fits >= 1):
            cap = min(want, fits)
            if cap < want or (v, p) != (vb, pb):
                logger.info(
                    "decode plan: %d slots (asked %d), vision batch %d, prefill batch %d within %.2f GiB of %s",
                    cap, want, v, p, avail / 1024**3, where,
                )  # fmt: skip
            return SlotPlan(cap, v, p)
    need = transient_reserve(model, 1, 1) + per_slot
    raise GpuOutOfMemory(
        f"Not enough GPU memory to decode one page of {max_len} tokens ({avail / 1024**3:.2f} GiB "
        f"available within the {where}, {need / 1024**3:.2f} GiB needed)."
    )


def plan_capacity(
    model: Any,
    max_len: int,
    wanted: int,
    max_slots: int,
    prefill_batch: int = 1,
    *,
    budget_bytes: int | None = None,
    vision_batch: int = 1,
    cuda: Any = None,
) -> int:
    """The slots of ``plan_slots``."""
    return plan_slots(
        model, max_len, wanted, max_slots, prefill_batch=prefill_batch, vision_batch=vision_batch,
        budget_bytes=budget_bytes, cuda=cuda,
    ).slots  # fmt: skip


def _settle(future: Future, result: Any = None, error: Exception | None = None) -> None:
    """Resolve ``future`` unless its caller cancelled it meanwhile (a race with ``Future.cancel``)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass  # cancelled (or already resolved): nobody waits for it


@dataclass
class _Owner:
    """A page inside the decoder: its future, the caller's key (never stored on the Future) and the
    request group it belongs to (fair admission counts the slots each group holds)."""

    future: Future
    key: Any
    group: Any = None


def _page_error(exc: Exception) -> Exception:
    """What a page's future raises: our errors and CUDA OOM as they are (OOM recovery retries on
    ``torch.OutOfMemoryError``), anything else wrapped in ``EngineError``."""
    if isinstance(exc, EngineError) or type(exc).__name__ == "OutOfMemoryError":
        return exc
    return EngineError(f"decoding failed: {exc}")


def _group(owners: dict[int, _Owner], dec: PageDecoder, slot: int) -> Any:
    """The request group of the page in ``slot`` (None once its owner is gone)."""
    owner = owners.get(id(dec.slot_key[slot]))
    return None if owner is None else owner.group


class DecodeScheduler:
    """Thread-safe page queue in front of one kept decoder (continuous batching)."""

    def __init__(
        self,
        model: Any,
        options: DecoderOptions,
        *,
        max_slots: int = 32,
        context: int | None = None,
        len_round: int = 256,
        budget_bytes: int | None = None,
        vision_batch: int = 1,
        encoder: Callable[[list[Any]], list[dict[str, Any]]] | None = None,
        small_request_batch: int = 0,
    ) -> None:
        """``budget_bytes``: GPU memory this process may use (None: the free memory); ``vision_batch``:
        pages encoded at once (reserved beside the slots); ``encoder``: turns the ``payload`` of
        requests submitted without ``model_inputs`` into them, ``vision_batch`` pages per call, on the
        decoding thread between decode chunks; ``small_request_batch`` (0: off): while a small request
        decodes, larger ones get no new slots beyond this batch size (``admission.FairQueue.take``).

        Why the vision pass runs on this thread: launched from the engine's thread next to running
        decode graphs, it did not progress until the decoder idled (measured on an H200: 0.74 s instead
        of 0.15 s for 4 pages, on any stream or stream priority), so a 64-page document never had more
        than 4 pages decoding. Here it runs between chunks: the GPU does one thing at a time, and a
        page's features are made right before its prefill."""
        self.model = model
        self.options = options
        self.max_slots = max(1, int(max_slots))
        cfg = getattr(model.config, "text_config", model.config)
        self.context = int(context or cfg.max_position_embeddings)
        self.len_round = len_round
        self.budget_bytes = budget_bytes
        self.vision_batch = max(1, int(vision_batch))
        self.encoder = encoder
        self.small_request_batch = max(0, int(small_request_batch))  # read every cycle
        # per group, the futures of pages waiting in the worker and of pages in slots (a snapshot the
        # worker publishes; readers skip futures cancelled since, so a cancel frees room at once)
        self._backlog: dict[Any, list[Future]] = {}
        self._held: dict[Any, list[Future]] = {}
        self._cond = threading.Condition()
        self._queue: deque[tuple[Any, DecodeRequest, Future]] = deque()
        self._calls: deque[tuple[Callable[[], Any], Future]] = deque()  # ``call_on_worker``
        self._thread: threading.Thread | None = None
        self._closed = False
        self.decoder: PageDecoder | None = None
        self.capacities: list[int] = []  # slots of each decoder built so far (for tests and logs)
        self._expect = 0  # pages announced by ``submit_many(expect=...)`` for the next decoder
        self._side_stream: Any = None  # the decode/capture stream of every decoder of this scheduler
        self._feed_stream: Any = None  # the engine thread's stream for preprocessing the next pages
        self._stream_bytes = 0  # the cuBLAS workspaces of those streams (see ``_new_stream``)
        self.plan: SlotPlan | None = None  # the memory plan of the current decoder

    # --- public API --------------------------------------------------------------------------------
    def submit(self, request: DecodeRequest) -> Future:
        return self.submit_many([request])[0]

    def submit_many(
        self, requests: Sequence[DecodeRequest], expect: int = 0, group: Any = None
    ) -> list[Future]:
        """Queue pages atomically; one future per page.

        ``expect``: pages the caller will submit in all; sizes a decoder where slots are not planned
        from device memory (CPU), so it is not built for the first chunk only. ``group``: the request
        these pages belong to (any hashable; one per document stream); slots are shared fairly
        between groups, pages of one group keep their order.
        """
        futures: list[Future] = []
        with self._cond:
            if self._closed:
                raise EngineError("the decode scheduler is closed")
            self._expect = max(self._expect, int(expect))
            for r in requests:
                need = len(r.input_ids) + 1
                if need > self.context:
                    raise EngineError(
                        f"a prompt of {len(r.input_ids)} tokens does not fit the {self.context}-token context"
                    )
                f: Future = Future()
                self._queue.append((group, r, f))
                futures.append(f)
            self._ensure_worker()
            self._cond.notify_all()
        return futures

    def call_on_worker(self, fn: Callable[[], Any]) -> Future:
        """Run ``fn`` on the decoding thread (its stream, inference mode) before the next cycle; the
        future holds its result or error.

        Why: some first-call costs belong to the thread and stream that will meet them (the vision
        pass's per-shape cuBLAS set-up, Triton's first launches); a warm-up run anywhere else leaves
        them to the first document (``engine.warm``)."""
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise EngineError("the decode scheduler is closed")
            self._calls.append((fn, future))
            self._ensure_worker()
            self._cond.notify_all()
        return future

    def backlog(self, group: Any = None, *, every: bool = False) -> int:
        """Pages of ``group`` (``every``: of all groups) submitted but not yet in a slot: feeders keep
        this small, since each holds its preprocessed pixels (tens of MB on the GPU) until its vision
        pass. Cancelled pages do not count."""
        with self._cond:
            queued = [(g, f) for g, _, f in self._queue]
            queued += [(g, f) for g, fs in self._backlog.items() for f in fs]
        return sum(1 for g, f in queued if (every or g == group) and not f.cancelled())

    def groups(self) -> int:
        """Requests with pages waiting or decoding: feeders split the shared backlog among them."""
        with self._cond:
            items = [(g, f) for g, _, f in self._queue]
            for snapshot in (self._backlog, self._held):
                items += [(g, f) for g, fs in snapshot.items() for f in fs]
        return len({g for g, f in items if not f.cancelled()})

    def slots(self) -> int:
        """Pages the decoder runs at once (its capacity once built; ``max_slots`` before)."""
        dec = self.decoder
        return dec.capacity if dec is not None else self.max_slots

    def reachable_capacities(self) -> list[int]:
        """Slot counts a decoder of this scheduler can be built with (the kernel warm-up compiles the
        decode step for each, at load). On a GPU: the memory plan's slots for each slot length that fits
        (planned from the memory free now: at load, what the first request will find); elsewhere, where
        the slots follow the pages submitted: every batch bucket up to ``max_slots``."""
        if self.model.lm_head.weight.device.type != "cuda":
            return sorted({b for b in BATCH_BUCKETS if b < self.max_slots} | {self.max_slots})
        caps = set()
        for length in sorted({min(n, self.context) for n in SLOT_LENGTHS} | {self.context}):
            try:
                plan = plan_slots(
                    self.model, length, self.max_slots, self.max_slots,
                    prefill_batch=self.options.prefill_batch, vision_batch=self.vision_batch,
                    budget_bytes=self.budget_bytes,
                )  # fmt: skip
            except GpuOutOfMemory:
                continue
            caps.add(plan.slots)
        return sorted(caps)

    def encode_batch(self) -> int:
        """Pages the caller should vision-encode at once: what the memory plan reserved room for;
        on a GPU one page until a decoder (and so a plan) exists, as a small budget may allow no more."""
        plan = self.plan
        if plan is not None and self.decoder is not None:
            return plan.vision_batch
        return 1 if self.model.lm_head.weight.device.type == "cuda" else self.vision_batch

    def resident_bytes(self) -> int:
        """Bytes the kept decoder holds between requests (0 when none is built)."""
        dec = self.decoder
        return (dec.held_bytes() if dec is not None else 0) + self._stream_bytes

    def describe(self) -> dict[str, Any]:
        """What the GPU panel shows about the decoder."""
        dec = self.decoder
        info: dict[str, Any] = {
            "built": dec is not None,
            "max_slots": self.max_slots,
            "budget_gib": None if self.budget_bytes is None else round(self.budget_bytes / 1024**3, 2),
            "builds": len(self.capacities),
        }
        if dec is not None:
            info.update(dec.describe())
            if self.plan is not None:
                info["vision_batch"] = self.plan.vision_batch
        return info

    def close(self) -> None:
        """Stop the worker (pending pages fail), drop the decoder and what CUDA kept for it."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()
        self._release()
        self._side_stream = self._feed_stream = None
        self._stream_bytes = 0
        release_cuda_workspaces()

    # --- worker ------------------------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name="ocr-decode", daemon=True)
            self._thread.start()

    def _max_len_for(self, reqs: Sequence[DecodeRequest]) -> int:
        longest = max(len(r.input_ids) + max(1, r.max_new_tokens) for r in reqs)
        rounded = -(-longest // self.len_round) * self.len_round
        return min(rounded, self.context)

    def _work(self) -> None:
        import torch

        device = self.model.lm_head.weight.device
        stream = contextlib.nullcontext()
        if device.type == "cuda":  # graphs, streams and Triton launches use the thread's current GPU
            torch.cuda.set_device(device)
            # Decoding runs on the scheduler's own stream, not the default one the engine's thread uses
            # for preprocessing and the vision pass of the next pages: on one stream those waited behind
            # every queued decode chunk (a 4-page vision pass took 0.7 s instead of 0.05 s, so a 64-page
            # document never had more than 4 pages decoding). The same stream captures the graphs.
            stream = torch.cuda.stream(self._stream())
        with stream:
            self._loop(torch)

    def _stream(self) -> Any:
        """The one non-default stream this scheduler decodes and captures on (lowest priority)."""
        if self._side_stream is None:
            self._side_stream = self._new_stream(0)
        return self._side_stream

    def feed_stream(self) -> Any:
        """The stream the engine's thread preprocesses the next pages on (resize, tiles, normalise on
        the GPU), at a higher priority than decoding, so those few kernels are not queued behind decode
        steps (None off CUDA). The vision pass itself runs on the decoding thread (``encoder``)."""
        if self.model.lm_head.weight.device.type != "cuda":
            return None
        with self._cond:
            if self._feed_stream is None:
                self._feed_stream = self._new_stream(-1)
            return self._feed_stream

    def _new_stream(self, priority: int) -> Any:
        """A new stream with its cuBLAS workspaces made now.

        cuBLAS keeps a workspace per stream (allocated memory, never returned by ``empty_cache``): it is
        made here and counted in ``resident_bytes`` with the decoder, so the memory log does not report
        it as a leak of the request that happened to make it."""
        import torch

        device = self.model.lm_head.weight.device
        stream = torch.cuda.Stream(device, priority=priority)
        with capture_lock(device):  # no other thread allocates meanwhile: the difference is ours
            before = torch.cuda.memory_allocated(device)
            with torch.cuda.stream(stream):
                x = torch.ones((16, 16), dtype=self.model.lm_head.weight.dtype, device=device)
                torch.nn.functional.linear(torch.mm(x, x), x, x[0])  # cuBLAS and cuBLASLt
            stream.synchronize()
            del x
            self._stream_bytes += max(0, torch.cuda.memory_allocated(device) - before)
        return stream

    def _loop(self, torch: Any) -> None:
        pending = FairQueue()
        owners: dict[int, _Owner] = {}
        while True:
            with self._cond:
                while not (self._queue or self._calls or pending or owners or self._closed):
                    self._cond.wait()  # idle: the decoder stays (see module doc)
                for group, r, f in self._queue:
                    pending.push(group, r, f)
                self._queue.clear()
                calls = list(self._calls)
                self._calls.clear()
                self._backlog = pending.waiting()  # moved, not admitted: feeders still count them
                if self._closed:
                    closed = EngineError("the decode scheduler was closed")
                    for _, f in calls:
                        _settle(f, error=closed)
                    self._fail_all(pending, owners, closed)
                    self._release()
                    return
            for fn, f in calls:
                try:
                    with torch.inference_mode():
                        _settle(f, result=fn())
                except Exception as exc:
                    _settle(f, error=exc)
            try:
                with torch.inference_mode():
                    self._cycle(pending, owners)
            except Exception as exc:  # the whole decoder state is suspect: fail its pages, rebuild
                logger.exception("decode failed")
                err = _page_error(exc)
                self._fail_all(FairQueue(), owners, err)
                self._release()
            self._publish(pending, owners)

    def _build(self, pending: FairQueue) -> None:
        reqs = list(pending.requests())
        need = self._max_len_for(reqs)
        max_len = slot_length(need, self.context)
        on_cuda = self.model.lm_head.weight.device.type == "cuda"
        with self._cond:
            wanted, self._expect = max(len(reqs), self._expect), 0
        if on_cuda:  # planned from memory, once: later requests never grow it
            wanted = self.max_slots
        plan = dict(
            prefill_batch=self.options.prefill_batch, vision_batch=self.vision_batch,
            budget_bytes=self.budget_bytes,
        )  # fmt: skip
        try:
            slot_plan = plan_slots(self.model, max_len, wanted, self.max_slots, **plan)
        except GpuOutOfMemory:
            if max_len == need:
                raise
            max_len = need  # the coarse length does not fit: exactly what the pages need
            slot_plan = plan_slots(self.model, max_len, wanted, self.max_slots, **plan)
        self.plan = slot_plan
        cap = slot_plan.slots
        options = self.options
        if slot_plan.prefill_batch != options.prefill_batch:
            options = replace(options, prefill_batch=slot_plan.prefill_batch)
        self.decoder = PageDecoder(
            self.model, capacity=cap, max_len=max_len, options=options,
            side_stream=self._stream() if on_cuda else None,
        )  # fmt: skip
        self.capacities.append(cap)
        logger.info("decoder built: %d slots × %d tokens (graphs %s)", cap, max_len, self.decoder.use_graphs)

    def _cycle(self, pending: FairQueue, owners: dict[int, _Owner]) -> None:
        dec = self.decoder
        if dec is not None and not owners and pending and self._outgrown(dec, pending):
            self._release()  # idle and too small for what waits: rebuild below
            dec = None
        if dec is None and pending:
            self._build(pending)
            dec = self.decoder
        if dec is None:
            return
        # a small request waiting behind a long job that holds every slot: park some of the job's pages
        # (lowest slots first) so it starts now; they resume once no small request is left
        held = self._held_by_group(owners)
        small = pending.small_groups(held) if self.small_request_batch else set()
        self._make_room(dec, pending, owners, small)
        # admit what fits into free slots, fairly between requests (``FairQueue``); pages needing a
        # longer context wait for the decoder to drain (parking moved no page out of ``held``)
        taken = pending.take(
            len(dec.free_slots),
            lambda r: len(r.input_ids) + 1 <= dec.max_len,
            held,
            batch_cap=self.small_request_batch,
            busy=len(owners),
        )
        with self._cond:
            self._backlog = pending.waiting()
        if taken:
            self._admit(dec, [(g, r, f) for g, r, f in taken], owners)
        gone = []
        for s in dec.busy_slots:  # the caller went away (a cancelled conversion): free the slot now
            owner = owners.get(id(dec.slot_key[s]))
            if owner is None or owner.future.cancelled():
                owners.pop(id(dec.slot_key[s]), None)
                gone.append(s)
        dec.drop(gone)
        left = {id(k) for k in dec.parked if (o := owners.get(id(k))) is None or o.future.cancelled()}
        if left:
            for key in left:
                owners.pop(key, None)
            dec.drop_parked(left)
        for _, res in dec.collect():
            owner = owners.pop(id(res.key))
            res.key = owner.key
            _settle(owner.future, result=res)
        self._publish(pending, owners)
        if not pending and not dec.parked:
            dec.compact()
        dec.run_chunk(**self._priority(dec, owners, small))

    def _make_room(self, dec: PageDecoder, pending: FairQueue, owners: dict[int, _Owner], small: set) -> None:
        """Park pages of larger requests for small requests that wait with no free slot; put parked
        pages back into free slots once no small request waits or decodes."""
        busy = dec.busy_slots
        small_busy = sum(1 for s in busy if _group(owners, dec, s) in small)
        waiting = pending.waiting_in(small)
        if waiting and not dec.free_slots and len(dec.parked) < PARK_PAGES:
            large = [s for s in busy if _group(owners, dec, s) not in small]
            for s in large[: min(waiting, PARK_PAGES - len(dec.parked))]:
                dec.park(s)
        elif dec.parked and not waiting and not small_busy:
            for s in dec.free_slots[: len(dec.parked)]:
                dec.unpark(s)

    def _priority(self, dec: PageDecoder, owners: dict[int, _Owner], small: set) -> dict[str, int]:
        """``run_chunk``'s priority rows: the small requests' pages, when they sit in low slots beside
        larger requests' pages (a smaller bucket than the whole batch's)."""
        if not small or not self.small_request_batch:
            return {}
        busy = dec.busy_slots
        rows = [s for s in busy if _group(owners, dec, s) in small]
        if not rows or len(rows) == len(busy):
            return {}
        return {"priority": max(rows) + 1, "share": PRIORITY_STEPS}

    @staticmethod
    def _held_by_group(owners: dict[int, _Owner]) -> dict[Any, int]:
        held: dict[Any, int] = {}
        for o in owners.values():
            held[o.group] = held.get(o.group, 0) + 1
        return held

    def _publish(self, pending: FairQueue, owners: dict[int, _Owner]) -> None:
        """What feeders read (``backlog``, ``groups``): pages waiting and pages in slots per group."""
        held: dict[Any, list[Future]] = {}
        for o in owners.values():
            held.setdefault(o.group, []).append(o.future)
        with self._cond:
            self._backlog, self._held = pending.waiting(), held

    def _outgrown(self, dec: PageDecoder, pending: FairQueue) -> bool:
        """An idle decoder is rebuilt when a waiting page needs longer slots, or (CPU, where slots are
        not planned from memory) when more pages wait than it has slots."""
        if any(len(r.input_ids) + 1 > dec.max_len for r in pending.requests()):
            return True
        on_cuda = dec.device.type == "cuda"
        with self._cond:
            wanted = max(len(pending), self._expect)
        return not on_cuda and dec.capacity < min(wanted, self.max_slots)

    def _admit(
        self, dec: PageDecoder, batch: list[tuple[Any, DecodeRequest, Future]], owners: dict[int, _Owner]
    ):
        """Prefill ``batch`` (``(group, request, future)``) into free slots; pages that still need their
        vision pass get it first, in groups of the planned vision batch (what the memory plan reserved
        room for)."""
        size = max(1, self.plan.vision_batch if self.plan is not None else self.vision_batch)
        for start in range(0, len(batch), size):
            self._admit_group(dec, batch[start : start + size], owners)

    def _encode(
        self, batch: list[tuple[Any, DecodeRequest, Future]]
    ) -> list[tuple[Any, DecodeRequest, Future]]:
        todo = [i for i, (_, r, _) in enumerate(batch) if r.payload is not None and not r.model_inputs]
        if not todo:
            return batch
        if self.encoder is None:
            raise EngineError("a page without model inputs was submitted to a scheduler without an encoder")
        inputs = self.encoder([batch[i][1].payload for i in todo])
        out = list(batch)
        for i, mi in zip(todo, inputs, strict=True):
            g, r, f = batch[i]
            out[i] = (g, replace(r, model_inputs=mi, payload=None), f)
        return out

    def _admit_group(
        self, dec: PageDecoder, batch: list[tuple[Any, DecodeRequest, Future]], owners: dict[int, _Owner]
    ) -> None:
        try:
            batch = self._encode(batch)
        except Exception as exc:  # a page whose vision pass fails fails alone (with its group)
            if type(exc).__name__ == "OutOfMemoryError":
                logger.warning("vision pass of %d page(s) ran out of memory", len(batch))
            for _, _, f in batch:
                _settle(f, error=_page_error(exc))
            return
        reqs = []
        tokens = []
        for g, r, f in batch:
            token = object()  # unique key per page inside the decoder (kept alive in ``tokens``/``owners``)
            tokens.append(token)
            owners[id(token)] = _Owner(f, r.key, g)
            reqs.append(DecodeRequest(r.input_ids, r.model_inputs, r.max_new_tokens, key=token))
        try:
            dec.admit(reqs)
        except Exception as exc:  # a bad page (e.g. features that do not match) fails alone
            for (_, _, f), q in zip(batch, reqs, strict=True):
                owners.pop(id(q.key), None)
                _settle(f, error=_page_error(exc))
            for s in dec.busy_slots:
                if id(dec.slot_key[s]) not in owners:
                    dec.slot_key[s] = None
            logger.warning("prefill of %d page(s) failed: %s", len(batch), exc)

    def _fail_all(self, pending: FairQueue, owners: dict[int, _Owner], err: Exception) -> None:
        for _, f in pending.drain():
            _settle(f, error=err)
        for o in owners.values():
            _settle(o.future, error=err)
        owners.clear()

    def _release(self) -> None:
        dec, self.decoder = self.decoder, None
        if dec is not None:
            dec.release()
            del dec
            import gc

            gc.collect()
            try:
                import torch

                if torch.cuda.is_available() and torch.cuda.is_initialized():
                    torch.cuda.empty_cache()
            except Exception:  # pragma: no cover - best effort
                pass
