"""The structure pipeline: passes in order over one page object, and a new pass plugged in between."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import DEFAULT_PASSES, PageLayout, build_blocks, insert_pass, run_passes

BODY = 10.0


def _grid() -> list[TextLine]:
    """Three rows of three numbers a clear gap apart: a table, unless something says it is a figure."""
    lines = []
    for r in range(3):
        for c in range(3):
            x, y = 100 + 120 * c, 100 + 14 * r
            lines.append(TextLine(str(25 * (r + c)), (x, y, x + 20, y + BODY), BODY))
    return lines


def test_default_passes_run_in_data_flow_order():
    assert [name for name, _ in DEFAULT_PASSES] == ["prepare", "figures", "tables", "columns", "blocks"]


def test_insert_pass_refuses_an_unknown_neighbour():
    with pytest.raises(ValueError, match="no pass called 'regions'"):
        insert_pass(DEFAULT_PASSES, "mine", lambda page: None, before="regions")


def test_a_pass_plugged_in_before_tables_can_turn_a_grid_into_figure_labels():
    assert [b.label for b in build_blocks(_grid(), page_width=600)] == ["table"]

    def chart_region(page: PageLayout) -> None:
        # What a layout model's pass does with a "figure" region: its lines are a figure's labels.
        page.regions.append(("figure", (90, 90, 400, 150)))
        page.lines = [replace(ln, in_figure=True, figure=1) for ln in page.lines]

    passes = insert_pass(DEFAULT_PASSES, "regions", chart_region, before="figures")
    blocks = build_blocks(_grid(), page_width=600, passes=passes)
    assert "table" not in [b.label for b in blocks]
    assert "25" in " ".join(b.text for b in blocks)


def test_an_empty_page_stops_after_prepare():
    seen: list[str] = []
    passes = insert_pass(DEFAULT_PASSES, "spy", lambda page: seen.append("spy"), before="tables")
    page = PageLayout(lines=[TextLine("   ", (0, 0, 1, 1), BODY)], page_width=600)
    assert run_passes(page, passes) == [] and page.done and seen == []
