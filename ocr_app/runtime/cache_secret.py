"""The per-installation secret that keys the result cache's checksums (HMAC-SHA256).

Why keyed: an unkeyed checksum only catches accidents. Anyone who can write the cache folder could edit
an entry and recompute its checksum, and the edited text was then served as the page's OCR (issue 31).
With HMAC under a secret that only the app's user can read (``secret.key``, mode 0600, beside the
entries), an entry edited by anyone without the key is detected, removed and recomputed.

The file is made once with ``O_CREAT | O_EXCL`` (two processes starting together agree on one secret);
one that others could read is narrowed to 0600, and one of the wrong size is replaced (its entries are
then recomputed, never trusted).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

SECRET_NAME = "secret.key"
SECRET_BYTES = 32


def load_secret(directory: Path) -> bytes:
    """The secret kept in ``directory/secret.key``, made on first use."""
    path = directory / SECRET_NAME
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            key = _read(path)
            if key is not None:
                return key
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # wrong size: made again; entries signed with it are recomputed
            continue
        key = secrets.token_bytes(SECRET_BYTES)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        logger.info("result cache: made a new secret key in %s", path)
        return key
    raise OSError(f"cannot make the result cache's secret key in {directory}")


def _read(path: Path) -> bytes | None:
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            logger.warning("result cache: %s was readable by others (mode %o); narrowed to 0600", path, mode)
            path.chmod(0o600)
        key = path.read_bytes()
    except FileNotFoundError:
        return None
    return key if len(key) == SECRET_BYTES else None


def signature(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` under ``key``, hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verify(key: bytes, data: bytes, recorded: object) -> bool:
    return isinstance(recorded, str) and hmac.compare_digest(signature(key, data), recorded)


__all__ = ["SECRET_NAME", "load_secret", "signature", "verify"]
