"""The HTML-documentation probes (``bench.accuracy.html_docs``, issue 30 rounds 27-30): the truth is the
page's own markup as its print shows it, and one page printed by Chromium and read by the real text-layer
engine scores through the public sets' measures, so the probe cannot rot where no Rust toolchain, Node.js
or Valgrind documentation is installed."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

from bench.accuracy.html_docs import COLLECTIONS, build, document_name, rest_pages, truth_markdown
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
    md = truth_markdown(PAGE, unseen=".rule, .boring, nav")
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
    assert build(tmp_path / "set", COLLECTIONS["rust"], root, (name,)) == [name]
    assert (tmp_path / "set" / "pdf" / f"{name}.pdf").stat().st_size > 1000
    truth = (tmp_path / "set" / "gt" / f"{name}.md").read_text(encoding="utf-8")
    # the print hides the listing's boring lines and the sidebar: so does the truth, read off the page
    assert "fn main()" not in truth and "Introduction" not in truth and "[*]" not in truth, truth
    row = markdown_set(tmp_path / "set", "auto", (name,))
    assert row["docs"] == 1, row
    assert row["teds"] >= 0.9 and row["mhs"] >= 0.9 and row["nid"] >= 0.9, row


NAV_PAGE = """<!DOCTYPE html><html><head><style>
body{font-family:'DejaVu Sans',sans-serif;font-size:12pt} td,th{border:1px solid #999}
@media print{.history{display:none}}
</style></head><body>
<div><table class="nav"><tr><td>Prev</td><td>Up</td><td>Next</td></tr></table></div>
<h1>2. Using and understanding the Valgrind core</h1>
<p>This chapter describes the Valgrind core services, command-line options and behaviours.</p>
<details class="history" open><summary>History</summary><table><tr><td>v1.0</td><td>Added</td></tr></table></details>
<dl><dt><code>--tool=&lt;toolname&gt;</code></dt><dd>Run the Valgrind tool called toolname.</dd></dl>
</body></html>"""


def test_navigation_hidden_in_print_and_what_print_hides_are_not_truth(tmp_path: Path):
    root = tmp_path / "html"
    root.mkdir()
    (root / "manual-core.html").write_text(NAV_PAGE, encoding="utf-8")
    valgrind = COLLECTIONS["valgrind"]
    assert build(tmp_path / "set", valgrind, root, ("manual-core",)) == ["manual-core"]
    truth = (tmp_path / "set" / "gt" / "manual-core.md").read_text(encoding="utf-8")
    assert truth.startswith("# 2. Using and understanding the Valgrind core\n"), truth
    assert "--tool=<toolname>" in truth and "Run the Valgrind tool" in truth, truth
    assert "Prev" not in truth and "History" not in truth and "v1.0" not in truth, truth
    import pymupdf

    with pymupdf.open(tmp_path / "set" / "pdf" / "manual-core.pdf") as doc:
        printed = doc[0].get_text()
    assert "Using and understanding" in printed and "Prev" not in printed and "v1.0" not in printed


TEXINFO_PAGE = """<!DOCTYPE html><html><body lang="en"><div class="section" id="The-Basics">
<div class="header"><p>Next: <a href="Simple-Example.html">Simple Example</a>, Up: <a href="Using-libffi.html">Using
libffi</a></p></div><hr>
<h3 class="section">2.1 The Basics</h3>
<p><code>libffi</code> assumes that you have a pointer to the function you wish to call.</p>
<dl class="def"><dt><span class="category">Function: </span><strong>ffi_status</strong> <em>ffi_prep_cif (ffi_cif
*cif)</em><a href="#x" class="copiable-anchor" style="visibility:hidden"> &para;</a></dt>
<dd><p>This initializes <var>cif</var> according to the given parameters.</p></dd></dl>
</div></body></html>"""


def test_texinfo_navigation_lines_are_neither_printed_nor_truth(tmp_path: Path):
    """makeinfo heads every node with a "Next: / Up:" line and a rule; like Valgrind's bars, they are
    navigation the print would repeat on every page."""
    root = tmp_path / "html"
    root.mkdir()
    (root / "The-Basics.html").write_text(TEXINFO_PAGE, encoding="utf-8")
    assert build(tmp_path / "set", COLLECTIONS["texinfo"], root, ("The-Basics",)) == ["The-Basics"]
    truth = (tmp_path / "set" / "gt" / "The-Basics.md").read_text(encoding="utf-8")
    assert truth.startswith("### 2.1 The Basics\n"), truth
    assert "Function:" in truth and "This initializes" in truth and "¶" not in truth, truth
    import pymupdf

    with pymupdf.open(tmp_path / "set" / "pdf" / "The-Basics.pdf") as doc:
        printed = doc[0].get_text()
    assert "The Basics" in printed and "Next:" not in printed and "Up:" not in printed, printed


NPM_PAGE = """<!DOCTYPE html><html><head><style>
body{font-family:'DejaVu Sans',sans-serif} #logobar .title{font-size:22px}
</style></head><body>
<div id="banner"><div id="rainbar"></div><div id="logobar"><div class="title">npm command-line interface</div></div></div>
<section id="content"><header class="title"><h1 id="npm-trust"><span>npm-trust</span>
<span class="version">@11.19.1</span></h1>
<span class="description">Manage trusted publishing relationships</span></header>
<section id="table_of_contents"><h2 id="table-of-contents">Table of contents</h2>
<div id="_table_of_contents"><ul><li><a href="#synopsis">Synopsis</a></li></ul></div></section>
<div id="_content"><h3 id="synopsis">Synopsis</h3><p>Note: This command is unaware of workspaces.</p>
<table><thead><tr><th>Flag</th><th>Default</th></tr></thead><tbody><tr><td><code>--file</code></td><td>null</td></tr>
</tbody></table></div>
<footer id="edit"><a href="https://github.com/npm/cli/edit">Edit this page on GitHub</a></footer>
</section></body></html>"""


def test_npm_banner_and_edit_link_are_neither_printed_nor_truth(tmp_path: Path):
    """npm's generator heads every page with the same banner and ends it with an "Edit this page" link:
    site furniture, hidden like the other collections' navigation. Its table of contents is the page's."""
    root = tmp_path / "html"
    (root / "commands").mkdir(parents=True)
    (root / "commands" / "npm-trust.html").write_text(NPM_PAGE, encoding="utf-8")
    name = document_name("commands/npm-trust")
    assert build(tmp_path / "set", COLLECTIONS["npm"], root, (name,)) == [name]
    truth = (tmp_path / "set" / "gt" / f"{name}.md").read_text(encoding="utf-8")
    assert truth.startswith("# npm-trust @11.19.1"), truth
    assert "## Table of contents" in truth and "### Synopsis" in truth and "| `--file` | null |" in truth, (
        truth
    )
    assert "command-line interface" not in truth and "Edit this page" not in truth, truth
    import pymupdf

    with pymupdf.open(tmp_path / "set" / "pdf" / f"{name}.pdf") as doc:
        printed = doc[0].get_text()
    assert "npm-trust" in printed and "command-line interface" not in printed and "Edit this" not in printed


def test_the_rest_is_the_pages_the_list_does_not_name_spread_evenly_without_stubs(tmp_path: Path):
    """``--rest N`` measures pages nobody read for the rules: never a listed page, never a redirect
    stub or an index, the same pages on every run."""
    root = tmp_path / "npm"
    for folder, names in (("commands", 12), ("using-npm", 4)):
        (root / folder).mkdir(parents=True)
        for k in range(names):
            (root / folder / f"page-{k:02d}.html").write_text("<html><body><p>x</p></body></html>")
    (root / "commands" / "moved.html").write_text('<html><head><meta http-equiv="refresh" content="0">')
    (root / "using-npm" / "index.html").write_text("<html><body><a href='#'>x</a></body></html>")
    npm = COLLECTIONS["npm"]
    listed = replace(npm, pages=("commands/page-00", "commands/page-01", "using-npm/page-03"))
    every = rest_pages(listed, root, 100)
    assert len(every) == 13, every  # 16 pages, less 3 listed; the stub and the index never count
    assert not set(every) & set(listed.pages) and "commands/moved" not in every, every
    five = rest_pages(listed, root, 5)
    assert len(five) == 5 and set(five) <= set(every), five
    at = [every.index(page) for page in five]
    assert at[0] == 0 and five[-1].startswith("using-npm/"), five  # spread over the whole rest
    assert {b - a for a, b in itertools.pairwise(at)} <= {2, 3}, at  # evenly
    assert rest_pages(listed, root, 5) == five  # the same pages on every run


RUSTDOC_PAGE = """<!DOCTYPE html><html><head><style>
body{font-family:'DejaVu Sans',sans-serif} @media print{nav.sidebar,.out-of-band{display:none}}
</style></head><body><nav class="sidebar"><a href="#">Module std::time</a></nav><main>
<section id="main-content"><div class="main-heading"><h1>Struct <span>Instant</span></h1>
<span class="out-of-band"><a class="src" href="#">Source</a></span></div>
<details class="toggle top-doc" open><summary>Expand description</summary>
<div class="docblock"><p>A measurement of a monotonically nondecreasing clock.</p></div></details>
<h2 id="implementations">Implementations</h2>
<details class="toggle method-toggle" open><summary><h4 class="code-header">pub fn now() -&gt; Instant</h4>
</summary><div class="docblock"><p>Returns an instant corresponding to now.</p></div></details>
<h2 id="trait-implementations">Trait Implementations</h2>
<details class="toggle implementors-toggle"><summary><h3 class="code-header">impl Clone for Instant</h3>
</summary><div class="impl-items"><p>Returns a duplicate of the value, folded away.</p></div></details>
</section></main></body></html>"""


def test_a_closed_details_prints_its_summary_only_and_so_does_the_truth(tmp_path: Path):
    """rustdoc folds trait implementations into closed ``<details>``: the print shows the summary line,
    not what it folds, though nothing in the folded part is ``display: none`` (round 33)."""
    root = tmp_path / "html"
    (root / "std" / "time").mkdir(parents=True)
    (root / "std" / "time" / "struct.Instant.html").write_text(RUSTDOC_PAGE, encoding="utf-8")
    name = document_name("std/time/struct.Instant")
    assert build(tmp_path / "set", COLLECTIONS["rustdoc"], root, (name,)) == [name]
    truth = (tmp_path / "set" / "gt" / f"{name}.md").read_text(encoding="utf-8")
    assert truth.startswith("# Struct Instant"), truth
    assert "pub fn now() -> Instant" in truth and "Returns an instant" in truth, truth  # open: all of it
    assert "impl Clone for Instant" in truth and "folded away" not in truth, truth  # closed: summary only
    assert "Source" not in truth and "Module std::time" not in truth, truth
    import pymupdf

    with pymupdf.open(tmp_path / "set" / "pdf" / f"{name}.pdf") as doc:
        printed = doc[0].get_text()
    assert "impl Clone for Instant" in printed and "folded away" not in printed, printed
    assert "Returns an instant" in printed, printed
