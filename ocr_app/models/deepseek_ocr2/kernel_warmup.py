"""Compile every Triton kernel the loaded model can launch at load, in parallel (issue 26, item 2).

Why: on a fresh machine the first document compiled 22–50 kernel binaries one after another on the
decoding thread (the first 16 pages took 8.7× as long as the same pages later, docs/PERFORMANCE.md
"The first page"): each vision geometry, prefill size and decode batch met for the first time needed
its own binaries. Row counts are no longer specialised (``do_not_specialize`` in the kernel modules),
which closes the set; this module compiles that set before the model is reported ready.

How the set is found: not from a list kept beside the code, but by a dry run of the real code while
``quant.launch.collecting`` takes each launch instead of running it:

* the vision encoder on one blank page per view geometry of the resolution modes
  (``modes.view_geometries``; batch sizes do not matter: the SAM kernels' sizes are not specialised);
* the language model at one token count per launch route of the quantised matmuls
  (``quant.ops.token_classes``; quantised models only: a float prefill launches no Triton kernel);
* the decode step at every batch bucket of every decoder the scheduler can build
  (``DecodeScheduler.reachable_capacities``, ``graphs.batch_buckets``).

Kernels write nothing during the dry run, so its results are garbage and dropped. On a GPU each launch
becomes ``kernel.warmup`` under Triton's ``AsyncCompileMode``: Triton computes the specialisation from
the real arguments (dtypes, alignment), skips what it has, and compiles the rest on a thread pool (LLVM
and ptxas run without the GIL). The binaries land in Triton's in-memory cache (the first document
launches them directly) and its on-disk cache, which lives under ``<cache dir>/triton/<GPU>-triton
<version>-<kernel sources>`` unless ``TRITON_CACHE_DIR`` is set. A marker per plan lets later processes
skip the dry run (their first launch of a kernel reads its binary from disk). Off CUDA: a no-op.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ocr_app.load_bar import compiling_label, loading_label

if TYPE_CHECKING:
    import torch

    from ocr_app.models.deepseek_ocr2.decoding.interface import DecoderOptions
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler

logger = logging.getLogger(__name__)


class WarmupSource(Protocol):
    """What the warm-up takes from the engine whose kernels it compiles (``DeepSeekOcr2Engine`` has
    these public members; the engine calls in here, never the other way round)."""

    model: Any
    settings: Any
    device: torch.device | None
    dtype: torch.dtype | None
    precision: dict[str, Any]
    batch_size: int

    def encode_images(self, batch_inputs: dict[str, Any]) -> list[Any]:
        """Vision features of a batch of pixel inputs (the real vision pass)."""

    def new_scheduler(self) -> DecodeScheduler:
        """A scheduler for the loaded model from the settings, not kept."""


KERNEL_MODULES = (
    "ocr_app.models.deepseek_ocr2.sam_triton",
    "ocr_app.models.deepseek_ocr2.decoding.triton_ops",
    "ocr_app.quant.triton_kernels",
)
DRY_LEN = 16  # slot length of the dry-run decoder: no kernel's binary depends on it (L is not specialised)
MARKER_DIR = "ocr-app-warm"
Progress = Callable[[int, int, str], None]
Submit = Callable[[Any, tuple, tuple, dict], Any]


@dataclass(frozen=True)
class WarmupPlan:
    """What the dry run runs: each entry reaches a different set of kernel binaries."""

    views: tuple[tuple[int, int], ...] = ()  # (global view side, tile side or 0) per vision pass
    prefill_tokens: tuple[int, ...] = ()  # token counts of the language-model forwards
    decoders: tuple[tuple[int, tuple[int, ...]], ...] = ()  # (slots, batch sizes of its decode steps)


# --- the plan ----------------------------------------------------------------------------------------
def plan_warmup(
    engine: WarmupSource, scheduler: DecodeScheduler | None = None, *, min_tokens: int | None = None
) -> WarmupPlan:
    """The dry run for the engine's loaded model: vision geometries (fused SAM layers only), prefill
    token counts (quantised language models only; from ``min_tokens``, default the smallest page's
    vision tokens, or 1 on the ``generate`` path whose decode steps run the same matmuls) and decode
    shapes (graph decoder only). ``scheduler``: the one whose decoders to plan for (default: a new one
    from the engine's settings)."""
    from ocr_app.models.deepseek_ocr2.decoding.adapter import wants_graph_decoder
    from ocr_app.models.deepseek_ocr2.decoding.graphs import batch_buckets
    from ocr_app.models.deepseek_ocr2.modes import tokens_per_view, view_geometries
    from ocr_app.models.deepseek_ocr2.sam_kernels import is_fused

    model = engine.model
    geometries = view_geometries()
    views = tuple(geometries) if is_fused(model) else ()
    graph = wants_graph_decoder(engine.settings.decoder, engine.device)
    sched = scheduler or engine.new_scheduler()
    decoders = tuple((c, tuple(batch_buckets(c))) for c in sched.reachable_capacities()) if graph else ()
    prefill: tuple[int, ...] = ()
    options = _quant_options(model)
    if options is not False:
        from ocr_app.quant.ops import token_classes

        text = model.config.text_config
        if min_tokens is None:
            min_tokens = min(tokens_per_view(side) for side, _ in geometries) + 1 if graph else 1
        per_forward = sched.options.prefill_batch if graph else engine.batch_size
        high = per_forward * int(text.max_position_embeddings)
        top_k = int(getattr(text, "num_experts_per_tok", 1) or 1)
        experts = int(getattr(text, "n_routed_experts", 1) or 1)
        prefill = tuple(token_classes(min_tokens, high, top_k, experts, options))
    return WarmupPlan(views, prefill, decoders)


def _quant_options(model: Any) -> Any:
    """The kernel options of the language model's quantised modules (None: the process default), or
    False when it has none (a float language model launches no Triton kernel in its prefill)."""
    for module in model.model.language_model.modules():
        if hasattr(module, "kernel_options"):
            return module.kernel_options
    return False


# --- the dry run -------------------------------------------------------------------------------------
def dry_run(
    engine: WarmupSource,
    plan: WarmupPlan,
    sink: Callable[[Any, tuple, tuple, dict], None],
    options: DecoderOptions | None = None,
) -> None:
    """Run ``plan`` through the engine's real code with every Triton launch handed to ``sink`` (and
    not run). ``options``: the decoder options of the decode steps (default: the scheduler's)."""
    import torch

    from ocr_app.quant.launch import collecting

    device = engine.device
    on_gpu = device is not None and device.type == "cuda"
    with torch.cuda.device(device) if on_gpu else nullcontext(), torch.inference_mode(), collecting(sink):
        for side, tile in plan.views:
            _vision(engine, side, tile)
        for tokens in plan.prefill_tokens:
            _prefill(engine.model, tokens)
        if plan.decoders:
            if options is None:
                options = engine.new_scheduler().options
            for slots, batches in plan.decoders:
                _decode(engine.model, options, slots, batches)


def _vision(engine: WarmupSource, side: int, tile: int) -> None:
    import torch

    from ocr_app.models.deepseek_ocr2.modes import MIN_TILES

    dev, dtype = engine.device, engine.dtype
    local = torch.zeros(MIN_TILES, 3, tile, tile, dtype=dtype, device=dev) if tile else None
    engine.encode_images(
        {
            "pixel_values": torch.zeros(1, 3, side, side, dtype=dtype, device=dev),
            "pixel_values_local": local,
            "num_local_patches": [MIN_TILES if tile else 0],
        }
    )


def _prefill(model: Any, tokens: int) -> None:
    import torch

    lm = model.model.language_model
    weight = lm.embed_tokens.weight
    x = torch.zeros(1, tokens, lm.config.hidden_size, dtype=weight.dtype, device=weight.device)
    lm(inputs_embeds=x, use_cache=False)


def _decode(model: Any, options: DecoderOptions, slots: int, batches: tuple[int, ...]) -> None:
    from ocr_app.models.deepseek_ocr2.decoding.decoder import PageDecoder

    dec = PageDecoder(model, capacity=slots, max_len=DRY_LEN, options=replace(options, graphs="off"))
    try:
        dec.slots.ensure_kv()
        for b in batches:
            dec.step(b, DRY_LEN)
    finally:
        dec.release()


# --- parallel compilation ----------------------------------------------------------------------------
class ParallelCompile:
    """The dry run's sink: hands each launch to ``submit`` (which starts its compile, or returns
    nothing when the binary exists) and keeps one future per distinct binary; ``wait`` reports them
    as they finish ("compiling GPU kernels (n/N)")."""

    def __init__(self, submit: Submit) -> None:
        self._submit = submit
        self._futures: dict[int, Future] = {}
        self.launches = 0
        self.failed = 0

    def __call__(self, kernel: Any, grid: tuple, args: tuple, kwargs: dict) -> None:
        self.launches += 1
        handle = self._submit(kernel, grid, args, kwargs)
        future = getattr(handle, "future", handle)  # Triton's FutureKernel wraps a concurrent Future
        if isinstance(future, Future):
            self._futures.setdefault(id(future), future)

    @property
    def variants(self) -> int:
        return len(self._futures)

    def kernels(self) -> list[Any]:
        """The compiled kernels of the finished compiles (failed ones left out)."""
        out = []
        for future in self._futures.values():
            if future.done() and future.exception() is None and future.result() is not None:
                out.append(future.result())
        return out

    def wait(self, progress: Progress | None = None) -> None:
        futures = list(self._futures.values())
        total = len(futures)
        if progress is not None and total:
            progress(0, total, compiling_label(0, total))
        for n, future in enumerate(as_completed(futures), 1):
            exc = future.exception()
            if exc is not None:  # the same launch would fail later: it is reported there, with its page
                self.failed += 1
                logger.warning("kernel warm-up: a compile failed: %s", str(exc).splitlines()[0][:300])
            if progress is not None:
                progress(n, total, compiling_label(n, total))


@contextmanager
def triton_async_compile(workers: int) -> Iterator[Submit]:
    """``submit(kernel, grid, args, kwargs)`` → Triton's ``FutureKernel`` (or the compiled kernel it
    has), compiling on ``workers`` threads; leaving waits for every compile and puts the binaries in
    Triton's in-memory cache."""
    import triton

    if not hasattr(triton, "AsyncCompileMode"):  # Triton < 3.4: one after another, still at load
        yield functools.partial(_serial_submit, {})
        return
    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="triton-compile") as pool:
        try:
            mode = triton.AsyncCompileMode(pool, ignore_errors=True)
        except TypeError:  # an older AsyncCompileMode: no ignore_errors (a failed compile raises on leaving)
            mode = triton.AsyncCompileMode(pool)
        with mode:
            yield lambda kernel, grid, args, kwargs: kernel.warmup(*args, grid=grid, **kwargs)


def _serial_submit(seen: dict[int, Future], kernel: Any, grid: tuple, args: tuple, kwargs: dict) -> Future:
    """Compile now (in this thread); a finished future per binary (the same one for a repeat)."""
    compiled = kernel.warmup(*args, grid=grid, **kwargs)
    done = seen.get(id(compiled))
    if done is None:
        done = seen[id(compiled)] = Future()
        done.set_result(compiled)  # the future keeps ``compiled`` alive: its id is not reused meanwhile
    return done


def load_kernels(
    kernels: list[Any], device: Any, workers: int, progress: Progress | None = None
) -> dict[str, Any]:
    """Make each compiled kernel launchable now, on ``workers`` threads: its module loaded on the GPU
    and its launcher built (``CompiledKernel._init_handles``, which Triton otherwise runs at the
    kernel's first launch).

    Why: Triton up to 3.6 builds a C launcher per kernel signature with the system C compiler at that
    first launch (0.2-0.35 s each; cached on disk after). On a fresh machine the first document paid
    15 of them one after another on the decoding thread, 4.2 of its 7.2 s (trace of the H200 run of
    ``46add54``, docs/PERFORMANCE.md "The first document"). The compiler runs outside the GIL, so
    here they overlap; a failure is left to the launch that would meet it (with its page)."""
    import torch

    todo = [k for k in kernels if callable(getattr(k, "_init_handles", None))]
    t0 = time.perf_counter()
    failed = 0
    if todo:

        def init(kernel: Any) -> None:
            with torch.cuda.device(device):
                kernel._init_handles()

        total = len(todo)
        with ThreadPoolExecutor(max(1, workers), thread_name_prefix="triton-load") as pool:
            futures = [pool.submit(init, k) for k in todo]
            for n, future in enumerate(as_completed(futures), 1):
                exc = future.exception()
                if exc is not None:
                    failed += 1
                    logger.debug("kernel warm-up: loading a kernel failed: %s", exc)
                if progress is not None:
                    progress(n, total, loading_label(n, total))
    return {"kernels_loaded": len(todo) - failed, "load_failed": failed,
            "load_s": round(time.perf_counter() - t0, 3)}  # fmt: skip


def compile_workers() -> int:
    """Threads for compiling: one per CPU this process may use (each compile is mostly LLVM and a
    ptxas subprocess, outside the GIL), at most 32."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(32, cpus))


# --- where the binaries go ---------------------------------------------------------------------------
def kernel_source_hash() -> str:
    """Hash of the project's Triton kernel sources (a change makes a new cache directory)."""
    h = hashlib.sha256()
    for name in KERNEL_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()[:12]


def cache_key(gpu_name: str, triton_version: str) -> str:
    """``<gpu>-triton<version>-<kernel sources>``, e.g. ``nvidia-h200-triton3.6.0-1a2b3c4d5e6f``."""
    gpu = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-") or "gpu"
    return f"{gpu}-triton{triton_version}-{kernel_source_hash()}"


def use_project_triton_cache(cache_root: Path, gpu_name: str) -> Path:
    """Point Triton's on-disk cache at ``<cache_root>/triton/<key>`` unless ``TRITON_CACHE_DIR`` is set
    (the user's choice wins); returns the directory in use."""
    import triton

    current = os.environ.get("TRITON_CACHE_DIR")
    if current:
        return Path(current)
    path = Path(cache_root) / "triton" / cache_key(gpu_name, triton.__version__)
    path.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = str(path)  # read by Triton at each compile
    return path


def reuse_triton_key(store: Path) -> bool:
    """Hand Triton a stored ``triton_key()`` when its installation is unchanged; returns whether it did.

    Why: Triton hashes its own installation (a ~500 MB library and its Python sources) once per
    process before the first compile or cache lookup: 0.38 s on an H200 host, on the first page's
    critical path. The value depends only on those files, so it is stored beside a fingerprint of every
    file under Triton's package (path, size, modification time: ~40 ms to take) and reused while the
    fingerprint matches; any reinstall or edit changes it and the key is computed again."""
    try:
        from triton.runtime import cache as tcache
    except ImportError:
        return False
    original = tcache.triton_key
    info = getattr(original, "cache_info", None)
    if info is None or info().currsize:  # already replaced, or already computed in this process
        return False
    fingerprint = _tree_fingerprint(Path(tcache.__file__).resolve().parents[1])
    path = Path(store) / "triton_key.json"
    value = None
    try:
        data = json.loads(path.read_text())
        if data.get("fingerprint") == fingerprint:
            value = data.get("key")
    except (OSError, ValueError):
        pass
    if not isinstance(value, str):
        value = original()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"fingerprint": fingerprint, "key": value}))
        except OSError as exc:
            logger.debug("could not store triton_key: %s", exc)
        return False
    tcache.triton_key = _Constant(value, original)
    return True


class _Constant:
    """Stands in for ``triton.runtime.cache.triton_key``: the stored value, and ``cache_info`` so a
    second ``reuse_triton_key`` sees it is in place."""

    def __init__(self, value: str, original: Any) -> None:
        self.value, self.__wrapped__ = value, original

    def __call__(self) -> str:
        return self.value

    def cache_info(self) -> Any:
        return self.__wrapped__.cache_info()._replace(currsize=1)


def _tree_fingerprint(root: Path) -> str:
    h = hashlib.sha256(str(root).encode())
    for directory, dirs, files in sorted(os.walk(root)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            st = os.stat(os.path.join(directory, name))
            h.update(f"{directory}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def cached_binaries(cache_dir: Path | None) -> int:
    """Compiled kernel binaries in a Triton cache directory (one ``<kernel>.json`` each)."""
    if cache_dir is None or not Path(cache_dir).is_dir():
        return 0
    return sum(1 for p in Path(cache_dir).glob("*/*.json") if not p.name.startswith("__grp__"))


# --- the entry point ---------------------------------------------------------------------------------
def prepare_triton(settings: Any, device: Any) -> dict[str, Any]:
    """Before the model loads (a first-time quantisation already launches kernels): Triton's on-disk
    cache under ``<cache dir>/triton/<key>`` and its stored installation hash. Returns what was set up
    (``{"skipped": why}`` where no Triton kernel runs); idempotent."""
    t0 = time.perf_counter()
    skip = _no_triton(device)
    if skip:
        return {"skipped": skip}
    import torch

    cache_root = Path(settings.cache_dir)
    cache_dir = use_project_triton_cache(cache_root, torch.cuda.get_device_name(device))
    reused = reuse_triton_key(cache_root / "triton")
    return {"cache_dir": str(cache_dir), "triton_key_reused": reused, "seconds": time.perf_counter() - t0}


def warm_up(
    engine: WarmupSource, progress: Progress | None = None, prepared: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Compile the loaded model's kernel set (CUDA with Triton; otherwise a no-op); returns what it did
    for ``describe()`` and the cold-start breakdown: seconds, launches collected, distinct binaries
    submitted, binaries new on disk, failures, or why it was skipped (no ``seconds`` where no Triton
    kernel runs at all). ``prepared``: ``prepare_triton``'s result when the load called it first."""
    if prepared is None:
        prepared = prepare_triton(engine.settings, engine.device)
    if "skipped" in prepared:
        return dict(prepared)
    t0 = time.perf_counter()
    import torch

    device = engine.device
    cache_dir = Path(prepared["cache_dir"])
    report: dict[str, Any] = {**prepared, "seconds": prepared["seconds"]}
    if not getattr(engine.settings, "kernel_warmup", True):
        report["skipped"] = "off (kernel_warmup = false): kernels compile on first use"
        report["seconds"] = round(report["seconds"] + time.perf_counter() - t0, 3)
        return report
    sched = engine.new_scheduler()
    plan = plan_warmup(engine, sched)
    report["plan"] = asdict(plan)
    # not ``*.json``: Triton's entries are ``<hash>/<kernel>.json``, and the bench counts those
    marker = cache_dir / MARKER_DIR / f"{_plan_hash(engine, plan, sched.options)}.done"
    if marker.is_file():
        report["skipped"] = "compiled by an earlier process (marker in the Triton cache)"
        report["seconds"] = round(report["seconds"] + time.perf_counter() - t0, 3)
        return report
    before = cached_binaries(cache_dir)
    with triton_async_compile(compile_workers()) as submit:
        compiler = ParallelCompile(submit)
        dry_run(engine, plan, compiler, sched.options)
        compiler.wait(progress)
    loaded = load_kernels(compiler.kernels(), device, compile_workers(), progress)
    torch.cuda.synchronize(device)
    report.update(
        **loaded,
        launches=compiler.launches,
        variants=compiler.variants,
        compiled=cached_binaries(cache_dir) - before,
        failed=compiler.failed,
        seconds=round(report["seconds"] + time.perf_counter() - t0, 3),
    )
    if not compiler.failed:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(json.dumps(report))
        except OSError as exc:
            logger.debug("could not write %s: %s", marker, exc)
    logger.info(
        "kernel warm-up: %d launches, %d binaries (%d compiled now, %d failed) in %.2f s",
        compiler.launches, compiler.variants, report["compiled"], compiler.failed, report["seconds"],
    )  # fmt: skip
    return report


def _no_triton(device: Any) -> str | None:
    """Why no Triton kernel compiles on ``device`` (None: they do)."""
    if device is None or getattr(device, "type", None) != "cuda":
        return "not a CUDA device (no Triton kernels run)"
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "Triton interpreter"
    try:
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed"
    return None


def _plan_hash(engine: WarmupSource, plan: WarmupPlan, options: DecoderOptions) -> str:
    """What decides the launches besides the kernel sources, Triton and the GPU (the cache directory's
    key): the plan, the model's configuration and precision, the decoder and kernel options."""
    from ocr_app.quant.options import default_kernel_options

    parts = [
        repr(plan),
        engine.precision.get("preset", ""),
        str(engine.dtype),
        engine.model.config.to_json_string(use_diff=False),
        repr(options),
        repr(_quant_options(engine.model)),
        repr(default_kernel_options()),
        str(getattr(engine.settings, "vision_fused", True)),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


__all__ = [
    "KERNEL_MODULES",
    "ParallelCompile",
    "WarmupPlan",
    "cache_key",
    "cached_binaries",
    "dry_run",
    "load_kernels",
    "plan_warmup",
    "prepare_triton",
    "reuse_triton_key",
    "triton_async_compile",
    "use_project_triton_cache",
    "warm_up",
]
