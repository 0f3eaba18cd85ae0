"""The figure search's clusters of drawings (``engines.drawing_clusters``) are PyMuPDF's own
(``Page.cluster_drawings``), box for box, found through a grid instead of a scan of every path for
every cluster: real pages drawn with PyMuPDF, compared with PyMuPDF's answer."""

from __future__ import annotations

import math
import random

import pymupdf
import pytest

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
    from ocr_app.engines.textlayer import figure_regions

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for k in range(400):
        h = 150 + 100 * math.sin(k / 20)
        page.draw_rect(pymupdf.Rect(60 + k, 500 - h, 61 + k, 500), color=None, fill=(0.3, 0.6, 0.3))
    page.draw_line((58, 500), (462, 500))
    monkeypatch.setattr(pymupdf.Page, "cluster_drawings", lambda *a, **k: pytest.fail("PyMuPDF's clustering"))
    (figure,) = figure_regions(page, 10.0)
    assert figure.x0 <= 60 and figure.x1 >= 460 and figure.y1 >= 500 and figure.y0 <= 260, figure
