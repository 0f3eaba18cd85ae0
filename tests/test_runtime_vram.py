"""VRAM monitor: the real no-GPU path here, and the GPU path through an object with NVML's interface
(no GPU on CI: the NVML double implements the same functions the real ``pynvml`` module has)."""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

from ocr_app.runtime.vram import GIB, MIB, VramHistory, VramSnapshot, parse_device_index, snapshot


class NvmlDouble:
    """Same call surface as ``pynvml`` for the functions the monitor uses."""

    def __init__(self, total: int, used: int, procs=(), fail_init: Exception | None = None, deny_procs=False):
        self.total, self.used, self.procs = total, used, list(procs)
        self.fail_init, self.deny_procs = fail_init, deny_procs
        self.inits = self.shutdowns = 0

    def nvmlInit(self):
        if self.fail_init:
            raise self.fail_init
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("handle", i)

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=self.total, used=self.used, free=self.total - self.used)

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        if self.deny_procs:
            raise PermissionError("insufficient permissions")
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in self.procs]

    def nvmlSystemGetProcessName(self, pid):
        if pid == 42:
            return b"python"
        raise RuntimeError("not found")


def test_no_gpu_here_is_reported_cleanly():
    snap = snapshot()
    assert snap.available is False
    assert "no GPU" in snap.reason
    assert snap.summary() == snap.reason
    assert snap.total_bytes is None and snap.torch_allocated_bytes is None
    assert snap.to_dict()["summary"].startswith("no GPU")


def test_real_torch_without_cuda_says_no_gpu():
    import torch

    nvml = NvmlDouble(0, 0, fail_init=RuntimeError("NVML Shared Library Not Found"))
    snap = snapshot(torch=torch, nvml=nvml)
    assert snap.available is False
    assert "NVML Shared Library Not Found" in snap.reason
    assert "torch sees none" in snap.reason


def test_monitor_does_not_import_torch():
    code = (
        "import sys; from ocr_app.runtime.vram import snapshot; s = snapshot(); "
        "assert 'torch' not in sys.modules, 'torch imported'; print(s.available)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_nvml_numbers_processes_and_summary():
    nvml = NvmlDouble(
        total=140 * GIB,
        used=35 * GIB,
        procs=[(42, 30 * GIB), (7, None), (8, 2**64 - 1)],  # None and the sentinel both mean "not allowed"
    )
    snap = snapshot("cuda:0", nvml=nvml, torch=None, clock=lambda: 123.0)
    assert snap.available and snap.source == "nvml"
    assert (snap.total_bytes, snap.used_bytes, snap.free_bytes) == (140 * GIB, 35 * GIB, 105 * GIB)
    assert snap.device_name == "NVIDIA H200" and snap.timestamp == 123.0
    assert [(p.pid, p.used_bytes, p.name) for p in snap.processes] == [
        (42, 30 * GIB, "python"),
        (7, None, None),
        (8, None, None),
    ]
    text = snap.summary()
    assert "NVIDIA H200" in text
    assert "35.00 / 140.00 GiB used (25%)" in text
    assert "3 process(es)" in text and "pid 42 30.00 GiB" in text
    assert "this process" not in text  # torch numbers unknown → not shown as zeros
    assert nvml.inits == nvml.shutdowns == 1


def test_per_process_denied_still_gives_device_numbers():
    snap = snapshot(0, nvml=NvmlDouble(80 * GIB, 1 * GIB, deny_procs=True), torch=None)
    assert snap.available and snap.processes == ()
    assert snap.used_bytes == 1 * GIB


def test_device_index_beyond_count():
    snap = snapshot("cuda:3", nvml=NvmlDouble(80 * GIB, 0), torch=None)
    assert not snap.available and "no GPU 3" in snap.reason


@pytest.mark.parametrize(
    ("dev", "idx"), [(None, 0), ("auto", 0), ("cuda", 0), ("cuda:2", 2), (3, 3), ("cpu", 0), ("cuda:x", 0)]
)
def test_parse_device_index(dev, idx):
    assert parse_device_index(dev) == idx


def _snap(t: float, used: int | None = GIB, available: bool = True) -> VramSnapshot:
    return VramSnapshot(available=available, timestamp=t, used_bytes=used, torch_allocated_bytes=used)


def test_history_keeps_only_the_window():
    now = [1000.0]
    hist = VramHistory(window_s=60, max_points=100, clock=lambda: now[0])
    for t in (900.0, 950.0, 990.0, 1000.0):
        hist.add(_snap(t))
    assert [s.timestamp for s in hist.snapshots()] == [950.0, 990.0, 1000.0]
    now[0] = 1055.0
    assert [s.timestamp for s in hist.snapshots()] == [1000.0]
    assert hist.latest().timestamp == 1000.0


def test_history_caps_points_and_skips_no_gpu_points():
    hist = VramHistory(window_s=1e9, max_points=3, clock=lambda: 10.0)
    for t in range(5):
        hist.add(_snap(float(t), used=(t + 1) * 512 * MIB, available=t != 3))
    assert len(hist) == 3
    pts = hist.points()
    assert [p.t for p in pts] == [2.0, 4.0]
    assert pts[0].used_gib == pytest.approx(1.5) and pts[1].allocated_gib == pytest.approx(2.5)


def test_history_sample_and_threads():
    """While one ``add`` is inside the history (here: in its clock call), another thread's ``add`` waits:
    the check-then-pop of pruning and the append never interleave. (Counting appends from four threads
    proved nothing: under the GIL the count is right without the lock.)"""
    inside, second_done, overlapped = threading.Event(), threading.Event(), []
    calls = itertools.count()

    def clock() -> float:
        if next(calls) == 0:  # the first add holds the history until the second had its chance
            inside.set()
            overlapped.append(second_done.wait(timeout=1.0))
        return 0.0

    hist = VramHistory(window_s=1e9, max_points=10, clock=clock)
    first = threading.Thread(target=hist.sample, args=(lambda: _snap(1.0),))
    first.start()
    assert inside.wait(timeout=60)
    second = threading.Thread(target=lambda: (hist.add(_snap(2.0)), second_done.set()))
    second.start()
    first.join()
    second.join()
    assert overlapped == [False]  # the second add did not finish while the first was inside
    assert [s.timestamp for s in hist.snapshots()] == [1.0, 2.0]


def test_history_rejects_bad_sizes():
    with pytest.raises(ValueError):
        VramHistory(window_s=0)
