"""Fast greedy decode for DeepSeek-OCR-2: per-slot KV buffers, one CUDA graph per batch bucket.

Why not ``generate``: on a GPU the default path is launch-bound (GUIDE §2: 77 tok/s on an H200, ~2 % of
memory bandwidth) and gains nothing from batching. Here every page owns a slot in preallocated KV
buffers ``[slots, kv_heads, max_len, head_dim]`` with its own length, so pages of any prompt length
decode together and a finished page frees its slot for the next one (continuous batching, driven by
``scheduler``). The decode step is written over the model's own modules and weights (embedding,
RMSNorm, q/k/v/o projections, the rotary module, the MoE block through the configured experts
implementation, lm_head), so quantized drop-in modules work unchanged; only attention is ours (SDPA with
a per-row length mask over the slot buffers). Greedy choice, the no-repeat n-gram guard and the stop
rules are tensor ops on the device: no host sync per token; stops are read every ``check_every`` steps.

On CUDA the step has a fused twin (``_step_fused``, kernels in ``kernels``): same math in ~270
launches instead of ~950, which is what a launch-bound step needs (GUIDE §2, docs/PERFORMANCE.md).
It is used where the norms are the stock ones and no layer is hooked; quantized drop-ins
(``ocr_app.quant``) get the same fused routing and combine, with q/k/v and each SwiGLU's gate/up in one
W4 GEMV launch each; ``kernels="torch"`` keeps the module step. On CPU (or where graphs are off) the very same step runs
eagerly, with the same batch buckets, so the results are identical. Prefill (vision + prompt) is the
model's own forward, with the vision pass first so the K/V buffers do not add to its peak.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ocr_app.engines.deepseek.decoding.guard import GuardSpec, LoopSpec, ban_repeated_ngrams_, tail_loops
from ocr_app.exceptions import ConfigError, EngineError
from ocr_app.schema import StopReason

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 48, 64)
# Held while a decode graph is captured. Other threads that launch GPU work next to a running decoder
# (the engine's vision pass of the next pages) take it too, so nothing they do can land in, or break,
# a capture in progress.
CAPTURE_LOCK = threading.RLock()
_DEVICE_LOCKS: dict[str, threading.RLock] = {}
_DEVICE_LOCKS_GUARD = threading.Lock()


def capture_lock(device: Any) -> threading.RLock:
    """The capture lock of one GPU. Captures run in ``thread_local`` mode, so work on another GPU
    cannot break them: with one engine per GPU, GPU 1's vision pass need not wait for GPU 0's."""
    key = str(device)
    if key in ("cuda", "cuda:0"):  # the single-GPU case keeps the module-wide lock
        return CAPTURE_LOCK
    with _DEVICE_LOCKS_GUARD:
        return _DEVICE_LOCKS.setdefault(key, threading.RLock())


_STOP = {1: StopReason.END, 2: StopReason.LENGTH, 3: StopReason.REPETITION}
# decoders that own captured graphs: cuBLAS workspaces may be cleared only while none is alive (a captured
# graph keeps using the workspace pointer it was captured with)
_GRAPH_OWNERS: weakref.WeakSet = weakref.WeakSet()


def release_cuda_workspaces() -> bool:
    """Free cuBLAS/cuBLASLt workspaces (one per handle and stream, 32 MiB each on Hopper, allocated
    through the caching allocator and never returned by ``empty_cache``). Skipped while a decoder
    with captured graphs is alive. Returns whether they were cleared."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    if any(d._graphs for d in list(_GRAPH_OWNERS)):
        return False
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is None:  # pragma: no cover - older torch
        return False
    clear()
    return True


@dataclass
class DecodeRequest:
    """One page to decode: prompt ids (image tokens expanded) and the extra model inputs for prefill.

    ``model_inputs`` holds what the model's forward takes besides ``input_ids`` for this page alone:
    ``pixel_values`` / ``pixel_values_local`` / ``num_local_patches`` or ``mm_encoder_outputs``.
    """

    input_ids: Sequence[int]
    model_inputs: dict[str, Any] = field(default_factory=dict)
    max_new_tokens: int = 8192
    key: Any = None  # opaque, handed back with the result
    # what the scheduler's ``encoder`` turns into ``model_inputs`` on the decoding thread, right before
    # the page's prefill (the engine's preprocessed page: its vision pass runs there, see scheduler)
    payload: Any = None


@dataclass
class DecodeResult:
    tokens: list[int]  # generated ids, EOS included when it ended the page
    stop: StopReason
    prompt_len: int
    first_token_s: float = 0.0  # admission start → first token on the device
    decode_s: float = 0.0  # first token → finish (wall clock, shared with the batch)
    key: Any = None


@dataclass(frozen=True)
class DecoderOptions:
    """How the decoder runs. ``graphs``: "auto" (CUDA graphs on CUDA), "on", "off" (eager)."""

    guard: GuardSpec = field(default_factory=GuardSpec)
    loop: LoopSpec = field(default_factory=LoopSpec)
    eos_ids: tuple[int, ...] = ()
    check_every: int = 16
    graphs: str = "auto"
    kernels: str = "auto"  # "auto": fused Triton kernels on CUDA; "triton": force; "torch": module calls only
    len_step: int = 256  # attention length buckets are multiples of this
    prefill_batch: int = 4  # pages of equal prompt length prefilled in one forward


def batch_bucket(n: int, capacity: int) -> int:
    """Smallest bucket >= n (the capacity itself is always a bucket)."""
    for b in BATCH_BUCKETS:
        if b >= n and b <= capacity:
            return b
    return capacity


def length_bucket(n: int, step: int, max_len: int) -> int:
    """Attention length for ``n`` positions: a multiple of ``step`` growing ~25 % per bucket."""
    b = step
    while b < n:
        b = max(b + step, math.ceil(b * 1.25 / step) * step)
    return min(b, max_len)


def _text_parts(model: Any) -> tuple[Any, Any]:
    """(decoder text model, lm_head) of a DeepSeek-OCR-2 model."""
    inner = getattr(model, "model", None)
    lm = getattr(inner, "language_model", None)
    head = getattr(model, "lm_head", None)
    if lm is None or head is None:
        raise ConfigError(f"{type(model).__name__} is not a DeepSeek-OCR-2 model (no language_model/lm_head)")
    return lm, head


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
    """Slots, KV buffers and the decode step. Not thread-safe: one thread (the scheduler's) drives it."""

    def __init__(
        self, model: Any, *, capacity: int, max_len: int, options: DecoderOptions, side_stream: Any = None
    ) -> None:
        """``side_stream``: the stream graph warm-ups run on. Pass the same one to every decoder of a
        scheduler: each new stream that runs a cuBLAS call gets its own workspace (32 MiB on Hopper),
        which stays allocated until ``release_cuda_workspaces`` (a fresh stream per capture was the
        32 MiB-per-request growth of the product path)."""
        import torch

        self.model = model
        self.options = options
        self.lm, self.lm_head = _text_parts(model)
        cfg = self.lm.config
        self.device = self.lm_head.weight.device
        self.dtype = self.lm.embed_tokens.weight.dtype
        if capacity < 1:
            raise ConfigError("decoder capacity must be >= 1")
        limit = int(getattr(cfg, "max_position_embeddings", max_len))
        self.max_len = min(int(max_len), limit)
        self.capacity = int(capacity)
        attn0 = self.lm.layers[0].self_attn
        self.head_dim = int(attn0.head_dim)
        self.kv_heads = int(cfg.num_key_value_heads)
        self.heads = int(cfg.num_attention_heads)
        self._rope = sys.modules[type(attn0).__module__].apply_rotary_pos_emb
        dev, C, L = self.device, self.capacity, self.max_len
        # K/V buffers are allocated at the first prefill, after its vision pass (see ``_ensure_kv``)
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        z = lambda dt=torch.long: torch.zeros(C, dtype=dt, device=dev)  # noqa: E731
        self.seq = torch.zeros((C, L), dtype=torch.long, device=dev)
        self.kv_len, self.gen_count, self.max_new = z(), z(), z()
        self.prompt_len, self.guard_start = z(), z()
        self.stop_code = z()
        self.active = z(torch.bool)
        self.done = z(torch.bool)
        self._rows = torch.arange(C, device=dev)
        self._pos_ar = torch.arange(L, device=dev)
        self._eos = torch.tensor(options.eos_ids or (-1,), dtype=torch.long, device=dev)
        ex = options.guard.exempt_ids
        self._exempt = torch.tensor(ex, dtype=torch.long, device=dev) if ex else None
        self._mutable = [self.seq, self.kv_len, self.gen_count, self.stop_code, self.done]
        self.use_graphs = self._want_graphs(options.graphs)
        self._setup_kernels(options.kernels)
        self._graphs: dict[tuple[int, int], Any] = {}
        self._pool = torch.cuda.graph_pool_handle() if self.use_graphs else None
        self._side = side_stream
        # host mirrors (exact after each sync)
        self.slot_key: list[Any] = [None] * C
        self.slot_t0: list[float] = [0.0] * C
        self.slot_ttft: list[float] = [0.0] * C
        self.host_kv_len = [0] * C
        self.steps = 0
        self.capture_s = 0.0  # seconds spent capturing graphs (cold-start breakdown)
        self.graph_bytes = 0  # allocated memory the captured graphs keep (counted in ``held_bytes``)

    # --- setup ---------------------------------------------------------------------------------
    def _want_graphs(self, mode: str) -> bool:
        if mode not in ("auto", "on", "off"):
            raise ConfigError(f"graphs must be auto, on or off, not {mode!r}")
        cuda = self.device.type == "cuda"
        if mode == "on" and not cuda:
            raise ConfigError("CUDA graphs need a CUDA device")
        return cuda and mode != "off"

    def _setup_kernels(self, mode: str) -> None:
        """Pick the fused-kernel step where Triton runs and the modules are the stock ones."""
        from ocr_app.engines.deepseek.decoding import kernels as dk

        if mode not in ("auto", "triton", "torch"):
            raise ConfigError(f"kernels must be auto, triton or torch, not {mode!r}")
        want = mode == "triton" or (mode == "auto" and self.device.type == "cuda")
        if want and not dk.available():
            if mode == "triton":
                raise ConfigError("kernels='triton' needs the triton package")
            want = False
        layers = self.lm.layers
        norms = [self.lm.norm] + [
            n for ly in layers for n in (ly.input_layernorm, ly.post_attention_layernorm)
        ]
        # forward hooks on decoder layers (e.g. the fp16 overflow clamp) run only in the module step
        hooked = any(ly._forward_hooks or ly._forward_pre_hooks for ly in layers)
        self.fused = want and not hooked and all(dk.fusable_norm(n) for n in norms)
        self._fused_moe = [dk.moe_kind(ly.mlp) if self.fused else None for ly in layers]
        # quantised projections: q/k/v in one launch, a SwiGLU's gate/up in one launch
        self._qkv = [dk.quant_qkv(ly.self_attn) if self.fused else None for ly in layers]
        self._ffn = [
            (ly.mlp.shared_experts if kind else ly.mlp) if self.fused else None
            for ly, kind in zip(layers, self._fused_moe, strict=True)
        ]
        self._swiglu = [dk.quant_swiglu(f) if f is not None else None for f in self._ffn]
        if want and not self.fused:
            logger.info("decode: hooked layers or non-standard norms; using the module step")

    @property
    def free_slots(self) -> list[int]:
        return [i for i, k in enumerate(self.slot_key) if k is None]

    @property
    def busy_slots(self) -> list[int]:
        return [i for i, k in enumerate(self.slot_key) if k is not None]

    def release(self) -> None:
        """Drop graphs (their private pool goes with the last one), K/V buffers and the slot state, so
        nothing the decoder allocated outlives it even if a caller still holds the object."""
        self._graphs.clear()
        self.graph_bytes = 0
        self._pool = None
        self._side = None
        self.k.clear()
        self.v.clear()
        for name in self._STATE:
            setattr(self, name, None)
        self._mutable = []

    _STATE = (
        "seq", "kv_len", "gen_count", "max_new", "prompt_len", "guard_start", "stop_code", "active", "done",
        "_rows", "_pos_ar", "_eos", "_exempt",
    )  # fmt: skip

    def device_tensors(self) -> list[Any]:
        """Every tensor this decoder allocated (K/V buffers, slot state, guard ids): what ``release``
        drops and ``held_bytes`` counts."""
        state = [getattr(self, n) for n in self._STATE]
        return [t for t in [*self.k, *self.v, *state] if t is not None]

    def held_bytes(self) -> int:
        """Bytes this decoder keeps allocated between requests: its tensors plus what its captured
        graphs keep allocated in their pool (the rest of a pool counts as reserved, not allocated)."""
        return sum(t.numel() * t.element_size() for t in self.device_tensors()) + self.graph_bytes

    def kv_bytes(self) -> int:
        """Bytes the K/V buffers take once allocated (the same before the first prefill)."""
        per = self.capacity * self.kv_heads * self.max_len * self.head_dim * self.dtype.itemsize
        return 2 * len(self.lm.layers) * per

    def describe(self) -> dict[str, Any]:
        return {
            "slots": self.capacity,
            "max_len": self.max_len,
            "graphs": sorted(self._graphs),
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

    def _ensure_kv(self) -> None:
        """Allocate the slot K/V buffers once.

        Why lazily: the first page's vision pass (SAM's attention bias over all tiles) is the largest
        transient of a page; running it before these buffers exist keeps the one-page peak at or
        below ``generate``'s.
        """
        import torch

        if self.k:
            return
        shape = (self.capacity, self.kv_heads, self.max_len, self.head_dim)
        for _ in self.lm.layers:
            self.k.append(torch.zeros(shape, dtype=self.dtype, device=self.device))
            self.v.append(torch.zeros(shape, dtype=self.dtype, device=self.device))

    def _vision_first(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Run the vision encoder on pixel inputs now; the language prefill then takes the features."""
        pixels = extra.get("pixel_values")
        if pixels is None or extra.get("mm_encoder_outputs") is not None:
            return extra
        local = extra.get("pixel_values_local")
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
        self._ensure_kv()
        out = self.model(input_ids=ids, use_cache=True, logits_to_keep=1, **extra)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        idx = torch.tensor(slots, dtype=torch.long, device=self.device)
        for i in range(len(self.k)):
            layer = cache.layers[i]
            self.k[i][idx, :, :p] = layer.keys.to(self.dtype)
            self.v[i][idx, :, :p] = layer.values.to(self.dtype)
        logits = out.logits[:, -1, :].to(torch.float32)
        del cache, out, extra
        self.seq[idx, :p] = ids
        self.kv_len[idx] = p
        self.prompt_len[idx] = p
        self.guard_start[idx] = 0 if self.options.guard.include_prompt else p
        self.gen_count[idx] = 0
        self.stop_code[idx] = 0
        self.done[idx] = False
        self.active[idx] = True
        caps = [max(1, min(int(r.max_new_tokens), self.max_len - p)) for r in reqs]
        self.max_new[idx] = torch.tensor(caps, dtype=torch.long, device=self.device)
        run = torch.ones(len(slots), dtype=torch.bool, device=self.device)
        self._take_token(idx, self.seq[idx], logits, self.kv_len[idx], run, advance=False)
        if self.device.type == "cuda":  # this stream only: the engine's vision pass runs beside it
            torch.cuda.current_stream(self.device).synchronize()
        now = time.perf_counter()
        for s, r in zip(slots, reqs, strict=True):
            self.slot_key[s] = r.key
            self.slot_t0[s] = now
            self.slot_ttft[s] = now - t0
            self.host_kv_len[s] = p

    # --- the step --------------------------------------------------------------------------------
    def _take_token(self, rows, seq_rows, logits, seq_len, run, advance: bool) -> None:
        """Guard, greedy choice, bookkeeping and stop flags for ``rows``; all on the device.

        ``seq_rows`` is ``self.seq[rows]`` (a view in the step, so nothing [rows, max_len] is copied).
        """
        import torch

        guard_start = self.guard_start[rows]
        ban_repeated_ngrams_(logits, seq_rows, seq_len, guard_start, self.options.guard, self._exempt)
        if self.fused:
            from ocr_app.engines.deepseek.decoding import kernels as dk

            nxt = dk.argmax(logits)
        else:
            nxt = logits.argmax(-1)
        at = seq_len.clamp(max=self.max_len - 1)
        old = self.seq[rows, at]
        self.seq[rows, at] = torch.where(run, nxt, old)
        step = run.to(torch.long)
        gen = self.gen_count[rows] + step
        self.gen_count[rows] = gen
        if advance:
            self.kv_len[rows] = self.kv_len[rows] + step
        eos = run & (nxt[:, None] == self._eos[None, :]).any(-1)
        length = run & (gen >= self.max_new[rows])
        code = torch.where(eos, 1, torch.where(length, 2, self.stop_code[rows]))
        self.stop_code[rows] = code
        self.done[rows] = self.done[rows] | eos | length

    def _step(self, b: int, lb: int) -> None:
        """One token for slots [0, b) attending to positions [0, lb). Graph-capturable."""
        import torch
        import torch.nn.functional as F

        rows = self._rows[:b]
        pos = self.kv_len[:b].clone()
        run = self.active[:b] & ~self.done[:b]
        tok = self.seq[:b].gather(1, pos[:, None])
        h = self.lm.embed_tokens(tok)  # [b, 1, hidden]
        cos, sin = self.lm.rotary_emb(h, pos[:, None])
        mask = (self._pos_ar[:lb][None, :] <= pos[:, None])[:, None, None, :]
        gqa = self.heads != self.kv_heads
        for i, layer in enumerate(self.lm.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q = attn.q_proj(x).view(b, 1, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(b, 1, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(b, 1, -1, self.head_dim).transpose(1, 2)
            q, k = self._rope(q, k, cos, sin)
            kc, vc = self.k[i], self.v[i]
            kc[rows, :, pos] = k[:, :, 0]
            vc[rows, :, pos] = v[:, :, 0]
            o = F.scaled_dot_product_attention(
                q, kc[:b, :, :lb], vc[:b, :, :lb], attn_mask=mask, scale=attn.scaling, enable_gqa=gqa
            )
            h = h + attn.o_proj(o.transpose(1, 2).reshape(b, 1, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
            for hook in layer._forward_hooks.values():  # as if the layer's own forward had run
                out = hook(layer, (h,), h)
                h = h if out is None else out
        h = self.lm.norm(h)
        logits = self.lm_head(h[:, -1, :]).to(torch.float32)
        self._take_token(rows, self.seq[:b], logits, pos + 1, run, advance=True)

    def _step_fused(self, b: int, lb: int) -> None:
        """Same step as ``_step`` with fused Triton kernels (see ``kernels``). Graph-capturable."""
        import torch
        import torch.nn.functional as F

        from ocr_app.engines.deepseek.decoding import kernels as dk

        pos = self.kv_len[:b].clone()
        tok = self.seq[:b].gather(1, pos[:, None])
        h = self.lm.embed_tokens(tok[:, 0])  # [b, hidden]
        cos, sin = self.lm.rotary_emb(h, pos[:, None])
        keep = self._pos_ar[:lb][None, :] <= pos[:, None]
        mask = torch.zeros(keep.shape, dtype=h.dtype, device=h.device).masked_fill_(~keep, float("-inf"))
        mask = mask[:, None, None, :]
        gqa = self.heads != self.kv_heads
        pending, residual = h, None
        for i, layer in enumerate(self.lm.layers):
            attn = layer.self_attn
            ln1, ln2 = layer.input_layernorm, layer.post_attention_layernorm
            x, residual = dk.add_rmsnorm(pending, ln1.weight, ln1.variance_epsilon, residual)
            kc, vc = self.k[i], self.v[i]
            q = dk.rope_kv(
                *dk.project_qkv(attn, x, self._qkv[i]), cos, sin, pos, kc, vc,
                self.heads, self.kv_heads, self.head_dim,
            )  # fmt: skip
            o = F.scaled_dot_product_attention(
                q, kc[:b, :, :lb], vc[:b, :, :lb], attn_mask=mask, scale=attn.scaling, enable_gqa=gqa
            )
            a = attn.o_proj(o.transpose(1, 2).reshape(b, -1))
            x, residual = dk.add_rmsnorm(a, ln2.weight, ln2.variance_epsilon, residual)
            mlp = layer.mlp
            kind = self._fused_moe[i]
            if kind is not None:
                gate, ex = mlp.gate, mlp.experts
                idx, wt = dk.route(x, gate.weight, gate.top_k, gate.routed_scaling_factor)
                shared = dk.swiglu(self._ffn[i], x, self._swiglu[i])
                if kind == "float":
                    pending = dk.moe_experts(x, ex.gate_up_proj, ex.down_proj, idx, wt, shared=shared)
                else:
                    pending = dk.quant_moe_experts(x, ex, idx, wt, shared)
            elif self._swiglu[i] is not None:  # a quantised dense MLP
                pending = dk.swiglu(mlp, x, self._swiglu[i])
            else:
                pending = mlp(x[:, None, :])[:, 0, :]
        norm = self.lm.norm
        h, _ = dk.add_rmsnorm(pending, norm.weight, norm.variance_epsilon, residual)
        logits = self.lm_head(h).to(torch.float32)
        # guard, greedy choice and bookkeeping in 4 launches (the torch version is ~50 small kernels)
        dk.ngram_ban_(logits, self.seq, self.kv_len, self.guard_start, self.options.guard, self._exempt)
        nxt = dk.argmax(logits)
        dk.finish_token(
            nxt, self.seq, self.kv_len, self.gen_count, self.max_new, self.stop_code, self.done, self.active,
            self._eos, b,
        )  # fmt: skip

    def _run_step(self, b: int, lb: int) -> None:
        if self.fused:
            self._step_fused(b, lb)
        else:
            self._step(b, lb)

    def _capture(self, b: int, lb: int) -> Any:
        key = (b, lb)
        g = self._graphs.get(key)
        if g is not None:
            return g
        with capture_lock(self.device):
            return self._capture_locked(b, lb)

    def _capture_locked(self, b: int, lb: int) -> Any:
        import torch

        key = (b, lb)
        t0 = time.perf_counter()
        before = torch.cuda.memory_allocated(self.device)
        snap = [t.clone() for t in self._mutable]
        if self._side is None:
            self._side = torch.cuda.Stream(self.device)
        side = self._side
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            self._run_step(b, lb)  # warm-up: cuBLAS handles, workspace, lazy inits
        torch.cuda.current_stream(self.device).wait_stream(side)
        for t, c in zip(self._mutable, snap, strict=True):
            t.copy_(c)
        g = torch.cuda.CUDAGraph()
        # capture on this decoder's own stream: torch.cuda.graph's default capture stream is made once per
        # process on whichever GPU captured first, so a second GPU's graphs would be captured empty
        with torch.cuda.graph(g, pool=self._pool, stream=side, capture_error_mode="thread_local"):
            self._run_step(b, lb)
        self._graphs[key] = g
        _GRAPH_OWNERS.add(self)
        del snap
        # what the graph keeps allocated in its pool (its outputs): held on purpose, like the K/V slots.
        # Other threads launch no GPU work during a capture (capture lock), so the difference is ours.
        self.graph_bytes += max(0, torch.cuda.memory_allocated(self.device) - before)
        dt = time.perf_counter() - t0
        self.capture_s += dt
        logger.info("captured decode graph batch=%d len=%d in %.2fs", b, lb, dt)
        return g

    def run_chunk(self, steps: int | None = None) -> None:
        """Decode up to ``steps`` (default ``check_every``) tokens for every running slot."""
        import torch

        busy = self.busy_slots
        if not busy:
            return
        k = steps or self.options.check_every
        b = batch_bucket(max(busy) + 1, self.capacity)
        need = max(self.host_kv_len[s] for s in busy) + k + 1
        lb = length_bucket(need, self.options.len_step, self.max_len)
        with torch.inference_mode():
            if self.use_graphs:
                g = self._capture(b, lb)
                for _ in range(k):
                    g.replay()
            else:
                for _ in range(k):
                    self._run_step(b, lb)
            self.steps += k
            if self.options.loop.enabled:
                self._check_loops(b)

    def _check_loops(self, b: int) -> None:
        import torch

        run = self.active[:b] & ~self.done[:b]
        gen_start = self.prompt_len[:b]
        loops = run & tail_loops(self.seq[:b], self.kv_len[:b] + 1, gen_start, self.options.loop)
        self.stop_code[:b] = torch.where(loops, 3, self.stop_code[:b])
        self.done[:b] = self.done[:b] | loops

    def collect(self) -> list[tuple[int, DecodeResult]]:
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
                stop=_STOP.get(code[s], StopReason.LENGTH),
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

    def decode_all(self, requests: Sequence[DecodeRequest]) -> list[DecodeResult]:
        """Decode ``requests`` to the end (no scheduler): fill slots, step, refill, in order of input."""
        pending = list(enumerate(requests))
        results: dict[int, DecodeResult] = {}
        keys = {}
        while pending or self.busy_slots:
            free = self.free_slots
            if pending and free:
                batch, pending = pending[: len(free)], pending[len(free) :]
                reqs = []
                for i, r in batch:
                    keys[i] = r.key
                    reqs.append(DecodeRequest(r.input_ids, r.model_inputs, r.max_new_tokens, key=("__i", i)))
                self.admit(reqs)
            for _, res in self.collect():
                i = res.key[1]
                res.key = keys[i]
                results[i] = res
            if not pending:
                self.compact()
            self.run_chunk()
        return [results[i] for i in range(len(requests))]
