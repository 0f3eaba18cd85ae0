"""Per-request GPU memory accounting: measure before/after, free transient memory on exit, warn on leaks.

Why: the app runs for weeks on a GPU shared with other work. Each request must hand back what it
borrowed (activations, allocator cache), and a request that keeps memory must be visible in the log
rather than discovered as an OOM days later. On CPU this is a cheap record with no numbers.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

logger = logging.getLogger(__name__)

MIB = 1024**2


@dataclass
class MemoryRecord:
    """What one request did to GPU memory. Byte fields are None on CPU."""

    label: str
    device: str
    cuda: bool
    allocated_before: int | None = None
    reserved_before: int | None = None
    allocated_after: int | None = None
    reserved_after: int | None = None
    peak_allocated: int | None = None  # max allocated while the request ran
    resident_before: int | None = None  # bytes the engine keeps on purpose (decoder slots), before
    resident_after: int | None = None  # ... and after: their change is not a leak
    seconds: float = 0.0
    leaked: bool = False  # allocated did not come back within the tolerance
    error: str | None = None  # exception type name when the body raised
    shared: bool = False  # other requests ran at the same time: nothing measured or freed for this one

    @property
    def delta_allocated(self) -> int | None:
        if self.allocated_before is None or self.allocated_after is None:
            return None
        return self.allocated_after - self.allocated_before

    @property
    def peak_delta(self) -> int | None:
        if self.allocated_before is None or self.peak_allocated is None:
            return None
        return self.peak_allocated - self.allocated_before

    @property
    def kept_unplanned(self) -> int | None:
        """Change of allocated memory not explained by the engine's kept state (what may leak)."""
        delta = self.delta_allocated
        if delta is None:
            return None
        return delta - ((self.resident_after or 0) - (self.resident_before or 0))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["delta_allocated"] = self.delta_allocated
        d["kept_unplanned"] = self.kept_unplanned
        d["peak_delta"] = self.peak_delta
        return d


def is_cuda_device(device: Any) -> bool:
    """True for "cuda", "cuda:N" and CUDA ``torch.device`` objects; never imports torch."""
    if device is None:
        return False
    kind = getattr(device, "type", None) or str(device).split(":", 1)[0]
    return str(kind).lower() == "cuda"


def free_transient_memory(cuda: Any | None = None) -> None:
    """Collect Python garbage (tensors held by cycles) and return the allocator's cached blocks."""
    gc.collect()
    if cuda is not None:
        cuda.empty_cache()


def trim_host_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; elsewhere nothing).

    Why: a job's page images, decoded streams and engine buffers are freed into glibc's arenas, which
    keep them: the app held 640 MB after a refused 1 GiB filter-chain bomb and 1 GB after two scans,
    against ~500 MB after ``malloc_trim(0)`` (issue 31: back to the baseline ± 50 MB). A few ms, with
    the arenas locked meanwhile: the app trims once its last running job has ended, not after each."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, looked up once (``find_library`` runs ``ldconfig``: a child process)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None


def _cuda_module() -> Any:
    import torch

    return torch.cuda


@contextlib.contextmanager
def request_context(
    device: Any = "cpu",
    tolerance_mb: float = 64,
    label: str = "request",
    *,
    cuda: Any | None = None,
    resident: Callable[[], int] | None = None,
    others: Callable[[], bool] | None = None,
) -> Iterator[MemoryRecord]:
    """Run a request; on exit (normal or exception) free transient memory and fill the yielded record.

    Freeing = ``empty_cache`` always, plus ``gc.collect`` after an exception or when allocated memory is
    still above the tolerance (then measured again before deciding that memory leaked).

    ``cuda`` defaults to ``torch.cuda``; it is a parameter so a caller can pass another object with the
    same functions (``memory_allocated``, ``memory_reserved``, ``max_memory_allocated``,
    ``reset_peak_memory_stats``, ``empty_cache``, ``synchronize``).

    ``resident`` returns the bytes the engine keeps between requests on purpose (a decoder's slots,
    sized once): a change in it is reported in the record but is not a leak.

    ``others`` says whether other requests are in flight on the device (several users share one
    decoder). Allocated memory is process-wide, so while they run this request's numbers would count
    theirs: resetting the peak would spoil theirs, freeing the allocator cache and collecting garbage
    would stall them, and their pages in flight would read as this request's leak. So a request that
    starts or ends beside others is recorded as ``shared`` without numbers; the last one to finish
    alone measures and frees for all.
    """
    on_cuda = is_cuda_device(device)
    record = MemoryRecord(label=label, device=str(device), cuda=on_cuda)
    t0 = time.perf_counter()
    if on_cuda and others is not None and others():
        record.shared = True
        with _timed(record, t0):
            yield record
        if not others():  # the last of the requests that overlapped: hand the allocator cache back
            (cuda if cuda is not None else _cuda_module()).empty_cache()
        return
    if not on_cuda:
        with _timed(record, t0):
            yield record
        return

    cuda = cuda if cuda is not None else _cuda_module()
    index = _index(device)
    record.allocated_before = int(cuda.memory_allocated(index))
    record.resident_before = _resident(resident)
    record.reserved_before = int(cuda.memory_reserved(index))
    cuda.reset_peak_memory_stats(index)
    try:
        yield record
    except BaseException as exc:
        record.error = type(exc).__name__
        raise
    finally:
        if others is not None and others():  # a request that started beside this one still runs
            record.shared = True
        else:
            _measure_and_free(cuda, index, record, tolerance_mb, resident)
        record.seconds = time.perf_counter() - t0
        _log(record, tolerance_mb)


@contextlib.contextmanager
def _timed(record: MemoryRecord, t0: float) -> Iterator[None]:
    """A record without numbers: the error type and the seconds only."""
    try:
        yield
    except BaseException as exc:
        record.error = type(exc).__name__
        raise
    finally:
        record.seconds = time.perf_counter() - t0


def _measure_and_free(
    cuda: Any,
    index: int | None,
    record: MemoryRecord,
    tolerance_mb: float,
    resident: Callable[[], int] | None,
) -> None:
    """The end of a request that ran alone: its peak, freeing what it left, the leak check."""
    with contextlib.suppress(Exception):
        cuda.synchronize(index)
    record.peak_allocated = int(cuda.max_memory_allocated(index))
    # gc.collect costs up to a second in a big process: run it when an exception's traceback may
    # hold tensors, or when returning the allocator cache alone did not bring memory back.
    if record.error is not None:
        free_transient_memory(cuda)
    else:
        cuda.empty_cache()
        kept = int(cuda.memory_allocated(index)) - (record.allocated_before or 0)
        if kept - _resident(resident) + (record.resident_before or 0) > tolerance_mb * MIB:
            free_transient_memory(cuda)
    record.allocated_after = int(cuda.memory_allocated(index))
    record.reserved_after = int(cuda.memory_reserved(index))
    record.resident_after = _resident(resident)
    record.leaked = (record.kept_unplanned or 0) > tolerance_mb * MIB


def _log(record: MemoryRecord, tolerance_mb: float) -> None:
    if record.shared:
        logger.debug("%s ran beside other requests: not measured on its own", record.label)
    elif record.leaked:
        logger.warning(
            "%s kept %.1f MiB of GPU memory (tolerance %.0f MiB): allocated %.1f → %.1f MiB, "
            "reserved %.1f → %.1f MiB",
            record.label,
            (record.kept_unplanned or 0) / MIB,
            tolerance_mb,
            (record.allocated_before or 0) / MIB,
            (record.allocated_after or 0) / MIB,
            (record.reserved_before or 0) / MIB,
            (record.reserved_after or 0) / MIB,
        )
    else:
        logger.debug(
            "%s: peak +%.1f MiB, kept %+.1f MiB",
            record.label,
            (record.peak_delta or 0) / MIB,
            (record.kept_unplanned or 0) / MIB,
        )


def _resident(resident: Callable[[], int] | None) -> int:
    if resident is None:
        return 0
    try:
        return int(resident())
    except Exception:  # a failing probe must not turn a finished request into an error
        logger.debug("resident-bytes probe failed", exc_info=True)
        return 0


def _index(device: Any) -> int | None:
    """The CUDA index in ``device``; None means torch's current device."""
    if not isinstance(device, str):
        idx = getattr(device, "index", None)  # torch.device
        if isinstance(idx, int):
            return idx
    text = str(device)
    if ":" in text:
        try:
            return int(text.split(":", 1)[1])
        except ValueError:
            return None
    return None
