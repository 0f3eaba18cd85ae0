"""The composition root: which engines this machine can run, each wrapped in its runtime, and the default.

Why here, above ``engines/`` and ``runtime/``: an engine knows nothing about caches, memory managers or
other engines, and the runtime wrappers know nothing about DeepSeek; only this module knows both and
wires them. Each model engine is built as one explicit stack, outermost first::

    router (engine "auto")  →  result cache  →  model manager (+ OOM recovery)  →  engine

Nothing is built until it is asked for: ``EngineSet`` holds factories, so ``--engine textlayer`` (or
``auto`` on a born-digital PDF) never constructs, probes or imports the model stack (no torch). The
GPU question for ``auto`` goes to NVML / the driver (``runtime.vram.gpu_present``), never to torch.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ocr_app.choices import canonical_engine, registered_engines
from ocr_app.engines.registry import EngineSet
from ocr_app.exceptions import EngineUnavailableError

if TYPE_CHECKING:
    from ocr_app.engine_api import Engine
    from ocr_app.engines.registry import EngineFactory
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

# Order in which ``auto`` falls back when its first choice is not installed.
OCR_FALLBACKS = ("deepseek", "light")


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def build_engines(
    settings: Settings, extra: Mapping[str, Callable[[Settings], Engine]] | None = None
) -> EngineSet:
    """Declare (not build, not load) every engine that can run here, and pick the default.

    Engine kinds registered with a factory (``choices.register_engine``: a plug-in, or a test's own
    engine) and ``extra`` (name → factory) are offered exactly like the built-in ones: a factory called
    with the settings on first use.
    """
    factories: dict[str, EngineFactory] = {}
    unavailable: dict[str, str] = {}
    plugins = {kind.name: kind.factory for kind in registered_engines() if kind.factory is not None}
    for name, make in {**plugins, **(extra or {})}.items():
        factories[name] = functools.partial(make, settings)

    if _has("torch") and _has("transformers"):
        factories["deepseek"] = lambda: build_deepseek(settings)
    else:
        unavailable["deepseek"] = 'torch and transformers are not installed: pip install "ocr-app[model]"'

    if _has("rapidocr") and _has("onnxruntime"):
        factories["light"] = lambda: _light(settings)
    else:
        unavailable["light"] = 'rapidocr is not installed: pip install "ocr-app[light]"'

    factories["textlayer"] = lambda: _textlayer(settings)

    if settings.remote_url:
        remote_error = _check_endpoints(settings.remote_url)  # cheap (no network): a bad list says so now
        if remote_error is None:
            factories["remote"] = lambda: _remote(settings)
        else:
            unavailable["remote"] = remote_error
    else:
        unavailable["remote"] = "no endpoint configured (set DEEPSEEK_OCR_REMOTE_URL)"

    engines = EngineSet(
        engines=factories,
        default="",
        unavailable=unavailable,
        preferred=OCR_FALLBACKS[0],
        checks=_checks(settings),
    )
    # "auto" exists when an OCR engine can back it. With light or remote present it always can, so the
    # choice (a GPU probe and a weights look-up) waits until "auto" is used; otherwise decide now.
    ocr_for_sure = "light" in factories or "remote" in factories
    choice: tuple[str | None, str] | None = None
    if not ocr_for_sure:
        choice = choose_ocr(settings, factories)
    if ocr_for_sure or (choice is not None and choice[0] is not None):
        engines.engines["auto"] = lambda: _router(settings, engines, choice)

    default = canonical_engine(settings.engine)
    reason = ""
    if default not in engines.engines:
        if settings.engine != "auto":
            why = unavailable.get(default, "unknown engine")
            raise EngineUnavailableError(f"Engine '{settings.engine}' is not available: {why}")
        default = "textlayer"
        reason = "no OCR engine installed; only PDF text layers can be read"
    engines.default = default
    engines.default_reason = reason
    logger.info("engines: %s (default %s)", ", ".join(engines.engines), default)
    return engines


def _checks(settings: Settings) -> dict[str, Callable[[], str | None]]:
    """What a declared engine still lacks to read a page here, asked by front ends (not at startup)."""

    def deepseek_weights() -> str | None:
        from ocr_app.models.deepseek_ocr2.loading import weights_available

        if weights_available(settings.model):
            return None
        return "no model weights on this machine (see the banner for how to get them)"

    return {"deepseek": deepseek_weights}


def choose_ocr(settings: Settings, factories: dict[str, EngineFactory]) -> tuple[str | None, str]:
    """The OCR engine behind ``auto`` and a reason a user can act on (rule: ``choose_ocr_engine``)."""
    from ocr_app.runtime.vram import gpu_present

    if "remote" in factories:
        return "remote", f"remote endpoint {settings.remote_url}"
    weights = False
    if "deepseek" in factories:
        from ocr_app.models.deepseek_ocr2.loading import weights_available

        weights = weights_available(settings.model)
    name, reason = choose_ocr_engine(settings, has_gpu=gpu_present(), weights_available=weights)
    if name in factories:
        return name, reason
    for fallback in OCR_FALLBACKS:
        if fallback in factories and (fallback != "deepseek" or weights):
            return fallback, f"{reason}; {name} is not installed"
    return None, "no OCR engine available"


def choose_ocr_engine(settings: Settings, *, has_gpu: bool, weights_available: bool) -> tuple[str, str]:
    """Which OCR engine ``auto`` uses here, and a reason a user can act on.

    DeepSeek-OCR-2 when its weights are available and a GPU is present (or the user forced
    ``device=cpu``, accepting minutes per page); otherwise the light CPU engine.
    """
    device = (settings.device or "auto").lower()
    if {d.strip() for d in device.split(",")} == {"cpu"}:  # "cpu,cpu": engines placed on the CPU
        device = "cpu"
    if weights_available and device == "cpu":
        return "deepseek", "DeepSeek-OCR-2 on the CPU (device=cpu was set)"
    if weights_available and has_gpu:
        return "deepseek", "DeepSeek-OCR-2 on the GPU (weights found)"
    if not weights_available and not has_gpu:
        return "light", "no GPU and no DeepSeek-OCR-2 weights"
    if not weights_available:
        return "light", f"DeepSeek-OCR-2 weights not found ({settings.model})"
    if device.startswith("cuda"):
        return "light", f"device={settings.device} was set but no GPU is available"
    return "light", "no GPU (set device=cpu to run DeepSeek-OCR-2 on the CPU)"


# --- one factory per engine ---------------------------------------------------------------------------
def build_deepseek(settings: Settings) -> Engine:
    """DeepSeek-OCR-2 in its runtime: result cache → model manager (lazy load, idle unload, OOM
    recovery) → engine (with the cross-page vision cache). A result-cache hit never loads the model.
    With several devices (``--device auto`` on a multi-GPU host, or ``cuda:0,cuda:1``) there is one
    manager + engine per device behind an ``EnginePool`` that hands each page to a GPU with a free slot."""
    from ocr_app.engines.devices import build_device_pool, parse_devices
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.models.deepseek_ocr2.precision import budget_bytes_from_settings
    from ocr_app.runtime.manager import ModelManager
    from ocr_app.runtime.vram import gpu_present

    vision_cache = None
    if settings.cache_enabled:
        from ocr_app.runtime.vision_cache import VisionFeatureCache

        vision_cache = VisionFeatureCache.from_settings(settings)
    built: list[DeepSeekOcr2Engine] = []

    def per_device(s: Settings) -> Engine:
        # the budget the decoder plans its pages in flight within (None: free memory); the process-wide
        # cap is applied by models.deepseek_ocr2.budget when the model loads
        engine = DeepSeekOcr2Engine(
            s, vision_cache=vision_cache, budget_bytes=budget_bytes_from_settings(s), gpu_probe=gpu_present
        )
        built.append(engine)
        return ModelManager(engine, s)

    devices = parse_devices(settings.device)
    managed: Engine = (
        build_device_pool(settings, devices, per_device) if len(devices) > 1 else per_device(settings)
    )
    if settings.cache_enabled and settings.result_cache_mb > 0:
        from ocr_app.runtime.result_cache import CachedEngine

        def precision() -> str:  # the loaded model's, else what a load would resolve to now
            loaded = [e.precision.get("preset") for e in built if e.precision.get("preset")]
            return loaded[0] if loaded else predict_precision(settings)

        managed = CachedEngine.from_settings(managed, settings, precision=precision)
    return _tiled(managed, settings)


def _tiled(engine: Engine, settings: Settings) -> Engine:
    """Huge pages are read as overlapping tiles by every OCR engine (the text layer needs no tiles)."""
    if settings.tile_max_side <= 0:
        return engine
    from ocr_app.engines.tiling import TilingEngine

    return TilingEngine(engine, max_side=settings.tile_max_side, tile_size=settings.tile_size)


def predict_precision(settings: Settings) -> str:
    """The precision a DeepSeek load would resolve to now, from NVML / the driver (no torch)."""
    from ocr_app.models.deepseek_ocr2.precision import budget_bytes_from_settings, resolve_precision
    from ocr_app.runtime.vram import cuda_facts, gpu_present

    setting = (settings.device or "auto").strip().lower().split(",")[0]
    kind = setting.split(":")[0]
    if kind == "auto":
        kind = "cuda" if gpu_present() else "cpu"
    facts = cuda_facts(setting) if kind == "cuda" else None
    return resolve_precision(
        settings.dtype,
        device_kind=kind,
        bf16_supported=facts.bf16_supported if facts else True,
        free_bytes=facts.free_bytes if facts else None,
        budget_bytes=budget_bytes_from_settings(settings),
    )


def _light(settings: Settings) -> Engine:
    from ocr_app.engines.light import LightOcrEngine

    return _tiled(LightOcrEngine(settings), settings)


def _textlayer(settings: Settings) -> Engine:
    from ocr_app.engines.light import picture_reader
    from ocr_app.engines.textlayer import TextLayerEngine

    # Tables pasted as pictures are read by the light engine's recogniser (loaded on the first one).
    return TextLayerEngine(settings, pictures=picture_reader)


def _check_endpoints(remote_url: str) -> str | None:
    """Why the endpoint list cannot work (not http(s), duplicates, a bad TOML file), or None."""
    from ocr_app.engines.remote import parse_endpoints
    from ocr_app.exceptions import OcrError

    try:
        parse_endpoints(remote_url)
    except OcrError as exc:
        return str(exc)
    return None


def _remote(settings: Settings) -> Engine:
    from ocr_app.engines.remote import build_remote_engine

    return _tiled(build_remote_engine(settings), settings)


def _router(settings: Settings, engines: EngineSet, choice: tuple[str | None, str] | None) -> Engine:
    from ocr_app.engines.router import RouterEngine

    def ocr() -> tuple[Engine, str]:
        name, reason = choice if choice is not None else choose_ocr(settings, engines.engines)
        if name is None:
            raise EngineUnavailableError(f"Engine 'auto' has no OCR engine: {reason}")
        return engines.get(name), reason

    return RouterEngine(
        ocr=ocr,
        textlayer=engines.get("textlayer"),
        text_layer_policy=settings.text_layer,
    )
