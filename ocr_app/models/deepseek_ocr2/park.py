"""Park a loaded model in host memory and bring it back with one copy (the idle unload's fast return).

Why: the model manager unloads an idle model so the GPU is free for others (0 MiB, tested on the H200);
a later request then paid a whole cold load (imports, reading 6.3 GiB from disk, building the model:
5-7 s). vLLM's sleep mode shows the better trade: keep the weights in pinned host memory while asleep
and copy them back on wake, bounded by host-to-GPU bandwidth (H200: 6.3 GiB in 0.13 s). Parking moves
every tensor the model owns on the device (parameters, buffers, plain tensor attributes) to the host and
drops derived caches held in module attributes (SAM's rel-pos tables, the quantised linears' scale
casts): they are rebuilt on first use. The model object, its modules and their parameters stay the
same Python objects, so nothing that holds a module needs to know.

Host memory: one exact-size block (an "arena") holds every contiguous tensor, page-locked with
``cudaHostRegister`` for a GPU. Pinned tensors from torch's caching host allocator round each block up
to a power of two and keep it after it is freed: on the H200 that parked 6.31 GiB of bf16 weights in
11.6 GiB of RSS (``bench_product.py --park-cycles``); the arena costs the weights' size and is given
back on wake.
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
ALIGN = 512  # bytes: every tensor's slice of the arena starts at a multiple (any dtype's alignment)


@dataclass
class Parked:
    """Where each moved tensor sits (to put its device copy back there) and what parking did."""

    device: Any
    places: list[tuple[Any, str, str]] = field(default_factory=list)  # (owner, name, "param"|"buffer"|"attr")
    bytes: int = 0
    caches_dropped: int = 0
    seconds: float = 0.0
    arena: Any = None  # the host block the contiguous tensors are views of
    pinned: bool = False  # the arena is page-locked (registered with CUDA)

    def to_dict(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "tensors": len(self.places), "caches_dropped": self.caches_dropped,
                "seconds": self.seconds, "pinned": self.pinned}  # fmt: skip

    def release(self) -> None:
        """Give the host block back (after the wake's copies finished)."""
        if self.arena is not None and self.pinned:
            import torch

            torch.cuda.cudart().cudaHostUnregister(self.arena.data_ptr())
        self.arena, self.pinned = None, False


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


def _collect(model: Any, device: torch.device, parked: Parked) -> list[tuple[Any, str, str, torch.Tensor]]:
    """Every tensor of ``model`` on ``device`` with its place, once each (a parameter shared by two
    modules, a tied weight, is one place); derived caches are dropped on the way."""
    import torch

    found: list[tuple[Any, str, str, torch.Tensor]] = []
    visited: set[int] = set()
    for module in model.modules():
        for kind, store in (("param", module._parameters), ("buffer", module._buffers)):
            for name, t in store.items():
                if t is None or t.device != device or id(t) in visited:
                    continue
                visited.add(id(t))
                if kind == "param":
                    found.append((t, "data", kind, t.data))
                else:
                    found.append((store, name, kind, t))
        for name, value in list(vars(module).items()):
            if name in _SKIP or not _holds_device_tensor(value, device):
                continue
            if isinstance(value, torch.Tensor):
                if id(value) not in visited:
                    visited.add(id(value))
                    found.append((module, name, "attr", value))
            else:  # a cache of derived tensors: rebuilt on first use after the wake
                delattr(module, name)
                parked.caches_dropped += 1
    return found


def _arena(nbytes: int, pin: bool) -> tuple[Any, bool]:
    """An exact-size host block, page-locked when ``pin`` (pageable if CUDA refuses to register it:
    the wake is then a slower copy, never a wrong one)."""
    import torch

    arena = torch.empty(max(nbytes, 1), dtype=torch.uint8)
    if not pin:
        return arena, False
    try:
        err = torch.cuda.cudart().cudaHostRegister(arena.data_ptr(), arena.numel(), 0)
        failed = int(getattr(err, "value", err)) != 0
    except (AttributeError, RuntimeError, TypeError) as exc:  # a torch without the binding
        err, failed = exc, True
    if failed:
        logger.warning("could not page-lock %.2f GiB for the parked model (%s); parking pageable",
                       nbytes / 2**30, err)  # fmt: skip
        return arena, False
    return arena, True


def park(model: Any, device: torch.device) -> Parked:
    """Move every tensor of ``model`` that lives on ``device`` to host memory (one exact-size block,
    pinned for a GPU) and drop derived caches. Tensors shared between places get one host copy."""
    import torch

    device = _indexed(device)
    t0 = time.perf_counter()
    parked = Parked(device)
    with torch.no_grad():
        found = _collect(model, device, parked)
        offsets: list[int | None] = []
        total = 0
        for *_, t in found:
            if t.is_contiguous():
                offsets.append(total)
                total += -(-t.numel() * t.element_size() // ALIGN) * ALIGN
            else:
                offsets.append(None)
        parked.arena, parked.pinned = _arena(total, device.type == "cuda")
        for (owner, name, kind, t), off in zip(found, offsets, strict=True):
            n = t.numel() * t.element_size()
            if off is not None:
                out = parked.arena[off : off + n].view(t.dtype).view(t.shape)
            else:  # a strided view: kept strided, in a block of its own
                out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cpu")
            out.copy_(t, non_blocking=parked.pinned)
            parked.bytes += n
            if kind == "param":
                owner.data = out
            elif kind == "buffer":
                owner[name] = out
            else:
                setattr(owner, name, out)
            parked.places.append((owner, name, kind))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    parked.seconds = round(time.perf_counter() - t0, 3)
    logger.info("parked %.2f GiB in host memory in %.2f s", parked.bytes / 2**30, parked.seconds)
    return parked


def wake(parked: Parked) -> dict[str, Any]:
    """Copy every parked tensor back to its device (non-blocking from pinned memory), to the place it
    was taken from, then give the host block back; returns ``bytes`` and ``seconds``."""
    import torch

    t0 = time.perf_counter()
    device = parked.device
    copies: dict[int, torch.Tensor] = {}

    def back(t: torch.Tensor, owner: Any) -> torch.Tensor:
        key = id(owner)
        if key not in copies:
            copies[key] = t.to(device, non_blocking=parked.pinned)
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
    parked.release()
    report = {"bytes": parked.bytes, "seconds": round(time.perf_counter() - t0, 3)}
    logger.info("woke %.2f GiB onto %s in %.2f s", parked.bytes / 2**30, device, report["seconds"])
    return report


__all__ = ["Parked", "park", "wake"]
