"""``open_document``: bytes or a path in, a ``SourceDocument`` out, every bad input as a specific error.

Why checks happen in this order: the cheap ones first (exists, empty, size, first bytes) so a user
with a 2 GB file or a renamed ZIP archive hears about it before any decoder runs.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from ocr_app.exceptions import (
    ConfigError,
    EmptyInputError,
    InputError,
    LimitExceededError,
    UnsupportedFormatError,
)
from ocr_app.ingest.base import SourceDocument
from ocr_app.ingest.limits import ENV_MAX_FILE_MB, IngestLimits
from ocr_app.ingest.sniff import EXTENSION_FORMATS, HEAD_BYTES, describe_content, sniff_format

logger = logging.getLogger(__name__)

MIN_DPI, MAX_DPI = 36, 600  # the same bounds as Settings.dpi
SUPPORTED_DESCRIPTION = "a PDF or a supported image (PNG, JPEG, WebP, BMP, TIFF, GIF)"
DEFAULT_LIMITS = IngestLimits()


def open_document(
    source: str | os.PathLike[str] | bytes,
    *,
    name: str | None = None,
    password: str | None = None,
    dpi: int = 144,
    limits: IngestLimits = DEFAULT_LIMITS,
) -> SourceDocument:
    """Open a PDF or image from a path or from bytes; the format is taken from the content.

    ``name`` is the display name (default: the file name, or "document" for bytes); its extension is
    only used to warn about mislabelled files. ``password`` opens encrypted PDFs. PDF pages render at
    ``dpi`` (lowered per page when needed to stay within ``limits.render_pixels``).
    """
    if not MIN_DPI <= dpi <= MAX_DPI:
        raise ConfigError(f"dpi must be between {MIN_DPI} and {MAX_DPI}, got {dpi}")
    if isinstance(source, (bytes, bytearray, memoryview)):
        data: bytes | None = bytes(source)
        path = None
        display = name or "document"
        size, head = len(data), data[:HEAD_BYTES]
    else:
        data = None
        path = Path(source)
        display = name or path.name
        size, head = _stat_and_head(path, display)

    if size == 0:
        raise EmptyInputError(f"{display} is empty (0 bytes)")
    if size > limits.max_file_bytes:
        raise LimitExceededError(
            f"{display} is {size / 2**20:.1f} MiB; the limit is {limits.max_file_bytes / 2**20:.1f} MiB "
            f"(set {ENV_MAX_FILE_MB} to raise it)"
        )
    fmt = sniff_format(head)
    if fmt is None:
        raise UnsupportedFormatError(
            f"{display} is not {SUPPORTED_DESCRIPTION}: it looks like {describe_content(head)}"
        )
    mislabel = _mislabel_note(display, fmt)
    if mislabel:
        logger.warning(mislabel)

    document = _open_pdf(path, data, display, password, dpi, limits) if fmt == "pdf" else None
    if document is None:
        from ocr_app.ingest.image import ImageDocument

        document = ImageDocument(
            path if data is None else data, fmt=fmt, name=display, path=path, limits=limits
        )
    if mislabel:
        document.notes.insert(0, mislabel)
    return document


def _stat_and_head(path: Path, display: str) -> tuple[int, bytes]:
    """Size and first bytes of a file, with user-facing errors for paths that are not readable files."""
    try:
        if not path.exists():
            raise InputError(f"{display}: no such file ({path})")
        if path.is_dir():
            raise InputError(f"{display} is a folder, not a file ({path})")
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except PermissionError as exc:
        raise InputError(f"{display} cannot be read: permission denied ({path})") from exc
    except OSError as exc:
        raise InputError(f"{display} cannot be read: {exc.strerror or exc}") from exc
    return size, head


def _open_pdf(
    path: Path | None,
    data: bytes | None,
    display: str,
    password: str | None,
    dpi: int,
    limits: IngestLimits,
) -> SourceDocument:
    from ocr_app.ingest.pdf import PdfDocument

    if data is None:
        assert path is not None
        return PdfDocument(path, name=display, path=path, password=password, dpi=dpi, limits=limits)
    # bytes: the text-layer engine reads PDFs from disk, so keep a private copy the document deletes
    handle, temp_name = tempfile.mkstemp(prefix="ocr-app-", suffix=".pdf")
    temp_path = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        temp_path.unlink(missing_ok=True)
        raise
    return PdfDocument(
        temp_path, name=display, path=None, password=password, dpi=dpi, limits=limits, owns_file=True
    )


def _mislabel_note(display: str, fmt: str) -> str | None:
    """A warning when the name's extension promises another format than the content has."""
    promised = EXTENSION_FORMATS.get(Path(display).suffix.lower())
    if promised is None or promised == fmt:
        return None
    return f"{display} is named like a {promised.upper()} file but its content is {fmt.upper()}; reading it as {fmt.upper()}"
