"""Shared fixtures: the tiny DeepSeek-OCR-2 checkpoint and generated documents."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight checkpoint directory, loaded by tests through ``from_pretrained``."""
    from ocr_app.engines.deepseek.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-deepseek-ocr2"))
