"""The DeepSeek-OCR-2 engine: page requests in, raw model text with grounding tags out.

Why this shape: three things are meant to be swapped without touching the rest, so each is one method:

* ``encode_images`` computes vision features (``model.get_image_features(...).pooler_output``); the
  engine passes them to the language model through ``mm_encoder_outputs``, so an optional
  ``vision_cache`` (``VisionCache`` protocol below; the runtime package implements it) can skip the
  encoder for a page it has seen. The cache key is a content hash of the page's preprocessed pixel
  tensors plus the model id and dtype.
* ``_decode(prepared)`` turns a ``PreparedBatch`` into ``[(token_ids, StopReason)]`` with greedy
  ``generate`` and the no-repeat guard; the graph decoder (``decoding``, one entry point:
  ``decoding.adapter.stream_pages``) replaces the whole batch loop of ``predict_stream`` instead.
* ``load``/``unload`` own the only references to model and processor, so unload really frees memory.

Timings (seconds, per batch the page ran in — pages of one batch share them): ``preprocess`` (mode,
image processor, tokenisation, cache keys), ``vision`` (encoder, 0 on cache hits), ``prefill``
(``generate`` start to the first logits call — approximate: it includes generate's setup), ``decode``
(the rest of ``generate``), ``total``.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ocr_app import gc_freeze
from ocr_app.engine_api import Engine
from ocr_app.exceptions import ConfigError, EngineError, OcrError
from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, page_end
from ocr_app.schema import EngineOutput, PageRequest, StopReason

if TYPE_CHECKING:
    import torch

    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler
    from ocr_app.models.deepseek_ocr2.modes import ModeSpec
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)


class VisionCache(Protocol):
    """Where vision features of already-seen pages are kept. Value: the page's feature tensors."""

    def get(self, key: str) -> list[torch.Tensor] | None: ...

    def put(self, key: str, value: list[torch.Tensor]) -> None: ...


@dataclass
class PreparedPage:
    """One request after preprocessing (CPU tensors straight from the processor)."""

    spec: ModeSpec
    input_ids: list[int]
    pixels: dict[
        str, Any
    ]  # pixel_values [1,3,S,S], pixel_values_local [k,3,T,T] | None, num_local_patches [k]
    vision_tokens: int
    max_new_tokens: int
    cache_key: str | None = None
    features: torch.Tensor | None = None  # [vision_tokens, hidden], filled by the cache or the encoder
    cache_hit: bool = False
    notes: list[str] = field(default_factory=list)
    vision_s: float = 0.0  # the page's share of its vision batch (graph decoder path)
    prompt: str = ""  # the resolved prompt (recorded as the output's ``used_prompt``)


@dataclass
class PreparedBatch:
    """Everything a decoder needs for one batch, on the model's device.

    ``input_ids``/``attention_mask`` are LEFT-padded to a common length; ``image_features[i]`` holds row
    i's features in the order its image tokens appear. A decoder fills ``timings["prefill"]`` and
    ``timings["decode"]`` and must stop row i after ``max_new_tokens[i]`` tokens or at an EOS id.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    image_features: list[torch.Tensor]
    max_new_tokens: list[int]
    prompt_lengths: list[int]
    eos_token_ids: list[int]
    pad_token_id: int
    guard: GuardSpec  # the no-repeat rule (one spec for this path and the graph decoder)
    timings: dict[str, float] = field(default_factory=dict)


def bounded_max_new_tokens(requested: int, prompt_length: int, max_positions: int) -> int:
    """``min(requested, context − prompt)``; ``ConfigError`` when the prompt leaves no room at all."""
    if requested < 1:
        raise ConfigError(f"max_new_tokens must be at least 1, got {requested}.")
    room = max_positions - prompt_length
    if room <= 0:
        raise ConfigError(
            f"The prompt takes {prompt_length} tokens (vision tokens included) and the model's context is "
            f"{max_positions}: nothing is left to generate. Shorten the custom prompt or use a mode with "
            "fewer vision tokens."
        )
    return max(1, min(int(requested), room))


def image_cache_key(image: Any, spec: ModeSpec, model_tag: str) -> str:
    """Content hash (BLAKE2b) of the page image as the processor receives it, the mode's processor
    arguments and the model: together they determine the pixel tensors. Why not hash the tensors: they
    are ~8× the image's bytes (float32, tiles) and, with GPU preprocessing, live on the GPU."""
    import json

    h = hashlib.blake2b(digest_size=20)
    h.update(model_tag.encode())
    h.update(json.dumps(spec.images_kwargs, sort_keys=True, default=str).encode())
    h.update(f"{image.mode}:{image.size}:{spec.max_side};".encode())
    h.update(image.tobytes())
    return h.hexdigest()


class _FirstStepTimer:
    """Logits processor that only notes when generate asks for the first token's logits (end of prefill)."""

    def __init__(self) -> None:
        self.first: float | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.first is None:
            if scores.is_cuda:
                import torch

                torch.cuda.synchronize(scores.device)
            self.first = time.perf_counter()
        return scores


class DeepSeekOcr2Engine(Engine):
    """DeepSeek-OCR-2: greedy decoding with the no-repeat guard, through the graph decoder on the native
    model (``loading``'s ``native`` loader) or transformers' ``generate`` on left-padded batches."""

    name = "deepseek"  # the engine kind (``ocr_app.choices``); "deepseek-ocr2" is an alias

    def __init__(
        self,
        settings: Settings,
        *,
        vision_cache: VisionCache | None = None,
        batch_size: int = 8,
        budget_bytes: int | None = None,
        gpu_probe: Callable[[], bool] | None = None,
    ):
        """``batch_size``: pages per ``generate`` call (the graph decoder plans its own pages in flight);
        ``budget_bytes``: GPU memory this process may use (None: the device's free memory);
        ``gpu_probe``: whether a GPU is present, answered without torch (``capabilities`` before a load)."""
        self.settings = settings
        self.gpu_probe = gpu_probe
        self.vision_cache = vision_cache
        self.batch_size = max(1, int(batch_size))
        self.budget_bytes = budget_bytes
        self.model: Any = None
        self.processor: Any = None
        self.device: torch.device | None = None
        self.dtype: torch.dtype | None = None
        self._exempt_ids: list[int] = []
        self._decoder: Any = None  # DecodeScheduler of the graph decoder (``scheduler()``), built on use
        self._decoder_lock = threading.Lock()  # two jobs starting at once share one scheduler
        self._holds_freeze = False  # this engine's share of the process-wide gc freeze (``gc_freeze``)
        self._graph_broken: str | None = None  # why the graph decoder was switched off, if it failed here
        # the resolved preset (bf16 … mixed) once loaded, why, where quantised weights came from
        # ("cache", "quantised now", …) and the seconds quantisation took
        self.precision: dict[str, Any] = {}
        # seconds of each step of the last load (processor, weights, key, read, to-device …)
        self.load_breakdown: dict[str, float] | None = None
        # (done, total, label) during a first-time quantisation and the kernel warm-up; the CLI/UI set
        # it (tqdm, gr.Progress)
        self.load_progress: Callable[[int, int, str], None] | None = None
        # what the last load's kernel warm-up did (``kernel_warmup.warm_up``: seconds, binaries, skip reason)
        self.kernel_warmup: dict[str, Any] = {}
        self._parked: Any = None  # ``park.Parked`` while the weights wait in host memory (idle)
        self.last_wake: dict[str, Any] | None = None  # bytes and seconds of the last wake
        self.page_warmup: dict[str, Any] | None = None  # what the last ``warm`` did (``page_warmup``)

    # --- lifecycle ------------------------------------------------------------------------------
    @property
    def is_loaded(self) -> bool:
        return self.model is not None and self._parked is None

    def load(self) -> None:
        if self.is_loaded:
            return
        if self._parked is not None:
            self._wake()
            return
        from ocr_app.models.deepseek_ocr2.decoding.guard import exempt_token_ids
        from ocr_app.models.deepseek_ocr2.loading import (
            QUANT_PRESETS,
            load_model,
            resolve_device,
            resolve_dtype,
        )

        device = resolve_device(self.settings.device)
        preset, reason = self._choose_precision(device)
        dtype = resolve_dtype(preset, device)
        quant = preset if preset in QUANT_PRESETS else None
        t0 = time.perf_counter()
        triton_setup = self._prepare_triton(device)
        model, processor = load_model(
            self.settings.model,
            device,
            dtype,
            quant=quant,
            vision_attn_mb=self.settings.vision_attn_mb,
            vision_fused=self.settings.vision_fused,
            quant_options={"cache_dir": self._quant_cache_dir(), "progress": self.load_progress},
            prefetch=getattr(self.settings, "weight_prefetch", False),
            loader=getattr(self.settings, "loader", "native"),
            decoder=self.settings.decoder,
        )
        self.precision = {"preset": preset, "reason": reason, **getattr(model, "ocr_quant_info", {})}
        self.model, self.processor, self.device, self.dtype = model, processor, device, dtype
        self.load_breakdown = getattr(model, "ocr_load_breakdown", None)
        # The model, torch and transformers are millions of long-lived objects: frozen out of every
        # later collection's sight, process-wide and shared with the other engines (``gc_freeze``);
        # ``unload`` releases it, so the model's own reference cycles are still freed then.
        if not self._holds_freeze:
            gc_freeze.hold()
            self._holds_freeze = True
        self._exempt_ids = exempt_token_ids(processor.tokenizer)
        self.kernel_warmup = self._warm_kernels(triton_setup)
        if self.load_breakdown is not None and "seconds" in self.kernel_warmup:
            self.load_breakdown = {**self.load_breakdown, "kernel_warmup_s": self.kernel_warmup["seconds"]}
        logger.info(
            "%s ready in %.1f s (exempt ids %s)", self.name, time.perf_counter() - t0, self._exempt_ids
        )

    def _prepare_triton(self, device: torch.device) -> dict[str, Any] | None:
        """Triton's on-disk cache in the project's cache dir and its stored installation hash, before
        anything compiles (``kernel_warmup.prepare_triton``); None if that failed (Triton's defaults)."""
        from ocr_app.models.deepseek_ocr2.kernel_warmup import prepare_triton

        try:
            return prepare_triton(self.settings, device)
        except Exception as exc:  # an unwritable cache dir: Triton keeps its own default
            logger.warning("Triton cache setup failed (%s); using Triton's defaults", exc)
            return None

    def _warm_kernels(self, prepared: dict[str, Any] | None) -> dict[str, Any]:
        """Compile every Triton kernel this model can launch now, before it is reported ready, not in
        the middle of the first document (``kernel_warmup``; a no-op off CUDA). A failure costs only
        that: the kernels then compile on first use, as they did before."""
        from ocr_app.models.deepseek_ocr2.kernel_warmup import warm_up

        if prepared is None:
            return {"skipped": "Triton cache setup failed"}
        try:
            return warm_up(self, self.load_progress, prepared)
        except Exception as exc:
            _free_after_oom(exc)
            logger.warning("kernel warm-up failed; kernels compile on first use", exc_info=exc)
            return {"error": f"{type(exc).__name__}: {exc}"[:300]}

    def preload(self) -> None:
        """Load, then ``warm``: what a server calls before serving."""
        self.load()
        self.warm()

    def warm(self) -> dict[str, Any]:
        """After a preload: blank pages through the product path so a server's first document does not
        pay first calls (``page_warmup``). Off where no graph decoder runs or ``preload_warmup`` is
        false; a failure is logged and costs only the warm-up."""
        from ocr_app.models.deepseek_ocr2.decoding.adapter import wants_graph_decoder
        from ocr_app.models.deepseek_ocr2.page_warmup import warm_pages

        if not getattr(self.settings, "preload_warmup", True):
            report: dict[str, Any] = {"skipped": "off (preload_warmup = false)"}
        elif not self.is_loaded:
            report = {"skipped": "not loaded"}
        elif not wants_graph_decoder(self.settings.decoder, self.device) or self._graph_broken is not None:
            report = {"skipped": "no graph decoder (generate warms nothing ahead)"}
        else:
            try:
                report = warm_pages(self)
            except Exception as exc:
                _free_after_oom(exc)
                logger.warning(
                    "preload warm-up failed; the first document pays its first calls", exc_info=exc
                )
                report = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        self.page_warmup = report
        return report

    def resolve_precision(self, device: torch.device) -> str:
        """The precision this load runs in: the one resolver (``precision.py``) with torch's facts."""
        return self._choose_precision(device)[0]

    def _choose_precision(self, device: torch.device) -> tuple[str, str]:
        """The preset to load and why ("4.0 GiB budget → mixed"); ``auto`` reads the memory budget."""
        from ocr_app.models.deepseek_ocr2 import precision

        bf16, budget_bytes, source = True, precision.budget_bytes_from_settings(self.settings), device.type
        if device.type == "cuda":
            import torch

            from ocr_app.models.deepseek_ocr2.budget import resolve_budget

            bf16 = torch.cuda.is_bf16_supported()
            budget = resolve_budget(self.settings, device)
            budget_bytes, source = budget.bytes, budget.source
        chosen = precision.resolve_precision(
            self.settings.dtype, device_kind=device.type, bf16_supported=bf16, budget_bytes=budget_bytes
        )
        reason = precision.precision_reason(self.settings.dtype, chosen, source)
        logger.info("precision %s: %s", chosen, reason)
        return chosen, reason

    def _quant_cache_dir(self):
        """Where streamed quantised weights are kept (``<cache_dir>/quantized``); None turns it off."""
        return self.settings.cache_dir if getattr(self.settings, "quant_cache", True) else None

    def capabilities(self):
        """With the graph decoder, concurrent conversions share its batches (``BATCHED_JOBS`` at
        once); ``generate`` runs one conversion's pages at a time. Known without loading the model."""
        from ocr_app.models.deepseek_ocr2.capabilities import BATCHED_JOBS, deepseek_capabilities
        from ocr_app.models.deepseek_ocr2.decoding.adapter import wants_graph_decoder

        jobs = 1
        if wants_graph_decoder(self.settings.decoder, self._expected_device_kind()):
            jobs = min(BATCHED_JOBS, max(1, int(getattr(self.settings, "decode_max_slots", 1))))
        return deepseek_capabilities(self.name, concurrent_jobs=jobs)

    def _expected_device_kind(self) -> str:
        """The device kind the model runs (or would run) on, without importing torch: ``auto`` asks the
        ``gpu_probe`` the composition root passed in (NVML / the driver), else torch if loaded."""
        if self.device is not None:
            return self.device.type
        setting = (self.settings.device or "auto").strip().lower().split(",")[0]
        if setting != "auto":
            return setting.split(":")[0]
        if self.gpu_probe is not None:
            return "cuda" if self.gpu_probe() else "cpu"
        torch = sys.modules.get("torch")
        return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"

    def park(self) -> None:
        """Idle on a GPU: free the device (the decoder's slots and graphs, the weights' device memory,
        cached blocks and cuBLAS workspaces) but keep the weights in pinned host memory, so the next
        ``load`` is one host-to-GPU copy (``park.py``). Off a GPU, or with ``idle_park`` off: ``unload``."""
        if self.model is None or self._parked is not None:
            return
        if self.device is None or self.device.type != "cuda" or not getattr(self.settings, "idle_park", True):
            self.unload()
            return
        import torch

        from ocr_app.models.deepseek_ocr2.decoding.decoder import release_cuda_workspaces
        from ocr_app.models.deepseek_ocr2.park import park

        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None
        parked = park(self.model, self.device)
        if not parked.bytes:  # nothing of the model was on the device: a park would free nothing
            logger.warning("parking %s moved no tensor off %s; unloading instead", self.name, self.device)
            self.unload()
            return
        self._parked = parked
        gc.collect()
        torch.cuda.empty_cache()
        release_cuda_workspaces()

    def _wake(self) -> None:
        """The parked weights back on the device: one copy; the decoder and its graphs are rebuilt on
        the first request, Triton's kernels are still loaded."""
        from ocr_app.models.deepseek_ocr2.park import wake

        t0 = time.perf_counter()
        parked, self._parked = self._parked, None
        try:
            self.last_wake = wake(parked)
        except BaseException:
            self._parked = parked  # still parked (a full GPU, say): ``unload`` drops it, or a retry wakes
            raise
        logger.info("%s woke in %.2f s", self.name, time.perf_counter() - t0)

    def unload(self) -> None:
        """Drop everything that holds device memory: the decoder (its worker, K/V slots, graphs and
        their pool, guard buffers), the model (with the SAM rel-pos tables cached on its modules) and
        the processor; then the allocator cache and the cuBLAS workspaces go back to the driver."""
        was_cuda = self.device is not None and self.device.type == "cuda"
        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None
        self.model = None
        self.processor = None
        if self._parked is not None:  # its page-locked host block goes back (unregistered) with it
            self._parked.release()
        self._parked = None
        self.precision = {}  # the next load resolves again (free memory may have changed)
        if self._holds_freeze:  # see ``load``: the model's cycles must be visible to this collection
            self._holds_freeze = False
            gc_freeze.release()
        else:
            gc.collect()
        if was_cuda:
            import torch

            from ocr_app.models.deepseek_ocr2.decoding.decoder import release_cuda_workspaces

            torch.cuda.empty_cache()
            release_cuda_workspaces()

    def smaller_footprints(self, request: PageRequest) -> list[PageRequest]:
        """Fewer tiles, then the global view (``modes.smaller_modes``): the OOM ladder's steps."""
        from dataclasses import replace

        from ocr_app.models.deepseek_ocr2.modes import smaller_modes

        return [replace(request, mode=m) for m in smaller_modes(request.mode, request.page.image)]

    def cap_memory(self) -> None:
        """With ``gpu_memory_gib`` set, cap this process's CUDA memory at the budget before loading, so
        the model, its quantisation and every page plan within it (``budget.py``)."""
        if getattr(self.settings, "gpu_memory_gib", None) is None:
            return
        dev = (getattr(self.settings, "device", "auto") or "auto").strip().lower()
        if dev == "auto":
            import torch

            dev = "cuda" if torch.cuda.is_available() else "cpu"
        if not dev.startswith("cuda"):
            return
        from ocr_app.models.deepseek_ocr2.budget import apply_cap, resolve_budget

        apply_cap(resolve_budget(self.settings, dev), dev)

    def resident_bytes(self) -> int:
        """Device memory kept on purpose between requests beyond the weights (the decoder's slots):
        the memory log does not count it as a leak."""
        sched = self._decoder
        return sched.resident_bytes() if sched is not None else 0

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "loaded": self.is_loaded,
            "model": self.settings.model,
            "device": str(self.device) if self.device else self.settings.device,
            "dtype": str(self.dtype).replace("torch.", "") if self.dtype else self.settings.dtype,
            "precision": self.precision.get("preset") or self.settings.dtype,
            "batch_size": self.batch_size,
            "vision_cache": self.vision_cache is not None,
            "precision_reason": self.precision.get("reason"),
            "quant_source": self.precision.get("source"),
            "quantize_seconds": self.precision.get("quantize_seconds"),
            "load_breakdown": self.load_breakdown,
            "loader": getattr(self.model, "ocr_loader", None),
            "kernel_warmup": self.kernel_warmup or None,
            "page_warmup": self.page_warmup,
            "budget_gib": None if self.budget_bytes is None else round(self.budget_bytes / 1024**3, 2),
            "decoder": self._decoder.describe() if self._decoder is not None else None,
            # host memory the idle weights hold (``park``): stated in ``ocr-app info``
            "parked_gib": None if self._parked is None else round(self._parked.bytes / 2**30, 3),
            "last_wake": self.last_wake,
        }

    # --- prediction -----------------------------------------------------------------------------
    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        outputs: list[EngineOutput] = [None] * len(requests)  # type: ignore[list-item]
        for i, out in self.predict_stream(requests):
            outputs[i] = out
        return outputs

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Yield ``(index, output)`` as pages finish, each with clean raw text and its blocks
        (``grounding.finish_output``: the wing parses its own output). ``requests`` is pulled lazily;
        only page sizes are kept until their page is yielded."""
        from ocr_app.models.deepseek_ocr2.grounding import finish_output

        source = iter(requests)
        first = next(source, None)
        if first is None:  # nothing to do: do not load the model
            return
        sizes: dict[int, tuple[int, int]] = {}

        def pulled() -> Iterator[PageRequest]:
            for n, req in enumerate(itertools.chain([first], source)):
                sizes[n] = req.page.size
                yield req

        for i, out in self._stream_raw(pulled()):
            width, height = sizes.pop(i)
            yield i, finish_output(out, width, height)

    def _stream_raw(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Yield ``(index, output)`` as pages finish. ``requests`` is pulled lazily (a converter can
        render pages as they are needed): the graph decoder keeps its slots full from it; ``generate``
        takes ``batch_size`` pages at a time."""
        import torch

        it = iter(requests)
        first = next(it, None)
        if first is None:
            return  # nothing to do: do not load the model for it
        self.load()
        if self.device is not None and self.device.type == "cuda" and self.device.index is not None:
            # this thread's current GPU = the model's (one engine per GPU: kernels and Triton launches
            # that take the current device must not land on cuda:0)
            torch.cuda.set_device(self.device)
        from ocr_app.models.deepseek_ocr2.decoding.adapter import wants_graph_decoder

        pulled: list[PageRequest] = []
        source = _recording(itertools.chain([first], it), pulled)
        done: set[int] = set()
        # a native model has no ``generate``: after a graph-decoder failure it keeps the graph decoder in
        # its plain form (module step, no CUDA graphs, no fused kernels), the same tokens
        graph = wants_graph_decoder(self.settings.decoder, self.device)
        if graph and (self._graph_broken is None or not hasattr(self.model, "generate")):
            try:
                yield from self._graph_stream(source, done, pulled)  # pages stream out as they finish
                return
            except Exception as exc:
                if isinstance(exc, (torch.OutOfMemoryError, OcrError)) or self._graph_broken is not None:
                    raise  # OOM goes to the runtime's recovery ladder; our own errors are the page's
                self._disable_graph_decoder(exc)
                if not hasattr(self.model, "generate"):
                    rest = itertools.chain(
                        ((i, pulled[i]) for i in range(len(pulled)) if i not in done), source
                    )
                    yield from self._graph_stream(rest, done, pulled)
                    return
        # generate: pages pulled but not finished by the graph decoder first, then the rest
        todo = itertools.chain(((i, pulled[i]) for i in range(len(pulled)) if i not in done), source)
        while chunk := list(itertools.islice(todo, self.batch_size)):
            with torch.inference_mode():
                outs = self._run_chunk([r for _, r in chunk])
            for (i, _), out in zip(chunk, outs, strict=True):
                if self._graph_broken is not None:
                    out.notes.append(f"decoder: generate (graph decoder off: {self._graph_broken})")
                yield i, out

    def _graph_stream(
        self, pairs: Iterable[tuple[int, PageRequest]], done: set[int], pulled: list[PageRequest]
    ) -> Iterator[tuple[int, EngineOutput]]:
        """The graph decoder over ``(index, request)`` pairs; finished pages are noted in ``done`` and their
        requests dropped from ``pulled`` (the page image is not kept)."""
        from ocr_app.models.deepseek_ocr2.decoding.adapter import stream_pages

        for i, out in stream_pages(self, self.scheduler(), pairs):
            done.add(i)
            pulled[i] = None  # type: ignore[call-overload]
            if self._graph_broken is not None:  # a native model after a failure of the full decoder
                out.notes.append(f"decoder: plain graph decoder (fused one off: {self._graph_broken})")
            yield i, out

    def scheduler(self) -> DecodeScheduler:
        """The graph decoder's scheduler for the loaded model, built on first use and kept between
        requests (its slots are sized once); ``unload`` closes it."""
        with self._decoder_lock:
            if self._decoder is None or self._decoder.model is not self.model:
                self._decoder = self.new_scheduler()
            return self._decoder

    def new_scheduler(self) -> DecodeScheduler:
        """A scheduler for the loaded model from the settings, not kept (``scheduler()`` keeps the
        engine's own; the kernel warm-up asks one what decoders it would build)."""
        from ocr_app.models.deepseek_ocr2.decoding.adapter import build_scheduler

        return build_scheduler(
            self,
            max_slots=int(getattr(self.settings, "decode_max_slots", 32)),
            budget_bytes=self.budget_bytes,
            small_request_batch=int(getattr(self.settings, "decode_small_request_batch", 0)),
            plain=self._graph_broken is not None,
            attention=str(getattr(self.settings, "decode_attention", "auto")),
        )

    def _disable_graph_decoder(self, exc: BaseException) -> None:
        """A graph-decoder failure (a driver or kernel problem on this GPU) must not fail conversions:
        log it once, switch to ``generate`` (same tokens, slower) for the rest of this engine's life; a
        native model (no ``generate``) switches to the plain graph decoder (no CUDA graphs, no fused
        kernels)."""
        self._graph_broken = f"{type(exc).__name__}: {exc}"[:200]
        instead = "transformers generate" if hasattr(self.model, "generate") else "the plain graph decoder"
        logger.error("graph decoder failed; using %s from now on", instead, exc_info=exc)
        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None

    def _run_chunk(self, requests: list[PageRequest]) -> list[EngineOutput]:
        t0 = time.perf_counter()
        pages = [self.preprocess(r) for r in requests]
        t1 = time.perf_counter()
        self.attach_features(pages)
        t2 = time.perf_counter()
        prepared = self.collate(pages)
        results = self._decode(prepared)
        total = time.perf_counter() - t0
        timings = {
            "preprocess": t1 - t0,
            "vision": t2 - t1,
            "prefill": prepared.timings.get("prefill", 0.0),
            "decode": prepared.timings.get("decode", 0.0),
            "total": total,
        }
        return [
            self.page_output(page, ids, stop, timings)
            for page, (ids, stop) in zip(pages, results, strict=True)
        ]

    def preprocess(self, request: PageRequest) -> PreparedPage:
        """Mode, optional downscale, image processor and tokenizer for one page."""
        from ocr_app.models.deepseek_ocr2.modes import apply_max_side, resolve_mode, vision_tokens
        from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt

        # the request carries the user's choice (preset name or text): the wing makes it a prompt
        prompt = resolve_prompt(request.prompt, locate_text=request.locate_text)
        if prompt.count("<image>") != 1:
            raise ConfigError(
                f"A DeepSeek-OCR-2 prompt must contain '<image>' exactly once; got {prompt!r}. "
                "Give a preset name or text without '<image>' (it is added)."
            )
        image = request.page.image
        if image.mode != "RGB":
            image = image.convert("RGB")
        spec = resolve_mode(request.mode, image)
        notes = [spec.reason] if spec.reason else []
        image = apply_max_side(spec, image)
        enc = self.processor(
            images=image, text=prompt, return_tensors="pt", **spec.images_kwargs, **self._preprocess_kwargs()
        )
        input_ids = enc["input_ids"][0].tolist()
        n_image = sum(1 for t in input_ids if t == self.processor.image_token_id)
        expected = vision_tokens(spec, image.size)
        if n_image != expected:  # a processor/mode disagreement would otherwise fail inside the model
            raise EngineError(
                f"Mode '{spec.name}' expects {expected} vision tokens but the processor produced {n_image}."
            )
        local = enc.get("pixel_values_local")
        if enc["pixel_values"].is_cuda:  # preprocessed on the GPU: hold them at the model's precision
            enc["pixel_values"] = enc["pixel_values"].to(self.dtype)
            local = None if local is None else local.to(self.dtype)
        pixels = {
            "pixel_values": enc["pixel_values"],
            "pixel_values_local": local,
            "num_local_patches": [int(x) for x in enc["num_local_patches"]],
        }
        requested = self.settings.max_new_tokens if request.max_new_tokens is None else request.max_new_tokens
        max_positions = int(self.model.config.text_config.max_position_embeddings)
        max_new = bounded_max_new_tokens(requested, len(input_ids), max_positions)
        if max_new < requested:
            notes.append(f"max_new_tokens bounded by the context: {max_new} (asked {requested})")
        key = None
        if self.vision_cache is not None and request.use_cache:
            # the resolved precision, not the torch dtype: bf16 and mixed both compute in bfloat16
            key = image_cache_key(
                image, spec, f"{self.settings.model}|{self.precision.get('preset')}|{self.dtype}"
            )
        return PreparedPage(spec, input_ids, pixels, n_image, max_new, key, notes=notes, prompt=prompt)

    def _preprocess_kwargs(self) -> dict[str, Any]:
        """``device=`` for the image processor when pages are preprocessed on the model's GPU: the
        resize, tiling and normalisation (~0.1 s of CPU per default-mode page) then take a few ms
        there, and the converter thread keeps the decoder fed. Only transformers' torchvision backend
        takes a device; the PIL backend stays on the CPU."""
        if (
            self.device is None
            or self.device.type != "cuda"
            or not getattr(self.settings, "preprocess_on_gpu", True)
            or "device" not in getattr(self.processor.image_processor, "valid_kwargs", {}).__annotations__
        ):
            return {}
        return {"device": self.device}

    def attach_features(self, pages: list[PreparedPage]) -> None:
        """Fill ``page.features`` from the cache, encoding the misses grouped by global-view size."""
        import torch

        misses: dict[tuple[int, ...], list[PreparedPage]] = {}
        for page in pages:
            cached = self.vision_cache.get(page.cache_key) if page.cache_key is not None else None
            if cached is not None:
                page.features = cached[0].to(self.device, self.dtype)
                page.cache_hit = True
                page.notes.append("vision features from cache")
            else:
                misses.setdefault(tuple(page.pixels["pixel_values"].shape), []).append(page)
        for group in misses.values():
            locals_ = [
                p.pixels["pixel_values_local"] for p in group if p.pixels["pixel_values_local"] is not None
            ]
            batch_inputs = {
                "pixel_values": torch.cat([p.pixels["pixel_values"] for p in group]),
                "pixel_values_local": torch.cat(locals_) if locals_ else None,
                "num_local_patches": [n for p in group for n in p.pixels["num_local_patches"]],
            }
            for page, feats in zip(group, self.encode_images(batch_inputs), strict=True):
                page.features = feats
                if page.cache_key is not None:
                    self.vision_cache.put(page.cache_key, [feats])
        for page in pages:
            page.pixels = {}  # not needed once encoded (on the GPU they would pin ~50 MB per page)
            if page.features is None or page.features.shape[0] != page.vision_tokens:
                got = None if page.features is None else page.features.shape[0]
                raise EngineError(
                    f"Vision features ({got}) do not match the {page.vision_tokens} image tokens."
                )

    def encode_images(self, batch_inputs: dict[str, Any]) -> list[torch.Tensor]:
        """Vision features, one ``[tokens, hidden]`` tensor per page, in order [tiles, global, separator]."""
        from ocr_app.models.deepseek_ocr2.attention_backends import without_cudnn_attention

        local = batch_inputs.get("pixel_values_local")
        with without_cudnn_attention(self.device):
            out = self.model.get_image_features(
                pixel_values=batch_inputs["pixel_values"].to(self.device, self.dtype),
                pixel_values_local=None if local is None else local.to(self.device, self.dtype),
                num_local_patches=list(batch_inputs["num_local_patches"]),
            )
        return list(out.pooler_output)

    def collate(self, pages: list[PreparedPage]) -> PreparedBatch:
        """Left-pad the prompts into one batch on the model's device."""
        import torch

        tok = self.processor.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        width = max(len(p.input_ids) for p in pages)
        ids = torch.full((len(pages), width), pad, dtype=torch.long)
        mask = torch.zeros((len(pages), width), dtype=torch.long)
        for i, p in enumerate(pages):
            ids[i, width - len(p.input_ids) :] = torch.tensor(p.input_ids, dtype=torch.long)
            mask[i, width - len(p.input_ids) :] = 1
        return PreparedBatch(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            image_features=[p.features for p in pages],
            max_new_tokens=[p.max_new_tokens for p in pages],
            prompt_lengths=[len(p.input_ids) for p in pages],
            eos_token_ids=self.eos_ids(),
            pad_token_id=int(pad),
            guard=self.guard_spec(),
        )

    def guard_spec(self) -> GuardSpec:
        """The no-repeat rule from the settings, with this tokenizer's exempt ids (both decode paths)."""
        return GuardSpec.from_settings(self.settings, self._exempt_ids)

    def eos_ids(self) -> list[int]:
        """Token ids that end a page (the generation config's, else the tokenizer's)."""
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.processor.tokenizer.eos_token_id
        return [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]

    def _decode(self, prepared: PreparedBatch) -> list[tuple[list[int], StopReason]]:
        """Greedy ``generate`` with the no-repeat guard; token ids exclude the EOS token. (The graph
        decoder does not go through here: it replaces the whole batch loop in ``predict_stream``.)"""
        from transformers import GenerationConfig, LogitsProcessorList
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        from ocr_app.models.deepseek_ocr2.decoding.guard import NoRepeatNGramGuard

        width = prepared.input_ids.shape[1]
        guard = NoRepeatNGramGuard(prepared.guard, prompt_length=width)
        timer = _FirstStepTimer()
        config = GenerationConfig(
            max_new_tokens=max(prepared.max_new_tokens),
            do_sample=False,
            num_beams=1,
            eos_token_id=prepared.eos_token_ids,
            pad_token_id=prepared.pad_token_id,
            bos_token_id=self.model.generation_config.bos_token_id,
            # generate() fills unset fields from the checkpoint's generation_config: pin what changes tokens
            no_repeat_ngram_size=0,
            repetition_penalty=1.0,
            min_new_tokens=0,
        )
        start = time.perf_counter()
        out = self.model.generate(
            input_ids=prepared.input_ids,
            attention_mask=prepared.attention_mask,
            mm_encoder_outputs={"image": BaseModelOutputWithPooling(pooler_output=prepared.image_features)},
            generation_config=config,
            logits_processor=LogitsProcessorList([timer, guard]),
        )
        end = time.perf_counter()
        first = timer.first if timer.first is not None else end
        prepared.timings["prefill"] = first - start
        prepared.timings["decode"] = end - first
        eos = set(prepared.eos_token_ids)
        results: list[tuple[list[int], StopReason]] = []
        for row, cap in zip(out[:, width:].tolist(), prepared.max_new_tokens, strict=True):
            results.append(page_end(row[:cap], eos))
        return results

    def page_output(
        self, page: PreparedPage, ids: list[int], stop: StopReason, timings: dict
    ) -> EngineOutput:
        """The output of one decoded page (either decode path): text with its tags, stop reason, notes."""
        tok = self.processor.tokenizer
        text = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        for marker in {tok.eos_token, tok.pad_token} - {None}:
            text = text.replace(marker, "")
        notes = list(page.notes)
        if stop is StopReason.REPETITION:
            notes.append("stopped at the token cap in a repetition loop")
        elif stop is StopReason.LENGTH:
            notes.append(f"stopped at the token cap ({page.max_new_tokens})")
        return EngineOutput(
            engine=self.name,
            raw_text=text,
            stop_reason=stop,
            num_tokens=len(ids),
            vision_tokens=page.vision_tokens,
            timings=dict(timings),
            notes=notes,
            used_prompt=page.prompt or None,
            used_mode=page.spec.name,  # what ran: ``auto`` resolved, or the OOM ladder's smaller mode
        )


def _free_after_oom(exc: BaseException) -> None:
    """After a warm-up that ran out of GPU memory: give the allocator's cache back (a failed warm-up
    must not leave the first document less room)."""
    if type(exc).__name__ == "OutOfMemoryError":
        import torch

        torch.cuda.empty_cache()


def _recording(
    requests: Iterable[PageRequest], pulled: list[PageRequest]
) -> Iterator[tuple[int, PageRequest]]:
    """``(index, request)`` pairs pulled lazily from ``requests``, each also appended to ``pulled``."""
    for req in requests:
        pulled.append(req)
        yield len(pulled) - 1, req


__all__ = [
    "DeepSeekOcr2Engine",
    "PreparedBatch",
    "PreparedPage",
    "VisionCache",
    "bounded_max_new_tokens",
    "image_cache_key",
]
