"""The searchable PDF (``NAME_searchable.pdf``): the source pages as they are, the recognised text laid
over them invisibly (issue 34, "Beyond").

Scans are made here from born-digital pages whose words and boxes are known (PyMuPDF), read by the real
light engine through the Converter, and the output is read back with PyMuPDF the way a viewer searches it.
"""

from __future__ import annotations

import io
import unicodedata
from pathlib import Path

import jiwer
import pymupdf
import pytest
from PIL import Image

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.render.pdf_text import TextRun, block_runs, lines_in_box, ordered_lines, page_runs, plain_line
from ocr_app.render.searchable_pdf import SearchablePdfBuilder
from ocr_app.render.writer import DocumentWriter
from ocr_app.schema import Block, DocumentResult, OcrLine, PageImage, PageResult
from ocr_app.settings import Settings
from ocr_app.stack import build_engines

SCAN_DPI = 200
LINES = [
    ("Quarterly Report", 22, "hebo", 70),
    ("The quick brown fox jumps over the lazy dog near the river bank.", 12, "helv", 120),
    ("Searchable output keeps every scanned page exactly as it was.", 12, "helv", 140),
    ("Invoice number 4711 was paid on 3 March 2025 by bank transfer.", 12, "helv", 160),
    ("Second section", 16, "hebo", 210),
    ("Words in Times Roman are measured with Helvetica widths here.", 12, "tiro", 240),
    ("The last line ends the page with the word Gerstein.", 12, "helv", 260),
]


def _born_digital(path: Path, rotation: int = 0) -> Path:
    with pymupdf.open() as doc:
        page = doc.new_page()
        for text, size, font, y in LINES:
            page.insert_text((72, y), text, fontsize=size, fontname=font)
        page.draw_rect(pymupdf.Rect(60, 290, 540, 300), color=(0, 0, 0), fill=(0.8, 0.8, 0.8))
        if rotation:
            page.set_rotation(rotation)
        doc.save(path)
    return path


def _scan_of(pdf: Path, out: Path) -> Path:
    """A scanned PDF of ``pdf``'s first page: the page rendered at SCAN_DPI, the image as the whole page."""
    with pymupdf.open(pdf) as src, pymupdf.open() as scan:
        pix = src[0].get_pixmap(dpi=SCAN_DPI)
        page = scan.new_page(width=src[0].rect.width, height=src[0].rect.height)
        page.insert_image(page.rect, stream=pix.tobytes("png"))
        scan.save(out)
    return out


def _true_words(pdf: Path) -> list[tuple]:
    with pymupdf.open(pdf) as doc:
        return doc[0].get_text("words", sort=True)


@pytest.fixture(scope="module")
def light(tmp_path_factory):
    settings = Settings(
        engine="light", device="cpu", result_cache_mb=0, cache_dir=tmp_path_factory.mktemp("c")
    )
    engines = build_engines(settings)
    yield Converter(engines, settings), settings
    engines.unload_all()


def _convert(light, path: Path, out: Path, **options) -> Path:
    converter, settings = light
    opts = ConvertOptions.from_settings(
        settings, formats=frozenset({"searchable", "json"}), dpi=144, **options
    )
    [doc] = converter.convert([path], out, opts)
    assert doc.error is None, doc.error
    return doc.outputs["searchable"]


def _near(found: list, true: tuple, tol: float = 3.0) -> bool:
    return any(max(abs(a - b) for a, b in zip(tuple(r), true[:4], strict=True)) <= tol for r in found)


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_a_scan_read_by_the_light_engine_is_searchable_where_its_words_are(light, tmp_path):
    born = _born_digital(tmp_path / "page.pdf")
    scan = _scan_of(born, tmp_path / "scan.pdf")
    out = _convert(light, scan, tmp_path / "out")
    assert out.name == "scan_searchable.pdf"
    truth = _true_words(born)
    with pymupdf.open(out) as doc, pymupdf.open(scan) as src:
        page = doc[0]
        assert doc.page_count == 1 and page.rect == src[0].rect
        # the scan itself is kept: the same image, pixel for pixel
        [img] = page.get_images(full=True)
        [orig] = src[0].get_images(full=True)
        assert doc.xref_stream(img[0]) == src.xref_stream(orig[0])
        text = page.get_text()
        expected = " ".join(w[4] for w in truth)
        cer = jiwer.cer(expected, _normal(text))
        assert cer <= 0.01, (cer, text)
        # the words come in reading order: every line of the page, in its order
        positions = [_normal(text).find(line) for line, *_ in LINES]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), positions
        far = [w[4] for w in truth if not _near(page.search_for(w[4]), w)]
        assert far == [], far  # every word is found within 3 pt of where it is on the page
        # invisible: every span is drawn in text render mode 3 ("ignore" in MuPDF's trace)
        assert {span["type"] for span in page.get_texttrace()} == {3}


def test_an_image_file_keeps_its_size_and_a_jpeg_its_own_bytes(light, tmp_path):
    born = _born_digital(tmp_path / "page.pdf")
    with pymupdf.open(born) as src:
        pix = src[0].get_pixmap(dpi=SCAN_DPI)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    jpeg = tmp_path / "photo.jpg"
    image.save(jpeg, format="JPEG", quality=92, dpi=(SCAN_DPI, SCAN_DPI))
    png = tmp_path / "lossless.png"
    image.save(png, format="PNG", dpi=(SCAN_DPI, SCAN_DPI))
    truth = _true_words(born)
    for path in (jpeg, png):
        out = _convert(light, path, tmp_path / f"out-{path.suffix[1:]}")
        with pymupdf.open(out) as doc:
            page = doc[0]
            # the file's DPI sets the page size: the page is the page it was scanned from
            assert abs(page.rect.width - 595) < 1 and abs(page.rect.height - 842) < 1, page.rect
            [img] = page.get_images(full=True)
            info = doc.extract_image(img[0])
            if path == jpeg:
                assert info["image"] == jpeg.read_bytes()  # embedded as it is, not re-encoded
            else:
                with Image.open(io.BytesIO(info["image"])) as back:
                    assert back.convert("RGB").tobytes() == image.tobytes()  # lossless
            far = [w[4] for w in truth if not _near(page.search_for(w[4]), w)]
            assert far == [], (path.name, far)


def test_born_digital_pages_read_from_their_text_layer_are_copied_as_they_are(light, tmp_path):
    born = _born_digital(tmp_path / "page.pdf")
    _, settings = light
    engines = build_engines(Settings(engine="textlayer", result_cache_mb=0, cache_dir=tmp_path / "c"))
    opts = ConvertOptions.from_settings(settings, formats=frozenset({"searchable"}))
    [doc] = Converter(engines, settings).convert([born], tmp_path / "out", opts)
    with pymupdf.open(doc.outputs["searchable"]) as out, pymupdf.open(born) as src:
        assert out[0].read_contents() == src[0].read_contents()  # nothing laid over it
        assert out[0].get_text() == src[0].get_text()
        assert len(out[0].get_drawings()) == len(src[0].get_drawings())


def test_a_vector_page_read_by_ocr_keeps_its_drawing_and_gains_invisible_text(light, tmp_path):
    """A born-digital page sent through the light engine: its own content stays (vector text and the
    drawn box), the recognised lines are added in render mode 3."""
    born = _born_digital(tmp_path / "page.pdf")
    out = _convert(light, born, tmp_path / "out")
    with pymupdf.open(out) as doc, pymupdf.open(born) as src:
        page = doc[0]
        assert len(page.get_drawings()) == len(src[0].get_drawings())
        assert src[0].read_contents().strip() in page.read_contents()  # its own content, unchanged
        trace = page.get_texttrace()
        assert {s["type"] for s in trace} == {0, 3}  # the page's own filled text, and ours, invisible
        assert "Gerstein" in "".join(chr(c[0]) for s in trace if s["type"] == 3 for c in s["chars"])


def test_a_rotated_page_gets_its_words_where_they_are_shown(light, tmp_path):
    born = _born_digital(tmp_path / "page.pdf", rotation=90)
    out = _convert(light, born, tmp_path / "out")
    truth = _true_words(born)  # unrotated coordinates, as search_for answers
    with pymupdf.open(out) as doc:
        page = doc[0]
        assert page.rotation == 90
        ours = [s for s in page.get_texttrace() if s["type"] == 3]
        # the engine read the page turned upright; the runs go back along the page's own text lines
        assert ours and all(abs(s["dir"][0] - 1) < 0.01 for s in ours), [s["dir"] for s in ours]
        far = [w[4] for w in truth if not _near(page.search_for(w[4]), w)]
        assert far == [], far


# --- the runs: blocks of engines without line boxes, reading order, scripts ---------------------------
def test_a_block_without_line_boxes_is_split_into_the_lines_its_box_holds():
    paragraph = (
        "Rivers run to the sea and the sea is never full; winds blow from the west and return again "
        "to the place they came from, year after year, while the fields along the banks turn green and "
        "then gold as the seasons go round."
    )  # 220 characters: three lines of 75 at 16 px (8 px a character, 20 px a line) in the box below
    box = (100.0, 200.0, 700.0, 260.0)
    assert lines_in_box(paragraph, box) == 3
    runs = block_runs(Block("text", paragraph, [box]))
    assert len(runs) == 3 and " ".join(r.text for r in runs) == paragraph
    assert [r.box[1] for r in runs] == [200.0, 220.0, 240.0] and all(r.box[0] == 100.0 for r in runs)
    title = block_runs(Block("title", "# Annual Summary", [(40.0, 24.0, 560.0, 56.0)]))
    assert [(r.text, r.box) for r in title] == [("Annual Summary", (40.0, 24.0, 560.0, 56.0))]
    html = "<table><tr><td>Fruit</td><td>Sales</td></tr><tr><td>Apples</td><td>1,200</td></tr></table>"
    table = block_runs(Block("table", html, [(10.0, 10.0, 300.0, 80.0)]))
    assert [r.text for r in table] == ["Fruit Sales", "Apples 1,200"]
    assert plain_line("**Bold** and [a link](http://x) &amp; `code`") == "Bold and a link & code"


def test_light_lines_follow_their_blocks_reading_order_and_rows():
    left = Block("text", "left column", [(0.0, 0.0, 100.0, 100.0)])
    right = Block("text", "right column", [(120.0, 0.0, 220.0, 100.0)])
    lines = [
        OcrLine("right one", (120.0, 10.0, 200.0, 20.0)),
        OcrLine("left two", (0.0, 30.0, 90.0, 40.0)),
        OcrLine("left one", (0.0, 10.0, 90.0, 20.0)),
        OcrLine("right two", (120.0, 31.0, 200.0, 41.0)),
    ]
    assert [ln.text for ln in ordered_lines(lines, [left, right])] == [
        "left one", "left two", "right one", "right two",
    ]  # fmt: skip
    page = PageResult(0, "x", 300, 200, engine="light", blocks=[left, right], lines=lines)
    assert next(r.text for r in page_runs(page)) == "left one"


def test_cjk_and_right_to_left_lines_are_set_in_fonts_that_hold_them(tmp_path):
    image = Image.new("RGB", (1200, 800), "white")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    runs = [
        TextRun("日本語のテキストです", (100, 100, 600, 140)),
        TextRun("中文文本季度收入增长", (100, 160, 600, 200)),
        TextRun("한국어 문장입니다", (100, 220, 500, 260)),
        TextRun("نص عربي: نمت الإيرادات", (100, 280, 600, 320)),
        TextRun("טקסט בעברית", (100, 340, 400, 380)),
        TextRun("Zażółć gęślą jaźń — Привет, Ελληνικά", (100, 400, 900, 440)),
        TextRun("Sideways note", (1100, 100, 1140, 500), turns=1),
    ]
    out = tmp_path / "scripts.pdf"
    builder = SearchablePdfBuilder(out)
    assert builder.add_image_page(buf.getvalue(), image.size, dpi=144, runs=runs) == len(runs)
    builder.close()
    with pymupdf.open(out) as doc:
        page = doc[0]
        lines = [unicodedata.normalize("NFKC", ln) for ln in page.get_text().splitlines()]
        assert lines == [unicodedata.normalize("NFKC", r.text) for r in runs]  # in order, every character
        fonts = {f[3] for f in doc.get_page_fonts(0)}
        assert {"Gothic", "Noto Naskh Arabic Regular", "Noto Serif Hebrew Regular"} <= fonts, fonts
        for word in ("テキスト", "季度", "Привет", "Sideways"):
            assert page.search_for(word), word
        [sideways] = [
            s for s in page.get_texttrace() if "".join(chr(c[0]) for c in s["chars"]) == "Sideways note"
        ]
        assert abs(sideways["dir"][0]) < 0.01  # it runs down the page, as it is printed


def test_a_failed_page_keeps_its_place(tmp_path):
    """A page that failed stays page N: a PDF's page is copied as it is, an image file's becomes a note."""
    two = tmp_path / "two.pdf"
    with pymupdf.open() as doc:
        for text in ("First page", "Second page"):
            doc.new_page().insert_text((72, 72), text)
        doc.save(two)
    image = Image.new("RGB", (400, 300), "white")
    for pdf_path in (two, None):
        out = tmp_path / ("pdf" if pdf_path else "image")
        writer = DocumentWriter(out, "doc", {"searchable"}, order=[0, 1], pdf_path=pdf_path, workers=0)
        ok = PageResult(
            0, "doc", 400, 300, engine="light", blocks=[Block("text", "Hello there", [(10, 10, 200, 40)])]
        )
        failed = PageResult(1, "doc", 0, 0, error="the engine failed on this page", error_kind="internal")
        writer.add_page(ok, image, source=PageImage(image, 0, "doc", dpi=72))
        writer.add_page(failed, None)
        outputs = writer.finish(DocumentResult("doc", pages=[ok, failed]))
        with pymupdf.open(outputs["searchable"]) as doc:
            assert doc.page_count == 2
            assert "Hello there" in doc[0].get_text()
            second = doc[1].get_text()
            assert ("Second page" in second) if pdf_path else ("the engine failed on this page" in second)


def test_deepseek_grounding_boxes_carry_each_block_over_its_box(trained_checkpoint, tmp_path):
    """The trained tiny DeepSeek-OCR-2 reads a page with three grounded blocks; each block's text is laid
    over its grounding box (one run per line the box holds), in the transcript's order."""
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, write_pages

    spec = PAGES[0]
    [png] = write_pages(tmp_path / "pages", (spec,))
    settings = Settings(model=str(trained_checkpoint), device="cpu", engine="deepseek", dtype="fp32",
                        idle_unload_s=0, cache_dir=tmp_path / "cache", result_cache_mb=0)  # fmt: skip
    engines = build_engines(settings)
    try:
        opts = ConvertOptions(mode="global", formats=frozenset({"searchable"}), max_new_tokens=256)
        [doc] = Converter(engines, settings).convert([png], tmp_path / "out", opts)
    finally:
        engines.unload_all()
    assert doc.error is None and doc.pages[0].engine == "deepseek"
    with pymupdf.open(doc.outputs["searchable"]) as out:
        page = out[0]
        assert abs(page.rect.width - spec.size[0]) < 1  # the PNG at 144 DPI: the page it was drawn from
        text = _normal(page.get_text())
        assert text == " ".join(b.drawn for b in spec.blocks), text
        for block in spec.blocks:
            word = block.drawn.split()[1]
            [hit] = page.search_for(word)
            x0, y0, x1, y1 = block.rect
            assert x0 - 3 <= hit.x0 and hit.x1 <= x1 + 3 and y0 - 3 <= hit.y0 and hit.y1 <= y1 + 3, (
                word,
                hit,
            )


def test_a_damaged_pdf_keeps_every_page_as_it_was_rendered_with_its_text(tmp_path):
    """A truncated PDF is repaired on opening and its objects may be lost: nothing is copied from it.
    Every page is kept as it was rendered, and the text the text layer read is laid over it."""
    full = tmp_path / "full.pdf"
    with pymupdf.open() as doc:
        for i in range(8):
            doc.new_page().insert_text((72, 100), f"Page number {i + 1} says hello", fontsize=14)
        doc.save(full)
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(full.read_bytes()[: int(full.stat().st_size * 0.7)])
    settings = Settings(engine="textlayer", result_cache_mb=0, cache_dir=tmp_path / "c")
    opts = ConvertOptions.from_settings(settings, formats=frozenset({"searchable"}), dpi=72)
    [doc] = Converter(build_engines(settings), settings).convert([cut], tmp_path / "out", opts)
    assert doc.source_repaired and doc.error is None
    read = [p for p in doc.pages if p.blocks]
    assert read  # some pages survived with their text
    with pymupdf.open(doc.outputs["searchable"]) as out:
        assert out.page_count == len(doc.pages)
        for page, result in zip(out, doc.pages, strict=True):
            assert len(page.get_images()) == 1  # the page as rendered
            if result.blocks:
                assert f"Page number {result.index + 1} says hello" in page.get_text()
                assert page.search_for("hello")


def test_a_page_whose_image_cannot_be_embedded_keeps_its_place_and_the_others_are_written(tmp_path):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a JPEG after all")  # the file changed after it was read
    image = Image.new("RGB", (400, 300), "white")
    writer = DocumentWriter(tmp_path / "out", "doc", {"searchable"}, order=[0, 1], workers=0)
    pages = []
    for i, image_file in enumerate((bad, None)):
        page = PageResult(
            i, "doc", 400, 300, engine="light", blocks=[Block("text", f"Line {i}", [(10, 10, 200, 40)])]
        )
        writer.add_page(page, image, source=PageImage(image, i, "doc", image_file=image_file))
        pages.append(page)
    outputs = writer.finish(DocumentResult("doc", pages=pages))
    with pymupdf.open(outputs["searchable"]) as doc:
        assert doc.page_count == 2
        assert "could not be kept as it is" in doc[0].get_text() and "jpeg" in doc[0].get_text().lower()
        assert "Line 1" in doc[1].get_text() and len(doc[1].get_images()) == 1
