"""The viewer's HTML without a browser: block ↔ Markdown line maps, sanitising, math, figures, blank pages.

The browser side (hover and click both ways, zoom, pan) is in ``test_ui_browser.py``.
"""

from __future__ import annotations

import re

from ocr_app.render.markdown import page_markdown
from ocr_app.schema import Block
from ocr_app.ui import page_html


def _blocks() -> list[Block]:
    return [
        Block("title", "# Annual report", [(10, 10, 200, 40)]),
        Block("text", "Revenue grew by \\(x^2\\) percent.\nA second line.", [(10, 50, 300, 90)]),
        Block("image", "", [(10, 100, 100, 200)]),
        Block("equation", "\\[\n\\frac{a}{b}\n\\]", [(10, 210, 200, 240)]),
        Block("table", '<table><tr><td colspan="2">1</td></tr></table>', [(10, 250, 300, 300)]),
    ]


def _page(tmp_path, blocks):
    from PIL import Image

    image = Image.new("RGB", (400, 400), "white")
    return page_markdown(blocks, image, 0, tmp_path / "images")


def test_each_block_maps_to_the_lines_it_produced(tmp_path):
    blocks = _blocks()
    markdown, figures = _page(tmp_path, blocks)
    lines = markdown.split("\n")
    spans = page_html.block_line_spans(markdown, blocks)
    assert all(spans), spans
    text = {i: "\n".join(lines[a:b]) for i, (a, b) in enumerate(spans)}
    assert text[0] == "# Annual report"
    assert text[1].startswith("Revenue grew") and text[1].endswith("A second line.")
    assert text[2].strip() == "![](images/0_0.jpg)" and len(figures) == 1
    assert "\\frac{a}{b}" in text[3]
    assert text[4].startswith("<table>")


def test_rendered_html_carries_block_ids_math_figures_and_no_scripts(tmp_path):
    blocks = _blocks()
    blocks.append(
        Block(
            "text", "Bad <script>alert(1)</script><img src=x onerror=alert(2)> [l](javascript:alert(3))", []
        )
    )
    markdown, figures = _page(tmp_path, blocks)
    urls = {"images/0_0.jpg": page_html.file_url(figures[0])}
    out = page_html.markdown_html(markdown, blocks, urls)
    ids = re.findall(r'class="ocr-block" data-block="(\d+)"', out)
    assert ids == ["0", "1", "2", "3", "4", "5"]
    assert "<h1>Annual report</h1>" in out
    assert "<msup><mi>x</mi><mn>2</mn></msup>" in out  # inline math as MathML
    assert "<mfrac>" in out  # display math too
    assert f'src="gradio_api/file={figures[0]}"' in out
    assert '<td colspan="2">1</td>' in out  # the model's HTML tables stay
    # raw HTML from the source text is escaped by the Markdown writer: shown as text, never executed
    assert "<script" not in out and "<img src=x" not in out and 'href="javascript' not in out
    assert "Bad &lt;script&gt;alert(1)&lt;/script&gt;" in out


def test_page_html_draws_a_box_per_block_and_says_blank_page():
    blocks = _blocks()[:2]
    view = page_html.page_html(
        key="0:0",
        title="r.pdf, page 1",
        image_path="/tmp/x/page.png",
        width=400,
        height=300,
        markdown="# Annual report\n\nRevenue grew.",
        blocks=blocks,
        figures=[],
    )
    assert 'viewBox="0 0 400 300"' in view and 'data-width="400"' in view
    assert re.findall(r'<rect class="ocr-box" data-block="(\d)"', view) == ["0", "1"]
    assert 'src="gradio_api/file=/tmp/x/page.png"' in view
    blank = page_html.page_html(
        key="0:1", title="t", image_path="/tmp/p.png", width=10, height=10, markdown="", blocks=[], figures=[]
    )
    assert "blank page" in blank and "ocr-block" not in blank
    failed = page_html.page_html(
        key="0:2",
        title="t",
        image_path=None,
        width=0,
        height=0,
        markdown="x",
        blocks=[],
        figures=[],
        error="page 3 could not be rendered <b>",
    )
    assert "page 3 could not be rendered &lt;b&gt;" in failed


def test_assets_ship_as_package_data():
    js, css = page_html.assets()
    assert "data-block" in js and "watch" in js
    assert ".ocr-box.ocr-hl" in css and "@media" in css
