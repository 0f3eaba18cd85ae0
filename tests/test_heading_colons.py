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


COLLECTIONS = ["Vec", "VecDeque", "LinkedList", "HashMap", "BTreeMap", "BinaryHeap"]


def test_titles_ending_in_a_colon_in_a_style_of_their_own_are_headings(textlayer_engine, printer):
    """rustdoc's collections page (round 36): "Use a Vec when:" over a list, seven times over two
    pages, set a little larger than the body in the titles' sans face. No title in that style ends
    without a colon, so the style was no heading style, and every one of them was a line of text."""
    from tests.factories import heading_texts, pages_markdown

    css = (
        "<style>body{font-family:'DejaVu Serif',serif;font-size:16px;margin:0 1em}"
        "h4{font-family:'DejaVu Sans',sans-serif;font-size:18px;font-weight:500;margin:1em 0 .4em}</style>"
    )
    items = "".join(
        f"<li>You want {what}.</li>" for what in ("a stack", "a resizable array", "to sort later")
    )
    sections = [
        f"<h4 style='{'break-before:page' if k == 3 else ''}'>Use a {name} when:</h4><ul>{items}</ul>"
        for k, name in enumerate(COLLECTIONS)
    ]
    html = f"{css}<h2>When Should You Use Which Collection?</h2><p>{BODY}</p>{''.join(sections)}<p>{BODY}</p>"
    pages = pages_markdown(textlayer_engine, printer("colon-titles", html))
    heads = heading_texts("\n".join(pages))
    assert len(pages) == 2, pages
    for name in COLLECTIONS:
        assert f"Use a {name} when:" in heads, heads
