"""Shared fixtures: the tiny DeepSeek-OCR-2 checkpoint and generated documents."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight checkpoint directory, loaded by tests through ``from_pretrained``."""
    from ocr_app.engines.deepseek.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny-deepseek-ocr2"))


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Keep tests out of the user's cache and independent of each other's cached results."""
    import os

    old = os.environ.get("DEEPSEEK_OCR_CACHE_DIR")
    os.environ["DEEPSEEK_OCR_CACHE_DIR"] = str(tmp_path_factory.mktemp("ocr-app-cache"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield
    if old is None:
        os.environ.pop("DEEPSEEK_OCR_CACHE_DIR", None)
    else:
        os.environ["DEEPSEEK_OCR_CACHE_DIR"] = old
