"""The figure search's clusters of drawings (``engines.drawing_clusters``) are PyMuPDF's own
(``Page.cluster_drawings``), box for box, found through a grid instead of a scan of every path for
every cluster: real pages drawn with PyMuPDF, compared with PyMuPDF's answer."""

from __future__ import annotations

import math
import random

import pymupdf
import pytest

from ocr_app.engines import drawing_clusters
from ocr_app.engines.drawing_clusters import cluster_drawings


def _same(page: pymupdf.Page, drawings: list[dict]) -> list[tuple[float, ...]]:
    ours = [tuple(r) for r in cluster_drawings(page, drawings)]
    theirs = [tuple(r) for r in page.cluster_drawings(drawings=drawings)]
    assert sorted(ours) == sorted(theirs)
    assert [(b[3], b[0]) for b in ours] == [(b[3], b[0]) for b in theirs]  # PyMuPDF's order
    return ours


@pytest.mark.parametrize("seed", range(6))
def test_random_figures_cluster_as_pymupdf_clusters_them(seed: int) -> None:
    """Markers, bars, curves and rules in groups that touch, nearly touch (within and just beyond the
    3 pt tolerance) and overlap, some running off the page (PyMuPDF leaves those out)."""
    rng = random.Random(seed)
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=500)
    for _ in range(rng.randint(3, 12)):
        cx, cy = rng.uniform(-20, 400), rng.uniform(-20, 500)
        step = rng.choice([2.0, 3.0, 3.5, 6.0])
        for k in range(rng.randint(1, 40)):
            x, y = cx + (k % 7) * step, cy + (k // 7) * step
            kind = rng.choice(["rect", "circle", "line", "curve"])
            if kind == "rect":
                page.draw_rect(
                    pymupdf.Rect(x, y, x + rng.uniform(0.5, 4), y + rng.uniform(0.5, 4)), fill=(0, 0, 1)
                )
            elif kind == "circle":
                page.draw_circle((x, y), rng.uniform(0.3, 2))
            elif kind == "line":
                page.draw_line((x, y), (x + rng.uniform(0, 8), y))
            else:
                page.draw_bezier((x, y), (x + 1, y - 2), (x + 2, y - 2), (x + 3, y))
    drawings = page.get_drawings()
    assert len(drawings) >= 3
    _same(page, drawings)


def test_a_path_that_only_the_grown_cluster_reaches_joins_it() -> None:
    """Two touching boxes make a cluster whose box reaches a third that neither of them reaches
    alone; PyMuPDF's seed order (by bottom, then left) decides where it goes, and so it does here."""
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=300)
    page.draw_rect(pymupdf.Rect(10, 10, 60, 20), fill=(0, 0, 0))  # seed: lowest bottom
    page.draw_rect(pymupdf.Rect(58, 18, 68, 80), fill=(0, 0, 0))  # touches the seed
    page.draw_rect(pymupdf.Rect(12, 74, 30, 90), fill=(0, 0, 0))  # near only the two's joint box
    page.draw_rect(pymupdf.Rect(200, 200, 220, 220), fill=(0, 0, 0))  # apart
    page.draw_line((100, 150), (100, 151.5))  # no wider, no taller than the tolerance: left out
    ours = _same(page, page.get_drawings())
    assert ours == [(10.0, 10.0, 68.0, 90.0), (200.0, 200.0, 220.0, 220.0)]


def test_a_scatter_plot_of_hundreds_of_markers_clusters_as_pymupdf_clusters_it() -> None:
    """600 markers, each a path of its own, most of them apart: hundreds of clusters (PyMuPDF
    tests every remaining path in each round of each of them)."""
    rng = random.Random(7)
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for k in range(600):
        x, y = 40 + 10 * (k % 50) + rng.uniform(-2, 2), 60 + 24 * (k // 50) + rng.uniform(-2, 2)
        page.draw_circle((x, y), 2, color=None, fill=(0.2, 0.3, 0.8))
    ours = _same(page, page.get_drawings())
    assert len(ours) > 100, len(ours)


def test_a_box_turned_inside_out_is_left_to_pymupdf(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=200, height=200)
    page.draw_rect(pymupdf.Rect(10, 10, 50, 50), fill=(0, 0, 0))
    drawings = [*page.get_drawings(), {"rect": pymupdf.Rect(120, 120, 80, 160)}]
    called = []
    real = pymupdf.Page.cluster_drawings
    monkeypatch.setattr(
        pymupdf.Page, "cluster_drawings", lambda self, **kw: called.append(1) or real(self, **kw)
    )
    assert cluster_drawings(page, drawings) == real(page, drawings=drawings)
    assert called == [1]


def test_the_figure_search_uses_the_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """``figure_regions`` no longer asks PyMuPDF to cluster: a chart of 400 bars is one figure."""
    from ocr_app.engines.page_figures import figure_regions

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for k in range(400):
        h = 150 + 100 * math.sin(k / 20)
        page.draw_rect(pymupdf.Rect(60 + k, 500 - h, 61 + k, 500), color=None, fill=(0.3, 0.6, 0.3))
    page.draw_line((58, 500), (462, 500))
    monkeypatch.setattr(pymupdf.Page, "cluster_drawings", lambda *a, **k: pytest.fail("PyMuPDF's clustering"))
    (figure,) = figure_regions(page, 10.0)
    assert figure.x0 <= 60 and figure.x1 >= 460 and figure.y1 >= 500 and figure.y0 <= 260, figure


def test_only_clusters_that_hold_a_word_are_kept() -> None:
    """Boxes 3 pt apart or nearer are one cluster; a word within 3 pt of a cluster's box keeps all of
    its paths; a box turned inside out keeps everything (PyMuPDF's own clustering would grow it)."""
    paths = [
        {"rect": (10, 10, 20, 20)},
        {"rect": (22, 10, 30, 20)},  # 2 pt right of the first: the same cluster
        {"rect": (100, 100, 110, 110)},  # apart, no word near it
        {"rect": (200, 200, 210, 210)},  # apart, a word 2 pt below it
    ]
    words = [(25, 12, 28, 18), (200, 212, 230, 220)]
    kept = drawing_clusters.holding_text(paths, words)
    assert kept == [paths[0], paths[1], paths[3]]
    assert drawing_clusters.holding_text(paths, []) == []
    inside_out = [*paths, {"rect": (50, 50, 40, 60)}]
    assert drawing_clusters.holding_text(inside_out, []) == inside_out


def _table_beside_a_heat_map(path, cells: int) -> None:
    """A ruled table of 4 × 3 cells with their words, and a heat map of ``cells`` × ``cells`` fills
    without a word in one content stream (a plotting library's vector heat map)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    shape = page.new_shape()
    for k in range(5):
        shape.draw_line((60, 80 + 20 * k), (360, 80 + 20 * k))
    for k in range(4):
        shape.draw_line((60 + 100 * k, 80), (60 + 100 * k, 160))
    shape.finish(width=0.6)
    for i in range(cells):
        for j in range(cells):
            x, y = 60 + 6 * i, 260 + 6 * j
            shape.draw_rect(pymupdf.Rect(x, y, x + 6, y + 6))
            shape.finish(color=None, fill=((i * 7 + j * 3) % 10 / 10, 0.5, 0.5))
    shape.commit()
    for r in range(4):
        for c in range(3):
            page.insert_text((66 + 100 * c, 94 + 20 * r), f"r{r}c{c}" if r else f"Head{c}", fontsize=9)
    doc.save(path)


@pytest.mark.parametrize(("cells", "spared"), [(20, False), (50, True)], ids=["400-fills", "2500-fills"])
def test_the_table_finder_is_spared_a_heat_map_without_words(
    tmp_path, monkeypatch, cells: int, spared: bool
) -> None:
    """Past ``MANY_PATHS`` drawings only the clusters that hold a word go to PyMuPDF's finder, and it
    finds the same table; below, every drawing goes to it as before."""
    from ocr_app.engines import page_tables

    _table_beside_a_heat_map(tmp_path / "heat.pdf", cells)
    given: list[int] = []
    real = pymupdf.Page.find_tables

    def find(self, *args, **kwargs):
        given.append(len(kwargs["paths"]))
        return real(self, *args, **kwargs)

    with pymupdf.open(tmp_path / "heat.pdf") as doc:
        page = doc[0]
        every = len(page.get_drawings())
        monkeypatch.setattr(pymupdf.Page, "find_tables", find)
        (table,) = page_tables._find_tables(page)
        full = real(page, strategy="lines", use_layout=False, paths=page.get_drawings()).tables
    assert every == cells * cells + 1
    assert (every > page_tables.MANY_PATHS) is spared
    assert given == ([1] if spared else [every])  # the table's one path of rules, or every drawing
    assert [tuple(table.bbox)] == [tuple(t.bbox) for t in full if t.row_count == 4]
    assert table.extract()[0] == ["Head0", "Head1", "Head2"] and table.extract()[3][2] == "r3c2"
