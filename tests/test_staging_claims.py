"""Files of one batch that convert side by side each keep their own document name.

Each file's writer sweeps the output folder (SIGKILL leftovers) and then claims its name
(``render/staging``). A sweep tries the lock of every lock file it sees; one that tried a name in the
instant between its claimer's create and lock made that claimer write ``f0-2/`` for a name nobody else
held (CI saw ``f0/f0.md`` missing once, in ``test_concurrent_files``). Here ``flock`` is slowed to open
that instant wide, and many threads sweep and claim at once, as a batch's writers do.
"""

from __future__ import annotations

import threading
import time
import types

from ocr_app.render import staging

_claiming = threading.local()


def _claim(out, stem: str):
    _claiming.on = True
    try:
        return staging.claim(out, stem)
    finally:
        _claiming.on = False


def _slow_fcntl(monkeypatch) -> None:
    """A claimer's ``flock`` comes late: between its lock file's create and its lock, a sweep that
    sees the file has its chance to take it."""
    real = staging.fcntl

    def flock(fd: int, op: int) -> None:
        if getattr(_claiming, "on", False):
            time.sleep(0.005)
        real.flock(fd, op)

    monkeypatch.setattr(
        staging, "fcntl", types.SimpleNamespace(flock=flock, LOCK_EX=real.LOCK_EX, LOCK_NB=real.LOCK_NB)
    )


def test_names_claimed_while_other_writers_sweep_are_never_renamed(tmp_path, monkeypatch):
    _slow_fcntl(monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    writers, rounds = 8, 6
    got: list[tuple[int, str]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(writers)

    def writer(n: int) -> None:
        try:
            for _ in range(rounds):
                start.wait(timeout=30)
                staging.sweep(out)  # what DocumentWriter.open does first
                stem, lock = _claim(out, f"f{n}")
                got.append((n, stem))
                start.wait(timeout=30)  # every name held at once, then all released
                lock.release()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
            start.abort()

    stop = threading.Event()

    def sweeper() -> None:  # the writers of files opened a moment later
        while not stop.is_set():
            staging.sweep(out)

    sweepers = [threading.Thread(target=sweeper) for _ in range(3)]
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for t in sweepers + threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    stop.set()
    for t in sweepers:
        t.join(timeout=30)
    assert not errors, errors
    assert len(got) == writers * rounds
    renamed = [(n, stem) for n, stem in got if stem != f"f{n}"]
    assert renamed == []
    assert sorted(p.name for p in out.iterdir()) == []  # released locks leave no file behind


def test_a_name_a_live_writer_holds_is_still_taken_as_the_next_one(tmp_path, monkeypatch):
    """The turns change nothing for a name really held: the second claim takes ``-2`` at once."""
    _slow_fcntl(monkeypatch)
    out = tmp_path / "out"
    first, lock = _claim(out, "same")
    try:
        staging.sweep(out)  # a sweep leaves the held name alone
        second, lock2 = _claim(out, "same")
        lock2.release()
    finally:
        lock.release()
    assert (first, second) == ("same", "same-2")
