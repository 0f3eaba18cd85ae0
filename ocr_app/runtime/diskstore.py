"""Shared file bookkeeping for the on-disk caches (results, vision features).

Why one place: both caches keep one file per key under two-letter shard folders, write through a
temp file and ``os.replace`` (readers see the old file or the whole new one), and evict the least
recently used files (mtime is refreshed on every hit) until a byte bound holds.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

FileEntry = tuple[float, int, Path]  # (mtime, size, path)


def list_entries(directory: Path, suffix: str) -> list[FileEntry]:
    """Every cache file under ``directory/*/``; files removed meanwhile by another writer are skipped."""
    out: list[FileEntry] = []
    for f in directory.glob(f"*/*{suffix}"):
        try:
            st = f.stat()
        except FileNotFoundError:
            continue
        out.append((st.st_mtime, st.st_size, f))
    return out


def evict_to(directory: Path, suffix: str, max_bytes: int) -> int:
    """Delete the oldest files until the total is at most ``max_bytes``; return how many were deleted."""
    files = sorted(list_entries(directory, suffix), key=lambda e: e[0])
    total = sum(size for _, size, _ in files)
    removed = 0
    for _, size, f in files:
        if total <= max_bytes:
            break
        f.unlink(missing_ok=True)
        total -= size
        removed += 1
    return removed


def remove_all(directory: Path, suffix: str) -> int:
    """Delete every cache file; return how many there were."""
    n = 0
    for f in directory.glob(f"*/*{suffix}"):
        f.unlink(missing_ok=True)
        n += 1
    return n
