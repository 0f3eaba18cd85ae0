"""A document folder is published whole or not at all: claim its name, write into a staging folder, rename.

Why: a run that is killed, interrupted or runs out of disk must never leave a folder that looks like a
finished document (the 40-page JSON beside 26 of its 40 overlays), and two runs that write a document
of the same name into one output folder must never mix their files.

- **Claim.** A run takes the document name ``S`` by holding an exclusive ``flock`` on ``out/.S.lock``
  for as long as it writes ``S``. A second run that finds the name held takes ``S-2`` (then ``S-3``…)
  and says so; names held by nobody (their owner ended, even by SIGKILL: the kernel drops the lock) are
  free again.
- **Stage.** Every file of the document is written into ``out/.S.partial/``, which only the name's
  holder writes.
- **Publish.** One ``rename`` puts the staging folder in place (an atomic exchange with an existing
  ``out/S/`` on Linux, whose old folder is then removed); files a user put into the old folder, which no
  output format owns, are carried over first.
- **Sweep.** A run removes the staging folders and lock files of names nobody holds (SIGKILL leftovers)
  in the folder it writes to.
- **Turns.** Claims and sweeps in one folder take turns (an ``flock`` on the folder itself, across threads
  and processes): a sweep tries every lock file it sees, and one it tried in the instant between a
  claimer's create and lock made that claimer take ``S-2`` for a name nobody held.

On systems without ``fcntl`` (Windows) names are not locked: runs there must not share an output folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
STAGING_SUFFIX = ".partial"
MAX_STEM_BYTES = 160  # leaves room in a 255-byte file name for "{stem}_layout.pdf", ".{stem}.partial"…
MAX_TRIES = 1000


def fit_name(stem: str, max_bytes: int = MAX_STEM_BYTES) -> str:
    """``stem`` shortened to ``max_bytes`` of UTF-8 when longer (a file name is at most 255 bytes on
    most file systems, and outputs add suffixes), keeping it unique with a hash of the whole name."""
    if len(stem.encode("utf-8")) <= max_bytes:
        return stem
    digest = hashlib.blake2b(stem.encode("utf-8"), digest_size=4).hexdigest()
    head = stem.encode("utf-8")[: max_bytes - len(digest) - 1].decode("utf-8", "ignore").rstrip(" .")
    return f"{head}~{digest}"


# --- locks ------------------------------------------------------------------------------------------
class NameLock:
    """An exclusive ``flock`` on a file, released (and the file removed) by ``release``."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def try_acquire(cls, path: Path) -> NameLock | None:
        """The lock, or None when another open file holds it. The file is re-checked after locking: a
        holder that released it unlinks it first, so a lock on an unlinked file would be worthless."""
        if fcntl is None:  # pragma: no cover - Windows
            return cls(path, None)
        for _ in range(MAX_TRIES):
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return None
                raise
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return cls(path, fd)
            os.close(fd)  # the holder unlinked it between our open and our lock: try the new file
        raise OSError(errno.EBUSY, "could not lock", str(path))

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


@contextlib.contextmanager
def _turn(out_dir: Path) -> Iterator[None]:
    """Hold the folder's turn: an exclusive ``flock`` on the folder itself, held for one claim or sweep.
    A file system that cannot lock a folder gets no turns (as on Windows), not an error."""
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:  # pragma: no cover - a file system without flock on folders
            logger.debug("no folder lock on %s: %s", out_dir, exc)
        yield
    finally:
        os.close(fd)  # closing the last descriptor drops the lock


def _lock_path(out_dir: Path, stem: str) -> Path:
    return out_dir / f".{stem}{LOCK_SUFFIX}"


def staging_path(out_dir: Path, stem: str) -> Path:
    return out_dir / f".{stem}{STAGING_SUFFIX}"


def claim(out_dir: Path, stem: str) -> tuple[str, NameLock]:
    """Take the document name ``stem`` in ``out_dir`` (or ``stem-2``, ``stem-3``… when another live run
    holds it); returns the name taken and its lock. A staging folder left by a dead holder is removed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    candidate, n = stem, 2
    with _turn(out_dir):
        for _ in range(MAX_TRIES):
            lock = NameLock.try_acquire(_lock_path(out_dir, candidate))
            if lock is not None:
                break
            candidate, n = f"{stem}-{n}", n + 1
        else:
            lock = None
    if lock is not None:
        stale = staging_path(out_dir, candidate)
        if stale.exists():
            logger.info("removing %s, left by a run that ended before publishing it", stale)
            shutil.rmtree(stale, ignore_errors=True)
        return candidate, lock
    raise OSError(errno.EBUSY, f"every name from {stem} to {candidate} is being written", str(out_dir))


def sweep(out_dir: Path) -> list[Path]:
    """Remove staging folders and lock files in ``out_dir`` that no live run holds; return them."""
    removed: list[Path] = []
    if fcntl is None or not out_dir.is_dir():  # pragma: no cover - Windows
        return removed
    with _turn(out_dir):
        for entry in out_dir.iterdir():
            name = entry.name
            if not name.startswith("."):
                continue
            if name.endswith(STAGING_SUFFIX) and entry.is_dir():
                stem = name[1 : -len(STAGING_SUFFIX)]
            elif name.endswith(LOCK_SUFFIX) and entry.is_file():
                stem = name[1 : -len(LOCK_SUFFIX)]
            else:
                continue
            lock = NameLock.try_acquire(_lock_path(out_dir, stem))
            if lock is None:
                continue  # a live run writes this name
            try:
                stage = staging_path(out_dir, stem)
                if stage.exists():
                    shutil.rmtree(stage, ignore_errors=True)
                    removed.append(stage)
            finally:
                lock.release()
    if removed:
        logger.info("removed %d unfinished document folder(s) of runs that ended: %s", len(removed),
                    ", ".join(p.name for p in removed))  # fmt: skip
    return removed


# --- publishing -------------------------------------------------------------------------------------
def _renameat2() -> Callable[[str, str], bool] | None:
    """Linux ``renameat2(RENAME_EXCHANGE)``: swap two paths atomically; None where libc lacks it."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError, TypeError):
        return None
    at_fdcwd, exchange = -100, 2

    def swap(a: str, b: str) -> bool:
        if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange) == 0:
            return True
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # file system without exchange
            return False
        raise OSError(err, os.strerror(err), b)

    return swap


_SWAP = _renameat2()


def carry_over(old: Path, new: Path, owned: set[Path]) -> None:
    """Move the user's files from the old document folder into the new one. Output files of ours
    (``owned``) and temp files of earlier runs stay behind; where both folders have a name, the new
    folder's own file wins."""
    for entry in old.iterdir():
        if entry in owned or (entry.name.startswith(".") and entry.name.endswith(".tmp")):
            continue
        target = new / entry.name
        if entry.is_dir() and not entry.is_symlink():
            if target.exists() and not target.is_dir():
                continue
            made = not target.exists()
            target.mkdir(exist_ok=True)
            carry_over(entry, target, owned)  # a folder of ours (overlays/) may hold a file of the user's
            if made and not any(target.iterdir()):
                target.rmdir()
        elif not target.exists() and not target.is_symlink():
            os.replace(entry, target)


def publish(stage: Path, final: Path, owned: Callable[[Path], Iterable[Path]]) -> None:
    """Rename the staging folder ``stage`` to ``final`` in one step, replacing an older ``final``.

    ``owned(folder)`` lists the output files an earlier run may have left in ``folder``: they go with
    the old folder, everything else in it is carried over into the new one.
    """
    if final.is_symlink() or (final.exists() and not final.is_dir()):
        raise FileExistsError(errno.EEXIST, "exists and is not a document folder", str(final))
    if not final.exists():
        try:
            os.rename(stage, final)
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):  # another process made it meanwhile
                raise
    carry_over(final, stage, set(owned(final)))
    if _SWAP is not None and _SWAP(str(stage), str(final)):
        shutil.rmtree(stage, ignore_errors=True)  # ``stage`` now holds the old folder
        return
    aside = stage.with_name(f"{stage.name[: -len(STAGING_SUFFIX)]}.old{STAGING_SUFFIX}")
    os.rename(final, aside)
    os.rename(stage, final)
    shutil.rmtree(aside, ignore_errors=True)


__all__ = [
    "MAX_STEM_BYTES",
    "NameLock",
    "carry_over",
    "claim",
    "fit_name",
    "publish",
    "staging_path",
    "sweep",
]
