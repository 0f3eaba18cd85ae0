"""``passes.blocks`` (the section assembly), ``passes.figures`` and ``passes.prepare``: one
single-column section → headings, paragraphs, lists and code; a diagram's labels as one item; a cover
page's style."""

from __future__ import annotations

from ocr_app.structure.lines import DocStyle, LayoutConfig, Table, TextLine
from ocr_app.structure.passes.blocks import group_section
from ocr_app.structure.passes.figures import figure_items
from ocr_app.structure.passes.prepare import cover_style

BODY = 10.0
CONFIG = LayoutConfig()


def _line(text: str, x0: float, y0: float, x1: float, size: float = BODY, **kw) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + size), size, **kw)


def test_a_section_becomes_a_heading_a_mended_paragraph_a_list_and_a_code_block_in_order():
    section = [
        _line("Introduction", 50, 50, 250, size=20.0),
        _line("The paragraph runs on and a word is broken at the docu-", 50, 100, 550),
        _line("ment end, then the paragraph ends.", 50, 112, 300),
        _line("• first item", 50, 140, 200),
        _line("• second item", 50, 152, 200),
        _line("x = 1", 50, 180, 100, mono=True),
        _line("print(x)", 50, 192, 130, mono=True),
    ]
    blocks = group_section(section, BODY, CONFIG)
    assert [b.label for b in blocks] == ["title", "text", "list", "code"]
    assert blocks[0].text == "# Introduction"
    assert blocks[1].text == (
        "The paragraph runs on and a word is broken at the document end, then the paragraph ends."
    )
    assert blocks[2].text == "- first item\n- second item"
    assert blocks[3].text == "```\nx = 1\nprint(x)\n```"


def test_a_larger_gap_or_a_first_line_indent_starts_a_new_paragraph():
    section = [
        _line("One paragraph that runs across the column and", 50, 100, 550),
        _line("ends here.", 50, 112, 150),
        # (A line that ends a sentence where the next word would have fitted ends its paragraph too:
        # this one runs to the edge, so the next line goes on with it.)
        _line("After a blank line, another one that runs across the column", 50, 150, 550),
        _line("and goes on for a line.", 50, 162, 300),
        _line("An indented first line starts a third one.", 70, 174, 550),
    ]
    assert [b.label for b in group_section(section, BODY, CONFIG)] == ["text", "text", "text"]


def test_a_nested_list_item_is_indented_under_its_parent():
    section = [
        _line("1. Parent item", 50, 100, 200),
        _line("• child item", 80, 112, 200),
        _line("2. Next parent", 50, 124, 200),
    ]
    (block,) = group_section(section, BODY, CONFIG)
    assert block.text == "1. Parent item\n    - child item\n2. Next parent"


def test_a_table_item_closes_the_open_paragraph_and_a_form_becomes_lines():
    table = Table(box=(50, 130, 500, 170), rows=[["a", "b"], ["1", "2"]], header_rows=1)
    form = Table(box=(50, 200, 500, 230), rows=[["Name: Ada"], ["Date: today"]], form=True)
    section = [_line("A paragraph before the table.", 50, 100, 400), table, form]
    blocks = group_section(section, BODY, CONFIG)
    assert [b.label for b in blocks] == ["text", "table", "text", "text"]
    assert "<table>" in blocks[1].text and "<th>a</th>" in blocks[1].text
    assert [b.text for b in blocks[2:]] == ["Name: Ada", "Date: today"]


def test_a_lighter_smaller_line_right_under_a_styled_heading_is_its_subtitle_not_a_heading():
    style = DocStyle(body_size=BODY, heading_sizes=(24.0, 16.0))
    section = [
        _line("Annual Report", 50, 50, 300, size=24.0, weight=700),
        _line("Expert help to achieve more", 50, 78, 300, size=16.0, weight=400),
        _line("Body text follows under the subtitle and runs on for a while.", 50, 110, 550),
    ]
    blocks = group_section(section, BODY, CONFIG, style)
    assert blocks[0].text == "# Annual Report"
    assert not any(b.text.startswith("#") for b in blocks[1:])


def test_a_diagrams_short_labels_become_one_item_a_text_box_keeps_its_lines():
    labels = [
        _line("Input", 100, 100, 140, in_figure=True, figure=1),
        _line("Model", 200, 100, 240, in_figure=True, figure=1),
        _line("Output", 150, 150, 200, in_figure=True, figure=1),
    ]
    box = [
        _line(
            "This text box over the photo holds a whole sentence of words.",
            50,
            300,
            500,
            in_figure=True,
            figure=2,
        )
    ]
    prose = _line("Body text.", 50, 400, 150)
    figures, rest, panel = figure_items([*labels, *box, prose])
    assert len(figures) == 1
    assert figures[0].form
    assert figures[0].rows == [["Input Model"], ["Output"]]
    assert rest == [*box, prose]
    assert panel == frozenset({id(box[0])})


def test_on_a_cover_page_only_the_largest_title_is_a_heading():
    style = DocStyle(body_size=BODY)
    cover = [
        _line("Front cover", 50, 50, 150, size=14.0),
        _line("A Study of Tables in Documents", 50, 200, 500, size=30.0),
        _line("By the Authors of It", 50, 300, 300, size=16.0),
    ]
    assert cover_style(cover, style).cover_min_size == 0.97 * 30.0
    page = [*cover, *(_line("body text " * 8, 50, 400 + 12 * k, 550) for k in range(6))]
    assert cover_style(page, style) is style
