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
from ocr_app.render.pdf_spool import A4_POINTS, PdfSpool

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

__all__ = ["A4_POINTS", "LayoutPdfBuilder", "write_layout_pdf"]


class LayoutPdfBuilder(PdfSpool):
    """Builds the layout PDF page by page with host memory flat in the page count (``PdfSpool``)."""

    def __init__(self, out_path: Path, dpi: int = 144, flush_every: int = 32) -> None:
        super().__init__(Path(out_path), flush_every=flush_every)
        self.scale = 72.0 / dpi

    def add_image(self, data: bytes, size: tuple[int, int]) -> None:
        """One page showing an encoded image (JPEG or PNG bytes) of ``size`` pixels."""
        with MUPDF_LOCK:
            page = self.doc.new_page(width=size[0] * self.scale, height=size[1] * self.scale)
            page.insert_image(page.rect, stream=data)
        self.added()

    def add_file(self, path: Path) -> None:
        from PIL import Image as PILImage

        with PILImage.open(path) as im:
            size = im.size
        with MUPDF_LOCK:
            page = self.doc.new_page(width=size[0] * self.scale, height=size[1] * self.scale)
            page.insert_image(page.rect, filename=str(path))
        self.added()


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
