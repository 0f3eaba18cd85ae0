"""Resource limits for ingest.

Why a separate frozen object: ingest must not import the settings machinery to learn a few numbers, and
tests pass tight limits directly. Each limit names the environment variable that changes it, so error
messages can tell users exactly what to set.

Why two pixel numbers: ``max_pixels_per_page`` bounds what is decoded at all (300 MP: an A3 scan at
600 dpi is 70 MP, and the tiling engine reads such pages at full resolution); ``render_pixels`` is
what a PDF page is rendered within, by lowering its DPI — a PDF page's DPI is ours to choose, and
rendering a 14,400 pt poster at 300 MP took 16 s and 1.8 GB for a page whose text layer reads it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

ENV_MAX_PIXELS = "DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE"
ENV_MAX_PAGES = "DEEPSEEK_OCR_MAX_PAGES"
ENV_MAX_FILE_MB = "DEEPSEEK_OCR_MAX_FILE_MB"
ENV_RENDER_PIXELS = "DEEPSEEK_OCR_PDF_RENDER_PIXELS"
ENV_MAX_PAGE_STREAM = "DEEPSEEK_OCR_MAX_PAGE_STREAM_MB"
ENV_MAX_RENDER_S = "DEEPSEEK_OCR_MAX_RENDER_S"


@dataclass(frozen=True)
class IngestLimits:
    """Upper bounds that protect memory and time: pixels per page image, pages per document, bytes per
    file, the pixels a PDF page is rendered within, bytes a PDF page's content may inflate to, and seconds
    a heavy page may take to render (pages whose content inflates past ``isolate_render_bytes`` render in
    a child process under that limit)."""

    max_pixels_per_page: int = 300_000_000
    max_pages: int = 2000
    max_file_bytes: int = 500 * 2**20
    render_pixels: int = 60_000_000
    max_page_stream_bytes: int = 256 * 2**20
    max_render_s: float = 60.0
    isolate_render_bytes: int = 32 * 2**20

    def __post_init__(self) -> None:
        from ocr_app.exceptions import ConfigError

        for field_name in (
            "max_pixels_per_page", "max_pages", "max_file_bytes", "render_pixels", "max_page_stream_bytes"
        ):
            if getattr(self, field_name) < 1:
                raise ConfigError(f"{field_name} must be at least 1, got {getattr(self, field_name)}")

    @classmethod
    def from_settings(cls, settings: Any) -> IngestLimits:
        """Limits from an ``ocr_app.settings.Settings`` (file size there is in MiB)."""
        return cls(
            max_pixels_per_page=int(settings.max_pixels_per_page),
            max_pages=int(settings.max_pages),
            max_file_bytes=int(float(settings.max_file_mb) * 2**20),
            render_pixels=int(settings.pdf_render_pixels),
            max_page_stream_bytes=int(float(settings.max_page_stream_mb) * 2**20),
            max_render_s=float(settings.max_render_s),
            isolate_render_bytes=int(float(settings.render_isolation_mb) * 2**20),
        )

    @property
    def pdf_pixels(self) -> int:
        """The pixels a PDF page is rendered within: the render budget, never above the hard bound."""
        return min(self.render_pixels, self.max_pixels_per_page)
