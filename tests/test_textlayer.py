"""The text-layer engine on real PDFs made by PyMuPDF: exact text, headings, order, boxes, usability."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from bench.accuracy import generate, metrics
from ocr_app.engines.text_usability import has_usable_text, inspect_report
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.exceptions import CorruptFileError, EncryptedDocumentError, InputError
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.pipeline import blocks_to_markdown
from ocr_app.structure.table_html import table_html
from tests.factories import assert_in_order, make_image, make_pdf, pdf_page_request

DPI = 144


def _request(pdf: Path, index: int = 0, dpi: int = DPI) -> PageRequest:
    return pdf_page_request(pdf, index, dpi)


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def test_simple_pdf_gives_exact_text_and_heading(tmp_path, engine):
    pdf = make_pdf(tmp_path / "d.pdf", ["# Quarterly Report\n\nThe quick brown fox jumps over the lazy dog."])
    out = engine.predict_batch([_request(pdf)])[0]
    assert out.engine == "textlayer"
    # make_pdf sets headings at 1.6 × body: a second-level heading (≥ 1.4 ×; "#" needs ≥ 1.9 ×).
    assert [b.text for b in out.blocks] == [
        "## Quarterly Report",
        "The quick brown fox jumps over the lazy dog.",
    ]
    assert [b.label for b in out.blocks] == ["sub_title", "text"]


def test_generated_page_matches_ground_truth_exactly(tmp_path, engine):
    """A page with headings, lists, a table and two columns: same words, same order, same headings."""
    pdf = tmp_path / "born.pdf"
    seeds = [0, 4]  # 4: a two-column section; both have tables and lists
    truths = generate.make_born_digital(pdf, seeds)
    assert any(t.two_columns for t in truths)
    for i, truth in enumerate(truths):
        md = blocks_to_markdown(engine.predict_batch([_request(pdf, i)])[0].blocks)
        assert metrics.markdown_to_plain(md) == metrics.normalize(truth.plain())
        want_heads = [e.markdown() for e in truth.elements if e.kind in ("h1", "h2")]
        assert [ln for ln in md.splitlines() if ln.startswith("#")] == want_heads
        for el in truth.elements:
            if el.kind in ("ul", "ol"):
                assert el.markdown() in md
            if el.kind == "table":  # an HTML table like DeepSeek's; the bold first row is its header
                assert table_html(el.rows, header_rows=1) in md


def test_two_column_reading_order(tmp_path, engine):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 60), "Two Column Title", fontsize=22, fontname="hebo")
    filler = "with enough words to fill a column"  # real column lines are wide, unlike table cells
    for k in range(8):
        page.insert_text((56, 110 + k * 14), f"left column line {k} {filler}", fontsize=10)
        page.insert_text((320, 110 + k * 14), f"right column line {k} {filler}", fontsize=10)
    page.insert_text(
        (56, 260), "A closing full width sentence that crosses the gutter of the page.", fontsize=10
    )
    pdf = tmp_path / "cols.pdf"
    doc.save(pdf)
    md = blocks_to_markdown(engine.predict_batch([_request(pdf)])[0].blocks)
    order = [
        "# Two Column Title",
        "left column line 0",
        "left column line 7",
        "right column line 0",
        "right column line 7",
        "A closing full width",
    ]
    assert_in_order(md, order)


def test_boxes_are_in_rendered_page_pixels(tmp_path, engine):
    pdf = make_pdf(tmp_path / "d.pdf", ["# Heading\n\nSome words to find: zebra."])
    out = engine.predict_batch([_request(pdf, dpi=144)])[0]
    with pymupdf.open(pdf) as doc:
        word = doc[0].search_for("zebra")[0] * (144 / 72)
    box = next(b for b in out.blocks if "zebra" in b.text).box
    assert box[0] <= word.x0 and box[1] <= word.y0 + 1 and box[2] >= word.x1 and box[3] >= word.y1 - 1
    # and scaled, not in points: the page at 144 DPI is 1190 px wide
    assert box[2] > 595 * 0.5


def test_rotated_page_boxes_follow_the_rotation(tmp_path, engine):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "Rotated page text here", fontsize=12)
    page.set_rotation(90)
    pdf = tmp_path / "rot.pdf"
    doc.save(pdf)
    req = _request(pdf)
    out = engine.predict_batch([req])[0]
    assert out.blocks[0].text == "Rotated page text here"
    x1, y1, x2, y2 = out.blocks[0].box
    w, h = req.page.size
    assert w > h  # the rendered page is landscape
    assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h


def test_usable_text_layer(tmp_path):
    pdf = make_pdf(tmp_path / "d.pdf", ["A born digital page with plenty of real words on it."])
    ok, why = has_usable_text(pdf, 0)
    assert ok and "chars of embedded text" in why


def test_image_only_pdf_is_not_usable(tmp_path):
    img = make_image(tmp_path / "scan.png", "Scanned words")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(page.rect, filename=str(img))
    doc.save(tmp_path / "scan.pdf")
    ok, why = has_usable_text(tmp_path / "scan.pdf", 0)
    assert not ok and why == "no embedded text"


def _short_page(path: Path, extra: str) -> Path:
    """A page holding only "Hi" and, as ``extra`` says, a picture, a stamp, a form field, an outlined
    title (curves), a straight rule and a box, a link, or nothing else."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Hi", fontsize=11)
    if extra == "picture":
        page.insert_image(
            pymupdf.Rect(72, 100, 372, 325), filename=str(make_image(path.with_suffix(".png"), "Scan"))
        )
    elif extra == "stamp":
        page.add_freetext_annot(pymupdf.Rect(72, 100, 300, 140), "APPROVED", fontsize=14)
    elif extra == "field":
        widget = pymupdf.Widget()
        widget.field_type, widget.field_name, widget.field_value = pymupdf.PDF_WIDGET_TYPE_TEXT, "name", "Ada"
        widget.rect = pymupdf.Rect(72, 100, 300, 120)
        page.add_widget(widget)
    elif extra == "outlines":
        shape = page.new_shape()
        for k in range(12):  # letters drawn as filled curves, as type converted to outlines is
            shape.draw_bezier((72 + 14 * k, 140), (76 + 14 * k, 110), (80 + 14 * k, 110), (84 + 14 * k, 140))
            shape.finish(color=None, fill=(0, 0, 0), closePath=True)
        shape.commit()
    elif extra in ("rules", "link"):
        page.draw_line((72, 80), (520, 80), width=1)
        page.draw_rect(pymupdf.Rect(60, 50, 530, 800), width=0.5)
        if extra == "link":
            page.insert_link(
                {"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(72, 60, 90, 75), "uri": "https://example.org"}
            )
    doc.save(path)
    return path


@pytest.mark.parametrize("extra", ["picture", "stamp", "field", "outlines"])
def test_too_little_text_beside_what_ocr_could_read_is_not_usable(tmp_path, extra):
    """A few characters beside a picture (a page number on a scan), an annotation or a form field (drawn
    text the text layer lacks), or lettering drawn as curves: OCR may read more than the text layer."""
    ok, why = has_usable_text(_short_page(tmp_path / "d.pdf", extra), 0)
    assert not ok and re.fullmatch(r"only \d+ characters of embedded text", why), why


@pytest.mark.parametrize("extra", ["nothing", "rules", "link"])
def test_too_little_text_alone_on_its_page_is_usable(tmp_path, extra):
    """Only "Hi" to see, with at most rules, boxes and a link: OCR could read nothing more, and cost a
    second of CPU (or a GPU call) for it."""
    ok, why = has_usable_text(_short_page(tmp_path / "d.pdf", extra), 0)
    assert ok and why == "2 chars of embedded text and nothing else on the page that OCR could read"


def test_a_blank_page_is_read_from_the_text_layer_but_an_empty_picture_is_not(tmp_path):
    doc = pymupdf.open()
    doc.new_page()
    doc.new_page().insert_image(
        pymupdf.Rect(0, 0, 595, 842), filename=str(make_image(tmp_path / "s.png", ""))
    )
    doc.new_page().insert_text((72, 72), "hidden", render_mode=3)  # invisible text on a blank page
    doc.save(tmp_path / "b.pdf")
    assert has_usable_text(tmp_path / "b.pdf", 0) == (
        True,
        "a blank page: no text, picture or drawing that OCR could read",
    )
    assert has_usable_text(tmp_path / "b.pdf", 1) == (False, "no embedded text")
    assert has_usable_text(tmp_path / "b.pdf", 2) == (False, "only 6 characters of embedded text")


def test_garbage_text_is_not_usable(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "".join(chr(c) for c in range(1, 9)) * 5, fontsize=11)
    # Glyphs the font cannot map come out as symbols: also garbage.
    doc.new_page().insert_text((72, 72), "\ue000\ue001\ue002 " * 10, fontsize=11)
    doc.save(tmp_path / "g.pdf")
    ok, why = has_usable_text(tmp_path / "g.pdf", 0)
    assert not ok and "garbage" in why
    ok, why = has_usable_text(tmp_path / "g.pdf", 1)
    assert not ok and "symbols" in why


def test_invisible_ocr_layer_over_a_scan_is_not_usable(tmp_path):
    img = make_image(tmp_path / "scan.png", "Scanned words")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(page.rect, filename=str(img), keep_proportion=False)
    page.insert_text((72, 72), "someone else's invisible OCR text layer here", fontsize=11, render_mode=3)
    doc.save(tmp_path / "ocrd.pdf")
    report = inspect_report(tmp_path / "ocrd.pdf", 0)
    assert report.invisible_ratio == 1.0 and report.image_coverage > 0.99
    ok, why = has_usable_text(tmp_path / "ocrd.pdf", 0)
    assert not ok and "invisible OCR layer" in why


def test_invisible_text_without_a_scan_image_is_still_usable(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "invisible text but no image under it at all", render_mode=3)
    doc.save(tmp_path / "inv.pdf")
    assert has_usable_text(tmp_path / "inv.pdf", 0)[0]


def test_bad_inputs_give_clear_errors(tmp_path, engine):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(CorruptFileError, match=r"bad\.pdf"):
        has_usable_text(bad, 0)
    pdf = make_pdf(tmp_path / "one.pdf", ["only one page here"])
    with pytest.raises(InputError, match="page 3 does not exist"):
        has_usable_text(pdf, 2)
    with pytest.raises(InputError, match="not found"):
        has_usable_text(tmp_path / "missing.pdf", 0)
    locked = make_pdf(tmp_path / "locked.pdf", ["secret text"], password="pw")
    with pytest.raises(EncryptedDocumentError):
        has_usable_text(locked, 0)
    image_only = PageImage(image=generate.render(pdf, 0), index=0, source="photo.png")
    with pytest.raises(InputError, match="PDF pages only"):
        engine.predict_batch([PageRequest(page=image_only, prompt="")])


def test_lifecycle():
    eng = TextLayerEngine()
    assert not eng.is_loaded
    eng.load()
    assert eng.is_loaded and eng.describe()["name"] == "textlayer"
    eng.unload()
    assert not eng.is_loaded


def test_ruled_table_with_wrapped_cells(tmp_path, engine):
    """Cells that wrap onto two lines stay one cell: the grid comes from the rulings."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), "Text before the table.", fontsize=10)
    rows = [
        ["Name", "Description"],
        ["Alpha", "a long description that wraps onto a second line"],
        ["Beta", "short"],
    ]
    y = 100
    for row in rows:
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(72 + c * 160, y, 72 + (c + 1) * 160, y + 40)
            page.draw_rect(rect, width=0.6)
            assert (
                page.insert_textbox(
                    pymupdf.Rect(rect.x0 + 4, rect.y0 + 4, rect.x1 - 4, rect.y1 - 4), cell, fontsize=10
                )
                >= 0
            )
        y += 40
    page.insert_text((72, y + 30), "Text after the table.", fontsize=10)
    pdf = tmp_path / "ruled.pdf"
    doc.save(pdf)
    out = engine.predict_batch([_request(pdf)])[0]
    assert [b.label for b in out.blocks] == ["text", "table", "text"]
    assert out.blocks[1].text == (
        "<table><tr><td>Name</td><td>Description</td></tr>"
        "<tr><td>Alpha</td><td>a long description that wraps onto a second line</td></tr>"
        "<tr><td>Beta</td><td>short</td></tr></table>"
    )
    x1, y1, x2, y2 = out.blocks[1].box
    assert (x1, y1, x2, y2) == pytest.approx((72 * 2, 100 * 2, 392 * 2, 220 * 2), abs=2)  # the grid, in px


def test_table_of_contents_with_dot_leaders_is_usable(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    for k in range(12):
        page.insert_text(
            (72, 72 + 16 * k), f"{k + 1} Chapter {k + 1} " + ". " * 40 + f"{k * 7 + 1}", fontsize=10
        )
    doc.save(tmp_path / "toc.pdf")
    report = inspect_report(tmp_path / "toc.pdf", 0)
    assert report.alnum_chars < 0.5 * report.chars  # dots outnumber letters...
    ok, why = has_usable_text(tmp_path / "toc.pdf", 0)
    assert ok, why  # ...but leaders are layout, not garbage


def test_a_page_of_many_drawings_is_not_walked_to_see_whether_it_is_bare(tmp_path, monkeypatch):
    """A page with no text and more than ``BARE_BYTES`` of drawing goes to OCR without its paths being
    listed: the router asks every page, in the server's process, where no time limit holds (a page of
    millions of tiny rectangles took minutes and gigabytes to list)."""
    from ocr_app.engines import text_usability

    doc = pymupdf.open()
    shape = doc.new_page().new_shape()
    for k in range(8000):  # about 120 KB of content: many small squares, no text
        shape.draw_rect(pymupdf.Rect(20 + k % 80 * 7, 20 + k // 80 * 7, 25 + k % 80 * 7, 25 + k // 80 * 7))
    shape.finish(color=None, fill=(0, 0, 0))
    shape.commit()
    doc.save(tmp_path / "many.pdf")
    listed: list[int] = []
    real = pymupdf.Page.get_cdrawings
    monkeypatch.setattr(
        pymupdf.Page, "get_cdrawings", lambda page, *a, **k: listed.append(1) or real(page, *a, **k)
    )
    assert has_usable_text(tmp_path / "many.pdf", 0) == (False, "no embedded text")
    assert listed == []
    monkeypatch.setattr(
        text_usability, "BARE_BYTES", 10 * 2**20
    )  # under a higher cap it is walked, and too full
    assert has_usable_text(tmp_path / "many.pdf", 0) == (False, "no embedded text")
    assert listed == [1]
