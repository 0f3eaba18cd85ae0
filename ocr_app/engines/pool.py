"""A pool of interchangeable engines: a fleet of remote endpoints, or one engine per local GPU.

Why one generic pool: "send each page to the least-busy worker, take a failing worker out for a while,
retry its pages elsewhere" is the same problem for vLLM endpoints and for GPUs. The pool is itself an
``Engine``, so the converter, router, caches and UI use it like a single engine.

Dispatch: pages wait in a per-call queue; whenever a member has a free slot (its pages in flight are
below ``slots``, counted across every concurrent call, so queued jobs share the members), the next
pages go to the member with the fewest pages in flight per unit of weight. A member that raises is
marked down with exponential backoff (``backoff_s`` doubling up to ``max_backoff_s``); when the
backoff has passed it is probed (``probe``) before it gets pages again. The pages it did not finish
go back to the queue for the other members. A page is never sent twice to the same member, and is
only given up when every member has failed on it or every member it has not tried stays down.

Hedging (the server fleet): a page whose member has not answered after the fleet's recent p95 page
time × ``Hedging.factor`` is re-sent to another healthy member with a free slot; the first answer wins
and the other is dropped (a hung endpoint would otherwise hold its pages for the whole timeout while the
others idle). Until it answers again, a member with such an overdue page gets no new pages while
another member can take them. The winning page carries a note ``"hedged: …"`` (``hedged``).

Each page's output carries the note ``"read by <kind> <label>"`` (``read_by`` parses it), so the
JSON, the CLI summary and the UI can say which endpoint or GPU read it.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ocr_app.engine_api import Engine
from ocr_app.exceptions import ConfigError, EngineUnavailableError, InputError, OcrError
from ocr_app.schema import EngineOutput, PageRequest

logger = logging.getLogger(__name__)

READ_BY = "read by "
HEDGED = "hedged: "
_POLL_S = 0.05  # how often a waiting call re-checks slots freed by other calls, expired backoffs, hedges


def read_by(notes: Sequence[str]) -> str | None:
    """The member label recorded in a page's notes (``"read by endpoint http://a"`` → ``"http://a"``)."""
    for note in notes:
        if note.startswith(READ_BY):
            parts = note[len(READ_BY) :].split(" ", 1)
            return parts[1] if len(parts) == 2 else parts[0]
    return None


def hedged(notes: Sequence[str]) -> str | None:
    """The hedging note of a page (``"hedged: http://b had not answered …"``), or None."""
    return next((n for n in notes if n.startswith(HEDGED)), None)


@dataclass(frozen=True)
class Hedging:
    """When a slow member's page is re-sent: after ``factor`` × the p95 of the fleet's last ``window``
    page times (once ``min_samples`` pages have answered), and never before ``min_s`` seconds.

    ``cold_s``: until then, after this many seconds (None: not at all). Why: a member that takes the
    first pages of a run and never answers held them for the whole timeout, the fleet having no page
    times yet to call it slow (issue 31)."""

    factor: float = 1.5
    min_s: float = 1.0
    min_samples: int = 4
    window: int = 64
    cold_s: float | None = None


def _p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _member_fault(exc: BaseException) -> bool:
    """By default every failure is the member's (a dead GPU, a lost server) except bad input."""
    if isinstance(exc, (InputError, ConfigError)):
        return False
    return bool(getattr(exc, "member_fault", True))


@dataclass
class PoolMember:
    """One worker of the pool and its health."""

    label: str
    engine: Engine
    weight: float = 1.0
    slots: int = 8  # pages in flight at most on this member
    probe: Callable[[], None] | None = None  # raises when the member is unhealthy
    in_flight: int = 0
    served: int = 0
    failures: int = 0  # consecutive failures (reset by a success or a good probe)
    down_until: float = 0.0  # monotonic time; 0 = up
    last_error: str | None = None
    probing: bool = field(default=False, repr=False)
    hedged_from: int = 0  # pages re-sent elsewhere because this member was slow
    slow: bool = field(default=False, repr=False)  # a page of it is overdue: no new pages while others can

    def is_up(self, now: float) -> bool:
        """Up, or (without a probe) its backoff has passed: then the next pages are the probe."""
        return self.failures == 0 or (self.probe is None and self.down_until <= now)

    def describe(self, now: float) -> dict[str, object]:
        state = "up" if self.failures == 0 else ("down" if self.down_until > now else "retrying")
        return {
            "label": self.label,
            "state": state,
            "weight": self.weight,
            "slots": self.slots,
            "in_flight": self.in_flight,
            "pages_read": self.served,
            "pages_hedged_away": self.hedged_from,
            "last_error": self.last_error,
            "engine": self.engine.describe(),
        }


class EnginePool(Engine):
    """Pages to the least-loaded healthy member; failed members backed off, their pages retried."""

    def __init__(
        self,
        members: Sequence[PoolMember],
        *,
        kind: str = "member",
        chunk: int = 1,
        backoff_s: float = 2.0,
        max_backoff_s: float = 300.0,
        give_up_failures: int = 3,
        member_fault: Callable[[BaseException], bool] = _member_fault,
        clock: Callable[[], float] = time.monotonic,
        hedging: Hedging | None = None,
    ) -> None:
        """``hedging``: re-send pages of slow members (one page per task, ``chunk`` 1); None: never."""
        if not members:
            raise ConfigError("an engine pool needs at least one member")
        labels = [m.label for m in members]
        if len(set(labels)) != len(labels):
            raise ConfigError(f"pool members need distinct labels, got {labels}")
        for m in members:
            if m.weight <= 0 or m.slots < 1:
                raise ConfigError(f"{kind} {m.label}: weight must be > 0 and slots ≥ 1")
        self.members = list(members)
        self.kind = kind
        self.chunk = max(1, int(chunk))
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.give_up_failures = give_up_failures
        self._member_fault = member_fault
        self._clock = clock
        self._lock = threading.Lock()
        self._loaded = False
        self.hedging = hedging
        self._times: deque[float] = deque(maxlen=hedging.window if hedging else 1)  # recent page seconds

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def name(self) -> str:  # type: ignore[override]
        return self.members[0].engine.name

    @property
    def pages_at_once(self) -> int:
        """Pages worth handing over per call: enough to fill every member's slots (at most 64)."""
        return min(64, sum(m.slots for m in self.members))

    def load(self) -> None:
        """Load every member; members that fail are marked down. Fails only when none loads."""
        if self._loaded:
            return
        errors = []
        for m in self.members:
            try:
                m.engine.load()
            except OcrError as exc:
                self._mark_down(m, exc)
                errors.append(f"{m.label}: {exc}")
        if len(errors) == len(self.members):
            raise EngineUnavailableError(f"No {self.kind} of the pool is usable: " + "; ".join(errors))
        self._loaded = True

    def preload(self) -> None:
        for m in self.members:
            try:
                m.engine.preload()
            except OcrError as exc:
                self._mark_down(m, exc)
        self._loaded = True

    def unload(self) -> None:
        for m in self.members:
            m.engine.unload()
        self._loaded = False

    def park(self) -> None:
        """Each member parks (a GPU engine keeps its weights in host memory); ``load`` wakes them."""
        for m in self.members:
            m.engine.park()
        self._loaded = False

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def capabilities(self):
        """The members run the same engine: the first one's choices."""
        return self.members[0].engine.capabilities()

    def describe(self) -> dict[str, object]:
        info = dict(self.members[0].engine.describe())
        now = self._clock()
        with self._lock:
            info["pool"] = {"kind": self.kind, "members": [m.describe(now) for m in self.members]}
        info["loaded"] = self._loaded
        return info

    # -- health --------------------------------------------------------------------------------
    def _mark_down(self, m: PoolMember, exc: BaseException) -> None:
        with self._lock:
            m.failures += 1
            wait_s = min(self.max_backoff_s, self.backoff_s * 2 ** (m.failures - 1))
            m.down_until = self._clock() + wait_s
            m.last_error = f"{type(exc).__name__}: {exc}"[:300]
        logger.warning("%s %s marked down for %.1f s: %s", self.kind, m.label, wait_s, m.last_error)

    def _mark_up(self, m: PoolMember) -> None:
        with self._lock:
            if m.failures:
                logger.info("%s %s is back", self.kind, m.label)
            m.failures = 0
            m.down_until = 0.0
            m.slow = False

    def _probe_due(self, now: float) -> list[PoolMember]:
        """Down members whose backoff has passed; they are probed before they get pages again."""
        due = []
        with self._lock:
            for m in self.members:
                if m.failures and m.down_until <= now and not m.probing and m.probe is not None:
                    m.probing = True
                    due.append(m)
        return due

    def _run_probe(self, m: PoolMember) -> None:
        try:
            m.probe()  # type: ignore[misc]
        except Exception as exc:
            with self._lock:
                m.probing = False
            self._mark_down(m, exc)
            return
        with self._lock:
            m.probing = False
        self._mark_up(m)

    # -- prediction ----------------------------------------------------------------------------
    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        results = dict(self.predict_stream(requests))
        return [results[i] for i in range(len(requests))]

    def _pick(self, page_tried: set[str], now: float) -> PoolMember | None:
        """The up member with a free slot and the fewest pages in flight per weight (lock held); a slow
        member (a page of it is overdue) only when no other member that could take the page is up."""
        best, best_score = None, 0.0
        others_up = any(m.is_up(now) and not m.slow and m.label not in page_tried for m in self.members)
        for m in self.members:
            if m.label in page_tried or m.in_flight >= m.slots or not m.is_up(now):
                continue
            if m.slow and others_up:
                continue
            score = (m.in_flight + 1) / m.weight
            if best is None or score < best_score:
                best, best_score = m, score
        return best

    def _hopeless(self, tried: set[str]) -> bool:
        """No member can still take this page: each has failed on it or keeps failing its probes."""
        return all(m.label in tried or m.failures >= self.give_up_failures for m in self.members)

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Pages are pulled from ``requests`` lazily, enough to fill every member's slots
        (``pages_at_once``), so a whole document streams through without being rendered up front."""
        source = iter(requests)
        pulled: list[PageRequest] = []
        todo: deque[int] = deque()
        tried: dict[int, set[str]] = {}
        errors: dict[int, BaseException] = {}
        running: dict[int, dict[str, float]] = {}  # page -> member label -> when that attempt started
        answered = 0

        def top_up() -> None:
            while len(pulled) - answered - len(errors) < self.pages_at_once:
                req = next(source, None)
                if req is None:
                    return
                tried[len(pulled)] = set()
                todo.append(len(pulled))
                pulled.append(req)

        top_up()
        if not pulled:
            return
        if not self._loaded:
            self.load()
        inbox: queue.Queue = queue.Queue()
        while todo or running:
            if any(pulled[i] is not None and pulled[i].cancelled for i in (*todo, *running)):
                return  # the job was cancelled: queued pages are not sent, answers on their way dropped
            self._dispatch(pulled, todo, tried, errors, inbox, running)
            if self.hedging is not None:
                self._hedge(pulled, tried, inbox, running)
            for m in self._probe_due(self._clock()):
                threading.Thread(target=self._run_probe, args=(m,), daemon=True).start()
            try:
                msg = inbox.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            if msg[0] == "page":
                _, i, out, member = msg
                attempts = running.pop(i, None)
                if attempts is None:
                    continue  # the other attempt of a hedged page answered first: this one is dropped
                self._answered(i, out, member, attempts)
                answered += 1
                pulled[i] = None  # type: ignore[call-overload]  # answered: its page image is not kept
                yield i, out
            else:  # "failed"
                _, member, indices, exc = msg
                for i in indices:
                    attempts = running.get(i)
                    if attempts is None:
                        continue  # answered by another member meanwhile
                    attempts.pop(member.label, None)
                    if attempts:
                        continue  # a hedged copy of the page still runs elsewhere
                    del running[i]
                    if self._member_fault(exc) and not self._hopeless(tried[i]):
                        todo.appendleft(i)  # keep reading order: retried pages go first
                    else:
                        errors[i] = exc
            top_up()
        if errors:
            first = min(errors)
            exc = errors[first]
            logger.error("%d page(s) could not be read by any %s", len(errors), self.kind)
            if isinstance(exc, OcrError):
                raise exc
            raise EngineUnavailableError(f"no {self.kind} could read the page: {exc}") from exc

    def _answered(self, i: int, out: EngineOutput, member: PoolMember, attempts: dict[str, float]) -> None:
        """Record the page time (hedging's p95) and, for a hedged page, say so in its notes."""
        now = self._clock()
        started = attempts.get(member.label, now)
        with self._lock:
            if self.hedging is not None and len(attempts) == 1:
                self._times.append(now - started)  # a plain answer (a hedged one would skew the p95)
            member.slow = False
        if len(attempts) > 1:
            first = min(attempts, key=attempts.get)
            if first == member.label:
                note = (
                    f"{HEDGED}re-sent after {now - started:.1f} s; the first {self.kind}'s answer came first"
                )
            else:
                note = (
                    f"{HEDGED}{first} had not answered after {now - attempts[first]:.1f} s; re-sent to "
                    f"{member.label}, whose answer was kept"
                )
            out.notes.append(note)

    def hedge_after(self) -> float | None:
        """Seconds after which a page is re-sent (None: hedging off, or too few page times yet)."""
        h = self.hedging
        if h is None:
            return None
        with self._lock:
            samples = list(self._times)
        if len(samples) < h.min_samples:
            return None if h.cold_s is None else max(h.min_s, h.cold_s)
        return max(h.min_s, _p95(samples) * h.factor)

    def _hedge(self, requests, tried, inbox: queue.Queue, running: dict[int, dict[str, float]]) -> None:
        """Re-send each overdue page (one attempt only, older than ``hedge_after``) to another member
        with a free slot; its slow member gets no new pages until it answers again."""
        limit = self.hedge_after()
        if limit is None:
            return
        now = self._clock()
        for i, attempts in sorted(running.items()):
            if len(attempts) != 1:
                continue
            ((label, started),) = attempts.items()
            if now - started < limit:
                continue
            with self._lock:
                slow = next(m for m in self.members if m.label == label)
                slow.slow = True
                member = self._pick(tried[i] | {label}, now)
                if member is None:
                    return  # no free slot anywhere: look again on the next round
                tried[i].add(member.label)
                member.in_flight += 1
                slow.hedged_from += 1
            attempts[member.label] = now
            logger.info(
                "%s %s has not answered page %d after %.1f s (hedge after %.1f s): re-sent to %s",
                self.kind, label, requests[i].page.index + 1, now - started, limit, member.label,
            )  # fmt: skip
            self._start(member, [i], requests, inbox)

    def _start(self, member: PoolMember, indices: list[int], requests, inbox: queue.Queue) -> None:
        threading.Thread(
            target=self._task, args=(member, indices, requests, inbox), name=f"pool-{self.kind}", daemon=True
        ).start()

    def _dispatch(self, requests, todo: deque[int], tried, errors, inbox: queue.Queue, running) -> int:
        """Hand queued pages to members with free slots; return the number of tasks started."""
        started = 0
        now = self._clock()
        while todo:
            with self._lock:
                i = todo[0]
                if self._hopeless(tried[i]):
                    todo.popleft()
                    errors.setdefault(i, EngineUnavailableError(self._hopeless_msg(tried[i])))
                    continue
                member = self._pick(tried[i], now)
                if member is None:
                    return started
                # share the queue among the members that could take it, so one GPU does not take a
                # whole chunk while another idles
                able = sum(1 for m in self.members if m.is_up(now) and m.label not in tried[i]) or 1
                free = min(member.slots - member.in_flight, self.chunk, math.ceil(len(todo) / able))
                take = [todo.popleft()]
                while todo and len(take) < free and member.label not in tried[todo[0]]:
                    take.append(todo.popleft())
                for j in take:
                    tried[j].add(member.label)
                    running[j] = {member.label: now}
                member.in_flight += len(take)
            self._start(member, take, requests, inbox)
            started += 1
        return started

    def _hopeless_msg(self, tried: set[str]) -> str:
        downs = [f"{m.label} ({m.last_error})" for m in self.members if m.label not in tried]
        return f"every {self.kind} failed on this page or is down: " + ("; ".join(downs) or "all tried")

    def _task(self, member: PoolMember, indices: list[int], requests, inbox: queue.Queue) -> None:
        """Run one member on some pages; tag and forward each page as it finishes. A failure marks the
        member down here, not in the call: the call may have finished meanwhile (a hedged page)."""
        left = list(indices)
        try:
            sub = [requests[i] for i in indices]
            for j, out in member.engine.predict_stream(sub):
                i = indices[j]
                out.notes.append(f"{READ_BY}{self.kind} {member.label}")
                with self._lock:
                    member.in_flight -= 1
                    member.served += 1
                    left.remove(i)
                inbox.put(("page", i, out, member))
            if member.failures:
                self._mark_up(member)
        except BaseException as exc:
            logger.warning("%s %s failed on %d page(s): %s", self.kind, member.label, len(left), exc)
            with self._lock:
                member.in_flight -= len(left)
            if self._member_fault(exc):
                self._mark_down(member, exc)
            inbox.put(("failed", member, list(left), exc))


__all__ = ["HEDGED", "READ_BY", "EnginePool", "Hedging", "PoolMember", "hedged", "read_by"]
