"""Ingest: files and bytes → ``SourceDocument`` → one RGB ``PageImage`` per page, rendered on demand.

Public API: ``open_document``, ``SourceDocument``, ``IngestLimits``, ``parse_page_range``,
``iter_input_files``, ``SUPPORTED_EXTENSIONS``, ``to_rgb``. Importing this package is light: PyMuPDF
and Pillow load only when a document is opened.
"""

from __future__ import annotations

from ocr_app.ingest.base import SourceDocument
from ocr_app.ingest.document import open_document
from ocr_app.ingest.files import SUPPORTED_EXTENSIONS, iter_input_files
from ocr_app.ingest.image import to_rgb
from ocr_app.ingest.limits import IngestLimits
from ocr_app.ingest.page_range import clip_page_range, parse_page_range

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "IngestLimits",
    "SourceDocument",
    "clip_page_range",
    "iter_input_files",
    "open_document",
    "parse_page_range",
    "to_rgb",
]
