"""Per-session working folders for conversion outputs.

Why: every browser tab gets its own folder, a new job replaces the tab's previous one, and closing the
tab (``demo.unload``) deletes it — outputs never pile up on a long-running server, and one user's files
are never served to another.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import threading
from pathlib import Path

logger = logging.getLogger(__name__)


class SessionDirs:
    """Folders under one root: ``root/<session>/job-<n>``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="ocr-app-ui-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self._counter = 0
        self._active: set[Path] = set()  # jobs still running: never deleted by a newer job
        self._closed: set[Path] = set()  # sessions whose tab closed while a job still wrote into them
        self._lock = threading.Lock()

    def session_dir(self, session: str) -> Path:
        return self._session_dir(session)

    def _session_dir(self, session: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", session or "anonymous")[:64]
        return self.root / safe

    def new_job(self, session: str, *, replace: bool = True) -> Path:
        """A fresh folder for the session's next job; the session's finished jobs are deleted unless
        ``replace`` is False (API calls: their results go once fetched, ``ui.api_results``)."""
        base = self._session_dir(session)
        with self._lock:
            self._counter += 1
            job = base / f"job-{self._counter}"
            self._closed.discard(base)
            old = [p for p in base.iterdir() if p not in self._active] if base.exists() and replace else []
            self._active.add(job)
        for path in old:
            shutil.rmtree(path, ignore_errors=True)
        job.mkdir(parents=True)
        return job

    def finished(self, job: Path) -> None:
        """The job is done; its folder stays (the viewer reads overlays from it) until the next job."""
        with self._lock:
            self._active.discard(job)
            orphan = job.parent in self._closed
        if orphan:  # the tab closed mid-job: what the job wrote after the cleanup goes too
            shutil.rmtree(job.parent, ignore_errors=True)

    def cleanup(self, session: str) -> bool:
        """Delete everything the session wrote; True when there was something to delete."""
        base = self._session_dir(session)
        with self._lock:
            if any(job.parent == base for job in self._active):
                self._closed.add(base)
        if not base.exists():
            return False
        shutil.rmtree(base, ignore_errors=True)
        logger.info("removed outputs of session %s", session)
        return True

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
