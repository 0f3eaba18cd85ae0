"""Overlay images → one layout PDF (PyMuPDF), one page per overlay.

Why a PDF: reviewers page through the detected layout of a long document in any PDF viewer, instead of
opening hundreds of PNGs. Pages keep the render DPI so an A4 scan at 144 DPI becomes an A4 PDF page.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.ingest.pdf import MUPDF_LOCK
from ocr_app.render.atomic import publish, temp_beside

if TYPE_CHECKING:
    import pymupdf
    from PIL import Image

logger = logging.getLogger(__name__)

A4_POINTS = (595.0, 842.0)


def _add_note_page(doc: pymupdf.Document, text: str) -> None:
    page = doc.new_page(width=A4_POINTS[0], height=A4_POINTS[1])
    page.insert_textbox((50, 50, A4_POINTS[0] - 50, A4_POINTS[1] - 50), text, fontsize=14)


class LayoutPdfBuilder:
    """Builds the layout PDF page by page with host memory flat in the page count.

    Why: PyMuPDF keeps every inserted page in memory until ``save`` — 12.5 GB for 2,000 A4 pages
    when the whole PDF was built at the end. Here every ``flush_every`` pages are appended to a temp
    file beside the target (a full save the first time, an incremental save after) and the document is
    re-opened, which drops the pages already written. ``close`` moves the file into place atomically.
    Every MuPDF call holds ``MUPDF_LOCK``: the background writer builds this PDF while the converter
    renders pages with MuPDF on another thread.
    """

    def __init__(self, out_path: Path, dpi: int = 144, flush_every: int = 32) -> None:
        import pymupdf

        self.out_path = Path(out_path)
        self.scale = 72.0 / dpi
        self.flush_every = max(1, flush_every)
        self.page_count = 0
        self._unsaved = 0
        self._tmp = temp_beside(self.out_path)
        self._tmp.unlink()  # reserved a unique name; the first save makes it a PDF
        with MUPDF_LOCK:
            self._doc: pymupdf.Document = pymupdf.open()

    def add_image(self, data: bytes, size: tuple[int, int]) -> None:
        """One page showing an encoded image (JPEG or PNG bytes) of ``size`` pixels."""
        with MUPDF_LOCK:
            page = self._doc.new_page(width=size[0] * self.scale, height=size[1] * self.scale)
            page.insert_image(page.rect, stream=data)
        self._added()

    def add_file(self, path: Path) -> None:
        from PIL import Image as PILImage

        with PILImage.open(path) as im:
            size = im.size
        with MUPDF_LOCK:
            page = self._doc.new_page(width=size[0] * self.scale, height=size[1] * self.scale)
            page.insert_image(page.rect, filename=str(path))
        self._added()

    def add_note(self, text: str) -> None:
        """A text page (a failed page keeps its place, so PDF page N stays document page N)."""
        with MUPDF_LOCK:
            _add_note_page(self._doc, text)
        self._added()

    def _added(self) -> None:
        self.page_count += 1
        self._unsaved += 1
        if self._unsaved >= self.flush_every:
            self._flush()

    def _flush(self) -> None:
        import pymupdf

        if self._unsaved == 0:
            return
        with MUPDF_LOCK:
            if self._tmp.exists():
                self._doc.saveIncr()
            else:
                self._doc.save(str(self._tmp))
            self._doc.close()
            self._doc = pymupdf.open(str(self._tmp))
        self._unsaved = 0

    def close(self) -> Path:
        """Write what is left and move the PDF into place; returns its path."""
        try:
            if self.page_count == 0:
                self.add_note("No pages.")
            self._flush()
            with MUPDF_LOCK:
                self._doc.close()
        except BaseException:
            self.abort()
            raise
        publish(self._tmp, self.out_path)
        logger.debug("layout PDF written: %s (%d pages)", self.out_path, self.page_count)
        return self.out_path

    def abort(self) -> None:
        """Drop the temp file (the old layout PDF, if any, stays)."""
        with MUPDF_LOCK:
            if not self._doc.is_closed:
                self._doc.close()
        self._tmp.unlink(missing_ok=True)


def write_layout_pdf(pages: Iterable[Path | Image.Image | str], out_path: Path, dpi: int = 144) -> Path:
    """Write one PDF page per item and return ``out_path``; the file is replaced atomically.

    Items are overlay PNG paths, PIL images, or strings; a string becomes a text page (the writer uses
    it for pages that failed, so PDF page N stays document page N). An empty input gives one note page,
    because a PDF cannot have zero pages.
    """
    builder = LayoutPdfBuilder(Path(out_path), dpi=dpi)
    try:
        for item in pages:
            if isinstance(item, str):
                builder.add_note(item)
            elif isinstance(item, Path):
                builder.add_file(item)
            else:
                buf = io.BytesIO()
                item.convert("RGB").save(buf, format="PNG", compress_level=1)
                builder.add_image(buf.getvalue(), item.size)
    except BaseException:
        builder.abort()
        raise
    return builder.close()
