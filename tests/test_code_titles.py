"""Reference pages as documentation generators print them (issue 30, round 30; npm's CLI docs, Node.js,
the Rust Reference): a heading that is a flag in code, a listing on a panel with a rounded border and
one with blank lines, a list of command names behind drawn bullets, a title over a contents page in
small code, a flag table of long descriptions, a raised anchor mark beside a title. Real text-layer
engine; pages printed by Chromium with the style sheet npm's generator writes (trimmed), plus unit
tests of ``headings.code_titles``."""

from __future__ import annotations

from ocr_app.structure.headings import code_titles
from ocr_app.structure.lines import Row, TextLine
from tests.factories import heading_texts, pages_markdown

CSS = (
    "<style>body{font-family:'Liberation Sans',sans-serif;color:#24292e;line-height:1.5;font-size:16px}"
    "pre{margin:1em 0;padding:1em;border:solid 1px #e1e4e8;border-radius:6px;background:#f6f8fa}"
    "code{font-family:'Liberation Mono',monospace;font-size:85%;padding:.2em .4em;background:#f6f8fa}"
    "pre>code{padding:0;background:inherit} h1,h2,h3{font-weight:600} #content{padding:0 4em}"
    "#toc li{font-size:.9em} #toc ul{list-style-type:none}</style>"
)
PROSE = (
    "Sets the strategy for installing packages in the node modules folder of the project, where the "
    "default keeps every package that is not duplicated at the top level of the tree."
)
FLAGS = ["install-strategy", "legacy-bundling", "global-style", "strict-peer-deps"]
LISTING = ["$ cd ./my/npm/project", "$ npm install", "added 154 packages in 10s", "$ ls | grep package-lock"]
EVENTS = ["preinstall", "install", "postinstall", "prepare"]


def _flag(name: str) -> str:
    return f"<h4><code>{name}</code></h4><ul><li>Default: false</li><li>Type: Boolean</li></ul><p>{PROSE}</p>"


def _page() -> str:
    plain = "".join(f"<li>{t}</li>" for t in ("Synopsis", "Description", "Example", "Configuration"))
    toc = plain + "<ul>" + "".join(f"<li><code>{f}</code></li>" for f in FLAGS * 3) + "</ul><li>See Also</li>"
    return (
        f"{CSS}<section id='content'><h1>npm-ci <span style='font-size:.8em'>@11.19.1</span></h1>"
        f"<p>Clean install a project</p><section id='toc'><h2 style='font-size:1.17em'>Table of contents</h2>"
        f"<ul>{toc}</ul></section><h3 style='page-break-before:always'>Example</h3>"
        f"<p>Make sure you have a package-lock and an up-to-date install:</p><pre><code>"
        + "\n".join(LISTING)
        + f"</code></pre><p>{PROSE}</p><h3>Description</h3><p>{PROSE}</p><h3>Life Cycle Operation Order</h3><h4><code>npm ci</code></h4><ul>"
        + "".join(f"<li><code>{e}</code></li>" for e in EVENTS)
        + f"</ul><p>{PROSE}</p><h3>Synopsis</h3><pre><code>npm ci</code></pre><p>{PROSE}</p>"
        + "<h3><code>npm trust github</code></h3><p>Create a trusted relationship with GitHub Actions</p>"
        + f"<h4>Synopsis</h4><pre><code>npm trust github [package] --file</code></pre><p>{PROSE}</p>"
        + "<h3>Configuration</h3>"
        + "".join(_flag(f) for f in FLAGS)
        + "</section>"
    )


def test_github_styled_reference_reads_as_its_outline(textlayer_engine, printer):
    """Before: each flag's heading was a listing of one line (```install-strategy```), the shell
    session on its rounded panel was loose text (read as a diagram's labels), the events under
    "npm ci" were a listing with the heading inside it, the title sat at the sections' level, and a
    subcommand's bold "Synopsis" was taken for an entry of the contents list."""
    md = "\n".join(pages_markdown(textlayer_engine, printer("npm-like", _page())))
    heads = heading_texts(md)
    for name in [*FLAGS, "npm ci", "Configuration", "Example", "npm trust github"]:
        assert name in heads, (name, heads)
    # the contents name "Synopsis": the subcommand's own bold "Synopsis" is a heading all the same
    assert heads.count("Synopsis") == 2, heads
    assert md.lstrip().startswith("# npm-ci"), md[:300]
    assert "Clean install a project" not in heads, heads
    assert "## Configuration" in md and "### install-strategy" in md, md
    assert "```\n" + "\n".join(LISTING) + "\n```" in md, md
    for event in EVENTS:
        assert f"- {event}\n" in md, (event, md)
    assert "```\ninstall-strategy\n```" not in md and "```\nnpm ci\n```\n\n- pre" not in md, md


def _line(text: str, y: float, *, bold: bool, mono: bool = True) -> Row:
    item = TextLine(text, (72.0, y, 72.0 + 6 * len(text), y + 10), 10.0, bold=bold, mono=mono)
    return Row([item])


def test_code_titles_are_bold_code_lines_standing_alone():
    """Unit: a bold line of code with no listing line beside it is a heading; the same line inside a
    listing, a plain line of code alone, a statement's end and a bold line of more than sixteen words
    are not."""
    title = _line("install-strategy", 100, bold=True)
    rows = [_line("Sets the strategy for installing", 80, bold=False, mono=False), title]
    rows += [_line("Default: false", 120, bold=False, mono=False)]
    listing = [_line("fn main() {", 200, bold=False), _line("main_loop", 212, bold=True)]
    alone = [_line("npm ci", 300, bold=False), _line("exit(1);", 330, bold=True)]
    # a signature of eight words heads its method (rustdoc, round 36); a bold line of seventeen is code
    signature = _line("fn fmt(&self, f: &mut Formatter<'_>) -> Result<(), Error>", 360, bold=True)
    words = (
        "let value = compute(first, second, third, fourth, fifth, sixth, seventh, eighth) + more + and + more"
    )
    long_line = [_line(words, 400, bold=True)]
    every = rows + listing + alone + [signature] + long_line
    listings = {id(r) for r in every if r.items[0].mono}
    assert code_titles(every, listings) == {id(title), id(signature)}


TABLE_CSS = (
    "<style>table{width:100%;border-radius:6px;border:1px solid #e1e4e8;border-collapse:separate;"
    "border-spacing:0} thead{background:#f6f8fa} th,td{padding:.75em;text-align:left;"
    "border-right:1px solid #e1e4e8;border-bottom:1px solid #e1e4e8} th{font-weight:600}</style>"
)
TAG_HELP = (
    "If you ask npm to install a package and don't tell it a specific version, then it will install the "
    "specified tag. It is the tag added to the package version specified in the dist-tag command, if no "
    "explicit tag is given. When used by the diff command, this is the tag used to fetch the tarball that "
    "will be compared with the local files by default. If used in the publish command, this is the tag "
    "that will be added to the package submitted to the registry."
)


def test_flag_table_of_two_rows_with_a_paragraph_is_a_table(textlayer_engine, printer):
    """Before: a ruled grid of three rows, one cell a paragraph (of more than 80 words), was taken for
    a frame around prose (a back cover's boxed columns, a framed text box) and read as loose lines,
    although a row of column heads tops it: npm's flag tables, each page's piece of them when tall
    rows break over pages."""
    rows = [("--tag", '"latest"', "String", TAG_HELP), ("--access", "'public'", "null", "Who can install it")]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    html = (
        f"{CSS}{TABLE_CSS}<section id='content'><h3>Flags</h3><p>{PROSE}</p><table><thead><tr>"
        "<th>Flag</th><th>Default</th><th>Type</th><th>Description</th></tr></thead>"
        f"<tbody>{body}</tbody></table><p>{PROSE}</p></section>"
    )
    md = pages_markdown(textlayer_engine, printer("flag-table", html))[0]
    assert "<th>Flag</th><th>Default</th><th>Type</th><th>Description</th>" in md, md
    assert "<td>--tag</td><td>&quot;latest&quot;</td>" in md or '<td>--tag</td><td>"latest"</td>' in md, md
    assert TAG_HELP.split(",")[0] in md.split("<table>")[1], md


def test_a_listing_with_blank_lines_is_one_block_that_keeps_them(textlayer_engine, printer):
    """Node.js sets its listings at 1.85 times their type's size: a blank line left a gap of 2.6
    sizes, over the 2.5 that kept a listing whole, so each paragraph of the example was a block of its
    own and the blank lines were lost."""
    code = ["import { fileURLToPath } from 'node:url';", "", "const name = fileURLToPath(import.meta.url);"]
    code += ["", "new URL('file:///C:/path/').pathname;", "fileURLToPath('file:///C:/path/');"]
    html = (
        f"{CSS}<section id='content'><p>{PROSE}</p><pre style='line-height:1.85'><code>"
        + "\n".join(code)
        + f"</code></pre><p>{PROSE}</p></section>"
    )
    md = pages_markdown(textlayer_engine, printer("spaced-listing", html))[0]
    assert "```\n" + "\n".join(code) + "\n```" in md, md


def test_a_raised_anchor_mark_is_no_part_of_a_heading(textlayer_engine, printer):
    """The Rust Reference prints a raised "[*]" link beside each rule's title: every such heading read
    "<sup>[*]</sup> The inline attribute". A raised mark of letters or digits (a footnote's) stays."""
    html = (
        f"{CSS}<section id='content'><h2><sup>[*]</sup> The inline attribute</h2><p>{PROSE}</p>"
        f"<h2>Results by region<sup>2</sup></h2><p>{PROSE}</p></section>"
    )
    md = pages_markdown(textlayer_engine, printer("anchor-marks", html))[0]
    heads = heading_texts(md)
    assert "The inline attribute" in heads, heads
    assert any(h.startswith("Results by region") and "2" in h for h in heads), heads


def test_a_title_after_its_grey_anchor_is_bold(textlayer_engine, printer):
    """The Rust Reference sets a grey "[*]" link, smaller and regular, before each rule's bold title at
    body size: the line read as regular, and "Integer literals" was a paragraph. Trailing
    punctuation in the body's weight ("**longer**!") still makes its line regular."""
    anchor = "<span style='color:#999;font-size:.8em;font-weight:normal'>[*]</span>"
    html = (
        f"{CSS}<section id='content'><h3>Literals</h3><p>{PROSE}</p>"
        f"<h4 style='font-size:1em'>{anchor} Integer literals</h4><p>{PROSE}</p>"
        f"<h4 style='font-size:1em'>{anchor} Floating-point literals</h4><p>{PROSE}</p>"
        f"<p>{PROSE} It is the one thing that remembered it lived for</p><p><b>longer</b>!</p></section>"
    )
    md = pages_markdown(textlayer_engine, printer("anchored-titles", html))[0]
    heads = heading_texts(md)
    assert "Integer literals" in heads and "Floating-point literals" in heads, heads
    assert not any("longer" in h for h in heads), heads


def test_code_that_wraps_in_its_cell_keeps_its_row_whole(textlayer_engine, printer):
    """Node.js's encodings table: a code value wraps in its narrow cell ("'iso-8859-" over "2'"), each
    line on a grey ground of its own. The table finder ruled a row with the grounds' edges too, so the
    row came out in two and its neighbour cell spanning both (Node's), or the grid read as no table
    at all (this page). Grounds of inline code rule nothing."""
    css = (
        "<style>table{border-collapse:collapse;width:100%} th,td{border:1px solid #aaa;padding:4px;"
        "text-align:left;vertical-align:top} td:first-child{width:52px}"
        "td code{font-family:'Liberation Mono',monospace;background:#f2f2f2;padding:1px 3px}</style>"
    )
    rows = [("iso-8859-2", "csisolatin2, iso-ir-101, latin2"), ("iso-8859-3", "csisolatin3, latin3")]
    rows += [("ibm866", "866, cp866"), ("koi8-r", "cskoi8r, koi, koi8")]
    body = "".join(f"<tr><td><code>{a}</code></td><td>{b}</td></tr>" for a, b in rows)
    html = (
        f"{CSS}{css}<section id='content'><p>{PROSE}</p><table><thead><tr><th>Encoding</th>"
        f"<th>Aliases</th></tr></thead><tbody>{body}</tbody></table><p>{PROSE}</p></section>"
    )
    md = pages_markdown(textlayer_engine, printer("wrapped-code", html))[0]
    assert "rowspan" not in md, md
    assert md.count("<tr>") == len(rows) + 1, md
    assert "<td>iso-8859-2</td>" in md.replace("iso-8859- 2", "iso-8859-2"), md


def test_items_whose_words_are_mostly_coloured_links_keep_their_drawn_bullets(textlayer_engine, printer):
    """Node.js's parameter lists: "• message <string> | <Error>", the name in code and the types as
    green links, the disc in the text's grey. The line's colour (its links' green) did not match the
    disc, so the item lost its marker and ran into the item before (on Node's page, two such items
    were read as a listing and the third ran into the next paragraph)."""
    link = "<a style='color:#3e7a38;text-decoration:none' href='#'>&lt;{}&gt;</a>"
    params = [("actual", "any"), ("expected", "any"), ("message", "string")]
    items = "".join(
        f"<li><code>{name}</code> {link.format(kind)}"
        + (f" | {link.format('Error')}" if name == "message" else "")
        + "</li>"
        for name, kind in params
    )
    html = (
        f"{CSS}<section id='content' style='color:#333'><h3>assert.deepEqual(actual, expected)</h3>"
        f"<ul>{items}</ul><p>An alias of <code>assert.deepStrictEqual()</code>.</p><p>{PROSE}</p></section>"
    )
    md = pages_markdown(textlayer_engine, printer("coloured-items", html))[0]
    assert "- actual <any>\n- expected <any>\n- message <string> | <Error>\n" in md, md
    assert "```" not in md, md


def test_code_drawn_in_a_type3_font_is_told_by_its_typewriter_pitch():
    """Chromium draws mdBook's inline code in Type3 fonts, which carry no fixed-pitch flag: their
    grounds ruled a table's header apart (cargo's yank table) because no span under them read as
    code. A Type3 span advancing 0.6 em a character is code; a proportional one, or a named face at
    that pitch, is not told so here."""
    from ocr_app.engines.page_tables import _fixed_pitch

    def span(font: str, text: str, advance: float) -> dict:
        return {
            "font": font,
            "text": text,
            "size": 10.5,
            "bbox": (281.0, 208.2, 281.0 + advance * len(text), 216.0),
        }

    assert _fixed_pitch(span("Type3 (19 0 R)", '"1.5.0"', 6.3))
    assert _fixed_pitch(span("Type3 (17 0 R)", "=", 6.3))
    assert not _fixed_pitch(span("Type3 (7 0 R)", "Return", 5.2))  # proportional
    assert not _fixed_pitch(span("OpenSans-Regular", "MMMM", 6.3))  # not Type3: its flags say


def test_a_type3_span_sets_no_weight_beside_the_upright_words_that_carry_the_line():
    """The Rust book's "Handling Multiple Conditions with `else if`": the words in bold, the code in a
    Type3 font, which carries no weight; the title was a regular line, so a paragraph. The code says
    nothing of the line's weight where upright words in another font hold most of its letters. An
    option's term, "--color" beside its italic placeholder "when", and a title mostly in code keep
    their Type3 spans (the terms stay terms, the title's lines keep one weight)."""
    from ocr_app.engines.pdf_spans import _past_type3

    def span(font: str, text: str, flags: int = 0) -> tuple[dict, str]:
        return {"font": font, "flags": flags}, text

    heading = [
        span("OpenSans-Bold", "Handling Multiple Conditions with ", 16),
        span("Type3 (7 0 R)", "else if"),
    ]
    assert _past_type3(heading) == heading[:1]
    term = [span("Type3 (7 0 R)", "--color"), span("OpenSans-BoldItalic", " when", 16 | 2)]
    assert _past_type3(term) == term
    title = [span("Type3 (7 0 R)", "thumbv8m.main-none-eabi"), span("OpenSans-Bold", " and", 16)]
    assert _past_type3(title) == title


def test_bold_code_a_line_apart_heads_and_subheads_but_bold_code_at_a_listings_pitch_is_a_listing():
    """rustdoc sets an impl and its first method as two bold code lines a line apart ("impl Clone for
    Instant" over "fn clone(&self) -> Instant"): both headings (round 33). Bold code lines at a
    listing's pitch ("npm ci" over "npm test") stay a listing."""
    impl = _line("impl Clone for Instant", 100, bold=True)
    method = _line("fn clone(&self) -> Instant", 120, bold=True)  # 10 below the impl: a line apart
    text = _line("Returns a duplicate of the value.", 140, bold=False, mono=False)
    listing = [_line("npm ci", 200, bold=True), _line("npm test", 213, bold=True)]  # 3 apart
    every = [impl, method, text, *listing]
    listings = {id(r) for r in every if r.items[0].mono}
    assert code_titles(every, listings) == {id(impl), id(method)}
