"""CUDA graphs of the decode step: capture sizes, one memory pool, replay, and the eager fallback.

Why a graph manager apart from the step (the shape of vLLM's ``cudagraph_utils``): the step is written
once and knows nothing about graphs; this module decides which shapes exist (batch buckets ×
attention-length buckets), captures each shape once on a side stream into one private pool, replays it,
and runs the very same step eagerly where graphs are off (CPU, ``graphs="off"``), with the same buckets,
so the tokens are identical either way.

It also owns what graphs make global: the per-GPU capture lock (other threads' GPU work must not land
in a capture) and the cuBLAS workspaces, which may be freed only while no captured graph is alive.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ocr_app.exceptions import ConfigError

logger = logging.getLogger(__name__)

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64)
# Held while a decode graph is captured. Other threads that launch GPU work next to a running decoder
# (the engine's vision pass of the next pages) take it too, so nothing they do can land in, or break,
# a capture in progress.
CAPTURE_LOCK = threading.RLock()
_DEVICE_LOCKS: dict[str, threading.RLock] = {}
_DEVICE_LOCKS_GUARD = threading.Lock()
# graph managers that own captured graphs: cuBLAS workspaces may be cleared only while none is alive (a
# captured graph keeps using the workspace pointer it was captured with)
_GRAPH_OWNERS: weakref.WeakSet = weakref.WeakSet()


def capture_lock(device: Any) -> threading.RLock:
    """The capture lock of one GPU. Captures run in ``thread_local`` mode, so work on another GPU
    cannot break them: with one engine per GPU, GPU 1's vision pass need not wait for GPU 0's."""
    key = str(device)
    if key in ("cuda", "cuda:0"):  # the single-GPU case keeps the module-wide lock
        return CAPTURE_LOCK
    with _DEVICE_LOCKS_GUARD:
        return _DEVICE_LOCKS.setdefault(key, threading.RLock())


def release_cuda_workspaces() -> bool:
    """Free cuBLAS/cuBLASLt workspaces (one per handle and stream, 32 MiB each on Hopper, allocated
    through the caching allocator and never returned by ``empty_cache``). Skipped while a decoder
    with captured graphs is alive. Returns whether they were cleared."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    if any(g.graphs for g in list(_GRAPH_OWNERS)):
        return False
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is None:  # pragma: no cover - older torch
        return False
    clear()
    return True


def batch_bucket(n: int, capacity: int) -> int:
    """Smallest bucket >= n (the capacity itself is always a bucket)."""
    for b in BATCH_BUCKETS:
        if b >= n and b <= capacity:
            return b
    return capacity


def batch_buckets(capacity: int) -> list[int]:
    """Every batch size ``batch_bucket`` gives a decoder of ``capacity`` slots."""
    return sorted({batch_bucket(n, capacity) for n in range(1, capacity + 1)})


def length_bucket(n: int, step: int, max_len: int) -> int:
    """Attention length for ``n`` positions: a multiple of ``step`` growing ~25 % per bucket."""
    b = step
    while b < n:
        b = max(b + step, math.ceil(b * 1.25 / step) * step)
    return min(b, max_len)


def wants_graphs(mode: str, device: Any) -> bool:
    """Whether ``mode`` ("auto", "on", "off") means CUDA graphs on ``device``."""
    if mode not in ("auto", "on", "off"):
        raise ConfigError(f"graphs must be auto, on or off, not {mode!r}")
    cuda = device.type == "cuda"
    if mode == "on" and not cuda:
        raise ConfigError("CUDA graphs need a CUDA device")
    return cuda and mode != "off"


Step = Callable[[int, int], None]  # one token for slots [0, b) attending to positions [0, lb)


class DecodeGraphs:
    """One captured graph per (batch bucket, length bucket) of one decoder, sharing one pool.

    ``mutable``: the state tensors the step writes; the warm-up run before each capture is undone on
    them, so capturing a new shape never advances a page.
    """

    def __init__(self, device: Any, mode: str, mutable: Sequence[Any], side_stream: Any = None) -> None:
        """``side_stream``: the stream warm-ups and captures run on. Pass the same one to every decoder of
        a scheduler: each new stream that runs a cuBLAS call gets its own workspace (32 MiB on Hopper),
        which stays allocated until ``release_cuda_workspaces`` (a fresh stream per capture was the
        32 MiB-per-request growth of the product path)."""
        self.enabled = wants_graphs(mode, device)
        self.device = device
        self._mutable = list(mutable)
        self.graphs: dict[tuple[int, int], Any] = {}
        self.pool: Any = None
        if self.enabled:
            import torch

            self.pool = torch.cuda.graph_pool_handle()
        self.side = side_stream
        self.capture_s = 0.0  # seconds spent capturing graphs (cold-start breakdown)
        self.held_bytes = 0  # allocated memory the captured graphs keep in their pool (their outputs)

    def run(self, step: Step, b: int, lb: int, steps: int) -> None:
        """``steps`` decode steps at shape (b, lb): graph replays, or ``step`` eagerly where graphs are off."""
        if self.enabled:
            g = self.graph(step, b, lb)
            for _ in range(steps):
                g.replay()
        else:
            for _ in range(steps):
                step(b, lb)

    def graph(self, step: Step, b: int, lb: int) -> Any:
        """The graph of ``step`` at shape (b, lb), captured on first use."""
        g = self.graphs.get((b, lb))
        if g is not None:
            return g
        with capture_lock(self.device):
            return self._capture_locked(step, b, lb)

    def _capture_locked(self, step: Step, b: int, lb: int) -> Any:
        import torch

        key = (b, lb)
        t0 = time.perf_counter()
        before = torch.cuda.memory_allocated(self.device)
        snap = [t.clone() for t in self._mutable]
        if self.side is None:
            self.side = torch.cuda.Stream(self.device)
        side = self.side
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            step(b, lb)  # warm-up: cuBLAS handles, workspace, lazy inits
        torch.cuda.current_stream(self.device).wait_stream(side)
        for t, c in zip(self._mutable, snap, strict=True):
            t.copy_(c)
        g = torch.cuda.CUDAGraph()
        # capture on this decoder's own stream: torch.cuda.graph's default capture stream is made once per
        # process on whichever GPU captured first, so a second GPU's graphs would be captured empty
        with torch.cuda.graph(g, pool=self.pool, stream=side, capture_error_mode="thread_local"):
            step(b, lb)
        self.graphs[key] = g
        _GRAPH_OWNERS.add(self)
        del snap
        # what the graph keeps allocated in its pool: held on purpose, like the K/V slots. Other threads
        # launch no GPU work during a capture (capture lock), so the difference is this graph's.
        self.held_bytes += max(0, torch.cuda.memory_allocated(self.device) - before)
        dt = time.perf_counter() - t0
        self.capture_s += dt
        logger.info("captured decode graph batch=%d len=%d in %.2fs", b, lb, dt)
        return g

    def sizes(self) -> list[tuple[int, int]]:
        """The captured shapes, sorted (the GPU panel shows them)."""
        return sorted(self.graphs)

    def release(self) -> None:
        """Drop the graphs (their private pool goes with the last one) and the references they need."""
        self.graphs.clear()
        self.held_bytes = 0
        self.pool = None
        self.side = None
        self._mutable = []


__all__ = [
    "BATCH_BUCKETS",
    "CAPTURE_LOCK",
    "DecodeGraphs",
    "batch_bucket",
    "batch_buckets",
    "capture_lock",
    "length_bucket",
    "release_cuda_workspaces",
    "wants_graphs",
]
