"""How many conversions run at once per engine, who waits for which, and about how long.

Why per engine: the app offers several engines at once, and what each serves side by side differs
(``Capabilities.max_concurrent_jobs``): the graph decoder batches the pages of many jobs, a server fleet
too, while the light CPU engine already uses every core for one page. Gradio's queue admits up to the
sum; here each job then takes a slot of its own engine, first come first served, so a light-engine job
never waits behind DeepSeek jobs and vice versa. A job that waits is told its place and an estimate:
the running jobs' remaining time (elapsed time / fraction done) and the recent jobs' mean time for the
ones queued before it, spread over the engine's slots.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

RECENT_JOBS = 20  # finished jobs per engine whose durations make the estimate


@dataclass(eq=False)
class Ticket:
    """One job's place: waiting for a slot of ``engine`` until ``admitted``."""

    engine: str
    number: int
    admitted: bool = False
    started: float = 0.0
    fraction: float = 0.0  # of the job done, for the estimate of those waiting behind it
    left: bool = False


@dataclass
class _Engine:
    limit: int
    waiting: deque[Ticket] = field(default_factory=deque)
    running: list[Ticket] = field(default_factory=list)
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_JOBS))
    peak: int = 0  # most jobs that ran at once


class JobSlots:
    """Per-engine slots with FIFO waiting. Thread-safe."""

    def __init__(self, limits: Mapping[str, int], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._engines = {name: _Engine(max(1, int(n))) for name, n in limits.items()}
        self._clock = clock
        self._cond = threading.Condition()
        self._numbers = itertools.count(1)

    def limit(self, engine: str) -> int:
        return self._get(engine).limit

    def peak(self, engine: str) -> int:
        """The most jobs of ``engine`` that ran at once so far."""
        with self._cond:
            return self._get(engine).peak

    def total(self) -> int:
        """Jobs that may run at once over every engine (gradio's queue admits that many)."""
        return sum(e.limit for e in self._engines.values())

    def _get(self, engine: str) -> _Engine:
        if engine not in self._engines:  # an engine offered later (a plug-in): one at a time
            self._engines[engine] = _Engine(1)
        return self._engines[engine]

    # --- a job's life ------------------------------------------------------------------------------
    def enter(self, engine: str) -> Ticket:
        """Queue a job for ``engine``; it is admitted at once when a slot is free."""
        with self._cond:
            state = self._get(engine)
            ticket = Ticket(engine, next(self._numbers))
            state.waiting.append(ticket)
            self._admit(state)
            return ticket

    def wait(self, ticket: Ticket, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the ticket's slot; True once admitted."""
        with self._cond:
            self._cond.wait_for(lambda: ticket.admitted or ticket.left, timeout=timeout)
            return ticket.admitted

    def progress(self, ticket: Ticket, fraction: float) -> None:
        ticket.fraction = max(0.0, min(1.0, float(fraction)))

    def leave(self, ticket: Ticket) -> None:
        """The job ended (or gave up waiting): its slot goes to the next job at once."""
        with self._cond:
            if ticket.left:
                return
            ticket.left = True
            state = self._get(ticket.engine)
            if ticket in state.running:
                state.running.remove(ticket)
                state.recent.append(self._clock() - ticket.started)
            elif ticket in state.waiting:
                state.waiting.remove(ticket)
            self._admit(state)
            self._cond.notify_all()

    def idle(self) -> bool:
        """No job runs or waits, for any engine."""
        with self._cond:
            return not any(e.running or e.waiting for e in self._engines.values())

    def _admit(self, state: _Engine) -> None:
        while state.waiting and len(state.running) < state.limit:
            ticket = state.waiting.popleft()
            ticket.admitted, ticket.started = True, self._clock()
            state.running.append(ticket)
            state.peak = max(state.peak, len(state.running))
            self._cond.notify_all()

    # --- what a waiting job is told -------------------------------------------------------------------
    def place(self, ticket: Ticket) -> tuple[int, float | None]:
        """(jobs ahead of it: running ones that hold the slots it waits for, plus those queued before
        it; the expected seconds until it starts, None while no job has finished to learn from)."""
        with self._cond:
            state = self._get(ticket.engine)
            if ticket.admitted or ticket not in state.waiting:
                return 0, 0.0
            before = list(state.waiting).index(ticket)
            return len(state.running) + before, self._estimate(state, before)

    def estimate_after(self, engine: str, queued: int) -> float | None:
        """Expected seconds until a job queued behind ``queued`` others (not yet here) starts."""
        with self._cond:
            state = self._get(engine)
            return self._estimate(state, len(state.waiting) + queued)

    def _estimate(self, state: _Engine, before: int) -> float | None:
        if not state.recent:
            return None
        mean = sum(state.recent) / len(state.recent)
        now = self._clock()
        free_at = []
        for t in state.running:  # a running job's remaining time from its pace so far
            elapsed = now - t.started
            left = elapsed * (1 - t.fraction) / t.fraction if t.fraction > 0 else max(mean - elapsed, 0.0)
            free_at.append(max(0.0, left))
        free_at += [0.0] * max(0, state.limit - len(free_at))
        heapq.heapify(free_at)
        for _ in range(before):  # each job queued before it takes the first free slot for ``mean``
            heapq.heapreplace(free_at, free_at[0] + mean)
        return free_at[0]


__all__ = ["JobSlots", "Ticket"]
