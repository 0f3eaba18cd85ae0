"""The document writer the converter calls: one folder per input with every chosen output format.

Why a stateful writer with ``add_page``/``finish``: pages arrive one by one (and may fail one by one), and
every output is written as they arrive, so host memory stays flat in the page count (a 2,000-page PDF
used to peak at 12.5 GB while its layout PDF was built at the end). Each chosen format
(``render/formats.py``: classes in one registry — this module knows none of them) takes the page, first as
it arrives, then in page order (pages that arrive early wait for the ones before them: at most one engine
batch); ``finish`` lets every format finish its files, bundles (the ZIP) last.

Why a background writer: the page's Markdown and figures are made on the caller's thread (the progress
event carries them), but the overlay, its PNG, the layout PDF's JPEG and the streamed document files are
made by worker threads, so the engine is never kept waiting by outputs (on a GPU they cost ≈ 49 ms a page
on the decode's critical path). Pages whose images are still being encoded are bounded
(``max_pending``): only when the writers fall that far behind does ``add_page`` wait. The encoders
release the GIL, so the workers run beside the caller on another core.

Why a staging folder (``render/staging.py``): a document folder appears whole or not at all. Everything
is written into ``out_dir/.{stem}.partial/`` and renamed into place by ``finish``; a run that fails, is
killed or cancelled without pages leaves nothing that looks finished, and a run that finds another live
run writing the same name writes ``{stem}-2`` instead. A run owns its folder: files of ours that this
run did not write (overlays and figures of pages a previous run had, outputs of formats not asked for now)
go with the old folder; other files are carried into the new one.

Layout of ``out_dir/stem/`` with the built-in formats::

    {stem}.md  {stem}.mmd  {stem}.json  {stem}_layout.pdf  {stem}.zip
    images/{page}_{idx}.jpg      (page 0-based, like the official script)
    overlays/page_0001.png       (page 1-based, as users count)
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.choices import engine_kind
from ocr_app.exceptions import ConfigError, OutputError
from ocr_app.render import staging
from ocr_app.render.formats import (
    IMAGES_DIR,
    JSON_FORMAT_VERSION,
    OUTPUT_FORMATS,
    OVERLAYS_DIR,
    DocumentFormat,
    DocumentTarget,
    check_formats,
    format_class,
    format_names,
)
from ocr_app.render.markdown import error_note, page_markdown
from ocr_app.render.write_errors import describe_os_error, output_error
from ocr_app.schema import DocumentResult, PageResult

if TYPE_CHECKING:
    from PIL import Image

    from ocr_app.schema import PageImage

logger = logging.getLogger(__name__)

FORMATS = frozenset(OUTPUT_FORMATS)  # the built-in formats (``formats.format_names()``: all registered)
_UNSAFE_STEM_RE = re.compile(r"[\\/\x00-\x1f]+")
MAX_PENDING = 8  # pages whose images the workers still encode before ``add_page`` waits (≈ 6 MB each, A4)


@lru_cache(maxsize=1)
def document_schema() -> dict[str, Any]:
    """The JSON Schema of ``{stem}.json`` (shipped as ``ocr_app/render/document.schema.json``)."""
    text = resources.files("ocr_app.render").joinpath("document.schema.json").read_text("utf-8")
    return json.loads(text)


def safe_stem(stem: str) -> str:
    """A folder/file stem with no path separators or control characters, short enough for file names."""
    cleaned = _UNSAFE_STEM_RE.sub("_", stem).strip()
    if cleaned in ("", ".", ".."):
        raise ConfigError(f"Output name {stem!r} is not usable as a file name.")
    return staging.fit_name(cleaned)


def _default_workers() -> int:
    return max(1, min(4, (os.cpu_count() or 2) - 1))


class DocumentWriter:
    """Writes one document's outputs into ``out_dir/stem/``, page by page, published by ``finish``.

    ``formats`` picks the registered formats (None: all of them; a bundle such as ``"zip"`` implies all).
    ``order`` is the page indices in the order the document lists them; without it pages are held until
    ``finish`` (fine for a few pages, not for a long document). ``workers`` encode page images in the
    background (0: on the caller's thread).

    A failed write (disk full, permission denied) is raised as ``OutputError`` by the next ``add_page``
    or by ``finish``; nothing is published then.
    """

    def __init__(
        self,
        out_dir: Path,
        stem: str,
        formats: Iterable[str] | None = None,
        dpi: int = 144,
        order: Sequence[int] | None = None,
        *,
        workers: int | None = None,
        max_pending: int = MAX_PENDING,
        pdf_path: Path | None = None,
        pdf_password: str | None = None,
        pdf_repaired: bool = False,
    ) -> None:
        self.formats = check_formats(frozenset(format_names() if formats is None else formats))
        self.out_dir = Path(out_dir)
        self.stem = self.requested_stem = safe_stem(stem)
        self.dpi = dpi
        self._pdf = (Path(pdf_path) if pdf_path is not None else None, pdf_password, pdf_repaired)
        self.target = self._target(staging.staging_path(self.out_dir, self.stem))
        self._order = list(order) if order is not None else None
        self._next = 0  # position in ``_order`` of the next page to stream
        self._pending: dict[int, tuple[PageResult, list[Any]]] = {}
        self._emitted: set[int] = set()
        self._lock: staging.NameLock | None = None
        self._workers = _default_workers() if workers is None else max(0, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future] = []
        self._slots = threading.BoundedSemaphore(max(1, max_pending))
        self._emit_lock = threading.RLock()
        self._error: BaseException | None = None
        self._writers: list[DocumentFormat] = []

    def _target(self, folder: Path) -> DocumentTarget:
        path, password, repaired = self._pdf
        return DocumentTarget(
            folder, self.stem, self.dpi, pdf_path=path, pdf_password=password, pdf_repaired=repaired
        )

    @property
    def dir(self) -> Path:
        """Where the document is published (``out_dir/stem``)."""
        return self.out_dir / self.stem

    @property
    def images_dir(self) -> Path:
        return self.target.dir / IMAGES_DIR

    @property
    def overlays_dir(self) -> Path:
        return self.target.dir / OVERLAYS_DIR

    @property
    def renamed(self) -> bool:
        """Another live run was writing the requested name, so this one writes ``{stem}-N``."""
        return self.stem != self.requested_stem

    @property
    def usable(self) -> bool:
        """No write has failed: ``finish`` can still publish."""
        return self._error is None

    def _wants(self, flag: str) -> bool:
        return any(getattr(w, flag) for w in self._writers)

    def open(self) -> DocumentWriter:
        """Claim the document name and make the staging folder (done by the first page at the latest)."""
        if self._lock is not None:
            return self
        try:
            staging.sweep(self.out_dir)
            self.stem, self._lock = staging.claim(self.out_dir, self.requested_stem)
            self.target = self._target(staging.staging_path(self.out_dir, self.stem))
            self.target.dir.mkdir()
        except OSError as exc:
            self._release()
            raise self._output_error(exc) from exc
        if self.renamed:
            logger.warning(
                "another run is writing %s in %s: this one writes %s", self.requested_stem, self.out_dir,
                self.stem,
            )  # fmt: skip
        chosen = [format_class(n) for n in format_names() if n in self.formats]
        # bundles last: they are made from the other outputs
        self._writers = [cls(self.target) for cls in chosen if not cls.bundle]
        self._writers += [cls(self.target) for cls in chosen if cls.bundle]
        return self

    def _output_error(self, exc: BaseException) -> OutputError:
        return output_error(exc) or OutputError(f"Writing the outputs failed: {type(exc).__name__}: {exc}")

    def _check(self) -> None:
        if self._error is not None:
            raise self._output_error(self._error) from self._error

    # --- per page ----------------------------------------------------------------------------------
    def add_page(self, page: PageResult, image: Image.Image | None, source: PageImage | None = None) -> None:
        """Fill ``page.markdown`` and ``page.figures`` now, and hand the page to the background writer
        (``page.overlay_path`` is set when its overlay is written). The image is not kept after that.
        ``source``: the rendered page the image came from (where it lies in its file), for formats that
        keep the source's pages.

        A failed page (``page.error`` set) gets a Markdown note and no overlay.
        """
        self._check()
        self.open()
        start = time.perf_counter()
        page.overlay_path = None
        if page.error:
            page.markdown = error_note(page)
            page.figures = []
        else:
            if image is not None and (page.width, page.height) != image.size:
                if page.width or page.height:
                    logger.warning(
                        "page %d: result size %dx%d differs from image size %dx%d; using the image size",
                        page.index + 1,
                        page.width,
                        page.height,
                        *image.size,
                    )
                page.width, page.height = image.size
            images_dir = self.images_dir if self._wants("uses_figures") else None
            try:
                page.markdown, page.figures = page_markdown(
                    page.blocks,
                    image,
                    page.index,
                    images_dir,
                    IMAGES_DIR,
                    keep_table_html=engine_kind(page.engine).capabilities.keeps_table_html,
                )
            except Exception as exc:
                if output_error(exc) is None:
                    raise
                self._fail(exc)
                self._check()
            self.target.page_files.extend(page.figures)
            page.timings["render"] = time.perf_counter() - start  # the workers add theirs (_work)
        if self._workers == 0:
            self._slots.acquire()
            self._work(page, image, source)
            self._check()
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="ocr-app-writer")
        self._slots.acquire()  # back-pressure: only when the workers are MAX_PENDING pages behind
        self._futures.append(self._pool.submit(self._work, page, image, source))

    def _work(self, page: PageResult, image: Image.Image | None, source: PageImage | None = None) -> None:
        """The image work of one page (any order, in parallel), then streaming whatever is in order."""
        try:
            kept = None
            if self._error is None:
                start = time.perf_counter()
                overlay = None
                if not page.error and image is not None and self._wants("uses_overlay"):
                    from ocr_app.render.overlay import draw_overlay

                    overlay = draw_overlay(image, page.blocks)
                kept = [w.receive(page, overlay, image, source) for w in self._writers]
                if not page.error:  # seconds of output work for this page, on both threads
                    page.timings["render"] = round(
                        page.timings.get("render", 0.0) + time.perf_counter() - start, 6
                    )
        except BaseException as exc:
            self._fail(exc)
        finally:
            self._slots.release()
        if kept is None:
            return
        with self._emit_lock:
            if self._error is not None:
                return
            self._pending[page.index] = (page, kept)
            try:
                self._drain()
            except BaseException as exc:
                self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        if self._error is None:
            self._error = exc
            if output_error(exc) is None:  # a bug, not a full disk: its traceback goes to the log
                logger.error("the document writer failed", exc_info=exc)

    def _drain(self) -> None:
        """Stream every pending page whose predecessors (in ``order``) are all in."""
        if self._order is None:
            return
        while self._next < len(self._order) and self._order[self._next] in self._pending:
            self._emit(*self._pending.pop(self._order[self._next]))
            self._next += 1

    def _emit(self, page: PageResult, kept: list[Any] | None) -> None:
        """Append one page to every format's document files."""
        if page.error and not page.markdown:
            page.markdown = error_note(page)
        for writer, k in zip(self._writers, kept or [None] * len(self._writers), strict=True):
            writer.emit(page, k)
        page.lines = None  # laid into the searchable PDF: a long document does not keep every line
        self._emitted.add(page.index)

    def _wait(self) -> None:
        """Until every page handed over is written (or the writer failed)."""
        for future in self._futures:
            future.result()
        self._futures.clear()

    # --- whole document ----------------------------------------------------------------------------
    def finish(self, doc: DocumentResult) -> dict[str, Path]:
        """Stream pages still waiting, finish every format's files and publish the folder in one rename;
        return and store (``doc.outputs``) the published paths plus ``dir``."""
        try:
            self.open()
            self._wait()
            self._check()
            with self._emit_lock:
                for page in doc.pages:
                    if page.index not in self._emitted:
                        self._emit(*self._pending.pop(page.index, (page, None)))
            outputs: dict[str, Path] = {}
            for writer in self._writers:
                outputs.update(writer.finish(doc, dict(outputs)))
            self._drop_unused(outputs)
            staging.publish(self.target.dir, self.dir, self._owned)
        except BaseException as exc:
            self.abort()
            translated = output_error(exc)
            if translated is not None:
                raise translated from exc
            raise
        self._release()
        outputs = {k: self._published(v) for k, v in outputs.items()}
        for page in doc.pages:
            page.overlay_path = self._published(page.overlay_path) if page.overlay_path else None
            page.figures = [self._published(f) for f in page.figures]
        outputs["dir"] = self.dir
        doc.outputs = dict(outputs)
        logger.info("wrote %s (%s)", self.dir, ", ".join(k for k in outputs if k != "dir"))
        return outputs

    def _published(self, path: Path) -> Path:
        """Where a file written into the staging folder is after ``finish`` published it."""
        try:
            return self.dir / Path(path).relative_to(self.target.dir)
        except ValueError:
            return Path(path)

    def _owned(self, folder: Path) -> list[Path]:
        """Files of ours an earlier run may have left in ``folder`` (they do not carry over)."""
        old = DocumentTarget(folder, self.stem, self.dpi)
        ours = [f for name in format_names() for f in format_class(name).owned(old)]
        ours.extend((folder / IMAGES_DIR).glob("*_*.jpg"))
        return ours

    def _drop_unused(self, outputs: dict[str, Path]) -> None:
        """Figures written for pages that were not kept (a page cut short) are not published."""
        keep = {p.resolve() for p in outputs.values()} | {f.resolve() for f in self.target.page_files}
        for path in self._owned(self.target.dir):
            if path.is_file() and path.resolve() not in keep:
                path.unlink(missing_ok=True)
        for sub in (OVERLAYS_DIR, IMAGES_DIR):
            folder = self.target.dir / sub
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        self.target.page_files.sort()

    def abort(self) -> None:
        """Drop everything this run wrote (a document already published by an earlier run stays)."""
        self._error = self._error or OutputError("aborted")
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._futures.clear()
        for writer in self._writers:
            try:
                writer.abort()
            except Exception as exc:
                logger.debug("abort of %s: %s", writer.name, exc)
        if self._lock is not None:
            import shutil

            shutil.rmtree(self.target.dir, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


__all__ = [
    "FORMATS",
    "JSON_FORMAT_VERSION",
    "DocumentWriter",
    "describe_os_error",
    "document_schema",
    "safe_stem",
]
