"""The labels of each diagram (lines the engine marked as inside one figure) become one item, so
they never pose as text columns, table rows or headings (a chart's axis labels are no table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocr_app.structure.layout import _figure_items

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    figures, page.lines, page.panel = _figure_items(page.lines)
    page.found.extend(figures)
