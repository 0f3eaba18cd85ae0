"""Park a loaded model in host memory and bring it back with one copy (the idle unload's fast return).

Why: the model manager unloads an idle model so the GPU is free for others (0 MiB, tested on the H200);
a later request then paid a whole cold load (imports, reading 6.3 GiB from disk, building the model:
5-7 s). vLLM's sleep mode shows the better trade: keep the weights in pinned host memory while asleep
and copy them back on wake, bounded by host-to-GPU bandwidth (a few hundred ms for 6.3 GiB). Parking
moves every tensor the model owns on the device (parameters, buffers, plain tensor attributes) to the
host, pinned when the device is a GPU, and drops derived caches held in module attributes (SAM's rel-pos
tables, the quantised linears' scale casts): they are rebuilt on first use. The model object, its modules
and their parameters stay the same Python objects, so nothing that holds a module needs to know.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

_SKIP = ("_parameters", "_buffers", "_modules")


@dataclass
class Parked:
    """Where each moved tensor sits (to put its device copy back there) and what parking did."""

    device: Any
    places: list[tuple[Any, str, str]] = field(default_factory=list)  # (owner, name, "param"|"buffer"|"attr")
    bytes: int = 0
    caches_dropped: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "tensors": len(self.places), "caches_dropped": self.caches_dropped,
                "seconds": self.seconds}  # fmt: skip


def _holds_device_tensor(value: Any, device: torch.device) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return value.device == device
    if isinstance(value, dict):
        return any(_holds_device_tensor(v, device) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(_holds_device_tensor(v, device) for v in value)
    return False


def _indexed(device: torch.device) -> torch.device:
    """``cuda`` → ``cuda:N`` (the current GPU): tensors report their index, and ``torch.device("cuda")``
    equals no tensor's device (the H200 run parked nothing until this)."""
    import torch

    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def park(model: Any, device: torch.device) -> Parked:
    """Move every tensor of ``model`` that lives on ``device`` to host memory (pinned for a GPU) and drop
    derived caches. Tensors shared between places (tied weights) get one host copy."""
    import torch

    device = _indexed(device)
    t0 = time.perf_counter()
    pin = device.type == "cuda"
    parked = Parked(device)
    copies: dict[int, torch.Tensor] = {}

    def host(t: torch.Tensor, owner: Any) -> torch.Tensor:
        key = id(owner)  # the long-lived object (a parameter's ``.data`` is a new object at each access)
        if key not in copies:
            out = torch.empty(t.shape, dtype=t.dtype, device="cpu", pin_memory=pin)
            out.copy_(t, non_blocking=pin)
            copies[key] = out
            parked.bytes += t.numel() * t.element_size()
        return copies[key]

    visited: set[int] = set()  # a parameter shared by two modules (tied weights) is moved once
    with torch.no_grad():
        for module in model.modules():
            for kind, store in (("param", module._parameters), ("buffer", module._buffers)):
                for name, t in store.items():
                    if t is None or t.device != device or id(t) in visited:
                        continue
                    visited.add(id(t))
                    if kind == "param":
                        t.data = host(t.data, t)
                        parked.places.append((t, "data", kind))
                    else:
                        store[name] = host(t, t)
                        parked.places.append((store, name, kind))
            for name, value in list(vars(module).items()):
                if name in _SKIP or not _holds_device_tensor(value, device):
                    continue
                if isinstance(value, torch.Tensor):
                    setattr(module, name, host(value, value))
                    parked.places.append((module, name, "attr"))
                else:  # a cache of derived tensors: rebuilt on first use after the wake
                    delattr(module, name)
                    parked.caches_dropped += 1
    if pin:
        torch.cuda.synchronize(device)
    parked.seconds = round(time.perf_counter() - t0, 3)
    logger.info("parked %.2f GiB in host memory in %.2f s", parked.bytes / 2**30, parked.seconds)
    return parked


def wake(parked: Parked) -> dict[str, Any]:
    """Copy every parked tensor back to its device (non-blocking from pinned memory), to the place it
    was taken from; returns ``bytes`` and ``seconds``."""
    import torch

    t0 = time.perf_counter()
    device = parked.device
    copies: dict[int, torch.Tensor] = {}

    def back(t: torch.Tensor, owner: Any) -> torch.Tensor:
        key = id(owner)
        if key not in copies:
            copies[key] = t.to(device, non_blocking=t.is_pinned())
        return copies[key]

    with torch.no_grad():
        for owner, name, kind in parked.places:
            if kind == "param":
                owner.data = back(owner.data, owner)
            elif kind == "buffer":
                owner[name] = back(owner[name], owner[name])
            else:
                value = getattr(owner, name)
                setattr(owner, name, back(value, value))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    report = {"bytes": parked.bytes, "seconds": round(time.perf_counter() - t0, 3)}
    logger.info("woke %.2f GiB onto %s in %.2f s", parked.bytes / 2**30, device, report["seconds"])
    return report


__all__ = ["Parked", "park", "wake"]
