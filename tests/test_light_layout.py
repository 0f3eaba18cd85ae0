"""The shared layout analysis (lines → blocks) on hand-placed lines: every rule, checked exactly.

The engines feed it real lines (see test_light.py and test_textlayer.py); here the geometry is
chosen so each rule — columns, headings, lists, tables, paragraphs — has one clear right answer.
"""

from __future__ import annotations

from ocr_app.structure.lines import LayoutConfig, TextLine, body_size
from ocr_app.structure.pipeline import blocks_to_markdown, build_blocks

W = 1000.0  # page width in px
BODY = 20.0  # body font size in px; line boxes are BODY high, leading 1.3 × BODY


def _para(x: float, y: float, lines: list[str], width: float = 400, size: float = BODY) -> list[TextLine]:
    """One line per string; the last one short, like a real paragraph's last line."""
    out = []
    for k, text in enumerate(lines):
        w = width if k < len(lines) - 1 else width * 0.4
        out.append(TextLine(text, (x, y + k * size * 1.3, x + w, y + k * size * 1.3 + size), size))
    return out


def test_two_columns_read_column_by_column_with_title_and_footer_in_place():
    title = [TextLine("Big Title", (100, 40, 500, 80), 2.2 * BODY, bold=True)]
    left = _para(100, 120, [f"left {i} alpha" for i in range(6)], width=380)
    right = _para(520, 120, [f"right {i} beta" for i in range(6)], width=380)
    footer = _para(100, 400, ["footer wide line one", "footer two"], width=800)
    lines = footer + right + title + left  # input order must not matter
    blocks = build_blocks(lines, page_width=W)
    md = blocks_to_markdown(blocks)
    assert [b.label for b in blocks] == ["title", "text", "text", "text"]
    assert blocks[0].text == "# Big Title"
    assert blocks[1].text == " ".join(f"left {i} alpha" for i in range(6))
    assert blocks[2].text == " ".join(f"right {i} beta" for i in range(6))
    assert blocks[3].text == "footer wide line one footer two"
    assert md.index("left 5") < md.index("right 0") < md.index("footer")


def test_single_column_is_not_split_into_columns():
    lines = _para(100, 100, [f"line {i} of a ragged paragraph" for i in range(8)], width=700)
    # A ragged right edge: alternate lines shorter.
    lines = [
        TextLine(ln.text, (ln.box[0], ln.box[1], ln.box[2] - (150 if i % 2 else 0), ln.box[3]), ln.size)
        for i, ln in enumerate(lines)
    ]
    blocks = build_blocks(lines, page_width=W)
    assert len(blocks) == 1
    assert blocks[0].text.startswith("line 0") and blocks[0].text.endswith("line 7 of a ragged paragraph")


def test_heading_levels_from_relative_size():
    lines = [
        TextLine("Chapter One", (100, 50, 600, 95), 2.0 * BODY),
        TextLine("A Section", (100, 120, 400, 150), 1.5 * BODY),
        *_para(100, 170, ["body text here and more", "second line"], width=700),
        TextLine("Bold Label", (100, 260, 300, 283), 1.2 * BODY, bold=True),
        *_para(100, 300, ["more body text follows", "end"], width=700),
    ]
    blocks = build_blocks(lines, page_width=W)
    assert [b.text for b in blocks] == [
        "# Chapter One",
        "## A Section",
        "body text here and more second line",
        "### Bold Label",
        "more body text follows end",
    ]
    assert [b.label for b in blocks[:2]] == ["title", "sub_title"]


def test_slightly_larger_plain_line_is_not_a_heading():
    body = ["body text long enough to set the body size", "d"]
    lines = [TextLine("Not a heading", (100, 50, 400, 74), 1.2 * BODY), *_para(100, 100, body, width=600)]
    assert not build_blocks(lines, page_width=W)[0].text.startswith("#")


def test_lists_bullets_numbers_and_continuation_lines():
    lines = [
        TextLine("• first item that wraps", (100, 100, 700, 120), BODY),
        TextLine("onto a second line", (130, 126, 500, 146), BODY),
        TextLine("• second item", (100, 152, 400, 172), BODY),
        TextLine("1. numbered one", (100, 220, 400, 240), BODY),
        TextLine("2) numbered two", (100, 246, 400, 266), BODY),
    ]
    blocks = build_blocks(lines, page_width=W)
    assert [b.label for b in blocks] == ["list", "list"]
    assert blocks[0].text == "- first item that wraps onto a second line\n- second item"
    assert blocks[1].text == "1. numbered one\n2) numbered two"
    assert len(blocks[0].boxes) == 2  # one box per item
    assert blocks[0].boxes[0] == (100, 100, 700, 146)


def test_marker_and_text_as_separate_fragments_still_make_a_list_item():
    lines = [
        TextLine("•", (100, 100, 110, 120), BODY),
        TextLine("item text after a marker", (132, 100, 600, 120), BODY),
        TextLine("•", (100, 130, 110, 150), BODY),
        TextLine("another item", (132, 130, 400, 150), BODY),
    ]
    blocks = build_blocks(lines, page_width=W)
    assert [b.text for b in blocks] == ["- item text after a marker\n- another item"]


def test_aligned_cells_become_an_html_table_in_reading_order():
    rows = [["Name", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear", "10", "0.80"]]
    lines = _para(100, 40, ["Intro paragraph above the table", "end"], width=700)
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            x = 100 + c * 250
            y = 120 + r * 40
            lines.append(TextLine(cell, (x, y, x + 20 * len(cell), y + BODY), BODY))
    lines += _para(100, 260, ["Text after the table", "end"], width=700)
    blocks = build_blocks(lines, page_width=W)
    assert [b.label for b in blocks] == ["text", "table", "text"]
    assert blocks[1].text == (
        # A first row of words over columns of numbers is the header (issue 25).
        "<table><thead><tr><th>Name</th><th>Qty</th><th>Price</th></tr></thead><tbody>"
        "<tr><td>Apple</td><td>3</td><td>1.20</td></tr><tr><td>Pear</td><td>10</td><td>0.80</td></tr></tbody></table>"
    )
    assert blocks[1].boxes == [(100, 120, 100 + 250 * 2 + 20 * 5, 200 + BODY)]


def test_list_rows_next_to_a_table_stay_a_list():
    lines = [TextLine("•", (100, 60, 110, 80), BODY), TextLine("bullet text", (132, 60, 400, 80), BODY)]
    for r, row in enumerate([["A", "B", "C"], ["1", "2", "3"]]):
        for c, cell in enumerate(row):
            lines.append(
                TextLine(cell, (104 + c * 250, 100 + r * 40, 124 + c * 250, 100 + r * 40 + BODY), BODY)
            )
    blocks = build_blocks(lines, page_width=W)
    assert [b.label for b in blocks] == ["list", "table"]
    assert blocks[1].text.startswith("<table><tr><td>A</td><td>B</td><td>C</td></tr>")


def test_paragraphs_split_on_larger_gap_and_first_line_indent():
    p1 = _para(100, 100, ["first para line one", "first para end"], width=700)
    p2 = _para(100, 100 + 2 * 26 + 30, ["second para after a gap", "its end"], width=700)
    # Third paragraph: no gap, but an indented first line.
    y3 = p2[-1].box[3] + 6
    p3 = [TextLine("Indented start", (160, y3, 800, y3 + BODY), BODY), *_para(100, y3 + 26, ["goes on"], 700)]
    blocks = build_blocks(p1 + p2 + p3, page_width=W)
    assert [b.text for b in blocks] == [
        "first para line one first para end",
        "second para after a gap its end",
        "Indented start goes on",
    ]


def test_hyphenated_line_break_is_joined():
    """A word split at a line end is mended (issue 16: "docu-\nment" → "document")."""
    lines = _para(100, 100, ["a long docu-", "ment continues"], width=700)
    assert build_blocks(lines, page_width=W)[0].text == "a long document continues"


def test_line_end_hyphen_of_a_compound_is_kept():
    """The page's own vocabulary has "well-known": the split compound keeps its hyphen; a compound
    broken after its second hyphen ("state-of-the-" / "art") does too."""
    lines = _para(100, 100, ["a well-known fact is well-", "known and state-of-the-", "art work"], width=700)
    assert (
        build_blocks(lines, page_width=W)[0].text
        == "a well-known fact is well-known and state-of-the-art work"
    )


def test_empty_and_blank_lines_give_no_blocks():
    assert build_blocks([], page_width=W) == []
    assert build_blocks([TextLine("   ", (0, 0, 10, 10), 10)], page_width=W) == []


def test_body_size_is_the_size_most_characters_use():
    lines = [TextLine("x" * 200, (0, 0, 1, 1), 10), TextLine("Title", (0, 0, 1, 1), 30)]
    assert body_size(lines) == 10


def test_config_thresholds_are_respected():
    body = ["body text long enough to set the body size", "x"]
    lines = [TextLine("Medium Title", (100, 50, 400, 80), 1.3 * BODY), *_para(100, 100, body, width=600)]
    assert not build_blocks(lines, page_width=W)[0].text.startswith("#")
    blocks = build_blocks(lines, page_width=W, config=LayoutConfig(heading_ratio=1.25))
    assert blocks[0].text == "## Medium Title"


def test_bare_numbers_are_never_headings():
    body = ["body text long enough to set the body size of the page", "end"]
    lines = [TextLine("12", (500, 20, 530, 60), 2.0 * BODY), *_para(100, 100, body, width=700)]
    blocks = build_blocks(lines, page_width=W)
    assert blocks[0].text == "12" and blocks[0].label == "text"


def test_three_columns_are_read_left_to_right():
    text = "words that fill a narrow column"
    cols = [
        _para(60 + k * 310, 100, [f"col{k} line {i} {text}" for i in range(5)], width=280) for k in range(3)
    ]
    lines = [ln for col in reversed(cols) for ln in col]
    blocks = build_blocks(lines, page_width=W)
    assert [b.text.split()[0] for b in blocks] == ["col0", "col1", "col2"]
    assert all(len(b.text.split()) == 45 for b in blocks)  # each column one whole paragraph


def test_lines_separated_only_by_blank_lines_are_separate_paragraphs():
    """With no ordinary line gaps on the page, the blank-line gap must not become the 'typical' gap."""
    step = BODY * 2.6  # one line, one blank line
    lines = [
        TextLine(t, (100, 100 + k * step, 600, 100 + k * step + BODY), BODY) for k, t in enumerate("abc")
    ]
    assert [b.text for b in build_blocks(lines, page_width=W)] == ["a", "b", "c"]


def test_double_spaced_lines_stay_one_paragraph():
    step = BODY * 2.0  # double spacing: box gap = 1.0 × size
    lines = [TextLine(f"line {k}", (100, 100 + k * step, 600, 100 + k * step + BODY), BODY) for k in range(4)]
    assert [b.text for b in build_blocks(lines, page_width=W)] == ["line 0 line 1 line 2 line 3"]


def test_aligned_table_with_a_bold_first_row_has_a_header():
    rows = [["Name", "Qty", "Price"], ["Apple", "3", "1.20"], ["Pear", "10", "0.80"]]
    lines = []
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            x, y = 100 + c * 250, 120 + r * 40
            lines.append(TextLine(cell, (x, y, x + 20 * len(cell), y + BODY), BODY, bold=r == 0))
    [block] = build_blocks(lines, page_width=W)
    assert block.text.startswith(
        "<table><thead><tr><th>Name</th><th>Qty</th><th>Price</th></tr></thead><tbody>"
    )
