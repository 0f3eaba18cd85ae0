"""Render: blocks → Markdown, raw text, JSON, overlays, layout PDF and ZIP (see ``writer``)."""

from ocr_app.render.atomic import atomic_write_bytes, atomic_write_text
from ocr_app.render.markdown import document_markdown, page_markdown
from ocr_app.render.overlay import draw_overlay, label_colour
from ocr_app.render.writer import FORMATS, DocumentWriter, document_schema

__all__ = [
    "FORMATS",
    "DocumentWriter",
    "atomic_write_bytes",
    "atomic_write_text",
    "document_markdown",
    "document_schema",
    "draw_overlay",
    "label_colour",
    "page_markdown",
]
