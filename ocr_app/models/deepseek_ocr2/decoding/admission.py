"""Which waiting page gets the next free decode slot: a fair share per request, not first come first served.

Why: one decoder serves every conversion in the process (app sessions, API calls, the files of a CLI
batch). With one FIFO over pages, a 1-page request that arrives while a 256-page job decodes waits
behind every page that job has queued. Here each request (``group``: one document's page stream) has
its own queue, and a free slot goes to the group that holds the fewest slots (ties: the group served
least recently), so a newcomer's page is admitted at the next free slot and the long job keeps the
slots nobody else asks for (work-conserving max-min fairness over slots, the way a fair-share CPU
scheduler splits cores). Within a group pages keep their order.

A small request still decodes at the step time of the whole batch: beside 63 pages of a long job, a
step costs about twice a lone page's. So while a small request (at most ``SMALL_REQUEST_PAGES`` pages
waiting or decoding) is in the decoder, larger requests get no new slots beyond ``batch_cap`` pages in
the batch (``take(..., batch_cap=, busy=)``): the long job's pages finish and are refilled only up to
that size, the small request's step gets faster, and the long job keeps decoding the pages it has. A
small request that finds every slot taken parks a few of the long job's pages (the scheduler's
``_make_room``) and gets steps of its own between the whole batch's (``PageDecoder.run_chunk``).
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

logger = logging.getLogger(__name__)

SMALL_REQUEST_PAGES = 4  # a request with at most this many pages waiting or decoding is small


class FairQueue:
    """Pages waiting for a slot, one FIFO per group. Not thread-safe: the scheduler's worker owns it."""

    def __init__(self) -> None:
        self._groups: dict[Any, deque[tuple[Any, Future]]] = {}
        self._last_turn: dict[Any, int] = {}  # group → tick of its last admission (RR tie-break)
        self._tick = itertools.count()

    def push(self, group: Any, request: Any, future: Future) -> None:
        self._groups.setdefault(group, deque()).append((request, future))
        self._last_turn.setdefault(group, -1)  # a newcomer goes first among groups holding as many slots

    def __len__(self) -> int:
        return sum(len(q) for q in self._groups.values())

    def __bool__(self) -> bool:
        return any(self._groups.values())

    def requests(self) -> Iterator[Any]:
        """Every waiting request (cancelled ones included until the next ``take``)."""
        for q in self._groups.values():
            for r, _ in q:
                yield r

    def waiting(self) -> dict[Any, list[Future]]:
        """The futures of the pages waiting, per group (readers skip those cancelled since)."""
        return {g: [f for _, f in q] for g, q in self._groups.items() if q}

    def drain(self) -> list[tuple[Any, Future]]:
        """Remove and return every waiting page (scheduler shutdown)."""
        items = [item for q in self._groups.values() for item in q]
        self._groups.clear()
        return items

    def take(
        self,
        n: int,
        fits: Callable[[Any], bool],
        held: dict[Any, int],
        *,
        batch_cap: int = 0,
        busy: int = 0,
    ) -> list[tuple[Any, Any, Future]]:
        """Up to ``n`` pages for free slots as ``(group, request, future)``, in admission order.

        Each pick goes to the group holding the fewest slots (``held`` plus what this call already gave
        it), ties to the group admitted least recently. A page that does not ``fit`` (it needs longer
        slots than the decoder has) stays and the group's next page may pass it; cancelled pages are
        dropped here. ``batch_cap`` (0: none): while a small request is in the decoder, pages of larger
        requests are taken only while the batch (``busy`` slots plus what is taken) stays below it."""
        self._drop_cancelled()
        taken: list[tuple[Any, Any, Future]] = []
        load = dict(held)
        blocked: set[Any] = set()
        small = self._small(held) if batch_cap > 0 else set()
        while len(taken) < n:
            capped = bool(small) and busy + len(taken) >= batch_cap
            candidates = [
                g for g, q in self._groups.items() if q and g not in blocked and (not capped or g in small)
            ]
            if not candidates:
                break
            group = min(candidates, key=lambda g: (load.get(g, 0), self._last_turn.get(g, -1)))
            q = self._groups[group]
            pos = next((i for i, (r, _) in enumerate(q) if fits(r)), None)
            if pos is None:
                blocked.add(group)
                continue
            request, future = q[pos]
            del q[pos]
            taken.append((group, request, future))
            load[group] = load.get(group, 0) + 1
            self._last_turn[group] = next(self._tick)
        self._forget_idle(load)
        return taken

    def small_groups(self, held: dict[Any, int]) -> set[Any]:
        """The small requests now (see ``_small``)."""
        return self._small(held)

    def waiting_in(self, groups: set[Any]) -> int:
        """Pages of ``groups`` waiting here (cancelled ones included until the next ``take``)."""
        return sum(len(self._groups.get(g, ())) for g in groups)

    def _small(self, held: dict[Any, int]) -> set[Any]:
        """Groups with at most ``SMALL_REQUEST_PAGES`` pages waiting or decoding."""
        groups = set(self._groups) | {g for g, n in held.items() if n}
        return {g for g in groups if held.get(g, 0) + len(self._groups.get(g, ())) <= SMALL_REQUEST_PAGES}

    def _drop_cancelled(self) -> None:
        for g, q in self._groups.items():
            if any(f.cancelled() for _, f in q):
                self._groups[g] = deque((r, f) for r, f in q if not f.cancelled())

    def _forget_idle(self, held: dict[Any, int]) -> None:
        """Drop empty queues; forget the turn of groups that neither wait nor hold a slot."""
        for g in [g for g, q in self._groups.items() if not q]:
            del self._groups[g]
        for g in [g for g in self._last_turn if g not in self._groups and not held.get(g)]:
            del self._last_turn[g]


__all__ = ["SMALL_REQUEST_PAGES", "FairQueue"]
