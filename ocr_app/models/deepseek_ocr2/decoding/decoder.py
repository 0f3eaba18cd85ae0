"""Fast greedy decode for DeepSeek-OCR-2: the page decoder that ties slots, step and graphs together.

Why not ``generate``: on a GPU the default path is launch-bound (GUIDE §2: 77 tok/s on an H200, ~2 % of
memory bandwidth) and gains nothing from batching. Here every page owns a slot (``slots``: per-slot K/V
buffers, tokens and lengths), so pages of any prompt length decode together and a finished page frees
its slot for the next one (continuous batching, driven by ``scheduler``). ``step`` is one token for
every slot, all on the device; ``graphs`` captures it per batch bucket (and per length bucket where
the step attends through SDPA) and replays it (on CPU, or where graphs are off, the very same step runs
eagerly with the same buckets, so the results are identical). Stops are read every ``check_every`` steps.

This module keeps what joins them: admission (prefill is the model's own forward, with the vision pass
first so the K/V buffers do not add to its peak), a chunk of steps, the loop check, and what the
scheduler and the GPU panel read (free/busy slots, held bytes, ``describe``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from ocr_app.exceptions import ConfigError, EngineError
from ocr_app.models.deepseek_ocr2.attention_backends import without_cudnn_attention
from ocr_app.models.deepseek_ocr2.decoding.graphs import (
    BATCH_BUCKETS,
    CAPTURE_LOCK,
    DecodeGraphs,
    batch_bucket,
    capture_lock,
    length_bucket,
    release_cuda_workspaces,
)
from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeRequest, DecodeResult, DecoderOptions
from ocr_app.models.deepseek_ocr2.decoding.slots import SlotState
from ocr_app.models.deepseek_ocr2.decoding.step import DecodeStep, text_parts

logger = logging.getLogger(__name__)


def merge_model_inputs(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Merge per-page model inputs into one batch (prefill of several pages in one forward)."""
    import torch

    if len(items) == 1:
        return dict(items[0])
    keys = set().union(*items)
    out: dict[str, Any] = {}
    for k in keys:
        vals = [it.get(k) for it in items]
        if k == "num_local_patches":
            out[k] = [int(x) for v in vals for x in (v.tolist() if hasattr(v, "tolist") else v)]
        elif k == "mm_encoder_outputs":
            feats = [f for v in vals for f in v["image"].pooler_output]
            first = vals[0]["image"]
            out[k] = {"image": type(first)(pooler_output=feats)}
        elif all(v is None for v in vals):
            out[k] = None
        elif all(isinstance(v, torch.Tensor) for v in vals):
            out[k] = torch.cat(vals, 0)
        elif any(v is None for v in vals) and k == "pixel_values_local":
            out[k] = torch.cat([v for v in vals if v is not None], 0)
        else:
            raise ConfigError(f"cannot batch model input {k!r}")
    return out


class PageDecoder:
    """Slots, the decode step and its graphs. Not thread-safe: one thread (the scheduler's) drives it."""

    def __init__(
        self, model: Any, *, capacity: int, max_len: int, options: DecoderOptions, side_stream: Any = None
    ) -> None:
        """``side_stream``: the stream graph warm-ups run on (shared by a scheduler's decoders, see
        ``graphs.DecodeGraphs``)."""
        self.model = model
        self.options = options
        lm, head = text_parts(model)
        cfg = lm.config
        self.device = head.weight.device
        self.dtype = lm.embed_tokens.weight.dtype
        if capacity < 1:
            raise ConfigError("decoder capacity must be >= 1")
        limit = int(getattr(cfg, "max_position_embeddings", max_len))
        self.max_len = min(int(max_len), limit)
        self.capacity = int(capacity)
        self.slots = SlotState(
            capacity=self.capacity,
            max_len=self.max_len,
            layers=len(lm.layers),
            kv_heads=int(cfg.num_key_value_heads),
            head_dim=int(lm.layers[0].self_attn.head_dim),
            dtype=self.dtype,
            device=self.device,
            eos_ids=options.eos_ids,
            exempt_ids=options.guard.exempt_ids,
        )
        self.graphs = DecodeGraphs(self.device, options.graphs, self.slots.mutable, side_stream)
        self.step = DecodeStep(model, self.slots, options)
        self.steps = 0

    # --- what the scheduler and the GPU panel read -------------------------------------------------
    @property
    def use_graphs(self) -> bool:
        return self.graphs.enabled

    @property
    def fused(self) -> bool:
        return self.step.fused

    @property
    def capture_s(self) -> float:
        return self.graphs.capture_s

    @property
    def free_slots(self) -> list[int]:
        return self.slots.free_slots

    @property
    def busy_slots(self) -> list[int]:
        return self.slots.busy_slots

    @property
    def slot_key(self) -> list[Any]:
        """The page key each slot holds (None: free); the scheduler frees a slot by clearing it."""
        return self.slots.slot_key

    def release(self) -> None:
        """Drop graphs (their private pool goes with the last one), K/V buffers and the slot state, so
        nothing the decoder allocated outlives it even if a caller still holds the object."""
        self.graphs.release()
        self.slots.release()

    def device_tensors(self) -> list[Any]:
        """Every tensor this decoder allocated (K/V buffers, slot state, guard ids): what ``release``
        drops and ``held_bytes`` counts."""
        return self.slots.device_tensors()

    def held_bytes(self) -> int:
        """Bytes this decoder keeps allocated between requests: its tensors plus what its captured
        graphs keep allocated in their pool (the rest of a pool counts as reserved, not allocated)."""
        return self.slots.held_bytes() + self.graphs.held_bytes

    def kv_bytes(self) -> int:
        """Bytes the K/V buffers take once allocated (the same before the first prefill)."""
        return self.slots.kv_bytes()

    def describe(self) -> dict[str, Any]:
        return {
            "slots": self.capacity,
            "max_len": self.max_len,
            "graphs": self.graphs.sizes(),
            "held_mib": round(max(self.held_bytes(), self.kv_bytes()) / 2**20, 1),
            "capture_s": round(self.capture_s, 3),
            "fused_kernels": self.fused,
            "cuda_graphs": self.use_graphs,
        }

    # --- admission (prefill) -------------------------------------------------------------------
    def admit(self, requests: Sequence[DecodeRequest]) -> list[int]:
        """Prefill ``requests`` into free slots; return their slots. Raises if they do not fit."""
        import torch

        free = self.free_slots
        if len(requests) > len(free):
            raise EngineError(f"{len(requests)} pages for {len(free)} free decode slots")
        slots = free[: len(requests)]
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(requests):
            p = len(r.input_ids)
            if p + 1 > self.max_len:
                raise EngineError(f"prompt of {p} tokens leaves no room in a {self.max_len}-token context")
            groups.setdefault(p, []).append(i)
        with torch.inference_mode():
            for idxs in groups.values():
                for c in range(0, len(idxs), max(1, self.options.prefill_batch)):
                    part = idxs[c : c + max(1, self.options.prefill_batch)]
                    self._prefill([requests[i] for i in part], [slots[i] for i in part])
        return slots

    def _vision_first(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Run the vision encoder on pixel inputs now; the language prefill then takes the features."""
        pixels = extra.get("pixel_values")
        if pixels is None or extra.get("mm_encoder_outputs") is not None:
            return extra
        local = extra.get("pixel_values_local")
        with without_cudnn_attention(self.device):
            feats = self.model.get_image_features(
                pixel_values=pixels.to(self.device),
                pixel_values_local=None if local is None else local.to(self.device),
                num_local_patches=extra.get("num_local_patches"),
            )
        rest = {
            k: v
            for k, v in extra.items()
            if k not in ("pixel_values", "pixel_values_local", "num_local_patches")
        }
        return {**rest, "mm_encoder_outputs": {"image": feats}}

    def _prefill(self, reqs: list[DecodeRequest], slots: list[int]) -> None:
        import torch

        t0 = time.perf_counter()
        p = len(reqs[0].input_ids)
        ids = torch.tensor([list(r.input_ids) for r in reqs], dtype=torch.long, device=self.device)
        extra = self._vision_first(merge_model_inputs([r.model_inputs for r in reqs]))
        st = self.slots
        st.ensure_kv()
        with without_cudnn_attention(self.device):
            out = self.model(input_ids=ids, use_cache=True, logits_to_keep=1, **extra)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        idx = torch.tensor(slots, dtype=torch.long, device=self.device)
        for i in range(len(st.k)):
            layer = cache.layers[i]
            st.k[i][idx, :, :p] = layer.keys.to(self.dtype)
            st.v[i][idx, :, :p] = layer.values.to(self.dtype)
        logits = out.logits[:, -1, :].to(torch.float32)
        del cache, out, extra
        caps = [max(1, min(int(r.max_new_tokens), self.max_len - p)) for r in reqs]
        st.fill(idx, ids, p, 0 if self.options.guard.include_prompt else p, caps)
        run = torch.ones(len(slots), dtype=torch.bool, device=self.device)
        self.step.take_token(idx, st.seq[idx], logits, st.kv_len[idx], run, advance=False)
        if self.device.type == "cuda":  # this stream only: the engine's thread preprocesses beside it
            torch.cuda.current_stream(self.device).synchronize()
        now = time.perf_counter()
        st.occupy(slots, [r.key for r in reqs], p, t0, now)

    # --- decoding --------------------------------------------------------------------------------
    def run_chunk(self, steps: int | None = None, priority: int = 0, share: int = 0) -> None:
        """Decode up to ``steps`` (default ``check_every``) tokens for every running slot.

        ``priority``/``share``: slots [0, ``priority``) (a small request's pages) also get ``share`` steps
        of their own before each step of the whole batch, at the step time of their small bucket; the
        rest of the batch keeps decoding, slower by the small steps' time."""
        import torch

        busy = self.busy_slots
        if not busy:
            return
        k = steps or self.options.check_every
        b = batch_bucket(max(busy) + 1, self.capacity)
        small = batch_bucket(priority, self.capacity) if priority > 0 and share > 0 else b
        if self.step.length_free:  # lengths are read on the device: one graph per batch bucket
            lb = self.max_len
        else:
            need = max(self.slots.host_kv_len[s] for s in busy) + k * (1 + (share if small < b else 0)) + 1
            lb = length_bucket(need, self.options.len_step, self.max_len)
        with torch.inference_mode():
            if small < b:
                for _ in range(k):
                    self.graphs.run(self.step, small, lb, share)
                    self.graphs.run(self.step, b, lb, 1)
            else:
                self.graphs.run(self.step, b, lb, k)
            self.steps += k
            if self.options.loop.enabled:
                self.step.check_loops(b)

    def collect(self) -> list[tuple[int, DecodeResult]]:
        """Sync once; return finished pages and free their slots."""
        return self.slots.finished()

    def drop(self, slots: Sequence[int]) -> None:
        """Stop decoding ``slots`` and free them (their pages were cancelled); no result is made."""
        self.slots.drop(slots)

    def compact(self) -> int:
        """Move the highest busy slot into the lowest free one when that shrinks the batch bucket."""
        return self.slots.compact()

    def park(self, slot: int) -> None:
        """Take the page in ``slot`` out of the batch (``SlotState.park``); ``unpark`` resumes it."""
        self.slots.park(slot)

    def unpark(self, slot: int) -> None:
        self.slots.unpark(slot)

    @property
    def parked(self) -> list[Any]:
        """The keys of the parked pages, oldest first."""
        return [p["host"][0] for p in self.slots.parked]

    def drop_parked(self, keys: set[int]) -> None:
        self.slots.drop_parked(keys)


__all__ = [
    "BATCH_BUCKETS",
    "CAPTURE_LOCK",
    "DecodeRequest",
    "DecodeResult",
    "DecoderOptions",
    "PageDecoder",
    "batch_bucket",
    "capture_lock",
    "length_bucket",
    "merge_model_inputs",
    "release_cuda_workspaces",
]
