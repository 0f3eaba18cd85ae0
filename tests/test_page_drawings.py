"""One read of a page's drawings serves every rule that looks at them, and pages drawing level rules
alone do not ask the table finder (issue 30, round 39).

Why: ten rules of the text layer (rules, panels, bullets, underlines, figures, ruled tables and their
shading) each read ``page.get_cdrawings()`` again, about eight reads a page; and PyMuPDF's
``find_tables``, most of whose cost is reading the page's characters, was asked on pages whose only
drawings are level strokes, where it can find no grid of two columns.
"""

from __future__ import annotations

import pymupdf
import pytest

from ocr_app.engines import page_tables, pdf_drawings, textlayer
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import count_calls, pdf_page_request

PROSE = "The committee met on a Tuesday and agreed the budget for the coming year without a vote."


def _drawn_page(doc: pymupdf.Document) -> None:
    """A title underlined, a list with drawn bullets, a panel, and a ruled table of three columns."""
    page = doc.new_page()
    page.insert_text((72, 80), "Annual Report", fontsize=16, fontname="hebo")
    page.draw_line((72, 84), (190, 84), width=0.8)
    for k in range(3):
        y = 120 + 16 * k
        page.draw_circle((80, y - 3.5), 2.2, color=(0, 0, 0), fill=(0, 0, 0))
        page.insert_text((90, y), f"Item number {k + 1} of the list", fontsize=10)
    page.draw_rect(pymupdf.Rect(70, 180, 540, 250), color=None, fill=(0.85, 0.9, 1.0))
    for k in range(3):
        page.insert_text((80, 200 + 16 * k), PROSE[: 60 + k], fontsize=10)
    top, rows, widths = 290, 4, (72, 220, 380, 540)
    for r in range(rows + 1):
        page.draw_line((widths[0], top + 20 * r), (widths[-1], top + 20 * r), width=0.6)
    for x in widths:
        page.draw_line((x, top), (x, top + 20 * rows), width=0.6)
    for r in range(rows):
        for c in range(3):
            page.insert_text((widths[c] + 4, top + 14 + 20 * r), f"cell {r}.{c}", fontsize=10)
    for k in range(6):
        page.insert_text((72, 420 + 14 * k), PROSE, fontsize=10)


def _level_rules_page(doc: pymupdf.Document) -> None:
    """Prose with rules under a header, over a footer and between sections: level strokes alone."""
    page = doc.new_page()
    page.insert_text((72, 60), "Journal of Examples, volume 3", fontsize=9)
    for y in (66, 300, 520, 760):
        page.draw_line((72, y), (540, y), width=0.5)
    for y in (310, 530):
        page.draw_line((72, y), (200, y), width=0.5)
    for k in range(12):
        page.insert_text((72, 90 + 14 * k), PROSE, fontsize=10)
    for k in range(10):
        page.insert_text((72, 330 + 14 * k), PROSE, fontsize=10)
    page.insert_text((72, 775), "Page 3", fontsize=9)


def _pdf(tmp_path):
    doc = pymupdf.open()
    _drawn_page(doc)
    _level_rules_page(doc)
    path = tmp_path / "drawn.pdf"
    doc.save(path)
    return path


def _convert(pdf, pages=2, dpi=103):
    engine = TextLayerEngine()
    out = []
    for index in range(pages):
        (result,) = engine.predict_batch([pdf_page_request(pdf, index, dpi, prompt="")])
        out.append((blocks_to_markdown(result.blocks), [(b.label, b.box) for b in result.blocks]))
    return out


def test_each_page_reads_its_drawings_once(tmp_path, monkeypatch):
    pdf = _pdf(tmp_path)

    # The clips (``paint``) are another read; ``get_drawings`` reads through ``get_cdrawings``.
    def plain(page, extended=False):
        return None if extended else page.number

    reads = count_calls(monkeypatch, pymupdf.Page, "get_cdrawings", plain)
    converted = count_calls(monkeypatch, pymupdf.Page, "get_drawings", plain)  # for the table finder
    once = _convert(pdf)
    assert reads - converted == {0: 1, 1: 1}
    assert "<table>" in once[0][0] and "cell 3.2" in once[0][0]  # the rules that read them did run

    # Each rule reading the drawings itself (as before) gives the same blocks, box for box.
    reads.clear()
    converted.clear()
    monkeypatch.setattr(textlayer, "page_drawings", lambda page: None)
    assert _convert(pdf) == once
    assert (reads - converted)[0] >= 6


def test_drawings_that_cannot_be_read_lose_no_text(tmp_path, monkeypatch):
    """A page whose drawings raise is read without them: each rule falls back (the table gate raised,
    and the page was lost)."""
    pdf = _pdf(tmp_path)

    def broken(self, *args, **kwargs):
        raise RuntimeError("bad content stream")

    monkeypatch.setattr(pymupdf.Page, "get_cdrawings", broken)
    assert pdf_drawings.page_drawings(pymupdf.open(pdf)[0]) is None
    markdown = _convert(pdf, pages=1)[0][0]
    assert "Annual Report" in markdown and "Item number 3" in markdown and "cell 3.2" in markdown


def test_level_strokes_ask_no_table_finder(tmp_path, monkeypatch):
    pdf = _pdf(tmp_path)
    doc = pymupdf.open(pdf)
    drawn, level = doc[0], doc[1]
    assert page_tables._has_rulings(drawn)
    assert not page_tables._has_rulings(level)
    # The finder itself finds nothing there: the gate loses no table.
    assert level.find_tables(strategy="lines").tables == []
    calls = count_calls(monkeypatch, page_tables, "_find_tables")
    markdown = _convert(pdf)
    assert calls == {0: 1}
    assert "<table>" in markdown[0][0] and "<table>" not in markdown[1][0]


def _stroke(*items, **keys) -> dict:
    return {"items": list(items), "type": "s", "fill": None, "closePath": False, **keys}


@pytest.mark.parametrize(
    ("path", "column"),
    [
        (_stroke(("l", (72, 100), (540, 100))), False),
        (_stroke(("l", (72, 100), (540, 100.01))), True),  # not exactly level: PyMuPDF takes it upright
        (_stroke(("l", (72, 100), (72, 300))), True),
        (_stroke(("re", (72, 100, 540, 300), 1)), True),
        (_stroke(("c", (72, 100), (80, 90), (90, 90), (100, 100))), True),  # a shape's box may frame text
        (_stroke(("l", (72, 100), (540, 100)), type="f", fill=(0.9, 0.9, 0.9)), True),  # a clip may cut it
        (_stroke(("l", (72, 100), (540, 100)), ("l", (540, 120), (72, 120)), closePath=True), True),
        (_stroke(("l", (72, 100), (540, 100)), ("l", (540, 100), (300, 100)), closePath=True), False),
    ],
)
def test_what_may_rule_a_column(path, column):
    assert page_tables._rules_column(path, path["items"]) is column


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_rules_are_found_level_on_the_page_as_displayed(rotation):
    """``horizontal_rules`` looks only at pieces that may be level where the page is shown: on a page
    turned a quarter, a stroke drawn down the page's points is the displayed rule."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.draw_line((72, 300), (400, 300), width=0.5)  # level in the page's points
    page.draw_line((500, 100), (500, 400), width=0.5)  # upright in them
    page.draw_line((72, 500), (75, 500), width=0.5)  # level, but shorter than a piece
    page.set_rotation(rotation)
    scale = 1.5
    rules = pdf_drawings.horizontal_rules(page, scale)
    assert len(rules) == 1
    x0, _, x1 = rules[0]
    assert x1 - x0 == pytest.approx((328 if rotation % 180 == 0 else 300) * scale, abs=0.01)
