"""Model manager: lazy load, one load at a time, idle unload that frees memory, reload on demand.

Why a wrapper and not code in the engine: every engine (DeepSeek, remote, light) gets the same
lifecycle, and the converter/UI see a plain ``Engine``. The manager is an object passed in (never a
global); the UI reads ``status()`` for its panel.

Threading: one ``Condition`` guards the state. A request that arrives while another thread loads waits
for that load instead of starting a second one. The idle watcher is a daemon thread that lives only
while the model is loaded; it unloads when no request is in flight and none came for ``idle_unload_s``.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ocr_app.engine_api import Engine
from ocr_app.exceptions import ModelLoadError, OcrError
from ocr_app.runtime.memory import MemoryRecord, is_cuda_device, request_context
from ocr_app.runtime.oom import OomRecovery
from ocr_app.schema import EngineOutput, PageRequest

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

NOT_LOADED = "not loaded"
LOADING = "loading"
READY = "ready"
UNLOADING = "unloading"
IDLE_UNLOADED = "unloaded (idle)"
ERROR = "error"


@dataclass(frozen=True)
class ManagerStatus:
    """What the UI status panel shows."""

    state: str  # not loaded / loading / ready / unloading / unloaded (idle) / error
    engine: str
    load_seconds: float | None  # duration of the last successful load
    loads: int
    unloads: int
    last_used: float | None  # wall-clock time (time.time) of the last finished request
    requests_served: int  # pages served since the manager was created
    in_flight: int
    idle_unload_s: float
    last_error: str | None
    last_memory: dict[str, Any] | None  # the last request's MemoryRecord (GPU only)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ModelManager(Engine):
    """Wrap an ``Engine`` with lazy load, single-flight loading, idle unload and status."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings | None = None,
        *,
        idle_unload_s: float | None = None,
        memory_device: str | None = None,
        memory_tolerance_mb: float | None = None,
        oom_recovery: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        """Explicit keyword values win over ``settings``; without either: 300 s, "auto", 64 MiB, OOM on."""
        idle = idle_unload_s if idle_unload_s is not None else getattr(settings, "idle_unload_s", 300.0)
        if idle < 0:
            raise ValueError("idle_unload_s must be ≥ 0 (0 disables idle unload)")
        self._engine = engine
        self._settings = settings
        oom = oom_recovery if oom_recovery is not None else getattr(settings, "oom_recovery", True)
        # requests go through the OOM ladder; load/unload go to the engine itself
        self._runner: Engine = OomRecovery(engine) if oom else engine
        self.idle_unload_s = float(idle)
        self._memory_device = memory_device or getattr(settings, "device", "auto")
        self._tolerance_mb = (
            memory_tolerance_mb
            if memory_tolerance_mb is not None
            else getattr(settings, "memory_tolerance_mb", 64)
        )
        self._clock = clock
        self._wall = wall_clock
        self._cond = threading.Condition()
        self._state = NOT_LOADED
        self._in_flight = 0
        self._load_attempt = 0
        self._loads = self._unloads = self._served = 0
        self._load_seconds: float | None = None
        self._last_used_mono: float | None = None
        self._last_used_wall: float | None = None
        self._last_error: str | None = None
        self._last_memory: MemoryRecord | None = None
        self._watcher: threading.Thread | None = None

    # --- Engine interface ------------------------------------------------------------------------
    @property
    def name(self) -> str:  # type: ignore[override]
        return self._engine.name

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def is_loaded(self) -> bool:
        with self._cond:
            return self._state == READY

    def load(self) -> None:
        """Make the model ready (waits for a load in progress instead of starting another)."""
        self._acquire()
        self._release(0)

    def preload(self) -> None:
        """Load now, then the engine's own warm-up (``warm``, if it has one) as a request, for servers
        that should answer the first request at full speed: its memory is checked like a request's and
        it counts no pages served."""
        logger.info("preloading %s", self.name)
        self._acquire()
        try:
            warm = getattr(self._engine, "warm", None)
            if callable(warm):
                with self._request_memory(f"{self.name} warm-up"):
                    warm()
        finally:
            self._release(0)

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        self._acquire()
        served = 0
        try:
            with self._request_memory(f"{self.name} batch of {len(requests)}") as rec:
                outputs = self._runner.predict_batch(requests)
            self._last_memory = rec
            served = len(outputs)
            return outputs
        finally:
            self._release(served)

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        self._acquire()
        served = 0
        try:
            n = len(requests) if isinstance(requests, Sized) else "pages"
            with self._request_memory(f"{self.name} stream of {n}") as rec:
                for item in self._runner.predict_stream(requests):
                    served += 1
                    yield item
            self._last_memory = rec
        finally:
            self._release(served)

    def unload(self) -> None:
        """Unload now (waits for requests in flight) and stop the idle watcher. The next request loads
        again. Joining the watcher matters at process exit: a daemon thread still alive while the
        interpreter tears torch down can abort the process."""
        self._unload(NOT_LOADED, wait=True)
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            with self._cond:
                self._cond.notify_all()
            watcher.join(timeout=5)

    def describe(self) -> dict[str, object]:
        info = dict(self._engine.describe())
        info.update(self.status().to_dict())
        info["loaded"] = info["state"] == READY
        return info

    def capabilities(self):
        """The managed engine's (never loads it)."""
        return self._engine.capabilities()

    # --- status ------------------------------------------------------------------------------------
    def status(self) -> ManagerStatus:
        with self._cond:
            return ManagerStatus(
                state=self._state,
                engine=self.name,
                load_seconds=self._load_seconds,
                loads=self._loads,
                unloads=self._unloads,
                last_used=self._last_used_wall,
                requests_served=self._served,
                in_flight=self._in_flight,
                idle_unload_s=self.idle_unload_s,
                last_error=self._last_error,
                last_memory=self._last_memory.to_dict() if self._last_memory else None,
            )

    def set_idle_unload(self, seconds: float) -> None:
        """Change the idle timeout at runtime (0 disables); a sleeping watcher re-reads it at once."""
        if seconds < 0:
            raise ValueError("idle_unload_s must be ≥ 0 (0 disables idle unload)")
        with self._cond:
            self.idle_unload_s = float(seconds)
            if self._state == READY:
                self._start_watcher()
            self._cond.notify_all()

    def close(self) -> None:
        """Unload and stop the idle watcher (for tests and shutdown hooks)."""
        self.unload()

    # --- internals ---------------------------------------------------------------------------------
    def _acquire(self) -> None:
        """Count one request in flight, loading first if needed (single flight under concurrency)."""
        with self._cond:
            while True:
                if self._state == READY:
                    self._in_flight += 1
                    return
                if self._state in (LOADING, UNLOADING):
                    attempt = self._load_attempt
                    self._cond.wait()
                    if self._state == ERROR and self._load_attempt == attempt and self._last_error:
                        # the load we waited for failed: report it instead of starting a retry storm
                        raise ModelLoadError(self._last_error)
                    continue
                self._state = LOADING
                self._load_attempt += 1
                break
        t0 = self._clock()
        try:
            self._engine.cap_memory()  # the engine's budget (gpu_memory_gib) holds before anything loads
            self._engine.load()
        except BaseException as exc:
            msg = str(exc) or type(exc).__name__
            with self._cond:
                self._state = ERROR
                self._last_error = msg
                self._cond.notify_all()
            logger.error("loading %s failed: %s", self.name, msg)
            if isinstance(exc, OcrError) or not isinstance(exc, Exception):
                raise
            raise ModelLoadError(f"loading {self.name} failed: {msg}") from exc
        seconds = self._clock() - t0
        with self._cond:
            self._state = READY
            self._load_seconds = seconds
            self._loads += 1
            self._last_error = None
            self._in_flight += 1
            self._last_used_mono = self._clock()
            self._cond.notify_all()
            self._start_watcher()
        logger.info("%s loaded in %.2f s", self.name, seconds)

    def _release(self, served: int) -> None:
        with self._cond:
            self._in_flight -= 1
            self._served += served
            self._last_used_mono = self._clock()
            self._last_used_wall = self._wall()
            self._cond.notify_all()

    def _request_memory(self, label: str):
        resident = getattr(self._engine, "resident_bytes", None)  # kept on purpose: not a leak
        return request_context(
            self._resolved_memory_device(), self._tolerance_mb, label, resident=resident, others=self._others
        )

    def _others(self) -> bool:
        """Whether other requests are in flight beside the asking one (several users share the model)."""
        with self._cond:
            return self._in_flight > 1

    def _resolved_memory_device(self) -> str:
        dev = (self._memory_device or "cpu").lower()
        if dev == "auto":
            torch = sys.modules.get("torch")
            # the engine has loaded by now; if it put the model on a GPU, torch is imported and CUDA is up
            if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
                return "cuda"
            return "cpu"
        return dev if is_cuda_device(dev) else "cpu"

    def _unload(self, final_state: str, *, wait: bool) -> bool:
        with self._cond:
            if wait:
                while self._state in (LOADING, UNLOADING) or self._in_flight > 0:
                    self._cond.wait()
            elif self._state != READY or self._in_flight > 0 or not self._idle_expired():
                return False
            if self._state not in (READY, ERROR):
                return False
            self._state = UNLOADING
        try:
            if final_state == IDLE_UNLOADED:  # the engine may keep what makes the next load fast
                self._engine.park()
            else:
                self._engine.unload()
        finally:
            _return_memory()
            with self._cond:
                self._state = final_state
                self._unloads += 1
                self._cond.notify_all()
        logger.info("%s unloaded (%s)", self.name, final_state)
        return True

    def _idle_expired(self) -> bool:
        last = self._last_used_mono
        return last is not None and self._clock() - last >= self.idle_unload_s

    def _start_watcher(self) -> None:
        """Start the idle watcher if idle unload is on and none runs (called with the lock held)."""
        if self.idle_unload_s <= 0 or (self._watcher is not None and self._watcher.is_alive()):
            return
        self._watcher = threading.Thread(
            target=self._watch_idle, name=f"idle-unload-{self.name}", daemon=True
        )
        self._watcher.start()

    def _watch_idle(self) -> None:
        """Sleep until the model has been idle for ``idle_unload_s``, then unload; exit once unloaded."""
        while True:
            with self._cond:
                if self._state != READY or self.idle_unload_s <= 0:
                    return
                if self._in_flight > 0 or self._last_used_mono is None:
                    self._cond.wait()
                    continue
                remaining = self._last_used_mono + self.idle_unload_s - self._clock()
                if remaining > 0:
                    self._cond.wait(timeout=remaining)
                    continue
            if self._unload(IDLE_UNLOADED, wait=False):
                logger.info("%s idle for %.0f s: unloaded", self.name, self.idle_unload_s)
                return


def _return_memory() -> None:
    """After the engine dropped its references: collect cycles and give cached GPU blocks back."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
