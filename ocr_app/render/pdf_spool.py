"""A PDF written page by page with host memory bounded, then moved into place whole.

Why: PyMuPDF keeps every page added to a document in memory until ``save`` — 12.5 GB for 2,000 A4
pages when the layout PDF was built whole at the end. A spool appends what it holds to a temp file
beside the target once it holds ``flush_every`` pages or ``flush_bytes`` of page content (a full save the
first time, an incremental save after) and re-opens the file, which drops the pages already written.
``close`` moves the file into place atomically; ``abort`` drops it. Every MuPDF call holds
``MUPDF_LOCK``: the background writer builds these PDFs while the converter renders pages with MuPDF on
another thread.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.ingest.pdf import MUPDF_LOCK
from ocr_app.render.atomic import publish, temp_beside

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

A4_POINTS = (595.0, 842.0)


class PdfSpool:
    """A new PDF built page by page (subclasses add the pages; call ``added`` after each)."""

    def __init__(self, out_path: Path, *, flush_every: int = 32, flush_bytes: int = 1 << 62) -> None:
        import pymupdf

        self.out_path = Path(out_path)
        self.flush_every = max(1, flush_every)
        self.flush_bytes = flush_bytes
        self.page_count = 0
        self._unsaved = 0
        self._unsaved_bytes = 0
        self._tmp = temp_beside(self.out_path)
        self._tmp.unlink()  # reserved a unique name; the first save makes it a PDF
        with MUPDF_LOCK:
            self.doc: pymupdf.Document = pymupdf.open()

    def add_note(self, text: str, size: tuple[float, float] = A4_POINTS) -> None:
        """A text page (a failed page keeps its place, so PDF page N stays document page N)."""
        with MUPDF_LOCK:
            page = self.doc.new_page(width=size[0], height=size[1])
            margin = min(50.0, size[0] / 8, size[1] / 8)
            fontsize = max(4.0, min(14.0, size[0] / 40))
            page.insert_textbox((margin, margin, size[0] - margin, size[1] - margin), text, fontsize=fontsize)
        self.added()

    def added(self, nbytes: int = 0) -> None:
        """One page was added (``nbytes``: about how much content it brought)."""
        self.page_count += 1
        self._unsaved += 1
        self._unsaved_bytes += nbytes
        if self._unsaved >= self.flush_every or self._unsaved_bytes >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        """Write the pages held in memory to the temp file and let them go."""
        import pymupdf

        if self._unsaved == 0:
            return
        # streams MuPDF holds uncompressed (a PNG's pixels, an embedded font) are deflated as written
        packed = {"deflate": True, "deflate_images": True, "deflate_fonts": True}
        with MUPDF_LOCK:
            if self._tmp.exists():
                self.doc.save(str(self._tmp), incremental=True, encryption=pymupdf.PDF_ENCRYPT_KEEP, **packed)
            else:
                self.doc.save(str(self._tmp), **packed)
            self.doc.close()
            self.doc = pymupdf.open(str(self._tmp))
        self._unsaved = self._unsaved_bytes = 0
        self.flushed()

    def flushed(self) -> None:
        """Called after each flush (a subclass drops what it cached for the old document)."""

    def close(self) -> Path:
        """Write what is left and move the PDF into place; returns its path."""
        try:
            if self.page_count == 0:
                self.add_note("No pages.")
            self.flush()
            with MUPDF_LOCK:
                self.doc.close()
        except BaseException:
            self.abort()
            raise
        publish(self._tmp, self.out_path)
        logger.debug("PDF written: %s (%d pages)", self.out_path, self.page_count)
        return self.out_path

    def abort(self) -> None:
        """Drop the temp file (an older file at the target, if any, stays)."""
        with MUPDF_LOCK:
            if not self.doc.is_closed:
                self.doc.close()
        self._tmp.unlink(missing_ok=True)
