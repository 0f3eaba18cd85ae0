"""Read a checkpoint's safetensors files straight onto the device in background threads.

Why it was built: a cold ``ocr-app convert`` spent ~5 s in the load on an H200 host: ~2.7 s importing
transformers' model and processor machinery, 1.84 s in ``from_pretrained``, ~0.5 s building the
processor, one after the other. Reading the bytes needs only torch, not transformers, and almost no
Python: ``os.preadv`` fills a pinned host buffer (the GIL is released for the copy out of the page
cache), and a non-blocking copy moves it to the GPU on a side stream while the next chunk is read. So
the engine can start :class:`WeightPrefetch` before it imports transformers.

Who uses it: the native loader (``native_weights``, the default where the graph decoder runs) reads
every checkpoint tensor straight into the native model's parameters with it; nothing else runs on the
loading thread then. With the ``transformers`` loader it is opt-in (``DEEPSEEK_OCR_WEIGHT_PREFETCH``,
``hf_prefetch`` assigns its tensors to transformers' empty model): measured on H200 hosts, the cold start
did not move there — the thread importing transformers slowed by about what the read saved
(docs/PERFORMANCE.md, "The first page"). This module imports no transformers.

Format: safetensors (an 8-byte little-endian header length, a JSON header of name → dtype, shape,
byte offsets into the data that follows).
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

CHUNK_BYTES = 32 * 1024**2  # one pinned staging buffer (page-locking costs ~0.35 ms per MiB at start)
BUFFERS = 2  # staging buffers per reader: read one while the other crosses the bus
# Reader threads on CUDA. One thread copies ~6 GB/s out of the page cache, four ~18 GB/s, while the bus
# takes ~55 GB/s (H200 host, docs/PERFORMANCE.md "Round 7"): the read of a bf16 checkpoint was the cold
# start's longest wait. Each reader has its own staging buffers and copy stream.
READERS = 4
_DTYPES = {
    "BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64", "I8": "int8", "U8": "uint8",
    "I16": "int16", "I32": "int32", "I64": "int64", "BOOL": "bool", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "U16": "uint16", "U32": "uint32", "U64": "uint64",
}  # fmt: skip


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a safetensors file: where its bytes are (absolute file offsets) and what they are."""

    name: str
    dtype: str  # safetensors' name (BF16, F32, ...)
    shape: tuple[int, ...]
    start: int
    end: int


def read_header(path: str | Path) -> list[TensorEntry]:
    """The tensors of one safetensors file, in file order."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ModelLoadError(f"{path} is not a safetensors file (too short)")
        (n,) = struct.unpack("<Q", raw)
        try:
            header = json.loads(f.read(n))
        except ValueError as exc:
            raise ModelLoadError(f"{path} has an unreadable safetensors header: {exc}") from exc
    base = 8 + n
    out = []
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] not in _DTYPES:
            raise ModelLoadError(f"{path}: tensor {name} has dtype {meta['dtype']}, which torch cannot hold")
        b, e = meta["data_offsets"]
        out.append(TensorEntry(name, meta["dtype"], tuple(meta["shape"]), base + b, base + e))
    return sorted(out, key=lambda t: t.start)


def _read_into(fd: int, view: memoryview, offset: int) -> None:
    """Fill ``view`` from ``fd`` at ``offset`` (short reads retried; the GIL is released meanwhile)."""
    done = 0
    while done < len(view):
        n = os.preadv(fd, [view[done:]], offset + done)
        if n <= 0:
            raise ModelLoadError(f"unexpected end of file at byte {offset + done}")
        done += n


class WeightPrefetch:
    """Every tensor of ``files`` read onto ``device`` by a daemon thread started at construction (on
    CUDA with ``readers()`` reader threads in all, see ``READERS``).

    The destination tensors are allocated here, on the calling thread, before the reader starts: done
    in the reader, each of the ~2,600 allocations had to win the GIL back from the importing thread
    (up to one switch interval each), which made the read 3.7 s and the import slower (H200 host,
    docs/PERFORMANCE.md). A reader's own Python work is a few calls per 32 MiB chunk, and the GIL
    switch interval is 1 ms while it runs.

    ``after``: called in that thread once the weights are in place (the engine warms libraries there).
    ``result()`` waits and returns ``{name: tensor}`` in the files' dtypes; a failure in the thread is
    raised there. ``seconds`` says how long the read took.

    ``destinations``: tensors to read into instead of new ones, by checkpoint name (the native loader
    passes its parameters, or slices of its fused expert weights, so the bytes land where the model
    reads them); each must be contiguous, on ``device``, with the file's dtype and element count. Entries
    given here and ``entries`` (pre-read headers) save work the caller already did.
    """

    def __init__(
        self,
        files: list[Path],
        device: Any,
        *,
        after: Callable[[], None] | None = None,
        destinations: dict[str, torch.Tensor] | None = None,
        entries: dict[Path, list[TensorEntry]] | None = None,
    ) -> None:
        import torch

        self.files = [Path(f) for f in files]
        self.device = torch.device(device)
        self.after = after
        self.entries = entries if entries is not None else {f: read_header(f) for f in self.files}
        given = destinations or {}
        self.tensors: dict[str, torch.Tensor] = {
            t.name: _destination(t, given[t.name], self.device) if t.name in given else _empty(t, self.device)
            for es in self.entries.values()
            for t in es
        }
        # byte views of the destinations, also made here (each is two torch calls)
        self._flat = {k: _bytes_of(x) for k, x in self.tensors.items() if x.numel()}
        self.seconds: float | None = None
        self.nbytes = sum(t.end - t.start for es in self.entries.values() for t in es)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ocr-weights", daemon=True)
        self._thread.start()

    def result(self) -> dict[str, torch.Tensor]:
        self._thread.join()
        if self._error is not None:
            raise ModelLoadError(f"reading the weights failed: {self._error}") from self._error
        return self.tensors

    def _run(self) -> None:
        import sys

        t0 = time.perf_counter()
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 0.001))
        try:
            if self.device.type == "cuda":
                _read_staged(self.entries, self._flat, self.device, readers=readers())
            else:
                for f, entries in self.entries.items():
                    _read_direct(f, entries, self.tensors)
            self.seconds = time.perf_counter() - t0
            logger.info(
                "read %.2f GiB of weights to %s in %.2f s", self.nbytes / 1024**3, self.device, self.seconds
            )
            if self.after is not None:
                self.after()
        except BaseException as exc:  # handed to result(): the loading thread reports it
            self._error = exc
        finally:
            sys.setswitchinterval(interval)


def _destination(t: TensorEntry, x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``x`` checked to take entry ``t``'s bytes as they are (a copy would lose the read)."""
    import torch

    if (
        x.dtype != getattr(torch, _DTYPES[t.dtype])
        or x.numel() != _numel(t.shape)
        or not x.is_contiguous()
        or x.device.type != device.type
        or (device.index is not None and x.device.index != device.index)
    ):
        raise ModelLoadError(f"{t.name}: its destination tensor cannot take the file's bytes as they are")
    return x


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _empty(t: TensorEntry, device: torch.device) -> torch.Tensor:
    import torch

    return torch.empty(t.shape, dtype=getattr(torch, _DTYPES[t.dtype]), device=device)


def _bytes_of(x: torch.Tensor) -> torch.Tensor:
    import torch

    return x.reshape(-1).view(torch.uint8)


def _read_direct(path: Path, entries: list[TensorEntry], dst: dict[str, torch.Tensor]) -> None:
    """CPU: each tensor read straight into its own memory."""
    fd = os.open(path, os.O_RDONLY)
    try:
        for t in entries:
            if t.end > t.start:
                _read_into(fd, memoryview(_bytes_of(dst[t.name]).numpy()), t.start)
    finally:
        os.close(fd)


def _copy_all(outs: list[torch.Tensor], ins: list[torch.Tensor]) -> None:
    """``out.copy_(in_, non_blocking=True)`` for every pair, in one call where torch allows it."""
    import torch

    try:
        torch._foreach_copy_(outs, ins, non_blocking=True)
    except (RuntimeError, NotImplementedError, AttributeError):  # pragma: no cover - older torch
        for o, i in zip(outs, ins, strict=True):
            o.copy_(i, non_blocking=True)


def chunk_pieces(entries: list[TensorEntry], size: int):
    """The data region of a file in ``size``-byte chunks: ``(start, end, pieces)`` per chunk, each piece
    ``(name, tensor byte offset, chunk byte offset, length)`` (a tensor larger than a chunk spans several)."""
    live = [t for t in entries if t.end > t.start]
    if not live:
        return
    start, end = live[0].start, max(t.end for t in live)
    first = 0  # the first tensor that may overlap the current chunk
    for a in range(start, end, size):
        b = min(a + size, end)
        while first < len(live) and live[first].end <= a:
            first += 1
        pieces = []
        j = first
        while j < len(live) and live[j].start < b:
            t = live[j]
            lo, hi = max(t.start, a), min(t.end, b)
            pieces.append((t.name, lo - t.start, lo - a, hi - lo))
            j += 1
        yield a, b, pieces


def readers() -> int:
    """Reader threads for a staged read: ``READERS``, fewer on a machine with fewer cores."""
    return max(1, min(READERS, os.cpu_count() or 1))


def _read_staged(
    files: dict[Path, list[TensorEntry]],
    flat: dict[str, torch.Tensor],
    device,
    size: int = CHUNK_BYTES,
    readers: int = 1,
) -> None:
    """Every file's data region in ``size``-byte chunks, shared out among ``readers`` threads (the
    calling one among them). Each reader fills its ``BUFFERS`` staging buffers (pinned on CUDA) in turn
    and copies a chunk's pieces to their tensors with one call (non-blocking, on its own side stream, on
    CUDA) while it reads the next. ``flat``: each tensor's bytes (``_bytes_of``); chunks never overlap,
    so readers write disjoint bytes. On the CPU the same path runs with plain buffers (tests check it
    there). Each reader synchronises its stream before the call returns, so the tensors are complete for
    any stream; the first failure stops the other readers and is raised here."""
    import torch

    cuda = torch.device(device).type == "cuda"
    span = max((max((t.end for t in es), default=0) - min((t.start for t in es), default=0))
               for es in files.values()) if files else 0  # fmt: skip
    size = max(1, min(size, span))
    jobs = iter([(f, a, b, pieces) for f, es in files.items() for a, b, pieces in chunk_pieces(es, size)])
    lock = threading.Lock()
    failed: list[BaseException] = []

    def next_job():
        with lock:
            return None if failed else next(jobs, None)

    def reader() -> None:
        try:
            _reader(next_job, flat, device, size, cuda)
        except BaseException as exc:  # raised on the calling thread below
            with lock:
                failed.append(exc)

    others = [
        threading.Thread(target=reader, name=f"ocr-weights-{n}", daemon=True) for n in range(1, readers)
    ]
    for t in others:
        t.start()
    reader()
    for t in others:
        t.join()
    if failed:
        raise failed[0]


def _reader(
    next_job: Callable[[], Any], flat: dict[str, torch.Tensor], device, size: int, cuda: bool
) -> None:
    """One reader of ``_read_staged``: takes chunks until none is left."""
    import torch

    bufs = [torch.empty(size, dtype=torch.uint8, pin_memory=cuda) for _ in range(BUFFERS)]
    views = [memoryview(b.numpy()) for b in bufs]
    done = [torch.cuda.Event() if cuda else None for _ in bufs]
    stream = torch.cuda.Stream(device) if cuda else None
    fds: dict[Path, int] = {}
    try:
        i = 0
        while (job := next_job()) is not None:
            path, a, b, pieces = job
            k, i = i % BUFFERS, i + 1
            if cuda:
                done[k].synchronize()  # its previous chunk has left for the GPU
            if path not in fds:
                fds[path] = os.open(path, os.O_RDONLY)
            _read_into(fds[path], views[k][: b - a], a)
            outs = [flat[name][at : at + n] for name, at, _, n in pieces]
            ins = [bufs[k][off : off + n] for _, _, off, n in pieces]
            if cuda:
                with torch.cuda.stream(stream):
                    _copy_all(outs, ins)
                    done[k].record(stream)
            else:
                torch._foreach_copy_(outs, ins)
        if cuda:
            stream.synchronize()
    finally:
        for fd in fds.values():
            os.close(fd)


def checkpoint_files(directory: str | Path) -> list[Path]:
    return sorted(Path(directory).glob("*.safetensors"))


__all__ = [
    "TensorEntry",
    "WeightPrefetch",
    "checkpoint_files",
    "chunk_pieces",
    "read_header",
]
