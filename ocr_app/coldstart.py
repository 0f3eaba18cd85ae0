"""Where the first request's time goes: start-up, imports, weight load, graph capture, first page.

Why: the cold start of ``ocr-app convert`` (26 s for one page on an H200 before this was measured) is
spent in several places, and the fix for each differs. ``ocr-app convert -v`` prints this breakdown so
a run on any machine says which part to work on. Nothing here imports torch.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)


def process_age_s() -> float | None:
    """Seconds since this process started (Linux ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


@dataclass
class ColdStart:
    """Marks taken during one CLI run; ``summary`` turns them into the printed breakdown."""

    started_before: float | None = field(default_factory=process_age_s)  # process start → this object
    t0: float = field(default_factory=time.perf_counter)
    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        """Note the first time ``name`` happens (later calls are ignored)."""
        self.marks.setdefault(name, time.perf_counter() - self.t0)

    def on_progress(self, event: Any) -> None:
        if getattr(event, "stage", None) == "page_done":
            self.mark("first_page")

    def summary(self, engines_info: dict[str, Any]) -> dict[str, float | None]:
        """Seconds per part. ``engines_info``: ``EngineSet.describe()`` (load, kernel warm-up and capture
        times; the warm-up is part of the load)."""
        load = capture = kernels = None
        for info in (engines_info.get("engines") or {}).values():
            if isinstance(info, dict) and info.get("load_seconds") is not None:
                load = (load or 0.0) + float(info["load_seconds"])
                dec = info.get("decoder") or {}
                if dec.get("capture_s") is not None:
                    capture = (capture or 0.0) + float(dec["capture_s"])
                warm = info.get("kernel_warmup") or {}
                if warm.get("seconds") is not None:
                    kernels = (kernels or 0.0) + float(warm["seconds"])
        return {
            "startup": self.started_before,
            "imports": self.marks.get("imports"),
            "load": load,
            "kernels": kernels,
            "capture": capture,
            "first_page": _since_start(self.marks.get("first_page"), self.started_before),
            "total": time.perf_counter() - self.t0 + (self.started_before or 0.0),
        }


def _since_start(mark: float | None, started_before: float | None) -> float | None:
    return None if mark is None else mark + (started_before or 0.0)


def format_summary(parts: dict[str, float | None]) -> str:
    """One line: ``cold start: start-up 0.3 s, imports 2.9 s, load 4.1 s, ...``."""
    names = {
        "startup": "python start-up",
        "imports": "imports",
        "load": "weight load",
        "kernels": "kernel warm-up (in the load)",
        "capture": "graph capture",
        "first_page": "first page done (since process start)",
        "total": "total wall",
    }
    shown = [f"{names[k]} {v:.2f} s" for k, v in parts.items() if v is not None]
    return "cold start: " + ", ".join(shown)


def import_heavy() -> None:
    """Import torch now (when it is installed), so its cost is its own line. Not transformers: the
    DeepSeek load imports it while the weights are read in the background (``weights.py``), and that
    overlap is the point."""
    for name in ("torch",):
        if name not in sys.modules:
            try:
                __import__(name)
            except ImportError:
                logger.debug("%s not installed", name)
