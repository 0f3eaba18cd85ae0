"""Running text set in many narrow columns is text, not a table (issue 30 item 3, round 25).

Why: the pdfTeX manual prints the GNU FDL in seven narrow justified columns. The layout model boxes
the page as one table (score 0.98), and the word grid lines the columns' rows up like a table's: the
licence came out as eleven 7-column tables of sentence fragments. Three things let the page be read
as what it is:

* ``running_text.runs_on`` measured "right under it" by the line's box, which for this font holds
  little more than the x-height; the line's size now sets the pitch;
* ``text_columns`` allows groups that belong to a running column (pieces of justified lines parted at
  wide spaces, a list's labels hanging a little to its left); a column of labels beside descriptions
  still keeps a region a table;
* a word grid whose lines run on into the line under them in three or more of its columns is text
  (``running_text.prose_grid``, used by ``passes.tables``), and a layout box found to hold running
  columns vouches for no grid of words.

A run-on's upper line holds two words or more, so a column of identifiers in lower case ("subtype"
over "attr", luatex's node tables) or codes under names ("Afrikaans" over "af") is not prose.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from ocr_app.structure.lines import TextLine
from ocr_app.structure.running_text import prose_grid, running_text, runs_on
from tests.factories import page_markdown

PDF = Path(__file__).parent / "data" / "public" / "manuals" / "pdftex-manual-p64-gfdl.pdf"


def _line(text: str, x: float, y: float, *, size: float = 13.0, height: float = 6.0) -> TextLine:
    # a box only ``height`` high for type of ``size``: the FDL page's font
    return TextLine(text=text, box=(x, y, x + 110.0, y + height), size=size)


def test_a_low_glyph_box_still_runs_on_at_the_type_size_pitch():
    upper, lower = _line("Everyone is permit-", 142, 411), _line("ted to copy and", 142, 427)
    assert runs_on(upper, lower)
    # without a size the box alone decides, as for pieces that carry none
    bare_upper = TextLine(text=upper.text, box=upper.box, size=0.0)
    assert not runs_on(bare_upper, lower)


def test_single_identifiers_in_lower_case_do_not_make_running_text():
    fields = [
        _line(t, 100, 100 + 16 * i) for i, t in enumerate(["subtype", "attr", "pre", "post", "replace"])
    ]
    assert not running_text(fields)
    prose = [
        _line(t, 100, 100 + 16 * i)
        for i, t in enumerate(
            ["The purpose of this", "License is to make", "a manual, textbook,", "or other useful"]
        )
    ]
    assert running_text(prose)


def test_a_grid_of_names_over_codes_is_no_prose_grid():
    names = ["Afrikaans", "Ancientgreek", "Arabic"]
    lines = []
    for i, name in enumerate(names):
        y = 100 + 40 * i
        lines += [_line(name, 100, y), _line(name[:2].lower(), 100, y + 16), _line(name.lower(), 250, y + 16)]
    assert not prose_grid(lines, lines, 13.0)


def test_the_gfdl_in_seven_columns_reads_as_text_in_column_order(textlayer_engine):
    md = page_markdown(textlayer_engine, PDF, 0)
    assert "<table" not in md, md[:1500]
    heads = [ln.lstrip("#").strip() for ln in md.splitlines() if ln.startswith("#")]
    order = ["GNU Free Documentation License", "Preamble", "APPLICABILITY AND DEFINITIONS",
             "VERBATIM COPYING", "COPYING IN QUANTITY", "MODIFICATIONS"]  # fmt: skip
    assert [h for h in heads if h in order] == order, heads
    # whole sentences, their hyphenated line ends joined, in the order of the columns
    first = md.index("Everyone is permitted to copy and distribute verbatim copies")
    second = md.index("The purpose of this License is to make a manual")
    third = md.index("This License applies to any manual or other work")
    assert first < second < third


def test_a_table_of_fields_with_wrapped_explanations_stays_a_table(textlayer_engine, tmp_path):
    """luatex's node tables: identifiers and types in lower case, an explanation that wraps."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "The disc node keeps these fields:", fontsize=10)
    rows = [
        ("FIELD", "TYPE", "EXPLANATION"),
        ("subtype", "number", "0 = discretionary, 1 = explicit, 2 = automatic, 3 = regular,"),
        ("", "", "4 = first, 5 = second"),
        ("attr", "node", "list of attributes"),
        ("pre", "node", "pointer to the pre-break text"),
        ("post", "node", "pointer to the post-break text"),
        ("replace", "node", "pointer to the no-break text"),
        ("penalty", "number", "the penalty associated with the break, normally the hyphen"),
        ("", "", "penalty or the explicit hyphen penalty"),
    ]
    for i, (a, b, c) in enumerate(rows):
        y = 130 + 14 * i
        for x, text in ((72, a), (150, b), (220, c)):
            if text:
                page.insert_text((x, y), text, fontsize=9, fontname="cour")
    page.draw_line((70, 120), (560, 120))
    page.draw_line((70, 134), (560, 134))
    page.draw_line((70, 130 + 14 * len(rows)), (560, 130 + 14 * len(rows)))
    pdf = tmp_path / "fields.pdf"
    doc.save(pdf)
    md = page_markdown(textlayer_engine, pdf, 0)
    assert md.count("<table") == 1, md
    assert "<td>pointer to the pre-break text</td>" in md or ">pointer to the pre-break text<" in md, md


def _column(x: float, width: float, texts: list[str]) -> list[TextLine]:
    return [
        TextLine(text=t, box=(x, 100 + 16 * i, x + width, 110 + 16 * i), size=10.0)
        for i, t in enumerate(texts)
    ]


WRAPPED = [
    "the prices of the metals we",
    "sell would reduce the margin",
    "on every tonne and delay the",
    "projects we have started now",
]


def test_three_columns_of_one_measure_running_on_are_prose_and_of_three_measures_a_table():
    """A risk table's cells may wrap in three columns (the risk, its description, the response): its
    columns differ in width. Columns of text share one measure, or are many."""
    same = [*_column(100, 120, WRAPPED), *_column(240, 120, WRAPPED), *_column(380, 120, WRAPPED)]
    assert prose_grid(same, same, 10.0)
    varied = [*_column(100, 80, WRAPPED), *_column(200, 200, WRAPPED), *_column(420, 130, WRAPPED)]
    assert not prose_grid(varied, varied, 10.0)
    many = [ln for k, w in enumerate((80, 200, 130, 90, 150)) for ln in _column(100 + 220 * k, w, WRAPPED)]
    assert prose_grid(many, many, 10.0)
    # two columns are left to the other rules (a two-column page, a table of term and description)
    two = [*_column(100, 120, WRAPPED), *_column(240, 120, WRAPPED)]
    assert not prose_grid(two, two, 10.0)
