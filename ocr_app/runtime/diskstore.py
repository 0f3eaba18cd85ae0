"""Shared file bookkeeping for the on-disk caches (results, vision features).

Why one place: both caches keep one file per key under two-letter shard folders, write through a
temp file and ``os.replace`` (readers see the old file or the whole new one), and evict the least
recently used files (mtime is refreshed on every hit) until a byte bound holds.

Why not ``diskcache`` (measured by ``bench/eval_libraries.py``, 2026-11-30, 200 entries of 20 kB under
an 800 kB bound): diskcache stores and reads faster (438 vs 188 puts/s, 26k vs 5.6k gets/s) but left
4.8 MB on disk against the 0.8 MB bound (it culls a few entries per write, plus its SQLite files),
while this store holds the bound exactly after every write. A result is written once per page after
seconds of GPU work, so the write speed does not matter and the bound does; one plain file per entry
also keeps ``ocr-app cache info/clear`` trivial and needs no SQLite on the cache's filesystem.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

logger = logging.getLogger(__name__)

FileEntry = tuple[float, int, Path]  # (mtime, size, path)
STALE_TEMP_S = 3600.0  # a write takes milliseconds: an older temp file is a killed writer's leftover


def remove_stale_temps(directory: Path, older_than_s: float = STALE_TEMP_S) -> int:
    """Delete temp files of writers that were killed mid-write (``*/.*.tmp`` older than
    ``older_than_s``); return how many. Younger ones may belong to a writer that is still running."""
    n = 0
    cutoff = time.time() - older_than_s
    for f in directory.glob("*/*.tmp"):
        try:
            if f.stat().st_mtime < cutoff:
                f.unlink()
                n += 1
        except FileNotFoundError:
            continue
    if n:
        logger.info("removed %d temp file(s) of interrupted cache writes under %s", n, directory)
    return n


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
