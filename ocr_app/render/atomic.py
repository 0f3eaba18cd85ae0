"""Atomic file writes: a temp file in the target's directory, then ``os.replace``.

Why: a crash, a full disk or a killed worker must never leave a half-written Markdown, JSON or ZIP that
looks complete; readers see either the old file or the new one. The temp file ``mkstemp`` makes is
private (0600); ``publish`` gives the result the mode any other new file gets (0666 minus the umask).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ocr_app.schema import valid_unicode

logger = logging.getLogger(__name__)

_UMASK_LOCK = threading.Lock()
TEMP_NAME_CHARS = 48  # of the target's name in a temp file's name


def current_umask() -> int:
    """The process umask (reading it means setting it, so briefly and under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def temp_beside(path: Path) -> Path:
    """A new empty temp file in ``path``'s folder (created there so ``os.replace`` is atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the prefix is cut short: ``.{name}.XXXXXXXX.tmp`` must fit in a file name (255 bytes) for any name
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name[:TEMP_NAME_CHARS]}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp_name)


def publish(tmp: Path, path: Path) -> Path:
    """Give ``tmp`` the umask's file mode and move it onto ``path`` atomically."""
    os.chmod(tmp, 0o666 & ~current_umask())
    os.replace(tmp, path)
    return Path(path)


@contextlib.contextmanager
def atomic_target(path: Path) -> Iterator[Path]:
    """Yield a temp path beside ``path``; on success it replaces ``path``, on error it is removed.

    For writers that want a file name (PyMuPDF ``save``, ``zipfile``) rather than bytes.
    """
    tmp = temp_beside(path)
    try:
        yield tmp
        publish(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return ``path``."""
    with atomic_target(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    return Path(path)


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8, ``\\n`` newlines on every OS) and return ``path``.
    A lone surrogate from any engine is written as U+FFFD, not a failed document."""
    return atomic_write_bytes(path, valid_unicode(text).encode(encoding))


class TextSpool:
    """A text file written piece by piece into a temp file beside its target, published on ``close``.

    Why: document files are streamed page by page (host memory flat in the page count) and must appear
    whole or not at all. ``parts`` counts the pieces written (formats use it for separators)."""

    def __init__(self, target: Path) -> None:
        self.target = Path(target)
        self.tmp = temp_beside(self.target)
        self.file = open(self.tmp, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - closed in close/abort
        self.parts = 0

    def write(self, text: str) -> None:
        self.file.write(valid_unicode(text))  # a lone surrogate would fail the whole file

    def close_file(self) -> None:
        """Flush to disk and close, without publishing (for a part that is copied elsewhere)."""
        if not self.file.closed:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()

    def close(self) -> Path:
        self.close_file()
        return publish(self.tmp, self.target)

    def abort(self) -> None:
        if not self.file.closed:
            self.file.close()
        self.tmp.unlink(missing_ok=True)
