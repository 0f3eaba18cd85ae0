"""GPU out-of-memory recovery: free memory and retry with a smaller footprint, page by page.

Why: on a GPU shared with other work, free memory changes under us. One OOM must cost a retry, not the
process or the document. The ladder, cheapest loss of quality last:

1. a batch of several pages → split in halves, down to single pages, each retried ALONE at its own
   mode (a page that failed while sharing the GPU is never read at a lower resolution for that);
2. a single page that fails alone → the smaller footprints its engine offers
   (``Engine.smaller_footprints``; DeepSeek-OCR-2: fewer tiles, ``default:4`` then ``default:2``, then
   ``global``, one 1024 px view). The runtime knows no engine's modes.

A stream (``predict_stream``) may be a lazy iterable: after an OOM, the pages already pulled and not
finished take the ladder above, then the rest of the stream continues in a fresh call.

Each page that needed a step gets a note saying what was done. A page that fails at the last step
raises ``GpuOutOfMemory`` for that page only: ``predict_stream`` first yields every page that succeeded.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence

from ocr_app.engine_api import Engine, WrappedEngine
from ocr_app.exceptions import GpuOutOfMemory
from ocr_app.runtime.memory import free_transient_memory
from ocr_app.schema import EngineOutput, PageRequest

logger = logging.getLogger(__name__)


def is_oom(exc: BaseException) -> bool:
    """True for ``torch.OutOfMemoryError`` (also when an engine wrapped it as the cause)."""
    torch = sys.modules.get("torch")
    oom_type = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if oom_type is not None and isinstance(cur, oom_type):
            return True
        if isinstance(cur, RuntimeError) and "out of memory" in str(cur).lower() and "CUDA" in str(cur):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def free_gpu_memory() -> None:
    """gc + ``torch.cuda.empty_cache()`` when CUDA is up (never initialises CUDA)."""
    torch = sys.modules.get("torch")
    cuda = None
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        cuda = torch.cuda
    free_transient_memory(cuda)


def _pull(source: Iterator[tuple[int, PageRequest]], pulled: list[tuple[int, PageRequest]]):
    """The requests of ``source``, each also noted in ``pulled`` as it is taken."""
    for item in source:
        pulled.append(item)
        yield item[1]


class OomRecovery(WrappedEngine):
    """Wrap an engine so that ``torch.OutOfMemoryError`` becomes smaller retries (see module doc)."""

    def __init__(self, engine: Engine, *, free: Callable[[], None] = free_gpu_memory) -> None:
        super().__init__(engine)
        self._free = free

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        """All outputs in order; raises ``GpuOutOfMemory`` if a page failed every retry."""
        done: dict[int, EngineOutput] = {}
        for i, out in self._guarded(requests, stream=False):
            done[i] = out
        return [done[i] for i in range(len(requests))]

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        yield from self._guarded(requests, stream=True)

    def _guarded(
        self, requests: Iterable[PageRequest], *, stream: bool
    ) -> Iterator[tuple[int, EngineOutput]]:
        failed: list[tuple[int, str]] = []
        if stream:
            yield from self._run_stream(iter(enumerate(requests)), failed)
        else:
            reqs = list(requests)
            yield from self._run(reqs, list(range(len(reqs))), [], failed, stream)
        if failed:
            raise GpuOutOfMemory("; ".join(msg for _, msg in failed))

    def _inner(self, reqs: Iterable[PageRequest], stream: bool) -> Iterator[tuple[int, EngineOutput]]:
        """The wrapped engine's own batch or stream call (an engine may batch only in one of them)."""
        if stream:
            yield from self._engine.predict_stream(reqs)
        else:
            yield from enumerate(self._engine.predict_batch(list(reqs)))

    def _run_stream(
        self, source: Iterator[tuple[int, PageRequest]], failed: list[tuple[int, str]]
    ) -> Iterator[tuple[int, EngineOutput]]:
        """Stream from a (lazy) source; after an OOM the unfinished pulled pages take the ladder,
        then the rest of the source goes on in a new stream."""
        while True:
            pulled: list[tuple[int, PageRequest]] = []
            finished: set[int] = set()
            try:
                for j, out in self._inner(_pull(source, pulled), True):
                    finished.add(j)
                    index = pulled[j][0]
                    pulled[j] = (index, None)  # type: ignore[assignment]  # answered: image not kept
                    yield index, out
                return
            except Exception as exc:
                if not is_oom(exc):
                    raise
                del exc
            self._free()
            if not pulled:  # nothing started: retrying the same call would loop
                raise GpuOutOfMemory("GPU out of memory before any page started")
            left = [pulled[j] for j in range(len(pulled)) if j not in finished]
            if left:
                yield from self._after_oom(
                    [r for _, r in left], [i for i, _ in left], [], failed, True, batch=len(pulled)
                )

    def _run(
        self,
        reqs: list[PageRequest],
        idx: list[int],
        notes: list[str],
        failed: list[tuple[int, str]],
        stream: bool,
    ) -> Iterator[tuple[int, EngineOutput]]:
        pending = dict(enumerate(idx))
        try:
            for j, out in self._inner(reqs, stream):
                out.notes.extend(notes)
                pending.pop(j, None)
                yield idx[j], out
            return
        except Exception as exc:
            if not is_oom(exc):
                raise
            del exc  # drop the traceback's frames (and the tensors they hold) before freeing
        self._free()
        rest = sorted(pending)
        yield from self._after_oom(
            [reqs[j] for j in rest], [idx[j] for j in rest], notes, failed, stream, batch=len(reqs)
        )

    def _after_oom(
        self,
        reqs: list[PageRequest],
        idx: list[int],
        notes: list[str],
        failed: list[tuple[int, str]],
        stream: bool,
        *,
        batch: int,
    ) -> Iterator[tuple[int, EngineOutput]]:
        """Unfinished pages of a call of ``batch`` pages that ran out of memory: halves while several
        are left; a last page that shared the GPU is retried alone at its own mode; only a page that
        failed alone takes the resolution ladder."""
        if batch > 1:
            note = f"GPU out of memory on a batch of {batch} pages; retried in smaller batches"
            logger.warning("%s", note)
            if len(reqs) == 1:
                yield from self._run(reqs, idx, [*notes, note], failed, stream)
                return
            half = len(reqs) // 2
            for lo, hi in ((0, half), (half, len(reqs))):
                yield from self._run(reqs[lo:hi], idx[lo:hi], [*notes, note], failed, stream)
            return
        yield from self._single(reqs[0], idx[0], notes, failed)

    def _single(
        self, req: PageRequest, i: int, notes: list[str], failed: list[tuple[int, str]]
    ) -> Iterator[tuple[int, EngineOutput]]:
        page = f"page {req.page.index + 1} of {req.page.source}"
        tried = [req.mode]
        for smaller in self._engine.smaller_footprints(req):
            mode = smaller.mode
            logger.warning("%s: GPU out of memory at mode %s; retrying at mode %s", page, tried[-1], mode)
            try:
                out = self._engine.predict_batch([smaller])[0]
            except Exception as exc:
                if not is_oom(exc):
                    raise
                del exc
                self._free()
                tried.append(mode)
                continue
            out.notes.extend([*notes, f"GPU out of memory at mode {', '.join(tried)}; ran at mode {mode}"])
            yield i, out
            return
        msg = f"{page}: GPU out of memory at every footprint tried (modes {', '.join(tried)})"
        logger.error("%s", msg)
        failed.append((i, msg))
