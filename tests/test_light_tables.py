"""Ruled tables read by the light engine: the cell grid from the page image's rulings (issue 16, item 2)."""

from __future__ import annotations

import numpy as np
import pymupdf
import pytest
from PIL import Image

from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.rulings import find_grids

X = [30, 130, 260, 390]
Y = [60, 85, 110, 150, 175]


def _page(draw_table: bool = True) -> Image.Image:
    """A small page with a ruled table: a shaded two-row header (one cell spans two columns, one
    two rows) and a cell whose text wraps onto two lines; rasterised at 144 DPI like a scan."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=300)
    page.insert_text((30, 40), "Results of the trial by group.", fontsize=11)

    def cell(c0, c1, r0, r1, text, shade=False):
        r = pymupdf.Rect(X[c0], Y[r0], X[c1], Y[r1])
        if draw_table:
            page.draw_rect(r, width=0.8, fill=(0.85, 0.85, 0.85) if shade else None)
        assert (
            page.insert_textbox(pymupdf.Rect(r.x0 + 4, r.y0 + 4, r.x1 - 4, r.y1 - 2), text, fontsize=10) >= 0
        )

    cell(0, 1, 0, 2, "Group", True)
    cell(1, 3, 0, 1, "Outcome", True)
    cell(1, 2, 1, 2, "before", True)
    cell(2, 3, 1, 2, "after", True)
    for r, row in enumerate(
        [("Alpha", "a long note that wraps onto two lines", "12.0"), ("Beta", "9.1", "9.9")]
    ):
        for c, text in enumerate(row):
            cell(c, c + 1, 2 + r, 3 + r, text)
    page.insert_text((30, 210), "Text after the table.", fontsize=11)
    page.draw_line((30, 230), (390, 230), width=0.8)  # a lone rule under the text: not a table
    pix = page.get_pixmap(dpi=144)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


@pytest.fixture(scope="module")
def engine(light_engine):
    return light_engine


def test_ruled_table_on_a_scan_becomes_the_deepseek_html_table(engine):
    image = _page()
    out = engine.predict_batch(
        [PageRequest(page=PageImage(image=image, index=0, source="t.png"), prompt="")]
    )[0]
    assert [b.label for b in out.blocks] == ["text", "table", "text"]
    assert out.blocks[1].text == (
        '<table><thead><tr><th rowspan="2">Group</th><th colspan="2">Outcome</th></tr>'
        "<tr><th>before</th><th>after</th></tr></thead><tbody>"
        "<tr><td>Alpha</td><td>a long note that wraps onto two lines</td><td>12.0</td></tr>"
        "<tr><td>Beta</td><td>9.1</td><td>9.9</td></tr></tbody></table>"
    )
    x1, y1, x2, y2 = out.blocks[1].box
    assert (x1, y1, x2, y2) == pytest.approx((30 * 2, 60 * 2, 390 * 2, 175 * 2), abs=4)  # the grid, in px


def test_grid_lines_and_merged_cells_from_morphology():
    grey = np.asarray(_page().convert("L"))
    [grid] = find_grids(grey, line_px=30)
    assert grid.cols == pytest.approx([2 * x for x in X], abs=2)
    assert grid.rows == pytest.approx([2 * y for y in Y], abs=2)
    spans = [(c.row, c.col, c.rowspan, c.colspan) for c in grid.cells]
    assert spans[:4] == [(0, 0, 2, 1), (0, 1, 1, 2), (1, 1, 1, 1), (1, 2, 1, 1)]
    assert len(spans) == 4 + 6


def test_text_without_rulings_has_no_grid():
    """Letters, and a lone horizontal rule, are never taken for a table's rulings."""
    grey = np.asarray(_page(draw_table=False).convert("L"))
    assert find_grids(grey, line_px=30) == []


def test_open_sided_table_takes_its_outer_columns_from_the_rules():
    """A table with no outer vertical border (common in papers): the top and bottom rules' ends are
    its edges, so the first and last columns are cells too."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=200)
    ys, inner = [40, 70, 100, 130], [140, 250]
    for y in ys:
        page.draw_line((30, y), (390, y), width=0.8)
    for x in inner:
        page.draw_line((x, ys[0]), (x, ys[-1]), width=0.8)
    pix = page.get_pixmap(dpi=144)
    grey = np.asarray(Image.frombytes("RGB", (pix.width, pix.height), pix.samples).convert("L"))
    [grid] = find_grids(grey, line_px=30)
    assert grid.cols == pytest.approx([60, 280, 500, 780], abs=3)
    assert len(grid.cells) == 3 * 3 and all(c.rowspan == c.colspan == 1 for c in grid.cells)


def _bar_page(bar_rows: float) -> np.ndarray:
    """Word's table style drawn by PyMuPDF at 144 DPI: a head bar (blue, grey 109) ``bar_rows`` lines
    high with white heads, body rows parted by pale blue rules (grey 168), pale column rules."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=320)
    top, foot = 40.0, 40.0 + 15 * bar_rows
    page.draw_rect(pymupdf.Rect(30, top, 390, foot), fill=(0.27, 0.45, 0.77), color=None)
    for x, head in ((36, "Region"), (160, "2023"), (280, "2024")):
        page.insert_text((x, top + 11), head, fontsize=9, fontname="hebo", color=(1, 1, 1))
    ys = [foot + 18 * k for k in range(5)]
    pale = (0.56, 0.67, 0.86)
    for y in ys:
        page.draw_line((30, y), (390, y), width=0.6, color=pale)
    for x in (30, 150, 270, 390):
        page.draw_line((x, top), (x, ys[-1]), width=0.6, color=pale)
    for k, name in enumerate(("North", "South", "East", "West")):
        for x, text in ((36, name), (160, str(600 + 11 * k)), (280, str(640 + 7 * k))):
            page.insert_text((x, ys[k] + 12), text, fontsize=9, fontname="helv")
    pix = page.get_pixmap(dpi=144)
    return np.asarray(Image.frombytes("RGB", (pix.width, pix.height), pix.samples).convert("L"))


def test_a_head_bars_edges_are_the_grids_first_rulings():
    """Word's table styles set the head white on a blue bar, too thick for a ruling, and the bar's
    foot was no ruling either: the grid began a row down, and its first body row was read as the
    head (the printed probe's word-* documents as scans)."""
    [grid] = find_grids(_bar_page(1.0), line_px=30)
    assert grid.rows[:3] == pytest.approx([80, 110, 146], abs=3)  # the bar's top and foot, in px
    assert len(grid.rows) == 6
    # A solid block over three lines high is a picture or a panel, not a head's bar: no edges of it.
    from ocr_app.structure import rulings

    def edges(grey: np.ndarray) -> list[float]:
        ink = rulings.rule_ink(grey)
        strokes = rulings._horizontal(ink, 60, [])
        return [round(s.pos) for s in rulings._segments(strokes, True, 12.0, bars=ink) if s.pos < 2 * 41]

    assert edges(_bar_page(1.0)) == [80], "the bar's top edge"
    assert edges(_bar_page(7.0)) == []


def test_a_table_broken_at_a_columns_foot_takes_its_open_last_row_from_the_column_rulings():
    """A table broken across two columns leaves its last row open: ruled at its sides, no rule under
    it (Chromium's grid-wrapped-two-centred). That row was read as a line of text under the grid."""

    def grid_of(foot: float, stagger: float = 0.0) -> list[float]:
        doc = pymupdf.open()
        page = doc.new_page(width=420, height=260)
        ys = [40, 70, 100]
        for y in ys:
            page.draw_line((30, y), (390, y), width=0.8)
        for k, x in enumerate((30, 140, 250, 390)):
            page.draw_line((x, ys[0]), (x, foot + stagger * k), width=0.8)
        pix = page.get_pixmap(dpi=144)
        grey = np.asarray(Image.frombytes("RGB", (pix.width, pix.height), pix.samples).convert("L"))
        [grid] = find_grids(grey, line_px=30)
        return grid.rows

    assert grid_of(160) == pytest.approx([80, 140, 200, 320], abs=3)  # the open row down to 160 pt
    assert grid_of(110) == pytest.approx([80, 140, 200], abs=3)  # rulings a few px past: no row
    assert grid_of(160, stagger=12) == pytest.approx([80, 140, 200], abs=3)  # ends apart: a drawing's


def test_a_head_row_ruled_into_columns_for_its_own_height_keeps_its_columns():
    """A head row over a label row that spans the table ("Staff"): its column rulings stand one row
    high, shorter than the opening that finds rulings, and its heads were read as one cell spanning
    the table (the printed probe's grid-labelled-slide as a scan)."""
    doc = pymupdf.open()
    page = doc.new_page(width=420, height=260)
    ys = [40, 62, 84, 106, 128, 150]  # head, label, three body rows
    for y in ys:
        page.draw_line((30, y), (390, y), width=0.8)
    for x in (30, 390):
        page.draw_line((x, ys[0]), (x, ys[-1]), width=0.8)
    for x in (140, 250):
        page.draw_line((x, ys[0]), (x, ys[1]), width=0.8)  # the head row's own
        page.draw_line((x, ys[2]), (x, ys[-1]), width=0.8)  # the body's
    pix = page.get_pixmap(dpi=144)
    grey = np.asarray(Image.frombytes("RGB", (pix.width, pix.height), pix.samples).convert("L"))
    [grid] = find_grids(grey, line_px=30)
    spans = [(c.row, c.col, c.rowspan, c.colspan) for c in grid.cells]
    assert spans[:4] == [(0, 0, 1, 1), (0, 1, 1, 1), (0, 2, 1, 1), (1, 0, 1, 3)], spans
