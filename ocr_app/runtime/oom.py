"""GPU out-of-memory recovery: free memory and retry with a smaller footprint, page by page.

Why: on a GPU shared with other work, free memory changes under us. One OOM must cost a retry, not the
process or the document. The ladder, cheapest loss of quality last:

1. a batch of several pages → split in halves (down to single pages);
2. a single page in a tiled mode → fewer tiles (``default:4``, then ``default:2``);
3. → a lower mode (``global``: one 1024 px view).

Each page that needed a step gets a note saying what was done. A page that fails at the last step
raises ``GpuOutOfMemory`` for that page only: ``predict_stream`` first yields every page that succeeded.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from ocr_app.engines.base import Engine, WrappedEngine
from ocr_app.exceptions import GpuOutOfMemory
from ocr_app.runtime.memory import free_transient_memory
from ocr_app.schema import EngineOutput, PageRequest

logger = logging.getLogger(__name__)

TILE_STEPS = (4, 2)  # tile limits tried before dropping to the global view


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


def smaller_modes(mode: str, image: Any = None) -> list[str]:
    """Modes to try after an OOM at ``mode``, smallest footprint last."""
    from ocr_app.engines.deepseek.modes import MAX_TILES, resolve_mode, tile_limit

    name = (mode or "default").strip().lower()
    if name == "auto" and image is not None:
        name = resolve_mode("auto", image).name
    tiles = MAX_TILES if name == "auto" else tile_limit(name)
    if tiles is None:
        return []  # global / small: nothing smaller worth its quality loss
    return [f"default:{n}" for n in TILE_STEPS if n < tiles] + ["global"]


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

    def predict_stream(self, requests: Sequence[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        yield from self._guarded(requests, stream=True)

    def _guarded(
        self, requests: Sequence[PageRequest], *, stream: bool
    ) -> Iterator[tuple[int, EngineOutput]]:
        failed: list[tuple[int, str]] = []
        yield from self._run(list(requests), list(range(len(requests))), [], failed, stream)
        if failed:
            raise GpuOutOfMemory("; ".join(msg for _, msg in failed))

    def _inner(self, reqs: list[PageRequest], stream: bool) -> Iterator[tuple[int, EngineOutput]]:
        """The wrapped engine's own batch or stream call (an engine may batch only in one of them)."""
        if stream:
            yield from self._engine.predict_stream(reqs)
        else:
            yield from enumerate(self._engine.predict_batch(reqs))

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
        if len(rest) > 1:
            half = len(rest) // 2
            note = f"GPU out of memory on a batch of {len(reqs)} pages; retried in smaller batches"
            logger.warning("%s", note)
            for part in (rest[:half], rest[half:]):
                yield from self._run(
                    [reqs[j] for j in part], [idx[j] for j in part], [*notes, note], failed, stream
                )
            return
        j = rest[0]
        yield from self._single(reqs[j], idx[j], notes, failed)

    def _single(
        self, req: PageRequest, i: int, notes: list[str], failed: list[tuple[int, str]]
    ) -> Iterator[tuple[int, EngineOutput]]:
        page = f"page {req.page.index + 1} of {req.page.source}"
        tried = [req.mode]
        for mode in smaller_modes(req.mode, req.page.image):
            logger.warning("%s: GPU out of memory at mode %s; retrying at mode %s", page, tried[-1], mode)
            try:
                out = self._engine.predict_batch([replace(req, mode=mode)])[0]
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
