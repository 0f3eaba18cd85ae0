"""Markdown output escapes raw HTML from source text, so the .md is safe in any renderer (issue 15, item 13).

Checked by rendering with markdown-it-py (CommonMark, raw HTML on): no element that the source text
spelled out survives, while the tables DeepSeek-OCR-2 writes stay HTML tables.
"""

from __future__ import annotations

import os
import subprocess
import sys

from markdown_it import MarkdownIt

from ocr_app.render.markdown import escape_raw_html, page_markdown
from ocr_app.schema import Block
from tests.factories import make_pdf

HOSTILE = 'Click <script>alert(1)</script> and <img src=x onerror="alert(2)"> or <!-- hidden --> here.'


def _html(md: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).render(md)


def test_text_layer_html_is_escaped_in_the_markdown(tmp_path):
    pdf = make_pdf(tmp_path / "evil.pdf", [f"# Title\n\n{HOSTILE}\n\nPrices: a < b and c > d."])
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", "convert", str(pdf), "-o", str(out), "--engine", "textlayer"],
        capture_output=True,
        text=True,
        env=dict(os.environ, HF_HUB_OFFLINE="1"),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    md = (out / "evil" / "evil.md").read_text()
    assert "&lt;script>alert(1)&lt;/script>" in md and "a < b" in md
    html = _html(md)
    assert "<script" not in html and "<img" not in html and "<!-- hidden" not in html
    assert "alert(1)" in html  # the text itself is kept, as text


def test_model_tables_stay_html_but_lose_everything_else():
    table = (
        '<table><tr><td colspan="2" onclick="steal()">Total</td></tr>'
        "<tr><td><script>x()</script>1</td><td>2</td></tr></table>"
    )
    blocks = [
        Block("table", table, [(0, 0, 10, 10)]),
        Block("image_caption", "<center>Figure 1: <img src=x onerror=y()></center>", [(0, 0, 5, 5)]),
    ]
    md, _ = page_markdown(blocks, None, 0, None)
    html = _html(md)
    assert '<td colspan="2">Total</td>' in md and "onclick" not in html
    assert "<table>" in html and "<script" not in html and "<img" not in html
    assert "<center>Figure 1: &lt;img" in md


def test_light_and_text_layer_pages_escape_even_table_tags():
    md, _ = page_markdown(
        [Block("text", "<table><tr><td>x</td></tr></table>")], None, 0, None, keep_table_html=False
    )
    assert "<table" not in _html(md)
    assert escape_raw_html("x < y, <b>bold</b>") == "x < y, &lt;b>bold&lt;/b>"


def test_text_that_opens_with_a_hash_mark_is_no_heading():
    """ICDAR's us-028 draws a chart whose axis title reads "# of Incidents": as text it would render as
    a heading. The engines' own headings keep their marks; a hash mark in a word ("#1") needs none."""
    blocks = [
        Block("sub_title", "## Who were the subjects?"),
        Block("text", "# of Incidents 40 20"),
        Block("text", "#1 priority for the year"),
        Block("text", "First line\n### not a heading either"),
    ]
    md, _ = page_markdown(blocks, None, 0, None, keep_table_html=False)
    html = _html(md)
    assert html.count("<h") == 1 and "<h2>Who were the subjects?</h2>" in html
    assert "<p># of Incidents 40 20</p>" in html and "<p>#1 priority for the year</p>" in html
    assert "### not a heading either" in html
