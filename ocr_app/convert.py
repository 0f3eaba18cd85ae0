"""The one conversion entry point: ingest → engine → parse → render, page by page.

Why a class: the UI and the CLI are peers over this object. It owns no model (engines are passed in
through an ``EngineSet``), streams per-page progress, keeps going when a page or a file fails, and never
drops a page that hit the token cap.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.choices import engine_kind
from ocr_app.engine_api import noting
from ocr_app.exceptions import ConversionCancelled, EngineError, InputError, OcrError, OutputError
from ocr_app.render.formats import format_names
from ocr_app.schema import DocumentResult, EngineOutput, PageRequest, PageResult, StopReason

if TYPE_CHECKING:
    from ocr_app.engine_api import Engine
    from ocr_app.engines.registry import EngineSet
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)


def _all_formats() -> frozenset[str]:
    return frozenset(format_names())  # read when options are made: registered formats included


@dataclass
class ConvertOptions:
    """Per-job choices. ``None`` fields fall back to the settings."""

    pages: str | None = None  # 1-based range, "1-3,7,10-"; None = all
    prompt: str = "markdown"  # preset name or custom prompt text
    locate_text: str | None = None  # for the "locate" preset
    mode: str = "default"  # resolution mode
    dpi: int = 144
    password: str | None = field(default=None, repr=False)  # never in a repr, a log line or the JSON
    use_cache: bool = True  # cross-page vision cache
    max_new_tokens: int | None = None
    formats: frozenset[str] = field(default_factory=_all_formats)
    engine: str | None = None  # None = the engine set's default
    # ``pages`` over several files: True = each file converts the selected pages it has (pages past its
    # end are left out, with a note); False = strict; None = True when one call converts several files.
    clip_pages: bool | None = None
    # Files converted at once when one call converts several: None = as many as the engine serves at
    # once (``Capabilities.max_concurrent_jobs``: 1 unless it batches concurrent conversions).
    files_at_once: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> ConvertOptions:
        """The settings' defaults with ``overrides`` on top (``None`` = keep the default).

        An unknown keyword (``page=`` for ``pages=``) raises ``TypeError`` like the constructor does,
        even when its value is ``None``, instead of becoming an attribute nothing reads.
        """
        unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"ConvertOptions has no option {', '.join(map(repr, unknown))}")
        base = cls(
            prompt=settings.prompt,
            mode=settings.mode,
            dpi=settings.dpi,
            use_cache=settings.cache_enabled,
            max_new_tokens=settings.max_new_tokens,
        )
        return replace(base, **{key: value for key, value in overrides.items() if value is not None})


@dataclass
class ProgressEvent:
    """One progress report. ``message`` is ready to show to a person."""

    stage: str  # open, render, recognize, page_done, write, done, file_error
    source: str
    file_index: int
    file_count: int
    page: int | None  # 1-based page number inside the document
    done: int  # pages finished in this file
    total: int  # pages selected in this file
    message: str
    page_result: PageResult | None = None
    document: DocumentResult | None = None  # stage "published": the document whose outputs are in place


ProgressFn = Callable[[ProgressEvent], None]


@dataclass
class _Job:
    """State of one file's conversion, so helpers need not pass six arguments around."""

    name: str
    file_index: int
    file_count: int
    total: int
    progress: ProgressFn | None
    cancel: threading.Event | None
    results: dict[int, PageResult] = field(default_factory=dict)
    repaired: bool = False  # the source was damaged and repaired on opening

    def emit(
        self,
        stage: str,
        message: str,
        page: int | None = None,
        result: PageResult | None = None,
        document: DocumentResult | None = None,
    ):
        if self.progress is None:
            return
        event = ProgressEvent(
            stage=stage,
            source=self.name,
            file_index=self.file_index,
            file_count=self.file_count,
            page=page,
            done=len(self.results),
            total=self.total,
            message=message,
            page_result=result,
            document=document,
        )
        try:
            self.progress(event)
        except ConversionCancelled:
            raise
        except Exception:  # a broken progress callback must not lose the conversion
            logger.exception("progress callback failed")

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise ConversionCancelled(f"Cancelled while converting {self.name}.")


def _record_ignored(doc: DocumentResult) -> None:
    """Prompt and mode that no page's engine honoured move from the settings to ``settings["ignored"]``.

    Why: the light engine and the text layer take neither; listing them as settings made the JSON claim
    they shaped the result. Pages read by an engine that does take them (``auto`` on a mixed PDF) keep
    them as used; each page's ``used_prompt``/``used_mode`` says which.
    """
    read = [p for p in doc.pages if p.error is None]
    if not read:
        return
    ignored = {
        key: doc.settings.get(key)
        for key, used in (("prompt", "used_prompt"), ("mode", "used_mode"))
        if doc.settings.get(key) is not None and all(getattr(p, used) is None for p in read)
    }
    if ignored:
        doc.settings.update(dict.fromkeys(ignored))
        doc.settings["ignored"] = ignored


class CancelEvent(threading.Event):
    """A cancel flag that says why (``"cancelled by SIGTERM"``): an interrupted document records it.

    ``keep=False`` (a server that stops) drops the interrupted document instead of publishing its
    finished pages: nobody is left to read them."""

    reason = "cancelled"
    keep = True

    def cancel(self, reason: str, *, keep: bool = True) -> None:
        if not self.is_set():
            self.reason, self.keep = reason, keep
        self.set()


def _cancel_reason(cancel: threading.Event | None) -> str:
    return getattr(cancel, "reason", None) or "cancelled"


def _serialized(progress: ProgressFn | None) -> ProgressFn | None:
    """``progress`` called from one thread at a time (files converting side by side all report)."""
    if progress is None:
        return None
    lock = threading.Lock()

    def report(event: ProgressEvent) -> None:
        with lock:
            progress(event)

    return report


def _unique_stem(name: str, taken: set[str]) -> str:
    from ocr_app.render.staging import fit_name

    # leading dots would make a hidden folder, or "." / ".." for a file named "..pdf"; a name of 251
    # characters is legal, but not with "_layout.pdf" after it
    stem = re.sub(r"[^\w.\- ]+", "_", Path(name).stem).strip().lstrip(".").strip() or "document"
    stem = fit_name(stem)
    candidate, n = stem, 2
    while candidate.lower() in taken:
        candidate, n = f"{stem}-{n}", n + 1
    taken.add(candidate.lower())
    return candidate


class Converter:
    """Convert files with the engines passed in. Thread-safe for concurrent ``convert`` calls."""

    def __init__(self, engines: EngineSet, settings: Settings) -> None:
        self.engines = engines
        self.settings = settings

    # -- facts for front ends ------------------------------------------------------------------
    def engine_names(self) -> list[str]:
        return self.engines.names()

    def describe(self) -> dict[str, object]:
        return self.engines.describe()

    def capabilities(self):
        """Prompts, modes and precisions the engines here offer (``engine_api.Capabilities``)."""
        return self.engines.capabilities()

    # -- conversion ----------------------------------------------------------------------------
    def convert(
        self,
        inputs: Sequence[str | Path],
        out_dir: str | Path,
        options: ConvertOptions | None = None,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> list[DocumentResult]:
        """Convert every input; a bad file becomes a ``DocumentResult`` with ``error`` set.

        Raises ``ConversionCancelled`` (pages finished so far are already written) and ``InputError``
        only when ``inputs`` names nothing at all.
        """
        from ocr_app.ingest import iter_input_files

        options = options or ConvertOptions.from_settings(self.settings)
        out = Path(out_dir)
        if out.exists() and not out.is_dir():
            raise InputError(f"The output folder {out} is an existing file; give a folder (-o).")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from ocr_app.render.writer import describe_os_error

            raise OutputError(f"Cannot create the output folder {out}: {describe_os_error(exc)}") from exc
        files: list[Path] = []
        missing: list[DocumentResult] = []
        for item in inputs:
            try:
                files.extend(iter_input_files([item]))
            except InputError as exc:
                missing.append(DocumentResult(source=str(item), error=str(exc), error_kind="input"))
        if not files and not missing:
            raise InputError("No input files: give PDF or image files, or folders that contain them.")
        taken: set[str] = set()
        stems = [_unique_stem(path.name, taken) for path in files]  # by input order, not finishing order
        at_once = self._files_at_once(options, len(files))
        try:
            if at_once <= 1:
                done = self._convert_serial(files, stems, out, options, progress, cancel)
            else:
                done = self._convert_overlapped(files, stems, out, options, at_once, progress, cancel)
        except ConversionCancelled as exc:  # the files done before it: the caller reports them too
            exc.documents = [*missing, *exc.documents]
            raise
        return [*missing, *done]

    def _convert_serial(self, files, stems, out, options, progress, cancel) -> list[DocumentResult]:
        done: list[DocumentResult] = []
        for i, path in enumerate(files):
            try:
                done.append(self._convert_file(path, out, options, i, len(files), progress, cancel, stems[i]))
            except ConversionCancelled as exc:
                exc.documents = [*done, *([exc.partial] if exc.partial is not None else [])]
                raise
        return done

    def _files_at_once(self, options: ConvertOptions, n_files: int) -> int:
        """``options.files_at_once``, else what the engine serves at once; never more than the files."""
        if n_files <= 1:
            return 1
        if options.files_at_once is not None:
            return max(1, min(int(options.files_at_once), n_files))
        try:
            jobs = self.engines.get(options.engine).capabilities().max_concurrent_jobs
        except OcrError:
            return 1  # the engine is missing: each file reports it, one after another
        return max(1, min(int(jobs), n_files))

    def _convert_overlapped(
        self,
        files: list[Path],
        stems: list[str],
        out: Path,
        options: ConvertOptions,
        at_once: int,
        progress: ProgressFn | None,
        cancel: threading.Event | None,
    ) -> list[DocumentResult]:
        """Convert ``at_once`` files at a time on worker threads, so an engine that batches (the graph
        decoder, a fleet) decodes pages of several files together instead of one small file after
        another. Each file's outputs are written when it finishes; results come back in input order.
        A cancel (or Ctrl-C in the calling thread) stops every file at its next page; the first
        cancelled file's ``ConversionCancelled`` is raised once every worker has stopped."""
        from concurrent.futures import ThreadPoolExecutor, wait

        stop = cancel if cancel is not None else threading.Event()
        report = _serialized(progress)
        with ThreadPoolExecutor(at_once, thread_name_prefix="ocr-file") as pool:
            futures = [
                pool.submit(self._convert_file, path, out, options, i, len(files), report, stop, stems[i])
                for i, path in enumerate(files)
            ]
            try:
                wait(futures)
            except BaseException:  # KeyboardInterrupt in the caller's thread: stop the workers too
                stop.set()
                wait(futures)
                raise
        cancelled = [f.exception() for f in futures if isinstance(f.exception(), ConversionCancelled)]
        if cancelled:
            first = cancelled[0]
            first.documents = [
                f.result() if f.exception() is None else f.exception().partial
                for f in futures
                if f.exception() is None or getattr(f.exception(), "partial", None) is not None
            ]
            raise first
        return [f.result() for f in futures]

    def _convert_file(
        self,
        path: Path,
        out: Path,
        options: ConvertOptions,
        file_index: int,
        file_count: int,
        progress: ProgressFn | None,
        cancel: threading.Event | None,
        stem: str,
    ) -> DocumentResult:
        from ocr_app.ingest import IngestLimits, clip_page_range, open_document, parse_page_range

        job = _Job(path.name, file_index, file_count, 0, progress, cancel)
        job.emit("open", f"Opening {path.name}")
        doc = DocumentResult(source=path.name, settings=self._settings_record(options))
        try:
            job.check_cancel()
            limits = IngestLimits.from_settings(self.settings)
            with open_document(path, password=options.password, dpi=options.dpi, limits=limits) as src:
                doc.notes.extend(src.notes)
                doc.source_repaired = job.repaired = bool(getattr(src, "repaired", False))
                clip = options.clip_pages if options.clip_pages is not None else file_count > 1
                if clip:  # one range over a batch: each file converts the pages it has
                    indices, note = clip_page_range(options.pages, src.page_count)
                    doc.notes.extend([note] if note else [])
                else:  # one file: a page past the end is a typo to report, not to skip
                    indices = parse_page_range(options.pages, src.page_count)
                job.total = doc.pages_selected = len(indices)
                doc.page_count = src.page_count
                engine = self.engines.get(options.engine)
                self._run_pages(src, indices, engine, options, job, out, doc, stem)
        except ConversionCancelled as exc:
            if doc.pages:  # finished pages were published by _run_pages (complete: false)
                exc.partial = doc
            raise
        except OutputError as exc:  # disk full, permission denied: nothing of this file was published
            doc.error = str(exc)
            doc.error_kind = "internal"
            doc.outputs = {}
            job.emit("file_error", doc.error)
            return doc
        except OcrError as exc:
            doc.error = str(exc)
            doc.error_kind = "input" if isinstance(exc, InputError) else "internal"
            doc.error_type = type(exc).__name__
            job.emit("file_error", f"{path.name}: {exc}")
            return doc
        except Exception as exc:  # never let one file take the batch (or the server) down
            logger.exception("internal error converting %s", path)
            doc.error = f"Internal error while converting {path.name}: {type(exc).__name__}: {exc}"
            doc.error_kind = "internal"
            job.emit("file_error", doc.error)
            return doc
        n = len(doc.pages)
        job.emit("done", f"Finished {path.name}: {n} page{'' if n == 1 else 's'}")
        return doc

    def _run_pages(self, src, indices, engine: Engine, options, job: _Job, out: Path, doc, stem: str) -> None:
        """The whole document is one lazy stream of page requests: the engine pulls pages as it has
        room for them (a GPU engine keeps its decoder's slots full across the document), so pages are
        rendered only as fast as they are recognised and host memory stays bounded by the engine's
        pages in flight.

        The outputs are published whole when the document ends (``DocumentWriter.finish``); a document
        cut short by a cancel or a failure is published with the pages it has and ``complete: false``,
        one whose outputs cannot be written is not published at all."""
        from ocr_app.render.writer import DocumentWriter

        pdf_path = getattr(src, "pdf_path", None) if getattr(src, "kind", "") == "pdf" else None
        writer = DocumentWriter(
            out, stem, options.formats, dpi=options.dpi, order=indices, pdf_path=pdf_path,
            pdf_password=options.password if pdf_path is not None else None, pdf_repaired=job.repaired,
        ).open()  # fmt: skip
        if writer.renamed:
            note = f"another run was writing {stem}/ in {out}: this one wrote {writer.stem}/ instead"
            doc.notes.append(note)
            job.emit("open", note)
        failure: BaseException | None = None
        try:
            job.check_cancel()
            self._recognize(engine, self._requests(src, indices, options, job, writer), job, writer)
            job.check_cancel()
        except OutputError:
            writer.abort()
            raise
        except (KeyboardInterrupt, SystemExit):  # a second Ctrl-C: stop now, publish nothing
            writer.abort()
            raise
        except BaseException as exc:  # a cancel or a failure: publish what is done, marked incomplete
            reason = "" if isinstance(exc, ConversionCancelled) else f"stopped by {type(exc).__name__}: {exc}"
            doc.incomplete_reason = reason or _cancel_reason(job.cancel)
            failure = exc
        doc.pages = [job.results[i] for i in indices if i in job.results]
        _record_ignored(doc)
        if not doc.pages or not writer.usable or not getattr(job.cancel, "keep", True):
            writer.abort()
        else:
            job.emit("write", f"Writing outputs for {src.name}")
            try:
                writer.finish(doc)  # one rename; a full disk raises OutputError and publishes nothing
            except OutputError as exc:
                if failure is None:
                    raise
                doc.notes.append(f"the pages done before the stop could not be written: {exc}")
                logger.warning("%s: %s", src.name, doc.notes[-1])
            else:  # the CLI tells what is on disk even when a second Ctrl-C ends the run right after
                job.emit("published", f"Wrote {src.name}", document=doc)
        if failure is not None:
            raise failure

    def _requests(self, src, indices, options, job: _Job, writer) -> Iterator[PageRequest]:
        """Render and yield page requests one by one as the engine pulls them. A page that fails to
        render is recorded and skipped; a cancel stops the feed (pages in flight still finish). The
        prompt goes as chosen (preset name or text): the engine that takes prompts resolves it."""
        for index in indices:
            if job.cancel is not None and job.cancel.is_set():
                return
            job.emit("render", self._page_msg("Rendering", index, job, src.page_count), index + 1)
            try:
                page = src.render(index)
            except OcrError as exc:
                self._fail_page(job, writer, index, src.name, exc)
                continue
            job.emit("recognize", self._page_msg("Recognizing", index, job, src.page_count), index + 1)
            yield PageRequest(
                page=page,
                prompt=options.prompt,
                locate_text=options.locate_text,
                mode=options.mode,
                max_new_tokens=options.max_new_tokens,
                use_cache=options.use_cache,
                cancel=job.cancel,  # a batching engine drops the page at once when the job is cancelled
            )

    def _recognize(self, engine: Engine, requests: Iterable[PageRequest], job: _Job, writer) -> None:
        """Stream outputs; if the stream breaks, retry its unfinished pages one by one to isolate the
        bad one, then go on with the rest of the document. A failed write (``OutputError``) or a cancel
        stops the document: neither is the page's fault."""
        source = iter(requests)
        first = next(source, None)
        if first is None:
            return  # nothing to recognise: do not load an engine for it
        # Requests the engine pulled, by stream index; a finished one is dropped (None) at once, or every
        # page image of the document would stay in memory until its end (2.2 GB at 300 A4 pages).
        pulled: list[PageRequest | None] = []
        finished: set[int] = set()
        try:
            for i, output in engine.predict_stream(noting(itertools.chain([first], source), pulled)):
                request, pulled[i] = pulled[i], None
                finished.add(i)
                self._finish_page_or_fail(job, writer, request, output)
                job.check_cancel()
            job.check_cancel()  # an engine may end its stream early for a cancelled job
            for k, req in enumerate(pulled):  # an engine must answer every page it took
                if k not in finished and req is not None:
                    err = EngineError(f"the {engine.name} engine returned no output for this page")
                    self._fail_page(job, writer, req.page.index, req.page.source, err)
        except (ConversionCancelled, OutputError):
            raise
        except Exception as exc:
            left = [r for k, r in enumerate(pulled) if k not in finished and r is not None]
            if not pulled:
                left = [first]
            if len(left) == 1:
                self._fail_page(job, writer, left[0].page.index, left[0].page.source, exc)
            elif left:
                logger.warning("a stream of %d pages failed (%s); retrying pages one by one", len(left), exc)
                for req in left:
                    job.check_cancel()
                    self._recognize(engine, [req], job, writer)
            self._recognize(engine, source, job, writer)  # the rest of the document

    def _finish_page_or_fail(self, job: _Job, writer, request: PageRequest, output: EngineOutput) -> None:
        """A page whose result cannot be parsed or rendered fails alone (the engine is not retried)."""
        try:
            self._finish_page(job, writer, request, output)
        except (ConversionCancelled, OutputError):
            raise
        except Exception as exc:
            if request.page.index in job.results:  # recorded already: only the report after it failed
                logger.exception("after page %d of %s", request.page.index + 1, request.page.source)
                return
            self._fail_page(job, writer, request.page.index, request.page.source, exc)

    def _finish_page(self, job: _Job, writer, request: PageRequest, output: EngineOutput) -> None:
        from ocr_app.structure.quality import assess

        page = request.page

        width, height = page.size
        raw = output.raw_text
        blocks = list(output.blocks or [])  # engines return blocks (the DeepSeek wing parses its tags)
        prefix = f"{output.engine}:"
        reason = next((n[len(prefix) :].strip() for n in output.notes if n.startswith(prefix)), "")
        quality, why = assess(blocks, page.image, output, min_confidence=self.settings.min_confidence)
        result = PageResult(
            index=page.index,
            source=page.source,
            width=width,
            height=height,
            engine=output.engine,
            engine_reason=reason,
            blocks=blocks,
            raw_text=raw,
            stop_reason=output.stop_reason,
            num_tokens=output.num_tokens,
            timings=dict(output.timings),
            notes=list(output.notes),
            quality=quality,
            quality_reason=why,
            confidence=output.confidence,
            source_repaired=job.repaired,
            tiling=output.tiling,
            lines=output.lines,
        )
        self._record_used(result, output)
        writer.add_page(result, page.image, source=page)  # sets timings["render"]
        job.results[page.index] = result
        flag = {StopReason.LENGTH: " (token cap hit)", StopReason.REPETITION: " (repetition)"}
        msg = f"Recognized page {page.index + 1} ({len(job.results)} of {job.total})"
        job.emit("page_done", msg + flag.get(result.stop_reason, ""), page.index + 1, result)

    @staticmethod
    def _record_used(result: PageResult, output: EngineOutput) -> None:
        """What the engine reports it used, not what was asked (None where it used none or cannot
        tell: a remote server's resolution mode); engines that take neither say so in a note."""
        result.used_prompt = output.used_prompt
        result.used_mode = output.used_mode
        if not engine_kind(output.engine).capabilities.prompted:
            result.notes.append(f"{output.engine}: takes no prompt and no resolution mode; both were ignored")

    def _fail_page(self, job: _Job, writer, index: int, source: str, exc: BaseException) -> None:
        if isinstance(exc, OcrError):
            message, kind = str(exc), ("input" if isinstance(exc, InputError) else "internal")
        else:
            logger.error("page %d of %s failed", index + 1, source, exc_info=exc)
            message, kind = f"Internal error: {type(exc).__name__}: {exc}", "internal"
        result = PageResult(
            index=index,
            source=source,
            width=0,
            height=0,
            stop_reason=StopReason.ERROR,
            error=message,
            error_kind=kind,
        )
        writer.add_page(result, None)
        job.results[index] = result
        job.emit("page_done", f"Page {index + 1} failed: {message}", index + 1, result)

    @staticmethod
    def _page_msg(verb: str, index: int, job: _Job, page_count: int) -> str:
        position = len(job.results) + 1
        if job.total == page_count:
            return f"{verb} page {index + 1} of {page_count}"
        return f"{verb} page {index + 1} ({position} of {job.total} selected)"

    def _settings_record(self, options: ConvertOptions) -> dict[str, object]:
        return {
            "engine": options.engine or self.engines.default,
            "model": self.settings.model,
            "prompt": options.prompt,
            "mode": options.mode,
            "dpi": options.dpi,
            "pages": options.pages,
            "use_cache": options.use_cache,
            "max_new_tokens": options.max_new_tokens,
        }
