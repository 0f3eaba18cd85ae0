"""Shared pieces of the UI tests: settings for the tiny checkpoint, a launched app, browser arguments.

Why a module and not fixtures in conftest: only the UI tests need gradio, and keeping the launch code in
one place means the API test and the browser test start exactly the same app as ``app.py`` does.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.engines.registry import EngineSet
from ocr_app.settings import Settings
from ocr_app.stack import build_engines

# GUIDE §3: Debian Chromium, launched by Playwright (``playwright install`` cannot download here).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian Chromium, headless, launched by Playwright for one test or module; closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_settings(checkpoint: Path, cache_dir: Path, **overrides: Any) -> Settings:
    """The tiny checkpoint on the CPU; few tokens and the one-view mode keep every page ~1 s.

    The result cache is off and the cache folder is the test's own: every page really runs through the
    model, so what the UI shows and what the library computes are two independent runs.
    """
    values: dict[str, Any] = {
        "model": str(checkpoint),
        "cache_dir": cache_dir,
        "result_cache_mb": 0,
        "device": "cpu",
        "engine": "deepseek",
        "mode": "global",
        "max_new_tokens": 12,
        "dpi": 72,
        "idle_unload_s": 0,
        "host": "127.0.0.1",
        "port": free_port(),
    }
    values.update(overrides)
    return Settings(**values)


@dataclass
class RunningApp:
    url: str
    demo: Any
    converter: Converter
    engines: EngineSet
    settings: Settings

    @property
    def work_root(self) -> Path:
        return self.demo.ocr_app_dirs.root

    def expected(self, inputs: list[Path], out_dir: Path, **options: Any):
        """What the library itself produces for ``inputs`` with the UI's default options."""
        opts = ConvertOptions.from_settings(self.settings, **options)
        return self.converter.convert(inputs, out_dir, opts)


@contextmanager
def running_app(settings: Settings) -> Iterator[RunningApp]:
    """Build engines, converter and Blocks as ``app.py`` does, launch without blocking, clean up."""
    from ocr_app.ui.app import build_app
    from ocr_app.ui.launch import launch

    engines = build_engines(settings)
    converter = Converter(engines, settings)
    demo = build_app(converter, settings)
    try:
        info = launch(demo, settings, prevent_thread_lock=True, quiet=True)
        yield RunningApp(info.local_url, demo, converter, engines, settings)
    finally:
        demo.close()
        engines.unload_all()
        demo.ocr_app_dirs.close()
