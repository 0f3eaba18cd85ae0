"""Run a conversion in a worker thread and stream its progress to a generator.

Why a thread + queue: gradio streams updates from a generator, while ``Converter.convert`` reports
progress through a callback. Files are converted one call each, so a cancel (or a crash) keeps every
file finished before it, and a bad file never hides the good ones.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.exceptions import ConversionCancelled, OcrError
from ocr_app.runtime.load_progress import attach_load_progress, describe_load_step
from ocr_app.schema import DocumentResult

if TYPE_CHECKING:
    from ocr_app.convert import Converter, ConvertOptions, ProgressEvent
    from ocr_app.ui.slots import JobSlots, Ticket

logger = logging.getLogger(__name__)


class CancelRegistry:
    """One cancel flag per running job, keyed by the browser session.

    Why keyed by session: the Cancel button runs as its own event, so it finds the job it should stop
    through the session hash gradio gives both events.
    """

    def __init__(self) -> None:
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def start(self, key: str) -> threading.Event:
        from ocr_app.convert import CancelEvent

        event = CancelEvent()
        with self._lock:
            self._events[key] = event
        return event

    def cancel(self, key: str) -> bool:
        """Set the flag of ``key``'s running job; False when it has none."""
        with self._lock:
            event = self._events.get(key)
        if event is None or event.is_set():
            return False
        event.set()
        return True

    def finish(self, key: str, event: threading.Event) -> None:
        with self._lock:
            if self._events.get(key) is event:
                del self._events[key]

    def running(self, key: str) -> bool:
        with self._lock:
            return key in self._events

    def cancel_all(self, reason: str) -> int:
        """Cancel every running job and drop what it wrote (the server is stopping); return how many."""
        with self._lock:
            events = [e for e in self._events.values() if not e.is_set()]
        for event in events:
            if hasattr(event, "cancel"):
                event.cancel(reason, keep=False)
            else:
                event.set()
        return len(events)


def wait_for_jobs(timeout_s: float) -> int:
    """Wait up to ``timeout_s`` for job worker threads to end; return how many still run."""
    deadline = time.monotonic() + timeout_s
    for thread in [t for t in threading.enumerate() if t.name == JOB_THREAD]:
        thread.join(max(0.0, deadline - time.monotonic()))
    return sum(1 for t in threading.enumerate() if t.name == JOB_THREAD and t.is_alive())


@dataclass
class JobOutcome:
    """What a finished (or cancelled) job produced."""

    documents: list[DocumentResult] = field(default_factory=list)
    cancelled: bool = False
    folder: Path | None = None  # where the job wrote its outputs

    @property
    def failed(self) -> list[DocumentResult]:
        return [d for d in self.documents if d.error]

    @property
    def succeeded(self) -> list[DocumentResult]:
        return [d for d in self.documents if not d.error]


@dataclass
class Waiting:
    """The job waits for a slot of its engine: where it stands, for the person waiting."""

    message: str  # "waiting: 2 jobs ahead (deepseek), about 40 s"
    ahead: int
    seconds: float | None  # expected wait; None until a finished job gives a pace


@dataclass
class Progress:
    """One progress update for the UI: the library's event plus the overall fraction."""

    event: ProgressEvent
    fraction: float  # 0..1 over all files
    message: str  # "File 2 of 3 · scan.png: Recognizing page 1 of 1"


_DONE = object()
JOB_THREAD = "ocr-app-ui-job"  # the worker threads' name (``wait_for_jobs`` finds them by it)


def wait_turn(
    slots: JobSlots, engine: str, cancel: threading.Event, every_s: float = 1.0
) -> Generator[Waiting, None, Ticket | None]:
    """Take a place in ``engine``'s queue; yield ``Waiting`` every ``every_s`` until a slot is free, then
    return the ticket (the caller ``leave``s it when the job ends), or None when ``cancel`` was set while
    waiting (the place is given up at once). Use as ``ticket = yield from wait_turn(...)``."""
    from ocr_app.ui.queue_words import queue_words

    ticket = slots.enter(engine)
    try:
        while not slots.wait(ticket, every_s):
            if cancel.is_set():
                slots.leave(ticket)
                return None
            ahead, seconds = slots.place(ticket)
            yield Waiting(queue_words(ahead, seconds, engine), ahead, seconds)
    except BaseException:  # the consumer went away while waiting (generator closed)
        slots.leave(ticket)
        raise
    return ticket


def stream_conversion(
    converter: Converter,
    inputs: Sequence[str | Path],
    out_dir: Path,
    options: ConvertOptions,
    cancel: threading.Event,
    passwords: dict[str, str] | None = None,
    idle_s: float | None = None,
) -> Iterator[Progress | JobOutcome | None]:
    """Yield ``Progress`` while the worker converts, then one ``JobOutcome``.

    With ``idle_s``, also yield None after each ``idle_s`` without an event, so that a caller that shows
    progress at most every so often can still show the last event it held back (a page that takes long
    after its "Recognizing page 3" event).

    ``passwords`` maps a file name to its PDF password (it overrides ``options.password`` for that file);
    they live only in memory, like the options.

    Closing the generator early (the browser went away) sets ``cancel`` so the worker stops at the next
    page instead of running on with nobody watching.
    """
    events: queue.Queue = queue.Queue()
    outcome = JobOutcome()
    names = [Path(p).name for p in inputs]

    current = [0]

    def quantising(done: int, total: int, label: str) -> None:
        from ocr_app.convert import ProgressEvent

        i = current[0]
        events.put((i, ProgressEvent("quantize", names[i], i, len(names), None, done, total,
                                     describe_load_step(done, total, label))))  # fmt: skip

    def work() -> None:
        detach = attach_load_progress(converter.engines, quantising)
        try:
            for i, path in enumerate(inputs):
                current[0] = i
                if cancel.is_set():
                    outcome.cancelled = True
                    break

                def report(event: ProgressEvent, i: int = i) -> None:
                    events.put((i, event))

                file_options = options
                if len(inputs) > 1 and options.clip_pages is None:
                    # one page range over an upload batch: each file converts the pages it has
                    file_options = replace(file_options, clip_pages=True)
                if passwords and names[i] in passwords:
                    file_options = replace(file_options, password=passwords[names[i]])
                try:
                    docs = converter.convert([path], out_dir / f"{i:03d}", file_options, report, cancel)
                except ConversionCancelled as exc:
                    outcome.cancelled = True
                    if exc.partial is not None:  # its finished pages, with outputs written: downloadable
                        outcome.documents.append(exc.partial)
                    break
                except OcrError as exc:  # the converter raises only when the input names nothing
                    docs = [
                        DocumentResult(
                            source=names[i], error=str(exc), error_kind="input", error_type=type(exc).__name__
                        )
                    ]
                except Exception as exc:  # never let one file take the job down silently
                    if cancel.is_set():  # e.g. the server stopping removed the folder under it
                        logger.info("conversion of %s ended after its cancel: %s", path, exc)
                    else:
                        logger.exception("conversion of %s crashed", path)
                    docs = [
                        DocumentResult(
                            source=names[i],
                            error=f"Internal error: {type(exc).__name__}: {exc}",
                            error_kind="internal",
                        )
                    ]
                outcome.documents.extend(docs)
        finally:
            detach()
            events.put(_DONE)

    worker = threading.Thread(target=work, name=JOB_THREAD, daemon=True)
    worker.start()
    try:
        while True:
            try:  # the worker always ends with _DONE (finally), so this cannot hang
                item = events.get(timeout=idle_s)
            except queue.Empty:
                yield None
                continue
            if item is _DONE:
                break
            file_index, event = item
            yield _progress(event, file_index, len(names))
        worker.join()
        yield outcome
    finally:
        if worker.is_alive():  # generator closed early: stop the worker at its next check
            cancel.set()


def _progress(event: ProgressEvent, file_index: int, file_count: int) -> Progress:
    within = event.done / event.total if event.total else 0.0
    fraction = min(1.0, (file_index + within) / max(1, file_count))
    prefix = f"File {file_index + 1} of {file_count} · " if file_count > 1 else ""
    return Progress(event=event, fraction=fraction, message=prefix + event.message)
