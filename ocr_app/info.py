"""Facts about this installation for ``ocr-app info`` and bug reports. Never touches the network."""

from __future__ import annotations

import importlib.metadata
import logging
import platform
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

_PACKAGES = (
    "ocr-app", "torch", "transformers", "gradio", "rapidocr", "rapid-layout", "rapid-table", "onnxruntime",
    "pymupdf", "triton",
)  # fmt: skip


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

    try:
        device.update(_precision_info(settings))
    except Exception as exc:  # info must always print something
        device["precision"] = f"unknown ({exc})"

    model: dict[str, object] = {"model": settings.model}
    try:
        from ocr_app.models.deepseek_ocr2.loading import weights_status

        model["weights"] = weights_status(settings.model)
    except ImportError:
        model["weights"] = 'model support not installed: pip install "ocr-app[model]"'

    engines: dict[str, object] = {}
    try:
        from ocr_app.stack import build_engines

        engine_set = build_engines(settings)
        engines["default"] = f"{engine_set.default} ({engine_set.describe()['default_reason']})"
        engines["available"] = ", ".join(engine_set.names())
        for name, why in engine_set.unavailable.items():
            engines[f"{name} (unavailable)"] = why
    except Exception as exc:
        engines["error"] = str(exc)
    from ocr_app.structure.table_model import describe as tables_line

    engines["tables"] = tables_line()
    try:
        from ocr_app.structure.regions import describe as layout_line

        engines["layout model"] = layout_line(settings.cache_dir)
    except Exception as exc:  # info must always print something
        engines["layout model"] = f"unknown ({exc})"

    try:
        model["quantised weights"] = _quantised_cache_line(settings)
    except Exception as exc:
        model["quantised weights"] = f"unknown ({exc})"
    try:
        model["idle unload"] = _idle_line(settings, str(device.get("precision", "")), "gpu budget" in device)
    except Exception as exc:
        model["idle unload"] = f"unknown ({exc})"

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
    from ocr_app.models.deepseek_ocr2.modes import MAX_TILES, MIN_TILES, MODES

    modes = dict(MODES)
    modes["default:N"] = (
        f"default with at most N tiles (N = {MIN_TILES}–{MAX_TILES}): less memory and time per page."
    )
    return modes


def _precision_info(settings: Settings) -> dict[str, object]:
    """The memory budget and the preset a load would use, with why ("4.0 GiB budget → mixed")."""
    import sys

    dtype = settings.dtype.strip().lower()
    torch = sys.modules.get("torch")
    if torch is None:
        import torch
    cuda = settings.device.startswith("cuda") or (settings.device == "auto" and torch.cuda.is_available())
    if not cuda:
        return {"precision": f"{dtype} on the CPU" + (" → fp32" if dtype == "auto" else "")}
    from ocr_app.models.deepseek_ocr2.budget import choose_preset, resolve_budget

    dev = "cuda" if settings.device == "auto" else settings.device
    budget = resolve_budget(settings, dev)
    out: dict[str, object] = {"gpu budget": budget.source}
    if dtype == "auto":
        kind = "cuda" if torch.cuda.is_bf16_supported() else "cuda-no-bf16"
        preset, why = choose_preset(budget.bytes, kind)
        out["precision"] = f"auto: {budget.source} → {preset} ({why})"
    else:
        out["precision"] = f"{dtype} (--dtype)"
    return out


def _idle_line(settings: Settings, precision: str, gpu: bool) -> str:
    """What an idle unload does and the host memory it keeps (issue 32: parked weights are stated).
    ``gpu``: the model would load on a GPU (the device section found one)."""
    secs = settings.idle_unload_s
    if secs <= 0:
        return "off: the model stays loaded (idle_unload_s = 0)"
    if not gpu:
        return f"after {secs:.0f} s idle the model is dropped from memory; the next request loads it again"
    if not settings.idle_park:
        return (
            f"after {secs:.0f} s idle the model is dropped (GPU and host memory); the next request loads it"
        )
    size = _parked_size(settings, precision)
    return (
        f"after {secs:.0f} s idle the GPU is freed and the weights wait in pinned host memory ({size}); "
        "the next request copies them back (one copy, no load). idle_park = false frees that memory too"
    )


def _parked_size(settings: Settings, precision: str) -> str:
    """The parked weights' host memory: the quantised cache entry's size for int8/mixed, else the
    float checkpoint's bytes on disk (bf16 as stored)."""
    quant = next((p for p in ("mixed", "int8") if f"→ {p}" in precision or precision.startswith(p)), None)
    if quant:
        from ocr_app.quant.store import QuantStore

        sizes = [
            e.get("bytes", 0)
            for e in QuantStore.from_settings(settings).entries()
            if e.get("preset") == quant
        ]
        if sizes:
            return f"{max(sizes) / 2**30:.2f} GiB, {quant}"
        return (
            f"the {quant} weights' size, ≈ 2.4 GiB for DeepSeek-OCR-2 {quant}" if quant == "mixed" else quant
        )
    try:
        from ocr_app.models.deepseek_ocr2.loading import resolve_model_dir
        from ocr_app.models.deepseek_ocr2.weights import checkpoint_files

        files = checkpoint_files(resolve_model_dir(settings.model))
        if files:
            return f"{sum(f.stat().st_size for f in files) / 2**30:.2f} GiB, as the checkpoint"
    except Exception:  # no local weights yet: the size of the published checkpoint
        pass
    return "≈ 6.3 GiB for DeepSeek-OCR-2 in bf16"


def _quantised_cache_line(settings: Settings) -> str:
    """Quantised weights of this model already in the cache (preset, size, how long quantising took)."""
    from ocr_app.quant.store import QuantStore

    store = QuantStore.from_settings(settings)
    entries = store.entries()
    try:
        from ocr_app.models.deepseek_ocr2.loading import _looks_like_path

        local = str(Path(settings.model).expanduser()) if _looks_like_path(settings.model) else None
    except ImportError:
        local = None
    mine = [e for e in entries if local is not None and e.get("source") == local] if local else entries
    if not mine:
        return f"none cached in {store.root} (a float checkpoint with int8/mixed is quantised on first load)"
    parts = []
    for e in mine:
        secs = e.get("quantize_seconds")
        took = f", quantised in {secs:.1f} s" if isinstance(secs, (int, float)) else ""
        parts.append(f"{e['preset']} ({e.get('bytes', 0) / 2**30:.2f} GiB{took})")
    return "cached: " + ", ".join(parts)
