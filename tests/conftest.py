"""Shared fixtures: the tiny DeepSeek-OCR-2 checkpoint and generated documents."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

if "PYTEST_XDIST_WORKER" in os.environ:
    # One compute thread per worker (and per process it starts): two workers of two threads each on two
    # cores made OpenMP threads wait on each other (a bench smoke run took 146 s instead of 32 s).
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")


def _build_cache() -> Path:
    """Where the real tokenizer and the trained tiny model are built once and kept between sessions.

    Read before ``_isolated_cache_dir`` points DEEPSEEK_OCR_CACHE_DIR at a temporary folder: both are
    deterministic build products keyed by their content hash, not runtime caches.
    """
    import os

    from ocr_app.settings import default_cache_dir

    root = os.environ.get("DEEPSEEK_OCR_CACHE_DIR")
    return Path(root).expanduser() if root else default_cache_dir()


_BUILD_CACHE = _build_cache()


@pytest.fixture(scope="session")
def build_cache() -> Path:
    """The cache root the trained tiny model and the tokenizer are built in (pass it to subprocesses)."""
    return _BUILD_CACHE


@pytest.fixture(scope="session")
def trained_checkpoint() -> Path:
    """The tiny DeepSeek-OCR-2 trained to read ``tiny_pages.PAGES`` exactly (real tokenizer, cached)."""
    import os

    from filelock import FileLock

    from ocr_app.models.deepseek_ocr2 import tiny_train

    old = os.environ.get("DEEPSEEK_OCR_CACHE_DIR")
    os.environ["DEEPSEEK_OCR_CACHE_DIR"] = str(_BUILD_CACHE)
    _BUILD_CACHE.mkdir(parents=True, exist_ok=True)
    try:  # the suite's workers (pytest -n 2) build it once: the first holds the lock, the others reuse
        with FileLock(str(_BUILD_CACHE / ".tiny-build.lock")):
            return tiny_train.build_trained_checkpoint()
    finally:
        if old is None:
            os.environ.pop("DEEPSEEK_OCR_CACHE_DIR", None)
        else:
            os.environ["DEEPSEEK_OCR_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def tiny_checkpoint(trained_checkpoint: Path) -> Path:
    """The checkpoint model-path tests load through ``from_pretrained``: the trained tiny model."""
    return trained_checkpoint


@pytest.fixture(scope="session")
def random_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random weights with the real tokenizer, for the few tests that need a model that loops.

    Seed 1: the engine-mechanics tests need a random model that loops when unguarded, whose guard changes
    its output and whose output depends on the page; whether a random draw does all three is luck (seeds
    0 and 2-6 each miss one; those tests assert the properties, so a draw without them fails loudly rather
    than passing on a trivial comparison). The draw is the same bytes on every machine (``fill_weights``).
    """
    from ocr_app.models.deepseek_ocr2.tiny import build_tiny_checkpoint

    out = tmp_path_factory.mktemp("tiny-random")
    return build_tiny_checkpoint(out, seed=1, cache_dir=_BUILD_CACHE / "tokenizer")


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


def _loaded(engine):
    engine.load()
    yield engine
    engine.unload()


@pytest.fixture(scope="module")
def textlayer_engine():
    """A loaded text-layer engine, one per test module."""
    from ocr_app.engines.textlayer import TextLayerEngine

    yield from _loaded(TextLayerEngine())


@pytest.fixture(scope="module")
def light_engine():
    """A loaded light OCR engine (the real RapidOCR models), one per test module."""
    from ocr_app.engines.light import LightOcrEngine

    yield from _loaded(LightOcrEngine())


@pytest.fixture(scope="module")
def printer(tmp_path_factory):
    """HTML → a PDF printed by Chromium, as a user's browser prints a page ("Save as PDF")."""
    from tests.ui_support import chromium

    folder = tmp_path_factory.mktemp("printed")
    margin = {"top": "20mm", "bottom": "20mm", "left": "18mm", "right": "18mm"}
    with chromium() as browser:

        def print_pdf(name: str, html: str, *, backgrounds: bool = True, margin_mm: int = 0) -> Path:
            page = browser.new_page()
            try:
                page.set_content(f"<html><body style='margin:0'>{html}</body></html>")
                path = folder / f"{name}.pdf"
                edges = {k: f"{margin_mm}mm" for k in margin} if margin_mm else margin
                page.pdf(path=str(path), format="A4", print_background=backgrounds, margin=edges)
            finally:
                page.close()
            return path

        yield print_pdf
