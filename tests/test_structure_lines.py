"""``structure.lines``: rows from positioned lines, the body size, text direction and margin bands —
the facts every structure pass reads."""

from __future__ import annotations

import pytest

from ocr_app.structure.lines import (
    Row,
    TextLine,
    body_size,
    group_rows,
    in_margin_band,
    is_rtl,
    rotate_box,
    size_close,
    unrotate_box,
    vertical_overlap,
)


def _line(text: str, x0: float, y0: float, x1: float, size: float = 10.0, **kw) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + size), size, **kw)


def test_group_rows_joins_pieces_on_one_baseline_and_orders_rows_top_down():
    lines = [
        _line("second", 50, 130, 120),
        _line("left", 50, 100, 90),
        _line("right", 300, 101, 350),  # a point lower: the same baseline band
    ]
    rows = group_rows(lines)
    assert [[i.text for i in r.items] for r in rows] == [["left", "right"], ["second"]]
    assert rows[0].text == "left right"


def test_lines_that_barely_overlap_vertically_are_two_rows():
    rows = group_rows([_line("upper", 50, 100, 90), _line("lower", 50, 107, 90)])
    assert len(rows) == 2


def test_row_text_reads_right_to_left_rows_from_the_right():
    row = Row([_line("שלום", 200, 100, 240), _line("עולם", 100, 100, 140)])
    assert row.text == "שלום עולם"


def test_row_text_joins_pieces_drawn_without_a_space_between_their_glyphs():
    a = _line("1403", 100, 100, 130, ink=(100.0, 130.0))
    b = _line("/09", 130, 100, 150, ink=(130.2, 150.0))
    far = _line("/09", 140, 100, 160, ink=(140.0, 160.0))
    assert Row([a, b]).text == "1403/09"
    assert Row([a, far]).text == "1403 /09"


def test_row_weight_is_the_lightest_piece_and_bold_needs_every_piece():
    row = Row([_line("Bold", 50, 100, 90, bold=True), _line("plain", 100, 100, 140, weight=400)])
    assert not row.bold
    assert row.weight == 400
    assert Row([_line("Bold", 50, 100, 90, bold=True)]).weight == 700


def test_body_size_is_the_size_most_characters_are_set_in():
    lines = [
        _line("A Title", 50, 50, 200, size=24),
        _line("a long line of body text " * 3, 50, 100, 500, size=10),
        _line("another long line of body text " * 3, 50, 120, 500, size=10),
    ]
    assert body_size(lines) == 10
    assert body_size([]) == 1.0


@pytest.mark.parametrize(
    ("text", "rtl"), [("مرحبا بالعالم", True), ("שלום", True), ("Hello world", False), ("1234", False)]
)
def test_is_rtl(text, rtl):
    assert is_rtl(text) is rtl


def test_margin_band_is_the_top_and_bottom_of_the_page_only():
    assert in_margin_band((50, 10, 100, 40), 1000)
    assert in_margin_band((50, 950, 100, 990), 1000)
    assert not in_margin_band((50, 100, 100, 140), 1000)
    assert not in_margin_band((50, 10, 100, 200), 1000)  # reaches out of the band


def test_vertical_overlap_is_a_share_of_the_smaller_height_and_size_close_allows_a_factor_of_1_6():
    assert vertical_overlap((0, 0, 10, 10), (0, 5, 10, 25)) == pytest.approx(0.5)
    assert vertical_overlap((0, 0, 10, 10), (0, 20, 10, 30)) == 0.0
    assert size_close(10, 16)
    assert not size_close(10, 17)


@pytest.mark.parametrize("turns", [0, 1, 2, 3])
def test_rotate_and_unrotate_are_inverses(turns):
    box = (10.0, 20.0, 60.0, 35.0)
    turned = rotate_box(box, turns, 200, 100)
    assert unrotate_box(turned, turns, 200, 100) == box
