"""Slot state of the decoder: which slot holds which page, its tokens and lengths, and its K/V rows.

Why slots: every page owns one row of preallocated buffers (``seq`` [slots, max_len] token ids, K/V
[slots, kv_heads, max_len, head_dim] per layer) with its own length, so pages of any prompt length
decode together and a finished page frees its row for the next one. The device tensors are what the
step reads and writes (inside a CUDA graph: never resized, never reallocated); the host lists mirror
them exactly after each sync (``finished``) and are what the scheduler looks at (free/busy, keys).
Compaction moves a lone page down so the step runs over a smaller batch bucket.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ocr_app.models.deepseek_ocr2.decoding.graphs import batch_bucket
from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeResult
from ocr_app.schema import StopReason

logger = logging.getLogger(__name__)

STOP_CODES = {1: StopReason.END, 2: StopReason.LENGTH, 3: StopReason.REPETITION}  # ``stop_code`` values


class SlotState:
    """The per-slot device tensors, the K/V buffers and their host mirrors. One thread drives it."""

    _STATE = (
        "seq", "kv_len", "gen_count", "max_new", "prompt_len", "guard_start", "stop_code", "active", "done",
        "rows", "pos_ar", "eos", "exempt",
    )  # fmt: skip

    def __init__(
        self,
        *,
        capacity: int,
        max_len: int,
        layers: int,
        kv_heads: int,
        head_dim: int,
        dtype: Any,
        device: Any,
        eos_ids: Sequence[int] = (),
        exempt_ids: Sequence[int] = (),
    ) -> None:
        import torch

        self.capacity, self.max_len, self.layers = int(capacity), int(max_len), int(layers)
        self.kv_heads, self.head_dim, self.dtype, self.device = kv_heads, head_dim, dtype, device
        dev, C, L = device, self.capacity, self.max_len
        # K/V buffers are allocated at the first prefill, after its vision pass (see ``ensure_kv``)
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        z = lambda dt=torch.long: torch.zeros(C, dtype=dt, device=dev)  # noqa: E731
        self.seq = torch.zeros((C, L), dtype=torch.long, device=dev)
        self.kv_len, self.gen_count, self.max_new = z(), z(), z()
        self.prompt_len, self.guard_start = z(), z()
        self.stop_code = z()
        self.active = z(torch.bool)
        self.done = z(torch.bool)
        self.rows = torch.arange(C, device=dev)
        self.pos_ar = torch.arange(L, device=dev)
        self.eos = torch.tensor(tuple(eos_ids) or (-1,), dtype=torch.long, device=dev)
        self.exempt = torch.tensor(tuple(exempt_ids), dtype=torch.long, device=dev) if exempt_ids else None
        # what one step changes: a graph warm-up is undone on these
        self.mutable = [self.seq, self.kv_len, self.gen_count, self.stop_code, self.done]
        # host mirrors (exact after each sync)
        self.slot_key: list[Any] = [None] * C
        self.slot_t0: list[float] = [0.0] * C
        self.slot_ttft: list[float] = [0.0] * C
        self.host_kv_len = [0] * C
        # pages taken out of the batch for a small request (``park``), oldest first
        self.parked: list[dict[str, Any]] = []

    # --- free / busy -------------------------------------------------------------------------------
    @property
    def free_slots(self) -> list[int]:
        return [i for i, k in enumerate(self.slot_key) if k is None]

    @property
    def busy_slots(self) -> list[int]:
        return [i for i, k in enumerate(self.slot_key) if k is not None]

    # --- memory ------------------------------------------------------------------------------------
    def ensure_kv(self) -> None:
        """Allocate the slot K/V buffers once.

        Why lazily: the first page's vision pass (SAM's attention bias over all tiles) is the largest
        transient of a page; running it before these buffers exist keeps the one-page peak at or
        below ``generate``'s.
        """
        import torch

        if self.k:
            return
        shape = (self.capacity, self.kv_heads, self.max_len, self.head_dim)
        for _ in range(self.layers):
            self.k.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
            self.v.append(torch.zeros(shape, dtype=self.dtype, device=self.device))

    def device_tensors(self) -> list[Any]:
        """Every tensor the slots allocated (K/V buffers, slot state, guard ids)."""
        state = [getattr(self, n) for n in self._STATE]
        return [t for t in [*self.k, *self.v, *state] if t is not None]

    def held_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.device_tensors())

    def kv_bytes(self) -> int:
        """Bytes the K/V buffers take once allocated (the same before the first prefill)."""
        per = self.capacity * self.kv_heads * self.max_len * self.head_dim * self.dtype.itemsize
        return 2 * self.layers * per

    def release(self) -> None:
        """Drop every device tensor, so nothing outlives the decoder even if a caller holds it."""
        self.k.clear()
        self.v.clear()
        self.parked.clear()
        for name in self._STATE:
            setattr(self, name, None)
        self.mutable = []

    # --- pages in and out --------------------------------------------------------------------------
    def fill(self, idx: Any, ids: Any, prompt_len: int, guard_start: int, caps: Sequence[int]) -> None:
        """Device state of pages just prefilled into slots ``idx`` (their K/V rows are written)."""
        import torch

        p = prompt_len
        self.seq[idx, :p] = ids
        self.kv_len[idx] = p
        self.prompt_len[idx] = p
        self.guard_start[idx] = guard_start
        self.gen_count[idx] = 0
        self.stop_code[idx] = 0
        self.done[idx] = False
        self.active[idx] = True
        self.max_new[idx] = torch.tensor(list(caps), dtype=torch.long, device=self.device)

    def occupy(
        self, slots: Sequence[int], keys: Sequence[Any], prompt_len: int, t0: float, now: float
    ) -> None:
        """Host side of an admission: the slots now hold these pages (first token at ``now``)."""
        for s, key in zip(slots, keys, strict=True):
            self.slot_key[s] = key
            self.slot_t0[s] = now
            self.slot_ttft[s] = now - t0
            self.host_kv_len[s] = prompt_len

    def finished(self) -> list[tuple[int, DecodeResult]]:
        """Sync once; return finished pages and free their slots."""
        import torch

        busy = self.busy_slots
        if not busy:
            return []
        state = torch.stack([self.done.long(), self.kv_len, self.gen_count, self.stop_code, self.prompt_len])
        done, kv_len, gen, code, plen = state.cpu().tolist()
        now = time.perf_counter()
        out: list[tuple[int, DecodeResult]] = []
        for s in busy:
            self.host_kv_len[s] = kv_len[s]
            if not done[s]:
                continue
            p, n = plen[s], gen[s]
            toks = self.seq[s, p : p + n].tolist()
            res = DecodeResult(
                tokens=toks,
                stop=STOP_CODES.get(code[s], StopReason.LENGTH),
                prompt_len=p,
                first_token_s=self.slot_ttft[s],
                decode_s=now - self.slot_t0[s],
                key=self.slot_key[s],
            )
            out.append((s, res))
            self.slot_key[s] = None
        if out:
            idx = torch.tensor([s for s, _ in out], dtype=torch.long, device=self.device)
            self.active[idx] = False
        return out

    def drop(self, slots: Sequence[int]) -> None:
        """Stop decoding ``slots`` and free them (their pages were cancelled); no result is made."""
        import torch

        if not slots:
            return
        with torch.inference_mode():
            self.active[torch.tensor(list(slots), dtype=torch.long, device=self.device)] = False
        for s in slots:
            self.slot_key[s] = None

    # --- parking -----------------------------------------------------------------------------------
    _PAGE = (
        "seq",
        "kv_len",
        "gen_count",
        "max_new",
        "prompt_len",
        "guard_start",
        "stop_code",
        "active",
        "done",
    )

    def park(self, slot: int) -> None:
        """Take the page in ``slot`` out of the batch, with its K/V rows and state, and free the slot.

        Why: a small request that arrives while a long job holds every slot would wait for a page of that
        job to finish (a whole page's decode). Parking one of the job's pages for the small request's
        lifetime costs a copy of its valid K/V rows; ``unpark`` puts it back where it left off. The rows
        wait in host memory (~60 KB per token of the full model): the memory plan has no room for them on
        the GPU, and an out-of-memory error on the decoding thread would fail every page in the batch.
        """
        import torch

        with torch.inference_mode():
            n = min(int(self.kv_len[slot]) + 1, self.max_len)
            self.parked.append(
                {
                    "n": n,
                    "kv": [
                        (kc[slot, :, :n].to("cpu", copy=True), vc[slot, :, :n].to("cpu", copy=True))
                        for kc, vc in zip(self.k, self.v, strict=True)
                    ],
                    "state": {name: getattr(self, name)[slot].clone() for name in self._PAGE},
                    "host": (self.slot_key[slot], self.slot_t0[slot], self.slot_ttft[slot]),
                }
            )
            self.active[slot] = False
        self.slot_key[slot] = None

    def unpark(self, slot: int) -> None:
        """Put the oldest parked page into the free ``slot``."""
        import torch

        page = self.parked.pop(0)
        n = page["n"]
        with torch.inference_mode():
            for (kc, vc), (k, v) in zip(zip(self.k, self.v, strict=True), page["kv"], strict=True):
                kc[slot, :, :n] = k.to(kc.device)
                vc[slot, :, :n] = v.to(vc.device)
            for name, value in page["state"].items():
                getattr(self, name)[slot] = value
        self.slot_key[slot], self.slot_t0[slot], self.slot_ttft[slot] = page["host"]
        self.host_kv_len[slot] = int(page["state"]["kv_len"])

    def drop_parked(self, keys: set[int]) -> None:
        """Forget parked pages whose key's ``id`` is in ``keys`` (their callers went away)."""
        self.parked = [p for p in self.parked if id(p["host"][0]) not in keys]

    # --- compaction --------------------------------------------------------------------------------
    def compact(self) -> int:
        """Move the highest busy slot into the lowest free one when that shrinks the batch bucket.

        Why: the step runs over slots [0, b); a lone long page left in slot 30 would keep the
        32-row graph busy. Copies only the valid part of the KV rows. Returns the moves made.
        """
        import torch

        moves = 0
        while True:
            busy, free = self.busy_slots, self.free_slots
            if not busy or not free or min(free) > max(busy):
                return moves
            src, dst = max(busy), min(free)
            if batch_bucket(max(busy) + 1, self.capacity) == batch_bucket(len(busy), self.capacity):
                return moves
            with torch.inference_mode():  # the K/V buffers are inference tensors
                self._move(src, dst)
            moves += 1

    def _move(self, src: int, dst: int) -> None:
        n = self.host_kv_len[src] + 1
        for kc, vc in zip(self.k, self.v, strict=True):
            kc[dst, :, :n] = kc[src, :, :n]
            vc[dst, :, :n] = vc[src, :, :n]
        for t in (self.seq, self.kv_len, self.gen_count, self.max_new, self.prompt_len, self.guard_start):
            t[dst] = t[src]
        for t in (self.stop_code, self.done, self.active):
            t[dst] = t[src]
        self.active[src] = False
        for lst in (self.slot_key, self.slot_t0, self.slot_ttft, self.host_kv_len):
            lst[dst] = lst[src]
        self.slot_key[src] = None


__all__ = ["STOP_CODES", "SlotState"]
