"""Build the set of engines this machine can run, from settings.

Why here and not in the UI or CLI: both front ends must offer the same engines, with the same default and
the same explanation of why an engine is missing. Nothing is loaded here: engines load lazily.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ocr_app.exceptions import ConfigError, EngineUnavailableError

if TYPE_CHECKING:
    from ocr_app.engines.base import Engine
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

ENGINE_NAMES = ("auto", "deepseek", "light", "textlayer", "remote")


@dataclass
class EngineSet:
    """Named engines plus the default and the reasons others are missing."""

    engines: dict[str, Engine]
    default: str
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> why it cannot run here
    default_reason: str = ""

    def names(self) -> list[str]:
        return list(self.engines)

    def get(self, name: str | None) -> Engine:
        key = _canonical(name or self.default)
        if key in self.engines:
            return self.engines[key]
        why = self.unavailable.get(key, f"unknown engine; choose one of {', '.join(self.engines)}")
        raise EngineUnavailableError(f"Engine '{key}' is not available: {why}")

    def describe(self) -> dict[str, object]:
        return {
            "default": self.default,
            "default_reason": self.default_reason,
            "engines": {name: e.describe() for name, e in self.engines.items()},
            "unavailable": dict(self.unavailable),
        }

    def unload_all(self) -> None:
        seen: set[int] = set()
        for engine in self.engines.values():
            if id(engine) not in seen:
                seen.add(id(engine))
                engine.unload()


def _canonical(name: str) -> str:
    aliases = {"deepseek-ocr2": "deepseek", "deepseek-ocr-2": "deepseek", "rapidocr": "light"}
    return aliases.get(name.lower(), name.lower())


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def build_engines(settings: Settings) -> EngineSet:
    """Create (not load) every engine that can run here, and pick the default."""
    engines: dict[str, Engine] = {}
    unavailable: dict[str, str] = {}

    if _has("torch") and _has("transformers"):
        from ocr_app.engines.deepseek.engine import DeepSeekOcr2Engine
        from ocr_app.engines.devices import parse_devices

        try:
            devices = parse_devices(settings.device)
        except ConfigError as exc:
            unavailable["deepseek"] = str(exc)
        else:
            vision_cache = _vision_cache(settings)
            if len(devices) > 1:  # every GPU: one managed engine per device, behind a pool
                from ocr_app.engines.devices import build_device_pool
                from ocr_app.runtime.manager import ModelManager

                def per_device(s: Settings) -> Engine:
                    return ModelManager(DeepSeekOcr2Engine(s, vision_cache=vision_cache), s)

                engines["deepseek"] = _cached(build_device_pool(settings, devices, per_device), settings)
            else:
                engines["deepseek"] = _managed(
                    DeepSeekOcr2Engine(settings, vision_cache=vision_cache), settings
                )
    else:
        unavailable["deepseek"] = 'torch and transformers are not installed: pip install "ocr-app[model]"'

    if _has("rapidocr") and _has("onnxruntime"):
        from ocr_app.engines.light import LightOcrEngine

        engines["light"] = LightOcrEngine(settings)
    else:
        unavailable["light"] = 'rapidocr is not installed: pip install "ocr-app[light]"'

    from ocr_app.engines.textlayer import TextLayerEngine

    engines["textlayer"] = TextLayerEngine(settings)

    if settings.remote_url:
        from ocr_app.engines.remote import build_remote_engine

        try:
            engines["remote"] = build_remote_engine(settings)
        except ConfigError as exc:  # a bad endpoint list must not keep the other engines from starting
            unavailable["remote"] = str(exc)
    else:
        unavailable["remote"] = "no endpoint configured (set DEEPSEEK_OCR_REMOTE_URL)"

    _tile(engines, settings)
    ocr_name, reason = _choose_ocr(settings, engines)
    if ocr_name is not None:
        from ocr_app.engines.router import RouterEngine

        engines["auto"] = RouterEngine(
            ocr=engines[ocr_name],
            textlayer=engines.get("textlayer"),
            text_layer_policy=settings.text_layer,
            reason=reason,
        )
    default = _canonical(settings.engine)
    if default not in engines:
        if settings.engine != "auto":
            why = unavailable.get(default, "unknown engine")
            raise EngineUnavailableError(f"Engine '{settings.engine}' is not available: {why}")
        default = "textlayer"
        reason = "no OCR engine installed; only PDF text layers can be read"
    logger.info("engines: %s (default %s: %s)", ", ".join(engines), default, reason)
    return EngineSet(engines=engines, default=default, unavailable=unavailable, default_reason=reason)


def _tile(engines: dict[str, Engine], settings: Settings) -> None:
    """Huge pages are read as overlapping tiles by every OCR engine (the text layer needs no tiles)."""
    if settings.tile_max_side <= 0:
        return
    from ocr_app.engines.tiling import TilingEngine

    for name in ("deepseek", "light", "remote"):
        if name in engines:
            engines[name] = TilingEngine(
                engines[name], max_side=settings.tile_max_side, tile_size=settings.tile_size
            )


def _choose_ocr(settings: Settings, engines: dict[str, Engine]) -> tuple[str | None, str]:
    from ocr_app.engines.router import choose_ocr_engine

    if "remote" in engines:
        return "remote", f"remote endpoint {settings.remote_url}"
    has_gpu = _gpu_available()
    weights = False
    if "deepseek" in engines:
        from ocr_app.engines.deepseek.loading import weights_available

        weights = weights_available(settings.model)
    name, reason = choose_ocr_engine(settings, has_gpu=has_gpu, weights_available=weights)
    if name in engines:
        return name, reason
    for fallback in ("deepseek", "light"):
        if fallback in engines and (fallback != "deepseek" or weights):
            return fallback, f"{reason}; {name} is not installed"
    return None, "no OCR engine available"


def _gpu_available() -> bool:
    if not _has("torch"):
        return False
    import torch

    return torch.cuda.is_available()


def _managed(engine: Engine, settings: Settings) -> Engine:
    """Wrap a model engine: result cache outside (a hit never loads the model), then the manager
    (lazy load, single-flight load, idle unload, OOM recovery)."""
    from ocr_app.runtime.manager import ModelManager

    return _cached(ModelManager(engine, settings), settings)


def _cached(engine: Engine, settings: Settings) -> Engine:
    """The result cache outside: a hit never loads a model (nor picks a GPU)."""
    if settings.cache_enabled and settings.result_cache_mb > 0:
        from ocr_app.runtime.result_cache import CachedEngine

        return CachedEngine.from_settings(engine, settings)
    return engine


def _vision_cache(settings: Settings):
    if not settings.cache_enabled:
        return None
    from ocr_app.runtime.vision_cache import VisionFeatureCache

    return VisionFeatureCache.from_settings(settings)
