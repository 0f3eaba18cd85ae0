"""VRAM monitor: device-wide numbers from NVML, this process's numbers from torch.

Why both: NVML sees the whole GPU (other processes included, which matters on a GPU shared with other
work), torch sees what this process allocated and cached. The monitor never creates a CUDA context
(that alone costs hundreds of MiB): torch numbers are read only once CUDA is initialised here, and
without a GPU every call returns a snapshot with ``available=False`` and a plain "no GPU" reason.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True)
class ProcessUsage:
    """One process on the GPU; ``used_bytes`` is None where the driver does not tell (containers)."""

    pid: int
    used_bytes: int | None
    name: str | None = None


@dataclass(frozen=True)
class VramSnapshot:
    """GPU memory at one moment. Byte fields are None when that source could not be read."""

    available: bool
    timestamp: float
    reason: str = ""  # why not available, e.g. "no GPU: NVML library not found"
    source: str = "none"  # "nvml", "torch" or "none": where the device-wide numbers come from
    device_index: int | None = None
    device_name: str | None = None
    total_bytes: int | None = None
    used_bytes: int | None = None  # device-wide, all processes
    free_bytes: int | None = None
    torch_allocated_bytes: int | None = None  # this process, live tensors
    torch_reserved_bytes: int | None = None  # this process, tensors + caching allocator's pool
    torch_peak_bytes: int | None = None  # this process, max allocated since the last reset
    processes: tuple[ProcessUsage, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        """One human line for the UI panel and ``ocr-app info``."""
        if not self.available:
            return self.reason or "no GPU"
        parts = [f"GPU {self.device_index}: {self.device_name or 'unknown'}"]
        if self.total_bytes is not None and self.used_bytes is not None:
            pct = 100.0 * self.used_bytes / self.total_bytes if self.total_bytes else 0.0
            parts.append(f"{_gib(self.used_bytes)} / {_gib(self.total_bytes)} GiB used ({pct:.0f}%)")
        elif self.total_bytes is not None:
            parts.append(f"{_gib(self.total_bytes)} GiB total")
        if self.torch_allocated_bytes is not None:
            parts.append(
                f"this process: {_gib(self.torch_allocated_bytes)} GiB allocated, "
                f"{_gib(self.torch_reserved_bytes or 0)} GiB reserved, "
                f"{_gib(self.torch_peak_bytes or 0)} GiB peak"
            )
        others = [p for p in self.processes if p.used_bytes is not None]
        if self.processes:
            parts.append(f"{len(self.processes)} process(es) on the GPU")
        if others:
            top = max(others, key=lambda p: p.used_bytes or 0)
            parts.append(f"largest: pid {top.pid} {_gib(top.used_bytes or 0)} GiB")
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = self.summary()
        return d


def _gib(n: int) -> str:
    return f"{n / GIB:.2f}"


def parse_device_index(device: int | str | None) -> int:
    """``None``/"auto"/"cuda" → 0, "cuda:N"/N → N; other strings (cpu) → 0, the GPU a user would get."""
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    text = str(device).strip().lower()
    if text.startswith("cuda:"):
        try:
            return int(text.split(":", 1)[1])
        except ValueError:
            return 0
    return 0


def _torch_if_imported() -> Any | None:
    """torch only if something already imported it: the monitor must not pull torch into a light process."""
    return sys.modules.get("torch")


def _torch_numbers(torch: Any | None, index: int) -> dict[str, int | None]:
    """This process's allocator numbers; all None unless CUDA is already initialised (no new context)."""
    none = {"torch_allocated_bytes": None, "torch_reserved_bytes": None, "torch_peak_bytes": None}
    if torch is None:
        return none
    try:
        if not torch.cuda.is_initialized():
            return none
        return {
            "torch_allocated_bytes": int(torch.cuda.memory_allocated(index)),
            "torch_reserved_bytes": int(torch.cuda.memory_reserved(index)),
            "torch_peak_bytes": int(torch.cuda.max_memory_allocated(index)),
        }
    except Exception as exc:  # a broken driver must not break the status panel
        logger.debug("torch memory numbers unavailable: %s", exc)
        return none


def _decode(name: Any) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


def _nvml_snapshot(nvml: Any, index: int, now: float, torch_nums: dict[str, int | None]) -> VramSnapshot:
    """Read one device through NVML. Raises the NVML error on failure (caller decides the fallback)."""
    nvml.nvmlInit()
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            return VramSnapshot(available=False, timestamp=now, reason="no GPU: NVML sees 0 devices")
        if index >= count:
            return VramSnapshot(
                available=False, timestamp=now, reason=f"no GPU {index}: NVML sees {count} device(s)"
            )
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        mem = nvml.nvmlDeviceGetMemoryInfo(handle)
        try:
            name = _decode(nvml.nvmlDeviceGetName(handle))
        except Exception:
            name = None
        return VramSnapshot(
            available=True,
            timestamp=now,
            source="nvml",
            device_index=index,
            device_name=name,
            total_bytes=int(mem.total),
            used_bytes=int(mem.used),
            free_bytes=int(mem.free),
            processes=_nvml_processes(nvml, handle),
            **torch_nums,
        )
    finally:
        with contextlib.suppress(Exception):  # shutdown failing is harmless; init is reference-counted
            nvml.nvmlShutdown()


def _nvml_processes(nvml: Any, handle: Any) -> tuple[ProcessUsage, ...]:
    """Per-process usage where the driver allows it; empty when it does not (common in containers)."""
    try:
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception as exc:
        logger.debug("NVML per-process list not allowed: %s", exc)
        return ()
    out = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        # NVML reports "not available" as None (newer bindings) or as a huge sentinel value.
        if used is not None and (used < 0 or used >= 2**63):
            used = None
        try:
            name = _decode(nvml.nvmlSystemGetProcessName(p.pid))
        except Exception:
            name = None
        out.append(ProcessUsage(pid=int(p.pid), used_bytes=None if used is None else int(used), name=name))
    return tuple(out)


def _torch_snapshot(torch: Any, index: int, now: float, reason: str) -> VramSnapshot:
    """Fallback when NVML is missing: device numbers from torch (total always, used once initialised)."""
    try:
        if not torch.cuda.is_available():
            return VramSnapshot(available=False, timestamp=now, reason=f"no GPU ({reason}; torch sees none)")
        count = torch.cuda.device_count()
        if index >= count:
            return VramSnapshot(
                available=False, timestamp=now, reason=f"no GPU {index}: torch sees {count} device(s)"
            )
        props = torch.cuda.get_device_properties(index)
        total = int(props.total_memory)
        used = free = None
        if torch.cuda.is_initialized():
            free_b, total_b = torch.cuda.mem_get_info(index)
            free, used, total = int(free_b), int(total_b - free_b), int(total_b)
        return VramSnapshot(
            available=True,
            timestamp=now,
            source="torch",
            device_index=index,
            device_name=str(props.name),
            total_bytes=total,
            used_bytes=used,
            free_bytes=free,
            **_torch_numbers(torch, index),
        )
    except Exception as exc:
        return VramSnapshot(available=False, timestamp=now, reason=f"no GPU ({reason}; torch: {exc})")


def _import_nvml() -> Any | None:
    try:
        import pynvml  # package nvidia-ml-py
    except ImportError:
        return None
    return pynvml


def snapshot(
    device: int | str | None = None,
    *,
    nvml: Any | None = None,
    torch: Any | None = None,
    clock: Callable[[], float] = time.time,
) -> VramSnapshot:
    """Read GPU memory now. Never raises: without a GPU the result has ``available=False``.

    ``nvml``/``torch`` default to the real ``pynvml`` module and the already-imported torch; they are
    parameters so callers (and tests) can pass another object with the same functions.
    """
    index = parse_device_index(device)
    now = clock()
    nvml = nvml if nvml is not None else _import_nvml()
    torch = torch if torch is not None else _torch_if_imported()
    torch_nums = _torch_numbers(torch, index)
    if nvml is not None:
        try:
            return _nvml_snapshot(nvml, index, now, torch_nums)
        except Exception as exc:
            reason = f"NVML: {exc}"
    else:
        reason = "nvidia-ml-py not installed"
    if torch is not None:
        return _torch_snapshot(torch, index, now, reason)
    return VramSnapshot(available=False, timestamp=now, reason=f"no GPU ({reason})")


@dataclass(frozen=True)
class VramPoint:
    """One point of the UI plot, in GiB (None where the source had no number)."""

    t: float
    used_gib: float | None
    allocated_gib: float | None
    reserved_gib: float | None


class VramHistory:
    """Ring buffer of snapshots for the last ``window_s`` seconds (and at most ``max_points``), thread-safe.

    Why bounded twice: the time window is what the plot shows, the point cap keeps memory flat when
    the poll interval is shorter than expected.
    """

    def __init__(
        self, window_s: float = 600.0, max_points: int = 1200, clock: Callable[[], float] = time.time
    ) -> None:
        if window_s <= 0 or max_points <= 0:
            raise ValueError("window_s and max_points must be positive")
        self.window_s = window_s
        self._clock = clock
        self._items: deque[VramSnapshot] = deque(maxlen=max_points)
        self._lock = threading.Lock()

    def add(self, snap: VramSnapshot) -> None:
        with self._lock:
            self._items.append(snap)
            self._prune(self._clock())

    def sample(self, read: Callable[[], VramSnapshot] = snapshot) -> VramSnapshot:
        """Take a snapshot with ``read``, store it, return it (what a UI timer calls)."""
        snap = read()
        self.add(snap)
        return snap

    def _prune(self, now: float) -> None:
        cutoff = now - self.window_s
        while self._items and self._items[0].timestamp < cutoff:
            self._items.popleft()

    def snapshots(self) -> list[VramSnapshot]:
        with self._lock:
            self._prune(self._clock())
            return list(self._items)

    def points(self) -> list[VramPoint]:
        """Plot-ready points (GiB); snapshots without a GPU are skipped."""

        def g(n: int | None) -> float | None:
            return None if n is None else n / GIB

        return [
            VramPoint(s.timestamp, g(s.used_bytes), g(s.torch_allocated_bytes), g(s.torch_reserved_bytes))
            for s in self.snapshots()
            if s.available
        ]

    def latest(self) -> VramSnapshot | None:
        with self._lock:
            return self._items[-1] if self._items else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def gpu_present(
    *,
    nvml: Any | None = None,
    proc_dir: str = "/proc/driver/nvidia/gpus",
    environ: dict[str, str] | None = None,
) -> bool:
    """Whether a CUDA GPU is usable here, answered without importing torch.

    Why: choosing the OCR engine for ``auto`` only needs yes/no, and ``import torch`` costs seconds
    (the text-layer path must stay light). Order: an empty ``CUDA_VISIBLE_DEVICES`` hides every GPU;
    torch when something already imported it (its answer is authoritative then); NVML; the Linux
    driver's ``/proc`` entry.
    """
    import os

    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return False
    torch = _torch_if_imported()
    if torch is not None:
        try:
            return bool(torch.cuda.is_available())
        except Exception:  # a broken CUDA install answers "no GPU"
            return False
    nvml = nvml if nvml is not None else _import_nvml()
    if nvml is not None:
        try:
            nvml.nvmlInit()
            try:
                return int(nvml.nvmlDeviceGetCount()) > 0
            finally:
                with contextlib.suppress(Exception):
                    nvml.nvmlShutdown()
        except Exception as exc:
            logger.debug("NVML could not count GPUs: %s", exc)
    try:
        return any(os.scandir(proc_dir))
    except OSError:
        return False


@dataclass(frozen=True)
class CudaFacts:
    """What the precision resolver needs to know about a CUDA device, read without torch."""

    free_bytes: int | None
    bf16_supported: bool


def cuda_facts(device: int | str | None = None, *, nvml: Any | None = None) -> CudaFacts:
    """Free memory and bf16 support (compute capability ≥ 8.0) of one GPU: from torch when it is
    already imported and CUDA initialised, else from NVML (no CUDA context). Unknowns: None / True."""
    index = parse_device_index(device)
    torch = _torch_if_imported()
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                free, _ = torch.cuda.mem_get_info(index)
                return CudaFacts(int(free), bool(torch.cuda.is_bf16_supported()))
        except Exception as exc:
            logger.debug("torch CUDA facts unavailable: %s", exc)
    nvml = nvml if nvml is not None else _import_nvml()
    if nvml is None:
        return CudaFacts(None, True)
    try:
        nvml.nvmlInit()
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            free = int(nvml.nvmlDeviceGetMemoryInfo(handle).free)
            try:
                major, _minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
                bf16 = int(major) >= 8
            except Exception:
                bf16 = True
            return CudaFacts(free, bf16)
        finally:
            with contextlib.suppress(Exception):
                nvml.nvmlShutdown()
    except Exception as exc:
        logger.debug("NVML CUDA facts unavailable: %s", exc)
        return CudaFacts(None, True)
