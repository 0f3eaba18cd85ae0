"""Render: overlays, figure crops, Markdown joining, atomic writes, layout PDF and the document writer.

Page images come from real PDFs drawn and rendered with PyMuPDF; blocks come from the real parser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pymupdf
import pytest
from PIL import Image

from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2.grounding import parse_grounded
from ocr_app.render.atomic import atomic_target, atomic_write_bytes, atomic_write_text
from ocr_app.render.layout_pdf import write_layout_pdf
from ocr_app.render.markdown import document_markdown, page_markdown
from ocr_app.render.overlay import FILL_ALPHA, LABEL_COLOURS, draw_overlay, label_colour, label_patches
from ocr_app.render.writer import FORMATS, DocumentWriter, document_schema
from ocr_app.schema import Block, DocumentResult, PageResult, StopReason

FIGURE_RECT_PT = (100, 300, 400, 500)  # x0, y0, x1, y1 in PDF points on an A4 page
FIGURE_RGB = (0, 102, 204)
DPI = 72  # 1 px per point: small, fast pages


def _pdf_page_image(tmp_path: Path, title: str = "Quarterly Report") -> Image.Image:
    """A real A4 PDF page (title, body text, one filled figure rectangle) rendered with PyMuPDF."""
    path = tmp_path / f"page-{abs(hash(title))}.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((100, 100), title, fontsize=24)
    page.insert_text((100, 150), "Revenue grew by 12% compared with the previous quarter.", fontsize=11)
    page.draw_rect(pymupdf.Rect(*FIGURE_RECT_PT), color=None, fill=[c / 255 for c in FIGURE_RGB])
    doc.save(path)
    doc.close()
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(dpi=DPI)
        return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def _grid(v: float, size: int) -> int:
    return round(v / size * 999)


def _raw_for_page(width: int, height: int, stop_early: bool = False) -> str:
    """Grounded output whose image box sits on the figure rectangle of ``_pdf_page_image``."""
    x0, y0, x1, y1 = FIGURE_RECT_PT
    fig = [_grid(x0, width), _grid(y0, height), _grid(x1, width), _grid(y1, height)]
    raw = (
        "<|ref|>title<|/ref|><|det|>[[160, 90, 600, 125]]<|/det|>\n# Quarterly Report\n\n"
        "<|ref|>text<|/ref|><|det|>[[160, 160, 900, 185]]<|/det|>\n"
        "Revenue grew by 12% compared with the previous quarter.\n\n"
        f"<|ref|>image<|/ref|><|det|>[{fig}]<|/det|>\n\n"
        "<|ref|>image_caption<|/ref|><|det|>[[168, 600, 672, 620]]<|/det|>\nFigure 1: Blue box.\n\n"
        "<|ref|>table<|/ref|><|det|>[[160, 700, 900, 800]]<|/det|>\n"
        "<table><tr><td>a</td><td>b</td></tr></table>"
    )
    if stop_early:
        raw += "\n\n<|ref|>text<|/ref|><|det|>[[160, 820, 900, 850]]<|/det|>\nThe value is 0.5 and the"
    return raw


def _page_result(index: int, image: Image.Image, stop_early: bool = False) -> PageResult:
    w, h = image.size
    raw = _raw_for_page(w, h, stop_early)
    return PageResult(
        index=index,
        source="report.pdf",
        width=w,
        height=h,
        engine="deepseek-ocr2",
        blocks=parse_grounded(raw, w, h),
        raw_text=raw,
        stop_reason=StopReason.LENGTH if stop_early else StopReason.END,
        num_tokens=321,
        timings={"decode": 1.5},
    )


def _blend(colour: tuple[int, int, int], under: int = 255, alpha: int = FILL_ALPHA) -> tuple[int, ...]:
    return tuple(round(under + (c - under) * alpha / 255) for c in colour)


# --- overlay -----------------------------------------------------------------------------------
def test_overlay_same_size_and_tints_only_inside_boxes() -> None:
    page = Image.new("RGB", (400, 300), "white")
    block = Block(label="table", text="<table></table>", boxes=[(100.0, 80.0, 300.0, 250.0)])
    out = draw_overlay(page, [block])
    assert out.size == page.size and out.mode == "RGB"
    inside = out.getpixel((200, 170))
    assert all(abs(a - b) <= 2 for a, b in zip(inside, _blend(LABEL_COLOURS["table"]), strict=True))
    assert inside != (255, 255, 255)
    assert out.getpixel((20, 280)) == (255, 255, 255)  # outside every box: untouched
    assert out.getpixel((100, 170)) == LABEL_COLOURS["table"]  # opaque outline
    assert page.getpixel((200, 170)) == (255, 255, 255)  # the input page is not modified


def test_overlay_label_has_solid_background_with_contrasting_text() -> None:
    page = Image.new("RGB", (1400, 1000), "white")
    out = draw_overlay(page, [Block(label="title", text="# T", boxes=[(200.0, 150.0, 900.0, 600.0)])])
    colour = LABEL_COLOURS["title"]
    # the label patch sits above the box's top-left corner: find it as the non-white area there
    above = out.crop((0, 0, 1400, 150))
    bbox = Image.eval(above, lambda v: 255 - v).getbbox()
    assert bbox is not None
    x0, y0, x1, y1 = bbox
    assert x0 == 200 and y1 == 150 and 20 < x1 - 200 < 300 and 10 < y1 - y0 < 60
    pixels = list(above.crop(bbox).getdata())
    assert pixels.count(colour) > len(pixels) / 2  # solid background in the label colour
    assert sum(1 for p in pixels if min(p) > 200) > 20  # white text on the dark red patch


def test_overlay_accepts_other_modes_and_blocks_without_boxes() -> None:
    page = Image.new("L", (120, 90), 255)
    blocks = [
        Block(label="text", text="no box"),
        Block(label="text", text="b", boxes=[(10.0, 10.0, 50.0, 50.0)]),
    ]
    out = draw_overlay(page, blocks)
    assert out.size == (120, 90) and out.mode == "RGB"
    assert out.getpixel((30, 45)) != (255, 255, 255)


def test_label_colours_are_stable_across_processes_and_distinct() -> None:
    labels = ["page_header", "foot_note", "code_block", "the_red_stamp", "figure_title"]
    here = [label_colour(lb) for lb in labels]
    assert len(set(here)) == len(labels)
    assert label_colour("table") == LABEL_COLOURS["table"]
    code = f"from ocr_app.render.overlay import label_colour; print([label_colour(x) for x in {labels!r}])"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == str(here)


def test_same_label_same_colour_on_different_pages() -> None:
    a = draw_overlay(
        Image.new("RGB", (200, 200), "white"), [Block("foot_note", "x", [(20.0, 40.0, 180.0, 180.0)])]
    )
    b = draw_overlay(
        Image.new("RGB", (300, 120), "white"), [Block("foot_note", "y", [(50.0, 30.0, 250.0, 110.0)])]
    )
    assert a.getpixel((100, 120)) == b.getpixel((150, 80)) == _blend(label_colour("foot_note"))


# --- page Markdown and figures -----------------------------------------------------------------
def test_figure_crop_equals_box_and_shows_the_figure(tmp_path: Path) -> None:
    image = _pdf_page_image(tmp_path)
    assert image.size == (595, 842)
    blocks = parse_grounded(_raw_for_page(*image.size), *image.size)
    md, figures = page_markdown(blocks, image, 4, tmp_path / "images")
    assert [f.name for f in figures] == ["4_0.jpg"]
    assert "![](images/4_0.jpg)" in md
    (fig_block,) = [b for b in blocks if b.label == "image"]
    x1, y1, x2, y2 = fig_block.boxes[0]
    crop = Image.open(figures[0])
    assert crop.size == (round(x2) - round(x1), round(y2) - round(y1))
    assert abs(crop.size[0] - 300) <= 1 and abs(crop.size[1] - 200) <= 1  # the 300 x 200 pt rectangle
    centre = crop.getpixel((crop.size[0] // 2, crop.size[1] // 2))
    assert all(abs(a - b) <= 8 for a, b in zip(centre, FIGURE_RGB, strict=True))


def test_page_markdown_without_images_dir_writes_nothing_and_links_nothing(tmp_path: Path) -> None:
    blocks = [
        Block(label="image", text="Label inside the figure", boxes=[(0.0, 0.0, 50.0, 50.0)]),
        Block(label="text", text="Body"),
    ]
    md, figures = page_markdown(blocks, Image.new("RGB", (100, 100)), 0, None)
    assert (md, figures) == ("Label inside the figure\n\nBody", [])
    md2, figures2 = page_markdown(blocks, None, 0, tmp_path / "images")
    assert (md2, figures2) == (md, [])
    assert not (tmp_path / "images").exists()


def test_page_markdown_custom_link_prefix_and_empty_box(tmp_path: Path) -> None:
    blocks = [Block(label="image", text="", boxes=[(10.0, 10.0, 10.2, 60.0), (10.0, 10.0, 40.0, 30.0)])]
    md, figures = page_markdown(
        blocks, Image.new("RGB", (100, 100)), 2, tmp_path / "img", link_prefix="x/img"
    )
    assert md == "![](x/img/2_0.jpg)"  # the sub-pixel box gives no crop and no link
    assert [Image.open(f).size for f in figures] == [(30, 20)]


def test_document_markdown_separator_is_stable() -> None:
    assert document_markdown(["# A\n", "", "C"], page_numbers=[3, 4, 9]) == (
        "<!-- page 3 -->\n\n# A\n\n---\n\n<!-- page 4 -->\n\n---\n\n<!-- page 9 -->\n\nC\n"
    )
    assert document_markdown(["x", "y"]).startswith("<!-- page 1 -->\n\nx\n\n---\n\n<!-- page 2 -->")
    assert document_markdown([]) == ""
    with pytest.raises(ValueError, match="page numbers"):
        document_markdown(["x"], page_numbers=[1, 2])


# --- atomic writes -----------------------------------------------------------------------------
def test_atomic_writes_replace_and_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.md"
    atomic_write_text(target, "first ü\n")
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.md"]


def test_failed_atomic_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    atomic_write_text(target, '{"ok": true}')
    with pytest.raises(RuntimeError, match="disk full"), atomic_target(target) as tmp:
        tmp.write_text('{"ok": fal')
        raise RuntimeError("disk full")
    assert target.read_text() == '{"ok": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


# --- layout PDF --------------------------------------------------------------------------------
def test_layout_pdf_one_page_per_item_at_render_dpi(tmp_path: Path) -> None:
    png = tmp_path / "o.png"
    Image.new("RGB", (288, 144), "red").save(png)
    out = write_layout_pdf([png, Image.new("RGB", (144, 288), "blue"), "Page 3 failed."], tmp_path / "l.pdf")
    with pymupdf.open(out) as doc:
        assert doc.page_count == 3
        assert (doc[0].rect.width, doc[0].rect.height) == (144, 72)  # 144 DPI → half the pixels in points
        assert (doc[1].rect.width, doc[1].rect.height) == (72, 144)
        assert "Page 3 failed." in doc[2].get_text()
        pix = doc[0].get_pixmap(dpi=144)
        assert pix.pixel(100, 50) == (255, 0, 0)
    with pymupdf.open(write_layout_pdf([], tmp_path / "empty.pdf")) as doc:
        assert doc.page_count == 1 and "No pages" in doc[0].get_text()


# --- document writer ---------------------------------------------------------------------------
def _convert_three_pages(tmp_path: Path, formats=FORMATS) -> tuple[DocumentResult, dict[str, Path]]:
    image = _pdf_page_image(tmp_path)
    writer = DocumentWriter(tmp_path / "out", "report", formats)
    ok = _page_result(0, image)
    writer.add_page(ok, image)
    failed = PageResult(index=1, source="report.pdf", width=0, height=0, error="Page 2 is corrupt.\nxref")
    failed.stop_reason = StopReason.ERROR
    writer.add_page(failed, None)
    cut = _page_result(2, image, stop_early=True)
    writer.add_page(cut, image)
    doc = DocumentResult(source="report.pdf", pages=[ok, failed, cut], settings={"mode": "default"})
    return doc, writer.finish(doc)


def test_writer_produces_every_output(tmp_path: Path) -> None:
    doc, outputs = _convert_three_pages(tmp_path)
    base = tmp_path / "out" / "report"
    assert outputs == {
        "md": base / "report.md",
        "mmd": base / "report.mmd",
        "json": base / "report.json",
        "layout_pdf": base / "report_layout.pdf",
        "overlays": base / "overlays",
        "searchable": base / "report_searchable.pdf",
        "xlsx": base / "report_tables.xlsx",
        "zip": base / "report.zip",
        "dir": base,
    }
    assert doc.outputs == outputs
    ok, failed, cut = doc.pages
    # overlays: one PNG per converted page, the size of the page; none for the failed page
    assert ok.overlay_path == base / "overlays" / "page_0001.png"
    assert cut.overlay_path == base / "overlays" / "page_0003.png"
    assert failed.overlay_path is None
    assert Image.open(ok.overlay_path).size == (ok.width, ok.height) == (595, 842)
    # figures: page index 0-based in the name
    assert ok.figures == [base / "images" / "0_0.jpg"] and cut.figures == [base / "images" / "2_0.jpg"]
    # markdown: markers, separator, figure link, error note, stopped-early note
    md = outputs["md"].read_text(encoding="utf-8")
    assert md.startswith("<!-- page 1 -->\n\n# Quarterly Report\n\n")
    assert "![](images/0_0.jpg)" in md and "![](images/2_0.jpg)" in md
    assert "\n\n---\n\n<!-- page 2 -->\n\n> **Page 2 could not be converted:** Page 2 is corrupt. xref" in md
    assert md.rstrip().endswith("> **Page 3 stopped early (length):** its text may be incomplete.")
    assert "<|ref|>" not in md
    # raw text keeps the tags
    mmd = outputs["mmd"].read_text(encoding="utf-8")
    assert mmd.count("<|ref|>image<|/ref|>") == 2
    assert mmd.startswith("<!-- page 1 -->\n\n<|ref|>title<|/ref|><|det|>[[160, 90, 600, 125]]<|/det|>\n")
    assert "\n\n---\n\n<!-- page 2 -->\n\n---\n\n<!-- page 3 -->\n\n<|ref|>title" in mmd
    # layout PDF: one page per document page, the failed one as a note
    with pymupdf.open(outputs["layout_pdf"]) as pdf:
        assert pdf.page_count == 3
        assert "could not be converted" in pdf[1].get_text()
    # searchable PDF: each page image with its text laid over it, the failed page as a note
    with pymupdf.open(outputs["searchable"]) as pdf:
        assert pdf.page_count == 3
        assert "Quarterly Report" in pdf[0].get_text() and pdf[0].search_for("Quarterly")
        assert "could not be converted" in pdf[1].get_text()
    # workbook: the table of page 1 and the one of page 3 (stopped early), each a sheet of its own
    from openpyxl import load_workbook

    book = load_workbook(outputs["xlsx"])
    assert book.sheetnames == ["p1-t1", "p3-t1"]
    assert [list(r) for r in book["p1-t1"].iter_rows(values_only=True)] == [["a", "b"]]
    # no temp files left anywhere
    assert not [p for p in base.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]


def test_writer_zip_lists_everything(tmp_path: Path) -> None:
    _, outputs = _convert_three_pages(tmp_path)
    with zipfile.ZipFile(outputs["zip"]) as zf:
        assert zf.testzip() is None
        names = sorted(zf.namelist())
        assert names == sorted(
            [
                "report.md",
                "report.mmd",
                "report.json",
                "report_layout.pdf",
                "report_searchable.pdf",
                "report_tables.xlsx",
                "images/0_0.jpg",
                "images/2_0.jpg",
                "overlays/page_0001.png",
                "overlays/page_0003.png",
            ]
        )
        assert zf.read("report.md") == outputs["md"].read_bytes()


def test_writer_json_validates_against_schema(tmp_path: Path) -> None:
    _, outputs = _convert_three_pages(tmp_path)
    data = json.loads(outputs["json"].read_text(encoding="utf-8"))
    schema = document_schema()
    jsonschema.validate(data, schema)
    assert data["version"] == "2.0" and data["page_count"] == 3 and data["pages_done"] == 3
    assert data["complete"] is True and data["incomplete_reason"] is None
    p0, p1, p2 = data["pages"]
    assert (p0["status"], p1["status"], p2["status"]) == ("ok", "error", "length")
    assert p0["overlay"] == "overlays/page_0001.png" and p1["overlay"] is None
    assert p0["figures"] == ["images/0_0.jpg"]
    image_block = next(b for b in p0["blocks"] if b["label"] == "image")
    assert image_block["boxes_norm1000"][0] == [
        round(v / d * 1000) for v, d in zip(image_block["boxes"][0], (595, 842, 595, 842), strict=True)
    ]
    # the schema is not vacuous: broken documents are rejected
    for broken in (
        {**data, "pages": [{**p0, "status": "fine"}]},
        {k: v for k, v in data.items() if k != "pages"},
        {**data, "pages": [{**p0, "blocks": [{"label": "text", "text": "x", "boxes": [[1, 2, 3]]}]}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_writer_only_requested_formats(tmp_path: Path) -> None:
    doc, outputs = _convert_three_pages(tmp_path, formats={"md"})
    base = tmp_path / "out" / "report"
    assert set(outputs) == {"md", "dir"}
    assert sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()) == [
        "images/0_0.jpg",
        "images/2_0.jpg",
        "report.md",
    ]
    assert all(p.overlay_path is None for p in doc.pages)


def test_writer_layout_pdf_alone_removes_its_overlays(tmp_path: Path) -> None:
    doc, outputs = _convert_three_pages(tmp_path, formats={"layout_pdf"})
    base = tmp_path / "out" / "report"
    assert set(outputs) == {"layout_pdf", "dir"}
    assert sorted(p.name for p in base.iterdir()) == ["report_layout.pdf"]
    with pymupdf.open(outputs["layout_pdf"]) as pdf:
        assert pdf.page_count == 3
    assert all(p.overlay_path is None for p in doc.pages)


def test_writer_zip_skips_files_from_earlier_runs(tmp_path: Path) -> None:
    stale = tmp_path / "out" / "report" / "images" / "9_0.jpg"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    _, outputs = _convert_three_pages(tmp_path)
    with zipfile.ZipFile(outputs["zip"]) as zf:
        assert "images/9_0.jpg" not in zf.namelist()


def test_writer_rejects_unknown_formats_and_unsafe_stems(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="docx"):
        DocumentWriter(tmp_path, "x", {"md", "docx"})
    with pytest.raises(ConfigError, match="file name"):
        DocumentWriter(tmp_path, "..")
    assert DocumentWriter(tmp_path, "../a/b").dir == tmp_path / ".._a_b"


def test_writer_error_page_gets_note_even_without_add_page(tmp_path: Path) -> None:
    writer = DocumentWriter(tmp_path, "bad", {"md", "json"})
    page = PageResult(index=0, source="bad.pdf", width=0, height=0, error="Engine crashed")
    doc = DocumentResult(source="bad.pdf", pages=[page])
    outputs = writer.finish(doc)
    assert (
        outputs["md"].read_text()
        == "<!-- page 1 -->\n\n> **Page 1 could not be converted:** Engine crashed\n"
    )
    jsonschema.validate(json.loads(outputs["json"].read_text()), document_schema())


def test_label_patches_are_where_the_overlay_draws_its_labels() -> None:
    """The web viewer draws its readable labels over these patches, so they must be exactly the overlay's."""
    page = Image.new("RGB", (800, 1000), "white")
    blocks = [
        Block(label="title", text="# T", boxes=[(100.0, 200.0, 700.0, 260.0)]),
        Block(label="text", text="top", boxes=[(50.0, 5.0, 400.0, 100.0)]),  # touches the top: label inside
        Block(
            label="table", text="t", boxes=[(780.0, 300.0, 799.0, 400.0)]
        ),  # at the right edge: pushed left
        Block(label="text", text="no box", boxes=[]),
    ]
    out = draw_overlay(page, blocks)
    patches = label_patches(page.size, blocks)
    assert [p.block for p in patches] == [0, 1, 2] and [p.text for p in patches] == [
        "1 title",
        "2 text",
        "3 table",
    ]
    for p in patches:
        corners = [(p.x + 1, p.y + 1), (p.x + p.width - 1, p.y + 1), (p.x + 1, p.y + p.height - 1)]
        assert all(out.getpixel((int(x), int(y))) == p.colour for x, y in corners), p
        assert 0 < p.text_width < p.width and p.font_size >= 10
    title, top, edge = patches
    assert title.anchor == (100.0, 200.0) and title.y + title.height == 200.0  # above its box
    assert top.anchor == (50.0, 5.0) and top.y == 5.0  # inside its box
    assert edge.x + edge.width == 800 and edge.anchor == (800, 300.0)  # grows from its right edge
