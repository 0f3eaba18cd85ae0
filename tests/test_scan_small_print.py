"""A scanned page mostly in small print under paragraphs in the document's body size (issue 30, round 44).

A paper's last page holds the end of its text over its references in smaller type. On a scan the page
took the references' size as its body, and the paragraphs above them, a fifth larger, came out as
headings. The light engine now measures headings against the body size of the document's first pages
when such a page still holds text in it (as the text layer does with the document's style). The pages
are real PDFs made by PyMuPDF and rendered to pixels; the REAL light engine reads them.
"""

from __future__ import annotations

import pymupdf
import pytest

from ocr_app.engines.light import LightOcrEngine, document_body
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.test_light_scans import DPI, scan_page

TEXT = (
    "The survey asked households how they heat their homes, how much they spend on energy, and whether "
    "they plan to replace their boiler within the next five years. "
)
REFERENCE = (
    "[{k}] Novak, J., Brennan, S. ({y}). Visual inspection of highway bridges: a study of reliability. "
)
REFERENCE += "Transportation Research Record, 34(5), 134-156."


@pytest.fixture(scope="module")
def engine() -> LightOcrEngine:
    # Without the layout model: its text boxes mark these paragraphs as prose on some pages and not on
    # others (the IEEE paper of the probe set), and the size rule is what is tested here.
    eng = LightOcrEngine(regions=False)
    eng.load()
    return eng


def paper() -> pymupdf.Document:
    """Page 1: a title and a page of paragraphs at 10 pt. Page 2: two paragraphs at 10 pt over fourteen
    references at 8 pt, which hold most of its text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 80), "Agreement between inspectors", fontsize=18, fontname="tibo")
    page.insert_textbox(
        pymupdf.Rect(60, 110, 535, 800), (TEXT * 3 + "\n\n") * 7, fontsize=10, fontname="tiro"
    )
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(60, 60, 535, 220), (TEXT * 2 + "\n\n") * 2, fontsize=10, fontname="tiro")
    refs = "\n".join(REFERENCE.format(k=k, y=1990 + k) for k in range(1, 15))
    assert page.insert_textbox(pymupdf.Rect(60, 230, 535, 800), refs, fontsize=8, fontname="tiro") > 0
    return doc


def test_paragraphs_over_small_print_on_a_scan_are_no_headings(engine: LightOcrEngine) -> None:
    doc = paper()
    requests = [
        PageRequest(page=PageImage(image=scan_page(doc, k), index=k, source="scan.png", dpi=DPI), prompt="")
        for k in range(2)
    ]
    first, last = engine.predict_batch(requests)
    assert blocks_to_markdown(first.blocks).startswith("# Agreement between inspectors")
    md = blocks_to_markdown(last.blocks)
    assert "The survey asked households" in md and "[3] Novak" in md, md
    assert not [ln for ln in md.splitlines() if ln.startswith("#")], md
    # The page alone takes the references' size as its body: its paragraphs were headings.
    alone = blocks_to_markdown(engine.predict_batch(requests[1:])[0].blocks)
    assert any(ln.startswith("#") and "survey" in ln for ln in alone.splitlines()), alone


def test_the_document_body_is_the_size_most_of_the_first_pages_text_is_set_in(engine: LightOcrEngine) -> None:
    doc = paper()
    pages = [
        engine._scan(
            PageRequest(page=PageImage(image=scan_page(doc, k), index=k, source="s.png", dpi=DPI), prompt="")
        )
        for k in range(2)
    ]
    body = document_body(pages)
    sizes = sorted({round(ln.size) for p in pages for ln in p.lines})
    assert body > min(sizes) * 1.15, (body, sizes)  # the paragraphs' size, not the references'
    assert document_body([]) == 0.0
