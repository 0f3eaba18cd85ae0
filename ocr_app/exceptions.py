"""User-facing errors. Every error a user can cause or fix comes from this module.

Why one tree: the CLI maps ``InputError`` to exit code 2 and everything else to 1, the UI turns any
``OcrError`` into a ``gr.Error`` with the same message, and callers can catch one base class.
"""

from __future__ import annotations

import logging


class OcrError(Exception):
    """Base class of all errors ocr-app raises on purpose."""


# --- input -------------------------------------------------------------------------------------
class InputError(OcrError):
    """The user's input cannot be converted. Exit code 2 in the CLI."""


class UnsupportedFormatError(InputError):
    """The file is neither a PDF nor a supported image, whatever its extension says."""


class CorruptFileError(InputError):
    """The file claims a known format but cannot be decoded."""


class EmptyInputError(InputError):
    """The file has no bytes, or the document has zero pages."""


class EncryptedDocumentError(InputError):
    """The PDF is encrypted and no (correct) password was given."""


class PageRangeError(InputError):
    """A page range string is malformed or selects no existing page."""


class LimitExceededError(InputError):
    """A page has too many pixels, or a document too many pages, for the configured limits."""


# --- model and runtime -------------------------------------------------------------------------
class ConfigError(OcrError):
    """A setting has an invalid value (unknown mode, preset, dtype, device...)."""


class ModelLoadError(OcrError):
    """The model could not be loaded."""


class WeightsNotFoundError(ModelLoadError):
    """Weights are neither on disk nor reachable on the hub."""


class EngineUnavailableError(OcrError):
    """The requested engine cannot run here (missing extra, no GPU, no endpoint)."""


class EngineError(OcrError):
    """An engine failed on a page for a reason that is not the user's input."""


class GpuOutOfMemory(EngineError):
    """The GPU ran out of memory and every smaller retry failed too."""


class OutputError(OcrError):
    """The outputs could not be written (disk full, permission denied, a name too long). Exit code 1.

    The message names the real cause in one line; nothing half-written is published."""


class ConversionCancelled(OcrError):
    """The user cancelled a running conversion; pages finished before that are kept.

    ``partial`` is the interrupted file's result (its finished pages, published with ``complete: false``),
    or None when no page of it had finished; ``documents`` every file's result up to and including it.
    """

    def __init__(self, message: str, partial: object | None = None) -> None:
        super().__init__(message)
        self.partial = partial
        self.documents: list[object] = []


# --- logging -----------------------------------------------------------------------------------
class UserErrorLogFilter(logging.Filter):
    """Logs a user error (bad input, bad setting, a cancel) as one line, without its traceback.

    Why: a traceback says "bug" to whoever reads the log; a wrong password or a truncated upload is
    not one, and thirty of them in an afternoon's log hide the real failures. Internal errors keep theirs.
    """

    USER_ERRORS: tuple[type[BaseException], ...] = (
        InputError,
        ConfigError,
        EngineUnavailableError,
        ConversionCancelled,
    )

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, self.USER_ERRORS):
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {' '.join(str(exc).split())}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


def install_user_error_filter(logger: logging.Logger | None = None) -> None:
    """Put ``UserErrorLogFilter`` on every handler of ``logger`` (default: the root logger)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, UserErrorLogFilter) for f in handler.filters):
            handler.addFilter(UserErrorLogFilter())
