"""Blocks of each section in reading order: headings (levels from the document's hierarchy), list
items, code, tables, and paragraphs whose lines are joined with line-end hyphens mended."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ocr_app.structure.layout import _group_section

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout

logger = logging.getLogger(__name__)


def run(page: PageLayout) -> None:
    for section in page.sections:
        page.blocks.extend(
            _group_section(
                section, page.body, page.config, page.style, page.vocabulary, page.page_height, page.panel
            )
        )
    logger.debug(
        "layout: %d lines → %d blocks (%d tables)", len(page.lines), len(page.blocks), len(page.found)
    )
