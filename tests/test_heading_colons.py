"""Headings that end in a colon (issue 30 item 4): a bold numbered section title is a heading whatever
its last character; a bold colon line without a number stays a lead-in or a label."""

from __future__ import annotations

from ocr_app.structure.lines import DocStyle, TextLine
from ocr_app.structure.pipeline import blocks_to_markdown, build_blocks

STYLE = DocStyle(body_size=10.0, body_weight=400, heading_sizes=(16.0, 12.0))
BODY = "The body of the section is set in the body size and weight, and it runs on for a while here."


def _md(head: TextLine) -> str:
    lines = [head, TextLine(BODY, (50, 130, 550, 140), 10.0, weight=400)]
    return blocks_to_markdown(build_blocks(lines, page_width=600, page_height=800, style=STYLE))


def test_a_numbered_bold_section_title_with_a_colon_is_a_heading():
    md = _md(TextLine("3.2 Requirements:", (50, 100, 170, 110), 10.0, bold=True, weight=700))
    assert md.splitlines()[0].startswith("#") and "3.2 Requirements:" in md.splitlines()[0]


def test_a_colon_line_in_a_size_no_heading_has_stays_a_label():
    md = _md(TextLine("For more information:", (50, 100, 190, 111.5), 11.5, bold=True, weight=700))
    assert not md.startswith("#")
