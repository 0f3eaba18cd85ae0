"""What DeepSeek-OCR-2 offers front ends: its prompt presets, resolution modes and precisions.

Why a module of its own: the local engine and remote endpoints both answer ``capabilities()`` with
this, and the UI and CLI build their choices from it, so a new mode or preset shows up everywhere.
The identity (name, label, prompted, keeps table HTML) is the engine kind's, registered in
``ocr_app.choices``.
"""

from __future__ import annotations

from dataclasses import replace

from ocr_app.choices import DTYPE_CHOICES, engine_kind
from ocr_app.engine_api import Capabilities
from ocr_app.models.deepseek_ocr2.modes import MODES
from ocr_app.models.deepseek_ocr2.prompts import PRESET_LABELS, PRESETS

# Conversions an engine that batches serves at once. The graph decoder: each conversion keeps at least
# one preprocessed page (on the GPU) waiting for a slot, and its memory plan leaves room for two vision
# batches of them (``decoding.adapter.backlog_share``); a server fleet: enough to keep it fed.
BATCHED_JOBS = 16


def deepseek_capabilities(
    name: str, *, precisions: bool = True, modes: bool = True, concurrent_jobs: int = 1
) -> Capabilities:
    """The engine kind ``name``'s facts with DeepSeek-OCR-2's choices. Local engine: everything;
    remote endpoints: no precisions and no modes (the server decides both). ``concurrent_jobs``:
    conversions that share the engine's batches (1: each runs alone)."""
    return replace(
        engine_kind(name).capabilities,
        prompts=tuple((preset, str(PRESET_LABELS.get(preset, preset))) for preset in PRESETS),
        custom_prompt=True,
        modes=tuple(MODES) if modes else (),
        precisions=DTYPE_CHOICES if precisions else (),
        max_concurrent_jobs=max(1, int(concurrent_jobs)),
    )
