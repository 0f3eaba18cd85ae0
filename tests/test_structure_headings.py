"""``structure.headings``: heading-level decisions on small constructed rows, with and without the
document's style (a scan has none; the text layer has one)."""

from __future__ import annotations

import pytest

from ocr_app.structure.headings import RowContext, cells_apart, heading_level, isolated_rows, panel_leads
from ocr_app.structure.lines import DocStyle, LayoutConfig, Row, TextLine, group_rows

BODY = 10.0
CONFIG = LayoutConfig()
STYLE = DocStyle(body_size=BODY, heading_sizes=(20.0, 14.0))  # levels: 20 → 1, 14 → 2, smaller → 3


def _row(text: str, size: float = BODY, *, y: float = 300.0, x: float = 50.0, **kw) -> Row:
    return Row([TextLine(text, (x, y, x + 6 * len(text), y + size), size, **kw)])


# --- without a document style: the page alone -------------------------------------------------------


@pytest.mark.parametrize(("size", "level"), [(20.0, 1), (15.0, 2), (12.0, 0), (10.0, 0)])
def test_plain_levels_come_from_the_size_against_the_page_body(size, level):
    assert heading_level(_row("Introduction", size), BODY, CONFIG) == level


def test_a_bold_line_a_little_larger_than_body_is_a_third_level_heading_unless_it_reads_like_a_label():
    assert heading_level(_row("Results", 12.0, bold=True), BODY, CONFIG) == 3
    assert heading_level(_row("package", 12.0, bold=True), BODY, CONFIG) == 0  # a column name
    assert heading_level(_row("Results", 12.0, bold=True), BODY, CONFIG, where=RowContext(aligned=False)) == 0


def test_lines_that_end_a_sentence_numbers_and_figure_labels_are_no_headings():
    assert heading_level(_row("This line ends a sentence.", 10.0, bold=True), BODY, CONFIG) == 0
    assert heading_level(_row("12", 30.0), BODY, CONFIG) == 0
    assert heading_level(_row("Axis label", 20.0, in_figure=True), BODY, CONFIG) == 0


def test_the_layout_models_word_decides_at_body_size_on_a_scan():
    assert heading_level(_row("Methods", role="title"), BODY, CONFIG) == 2
    assert heading_level(_row("Consider this definition:", role="title"), BODY, CONFIG) == 0
    assert heading_level(_row("A large line of a paragraph", 20.0, role="prose"), BODY, CONFIG) == 0


# --- with the document's style -----------------------------------------------------------------------


def test_styled_levels_follow_the_documents_heading_sizes():
    assert heading_level(_row("Introduction", 20.0), BODY, CONFIG, STYLE) == 1
    assert heading_level(_row("Background", 14.0), BODY, CONFIG, STYLE) == 2
    assert heading_level(_row("Plain body text", 10.0), BODY, CONFIG, STYLE) == 0


def test_captions_addresses_and_mostly_numbers_are_not_headings_even_when_large():
    assert heading_level(_row("Table 1: Results", 14.0), BODY, CONFIG, STYLE) == 0
    assert heading_level(_row("www.example.com", 14.0), BODY, CONFIG, STYLE) == 0
    assert heading_level(_row("No. 169522", 14.0), BODY, CONFIG, STYLE) == 0


def test_the_bookmark_outline_names_a_heading_set_in_body_type():
    style = DocStyle(body_size=BODY, heading_sizes=(20.0,), outline={"scope of work": 2})
    assert heading_level(_row("Scope of Work"), BODY, CONFIG, style) == 2
    assert heading_level(_row("Scope of Work", 8.0), BODY, CONFIG, style) == 0  # a small running title


def test_a_bold_numbered_section_title_at_body_size_takes_the_level_below_the_sized_headings():
    assert heading_level(_row("2.1 Scope", weight=700), BODY, CONFIG, STYLE) == 3
    assert heading_level(_row("2.1 Scope", weight=400), BODY, CONFIG, STYLE) == 0


def test_a_deeper_section_number_goes_down_a_level_where_depths_share_a_style():
    style = DocStyle(body_size=BODY, heading_sizes=(20.0, 14.0), depth_bases={3: 2})
    assert heading_level(_row("2.1 Scope", weight=700), BODY, CONFIG, style) == 3
    assert heading_level(_row("2.1.3 Limits", weight=700), BODY, CONFIG, style) == 4


def test_a_bold_lead_in_ending_in_a_colon_is_a_heading_a_plain_one_is_not():
    assert heading_level(_row("Steps for using the microscope:", weight=700), BODY, CONFIG, STYLE) == 3
    assert heading_level(_row("Steps for using the microscope:", weight=400), BODY, CONFIG, STYLE) == 0
    assert heading_level(_row("For more information:", 13.0, weight=700), BODY, CONFIG, STYLE) == 0


def test_a_chapter_number_in_display_type_is_a_heading_a_page_number_in_the_margin_is_not():
    big = _row("3", 40.0, y=300.0)
    assert heading_level(big, BODY, CONFIG, STYLE, RowContext(page_height=1000.0)) == 1
    in_band = _row("3", 40.0, y=20.0)
    assert heading_level(in_band, BODY, CONFIG, STYLE, RowContext(page_height=1000.0)) == 0
    assert heading_level(_row("3", BODY), BODY, CONFIG, STYLE, RowContext(page_height=1000.0)) == 0


def test_a_row_of_cells_a_gap_apart_is_not_one_heading_but_a_number_before_a_title_is():
    cells = Row(
        [
            TextLine("Year", (50, 100, 80, 110), 14.0, weight=700),
            TextLine("Revenue", (300, 100, 350, 110), 14.0, weight=700),
        ]
    )
    assert cells_apart(cells, CONFIG.min_cell_gap_ratio * BODY)
    assert heading_level(cells, BODY, CONFIG, STYLE) == 0
    numbered = Row(
        [
            TextLine("1", (50, 100, 56, 110), 14.0),
            TextLine("Introduction", (100, 100, 180, 110), 14.0),
        ]
    )
    assert not cells_apart(numbered, CONFIG.min_cell_gap_ratio * BODY)
    assert heading_level(numbered, BODY, CONFIG, STYLE) == 2


def test_isolated_rows_have_a_blank_line_above_and_below():
    lines = [
        TextLine("Alone", (50, 100, 100, 110), BODY),
        TextLine("First line of a paragraph", (50, 140, 300, 150), BODY),
        TextLine("second line of it", (50, 152, 300, 162), BODY),
    ]
    rows = group_rows(lines)
    alone = isolated_rows(rows, CONFIG)
    assert alone == {id(rows[0])}


def test_a_panel_lead_is_a_heavier_run_over_two_lighter_lines_at_its_left_edge():
    lead = TextLine("Our mission", (50, 100, 200, 110), BODY, weight=700)
    body = [
        TextLine("We read documents and write", (50, 114, 300, 124), BODY, weight=400),
        TextLine("their structure down.", (50, 128, 250, 138), BODY, weight=400),
    ]
    rows = group_rows([lead, *body])
    panel = frozenset(id(ln) for ln in [lead, *body])
    assert panel_leads(rows, panel) == {id(rows[0])}
    assert panel_leads(rows[:2], panel) == set()  # one lighter line after it: a tagline, not a lead


@pytest.mark.parametrize(
    "text", ["TABLE IV", "Figure S1. Sampling sites", "Table A.2 Codes", "Scheme 2. Scope"]
)
def test_captions_numbered_by_letters_or_roman_numerals_are_not_headings(text):
    assert heading_level(_row(text, 12.0, weight=700), BODY, CONFIG, STYLE) == 0


def test_a_title_named_like_a_caption_word_is_still_a_heading():
    assert heading_level(_row("Table of Contents", 14.0, weight=700), BODY, CONFIG, STYLE) == 2


def test_a_small_bold_line_in_the_right_part_of_its_section_is_a_buttons_label():
    """Node.js's "COPY" button at a code panel's foot: bold, smaller than the body, starting past
    three fifths of its section, or in a section of its own past three fifths of the page's text. Bold
    lines no smaller than the body there (a slide's third panel's heading), and smaller ones
    elsewhere (a chart's label), keep the bold rule."""
    button = _row("COPY", 8.5, bold=True, x=480.0)
    assert heading_level(button, BODY, CONFIG, STYLE, RowContext(aligned=False, far_right=True)) == 0
    assert heading_level(button, BODY, CONFIG, STYLE, RowContext(aligned=False)) > 0
    assert heading_level(button, BODY, CONFIG, STYLE, RowContext(aligned=True, tag=True)) == 0  # alone
    panel = _row(
        "Faster repairs", 10.5, bold=True, x=480.0
    )  # a slide's third panel: no smaller than its text
    assert heading_level(panel, BODY, CONFIG, STYLE, RowContext(aligned=True, tag=True)) > 0
