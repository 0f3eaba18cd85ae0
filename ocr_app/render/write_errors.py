"""One translation of every failed write into the user's words: ``OutputError``, one line, no path.

Why one place: outputs are written by Python (Markdown, JSON, ZIP, overlays, figures), by Pillow and by
MuPDF (the layout PDF). A full disk or a file-size limit surfaced as ``OSError`` from the first two but
as ``FzErrorSystem: cannot fwrite: File too large`` from MuPDF, which became "Internal error" and a
traceback at some disk sizes (issue 31). MuPDF's errors carry the C library's message, so the cause is
recognised by the same words ``os.strerror`` gives. Why no path: through the app the folder is the
server's; the CLI user knows the folder they chose (``-o``).
"""

from __future__ import annotations

import errno
import os

from ocr_app.exceptions import OutputError

# the causes a write can have that are the machine's, not a bug (their C-library wording)
_WRITE_ERRNOS = (
    errno.ENOSPC,
    errno.EFBIG,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.EIO,
    errno.ENAMETOOLONG,
)


def describe_os_error(exc: OSError) -> str:
    """The cause of a failed write in words (``No space left on device``), without the errno prefix."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENAMETOOLONG:
        reason += " (a file or folder name is longer than the file system allows)"
    return reason


def output_error(exc: BaseException) -> OutputError | None:
    """``exc`` as the ``OutputError`` users see, or None when it is no write failure (a bug)."""
    if isinstance(exc, OutputError):
        return exc
    if isinstance(exc, OSError):
        return OutputError(f"Cannot write the outputs: {describe_os_error(exc)}")
    text = str(exc)
    for code in _WRITE_ERRNOS:
        if os.strerror(code) in text:
            return OutputError(f"Cannot write the outputs: {os.strerror(code)}")
    return None


__all__ = ["describe_os_error", "output_error"]
