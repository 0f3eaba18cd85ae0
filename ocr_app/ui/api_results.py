"""API results do not pile up: a call's folder goes once its client fetched every file, or after a TTL.

Why: each ``/convert`` call writes Markdown, JSON, a ZIP and page images (≈ 1.9 MB for 4 pages). A
browser tab's folder is replaced by its next job and removed when the tab closes, but an API client has
no tab: left to gradio's hourly sweep, 200 calls kept 95 MB. Here the privacy middleware reports each
file it served in full (``delivered``); when every file a call returned has been fetched, its folder is
deleted at once. What is never fetched, and the call's uploaded inputs, go ``ttl_s`` after the call
(inputs only once no running job reads them: gradio stores equal uploads once, so two calls may share
one). A daemon thread sweeps; ``sweep`` can also be called directly.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)


def _key(path: str | Path) -> Path:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(path)


@dataclass
class _Call:
    folder: Path
    pending: set[Path]  # returned files not fetched yet
    inputs: list[Path]
    done_at: float
    inputs_left: bool = True
    served: set[Path] = field(default_factory=set)


class ApiResults:
    """The folders and inputs of finished API calls, until fetched or expired. Thread-safe."""

    def __init__(
        self,
        ttl_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_removed: Callable[[Path], None] | None = None,
    ) -> None:
        self.ttl_s = float(ttl_s)
        self.clock = clock
        self.on_removed = on_removed  # e.g. the owner registry forgetting the path
        self._calls: list[_Call] = []
        self._in_use: Counter[Path] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- inputs of running jobs -------------------------------------------------------------------
    @contextmanager
    def reading(self, inputs: Iterable[str | Path]) -> Iterator[None]:
        """Inputs a running job reads: never deleted meanwhile (an older call may share them)."""
        keys = [_key(p) for p in inputs]
        with self._lock:
            self._in_use.update(keys)
        try:
            yield
        finally:
            with self._lock:
                self._in_use.subtract(keys)
                self._in_use += Counter()  # drop zero counts

    # --- results ------------------------------------------------------------------------------------
    def add(self, folder: str | Path, files: Iterable[str | Path], inputs: Iterable[str | Path] = ()) -> None:
        """A call finished: ``files`` (under ``folder``) are what it returned."""
        call = _Call(_key(folder), {_key(f) for f in files}, [_key(p) for p in inputs], self.clock())
        with self._lock:
            self._calls.append(call)
        if not call.pending:
            self._remove_folder(call)
        self._ensure_sweeper()

    def delivered(self, path: str | Path) -> None:
        """The middleware served ``path`` in full; a call whose files were all fetched is removed."""
        key = _key(path)
        done = []
        with self._lock:
            for call in self._calls:
                if key in call.pending:
                    call.pending.discard(key)
                    if not call.pending:
                        done.append(call)
        for call in done:
            self._remove_folder(call)

    def sweep(self) -> list[Path]:
        """Remove what expired: unfetched folders and unused inputs of calls older than ``ttl_s``."""
        now = self.clock()
        removed: list[Path] = []
        with self._lock:
            expired = [c for c in self._calls if now - c.done_at >= self.ttl_s]
        for call in expired:
            if call.pending:
                removed.append(call.folder)
                self._remove_folder(call)
            removed += self._remove_inputs(call)
        with self._lock:
            self._calls = [c for c in self._calls if c.pending or c.inputs_left]
        return removed

    def tracked(self) -> int:
        with self._lock:
            return len(self._calls)

    def close(self) -> None:
        self._stop.set()

    # --- internals ----------------------------------------------------------------------------------
    def _remove_folder(self, call: _Call) -> None:
        with self._lock:
            call.pending.clear()
        shutil.rmtree(call.folder, ignore_errors=True)
        if self.on_removed is not None:
            self.on_removed(call.folder)
        logger.debug("API results removed: %s", call.folder)

    def _remove_inputs(self, call: _Call) -> list[Path]:
        removed = []
        with self._lock:
            busy = {p for p in call.inputs if self._in_use.get(p)}
            if busy:
                return removed  # a running job reads one of them: the next sweep tries again
            call.inputs_left = False
        for p in call.inputs:
            try:
                p.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                logger.warning("could not remove the API upload %s: %s", p, exc)
                continue
            removed.append(p)
            if self.on_removed is not None:
                self.on_removed(p)
            with contextlib.suppress(OSError):
                p.parent.rmdir()  # gradio's per-upload folder, when it is empty now
        return removed

    def _ensure_sweeper(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="ocr-app-api-sweep", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        interval = max(0.5, min(30.0, self.ttl_s / 4))
        while not self._stop.wait(interval):
            try:
                self.sweep()
            except Exception:  # the sweeper must outlive a bad path
                logger.exception("API results sweep failed")
            with self._lock:
                if not self._calls:
                    self._thread = None
                    return


__all__ = ["ApiResults"]
