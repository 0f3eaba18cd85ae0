"""Documentation sites printed by a browser (issue 30, round 27): a language guide's pages hold more
code than prose, its listings a size smaller than the text, and set notes in indented panels under a
bold label. Real text-layer engine, pages printed by Chromium, laid out as mdBook lays out Rust's books:
the prose sets the body size, the listings do not, and a panel's "Note" is no section."""

from __future__ import annotations

from ocr_app.structure.headings import RowContext, heading_level
from ocr_app.structure.lines import DocStyle, LayoutConfig, Row, TextLine
from tests.factories import heading_texts, pages_markdown

CSS = (
    "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:12pt;line-height:1.45}"
    "h1{font-size:24pt} h2{font-size:18pt} h3{font-size:14pt}"
    "pre{font-family:'DejaVu Sans Mono',monospace;font-size:10.5pt;background:#f6f7f6;padding:2mm}"
    "blockquote{margin:4mm 0 4mm 2mm;padding:1mm 0 1mm 9mm;border-left:1mm solid #0969da}"
    ".label{font-weight:600;color:#0969da}</style>"
)
PROSE = [
    "A module is a container for zero or more items, and its path names every item it holds.",
    "Items declared in a block are visible only inside that block, whatever order they come in.",
    "The attribute may be applied to a module declared in a file of its own, or inside another one.",
]


def _listing(k: int) -> str:
    lines = [f"let count_{k}_{n} = parse(&input, {n}).unwrap_or(0);" for n in range(8)]
    return "<pre>" + "\n".join(lines) + "</pre>"


def _guide() -> str:
    """Three sections; each a heading, two sentences of prose and a listing: more code than prose (as on
    a page of Rust's reference: 4,800 characters of code, 3,300 of prose)."""
    parts = [f"{CSS}<h1>Modules</h1>"]
    for k, title in enumerate(["Module source files", "The path attribute", "Attributes on modules"]):
        parts.append(f"<h2>{title}</h2><p>{PROSE[k]}</p>{_listing(k)}<p>{PROSE[(k + 1) % 3]}</p>")
    return "".join(parts)


def test_prose_sets_the_body_where_code_outweighs_it(textlayer_engine, printer):
    """Before: the listings (10.5 pt, most of the characters) set the document's body size; every line of
    12 pt prose was then "larger than the body", and each came out as a heading."""
    md = "\n".join(pages_markdown(textlayer_engine, printer("guide", _guide())))
    heads = heading_texts(md)
    assert heads == ["Modules", "Module source files", "The path attribute", "Attributes on modules"], md
    for sentence in PROSE:
        assert sentence in md and f"# {sentence}" not in md, md
    assert md.count("```") >= 6, md  # the listings stay code


def test_a_panels_label_is_no_section(textlayer_engine, printer):
    """An admonition: a bold, coloured "Note" set in a panel indented under a bar, its text under it.
    Before: a body-size bold line standing alone, so a heading (``####``) that cut the section in two."""
    note = "The attribute is ignored when the module is declared inline, inside braces."
    html = (
        f"{CSS}<h1>Modules</h1><h2>The path attribute</h2><p>{PROSE[2]}</p>"
        f"<blockquote><p class=label>Note</p><p>{note}</p></blockquote><p>{PROSE[1]}</p>"
        f"<h2>Attributes on modules</h2><p>{PROSE[0]}</p>"
    )
    md = pages_markdown(textlayer_engine, printer("note", html))[0]
    assert heading_texts(md) == ["Modules", "The path attribute", "Attributes on modules"], md
    assert "Note" in md and note in md, md


def _row(text: str, x0: float) -> Row:
    item = TextLine(text=text, box=(x0, 100, x0 + 80, 112), size=12.0, bold=True, weight=600)
    return Row(items=[item])


def test_an_indented_bold_label_at_body_size_is_no_heading_the_same_label_at_the_edge_is():
    """The rule itself: set in from the section's edge, a bold line at body size is a label; at the edge
    (the same line), a run-in heading, as before. Right-to-left rows keep the older rules."""
    style = DocStyle(body_size=12.0, body_weight=400)
    config = LayoutConfig()
    assert heading_level(_row("Note", 40), 12.0, config, style, RowContext(aligned=False)) == 0
    assert heading_level(_row("Note", 10), 12.0, config, style, RowContext(aligned=True)) > 0
    assert heading_level(_row("ملاحظة مهمة", 40), 12.0, config, style, RowContext(aligned=False)) > 0


def test_a_listings_caption_is_no_heading(textlayer_engine, printer):
    """Under a listing, its bold caption ("Listing 8-15: ...", as books on programming set it) is a
    caption, as "Table 1:" is. Before: a bold line at body size standing alone, so a heading."""
    caption = "Listing 8-15: Appending a string slice to a String"
    html = (
        f"{CSS}<h1>Storing text</h1><h2>Updating a String</h2><p>{PROSE[0]}</p>{_listing(1)}"
        f"<p><strong>{caption}</strong></p><p>{PROSE[2]}</p>"
    )
    md = pages_markdown(textlayer_engine, printer("listing", html))[0]
    assert heading_texts(md) == ["Storing text", "Updating a String"], md
    assert caption in md, md


def test_a_small_anchor_mark_before_a_heading_does_not_shrink_it(textlayer_engine, printer):
    """The Reference sets a grey "[*]" anchor in small type before each heading and paragraph. Before:
    the line's size was the mean of all its characters', the mark's three among them, and an ``<h3>``
    at 14 pt over 12 pt text fell under the heading ratio: "Logical not" and its siblings were text."""
    mark = "<span style='font-size:8pt;color:#999;font-weight:normal'>[*]</span> "
    titles = ["Logical not", "Logical or", "Comparisons"]
    body = "".join(f"<h3>{mark}{t}</h3><p>{mark}{PROSE[k]}</p>" for k, t in enumerate(titles))
    html = f"{CSS}<h1>{mark}Boolean type</h1><p>{PROSE[0]}</p><h2>{mark}Operations</h2>{body}"
    md = pages_markdown(textlayer_engine, printer("anchors", html))[0]
    heads = [h.replace("<sup>[*]</sup>", "").replace("[*]", "").strip() for h in heading_texts(md)]
    assert heads == ["Boolean type", "Operations", *titles], md
