"""The document writer the converter calls: one folder per input with every output format.

Why a stateful writer with ``add_page``/``finish``: pages arrive one by one (and may fail one by one), and
every output is written as they arrive, so host memory stays flat in the page count (a 2,000-page PDF
used to peak at 12.5 GB while its layout PDF was built at the end). Figures and overlay PNGs are written
when a page is parsed; the Markdown, raw text, JSON pages and layout PDF are streamed to temp files in
page order (pages that arrive early wait for the ones before them: at most one engine batch);
``finish`` writes the JSON header and the ZIP and moves every file into place atomically.

A run owns its folder: files of ours that this run did not write (overlays and figures of pages a
previous run had, outputs of formats not asked for now) are removed by ``finish``; other files are left.

Layout of ``out_dir/stem/``::

    {stem}.md  {stem}.mmd  {stem}.json  {stem}_layout.pdf  {stem}.zip
    images/{page}_{idx}.jpg      (page 0-based, like the official script)
    overlays/page_0001.png       (page 1-based, as users count)
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import shutil
import time
import zipfile
from collections.abc import Iterable, Sequence
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.engines.base import PROMPTLESS_ENGINES
from ocr_app.exceptions import ConfigError
from ocr_app.render.atomic import atomic_target, publish, temp_beside
from ocr_app.render.formats import OUTPUT_FORMATS
from ocr_app.render.layout_pdf import LayoutPdfBuilder
from ocr_app.render.markdown import PAGE_RULE, page_block, page_markdown
from ocr_app.render.overlay import draw_overlay
from ocr_app.schema import DocumentResult, PageResult, StopReason

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

FORMATS = frozenset(OUTPUT_FORMATS)
JSON_FORMAT_VERSION = "1.0"
IMAGES_DIR = "images"
OVERLAYS_DIR = "overlays"
_UNSAFE_STEM_RE = re.compile(r"[\\/\x00-\x1f]+")
_STORED_SUFFIXES = {".png", ".jpg", ".jpeg", ".pdf"}  # already compressed: deflating wastes time
_OUTPUT_SUFFIXES = (".md", ".mmd", ".json", "_layout.pdf", ".zip")
PNG_LEVEL = 1  # overlay PNGs: zlib level 1 is ~2x faster than the default 6 for ~5 % more bytes
LAYOUT_JPEG_QUALITY = 85  # layout PDF pages: a JPEG goes into the PDF as is (no decode, no re-encode)


@lru_cache(maxsize=1)
def document_schema() -> dict[str, Any]:
    """The JSON Schema of ``{stem}.json`` (shipped as ``ocr_app/render/document.schema.json``)."""
    text = resources.files("ocr_app.render").joinpath("document.schema.json").read_text("utf-8")
    return json.loads(text)


def _package_version() -> str:
    try:
        return metadata.version("ocr-app")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def safe_stem(stem: str) -> str:
    """A folder/file stem with no path separators or control characters."""
    cleaned = _UNSAFE_STEM_RE.sub("_", stem).strip()
    if cleaned in ("", ".", ".."):
        raise ConfigError(f"Output name {stem!r} is not usable as a file name.")
    return cleaned


def _error_note(page: PageResult) -> str:
    message = " ".join((page.error or "unknown error").split())
    return f"> **Page {page.index + 1} could not be converted:** {message}"


def _stopped_note(page: PageResult) -> str:
    return (
        f"> **Page {page.index + 1} stopped early ({page.stop_reason.value}):** its text may be incomplete."
    )


class _TextSpool:
    """A text file written piece by piece into a temp file beside its target, published on ``close``."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.tmp = temp_beside(target)
        self._fh = open(self.tmp, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - closed in close/abort
        self.parts = 0

    def write(self, text: str) -> None:
        self._fh.write(text)

    def close_file(self) -> None:
        """Flush to disk and close, without publishing (for a part that is copied elsewhere)."""
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()

    def close(self) -> Path:
        self.close_file()
        return publish(self.tmp, self.target)

    def abort(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        self.tmp.unlink(missing_ok=True)


class DocumentWriter:
    """Writes one document's outputs into ``out_dir/stem/``, page by page.

    ``formats`` picks the files; ``"zip"`` implies all of them (the ZIP is "all of it"). ``order`` is
    the page indices in the order the document lists them; without it pages are held until ``finish``
    (fine for a few pages, not for a long document).
    """

    def __init__(
        self,
        out_dir: Path,
        stem: str,
        formats: Iterable[str] = FORMATS,
        dpi: int = 144,
        order: Sequence[int] | None = None,
    ) -> None:
        requested = frozenset(formats)
        unknown = requested - FORMATS
        if unknown:
            raise ConfigError(
                f"Unknown output format(s): {', '.join(sorted(unknown))}. Choose from {', '.join(sorted(FORMATS))}."
            )
        self.formats = FORMATS if "zip" in requested else requested
        self.stem = safe_stem(stem)
        self.dir = Path(out_dir) / self.stem
        self.dpi = dpi
        self._files: list[Path] = []  # figures and overlays written by this writer, for the ZIP
        self._order = list(order) if order is not None else None
        self._next = 0  # position in ``_order`` of the next page to stream
        self._pending: dict[int, tuple[PageResult, bytes | str | None, tuple[int, int]]] = {}
        self._emitted: set[int] = set()
        self._md: _TextSpool | None = None
        self._mmd: _TextSpool | None = None
        self._json_pages: _TextSpool | None = None  # the "pages" array; the header is written at the end
        self._layout: LayoutPdfBuilder | None = None

    @property
    def images_dir(self) -> Path:
        return self.dir / IMAGES_DIR

    @property
    def overlays_dir(self) -> Path:
        return self.dir / OVERLAYS_DIR

    def _wants_figures(self) -> bool:
        return bool(self.formats & {"md", "json"})

    # --- per page ----------------------------------------------------------------------------------
    def add_page(self, page: PageResult, image: Image.Image | None) -> None:
        """Fill ``page.markdown``, ``page.figures`` and ``page.overlay_path``, write those files and
        stream the page into the document files as soon as the pages before it are in.

        A failed page (``page.error`` set) gets a Markdown note and no overlay. The image is not kept.
        """
        start = time.perf_counter()
        layout: bytes | str | None = None
        size = (0, 0)
        if page.error:
            page.markdown = _error_note(page)
            page.figures = []
            page.overlay_path = None
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
            images_dir = self.images_dir if self._wants_figures() else None
            page.markdown, page.figures = page_markdown(
                page.blocks,
                image,
                page.index,
                images_dir,
                IMAGES_DIR,
                keep_table_html=page.engine not in PROMPTLESS_ENGINES,
            )
            self._files.extend(page.figures)
            page.overlay_path = None
            if image is not None and self.formats & {"overlay", "layout_pdf"}:
                overlay = draw_overlay(image, page.blocks)
                size = overlay.size
                if "overlay" in self.formats:
                    path = self.overlays_dir / f"page_{page.index + 1:04d}.png"
                    with atomic_target(path) as tmp:
                        overlay.save(tmp, format="PNG", compress_level=PNG_LEVEL)
                    page.overlay_path = path
                    self._files.append(path)
                if "layout_pdf" in self.formats:
                    buf = io.BytesIO()
                    overlay.save(buf, format="JPEG", quality=LAYOUT_JPEG_QUALITY)
                    layout = buf.getvalue()
        if not page.error:
            page.timings["render"] = round(time.perf_counter() - start, 4)
        self._pending[page.index] = (page, layout, size)
        self._drain()

    def _drain(self) -> None:
        """Stream every pending page whose predecessors (in ``order``) are all in."""
        if self._order is None:
            return
        while self._next < len(self._order) and self._order[self._next] in self._pending:
            self._emit(*self._pending.pop(self._order[self._next]))
            self._next += 1

    def _emit(self, page: PageResult, layout: bytes | str | None, size: tuple[int, int]) -> None:
        """Append one page to the Markdown, raw text, JSON pages and layout PDF."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if page.error and not page.markdown:
            page.markdown = _error_note(page)
        number = page.index + 1
        if "md" in self.formats:
            self._md = self._md or _TextSpool(self.dir / f"{self.stem}.md")
            self._append(self._md, number, _document_page_markdown(page))
        if "mmd" in self.formats:
            self._mmd = self._mmd or _TextSpool(self.dir / f"{self.stem}.mmd")
            self._append(self._mmd, number, page.raw_text)
        if "json" in self.formats:
            self._json_pages = self._json_pages or _TextSpool(self.dir / f"{self.stem}.json")
            page_dict = page.to_dict()
            page_dict["overlay"] = self._rel(page.overlay_path)
            page_dict["figures"] = [self._rel(f) for f in page.figures]
            text = json.dumps(page_dict, ensure_ascii=False, indent=2).replace("\n", "\n    ")
            self._json_pages.write((",\n    " if self._json_pages.parts else "    ") + text)
            self._json_pages.parts += 1
        if "layout_pdf" in self.formats:
            if self._layout is None:
                self._layout = LayoutPdfBuilder(self.dir / f"{self.stem}_layout.pdf", dpi=self.dpi)
            if isinstance(layout, bytes):
                self._layout.add_image(layout, size)
            elif page.error:
                self._layout.add_note(
                    f"{page.source}, page {number}: could not be converted.\n\n{page.error}"
                )
            else:
                self._layout.add_note(f"{page.source}, page {number}: no page image.")
        self._emitted.add(page.index)

    @staticmethod
    def _append(spool: _TextSpool, number: int, text: str) -> None:
        spool.write((PAGE_RULE if spool.parts else "") + page_block(number, text))
        spool.parts += 1

    def _rel(self, path: Path | None) -> str | None:
        return None if path is None else Path(path).relative_to(self.dir).as_posix()

    # --- whole document ----------------------------------------------------------------------------
    def _json_header(self, doc: DocumentResult) -> str:
        data = {"version": JSON_FORMAT_VERSION, "generator": f"ocr-app {_package_version()}", **doc.to_dict()}
        del data["pages"]  # streamed; "pages" stays the last key
        head = json.dumps(data, ensure_ascii=False, indent=2)
        return head[: head.rstrip().rfind("}")].rstrip() + ',\n  "pages": ['

    def _write_zip(self, path: Path, files: list[Path]) -> None:
        with atomic_target(path) as tmp, zipfile.ZipFile(tmp, "w") as zf:
            for f in files:
                method = zipfile.ZIP_STORED if f.suffix.lower() in _STORED_SUFFIXES else zipfile.ZIP_DEFLATED
                zf.write(f, arcname=self._rel(f), compress_type=method)

    def finish(self, doc: DocumentResult) -> dict[str, Path]:
        """Stream pages still waiting, then publish every file; return and store (``doc.outputs``)
        their paths plus ``dir``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            for page in doc.pages:
                if page.index in self._emitted:
                    continue
                self._emit(*self._pending.pop(page.index, (page, None, (0, 0))))
            return self._publish(doc)
        except BaseException:
            self.abort()
            raise

    def _publish(self, doc: DocumentResult) -> dict[str, Path]:
        outputs: dict[str, Path] = {}
        if "md" in self.formats:
            md = self._md or _TextSpool(self.dir / f"{self.stem}.md")
            md.write("\n" if md.parts else "")
            outputs["md"] = md.close()
        if "mmd" in self.formats:
            mmd = self._mmd or _TextSpool(self.dir / f"{self.stem}.mmd")
            mmd.write("\n" if mmd.parts else "")
            outputs["mmd"] = mmd.close()
        if "layout_pdf" in self.formats:
            layout = self._layout or LayoutPdfBuilder(self.dir / f"{self.stem}_layout.pdf", dpi=self.dpi)
            outputs["layout_pdf"] = layout.close()
        if "overlay" in self.formats and any(p.overlay_path for p in doc.pages):
            outputs["overlays"] = self.overlays_dir
        if "json" in self.formats:
            outputs["json"] = self._publish_json(doc)
        if "zip" in self.formats:
            files = [p for k, p in outputs.items() if k != "overlays"] + [
                f for f in self._files if f.exists()
            ]
            zip_path = self.dir / f"{self.stem}.zip"
            self._write_zip(zip_path, files)
            outputs["zip"] = zip_path
        self._remove_stale(outputs)
        outputs["dir"] = self.dir
        doc.outputs = dict(outputs)
        logger.info("wrote %s (%s)", self.dir, ", ".join(k for k in outputs if k != "dir"))
        return outputs

    def _publish_json(self, doc: DocumentResult) -> Path:
        """Header (known only now: status counts, notes) + the streamed pages, copied in blocks."""
        target = self.dir / f"{self.stem}.json"
        pages = self._json_pages
        out = _TextSpool(target)
        try:
            out.write(self._json_header(doc))
            if pages is not None and pages.parts:
                pages.close_file()
                out.write("\n")
                with open(pages.tmp, encoding="utf-8") as fh:
                    shutil.copyfileobj(fh, out._fh, 1 << 20)
                out.write("\n  ]\n}\n")
            else:
                out.write("]\n}\n")
        except BaseException:
            out.abort()
            raise
        finally:
            if pages is not None:
                pages.abort()
        return out.close()

    def _remove_stale(self, outputs: dict[str, Path]) -> None:
        """This run owns the folder: our files that it did not write go (another run's overlays...)."""
        keep = {p.resolve() for p in outputs.values()} | {f.resolve() for f in self._files}
        ours = [self.dir / f"{self.stem}{suffix}" for suffix in _OUTPUT_SUFFIXES]
        for sub, pattern in ((OVERLAYS_DIR, "page_*.png"), (IMAGES_DIR, "*_*.jpg")):
            ours.extend((self.dir / sub).glob(pattern))
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
        for spool in (self._md, self._mmd, self._json_pages):
            if spool is not None:
                spool.abort()
        if self._layout is not None:
            self._layout.abort()


def _document_page_markdown(page: PageResult) -> str:
    md = page.markdown or (_error_note(page) if page.error else "")
    if not page.error and page.stop_reason in (StopReason.LENGTH, StopReason.REPETITION):
        md = f"{md}\n\n{_stopped_note(page)}" if md else _stopped_note(page)
    return md
