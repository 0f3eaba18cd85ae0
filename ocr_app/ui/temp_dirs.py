"""A temp folder per app process for gradio's uploads and the app's outputs, removed when it stops.

Why per process with an owner marker: gradio keeps uploads and served files in one shared folder and
only ages them out while the app runs, so a stopped app leaves them behind (hundreds of files after an
afternoon). With one folder per process, shutdown (SIGTERM/SIGINT) removes it whole, and the next start
removes the folders of processes that are gone (killed, crashed) — never those of a live app.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

PREFIX = "proc-"
MARKER = "owner.json"
UNMARKED_GRACE_S = 300.0  # a folder without a marker may be one being created right now


def base_dir() -> Path:
    """``$GRADIO_TEMP_DIR/ocr-app`` when the user set one, else ``<system temp>/ocr-app``."""
    return Path(os.environ.get("GRADIO_TEMP_DIR") or tempfile.gettempdir()) / "ocr-app"


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks (Linux), so a reused pid is not taken for the owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by somebody else
        pass
    if start is not None:
        now = _start_ticks(pid)
        if now is not None and now != start:
            return False
    return True


@dataclass
class ProcessTemp:
    """``base/proc-<pid>-<random>/`` with ``owner.json``; ``gradio/`` and ``work/`` inside."""

    path: Path

    @classmethod
    def create(cls, base: Path | None = None) -> ProcessTemp:
        base = base or base_dir()
        base.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))
        marker = {"pid": os.getpid(), "start": _start_ticks(os.getpid()), "created": time.time()}
        (path / MARKER).write_text(json.dumps(marker), encoding="utf-8")
        return cls(path)

    @property
    def gradio_dir(self) -> Path:
        return self.path / "gradio"

    @property
    def work_dir(self) -> Path:
        """The app's outputs: inside gradio's folder, so gradio serves them in place (``ui.privacy``)."""
        return self.gradio_dir / "sessions"

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        logger.debug("removed the app's temp folder %s", self.path)


def use_process_temp(base: Path | None = None) -> ProcessTemp:
    """Sweep the folders of app processes that are gone, create this process's, and point gradio at it.

    Call before the app's Blocks are built: gradio reads ``GRADIO_TEMP_DIR`` when a Blocks is created.
    Outputs written under ``work_dir`` then lie inside gradio's cache, which it serves in place; outputs
    elsewhere it copies and hashes on every result (a 16-page job's PDFs and ZIP: ~0.3 s on an H200
    host's CPU)."""
    sweep_orphans(base)
    temp = ProcessTemp.create(base)
    os.environ["GRADIO_TEMP_DIR"] = str(temp.gradio_dir)
    return temp


def sweep_orphans(base: Path | None = None) -> list[Path]:
    """Remove the temp folders of app processes that no longer run; return what was removed."""
    base = base or base_dir()
    removed: list[Path] = []
    if not base.is_dir():
        return removed
    for folder in base.glob(f"{PREFIX}*"):
        if not folder.is_dir():
            continue
        try:
            owner = json.loads((folder / MARKER).read_text(encoding="utf-8"))
            alive = _alive(int(owner["pid"]), owner.get("start"))
        except (OSError, ValueError, KeyError, TypeError):
            alive = time.time() - folder.stat().st_mtime < UNMARKED_GRACE_S
        if not alive:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    if removed:
        logger.info("removed %d temp folder(s) left by app processes that are gone", len(removed))
    return removed
