"""The document writer the converter calls: one folder per input with every chosen output format.

Why a stateful writer with ``add_page``/``finish``: pages arrive one by one (and may fail one by one), and
every output is written as they arrive, so host memory stays flat in the page count (a 2,000-page PDF
used to peak at 12.5 GB while its layout PDF was built at the end). Figures are cropped and the overlay
drawn once when a page is parsed; each chosen format (``render/formats.py``: classes in one registry —
this module knows none of them) then takes the page, first as it arrives, then in page order (pages
that arrive early wait for the ones before them: at most one engine batch); ``finish`` lets every format
publish its files atomically, bundles (the ZIP) last.

A run owns its folder: files of ours that this run did not write (overlays and figures of pages a
previous run had, outputs of formats not asked for now) are removed by ``finish``; other files are left.

Layout of ``out_dir/stem/`` with the built-in formats::

    {stem}.md  {stem}.mmd  {stem}.json  {stem}_layout.pdf  {stem}.zip
    images/{page}_{idx}.jpg      (page 0-based, like the official script)
    overlays/page_0001.png       (page 1-based, as users count)
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.choices import engine_kind
from ocr_app.exceptions import ConfigError
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
from ocr_app.schema import DocumentResult, PageResult

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

FORMATS = frozenset(OUTPUT_FORMATS)  # the built-in formats (``formats.format_names()``: all registered)
_UNSAFE_STEM_RE = re.compile(r"[\\/\x00-\x1f]+")


@lru_cache(maxsize=1)
def document_schema() -> dict[str, Any]:
    """The JSON Schema of ``{stem}.json`` (shipped as ``ocr_app/render/document.schema.json``)."""
    text = resources.files("ocr_app.render").joinpath("document.schema.json").read_text("utf-8")
    return json.loads(text)


def safe_stem(stem: str) -> str:
    """A folder/file stem with no path separators or control characters."""
    cleaned = _UNSAFE_STEM_RE.sub("_", stem).strip()
    if cleaned in ("", ".", ".."):
        raise ConfigError(f"Output name {stem!r} is not usable as a file name.")
    return cleaned


class DocumentWriter:
    """Writes one document's outputs into ``out_dir/stem/``, page by page.

    ``formats`` picks the registered formats (None: all of them; a bundle such as ``"zip"`` implies all).
    ``order`` is the page indices in the order the document lists them; without it pages are held until
    ``finish`` (fine for a few pages, not for a long document).
    """

    def __init__(
        self,
        out_dir: Path,
        stem: str,
        formats: Iterable[str] | None = None,
        dpi: int = 144,
        order: Sequence[int] | None = None,
    ) -> None:
        self.formats = check_formats(frozenset(format_names() if formats is None else formats))
        self.stem = safe_stem(stem)
        self.dir = Path(out_dir) / self.stem
        self.dpi = dpi
        self.target = DocumentTarget(self.dir, self.stem, dpi)
        chosen = [format_class(n) for n in format_names() if n in self.formats]
        # bundles last: they are made from the other outputs
        self._writers: list[DocumentFormat] = [cls(self.target) for cls in chosen if not cls.bundle]
        self._writers += [cls(self.target) for cls in chosen if cls.bundle]
        self._order = list(order) if order is not None else None
        self._next = 0  # position in ``_order`` of the next page to stream
        self._pending: dict[int, tuple[PageResult, list[Any]]] = {}
        self._emitted: set[int] = set()

    @property
    def images_dir(self) -> Path:
        return self.dir / IMAGES_DIR

    @property
    def overlays_dir(self) -> Path:
        return self.dir / OVERLAYS_DIR

    def _wants(self, flag: str) -> bool:
        return any(getattr(w, flag) for w in self._writers)

    # --- per page ----------------------------------------------------------------------------------
    def add_page(self, page: PageResult, image: Image.Image | None) -> None:
        """Fill ``page.markdown``, ``page.figures`` and ``page.overlay_path``, hand the page to every
        format as it arrives and stream it into the document files once the pages before it are in.

        A failed page (``page.error`` set) gets a Markdown note and no overlay. The image is not kept.
        """
        start = time.perf_counter()
        overlay = None
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
            page.markdown, page.figures = page_markdown(
                page.blocks,
                image,
                page.index,
                images_dir,
                IMAGES_DIR,
                keep_table_html=engine_kind(page.engine).capabilities.keeps_table_html,
            )
            self.target.page_files.extend(page.figures)
            if image is not None and self._wants("uses_overlay"):
                from ocr_app.render.overlay import draw_overlay

                overlay = draw_overlay(image, page.blocks)
        kept = [w.arrive(page, overlay) for w in self._writers]
        if not page.error:
            page.timings["render"] = round(time.perf_counter() - start, 4)
        self._pending[page.index] = (page, kept)
        self._drain()

    def _drain(self) -> None:
        """Stream every pending page whose predecessors (in ``order``) are all in."""
        if self._order is None:
            return
        while self._next < len(self._order) and self._order[self._next] in self._pending:
            self._emit(*self._pending.pop(self._order[self._next]))
            self._next += 1

    def _emit(self, page: PageResult, kept: list[Any] | None) -> None:
        """Append one page to every format's document files."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if page.error and not page.markdown:
            page.markdown = error_note(page)
        for writer, k in zip(self._writers, kept or [None] * len(self._writers), strict=True):
            writer.emit(page, k)
        self._emitted.add(page.index)

    # --- whole document ----------------------------------------------------------------------------
    def finish(self, doc: DocumentResult) -> dict[str, Path]:
        """Stream pages still waiting, then publish every file; return and store (``doc.outputs``)
        their paths plus ``dir``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            for page in doc.pages:
                if page.index in self._emitted:
                    continue
                self._emit(*self._pending.pop(page.index, (page, None)))
            outputs: dict[str, Path] = {}
            for writer in self._writers:
                outputs.update(writer.finish(doc, dict(outputs)))
        except BaseException:
            self.abort()
            raise
        self._remove_stale(outputs)
        outputs["dir"] = self.dir
        doc.outputs = dict(outputs)
        logger.info("wrote %s (%s)", self.dir, ", ".join(k for k in outputs if k != "dir"))
        return outputs

    def _remove_stale(self, outputs: dict[str, Path]) -> None:
        """This run owns the folder: our files that it did not write go (another run's overlays...)."""
        keep = {p.resolve() for p in outputs.values()} | {f.resolve() for f in self.target.page_files}
        ours = [f for name in format_names() for f in format_class(name).owned(self.target)]
        ours.extend((self.dir / IMAGES_DIR).glob("*_*.jpg"))
        for path in ours:
            if path.is_file() and path.resolve() not in keep:
                path.unlink(missing_ok=True)
                logger.debug("removed %s (not written by this run)", path)
        for sub in (OVERLAYS_DIR, IMAGES_DIR):
            folder = self.dir / sub
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()

    def abort(self) -> None:
        """Drop every temp file of a run that cannot finish (files already published stay)."""
        for writer in self._writers:
            writer.abort()


__all__ = ["FORMATS", "JSON_FORMAT_VERSION", "DocumentWriter", "document_schema", "safe_stem"]
