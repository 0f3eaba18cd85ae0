"""``import onnxruntime`` without the telemetry file it leaves in the temp folder.

Why: loading onnxruntime's library starts its telemetry SDK, which writes ``$TMPDIR/.ses`` (a first
launch time and an id) and never removes it: a file in the user's temp folder after every run that
used RapidOCR or the layout model (issue 31). ``disable_telemetry_events()`` comes too late (the file is
written by the import itself, checked: onnxruntime 1.32). The packages that import onnxruntime are not
ours (rapidocr, rapid-layout), so the import is watched where Python resolves it: a meta-path finder
that, for ``onnxruntime`` only, runs the real loader and then removes ``.ses`` if the import made it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import tempfile
from pathlib import Path
from typing import Any

TELEMETRY_FILE = ".ses"


class _RemovesTelemetryFile(importlib.abc.Loader):
    """The real loader of ``onnxruntime``; after it ran, the telemetry file it made is removed."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        marker = Path(tempfile.gettempdir()) / TELEMETRY_FILE
        existed = marker.exists()
        try:
            self._inner.exec_module(module)
        finally:
            if not existed:
                with contextlib.suppress(OSError):
                    marker.unlink()

    def __getattr__(self, name: str) -> Any:  # resource readers, get_filename, is_package…
        return getattr(self._inner, name)


class _OnnxFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "onnxruntime":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _RemovesTelemetryFile(spec.loader)
        return spec


def watch_onnxruntime_import() -> None:
    """Install the finder once (before onnxruntime is imported; later it has nothing left to do)."""
    if "onnxruntime" in sys.modules or any(isinstance(f, _OnnxFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _OnnxFinder())


__all__ = ["TELEMETRY_FILE", "watch_onnxruntime_import"]
