"""An API reference as libxml2's devhelp stylesheet writes it (libxslt's and libexslt's reference,
issue 30, round 32): a module's name as its title in lower case, a synopsis set in columns (type, name,
arguments) in a shaded box, each function's entry a title, its listing in a bordered box, a sentence
and a parameter list (names beside their notes), the entries parted by rules.

Why: printed by Chromium and read untouched, the first page was taken for a typescript (mostly
monospaced, few lines that read as code), so it lost its headings' size; the lower-case title was read
as a title's tail; a listing whose rows start in columns was read as a diagram's labels, one paragraph a
line; a page of entries was read as one table of rows one cell across; and a parameter list whose
longest name sits one space before its note came out as loose lines; "Description" over "Details" (an
empty section) was one heading. Real text-layer engine and models; the pages are printed by Chromium,
as a reader's browser prints it. Each rule the fixes added has a test of its own below, on the rows
and cells it reads."""

from __future__ import annotations

import re

import pymupdf
import pytest

from ocr_app.schema import PageRequest
from ocr_app.structure import slot_columns, table_bounds, table_slots
from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import SURVEY_TEXT, assert_in_order, heading_texts, pdf_page_request, saved_markdown

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


# Functions the synopsis lists whose entries are left out here: they make the first page mostly
# monospaced, as a module's long synopsis does.
MORE = [
    (ret, f"{name}{k}", args, "", [])
    for k in range(2)
    for ret, name, args, _, _ in FUNCTIONS
    if name != "xsltGetKey"
]


def _page(entries: list, synopsis: list) -> str:
    return (
        STYLE
        + "<h2>keys</h2><p>keys - interface for the key matching used in key() and template matches.</p>"
        + "<p>Author(s): Daniel Veillard</p><h2>Synopsis</h2><pre class=synopsis>#define NODE_IS_KEYED;\n"
        + "\n".join(_signature(r, n, a, ";") for r, n, a, _, _ in synopsis)
        + "</pre><h2>Description</h2><h2>Details</h2>"
        + "".join(_entry(*f) for f in entries)
    )


PAGE = _page(FUNCTIONS * 2, FUNCTIONS + MORE)
# Parameter lists of three rows, too few to be told a table by the words alone: their names beside
# their notes show a gutter that the listings' columns line up with.
SHORT = [(ret, name, args, note, params[:3]) for ret, name, args, note, params in FUNCTIONS]


@pytest.fixture(scope="module")
def printed(printer, textlayer_engine) -> tuple[str, list[bool]]:
    """The reference's Markdown, and for each entry whether its parameter list stands on one page."""
    pdf = printer("api-reference", PAGE)
    engine = textlayer_engine
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
    """The first page is mostly the synopsis, in a monospaced face: its headings' size still counts
    (the page is no typescript), so the sections stand a level over the entries."""
    assert markdown.lstrip().startswith("## keys\n"), markdown[:200]
    assert_in_order(markdown, ["## Synopsis", "## Description", "## Details", "### xsltIf ()"])
    assert "Description Details" not in markdown


def _synopsis_is_whole(markdown: str, listed: list) -> None:
    synopsis = _fences(markdown)[0].splitlines()
    assert synopsis[0] == "#define NODE_IS_KEYED;" and len(synopsis) == 1 + 3 * len(listed), synopsis
    for ret, name, args, _, _ in listed:
        line = next(ln for ln in synopsis if f" {name} " in ln)
        assert line.startswith(ret) and line.rstrip().endswith(f"({args[0]},"), line


def test_a_synopsis_set_in_columns_is_one_listing_with_its_columns(markdown):
    _synopsis_is_whole(markdown, FUNCTIONS + MORE)


def test_listings_stay_whole_beside_the_gutter_of_short_parameter_lists(printer, textlayer_engine):
    """Three-row lists stay text (too few rows to be a table by the words alone); the gap between
    their names and notes is a gutter, and the listings' rows, set in columns, cross it whole."""
    pdf = printer("api-reference-short", _page(SHORT, FUNCTIONS))
    engine = textlayer_engine
    with pymupdf.open(pdf) as doc:
        requests = [pdf_page_request(pdf, k, 144, prompt="") for k in range(doc.page_count)]
    md = "\n\n".join(blocks_to_markdown(out.blocks) for out in engine.predict_batch(requests))
    _synopsis_is_whole(md, FUNCTIONS)
    for ret, name, args, note, params in SHORT:
        entry = md[md.index(f"### {name} ()") :]
        listing = _fences(entry)[0]
        assert listing.startswith(ret) and listing.count("\n") == len(args), listing
        assert all(a in listing for a in args) and f" {name} " in listing.splitlines()[0], listing
        assert_in_order(entry, ["```", note])
        assert_in_order(entry[entry.index(note) :], [f"{p}:" for p, _ in params])


def test_each_entry_keeps_its_title_its_listing_and_its_parameter_list(printed):
    markdown, whole = printed
    assert sum(whole) >= len(whole) - 2, whole  # the page holds most lists whole
    assert sum(whole) <= markdown.count("<table>") <= len(whole), markdown
    entries = markdown.split("### ")[1:]
    assert len(entries) == len(whole)
    for entry, (ret, name, args, note, params), one_page in zip(entries, FUNCTIONS * 2, whole, strict=True):
        assert entry.startswith(f"{name} ()\n")
        listing = _fences(entry)[0]
        assert listing.startswith(ret) and all(a in listing for a in args), listing
        assert_in_order(entry, ["```", note])
        assert_in_order(entry[entry.index(note) + len(note) :], [what for _, what in params])
        rows = [[f"{p}:", what] for p, what in params]
        if one_page or "<table>" in entry:  # a list a page cuts may be a table on one side
            table = entry[entry.index("<table>") : entry.index("</table>")]
            cells = re.findall(r"<td>(.*?)</td>", table)
            got = [cells[k : k + 2] for k in range(0, len(cells), 2)]
            spans = [rows[i:j] for i in range(len(rows)) for j in range(i + 2, len(rows) + 1)]
            assert got == rows if one_page else got in spans, table
    assert not re.search(r"<t[dh]>[^<]*\(\)", markdown), "no entry's title in a table's cell"


SPACE = 4.0  # a word space, as a 12-unit type sets it


def _line(x: float, y: float, text: str, h: float = 12.0) -> TextLine:
    """A line whose letters stand 6 units apart, a word space between its words."""
    words, at = [], x
    for word in text.split():
        words.append((at, at + 6.0 * len(word)))
        at += 6.0 * len(word) + SPACE
    return TextLine(text, (x, y, at - SPACE, y + h), h, words=tuple(words))


def _after(left: str, x: float = 0.0) -> float:
    """Where a word set a word space after ``left`` (set from ``x``) starts."""
    return _line(x, 0, left).box[2] + SPACE


def _slot(row: int, col: int, x: float, text: str, colspan: int = 1) -> table_slots.Slot:
    """A model's cell at ``x`` on row ``row`` (20 units a row) holding ``text``'s words."""
    line = _line(x, 20.0 * row, text)
    words = [
        ((a, line.box[1], b, line.box[3]), t) for (a, b), t in zip(line.words, text.split(), strict=True)
    ]
    return table_slots.Slot(row, col, colspan=colspan, words=words)


def test_a_grid_mostly_of_rows_one_cell_across_is_text():
    """An API entry read as a table: its title, listing and sentence each one cell across both columns,
    one row of two cells. A table with a group label across its columns between rows stays one."""
    entry = [
        _slot(0, 0, 0, "xsltIf ()", colspan=2),
        _slot(1, 0, 0, "void xsltIf"),
        _slot(1, 1, 200, "(xsltTransformContextPtr ctxt, xmlNodePtr inst)"),
        _slot(2, 0, 0, "Processes the instruction on the source node.", colspan=2),
        _slot(3, 0, 0, "xsltLocalVariablePop ()", colspan=2),
        _slot(4, 0, 0, "int", colspan=1),
        _slot(4, 1, 200, "xsltLocalVariablePop (ctxt)", colspan=1),
        _slot(5, 0, 0, "Pops all variable values at the given depth.", colspan=2),
    ]
    assert table_slots.is_grid([s for s in entry if s.colspan == 1])  # the two rows of two cells
    assert not table_slots.is_grid(entry)
    table = [
        _slot(0, 0, 0, "North", colspan=2),
        *(s for r in (1, 2, 3) for s in (_slot(r, 0, 0, f"Town {r}"), _slot(r, 1, 200, f"{r}4.5"))),
    ]
    assert table_slots.is_grid(table)
    # A page of macros read as two columns: each name, its listing and its sentence a row, the second
    # column holding only the values the listings set apart.
    macros = [
        s
        for k, name in enumerate(["ASN1_SUCCESS", "ASN1_FILE_NOT_FOUND", "ASN1_DER_ERROR"])
        for s in (
            _slot(3 * k, 0, 0, name),
            _slot(3 * k + 1, 0, 0, f"# define {name}"),
            _slot(3 * k + 1, 1, 200, str(k)),
            _slot(3 * k + 2, 0, 0, "Returned when the call succeeds or fails."),
        )
    ]
    assert not table_slots.is_grid(macros)
    wide = [  # three columns, group labels in the first: a table
        s
        for r, label in enumerate(["North", "Town 1", "Town 2", "South", "Town 3"])
        for s in (
            [_slot(r, 0, 0, label)]
            + ([] if label[0] != "T" else [_slot(r, 1, 200, "4.5"), _slot(r, 2, 300, "7")])
        )
    ]
    assert table_slots.is_grid(wide)


def test_columns_that_cut_phrases_at_a_word_space_are_no_table():
    """Cells one space apart that split a sentence or a note ("… at the given" | "depth from the
    stack.") in most rows: running text read as a grid. A figure before its unit ("1" | "years") and
    names one space apart are a table's cells."""
    cut = [
        ("Pops all variable values at the given", "depth from the stack."),
        ("ctxt: the transformation", "context"),
        ("Returns: 0 for success, -1 for", "any error"),
    ]
    prose = [(_slot(r, 0, 0, a), _slot(r, 1, _after(a), b)) for r, (a, b) in enumerate(cut)]
    assert slot_columns.cuts_lines([s for pair in prose for s in pair])
    assert not slot_columns.cuts_lines([s for pair in prose[:1] for s in pair])  # one row is no evidence
    ages = [
        (_slot(r, 0, 0, f"{r}"), _slot(r, 1, _after(f"{r}"), "years"), _slot(r, 2, 100, "3,533"))
        for r in range(4)
    ]
    assert not slot_columns.cuts_lines([s for row in ages for s in row])
    names = [(_slot(r, 0, 0, n), _slot(r, 1, _after(n), "Lyon")) for r, n in enumerate(["Anne", "Bea"])]
    assert not slot_columns.cuts_lines([s for row in names for s in row])


def test_a_key_one_space_before_its_value_under_the_rows_stays_the_tables_last_row():
    """The longest key of a parameter list sets its value one space after it, on a line of one piece
    under rows of two ("value:" | "the key value to look for"): its key starts where theirs do and its
    value where theirs do. A sentence under the table, from the margin, is no row of it."""
    key = "Returns:"
    rows = [
        piece
        for y, name, value in [(0, "ctxt:", "an XSLT transformation context"), (16, "name:", "the key name")]
        for piece in (_line(100, y, name), _line(_after(key, 100), y, value))
    ]
    returns = _line(100, 32, f"{key} the nodeset resulting from the query or NULL")
    kept = table_bounds._trim_prose([*rows, returns])
    assert [ln.text for ln in kept] == [ln.text for ln in [*rows, returns]]
    sentence = _line(40, 56, "The returned set is freed by the caller when it is no longer needed, as usual.")
    assert [ln.text for ln in table_bounds._trim_prose([*rows, returns, sentence])] == [
        ln.text for ln in kept
    ]


def _spaced_paragraph(page: pymupdf.Page, y: float, lines: int) -> float:
    """``lines`` lines of 12-point text set 1.8 apart (a page with that much leading: the space under a
    heading is then no paragraph's skip by itself); the y of the next line."""
    words, k = SURVEY_TEXT.split(), 0
    for j in range(lines):
        line = ""
        while pymupdf.get_text_length(f"{line} {words[k % len(words)]}", fontname="tiro", fontsize=12) <= 480:
            line, k = f"{line} {words[k % len(words)]}".strip(), k + 1
        page.insert_text(
            (56, y), line.rsplit(" ", 3)[0] + "." if j == lines - 1 else line, fontsize=12, fontname="tiro"
        )
        y += 21.6
    return y


@pytest.mark.parametrize("gap", [18.0, 20.0])  # baseline to baseline, less 18: the boxes are 25 units tall
def test_two_headings_one_under_the_other_stay_two_and_a_wrapped_title_one(gap, tmp_path, textlayer_engine):
    """An empty section's heading over the next ("Description" over "Details", libxslt's reference):
    more space between them than a title's leading, and "Details" would have fitted after
    "Description". A title broken over two lines at its leading stays one heading."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 80), "Cross-references between", fontsize=18, fontname="tibo")
    page.insert_text((56, 102), "keys and templates", fontsize=18, fontname="tibo")
    y = _spaced_paragraph(page, 130, 8) + 30
    page.insert_text((56, y), "Description", fontsize=18, fontname="tibo")
    page.insert_text((56, y + 18 + gap), "Details", fontsize=18, fontname="tibo")
    y = _spaced_paragraph(page, y + 18 + gap + 28, 8) + 30
    page.insert_text((56, y), "Notes", fontsize=18, fontname="tibo")
    _spaced_paragraph(page, y + 28, 6)
    md = saved_markdown(textlayer_engine, doc, tmp_path)
    assert heading_texts(md) == [
        "Cross-references between keys and templates",
        "Description",
        "Details",
        "Notes",
    ]
