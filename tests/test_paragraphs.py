"""Paragraphs (issue 30 item 5): hanging indents and en-dash line starts stay in their paragraph,
first-line indents and dash lists after a lead-in still start paragraphs and items."""

from __future__ import annotations

from bench.accuracy.printed import build
from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown, build_blocks
from tests.factories import page_markdown

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


def test_a_line_broken_after_a_sentence_where_the_next_word_fitted_ends_its_paragraph():
    # Set at one spacing, no blank line between: only the short line that ends a sentence tells
    # that the paragraph ended there (a scanned notice, a letter).
    md = _md(
        [
            (50, "The rules may be called the Deposit Rules and they apply to every company that", 550),
            (50, "takes a deposit from its members.", 260),
            (50, "They shall come into force on the first day of April, in the year after this.", 540),
            (50, "Nothing here changes the rules made before them.", 340),
            (50, "Table 1.", 110),
            (50, "Deposits taken by the companies, by year", 330),
        ]
    )
    assert md.split("\n\n") == [
        "The rules may be called the Deposit Rules and they apply to every company that takes a deposit "
        "from its members.",
        "They shall come into force on the first day of April, in the year after this. Nothing here "
        "changes the rules made before them.",
        "Table 1. Deposits taken by the companies, by year",  # a caption's label and its title: one
    ]


def test_a_stop_before_a_lower_case_line_or_a_line_that_wrapped_full_keeps_the_paragraph():
    # OCR reads "section 2," as "section 2." and the next line starts in lower case: one sentence.
    # And a line that ran to the edge ends where the next word would not have fitted: wrapped.
    md = _md(
        [
            (50, "In exercise of the powers conferred by clause (31) of section 2.", 470),
            (50, "section 73 and section 76 of the Act, the Government makes these rules. The", 550),
            (50, "Board shall meet once a year.", 250),
        ]
    )
    assert len(md.split("\n\n")) == 1, md


def test_clauses_numbered_in_brackets_start_paragraphs_of_their_own():
    md = _md(
        [
            (50, "(1) These rules may be called the Companies (Acceptance of Deposits) Rules, 2014", 548),
            (50, "(2) They shall come into force on the first day of April, 2014.", 470),
            (50, "An amount is no deposit when it is received as follows, or as the Board allows:", 545),
            (50, "(x) any amount received from an employee of the company not exceeding his", 548),
            (50, "annual salary under a contract of employment with the company;", 460),
            (50, "(xi) any non-interest bearing amount received or held in trust;", 470),
            (50, "(xii) any amount received in the course of the business of the company.", 530),
            (50, "(2013) was the year the Act was passed, and (c) is its third clause.", 500),
        ]
    )
    paragraphs = md.split("\n\n")
    assert [p[:5] for p in paragraphs] == ["(1) T", "(2) T", "An am", "(x) a", "(xi) ", "(xii)"], md
    assert paragraphs[3].endswith("with the company;")
    # A year in brackets is no enumerator, and the line it opens goes on with the clause above.
    assert paragraphs[-1].endswith("Act was passed, and (c) is its third clause.")


def test_a_full_line_ending_a_sentence_beside_a_table_keeps_its_paragraph(tmp_path, textlayer_engine):
    """MuPDF's HTML engine sets "The pilot ran in six schools for one term." on a line of its own, full
    to the edge of its column, with a table beside the column: the column's frame spans the table
    too, and "Teachers" would have fitted inside the frame, though not inside the column."""
    build(tmp_path, only=("booktabs-grouped-two",), printer="mupdf")
    md = page_markdown(textlayer_engine, tmp_path / "pdf" / "booktabs-grouped-two.pdf")
    assert (
        "The pilot ran in six schools for one term. Teachers reported that pupils read more at home when "
        "they could choose their own books from the mobile library." in md.split("\n\n")
    ), md


def test_a_stop_where_the_next_word_would_only_just_have_fitted_keeps_the_paragraph():
    # "For" fits 2.5 pt short of the column's widest line: a browser's list item ends that much short
    # of it, and wrapped there (npm's docs). An em must be left over for the line to count as broken.
    md = _md(
        [
            (50, "Installs the package from the hosted git provider, cloning it with git.", 520),
            (50, "For a full remote address, only that address will be tried by the installer here", 540),
            (50, "and nowhere else.", 150),
        ]
    )
    assert len(md.split("\n\n")) == 1, md
