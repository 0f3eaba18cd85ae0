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

from ocr_app.render.atomic import atomic_target

if TYPE_CHECKING:
    import pymupdf
    from PIL import Image

logger = logging.getLogger(__name__)

A4_POINTS = (595.0, 842.0)


def _add_note_page(doc: pymupdf.Document, text: str) -> None:
    page = doc.new_page(width=A4_POINTS[0], height=A4_POINTS[1])
    page.insert_textbox((50, 50, A4_POINTS[0] - 50, A4_POINTS[1] - 50), text, fontsize=14)


def write_layout_pdf(pages: Iterable[Path | Image.Image | str], out_path: Path, dpi: int = 144) -> Path:
    """Write one PDF page per item and return ``out_path``; the file is replaced atomically.

    Items are overlay PNG paths, PIL images, or strings; a string becomes a text page (the writer uses
    it for pages that failed, so PDF page N stays document page N). An empty input gives one note page,
    because a PDF cannot have zero pages.
    """
    import pymupdf
    from PIL import Image as PILImage

    scale = 72.0 / dpi
    doc = pymupdf.open()
    try:
        for item in pages:
            if isinstance(item, str):
                _add_note_page(doc, item)
                continue
            if isinstance(item, Path):
                with PILImage.open(item) as im:
                    size = im.size
                source = {"filename": str(item)}
            else:
                size = item.size
                buf = io.BytesIO()
                item.convert("RGB").save(buf, format="PNG")
                source = {"stream": buf.getvalue()}
            page = doc.new_page(width=size[0] * scale, height=size[1] * scale)
            page.insert_image(page.rect, **source)
        if doc.page_count == 0:
            _add_note_page(doc, "No pages.")
        with atomic_target(Path(out_path)) as tmp:
            doc.save(str(tmp), garbage=3, deflate=True)
    finally:
        doc.close()
    logger.debug("layout PDF written: %s", out_path)
    return Path(out_path)
