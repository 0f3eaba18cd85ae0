"""Huge scans and giant PDF pages are read, not refused, with the default limits.

An A3 page scanned at 600 dpi (7016 × 9921 px, 69.6 MP) was refused by the old 60 MP default; a
14,400 × 14,400 pt PDF page whose text layer holds a short title came out ``empty`` after OCR at the
38 DPI it fits in. Both through the converter with the real engines (light, text layer) and files
made here: a mostly white PNG compresses to a few hundred kB, a PDF poster to a few kB.
"""

from __future__ import annotations

import json
import re

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_image

A3_600DPI = (7016, 9921)
WORDS = {(700, 900): "NORTH WING 12", (4200, 5200): "CENTRAL HALL 34", (1500, 9000): "SOUTH DOOR 56"}


def _convert(paths, out, **settings):
    s = Settings(cache_enabled=False, **settings)
    engines = build_engines(s)
    try:
        return Converter(engines, s).convert(paths, out, ConvertOptions(formats=frozenset({"md", "json"})))
    finally:
        engines.unload_all()


def _norm(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


@pytest.mark.slow  # twelve 3000 px tiles through RapidOCR
def test_an_a3_scan_at_600_dpi_is_read_as_tiles_with_page_coordinates(tmp_path):
    assert Settings().max_pixels_per_page >= A3_600DPI[0] * A3_600DPI[1] > 60_000_000
    img = Image.new("RGB", A3_600DPI, "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=110)
    drawn = {}
    for xy, text in WORDS.items():
        draw.text(xy, text, fill="black", font=font)
        drawn[_norm(text)] = draw.textbbox(xy, text, font=font)
    img.save(tmp_path / "a3.png")
    [doc] = _convert([tmp_path / "a3.png"], tmp_path / "out", engine="light")
    assert doc.error is None, doc.error
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    assert (page["width"], page["height"]) == A3_600DPI  # read at full resolution, not downscaled
    assert page["status"] == "ok" and page["tiling"]["grid"] == [3, 4]
    found = {_norm(b["text"]): b["boxes"][0] for b in page["blocks"]}
    assert sorted(found) == sorted(drawn)
    for key, (x0, y0, x1, y1) in drawn.items():  # tile pixels mapped back to page pixels
        g0, h0, g1, h1 = found[key]  # RapidOCR pads its boxes: they hold the ink, centred on it
        assert g0 <= x0 and h0 <= y0 and g1 >= x1 and h1 >= y1, (key, found[key], drawn[key])
        assert abs((g0 + g1) - (x0 + x1)) / 2 <= 15 and abs((h0 + h1) - (y0 + y1)) / 2 <= 15, key


def _poster(path, *, scanned: bool = False):
    """A 14,400 pt square page with an 11 pt title (11 characters); ``scanned``: the title is an
    invisible OCR layer over a full-page picture, as a scanner writes it."""
    doc = pymupdf.open()
    page = doc.new_page(width=14400, height=14400)
    if scanned:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
        pix.clear_with(230)
        page.insert_image(page.rect, pixmap=pix)
    page.insert_text((72, 72), "Giant title", fontsize=11, render_mode=3 if scanned else 0)
    doc.save(path)
    return path


@pytest.mark.parametrize("scanned", [False, True], ids=["title", "invisible-ocr-layer"])
def test_a_giant_pdf_page_reads_its_text_layer(tmp_path, scanned):
    pdf = _poster(tmp_path / "poster.pdf", scanned=scanned)
    [doc] = _convert([pdf], tmp_path / "out", engine="auto")
    [page] = doc.pages
    assert page.engine == "textlayer", page.engine_reason
    assert "too large to OCR at the DPI asked for" in page.engine_reason
    assert page.markdown.strip() == "Giant title"
    if scanned:  # read, and flagged: somebody else's OCR, whose quality nothing here can vouch for
        assert page.status == "low_confidence"
        assert page.quality_reason == "text layer: only an invisible OCR layer over a scanned image"
    else:
        assert page.status == "ok"


def test_a_normal_page_with_a_short_text_layer_is_still_ocred(tmp_path):
    """The rule is for pages rendered below the DPI asked for: a short text layer on an ordinary page
    (a page number on a scan) still goes to OCR."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(
        pymupdf.Rect(72, 100, 520, 700), filename=str(make_image(tmp_path / "scan.png", "Scanned"))
    )
    page.insert_text((72, 72), "Giant title", fontsize=11)
    doc.save(tmp_path / "a4.pdf")
    [result] = _convert([tmp_path / "a4.pdf"], tmp_path / "out", engine="auto")
    assert result.pages[0].engine != "textlayer"
    assert "only 10 characters of embedded text" in result.pages[0].engine_reason  # non-space
