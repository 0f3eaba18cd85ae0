"""Keep stdout for machine-readable output: while a command works, whatever libraries print goes to stderr.

Why at the file-descriptor level: MuPDF, onnxruntime and other native libraries write to fd 1 from C,
past ``sys.stdout``; one stray line before ``--json-summary``'s JSON made it unparseable. Swapping
``sys.stdout`` alone catches Python's ``print`` only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import TextIO

logger = logging.getLogger(__name__)


def _fileno(stream) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # a test runner's or notebook's in-memory stream
        return None


@contextlib.contextmanager
def reserved_stdout() -> Iterator[TextIO]:
    """Inside the block stdout (fd 1 and ``sys.stdout``) leads to stderr; write the result to the
    yielded stream, which is the real stdout."""
    real = sys.stdout
    real.flush()
    out_fd, err_fd = _fileno(real), _fileno(sys.stderr)
    if out_fd is None or err_fd is None:
        sys.stdout = sys.stderr
        try:
            yield real
        finally:
            sys.stdout = real
        return
    saved = os.dup(out_fd)
    os.dup2(err_fd, out_fd)
    sys.stdout = sys.stderr
    result = open(saved, "w", encoding=getattr(real, "encoding", None) or "utf-8", closefd=False)  # noqa: SIM115
    try:
        yield result
    finally:
        with contextlib.suppress(Exception):
            result.flush()
            sys.stderr.flush()
        sys.stdout = real
        os.dup2(saved, out_fd)
        os.close(saved)
