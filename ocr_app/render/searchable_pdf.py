"""The searchable PDF: every source page as it is, with the recognised text laid over it invisibly, so
a scan can be searched, selected and copied in any PDF viewer (what OCRmyPDF makes of a scan).

Why the source pages and not the page images: a PDF page is copied whole (``insert_pdf``: its vector
content, fonts and images untouched, nothing re-rendered), so the output looks like the input at any zoom
and is about its size; an image file's page is the image itself (a JPEG's own bytes, others lossless).
Pages whose text the text layer read already carry that text: they are copied as they are, nothing laid
over them. Every other page gets its runs (``render.pdf_text``) set by ``render.invisible_text``. A damaged
PDF (repaired on opening: objects may be lost) is not copied from: its pages are kept as they were
rendered, each with the runs of whichever engine read it; a page MuPDF cannot copy from a sound PDF
becomes a note in its place (``PageCopyError``).

Memory: pages are held until the spool writes them out (``PdfSpool``): every ``FLUSH_PAGES`` pages or
``FLUSH_BYTES`` of image data, whichever comes first; the source PDF is re-opened after each write, so
what MuPDF cached of it goes too. Every MuPDF call holds ``MUPDF_LOCK``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.ingest.pdf import MUPDF_LOCK
from ocr_app.render.invisible_text import FontBook, draw_runs, frame_of
from ocr_app.render.pdf_spool import PdfSpool

if TYPE_CHECKING:
    from collections.abc import Sequence

    from PIL import Image

    from ocr_app.render.pdf_text import TextRun
    from ocr_app.schema import PageImage

logger = logging.getLogger(__name__)

FLUSH_PAGES = 64
FLUSH_BYTES = 64 << 20
DEFAULT_IMAGE_DPI = 144  # an image file's page size when it does not say its resolution


class PageCopyError(ValueError):
    """A source page MuPDF could not copy (a damaged object): the caller keeps the page's place."""


class SearchablePdfBuilder(PdfSpool):
    """Builds ``NAME_searchable.pdf`` page by page, in document order."""

    def __init__(
        self, out_path: Path, *, flush_every: int = FLUSH_PAGES, flush_bytes: int = FLUSH_BYTES
    ) -> None:
        super().__init__(Path(out_path), flush_every=flush_every, flush_bytes=flush_bytes)
        self._fonts = FontBook()
        self._source: Any = None  # the open source PDF (pymupdf.Document)
        self._source_key: tuple[str, str | None] | None = None

    def add_pdf_page(
        self,
        pdf_path: Path,
        index: int,
        *,
        password: str | None = None,
        runs: Sequence[TextRun] = (),
        image_size: tuple[int, int] | None = None,
    ) -> int:
        """Copy page ``index`` of ``pdf_path`` and set ``runs`` (boxes in pixels of the page rendered at
        ``image_size``) over it; returns the runs set."""
        with MUPDF_LOCK:
            source = self._open_source(pdf_path, password)
            before = self.doc.page_count
            try:
                self._copy(source, index)
            except mupdf_errors() as exc:
                while self.doc.page_count > before:  # nothing half copied stays
                    self.doc.delete_page(-1)
                raise PageCopyError(str(exc)) from exc
            page = self.doc[-1]
            nbytes = _image_bytes(source, index)
            placed = 0
            if runs and image_size:
                placed = draw_runs(page, runs, frame_of(page, image_size), self._fonts)
        self.added(nbytes)
        return placed

    def _copy(self, source: Any, index: int) -> None:
        """Page ``index`` of ``source`` appended as it is (call with MUPDF_LOCK held).

        widgets=True would walk every page of the source on each call (PyMuPDF repairs radio buttons
        first): 120 ms a page of a 2,000-page PDF, 0.2 ms without; only forms need it. final=False keeps
        the graft map, so resources the pages share (fonts) are copied once per written batch."""
        widgets = bool(source.is_form_pdf)
        self.doc.insert_pdf(source, from_page=index, to_page=index, widgets=widgets, final=False)

    def add_image_page(
        self,
        data: bytes,
        image_size: tuple[int, int],
        *,
        dpi: float | None = None,
        runs: Sequence[TextRun] = (),
    ) -> int:
        """A page showing an encoded image (JPEG or PNG bytes, embedded as they are) at ``dpi``, with
        ``runs`` over it; returns the runs set."""
        scale = 72.0 / (dpi or DEFAULT_IMAGE_DPI)
        with MUPDF_LOCK:
            page = self.doc.new_page(width=image_size[0] * scale, height=image_size[1] * scale)
            try:
                page.insert_image(page.rect, stream=data)
            except mupdf_errors() as exc:  # an image MuPDF cannot embed: no half page stays
                self.doc.delete_page(-1)
                raise PageCopyError(f"the page image cannot be embedded: {exc}") from exc
            placed = draw_runs(page, runs, frame_of(page, image_size), self._fonts) if runs else 0
        self.added(len(data))
        return placed

    def _open_source(self, pdf_path: Path, password: str | None) -> Any:
        import pymupdf

        key = (str(pdf_path), password)
        if self._source_key != key:
            self._close_source()
            source = pymupdf.open(str(pdf_path), filetype="pdf")
            if source.needs_pass and not source.authenticate(password or ""):
                source.close()
                raise ValueError(f"{Path(pdf_path).name}: the password does not open it")
            self._source, self._source_key = source, key
        return self._source

    def _close_source(self) -> None:
        if self._source is not None and not self._source.is_closed:
            self._source.close()
        self._source = self._source_key = None

    def flushed(self) -> None:
        """A new document after each write: fonts are embedded anew, the source re-opened when next read."""
        self._fonts = FontBook()
        with MUPDF_LOCK:
            self._close_source()

    def close(self) -> Path:
        with MUPDF_LOCK:
            self._close_source()
        return super().close()

    def abort(self) -> None:
        with MUPDF_LOCK:
            self._close_source()
        super().abort()


def mupdf_errors() -> tuple[type[BaseException], ...]:
    """What MuPDF raises on a damaged object: PyMuPDF's RuntimeError/ValueError, or MuPDF's own
    ``FzErrorBase``, which is neither."""
    import pymupdf

    return (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)


def encode_page_image(image: Image.Image, source: PageImage | None) -> bytes:
    """The bytes a searchable page shows: the image file's own (a JPEG stored upright), else the pixels
    as PNG (lossless: the page stays as it was)."""
    import io

    if source is not None and source.image_file is not None:
        try:
            return Path(source.image_file).read_bytes()
        except OSError as exc:  # gone meanwhile: the pixels are still here
            logger.debug("%s: %s; embedding the pixels", source.image_file, exc)
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=3)
    return buf.getvalue()


def image_dpi(image: Image.Image, source: PageImage | None) -> float | None:
    """The resolution a page image was made at: the render DPI of a PDF page, else what the image file
    says (50-2400 DPI is believed), else None."""
    if source is not None and source.dpi:
        return float(source.dpi)
    dpi = image.info.get("dpi")
    try:
        value = float(dpi[0]) if isinstance(dpi, tuple) else float(dpi)
    except (TypeError, ValueError):
        return None
    return value if 50 <= value <= 2400 else None


def _image_bytes(source: Any, index: int) -> int:
    """About how many bytes of images page ``index`` brings (their stored lengths)."""
    total = 0
    try:
        for item in source[index].get_images(full=True):
            length = source.xref_get_key(item[0], "Length")
            if length[0] == "int":
                total += int(length[1])
    except (RuntimeError, ValueError) as exc:  # only a hint for when to write out
        logger.debug("image sizes of page %d unknown: %s", index + 1, exc)
    return total


__all__ = ["PageCopyError", "SearchablePdfBuilder", "encode_page_image", "image_dpi"]
