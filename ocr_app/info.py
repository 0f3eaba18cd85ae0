"""Facts about this installation for ``ocr-app info`` and bug reports. Never touches the network."""

from __future__ import annotations

import importlib.metadata
import logging
import platform
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

_PACKAGES = ("ocr-app", "torch", "transformers", "gradio", "rapidocr", "onnxruntime", "pymupdf", "triton")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def collect_info(settings: Settings) -> dict[str, dict[str, object]]:
    """Sections of key → value, printable as a table or JSON."""
    versions: dict[str, object] = {"python": platform.python_version()}
    versions.update({name: _version(name) for name in _PACKAGES})

    device: dict[str, object] = {"setting": settings.device, "dtype setting": settings.dtype}
    try:
        from ocr_app.runtime.vram import snapshot

        device["gpu"] = snapshot().summary()
    except Exception as exc:  # info must always print something
        device["gpu"] = f"unknown ({exc})"

    model: dict[str, object] = {"model": settings.model}
    try:
        from ocr_app.engines.deepseek.loading import weights_status

        model["weights"] = weights_status(settings.model)
    except ImportError:
        model["weights"] = 'model support not installed: pip install "ocr-app[model]"'

    engines: dict[str, object] = {}
    try:
        from ocr_app.engines.registry import build_engines

        engine_set = build_engines(settings)
        engines["default"] = f"{engine_set.default} ({engine_set.default_reason})"
        engines["available"] = ", ".join(engine_set.names())
        for name, why in engine_set.unavailable.items():
            engines[f"{name} (unavailable)"] = why
    except Exception as exc:
        engines["error"] = str(exc)

    paths = {"cache dir": str(settings.cache_dir), "vision cache": "on" if settings.cache_enabled else "off"}
    return {
        "versions": versions,
        "device": device,
        "model": model,
        "engines": engines,
        "modes": mode_descriptions(),
        "paths": paths,
    }


def mode_descriptions() -> dict[str, str]:
    """Every resolution mode ``--mode`` takes, with what it does (DeepSeek-OCR-2 and remote engines)."""
    from ocr_app.engines.deepseek.modes import MAX_TILES, MIN_TILES, MODES

    modes = dict(MODES)
    modes["default:N"] = (
        f"default with at most N tiles (N = {MIN_TILES}–{MAX_TILES}): less memory and time per page."
    )
    return modes
