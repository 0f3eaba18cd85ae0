"""The HTML-documentation probe (``bench.accuracy.html_docs``, issue 30 round 27): its truth is the page's
own markup, and one page printed by Chromium and read by the real text-layer engine scores through the
public sets' measures, so the probe cannot rot where no Rust toolchain is installed."""

from __future__ import annotations

from pathlib import Path

from bench.accuracy.html_docs import build, document_name, truth_markdown
from bench.accuracy.public import markdown_set

PAGE = """<!DOCTYPE html><html><head><style>
body{font-family:'DejaVu Sans',sans-serif;font-size:12pt} pre{font-size:10.5pt}
td,th{border:1px solid #999;padding:2mm} .rule{float:left;font-size:8pt}
@media print{nav,.boring{display:none}}
</style></head><body><nav class="sidebar"><a href="#">Introduction</a><a href="#">Data Types</a></nav>
<main>
<h1 id="data-types"><a class="header" href="#data-types">Data Types</a></h1>
<div class="rule"><a href="#r1">[*]</a></div>
<p>Every value in Rust is of a certain <em>data type</em>, which tells the compiler how to use it.</p>
<h2 id="integers"><a class="header" href="#integers">Integer Types</a></h2>
<p>Each variant can be either signed or unsigned and has an explicit size.</p>
<table><thead><tr><th>Length</th><th>Signed</th><th>Unsigned</th></tr></thead><tbody>
<tr><td>8-bit</td><td>i8</td><td>u8</td></tr><tr><td>16-bit</td><td>i16</td><td>u16</td></tr>
<tr><td>32-bit</td><td>i32</td><td>u32</td></tr><tr><td>64-bit</td><td>i64</td><td>u64</td></tr>
</tbody></table>
<pre><code><span class="boring">fn main() {
</span>    let guess: u32 = "42".parse().expect("Not a number!");
<span class="boring">}</span></code></pre>
<p>Rust’s defaults are generally good places to start: integer types default to i32.</p>
</main></body></html>"""


def test_the_truth_is_the_pages_own_markup_as_print_shows_it():
    md = truth_markdown(PAGE)
    assert md.startswith("# Data Types\n"), md
    assert "## Integer Types" in md, md
    assert "| Length | Signed | Unsigned |" in md and "| 64-bit | i64 | u64 |" in md, md
    assert "let guess: u32" in md and "fn main()" not in md, md  # a listing's hidden lines are not printed
    assert "[*]" not in md and "Introduction" not in md, md  # rule anchors and navigation: no content
    assert "](#" not in md, md  # links keep their text only


def test_a_printed_page_scores_through_the_public_measures(tmp_path: Path):
    root = tmp_path / "html"
    (root / "book").mkdir(parents=True)
    (root / "book" / "ch03-02-data-types.html").write_text(PAGE, encoding="utf-8")
    name = document_name("book/ch03-02-data-types")
    assert build(tmp_path / "set", root, (name,)) == [name]
    assert (tmp_path / "set" / "pdf" / f"{name}.pdf").stat().st_size > 1000
    row = markdown_set(tmp_path / "set", "auto", (name,))
    assert row["docs"] == 1, row
    assert row["teds"] >= 0.9 and row["mhs"] >= 0.9 and row["nid"] >= 0.9, row
