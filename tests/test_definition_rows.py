"""Terms beside or over their descriptions, as two producers nobody here had read print them (issue 30,
round 35; real text-layer engine, pages printed by Chromium):
- Ninja's manual (AsciiDoc through DocBook's XSL) sets its tools as a two-column table without rules: a
  name in code, its description beside it, wrapping, with listings inside. Read as two columns of the
  page, every name came before every description; now each name is a side head of its description,
  a line of text (not a listing of one line) right before it.
- Expat's reference (written by hand) opens with its contents in link blue, the markers black, and sets
  its build options as bold code over a description set in: the markers went unseen (no black text on
  the page) and the options came out as headings."""

from __future__ import annotations

from tests.factories import heading_texts, pages_markdown

CSS = (
    "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:10.8pt;line-height:1.5;margin:0 2em}"
    "code,pre{font-family:'DejaVu Sans Mono',monospace} td{vertical-align:top;padding:0 2em 0.8em 0}"
    "a{color:#3173de;font-weight:bold;text-decoration:none} dt code{font-weight:bold;font-size:0.82em}"
    "</style>"
)
TOOLS = {
    "query": "dump the inputs and outputs of a given target.",
    "browse": (
        "browse the dependency graph in a web browser. Clicking a file focuses the view on that file, "
        "showing inputs and outputs. This feature requires a Python installation and opens a browser."
    ),
    "graph": (
        "output a file in the syntax used by graphviz, an automatic graph layout tool. If no target is "
        "given, it writes a graph for all root targets of the build."
    ),
    "targets": (
        "output a list of targets either by rule or by depth. If used like this it prints the list of "
        "targets using the given rule to be built, and if no rule is given, the source files."
    ),
    "commands": "given a list of targets, print the commands which may be used to rebuild those targets.",
}


def test_a_definition_list_set_as_a_table_reads_term_by_term(textlayer_engine, printer):
    rows = "".join(f"<tr><td><code>{t}</code></td><td><p>{d}</p></td></tr>" for t, d in TOOLS.items())
    html = (
        f"{CSS}<h2>Extra tools</h2><p>The flag runs some tools that we have found useful during "
        f"development. The current tools are:</p><table>{rows}</table><p>That is all of them.</p>"
    )
    md = pages_markdown(textlayer_engine, printer("ninja-tools", html))[0]
    flat = " ".join(md.split())
    at = [flat.find(f"{term} {text}") for term, text in TOOLS.items()]
    assert all(k >= 0 for k in at) and at == sorted(at), md  # each name, then its description, in turn
    paragraphs = [" ".join(p.split()) for p in md.split("\n\n")]
    for term, text in TOOLS.items():  # the name a line of its own, the description's lines one paragraph
        assert paragraphs[paragraphs.index(term) + 1] == text, md


def test_a_contents_list_in_link_blue_with_black_markers_keeps_its_items(textlayer_engine, printer):
    """The contents page holds no black text; the document's body is black, and so are the markers."""
    groups = {
        "Parsing Functions": ["XML_Parse", "XML_ParseBuffer", "XML_GetBuffer", "XML_StopParser"],
        "Handler Setting Functions": ["XML_SetStartElementHandler", "XML_SetEndElementHandler"],
        "Error Reporting Functions": ["XML_GetErrorCode", "XML_ErrorString", "XML_GetCurrentLineNumber"],
    }
    items = "".join(
        f"<li><a href='#'>{g}</a><ul>{''.join(f'<li><a href=#>{n}</a></li>' for n in names)}</ul></li>"
        for g, names in groups.items()
    )
    prose = "<p>Expat is a library, written in C, for parsing XML documents as a stream of events.</p>" * 40
    html = f"{CSS}<ul>{items}</ul><div style='break-before:page'>{prose}</div>"
    md = pages_markdown(textlayer_engine, printer("expat-contents", html))[0]  # its text all in links
    for group, names in groups.items():
        assert f"- {group}" in md, md
        for name in names:
            assert f"    - {name}" in md, md


def test_bold_code_over_a_description_set_in_is_a_term_not_a_heading(textlayer_engine, printer):
    options = {
        "XML_DTD": "Include support for using and reporting DTD-based content in the parser's events.",
        "XML_NS": "When defined, support for the Namespaces in XML specification is included.",
        "XML_UNICODE": "When defined, character data reported to the application is encoded in UTF-16.",
        "XML_STATIC": "When defined, the library is built for static linking into the application.",
    }
    entries = "".join(f"<dt><code>{t}</code></dt><dd>{d} {d}</dd>" for t, d in options.items())
    html = (
        f"{CSS}<h2>Building Expat</h2><p>The definition of these symbols does not affect the set of "
        f"entry points, only the behavior of the API. The symbols are:</p><dl>{entries}</dl>"
    )
    md = pages_markdown(textlayer_engine, printer("expat-options", html))[0]
    assert heading_texts(md) == ["Building Expat"], md
    for term, text in options.items():
        assert term in md and text in md, md
        assert f"```\n{term}" not in md, md  # a term, not a listing of one line


HUG = "padding:0"  # gtk-doc's cells: the note a space after its name


def test_keyed_lines_of_a_parameter_table_are_an_entry_each(textlayer_engine, printer):
    """gtk-doc sets a function's parameters as a table whose name cells hug their names (libxslt's
    reference, round 36): it prints as "ctxt: the XPath Parser context" over "nargs: …", one line each,
    and those lines ran together as one paragraph. So did a header's "Author(s): …" over "Since: …"."""
    params = {"ctxt": "the XPath Parser context", "nargs": "the number of arguments"}
    rows = "".join(
        f"<tr><td style='{HUG}'><em><code>{name}</code></em>:</td><td style='{HUG}'>&nbsp;{note}</td></tr>"
        for name, note in params.items()
    )
    prose = "Implement the document() XSLT function node-set document(object, node-set?) for the caller."
    html = (
        f"{CSS}<h3>xsltDocumentFunction ()</h3><p>{prose}</p><table style='border-spacing:0'>{rows}</table>"
        f"<p>{prose}</p><p>Author(s): Daniel Veillard</p><p style='margin-top:0'>Since: 1.1.26</p>"
    )
    md = pages_markdown(textlayer_engine, printer("keyed-lines", html))[0]
    paragraphs = [" ".join(p.split()) for p in md.split("\n\n")]
    for name, note in params.items():
        assert f"{name}: {note}" in paragraphs, md
    assert "Author(s): Daniel Veillard" in paragraphs and "Since: 1.1.26" in paragraphs, md
