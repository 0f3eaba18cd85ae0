"""Tables: contents lists and tables without rules from word positions (``structure.borderless``),
on the whole page and inside one column of a page with columns, then the tables and forms the
engine found itself (ruled grids)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocr_app.structure.layout import _Table, _tables_beside_a_gutter, detect_tables

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    found, rest = detect_tables(page.lines, page.page_width, page.config, page.body)
    beside, rest = _tables_beside_a_gutter(rest, page.page_width, page.config, page.body)
    page.lines = rest
    given = [
        _Table(box=t[0], rows=t[1], header_rows=t[2] if len(t) > 2 else 0) for t in page.given_tables if t[1]
    ]
    forms = [_Table(box=b, rows=r, form=True) for b, r in page.given_forms if r]
    # Figures were found first but are ordered with the tables, as before the passes existed.
    figures, page.found = page.found, []
    page.found = [*found, *beside, *given, *forms, *figures]
