"""Paragraphs (issue 30 item 5): hanging indents and en-dash line starts stay in their paragraph,
first-line indents and dash lists after a lead-in still start paragraphs and items."""

from __future__ import annotations

from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown, build_blocks

SIZE = 10.0


def _lines(rows: list[tuple[float, str, float]]) -> list[TextLine]:
    """``(x0, text, x1)`` rows, one under the other at the body's line spacing."""
    return [
        TextLine(text, (x0, 100 + 12 * k, x1, 110 + 12 * k), SIZE) for k, (x0, text, x1) in enumerate(rows)
    ]


def _md(rows: list[tuple[float, str, float]]) -> str:
    return blocks_to_markdown(build_blocks(_lines(rows), page_width=600, page_height=800))


def test_hanging_indent_entries_keep_their_wrapped_lines():
    md = _md(
        [
            (50, "[1] A. Author and B. Writer. A study of tables in documents nobody here made, in", 550),
            (68, "Proceedings of the Layout Workshop, pages 10-19, 2001.", 400),
            (50, "[2] C. Reader. Headings from the whole document and not from one page, Journal of", 550),
            (68, "Document Structure 12(3): 40-49, 2004.", 330),
        ]
    )
    assert md.split("\n\n") == [
        "[1] A. Author and B. Writer. A study of tables in documents nobody here made, in Proceedings of "
        "the Layout Workshop, pages 10-19, 2001.",
        "[2] C. Reader. Headings from the whole document and not from one page, Journal of Document "
        "Structure 12(3): 40-49, 2004.",
    ]


def test_a_first_line_indent_after_a_finished_paragraph_still_starts_a_new_one():
    md = _md(
        [
            (50, "The first paragraph runs across the whole width of the column and then it", 550),
            (50, "ends here.", 120),
            (68, "The second paragraph starts with an indent, as books set them, and goes on", 550),
            (50, "to its end.", 130),
        ]
    )
    assert len(md.split("\n\n")) == 2


def test_a_wrapped_line_starting_with_an_en_dash_joins_its_paragraph_but_a_dash_list_stays_a_list():
    md = _md(
        [
            (
                50,
                "The survey counted the firms with a staff of 1 – 50, and the firms with a staff of 51",
                550,
            ),
            (50, "– 99 staff, in every region of the country.", 360),
        ]
    )
    assert md == (
        "The survey counted the firms with a staff of 1 – 50, and the firms with a staff of 51 – 99 staff, "
        "in every region of the country."
    )
    listed = _md([(50, "Bring the following:", 200), (50, "– a pen", 110), (50, "– a notebook", 140)])
    assert listed == "Bring the following:\n\n- a pen\n- a notebook"  # after a lead-in: items
