"""Continuous batching of pages over one ``PageDecoder``, fed from any thread.

Why a worker thread: pages of one document and of concurrent jobs (two UI users, a CLI batch) should
decode together, and a long page must not hold short ones back. Callers ``submit`` pages (thread-safe)
and get a ``Future`` per page; one worker owns the GPU state, prefills new pages into free slots between
decode chunks, frees a slot the moment its page finishes and resolves that page's future right away,
so results stream out in finishing order (``stream`` yields ``(index, result)``).

The batch capacity is sized from free VRAM: KV bytes per token (``runtime.estimate``) times the longest
sequence of the waiting pages, after reserving room for one prefill batch. The decoder is built when
work arrives and released when the queue runs dry, so an idle app holds no KV memory.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from ocr_app.engines.deepseek.decode import (
    BATCH_BUCKETS,
    DecodeRequest,
    DecodeResult,
    DecoderOptions,
    PageDecoder,
)
from ocr_app.exceptions import EngineError, GpuOutOfMemory

logger = logging.getLogger(__name__)

PREFILL_VISION_TOKENS = 1121  # the largest default-mode page: reserve prefill room for it


def plan_capacity(model: Any, max_len: int, wanted: int, max_slots: int, prefill_batch: int = 1) -> int:
    """Slots to allocate: ``wanted`` rounded up to a batch bucket, bounded by ``max_slots`` and free VRAM."""

    from ocr_app.engines.deepseek.sam_attention import attn_slice_bytes
    from ocr_app.runtime.budget import free_bytes
    from ocr_app.runtime.estimate import estimate_page_bytes, kv_bytes_per_token

    want = min(max(1, wanted), max_slots)
    want = next((b for b in BATCH_BUCKETS if b >= want), want)
    want = min(want, max_slots)
    device = model.lm_head.weight.device
    if device.type != "cuda":
        return want
    dtype = model.lm_head.weight.dtype
    cfg = model.config
    per_slot = kv_bytes_per_token(cfg, dtype) * max_len + 8 * max_len  # K/V + token row
    reserve = estimate_page_bytes(
        cfg,
        PREFILL_VISION_TOKENS,
        16,
        0,
        dtype,
        batch=prefill_batch,
        attn_slice_bytes=attn_slice_bytes(model),
    ).total_bytes
    reserve += 512 * 1024**2  # graphs' activations, logits, allocator slack
    free = free_bytes(device)  # within this process's memory cap (runtime/budget.py)
    fits = int((free - reserve) // per_slot)
    if fits < 1:
        raise GpuOutOfMemory(
            f"Not enough free GPU memory to decode one page of {max_len} tokens "
            f"({free / 1024**3:.2f} GiB free, {(reserve + per_slot) / 1024**3:.2f} GiB needed)."
        )
    cap = min(want, fits)
    if cap < want:
        logger.info("decode capacity %d (asked %d): bounded by %.2f GiB free VRAM", cap, want, free / 1024**3)
    return cap


def _page_error(exc: Exception) -> Exception:
    """What a page's future raises: our errors and CUDA OOM as they are (OOM recovery retries on
    ``torch.OutOfMemoryError``), anything else wrapped in ``EngineError``."""
    if isinstance(exc, EngineError) or type(exc).__name__ == "OutOfMemoryError":
        return exc
    return EngineError(f"decoding failed: {exc}")


class DecodeScheduler:
    """Thread-safe page queue in front of one decoder (continuous batching)."""

    def __init__(
        self,
        model: Any,
        options: DecoderOptions,
        *,
        max_slots: int = 32,
        context: int | None = None,
        len_round: int = 256,
    ) -> None:
        self.model = model
        self.options = options
        self.max_slots = max(1, int(max_slots))
        cfg = getattr(model.config, "text_config", model.config)
        self.context = int(context or cfg.max_position_embeddings)
        self.len_round = len_round
        self._cond = threading.Condition()
        self._queue: deque[tuple[DecodeRequest, Future]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.decoder: PageDecoder | None = None
        self.capacities: list[int] = []  # slots of each decoder built so far (for tests and logs)
        self._expect = 0  # pages announced by ``submit_many(expect=...)`` for the next decoder

    # --- public API --------------------------------------------------------------------------------
    def submit(self, request: DecodeRequest) -> Future:
        return self.submit_many([request])[0]

    def submit_many(self, requests: Sequence[DecodeRequest], expect: int = 0) -> list[Future]:
        """Queue pages atomically (so the decoder is sized for all of them); one future per page.

        ``expect``: pages the caller will submit in all (a document fed chunk by chunk while its next
        pages go through the vision encoder), so the decoder is sized for them, not the first chunk.
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
                self._queue.append((r, f))
                futures.append(f)
            self._ensure_worker()
            self._cond.notify_all()
        return futures

    def stream(self, requests: Sequence[DecodeRequest]) -> Iterator[tuple[int, DecodeResult]]:
        """Decode ``requests``; yield ``(index, result)`` in the order pages finish."""
        futures = self.submit_many(requests)
        index = {id(f): i for i, f in enumerate(futures)}
        left = set(futures)
        while left:
            done, left = wait(left, return_when=FIRST_COMPLETED)
            for f in sorted(done, key=lambda f: index[id(f)]):
                yield index[id(f)], f.result()

    def run(self, requests: Sequence[DecodeRequest]) -> list[DecodeResult]:
        out: list[DecodeResult | None] = [None] * len(requests)
        for i, r in self.stream(requests):
            out[i] = r
        return out  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the worker (pending pages fail) and drop the decoder."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join()

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

        pending: deque[tuple[DecodeRequest, Future]] = deque()
        owners: dict[int, Future] = {}
        while True:
            with self._cond:
                while not self._queue and not pending and not owners and not self._closed:
                    self._release()
                    self._cond.wait()
                if self._closed:
                    self._fail_all(pending, owners, EngineError("the decode scheduler was closed"))
                    self._release()
                    return
                pending.extend(self._queue)
                self._queue.clear()
            try:
                with torch.inference_mode():
                    self._cycle(pending, owners)
            except Exception as exc:  # the whole decoder state is suspect: fail its pages, rebuild
                logger.exception("decode failed")
                err = _page_error(exc)
                self._fail_all(deque(), owners, err)
                self._release()

    def _cycle(self, pending: deque, owners: dict[int, Future]) -> None:
        if self.decoder is None and pending:
            reqs = [r for r, _ in pending]
            max_len = self._max_len_for(reqs)
            with self._cond:
                wanted, self._expect = max(len(reqs), self._expect), 0
            cap = plan_capacity(self.model, max_len, wanted, self.max_slots, self.options.prefill_batch)
            self.decoder = PageDecoder(self.model, capacity=cap, max_len=max_len, options=self.options)
            self.capacities.append(cap)
            logger.info(
                "decoder built: %d slots × %d tokens (graphs %s)", cap, max_len, self.decoder.use_graphs
            )
        dec = self.decoder
        if dec is None:
            return
        # admit what fits into free slots; pages needing a longer context wait for the decoder to drain
        batch: list[tuple[DecodeRequest, Future]] = []
        keep: deque = deque()
        free = len(dec.free_slots)
        while pending:
            r, f = pending.popleft()
            if f.cancelled():
                continue
            if len(batch) < free and len(r.input_ids) + 1 <= dec.max_len:
                batch.append((r, f))
            else:
                keep.append((r, f))
        pending.extend(keep)
        if batch:
            self._admit(dec, batch, owners)
        for _, res in dec.collect():
            f = owners.pop(id(res.key))
            res.key = f.request_key  # type: ignore[attr-defined]
            f.set_result(res)
        if not owners and pending:
            self._release()  # a page needs a longer context: rebuild for it
            return
        if not pending:
            dec.compact()
        dec.run_chunk()

    def _admit(self, dec: PageDecoder, batch: list[tuple[DecodeRequest, Future]], owners: dict[int, Future]):
        reqs = []
        for r, f in batch:
            token = object()  # unique key per page inside the decoder
            f.request_key = r.key  # type: ignore[attr-defined]
            owners[id(token)] = f
            f._decode_token = token  # type: ignore[attr-defined]  # keeps id(token) alive and unique
            reqs.append(DecodeRequest(r.input_ids, r.model_inputs, r.max_new_tokens, key=token))
        try:
            dec.admit(reqs)
        except Exception as exc:  # a bad page (e.g. features that do not match) fails alone
            for (_, f), q in zip(batch, reqs, strict=True):
                owners.pop(id(q.key), None)
                if not f.done():
                    f.set_exception(_page_error(exc))
            for s in dec.busy_slots:
                if id(dec.slot_key[s]) not in owners:
                    dec.slot_key[s] = None
            logger.warning("prefill of %d page(s) failed: %s", len(batch), exc)

    def _fail_all(self, pending: deque, owners: dict[int, Future], err: Exception) -> None:
        for _, f in pending:
            if not f.done():
                f.set_exception(err)
        pending.clear()
        for f in owners.values():
            if not f.done():
                f.set_exception(err)
        owners.clear()

    def _release(self) -> None:
        if self.decoder is not None:
            self.decoder.release()
            self.decoder = None
            import gc

            gc.collect()
            try:
                import torch

                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            except Exception:  # pragma: no cover - best effort
                pass
