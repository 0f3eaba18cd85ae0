"""Tables: contents lists and tables without rules from word positions (``structure.borderless``),
on the whole page and inside one column of a page with columns, then the tables and forms the
engine found itself (ruled grids)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ocr_app.structure.layout import _Table, _tables_beside_a_gutter, detect_tables

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ocr_app.schema import Box
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    found, rest = detect_tables(page.lines, page.page_width, page.config, page.body)
    beside, rest = _tables_beside_a_gutter(rest, page.page_width, page.config, page.body)
    if page.table_regions is not None:
        # The layout model looked at this page: a grid of words it does not call a table is text.
        found, dropped = _split(found, page.table_regions)
        beside, dropped2 = _split(beside, page.table_regions)
        taken = {id(it) for t in [*dropped, *dropped2] for it in t.items}
        taken |= {id(ln) for ln in rest}
        rest = [ln for ln in page.lines if id(ln) in taken]
    page.lines = rest
    given = [
        _Table(box=t[0], rows=t[1], header_rows=t[2] if len(t) > 2 else 0) for t in page.given_tables if t[1]
    ]
    forms = [_Table(box=b, rows=r, form=True) for b, r in page.given_forms if r]
    # Figures were found first but are ordered with the tables, as before the passes existed.
    figures, page.found = page.found, []
    page.found = [*found, *beside, *given, *forms, *figures]


SMALL_GRID_ROWS = 3  # a grid of this many rows or fewer needs the layout model's word to be a table


def _split(tables: list[_Table], regions: Sequence[Box]) -> tuple[list[_Table], list[_Table]]:
    """Tables to keep and grids that are text: a grid of two or three rows (label/value pairs of a
    footnote or legend, a chart's labels) that lies in no table region of the layout model. Larger
    grids stay: the model misses tables without rulings that the word positions find (issue 25's
    sets), and tables of contents are told by their dot leaders."""
    from ocr_app.structure.regions import overlap

    keep, drop = [], []
    for t in tables:
        small = len(t.rows) <= SMALL_GRID_ROWS
        inside = any(overlap(t.box, r) >= 0.5 for r in regions)
        (drop if small and not inside and not t.contents else keep).append(t)
    return keep, drop
