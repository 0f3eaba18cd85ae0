"""Columns and reading order: the page cut into single-column sections (left column first, right
first on right-to-left pages), titles and full-width items kept in place between them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocr_app.structure.layout import order_sections

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    page.sections = order_sections(page.items, page.config, page.body, page.rtl)
