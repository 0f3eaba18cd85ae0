"""``passes.columns``: the gutter between text columns, sections in reading order (left column first,
right first on right-to-left pages, titles in place) and side heads put before their paragraphs."""

from __future__ import annotations

from ocr_app.structure.lines import LayoutConfig, TextLine
from ocr_app.structure.passes.columns import find_gutter, order_sections

BODY = 10.0
CONFIG = LayoutConfig()


def _line(text: str, x0: float, y0: float, x1: float, **kw) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + BODY), BODY, **kw)


def _two_columns() -> tuple[TextLine, list[TextLine], list[TextLine]]:
    title = _line("A title across both columns", 50, 60, 550)
    left = [_line(f"left column line {k}", 50, 100 + 14 * k, 280) for k in range(5)]
    right = [_line(f"right column line {k}", 320, 100 + 14 * k, 550) for k in range(5)]
    return title, left, right


def _texts(sections):
    return [[it.text for it in s] for s in sections]


def test_the_gutter_is_where_side_by_side_lines_leave_a_gap():
    _, left, right = _two_columns()
    g0, g1 = find_gutter([*left, *right], CONFIG, BODY)
    assert 280 <= g0 < g1 <= 320
    assert find_gutter(left, CONFIG, BODY) is None  # one column: nothing side by side


def test_a_title_stays_above_two_columns_read_left_column_first():
    title, left, right = _two_columns()
    sections = order_sections([*right, title, *left], CONFIG, BODY)
    assert _texts(sections) == [[title.text], [ln.text for ln in left], [ln.text for ln in right]]


def test_right_to_left_pages_read_the_right_column_first():
    title, left, right = _two_columns()
    sections = order_sections([title, *left, *right], CONFIG, BODY, rtl=True)
    assert _texts(sections) == [[title.text], [ln.text for ln in right], [ln.text for ln in left]]


def test_one_column_is_one_section_top_to_bottom():
    _, left, _ = _two_columns()
    assert _texts(order_sections(list(reversed(left)), CONFIG, BODY)) == [[ln.text for ln in left]]
    assert order_sections([], CONFIG, BODY) == []


def _side_head_page(bold: bool) -> tuple[list[TextLine], list[list[TextLine]]]:
    heads, paragraphs = [], []
    for k, name in enumerate(["Scope", "Method", "Results"]):
        y = 100 + 40 * k
        heads.append(_line(name, 50, y, 110, bold=bold))
        paragraphs.append(
            [_line(f"paragraph {k} runs on here", 200, y, 550), _line(f"and ends here {k}", 200, y + 12, 400)]
        )
    return heads, paragraphs


def test_side_heads_each_come_right_before_the_paragraph_level_with_them():
    heads, paragraphs = _side_head_page(bold=True)
    sections = order_sections([*heads, *(ln for p in paragraphs for ln in p)], CONFIG, BODY)
    expected = []
    for head, para in zip(heads, paragraphs, strict=True):
        expected += [[head.text], [ln.text for ln in para]]
    assert _texts(sections) == expected


def test_plain_short_lines_in_the_margin_are_a_column_not_side_heads():
    heads, paragraphs = _side_head_page(bold=False)
    sections = order_sections([*heads, *(ln for p in paragraphs for ln in p)], CONFIG, BODY)
    assert _texts(sections)[0] == [h.text for h in heads]


def test_two_lines_of_prose_in_each_column_make_a_gutter_two_short_pairs_do_not():
    """The last page of a two-column paper: two lines of a reference in each column (round 10; before,
    three side-by-side pairs were needed and the page was read across the gutter, row by row)."""
    words = "Novak, J., Brennan, S. (2020). Inter-rater agreement in surveys."
    left = [_line(words, 50, 100 + 12 * k, 280) for k in range(2)]
    right = [_line(words, 320, 100 + 12 * k, 550) for k in range(2)]
    g0, g1 = find_gutter([*left, *right], CONFIG, BODY)
    assert 280 <= g0 < g1 <= 320
    assert _texts(order_sections([*right, *left], CONFIG, BODY)) == [[words] * 2, [words] * 2]
    keys = [_line("Date:", 50, 100 + 12 * k, 120) for k in range(2)]
    values = [_line("12 March", 320, 100 + 12 * k, 400) for k in range(2)]
    assert find_gutter([*keys, *values], CONFIG, BODY) is None  # a key and its value: no columns


def test_the_short_last_line_of_a_paragraph_above_the_columns_stays_with_it():
    """A full-width abstract whose last line stops short of the gutter, then two columns: the line is
    read after the abstract's other lines, before the left column (round 10; before, it opened the left
    column's section and the abstract came out in two paragraphs)."""
    abstract = [_line(f"abstract line {k} runs across the page", 50, 60 + 12 * k, 550) for k in range(2)]
    tail = _line("and ends here.", 50, 84, 150)
    _, left, right = _two_columns()
    sections = order_sections([*left, *right, tail, *abstract], CONFIG, BODY)
    assert _texts(sections)[0] == [ln.text for ln in [*abstract, tail]]
    assert _texts(sections)[1:] == [[ln.text for ln in left], [ln.text for ln in right]]


def test_a_title_beside_the_last_lines_of_the_other_column_makes_a_gutter():
    """A column's title in display type (two lines) level with the other column's last two lines of
    running text: two pairs side by side, one of them a title's short line and running text, make the
    gutter (round 20, a page printed by MuPDF whose title was read into the other column's paragraph).
    A short body-size line beside running text stays no evidence."""
    title = [
        TextLine("Freight and Logistics", (50, 100, 230, 118), 18.0, bold=True),
        TextLine("Report", (50, 118, 110, 136), 18.0, bold=True),
    ]
    right = [
        _line("reopening of two border crossings that", 320, 104, 550),
        _line("closed for repairs", 320, 122, 450),
    ]
    below = [_line(f"left column line {k}", 50, 150 + 14 * k, 280) for k in range(6)]
    gutter = find_gutter([*title, *right, *below], CONFIG, BODY)
    assert gutter is not None and 230 <= gutter[0] < gutter[1] <= 320
    sections = order_sections([*title, *right, *below], CONFIG, BODY)
    assert _texts(sections) == [
        [*(t.text for t in title), *(ln.text for ln in below)],
        [ln.text for ln in right],
    ]
    short = [_line("Report", 50, 100, 110), _line("Notes", 50, 118, 100)]
    assert find_gutter([*short, *right], CONFIG, BODY) is None


def test_a_one_line_title_beside_two_lines_of_the_other_column_makes_a_gutter():
    """A title set tall enough to stand beside two lines of the other column counts once for each."""
    title = TextLine("Household Energy Survey", (50, 100, 240, 124), 18.0, bold=True)
    right = [
        _line("when they could choose their own books from", 320, 100, 550),
        _line("the mobile library.", 320, 113, 420),
    ]
    below = [_line(f"left column line {k}", 50, 140 + 14 * k, 280) for k in range(6)]
    gutter = find_gutter([title, *right, *below], CONFIG, BODY)
    assert gutter is not None and 240 <= gutter[0] < gutter[1] <= 320
    plain = _line("Household Energy Survey", 50, 100, 240)  # at the body's size: one pair, no gutter
    assert find_gutter([plain, *right, *below], CONFIG, BODY) is None


def test_a_dense_page_is_no_pair_by_pair_scan(monkeypatch):
    """Six columns of 140 lines (an index): the gutter search weighs only the lines that stand right of
    a line at its height, a few per line, where it weighed every pair right of it (294,000 here); the
    gutter is still the first one."""
    from ocr_app.structure.passes import columns
    from tests.factories import count_calls

    lines = [
        _line(f"entry {c}.{r}, {r + 1}", 50 + 90 * c, 60 + 5 * r, 50 + 90 * c + 60)
        for c in range(6)
        for r in range(140)
    ]
    weighed = count_calls(monkeypatch, columns, "vertical_overlap", key=lambda *a: "pairs")
    gutter = find_gutter(lines, CONFIG, BODY)
    assert gutter is not None and 110 <= gutter[0] < gutter[1] <= 140, gutter
    assert weighed["pairs"] <= 10 * len(lines), weighed
