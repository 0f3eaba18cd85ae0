"""Find, load and describe DeepSeek-OCR-2 weights; choose device and dtype.

Why one module: the engine, ``ocr-app info`` and the engine registry must agree on where weights come
from (a local directory, the Hugging Face cache, or the hub) and on the exact words that tell a user how
to get them when they are missing. ``weights_status`` / ``weights_available`` never touch the network.

Quantized presets (``int8``, ``mixed``) load through a quantization backend: ``ocr_app.quant``'s
``PresetBackend`` when that package is importable (found on first use, no import-time registry), or
one registered with ``register_quant_backend``. Without one they raise ``EngineUnavailableError``.
Precision names, aliases and the ``auto`` rule live in ``precision.py``.

Two loaders (setting ``loader``): ``native`` builds the wing's own modules and processor without importing
transformers or torchvision (``native_weights``, ``native_processor``) wherever the graph decoder runs;
``transformers`` (and every ``generate`` load) goes through transformers' classes, the reference.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ocr_app.exceptions import ConfigError, EngineUnavailableError, ModelLoadError, WeightsNotFoundError
from ocr_app.models.deepseek_ocr2.precision import QUANT_PRESETS, TORCH_DTYPE_NAMES, canonical_precision
from ocr_app.models.deepseek_ocr2.sam_attention import DEFAULT_BUDGET_MB, bound_sam_attention
from ocr_app.models.deepseek_ocr2.sam_convs import matmul_convs
from ocr_app.models.deepseek_ocr2.sam_kernels import fuse_sam_layers
from ocr_app.settings import DEFAULT_MODEL

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

# Files a checkpoint needs; used to limit a hub download to what from_pretrained reads.
_ALLOW_PATTERNS = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "tokenizer*"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class QuantBackend(Protocol):
    """What a quantization backend provides to make a preset such as ``mixed`` loadable."""

    def compute_dtype(self, device: torch.device) -> torch.dtype:
        """Activation dtype of the quantized model on this device."""
        ...

    def load_model(self, model_dir: Path, device: torch.device, dtype: torch.dtype) -> Any:
        """Return the quantized ``DeepseekOcr2ForConditionalGeneration`` from a local checkpoint dir.

        A backend may also take keyword options (``cache_dir``, ``progress``); the loader passes those
        its ``load_model`` names."""
        ...


_QUANT_BACKENDS: dict[str, QuantBackend] = {}


def register_quant_backend(name: str, backend: QuantBackend) -> None:
    """Make the dtype preset ``name`` (``int8`` or ``mixed``) loadable through ``backend``."""
    if name not in QUANT_PRESETS:
        raise ConfigError(f"Unknown quantized preset '{name}'; known: {', '.join(QUANT_PRESETS)}.")
    _QUANT_BACKENDS[name] = backend


def _default_quant_backend(name: str) -> QuantBackend | None:
    """``ocr_app.quant``'s backend for ``name`` with this model's adapter and recipes
    (``quant_recipes``), or None when that package cannot be imported here."""
    try:
        from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
        from ocr_app.quant.pipeline import PresetBackend
    except ImportError as exc:
        logger.debug("no quantization package: %s", exc)
        return None
    return PresetBackend(name, ADAPTER)


def quant_backend(name: str) -> QuantBackend:
    """The registered backend for a quantized preset, or ``EngineUnavailableError`` saying why not."""
    if name not in _QUANT_BACKENDS and name in QUANT_PRESETS:
        backend = _default_quant_backend(name)
        if backend is not None:
            _QUANT_BACKENDS[name] = backend
    try:
        return _QUANT_BACKENDS[name]
    except KeyError:
        raise EngineUnavailableError(
            f"The '{name}' precision preset needs a quantization backend, and none is installed or "
            "registered. Use --dtype auto, bf16, fp16 or fp32."
        ) from None


# --- device and dtype ---------------------------------------------------------------------------
def resolve_device(setting: str) -> torch.device:
    """``auto`` → the first CUDA device when there is one, else the CPU; explicit names are checked."""
    import torch

    name = (setting or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"Unknown device '{setting}': use auto, cpu, cuda or cuda:N.") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise EngineUnavailableError(
                f"Device '{setting}' was requested but no CUDA GPU is available here."
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(
                f"Device '{setting}' does not exist: this machine has {torch.cuda.device_count()} CUDA device(s)."
            )
    elif device.type not in ("cpu", "mps"):
        raise ConfigError(f"Unsupported device '{setting}': use auto, cpu, cuda or cuda:N.")
    return device


def resolve_dtype(setting: str, device: torch.device) -> torch.dtype:
    """The compute dtype: ``auto`` = bf16 on CUDA with bf16 support, fp16 on older CUDA, fp32 on CPU.

    ``int8``/``mixed`` return their backend's compute dtype, or raise ``EngineUnavailableError`` when
    no backend is registered.
    """
    import torch

    name = canonical_precision(setting)
    if name == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    if name in TORCH_DTYPE_NAMES:
        return getattr(torch, TORCH_DTYPE_NAMES[name])
    return quant_backend(name).compute_dtype(device)


# --- where the weights are ----------------------------------------------------------------------
def _looks_like_path(model_id: str) -> bool:
    """Rule: an existing path, or anything that starts like a path or is not ``owner/name``, is a path."""
    if Path(model_id).expanduser().exists():
        return True
    if model_id.startswith(("/", "~", ".")) or "\\" in model_id:
        return True
    return not _HUB_ID.match(model_id)


def _hub_offline() -> bool:
    """HF_HUB_OFFLINE as set now (the library reads it once at import; users may set it later)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return True


def download_instructions(model_id: str) -> str:
    """The exact commands that get the weights and point ocr-app at them."""
    if _looks_like_path(model_id):
        repo, target = DEFAULT_MODEL, str(Path(model_id).expanduser())
    else:
        repo, target = model_id, "DIR"
    return (
        f"Download the weights once (about 6.4 GiB) with:\n"
        f"    hf download {repo} --local-dir {target}\n"
        f"then run with --model {target} (or set DEEPSEEK_OCR_MODEL={target})."
    )


def _has_weights(directory: Path) -> bool:
    return (directory / "config.json").is_file() and any(directory.glob("*.safetensors"))


def _main_snapshot(model_id: str, cache_dir: Path | None = None) -> Path | None:
    """The hub cache's snapshot of ``main`` (``models--OWNER--NAME/refs/main`` names it) when it holds the
    weights, read without huggingface_hub's download machinery: importing that is ~0.45 s of a cold start
    (its ``constants`` module, which resolves the cache folder from the environment, ~3 ms)."""
    from huggingface_hub import constants

    repo = Path(cache_dir or constants.HF_HUB_CACHE) / ("models--" + model_id.replace("/", "--"))
    try:
        commit = (repo / "refs" / "main").read_text().strip()
    except OSError:
        return None
    snapshot = repo / "snapshots" / commit
    return snapshot if commit and _has_weights(snapshot) else None


def _cached_snapshot(model_id: str, cache_dir: Path | None = None) -> Path | None:
    """The HF-cache snapshot directory of a hub id when its weights are there (no network): ``main``'s
    snapshot directly, else huggingface_hub's own lookup."""
    fast = _main_snapshot(model_id, cache_dir)
    if fast is not None:
        return fast
    try:
        from huggingface_hub import snapshot_download

        path = Path(
            snapshot_download(
                model_id, local_files_only=True, allow_patterns=_ALLOW_PATTERNS, cache_dir=cache_dir
            )
        )
    except Exception:  # not cached, partially cached, or an invalid id: all mean "not here"
        return None
    return path if _has_weights(path) else None


def resolve_model_dir(model_id: str, *, cache_dir: Path | None = None) -> Path:
    """A local directory with the checkpoint: the given one, the HF cache, or a fresh hub download.

    Raises ``WeightsNotFoundError`` with download instructions when none of these works.
    """
    if _looks_like_path(model_id):
        directory = Path(model_id).expanduser()
        if not directory.is_dir():
            raise WeightsNotFoundError(
                f"Model directory '{directory}' does not exist.\n{download_instructions(model_id)}"
            )
        if not _has_weights(directory):
            raise WeightsNotFoundError(
                f"Model directory '{directory}' has no DeepSeek-OCR-2 checkpoint (config.json and "
                f"*.safetensors).\n{download_instructions(model_id)}"
            )
        return directory
    cached = _cached_snapshot(model_id, cache_dir)
    if cached is not None:
        logger.info("using %s from the Hugging Face cache at %s", model_id, cached)
        return cached
    if _hub_offline():
        raise WeightsNotFoundError(
            f"Weights for '{model_id}' are not in the Hugging Face cache and the hub is offline "
            f"(HF_HUB_OFFLINE is set).\n{download_instructions(model_id)}"
        )
    try:
        from huggingface_hub import snapshot_download

        logger.info("downloading %s from the Hugging Face hub", model_id)
        path = Path(snapshot_download(model_id, allow_patterns=_ALLOW_PATTERNS, cache_dir=cache_dir))
    except Exception as exc:
        raise WeightsNotFoundError(
            f"Weights for '{model_id}' are not cached and could not be downloaded "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no details'}).\n"
            f"{download_instructions(model_id)}"
        ) from exc
    if not _has_weights(path):
        raise WeightsNotFoundError(
            f"'{model_id}' on the hub has no safetensors weights.\n{download_instructions(model_id)}"
        )
    return path


def weights_status(model_id: str, *, cache_dir: Path | None = None) -> str:
    """One line for ``ocr-app info``: local dir present / in HF cache at PATH / not downloaded.

    ``cache_dir`` overrides the Hugging Face hub cache (default: HF_HUB_CACHE).
    """
    if _looks_like_path(model_id):
        directory = Path(model_id).expanduser()
        if _has_weights(directory):
            size = sum(f.stat().st_size for f in directory.glob("*.safetensors"))
            return f"local directory {directory} ({size / 2**30:.2f} GiB of weights)"
        if directory.is_dir():
            return f"local directory {directory} has no checkpoint (config.json + *.safetensors)"
        return f"local directory {directory} does not exist"
    cached = _cached_snapshot(model_id, cache_dir)
    if cached is not None:
        return f"in HF cache at {cached}"
    return f"not downloaded (hf download {model_id} --local-dir DIR, then --model DIR)"


def weights_available(model_id: str, *, cache_dir: Path | None = None) -> bool:
    """Whether weights can be loaded without a download (local dir or HF cache; no network)."""
    if _looks_like_path(model_id):
        return _has_weights(Path(model_id).expanduser())
    return _cached_snapshot(model_id, cache_dir) is not None


# --- loading ------------------------------------------------------------------------------------
LOADERS = ("native", "transformers")


def native_load(loader: str, decoder: str, device: torch.device) -> bool:
    """Whether this load builds the native model: ``loader`` is ``native`` and the graph decoder will run
    (its decode step and prefill are all the native model serves; ``generate`` needs transformers')."""
    from ocr_app.models.deepseek_ocr2.decoding.adapter import wants_graph_decoder

    name = (loader or "native").strip().lower()
    if name not in LOADERS:
        raise ConfigError(f"loader must be one of {', '.join(LOADERS)}, not {loader!r}")
    return name == "native" and wants_graph_decoder(decoder, device)


def load_model(
    model_id: str,
    device: torch.device,
    dtype: torch.dtype,
    *,
    quant: str | None = None,
    vision_attn_mb: int = DEFAULT_BUDGET_MB,
    vision_fused: bool = True,
    quant_options: dict[str, Any] | None = None,
    prefetch: bool = False,
    loader: str = "native",
    decoder: str = "auto",
) -> tuple[Any, Any]:
    """Load ``(model, processor)`` onto ``device`` in ``dtype`` (or through a quantization backend).

    ``loader``/``decoder``: with ``native`` and a load the graph decoder will run (``native_load``), the
    wing's own modules and processor, weights read straight into device memory (``native_weights``),
    neither transformers nor torchvision imported; otherwise transformers' classes (the reference).
    Every precision gets the memory-bounded SAM attention (``sam_attention.py``, ``vision_attn_mb``);
    CUDA models also the fused SAM layers (``sam_kernels.py``, ``vision_fused``).
    ``quant_options`` go to the quantization backend's ``load_model`` where it accepts them.
    ``prefetch`` (transformers loader): read the safetensors files onto ``device`` in a background thread
    *before* transformers is imported (``weights.py``), so the import, the processor and the read overlap;
    a float checkpoint is then assigned to an empty model instead of going through ``from_pretrained``
    (a quantised one is handed to its backend). Checkpoints that need more (a float checkpoint quantised at
    load) load as before. The model carries ``ocr_load_breakdown``: seconds for the imports, the
    processor, the weights and each step under them (native: ``skeleton_s``, ``allocate_s``, ``read_s`` …;
    from a quantization backend: ``key_s``, ``read_s``, …), and ``ocr_loader`` (``native`` or
    ``transformers``).
    """
    import time

    directory = resolve_model_dir(model_id)
    native = native_load(loader, decoder, device)
    t0 = time.perf_counter()
    try:
        if native:
            model, processor, times = _load_native(directory, device, dtype, quant, quant_options)
        else:
            model, processor, times = _load_transformers(
                directory, device, dtype, quant, quant_options, prefetch
            )
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ModelLoadError(
            f"Could not load the model from {directory}: {type(exc).__name__}: {exc}"
        ) from exc
    model.eval()
    if type(model).__name__ not in MODEL_CLASSES:
        raise ModelLoadError(
            f"{directory} holds a {type(model).__name__}, not DeepseekOcr2ForConditionalGeneration "
            "(use the transformers-format checkpoint deepseek-community/DeepSeek-OCR-2)."
        )
    bound_sam_attention(model, vision_attn_mb)
    fuse_sam_layers(model, vision_fused)
    matmul_convs(model, vision_fused)
    steps = (getattr(model, "ocr_quant_info", None) or {}).get("load_breakdown") or {}
    model.ocr_load_breakdown = {**times, **steps, "total_s": time.perf_counter() - t0}
    # what was built (a float checkpoint quantised at load comes from transformers even on the native path)
    model.ocr_loader = "native" if type(model).__name__ == "DeepseekOcr2Native" else "transformers"
    logger.info("loaded %s on %s as %s (%s loader)", directory, device, dtype, model.ocr_loader)
    return model, processor


# the classes a load may return: transformers' and the native one (``native_model``), by name
MODEL_CLASSES = frozenset({"DeepseekOcr2ForConditionalGeneration", "DeepseekOcr2Native"})


def _load_native(
    directory: Path, device: torch.device, dtype: torch.dtype, quant: str | None, quant_options: dict | None
) -> tuple[Any, Any, dict[str, float]]:
    """The native model and processor. The checkpoint's reader thread starts first; the processor is built
    while it reads (the read releases the GIL); then the weights are waited for."""
    import time

    t0 = time.perf_counter()
    from ocr_app.models.deepseek_ocr2.native_processor import load_processor
    from ocr_app.models.deepseek_ocr2.native_weights import NativeLoad, native_skeleton

    after = (lambda: warm_libraries(device)) if device.type == "cuda" else None
    t_import = time.perf_counter()
    times: dict[str, float] = {"import_s": t_import - t0}
    if quant:
        backend = quant_backend(quant)
        early = _start_prefetch(directory, device, quant)  # a pre-quantised directory: read it now
        processor = load_processor(directory)
        t1 = time.perf_counter()
        options = {**(quant_options or {}), "skeleton": native_skeleton, "prefetch": early}
        model = backend.load_model(directory, device, dtype, **_accepted(backend.load_model, options))
        if early is not None:
            times.update(read_s=early.seconds or 0.0, prefetch_gib=round(early.nbytes / 1024**3, 3))
    else:
        load = NativeLoad(directory, device, dtype, after=after)
        processor = load_processor(directory)
        t1 = time.perf_counter()
        model = load.result()
        times.update(load.timings, prefetch_gib=round(load.nbytes / 1024**3, 3))
    if getattr(model.config, "image_token_id", None) is None:  # a config.json without the id
        model.config.image_token_id = processor.image_token_id
    times.update(processor_s=t1 - t_import, weights_s=time.perf_counter() - t1)
    return model, processor, times


def _load_transformers(
    directory: Path,
    device: torch.device,
    dtype: torch.dtype,
    quant: str | None,
    quant_options: dict | None,
    prefetch: bool,
) -> tuple[Any, Any, dict[str, float]]:
    """transformers' model and processor (``from_pretrained``, or an empty model and prefetched tensors)."""
    import time

    t0 = time.perf_counter()
    early = _start_prefetch(directory, device, quant) if prefetch else None
    import_model_machinery()
    from transformers import AutoModelForImageTextToText, AutoProcessor

    t_import = time.perf_counter()
    processor = AutoProcessor.from_pretrained(directory)
    t1 = time.perf_counter()
    if quant:
        backend = quant_backend(quant)
        options = {**(quant_options or {}), **({"prefetch": early} if early is not None else {})}
        model = backend.load_model(directory, device, dtype, **_accepted(backend.load_model, options))
    elif early is not None:
        model = _from_prefetch(directory, early, dtype, device)
    else:
        model = AutoModelForImageTextToText.from_pretrained(directory, dtype=dtype, device_map=str(device))
    times = {"import_s": t_import - t0, "processor_s": t1 - t_import, "weights_s": time.perf_counter() - t1}
    if early is not None:
        times.update(read_s=early.seconds or 0.0, prefetch_gib=round(early.nbytes / 1024**3, 3))
    return model, processor, times


def import_model_machinery() -> None:
    """Import transformers' model machinery (``transformers.modeling_utils``) without ``scipy.optimize``.

    Why: ``modeling_utils`` imports every loss module, and the DETR-family object-detection losses
    import ``scipy.optimize`` for their Hungarian matcher when scipy is installed: 0.32 s of a cold start
    on an H200 host, 10 % of the import's own time on the dev machine (``python -X importtime``), for
    training code no OCR path runs (nothing in this project uses scipy). transformers' scipy check
    answers "no" while those modules load and is put back at once; their matcher (training only) then
    cannot run in this process. No-op when the machinery or scipy is already loaded."""
    import sys

    if "transformers.modeling_utils" in sys.modules or "scipy.optimize" in sys.modules:
        return
    import transformers.utils as tf_utils

    real = tf_utils.is_scipy_available
    tf_utils.is_scipy_available = lambda: False
    try:
        import transformers.modeling_utils  # noqa: F401
    finally:
        tf_utils.is_scipy_available = real


def _start_prefetch(directory: Path, device: torch.device, quant: str | None) -> Any:
    """A ``WeightPrefetch`` of the checkpoint's files, or None where the load reads other files (a float
    checkpoint quantised at load, or its cached quantised weights)."""
    from ocr_app.models.deepseek_ocr2.weights import WeightPrefetch, checkpoint_files

    if quant and not (directory / "quant_recipe.json").is_file():
        return None
    files = checkpoint_files(directory)
    if not files:
        return None
    after = (lambda: warm_libraries(device)) if device.type == "cuda" else None
    return WeightPrefetch(files, device, after=after)


def _from_prefetch(directory: Path, early: Any, dtype: torch.dtype, device: torch.device) -> Any:
    """The float model from prefetched tensors: empty skeleton, transformers' names, assignment."""
    from transformers import AutoConfig, GenerationConfig

    from ocr_app.models.deepseek_ocr2.hf_prefetch import load_prefetched

    model = load_prefetched(AutoConfig.from_pretrained(directory), early, dtype, device)
    try:
        model.generation_config = GenerationConfig.from_pretrained(directory)
    except OSError:
        logger.debug("no generation_config.json in %s", directory)
    return model


def warm_libraries(device: torch.device) -> None:
    """First-call costs of the first page that run in C++ (few Python calls), paid on the reading thread
    while the main thread still imports: cuBLAS and cuDNN start-up, SDPA dispatch. (Triton's hash of its
    own installation, ~0.4 s, stays with the first kernel: it is Python work, and in this thread it
    slowed the import by as much as it saved.)"""
    import torch

    with torch.cuda.device(device):
        x = torch.randn(2, 4, 64, 64, device=device, dtype=torch.bfloat16)
        torch.nn.functional.scaled_dot_product_attention(x, x, x)
        torch.nn.functional.conv2d(x, torch.randn(4, 4, 3, 3, device=device, dtype=torch.bfloat16))
        (x[0, 0] @ x[0, 1]).sum().item()


def _accepted(fn: Any, options: dict[str, Any] | None) -> dict[str, Any]:
    """The ``options`` that ``fn`` takes as keywords (a backend written before an option existed works)."""
    import inspect

    if not options:
        return {}
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(options)
    return {k: v for k, v in options.items() if k in params}


__all__ = [
    "LOADERS",
    "MODEL_CLASSES",
    "QUANT_PRESETS",
    "QuantBackend",
    "download_instructions",
    "import_model_machinery",
    "load_model",
    "native_load",
    "quant_backend",
    "register_quant_backend",
    "resolve_device",
    "resolve_dtype",
    "resolve_model_dir",
    "weights_available",
    "weights_status",
]
