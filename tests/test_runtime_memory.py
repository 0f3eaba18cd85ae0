"""request_context: the CPU path for real; the GPU path through an object with torch.cuda's functions
(no GPU in CI), which simulates allocations so leak detection and freeing on exceptions can be checked."""

from __future__ import annotations

import logging

import pytest

from ocr_app.runtime.memory import MIB, is_cuda_device, request_context


class CudaDouble:
    """torch.cuda's memory functions over a counter: ``cached`` blocks go back on empty_cache."""

    def __init__(self) -> None:
        self.allocated = 100 * MIB
        self.cached = 0
        self.peak = self.allocated
        self.empty_calls = 0

    def alloc(self, n: int) -> None:
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n: int) -> None:
        self.allocated -= n
        self.cached += n

    def memory_allocated(self, i=None):
        return self.allocated

    def memory_reserved(self, i=None):
        return self.allocated + self.cached

    def max_memory_allocated(self, i=None):
        return self.peak

    def reset_peak_memory_stats(self, i=None):
        self.peak = self.allocated

    def empty_cache(self):
        self.empty_calls += 1
        self.cached = 0


class CycleHeld:
    """Memory that only a garbage collection returns (an object in a reference cycle)."""

    def __init__(self, cuda: CudaDouble, n: int) -> None:
        self.cuda, self.n, self.me = cuda, n, self
        cuda.alloc(n)

    def __del__(self):
        self.cuda.free(self.n)

    def synchronize(self, i=None):
        pass


def test_cpu_record_is_cheap_and_empty():
    with request_context("cpu", 64, "page 1") as rec:
        pass
    assert rec.cuda is False and rec.allocated_before is None and rec.delta_allocated is None
    assert rec.seconds >= 0 and rec.error is None and rec.label == "page 1"


def test_cpu_exception_is_recorded_and_propagates():
    with pytest.raises(KeyError), request_context("cpu") as rec:
        raise KeyError("x")
    assert rec.error == "KeyError"


def test_gpu_transient_memory_is_freed_and_measured(caplog):
    cuda = CudaDouble()
    with caplog.at_level(logging.WARNING), request_context("cuda:0", 64, "batch", cuda=cuda) as rec:
        cuda.alloc(2048 * MIB)
        cuda.free(2048 * MIB)
    assert rec.allocated_before == rec.allocated_after == 100 * MIB
    assert rec.peak_delta == 2048 * MIB
    assert rec.reserved_after == 100 * MIB  # the cached blocks went back
    assert cuda.empty_calls == 1 and not rec.leaked
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_gpu_memory_held_by_a_cycle_is_collected_not_reported():
    import gc

    cuda = CudaDouble()
    gc.disable()  # keep the collector from running by itself while the cycle is built
    try:
        with request_context("cuda", 64, "cycle", cuda=cuda) as rec:
            CycleHeld(cuda, 700 * MIB)  # unreachable at once, but only gc frees it
        assert not rec.leaked and rec.allocated_after == 100 * MIB
        assert cuda.empty_calls == 2  # cheap try first, then after the collection
    finally:
        gc.enable()


def test_gpu_leak_warns_with_delta(caplog):
    cuda = CudaDouble()
    with caplog.at_level(logging.WARNING), request_context("cuda", 64, "page 3", cuda=cuda) as rec:
        cuda.alloc(300 * MIB)
    assert rec.leaked and rec.delta_allocated == 300 * MIB
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(msgs) == 1 and "page 3 kept 300.0 MiB" in msgs[0] and "tolerance 64 MiB" in msgs[0]


def test_gpu_within_tolerance_does_not_warn(caplog):
    cuda = CudaDouble()
    with caplog.at_level(logging.WARNING), request_context("cuda", 64, "x", cuda=cuda) as rec:
        cuda.alloc(10 * MIB)
    assert not rec.leaked and rec.delta_allocated == 10 * MIB
    assert not caplog.records


def test_gpu_exception_still_frees(caplog):
    cuda = CudaDouble()
    with pytest.raises(RuntimeError), request_context("cuda", 64, "x", cuda=cuda) as rec:
        cuda.alloc(500 * MIB)
        cuda.free(500 * MIB)
        raise RuntimeError("boom")
    assert rec.error == "RuntimeError" and cuda.empty_calls == 1 and cuda.cached == 0
    assert rec.allocated_after == 100 * MIB


def test_is_cuda_device():
    import torch

    assert is_cuda_device("cuda:1") and is_cuda_device(torch.device("cuda", 0))
    assert not is_cuda_device("cpu") and not is_cuda_device(None) and not is_cuda_device(torch.device("cpu"))


def test_memory_the_engine_keeps_on_purpose_is_not_a_leak(caplog):
    """A kept decoder grows ``resident`` by what it allocates: reported, not warned; memory beyond it
    still is a leak."""
    cuda = CudaDouble()
    kept = {"bytes": 0}
    with caplog.at_level(logging.WARNING):
        with request_context("cuda", 64, "first", cuda=cuda, resident=lambda: kept["bytes"]) as rec:
            cuda.alloc(900 * MIB)  # the decoder's slots, built by this request
            kept["bytes"] = 900 * MIB
        assert rec.delta_allocated == 900 * MIB and rec.kept_unplanned == 0 and not rec.leaked
        with request_context("cuda", 64, "second", cuda=cuda, resident=lambda: kept["bytes"]) as rec2:
            cuda.alloc(200 * MIB)  # a real leak next to the kept slots
    assert rec2.resident_before == rec2.resident_after == 900 * MIB
    assert rec2.leaked and rec2.kept_unplanned == 200 * MIB
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(msgs) == 1 and "second kept 200.0 MiB" in msgs[0]


def test_overlapping_requests_neither_spoil_each_others_numbers_nor_free_under_them(caplog):
    """Two users' requests overlap on one GPU: the one that starts beside the other records no numbers
    and neither resets the peak nor frees while the other runs; the first, ending alone, measures and
    frees. The second user's pages in flight are not reported as the first one's leak while they run."""
    cuda = CudaDouble()
    running = {"n": 0}

    def others() -> bool:
        return running["n"] > 1

    with caplog.at_level(logging.WARNING):
        running["n"] = 1
        with request_context("cuda", 64, "first", cuda=cuda, others=others) as first:
            cuda.alloc(400 * MIB)
            running["n"] = 2
            with request_context("cuda", 64, "second", cuda=cuda, others=others) as second:
                cuda.alloc(300 * MIB)  # the second request's pages
                peak = cuda.peak
                empties = cuda.empty_calls
                cuda.free(300 * MIB)
            assert cuda.peak == peak and cuda.empty_calls == empties  # nothing reset or freed under "first"
            running["n"] = 1
            cuda.free(400 * MIB)
        running["n"] = 0
    assert second.shared and second.allocated_before is None and not second.leaked
    assert not first.shared and first.peak_delta == 700 * MIB and first.delta_allocated == 0
    assert cuda.cached == 0 and not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_request_that_ends_while_another_still_runs_is_not_called_a_leak(caplog):
    cuda = CudaDouble()
    running = {"n": 1}
    busy = lambda: running["n"] > 1  # noqa: E731
    with (
        caplog.at_level(logging.WARNING),
        request_context("cuda", 64, "first", cuda=cuda, others=busy) as first,
    ):
        running["n"] = 2  # a second user starts and is still decoding when the first ends
        cuda.alloc(500 * MIB)
    assert first.shared and not first.leaked and cuda.empty_calls == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
