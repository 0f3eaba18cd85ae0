"""What DeepSeek-OCR-2 offers front ends: its prompt presets, resolution modes and precisions.

Why a module of its own: the local engine and remote endpoints both answer ``capabilities()`` with
this, and the UI and CLI build their choices from it, so a new mode or preset shows up everywhere.
"""

from __future__ import annotations

from ocr_app.engine_api import Capabilities
from ocr_app.models.deepseek_ocr2.modes import MODES
from ocr_app.models.deepseek_ocr2.precision import DTYPE_CHOICES
from ocr_app.models.deepseek_ocr2.prompts import PRESET_LABELS, PRESETS

# Conversions an engine that batches serves at once. The graph decoder: each conversion keeps at least
# one preprocessed page (on the GPU) waiting for a slot, and its memory plan leaves room for two vision
# batches of them (``decoding.adapter.backlog_share``); a server fleet: enough to keep it fed.
BATCHED_JOBS = 16


def deepseek_capabilities(*, precisions: bool = True, concurrent_jobs: int = 1) -> Capabilities:
    """Local engine: everything; remote endpoints: no precisions (the server decides).
    ``concurrent_jobs``: conversions that share the engine's batches (1: each runs alone)."""
    return Capabilities(
        prompts=tuple((name, str(PRESET_LABELS.get(name, name))) for name in PRESETS),
        custom_prompt=True,
        modes=tuple(MODES),
        precisions=DTYPE_CHOICES if precisions else (),
        max_concurrent_jobs=max(1, int(concurrent_jobs)),
    )
