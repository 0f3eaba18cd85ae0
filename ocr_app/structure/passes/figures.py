"""The labels of each diagram (lines the engine marked as inside one figure) become one item, so
they never pose as text columns, table rows or headings (a chart's axis labels are no table)."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from ocr_app.schema import union_box
from ocr_app.structure.lines import Table, TextLine, group_rows

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    figures, page.lines, page.panel = figure_items(page.lines)
    page.found.extend(figures)


MAX_LABEL_WORDS = 8  # a figure whose lines are all shorter holds labels, not prose


def figure_items(lines: list[TextLine]) -> tuple[list[Table], list[TextLine], frozenset[int]]:
    """The labels of each figure (a diagram's vector text) as one item, read row by row where the
    figure stands, and the other lines.

    Why: left loose, labels side by side look like text columns or table rows, and a figure that
    spans both columns of a page would be torn in two. A figure with sentences in it (a text box over
    a picture) keeps its lines: they are read as text, and their ids come back as the third item.
    """
    groups: dict[int, list[TextLine]] = {}
    for ln in lines:
        if ln.in_figure and ln.figure:
            groups.setdefault(ln.figure, []).append(ln)
    figures: list[Table] = []
    grouped: set[int] = set()
    panel: set[int] = set()
    for members in groups.values():
        if any(len(ln.text.split()) >= MAX_LABEL_WORDS for ln in members):
            panel.update(id(ln) for ln in members)
            continue
        rows = group_rows(members)
        figures.append(
            Table(
                box=union_box([ln.box for ln in members]),
                rows=[[r.text] for r in rows],
                size=statistics.median(ln.size for ln in members),
                items=members,
                form=True,
            )
        )
        grouped.update(id(ln) for ln in members)
    return figures, [ln for ln in lines if id(ln) not in grouped], frozenset(panel)
