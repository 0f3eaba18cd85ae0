"""A newsletter in three narrow columns (issue 30, round 11): justified lines whose wide word spaces
the extraction took for gaps (``structure.justified``), and a shaded sidebar whose head and wrapped
list were taken for a diagram's labels (``page_figures.stacked_text``).

Before: the justified newsletter came out as one false table of three columns, its paragraphs in
word-wide strips, NID 0.91 and MHS 0.51; the ragged one lost its sidebar's head and list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.accuracy.printed import build
from ocr_app.engines.page_figures import stacked_text
from ocr_app.structure.justified import join_justified
from ocr_app.structure.lines import TextLine
from tests.factories import heading_texts, page_markdown

SIZE = 19.0


def _piece(text: str, x0: float, y: float) -> TextLine:
    """One piece of a line at ``x0``: its words a normal space apart, 9 px a letter."""
    words, x = [], x0
    for word in text.split():
        words.append((x, x + 9 * len(word)))
        x = words[-1][1] + 5.0
    return TextLine(text, (x0, y, words[-1][1], y + 22), SIZE, words=tuple(words))


def _measure(y: float) -> TextLine:
    """A full line of the column, 100 → 400."""
    line = _piece("the reopening of two crossings", 100, y)
    spread = (400 - line.box[2]) / 4  # spread its four spaces evenly to end at 400
    ranges = [(a + k * spread, b + k * spread) for k, (a, b) in enumerate(line.words)]
    return TextLine(line.text, (100, y, 400, y + 22), SIZE, words=tuple(ranges))


def test_a_justified_line_broken_at_its_word_spaces_is_joined():
    # "agreed" | "prices" | "with the": pieces 36 px apart, and 36 px between "with" and "the" inside
    # the last piece; together they run from the measure's left end to its right.
    the = TextLine("with the", (280, 50, 400, 72), SIZE, words=((280, 316), (352, 400)))
    prices = TextLine("prices", (190, 50, 244, 72), SIZE, words=((190, 244),))
    agreed = TextLine("agreed", (100, 50, 154, 72), SIZE, words=((100, 154),))
    lines = [_measure(25), agreed, prices, the, _measure(75)]
    out = join_justified(lines)
    assert [ln.text for ln in out] == [
        "the reopening of two crossings",
        "agreed prices with the",
        "the reopening of two crossings",
    ]
    joined = out[1]
    assert joined.box == (100, 50, 400, 72) and len(joined.words) == 4


def test_right_to_left_pieces_are_left_as_the_extraction_gives_them():
    # the same layout as a justified line, in Hebrew: joined left to right, its words would reverse
    pieces = [
        TextLine("שלום", (100, 50, 154, 72), SIZE, words=((100, 154),)),
        TextLine("עולם", (190, 50, 244, 72), SIZE, words=((190, 244),)),
        TextLine("טוב מאוד", (280, 50, 400, 72), SIZE, words=((280, 316), (352, 400))),
    ]
    lines = [_measure(25), *pieces, _measure(75)]
    assert [ln.text for ln in join_justified(lines)] == [ln.text for ln in lines]


def test_a_table_row_and_a_line_off_the_measure_stay_apart():
    # cells: the gaps between them are not the spaces inside them
    row = [
        TextLine("North region", (100, 50, 200, 72), SIZE, words=((100, 145), (150, 200))),
        TextLine("803", (300, 50, 327, 72), SIZE, words=((300, 327),)),
        TextLine("865", (373, 50, 400, 72), SIZE, words=((373, 400),)),
    ]
    # even gaps, but the run ends short of the column's measure: two cells set apart, not a line
    labels = [
        TextLine("Q1", (100, 150, 118, 172), SIZE, words=((100, 118),)),
        TextLine("Q2", (168, 150, 186, 172), SIZE, words=((168, 186),)),
        TextLine("Q3", (236, 150, 254, 172), SIZE, words=((236, 254),)),
    ]
    lines = [_measure(25), *row, _measure(100), *labels, _measure(175)]
    assert [ln.text for ln in join_justified(lines)] == [ln.text for ln in lines]


def test_a_sidebar_s_lines_are_text_a_chart_s_labels_are_not():
    sidebar = [
        TextLine("At a glance", (798, 389, 931, 413), 21.0),
        TextLine("Report progress to the", (821, 420, 1064, 442), SIZE),
        TextLine("board in June", (821, 446, 946, 468), SIZE),
        TextLine("Train two more", (821, 470, 1064, 492), SIZE),
        TextLine("inspectors", (821, 494, 919, 516), SIZE),
    ]
    assert stacked_text(sidebar)
    ticks = [
        TextLine(t, (60, 100 + 60 * k, 80, 120 + 60 * k), SIZE) for k, t in enumerate(("60", "40", "20", "0"))
    ]
    quarters = [TextLine(f"Q{k + 1}", (100 + 70 * k, 400, 120 + 70 * k, 420), SIZE) for k in range(4)]
    assert not stacked_text([*ticks, *quarters])
    legend = [
        TextLine(t, (500, 100 + 22 * k, 560, 120 + 22 * k), SIZE) for k, t in enumerate(("North", "South"))
    ]
    assert not stacked_text([*legend, TextLine("East", (500, 144, 540, 164), SIZE)])  # one word a line


NAMES = ("news-justified", "news-ragged")


@pytest.fixture(scope="module")
def news(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("news")
    build(out, NAMES)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_a_three_column_newsletter_reads_column_by_column_with_its_sidebar(textlayer_engine, news, name):
    md = page_markdown(textlayer_engine, news / "pdf" / f"{name}.pdf", 0)
    truth = (news / "gt" / f"{name}.md").read_text(encoding="utf-8")
    assert "<table>" not in md, md
    assert heading_texts(md) == [h.lstrip("#").strip() for h in truth.splitlines() if h.startswith("#")], md
    paragraphs = [p for p in truth.split("\n\n") if p and not p.startswith(("#", "-"))]
    lines = md.splitlines()
    assert all(p.strip() in lines for p in paragraphs), md  # every paragraph whole, none in strips
    assert "- " + truth.split("\n- ")[1].splitlines()[0] in lines, md  # the sidebar's list items


def _boxed_page(tmp_path: Path, chart: bool) -> list[TextLine]:
    """A page of prose with a box of four stacked lines: on a light ground with bullets (a sidebar), or
    over a chart's curve (its legend); the lines as the engine marks them."""
    import pymupdf

    from ocr_app.engines.page_figures import mark_figure_text
    from ocr_app.engines.pdf_spans import extract_lines

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for k in range(12):
        page.insert_text(
            (56, 80 + 14 * k), "The survey asked households how they heat their homes and", fontsize=10
        )
    box = pymupdf.Rect(56, 300, 300, 420)
    if chart:
        page.draw_polyline(
            [(70, 410), (120, 340), (170, 380), (220, 310), (290, 330)], color=(0, 0.4, 0.7), width=1.5
        )
        page.draw_line((60, 415), (295, 415), color=(0, 0, 0))
    else:
        page.draw_rect(box, color=None, fill=(0.91, 0.93, 0.96))
    texts = (
        "Premature mortality in years of",
        "life lost before the age of 75",
        "Income inequality between the",
        "states as a Gini index",
    )
    for k, text in enumerate(texts):
        if not chart and k % 2 == 0:
            page.draw_circle((72, 331 + 13 * k), 1.5, color=None, fill=(0, 0, 0))
        page.insert_text((80, 335 + 13 * k), text, fontsize=10)
    path = tmp_path / f"boxed-{chart}.pdf"
    doc.save(path)
    with pymupdf.open(path) as pdf:
        lines = extract_lines(pdf[0], 1.0)
        mark_figure_text(pdf[0], lines, 1.0, 10.0)
    return [ln for ln in lines if ln.box[1] >= 300]


def test_stacked_lines_on_a_ground_are_text_a_chart_s_legend_stays_in_its_figure(tmp_path):
    assert not any(ln.in_figure for ln in _boxed_page(tmp_path, chart=False))
    assert all(ln.in_figure for ln in _boxed_page(tmp_path, chart=True))
