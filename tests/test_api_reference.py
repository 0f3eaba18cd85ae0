"""An API reference as libxml2's devhelp stylesheet writes it (libxslt's and libexslt's reference,
issue 30, round 32): a module's name as its title in lower case, a synopsis set in columns (type, name,
arguments) in a shaded box, each function's entry a title, its listing in a bordered box, a sentence
and a parameter list (names beside their notes), the entries parted by rules.

Why: printed by Chromium and read untouched, the first page was taken for a typescript (mostly
monospaced, few lines that read as code), so it lost its headings' size; the lower-case title was read
as a title's tail; a listing whose rows start in columns was read as a diagram's labels, one paragraph a
line; a page of entries was read as one table of rows one cell across; and a parameter list whose
longest name sits one space before its note came out as loose lines. Real text-layer engine and models;
the page is printed by Chromium, as a reader's browser prints it."""

from __future__ import annotations

import re

import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.schema import PageRequest
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

# The stylesheet's own rules; fonts and sizes are the browser's defaults, as in the reference.
STYLE = """<style>
.synopsis{background:#eeeeee;border:solid 1px #aaaaaa;padding:0.5em}
.programlisting{background:#eeeeff;border:solid 1px #aaaaff;padding:0.5em}
.variablelist{padding:4px;margin-left:3em} .variablelist td:first-child{vertical-align:top}
</style>"""

# (return type, name, arguments, what it does, parameters)
FUNCTIONS = [
    (
        "void",
        "xsltIf",
        ["xsltTransformContextPtr ctxt", "xmlNodePtr contextNode", "xmlNodePtr inst"],
        "Processes the xsl:if instruction on the source node.",
        [
            ("ctxt", "a XSLT process context"),
            ("contextNode", "the current node in the source tree"),
            ("inst", "the xsl:if instruction"),
            ("comp", "precomputed information"),
        ],
    ),
    (
        "void",
        "xsltLocalVariablePop",
        ["xsltTransformContextPtr ctxt", "int limitNumber", "int level"],
        "Pops all variable values at the given depth from the stack.",
        [
            ("ctxt", "the transformation context"),
            ("limitNumber", "number of variables which should remain"),
            ("level", "the depth in the tree of the template"),
            ("Returns", "nothing"),
        ],
    ),
    (
        "int",
        "xsltLocalVariablePush",
        ["xsltTransformContextPtr ctxt", "xsltStackElemPtr variable", "int level"],
        "Places the variable onto the local variable stack.",
        [
            ("ctxt", "the transformation context"),
            ("variable", "variable to be pushed to the variable stack"),
            ("level", "new value for the level of the variable"),
            ("Returns", "0 for success, -1 for any error"),
        ],
    ),
    (
        "xmlNodeSetPtr",
        "xsltGetKey",
        ["xsltTransformContextPtr ctxt", "const xmlChar * name", "const xmlChar * value"],
        "Looks up a key of the current source document.",
        [
            ("ctxt", "an XSLT transformation context"),
            ("name", "the key name or NULL"),
            ("value", "the key value to look for"),
            ("Returns", "the nodeset resulting from the query or NULL"),
        ],
    ),
]


def _signature(ret: str, name: str, args: list[str], end: str) -> str:
    """A C signature as the stylesheet sets it: tabs between type and name and before the arguments,
    the next arguments under the first."""
    rest = "".join(f", \n\t\t\t\t\t {a}" for a in args[1:])
    return f"{ret}\t{name}\t\t\t({args[0]}{rest}){end}"


def _entry(ret: str, name: str, args: list[str], note: str, params: list[tuple[str, str]]) -> str:
    rows = "".join(
        f"<tr><td><span><i><tt>{p}</tt></i>:</span></td><td>{what}</td></tr>" for p, what in params
    )
    return (
        f"<h3>{name} ()</h3><pre class=programlisting>{_signature(ret, name, args, '')}</pre>"
        f"<p>{note}</p><div class=variablelist><table border=0><tbody>{rows}</tbody></table></div><hr/>"
    )


PAGE = (
    STYLE
    + "<h2>keys</h2><p>keys - interface for the key matching used in key() and template matches.</p>"
    + "<p>Author(s): Daniel Veillard</p><h2>Synopsis</h2><pre class=synopsis>#define NODE_IS_KEYED;\n"
    + "\n".join(_signature(r, n, a, ";") for r, n, a, _, _ in FUNCTIONS)
    + "</pre><h2>Description</h2><h2>Details</h2>"
    + "".join(_entry(*f) for f in FUNCTIONS * 2)
)


@pytest.fixture(scope="module")
def printed(printer) -> tuple[str, list[bool]]:
    """The reference's Markdown, and for each entry whether its parameter list stands on one page
    (a list a page break cuts leaves two or fewer rows on each page: too few to be told a table)."""
    import pymupdf

    pdf = printer("api-reference", PAGE)
    engine = TextLayerEngine()
    with pymupdf.open(pdf) as doc:
        requests: list[PageRequest] = [
            pdf_page_request(pdf, k, 144, prompt="") for k in range(doc.page_count)
        ]
        found = [(k, ln) for k, page in enumerate(doc) for ln in page.get_text().splitlines()]
    md = "\n\n".join(blocks_to_markdown(out.blocks) for out in engine.predict_batch(requests))
    pages = iter(found)
    whole = []
    for *_, params in FUNCTIONS * 2:
        first = next(k for k, ln in pages if ln.strip() == params[0][1])
        last = next(k for k, ln in pages if ln.strip().endswith(params[-1][1]))
        whole.append(first == last)
    return md, whole


@pytest.fixture(scope="module")
def markdown(printed) -> str:
    return printed[0]


def _fences(md: str) -> list[str]:
    return re.findall(r"```\n(.*?)```", md, re.S)


def test_the_modules_name_in_lower_case_heads_the_page_over_its_sections(markdown):
    assert markdown.lstrip().startswith("## keys\n"), markdown[:200]
    assert_in_order(markdown, ["## Synopsis", "## Description", "## Details", "### xsltIf ()"])
    assert "Description Details" not in markdown


def test_a_synopsis_set_in_columns_is_one_listing_with_its_columns(markdown):
    fences = _fences(markdown)
    synopsis = fences[0].splitlines()
    assert synopsis[0] == "#define NODE_IS_KEYED;" and len(synopsis) == 1 + 3 * len(FUNCTIONS), fences[0]
    for ret, name, args, _, _ in FUNCTIONS:
        line = next(ln for ln in synopsis if f" {name} " in ln)
        assert line.startswith(ret) and line.rstrip().endswith(f"({args[0]},"), line


def test_each_entry_keeps_its_title_its_listing_and_its_parameter_list(printed):
    markdown, whole = printed
    assert sum(whole) >= len(whole) - 2, whole  # the page holds most lists whole
    assert markdown.count("<table>") == sum(whole), markdown
    entries = markdown.split("### ")[1:]
    assert len(entries) == len(whole)
    for entry, (ret, name, args, note, params), one_page in zip(entries, FUNCTIONS * 2, whole, strict=True):
        assert entry.startswith(f"{name} ()\n")
        listing = _fences(entry)[0]
        assert listing.startswith(ret) and all(a in listing for a in args), listing
        assert_in_order(entry, ["```", note])
        assert_in_order(entry[entry.index(note) + len(note) :], [what for _, what in params])
        if one_page:
            table = entry[entry.index("<table>") : entry.index("</table>")]
            cells = re.findall(r"<td>(.*?)</td>", table)
            assert cells == [c for p, what in params for c in (f"{p}:", what)], table
    assert not re.search(r"<t[dh]>[^<]*\(\)", markdown), "no entry's title in a table's cell"
