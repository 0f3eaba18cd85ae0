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


def test_a_page_range_broken_after_its_dash_joins_without_a_space():
    """ "350–" / "360." in a reference: one range (round 10; before, "350– 360")."""
    from ocr_app.structure.paragraphs import join_lines

    assert join_lines("Engineering, 15(4), 350–", "360.") == "Engineering, 15(4), 350–360."
    assert join_lines("costs rose –", "360 of them") == "costs rose – 360 of them"
    assert join_lines("in 2020–", "the next year") == "in 2020– the next year"


def test_prose_above_a_reference_list_in_its_column_keeps_its_paragraphs():
    """A paragraph whose first line ends a sentence, then a reference list set with hanging indents in
    the same column: the list's rule (a flush-left line after a one-line entry starts the next entry)
    applies to the list, not to the prose above it (round 10; before, the paragraph was split after
    its first line)."""
    md = _md(
        [
            (50, "Water quality was sampled at forty stations along the river.", 450),
            (50, "Nitrate levels fell at most stations, while phosphate stayed close", 450),
            (50, "to last year's values.", 200),
            (50, "", 50),
            (50, "Baker, T. (2009). Visual inspection of highway bridges: a study of", 450),
            (70, "reliability. Journal of Bridge Engineering, 12(3), 45–67.", 400),
            (50, "Chen, L. (2011). Condition rating from images with convolutional", 450),
            (70, "networks. Structure and Infrastructure Engineering, 8(2), 11–20.", 420),
        ]
    )
    paragraphs = md.split("\n\n")
    assert paragraphs[0].startswith("Water quality") and paragraphs[0].endswith("last year's values."), md
    assert paragraphs[1].startswith("Baker") and paragraphs[2].startswith("Chen"), md
