"""Expand the paths a user names (files and folders) into the list of files to convert.

Why explicitly named files are kept whatever their extension: a mislabelled file the user pointed at
should reach ``open_document`` and get its specific error, while a folder walk only picks files that
look convertible and skips hidden ones (``.DS_Store``, ``._scan.pdf`` resource forks).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ocr_app.exceptions import EmptyInputError, InputError
from ocr_app.ingest.sniff import EXTENSION_FORMATS

logger = logging.getLogger(__name__)

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(EXTENSION_FORMATS)  # lower-case, with the dot


def iter_input_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files to convert, in the order named; folders expand recursively in natural order ("2" < "10").

    Raises InputError for a path that does not exist, EmptyInputError when folders were named but
    nothing convertible was found anywhere. Each file appears once.
    """
    found: list[Path] = []
    seen: set[Path] = set()
    folders: list[Path] = []
    named_any = False
    for raw in paths:
        named_any = True
        path = Path(raw)
        if path.is_dir():
            folders.append(path)
            candidates = _walk(path)
            if not candidates:
                logger.warning("no PDF or image files in folder %s", path)
        elif path.exists():
            candidates = [path]
        else:
            raise InputError(f"{path} does not exist")
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    if named_any and not found:
        names = ", ".join(str(f) for f in folders)
        raise EmptyInputError(
            f"no PDF or image files found in {names} (looked for {', '.join(sorted(SUPPORTED_EXTENSIONS))})"
        )
    return found


def _walk(folder: Path) -> list[Path]:
    """Supported, non-hidden files under ``folder`` (symlinked folders are not followed)."""
    files: list[Path] = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith(".") and Path(name).suffix.lower() in SUPPORTED_EXTENSIONS:
                files.append(Path(root) / name)
    return sorted(files, key=lambda p: _natural_key(p.relative_to(folder)))


def _natural_key(relative: Path) -> list[tuple[int, int | str]]:
    """Sort key that orders "scan2" before "scan10", folder by folder, case-insensitively."""
    key: list[tuple[int, int | str]] = []
    for part in relative.parts:
        for piece in re.split(r"(\d+)", part.lower()):
            if piece:
                key.append((0, int(piece)) if piece.isdigit() else (1, piece))
        key.append((2, ""))  # folder boundary: "a/b" sorts by "a" first
    return key
