"""Tables from the text layer written as the HTML tables DeepSeek-OCR-2 writes (issue 16, item 4)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.structure import split_tables
from ocr_app.render.markdown import page_markdown
from ocr_app.schema import PageRequest
from ocr_app.structure.table_html import Cell, header_rows, join_cell_lines, table_html
from tests.factories import pdf_page_request

DPI = 72


def _request(pdf: Path) -> PageRequest:
    return pdf_page_request(pdf, 0, DPI)


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _grid_pdf(
    path: Path, cells, xs, ys, before="Results of the study, by group.", after="Text after."
) -> Path:
    """A page with ``cells`` = [(col0, col1, row0, row1, text, bold)] drawn as ruled boxes."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, ys[0] - 20), before, fontsize=10)
    for c0, c1, r0, r1, text, bold in cells:
        rect = pymupdf.Rect(xs[c0], ys[r0], xs[c1], ys[r1])
        page.draw_rect(rect, width=0.6)
        if text:
            box = pymupdf.Rect(rect.x0 + 4, rect.y0 + 3, rect.x1 - 4, rect.y1 - 2)
            assert page.insert_textbox(box, text, fontsize=10, fontname="hebo" if bold else "helv") >= 0
    page.insert_text((72, ys[-1] + 30), after, fontsize=10)
    doc.save(path)
    return path


def test_merged_cells_and_bold_header_rows(tmp_path, engine):
    """A two-row bold header with a cell spanning two columns and one spanning two rows."""
    xs, ys = [72, 220, 370, 520], [100 + 26 * k for k in range(6)]
    cells = [
        (0, 1, 0, 2, "Group", True),
        (1, 3, 0, 1, "Score", True),
        (1, 2, 1, 2, "before", True),
        (2, 3, 1, 2, "after", True),
    ]
    for r, (a, b, c) in enumerate(
        [("Alpha", "10.5", "12.0"), ("Beta", "9.1", "9.9"), ("Gamma & co", "<5", "7")]
    ):
        cells += [
            (0, 1, 2 + r, 3 + r, a, False),
            (1, 2, 2 + r, 3 + r, b, False),
            (2, 3, 2 + r, 3 + r, c, False),
        ]
    pdf = _grid_pdf(tmp_path / "merged.pdf", cells, xs, ys)
    out = engine.predict_batch([_request(pdf)])[0]
    assert [b.label for b in out.blocks] == ["text", "table", "text"]
    assert out.blocks[1].text == (
        '<table><thead><tr><th rowspan="2">Group</th><th colspan="2">Score</th></tr>'
        "<tr><th>before</th><th>after</th></tr></thead><tbody>"
        "<tr><td>Alpha</td><td>10.5</td><td>12.0</td></tr>"
        "<tr><td>Beta</td><td>9.1</td><td>9.9</td></tr>"
        "<tr><td>Gamma &amp; co</td><td>&lt;5</td><td>7</td></tr></tbody></table>"
    )
    # The benchmark reads it as 5 rows of the same cells as a pipe table would have.
    _, tables = split_tables(out.blocks[1].text)
    assert tables == [
        [
            ["Group", "Score"],
            ["before", "after"],
            ["Alpha", "10.5", "12.0"],
            ["Beta", "9.1", "9.9"],
            ["Gamma & co", "<5", "7"],
        ]
    ]


def test_table_markup_survives_rendering_and_source_html_does_not(tmp_path, engine):
    """The writer escapes raw HTML of the text layer (it is source text) except the table markup the
    engine built; a cell that reads "<script>" stays text."""
    xs, ys = [72, 250, 430], [100, 126, 152, 178]
    rows = [("Tag", "Meaning"), ("<script>", "runs code"), ("<b>", "bold")]
    cells = [(c, c + 1, r, r + 1, text, False) for r, row in enumerate(rows) for c, text in enumerate(row)]
    pdf = _grid_pdf(tmp_path / "tags.pdf", cells, xs, ys, before="Use <b>bold</b> sparingly.")
    out = engine.predict_batch([_request(pdf)])[0]
    md, _ = page_markdown(out.blocks, None, 0, None, keep_table_html=False)  # as the writer calls it
    assert "Use &lt;b>bold&lt;/b> sparingly." in md
    assert (
        "<table><tr><td>Tag</td><td>Meaning</td></tr><tr><td>&lt;script&gt;</td><td>runs code</td></tr>" in md
    )
    assert "<script>" not in md and "<b>" not in md


def test_diagram_drawn_with_boxes_is_text_not_a_table(tmp_path, engine):
    """Boxes of a flow diagram share rulings but most of them span several grid cells."""
    xs, ys = [72, 150, 230, 310, 390, 470], [100, 126, 152, 178, 204]
    cells = [
        (0, 5, 0, 1, "Signed on as ALICE", False),
        (1, 4, 1, 2, "CALL proc1", False),
        (0, 2, 2, 3, "USER = ALICE", False),
        (2, 5, 2, 4, "Owner = JOE", False),
        (0, 2, 3, 4, "CURRENT USER = JOE", False),
    ]
    pdf = _grid_pdf(tmp_path / "diagram.pdf", cells, xs, ys)
    out = engine.predict_batch([_request(pdf)])[0]
    assert "table" not in [b.label for b in out.blocks]
    text = " ".join(b.text for b in out.blocks)
    assert all(w in text for w in ("Signed on as ALICE", "CALL proc1", "Owner = JOE"))


def test_label_value_form_with_empty_boxes_is_text(tmp_path, engine):
    """A form: labels and values beside empty check boxes is no table; each row is one line."""
    xs, ys = [72, 250, 280, 460, 490], [100 + 26 * k for k in range(4)]
    rows = [("Standard name", "Steel billets"), ("Standard number", "20300"), ("Issued by", "ISIRI")]
    cells = []
    for r, (label, value) in enumerate(rows):
        cells += [(0, 1, r, r + 1, label, False), (1, 2, r, r + 1, "", False)]
        cells += [(2, 3, r, r + 1, value, False), (3, 4, r, r + 1, "", False)]
    pdf = _grid_pdf(tmp_path / "form.pdf", cells, xs, ys)
    out = engine.predict_batch([_request(pdf)])[0]
    assert "table" not in [b.label for b in out.blocks]
    assert [b.text for b in out.blocks if b.text.startswith("Standard")] == [
        "Standard name Steel billets",
        "Standard number 20300",
    ]


def test_cell_lines_join_wrapped_text_and_keep_items_apart():
    assert join_cell_lines(["a long description that", "wraps onto a second line"]) == (
        "a long description that wraps onto a second line"
    )
    assert join_cell_lines(["Usage setting:", "• ALLOWED: allowed.", "• DENIED: denied."]) == (
        "Usage setting:\n• ALLOWED: allowed.\n• DENIED: denied."
    )
    assert join_cell_lines(["0.965", "0.969"]) == "0.965\n0.969"  # stacked values stay stacked
    assert join_cell_lines(["mAP", "(0.75)"]) == "mAP (0.75)"  # a number in brackets is no item
    assert join_cell_lines(["change", "-5 units"]) == "change -5 units"  # nor is a negative number
    html = table_html([[Cell("Usage setting:\n• ALLOWED"), Cell("x", colspan=2)]])
    assert html == '<table><tr><td>Usage setting:<br>• ALLOWED</td><td colspan="2">x</td></tr></table>'


def test_header_rows_need_a_plain_body_row():
    assert header_rows([True, False, False], [False] * 3) == 1
    assert header_rows([True, True, False], [False] * 3) == 2
    assert header_rows([True, True, True], [False] * 3) == 0  # all bold: no header to tell
    assert header_rows([False, False], [True, False]) == 1  # a shaded first row
    assert header_rows([None, False], [False, False]) == 0
    # A table is never all header: at most every row but the last.
    assert table_html([["a"], ["b"]], header_rows=5) == (
        "<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>b</td></tr></tbody></table>"
    )


def test_converter_writes_the_table_as_html_in_markdown_and_json(tmp_path):
    """Through the product path (Converter → text-layer engine → writer): the .md holds the HTML table
    and the JSON block is a ``table`` with the same HTML, as for DeepSeek-OCR-2."""
    import json

    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    xs, ys = [72, 250, 430], [100, 126, 152, 178]
    rows = [("Tag", "Meaning"), ("<td>", "a cell"), ("x & y", "both")]
    cells = [(c, c + 1, r, r + 1, text, r == 0) for r, row in enumerate(rows) for c, text in enumerate(row)]
    pdf = _grid_pdf(tmp_path / "conv.pdf", cells, xs, ys)
    settings = load_settings(engine="textlayer")
    converter = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine="textlayer", formats=frozenset({"md", "json"}))
    (doc,) = converter.convert([pdf], tmp_path / "out", options)
    want = (
        "<table><thead><tr><th>Tag</th><th>Meaning</th></tr></thead><tbody>"
        "<tr><td>&lt;td&gt;</td><td>a cell</td></tr><tr><td>x &amp; y</td><td>both</td></tr></tbody></table>"
    )
    assert want in doc.outputs["md"].read_text(encoding="utf-8")
    page = json.loads(doc.outputs["json"].read_text(encoding="utf-8"))["pages"][0]
    assert [b["text"] for b in page["blocks"] if b["label"] == "table"] == [want]


def test_shaded_first_row_is_the_header(tmp_path, engine):
    """A header told apart by its grey background, not by weight."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    xs, ys = [72, 250, 430], [100, 126, 152, 178]
    rows = [("City", "Population"), ("Lagos", "15.4"), ("Quito", "2.8")]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            rect = pymupdf.Rect(xs[c], ys[r], xs[c + 1], ys[r + 1])
            page.draw_rect(rect, width=0.6, fill=(0.8, 0.8, 0.8) if r == 0 else None)
            page.insert_textbox(
                pymupdf.Rect(rect.x0 + 4, rect.y0 + 3, rect.x1 - 4, rect.y1 - 2), text, fontsize=10
            )
    doc.save(tmp_path / "shaded.pdf")
    out = engine.predict_batch([_request(tmp_path / "shaded.pdf")])[0]
    assert [b.text for b in out.blocks if b.label == "table"] == [
        "<table><thead><tr><th>City</th><th>Population</th></tr></thead><tbody>"
        "<tr><td>Lagos</td><td>15.4</td></tr><tr><td>Quito</td><td>2.8</td></tr></tbody></table>"
    ]
