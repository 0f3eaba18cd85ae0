"""Every local GPU: one model engine per device, in one process, behind an ``EnginePool``.

Why one engine per GPU (and not one model split over GPUs): DeepSeek-OCR-2 fits on one GPU, pages are
independent, and each GPU then runs its own graph decoder, model manager (lazy load, idle unload, OOM
ladder) and memory budget (``gpu_memory_gib`` applies per device). The pool sends pages to whichever
GPU has a free slot, across documents and concurrent jobs, and a GPU that fails is backed off while
its pages go to the others.

``device`` setting: ``auto`` uses every visible CUDA device (one pool member each; a single GPU stays a
plain engine), ``cuda:0,cuda:2`` picks devices. A repeated device (``cpu,cpu``) runs two engines on it,
labelled ``cpu#0``, ``cpu#1``: useless for speed, but it lets the placement run on a machine without GPUs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ocr_app.exceptions import ConfigError

if TYPE_CHECKING:
    from ocr_app.engine_api import Engine
    from ocr_app.engines.pool import EnginePool
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)


def cuda_device_count() -> int:
    """Visible CUDA devices; 0 without torch or CUDA (``visible_cuda_count``, else torch's answer)."""
    import importlib.util

    count = visible_cuda_count()
    if count is not None:
        return count
    if importlib.util.find_spec("torch") is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def visible_cuda_count() -> int | None:
    """Visible CUDA devices without importing torch; None when only torch could tell.

    Why not always ``torch.cuda.device_count()``: importing torch costs seconds, and a process that
    only talks to remote endpoints or reads a text layer never needs it. Torch's answer when something
    already imported it; else NVML (``nvidia-ml-py``, the GPU panel's library) in milliseconds, with
    ``CUDA_VISIBLE_DEVICES`` narrowing what it sees as it does for torch; else, on Linux, no NVIDIA
    driver entry means no GPU.
    """
    import importlib.util
    import os
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if importlib.util.find_spec("pynvml") is not None:
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                count = int(pynvml.nvmlDeviceGetCount())
            finally:
                pynvml.nvmlShutdown()
        except Exception:  # no driver, no GPU: NVML cannot start
            return 0
        if visible is not None:
            entries = [v for v in visible.split(",") if v.strip()]
            # an invalid entry hides it and every later one, as in CUDA
            valid = next((i for i, v in enumerate(entries) if v.strip().startswith("-")), len(entries))
            count = min(count, valid)
        return count
    if visible is not None and visible.strip() in ("", "-1"):
        return 0
    if sys.platform.startswith("linux") and not os.path.isdir("/proc/driver/nvidia/gpus"):
        return 0
    return None


def check_cuda_devices(setting: str | None, count: int | None) -> None:
    """``ConfigError`` for a CUDA device the machine does not have (``count`` None: not known, no check).

    Why before anything loads: ``--device cuda:7`` on a machine without it was never looked at when
    the text layer read the document, and exited 0 as if the option had applied.
    """
    if count is None:
        return
    have = "no CUDA device" if count == 0 else f"{count} CUDA device(s): cuda:0 to cuda:{count - 1}"
    for device in (setting or "auto").strip().lower().split(","):
        kind, _, index = device.strip().partition(":")
        if kind == "cuda" and (count == 0 or (index.isdigit() and int(index) >= count)):
            raise ConfigError(f"Device '{device.strip()}' does not exist: this machine has {have}.")


def parse_devices(setting: str | None, cuda_count: int | None = None) -> list[str]:
    """The devices the model engines run on: one entry per engine, in order.

    ``auto`` → every CUDA device when there are two or more, else ``["auto"]`` (the single-engine rule
    of the loader). A comma-separated list → its entries, each checked when it names a CUDA index.
    """
    text = (setting or "auto").strip().lower()
    if "," not in text:
        if text == "auto":
            count = cuda_device_count() if cuda_count is None else cuda_count
            if count > 1:
                return [f"cuda:{i}" for i in range(count)]
        return [text]
    devices = [d.strip() for d in text.split(",") if d.strip()]
    count = cuda_device_count() if cuda_count is None else cuda_count
    for d in devices:
        if d == "auto":
            raise ConfigError("'auto' cannot be part of a device list: name the devices (cuda:0,cuda:1).")
        if d.startswith("cuda"):
            index = d.partition(":")[2]
            if not index.isdigit():
                raise ConfigError(f"In a device list every GPU needs its index (cuda:N), got '{d}'.")
            if int(index) >= count:
                raise ConfigError(f"Device '{d}' does not exist: this machine has {count} CUDA device(s).")
        elif d not in ("cpu", "mps"):
            raise ConfigError(f"Unknown device '{d}' in '{setting}': use cpu, cuda:N or a list of them.")
    return devices


def device_labels(devices: list[str]) -> list[str]:
    """Distinct labels: a device named twice gets ``#n`` suffixes."""
    labels = []
    for i, d in enumerate(devices):
        labels.append(f"{d}#{devices[:i].count(d)}" if devices.count(d) > 1 else d)
    return labels


def build_device_pool(
    settings: Settings, devices: list[str], make_engine: Callable[[Settings], Engine]
) -> EnginePool:
    """One engine per device (``make_engine`` gets a copy of the settings with that ``device``)."""
    from ocr_app.engines.pool import EnginePool, PoolMember

    members = []
    for device, label in zip(devices, device_labels(devices), strict=True):
        engine = make_engine(settings.model_copy(update={"device": device}))
        members.append(PoolMember(label=label, engine=engine, slots=settings.decode_max_slots))
    logger.info("one model engine per device: %s", ", ".join(m.label for m in members))
    return EnginePool(members, kind="device", chunk=8, backoff_s=5.0, max_backoff_s=300.0)


__all__ = ["build_device_pool", "cuda_device_count", "device_labels", "parse_devices"]
