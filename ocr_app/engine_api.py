"""The one narrow engine interface.

Why: the UI, CLI and converter must not care whether a page is read by DeepSeek-OCR-2 on a GPU, the
light CPU engine, the PDF text layer or a remote server. An engine knows nothing about documents,
files or the UI: it takes page requests and returns engine outputs.
"""

from __future__ import annotations

import abc
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from ocr_app.schema import EngineOutput, PageRequest


@dataclass(frozen=True)
class Capabilities:
    """What an engine is and offers front ends: the UI fills its dropdowns, labels and notes and the CLI
    its help from these, and the writer and converter read an engine's facts through them, so a new
    engine (or a new mode of one) needs no change above the engine.

    The identity (``name`` … ``help``) is registered once per engine kind in ``ocr_app.choices``;
    an engine's ``capabilities()`` adds what it offers now. Empty tuples mean "this engine has no such
    choice" (the text layer ignores prompts and modes).
    """

    name: str = ""  # the registry key, the ``--engine`` value and ``EngineOutput.engine``
    label: str = ""  # what it is, for people: "DeepSeek-OCR-2"
    prompted: bool = False  # takes a prompt and a resolution mode (others record None for both)
    keeps_table_html: bool = False  # its tables are HTML to keep; others' "<table>" text is escaped
    reads_scans: bool = False  # reads page images (an OCR engine), not only embedded text
    wants_gpu: bool = False  # runs on the CPU too, but slowly: front ends warn without a GPU
    vision_cache: bool = False  # reuses a page's vision features (the cross-page cache): others ignore it
    help: str = ""  # how to get it working where it cannot run (the web app's banner)
    # settings it cannot run without: (``Settings`` field, what it is for people), e.g. the remote
    # engine's ("remote_url", "an endpoint"); the CLI refuses to start without them (exit 2)
    requires: tuple[tuple[str, str], ...] = ()
    prompts: tuple[tuple[str, str], ...] = ()  # (preset name, label for people)
    custom_prompt: bool = False  # accepts free prompt text besides the presets
    modes: tuple[str, ...] = ()  # resolution modes, the engine's own default first
    precisions: tuple[str, ...] = ()  # dtype choices (``auto`` included where it applies)
    output: str = "blocks"  # what ``EngineOutput`` carries: every engine returns blocks
    # Conversions worth running at once. Above 1 when the engine batches the pages of concurrent
    # conversions (the graph decoder, a fleet of servers): the app admits that many jobs and a CLI batch
    # overlaps that many files. A CPU engine gives what its cores run side by side.
    max_concurrent_jobs: int = 1

    @property
    def batches(self) -> bool:
        """Whether concurrent conversions share the engine's batches (and so gain from overlapping)."""
        return self.max_concurrent_jobs > 1

    def merge(self, other: Capabilities) -> Capabilities:
        """The union (order kept, ``self`` first, ``self``'s name and label): what a router over both
        engines offers."""

        def union(a: tuple, b: tuple) -> tuple:
            return tuple(dict.fromkeys((*a, *b)))

        return replace(
            self,
            prompted=self.prompted or other.prompted,
            keeps_table_html=self.keeps_table_html or other.keeps_table_html,
            reads_scans=self.reads_scans or other.reads_scans,
            wants_gpu=self.wants_gpu or other.wants_gpu,
            prompts=union(self.prompts, other.prompts),
            custom_prompt=self.custom_prompt or other.custom_prompt,
            modes=union(self.modes, other.modes),
            precisions=union(self.precisions, other.precisions),
            max_concurrent_jobs=max(self.max_concurrent_jobs, other.max_concurrent_jobs),
        )


class Engine(abc.ABC):
    """Load once, run batches of page requests, unload."""

    name: str = "engine"
    pages_at_once: int = 0  # pages worth passing per call (a pool of GPUs); 0 = the caller decides

    @abc.abstractmethod
    def load(self) -> None:
        """Make the engine ready. Idempotent."""

    @abc.abstractmethod
    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        """Return one output per request, in order. May raise ``OcrError`` for the whole batch."""

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Yield ``(request_index, output)`` as pages finish. Engines that batch override this.

        ``requests`` may be a lazy iterable (the converter renders pages as they are pulled): take
        pages from it only as fast as they can be worked on, and never ask for its length."""
        for i, req in enumerate(requests):
            yield i, self.predict_batch([req])[0]

    def preload(self) -> None:
        """Load everything a first request would need (servers call this before serving)."""
        self.load()

    @abc.abstractmethod
    def unload(self) -> None:
        """Release every resource the engine holds (GPU memory included). Idempotent."""

    def park(self) -> None:
        """Give the device back while idle, keeping what makes the next ``load`` fast (a model's weights
        in host memory). The default unloads: ``load`` then starts from nothing."""
        self.unload()

    @property
    @abc.abstractmethod
    def is_loaded(self) -> bool:
        """Whether ``load`` has run and neither ``unload`` nor ``park`` has since."""

    def describe(self) -> dict[str, object]:
        """Short facts for ``ocr-app info`` and the UI status panel."""
        return {"name": self.name, "loaded": self.is_loaded}

    # --- hooks the runtime uses (it knows engines only through these) ------------------------------
    def smaller_footprints(self, request: PageRequest) -> list[PageRequest]:
        """The same page asked with less device memory, smallest footprint last: the steps the OOM
        ladder (``runtime.oom``) tries for a page that ran out of memory alone. None by default."""
        return []

    def cap_memory(self) -> None:
        """Hold this process to the engine's memory budget before it loads (the model manager calls it
        right before ``load``). Nothing by default."""
        return None

    def capabilities(self) -> Capabilities:
        """What this engine is and offers (built-in engines: their kind in ``ocr_app.choices``, plus
        their prompts, modes and precisions). The default is a name and nothing to choose."""
        return Capabilities(name=self.name, label=self.name)


class WrappedEngine(Engine):
    """An engine that adds behaviour around another (caching, OOM retries): lifecycle and facts are
    the inner engine's, so wrappers stack without each re-implementing them."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def engine(self) -> Engine:
        """The wrapped engine."""
        return self._engine

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._engine.name

    @property
    def pages_at_once(self) -> int:  # type: ignore[override]
        return self._engine.pages_at_once

    def load(self) -> None:
        self._engine.load()

    def preload(self) -> None:
        self._engine.preload()

    def unload(self) -> None:
        self._engine.unload()

    def park(self) -> None:
        self._engine.park()

    @property
    def is_loaded(self) -> bool:
        return self._engine.is_loaded

    def describe(self) -> dict[str, object]:
        return self._engine.describe()

    def capabilities(self) -> Capabilities:
        return self._engine.capabilities()

    def smaller_footprints(self, request: PageRequest) -> list[PageRequest]:
        return self._engine.smaller_footprints(request)

    def cap_memory(self) -> None:
        self._engine.cap_memory()


def split_stream(
    requests: Iterable[PageRequest],
    answer: Callable[[int, PageRequest], EngineOutput | None],
    inner: Callable[[Iterable[PageRequest]], Iterator[tuple[int, EngineOutput]]],
) -> Iterator[tuple[int, EngineOutput]]:
    """Stream where a wrapper answers some pages itself (a cache hit, a text-layer page) and sends the
    rest, lazily and in order, to ``inner``, which is not called at all if no page needs it (so a
    cache hit never loads a model). ``answer(i, request)`` returns an output or None."""
    source = iter(enumerate(requests))
    answered: deque[tuple[int, EngineOutput]] = deque()
    sent: list[int] = []  # inner's index j → our index

    def feed(first: tuple[int, PageRequest]) -> Iterator[PageRequest]:
        sent.append(first[0])
        yield first[1]
        for i, req in source:
            out = answer(i, req)
            if out is not None:
                answered.append((i, out))
            else:
                sent.append(i)
                yield req

    for i, req in source:
        out = answer(i, req)
        if out is None:
            first = (i, req)
            break
        yield i, out
    else:
        return
    for j, out in inner(feed(first)):
        while answered:
            yield answered.popleft()
        yield sent[j], out
    while answered:
        yield answered.popleft()


def noting(pages: Iterable[PageRequest], seen: list[PageRequest]) -> Iterator[PageRequest]:
    """``pages`` passed through lazily, each also appended to ``seen`` (to map a stream's indices
    back to the requests it pulled)."""
    for req in pages:
        seen.append(req)
        yield req
