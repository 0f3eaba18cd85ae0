"""Slides printed by Chromium from the probe set of ``bench/accuracy/printed.py`` (issue 30, round 10)
and read by the real text-layer engine.

Before: the rows of a table carried over to the next slide, under the repeated heads, were three rows of
a grid that the layout model did not call a table, so they came out as one line of text ("Item Budget
Spent Share Vehicles 513 374 73% Rent 806 670 83%") and the table could not be joined across the break;
and a slide's title on a dark bar right above a table under a bar of the same colour was the table's
first header row (the layout model's box took both in).

Round 11: two tables side by side on a slide, each under its own head, were one table of six columns
whose first header row was the two heads (deck-pair-plain: TEDS 0.50, found by the word positions;
deck-pair-samesize: 0.52, read by the structure model in one layout box over both); and a slide's panel heads set in italics a little larger than the panel's text, in panels too
narrow for the head to look short against them, were text (deck-samesize-kicker: MHS 0.51).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.accuracy.printed import build
from ocr_app.render.markdown import table_going_on, trailing_table
from tests.factories import heading_texts, page_markdown, pages_markdown, table_rows

NAME = "zebra-labelled-slide"
BAR = "deck-bar-plain"
PANELS = "deck-samesize-kicker"
PAIR = "deck-pair-plain"
PAIR_BOXED = "deck-pair-samesize"  # the layout model boxes both tables as one: the structure model's path
PLAIN = "deck-plain"


@pytest.fixture(scope="module")
def slides(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("slides")
    build(out, (NAME, BAR, PANELS, PAIR, PAIR_BOXED, PLAIN))
    return out


def test_rows_carried_over_under_repeated_heads_are_a_table_that_joins_the_one_before(
    textlayer_engine, slides
):
    pdf = slides / "pdf" / f"{NAME}.pdf"
    before, after = (page_markdown(textlayer_engine, pdf, k) for k in (1, 2))
    assert table_rows(after) == [
        ["Item", "Budget", "Spent", "Share"],
        ["Vehicles", "513", "374", "73%"],
        ["Rent", "806", "670", "83%"],
    ], after
    _, held = trailing_table(before)
    assert held, before
    joined, rest = table_going_on(held, after)
    rows = table_rows(joined)
    assert [r[0] for r in rows][-3:] == ["Energy", "Vehicles", "Rent"] and rows.count(rows[0]) == 1, joined
    assert "Vehicles" not in rest, rest


def test_a_slide_title_on_a_bar_over_a_table_is_the_slide_s_heading(textlayer_engine, slides):
    md = page_markdown(textlayer_engine, slides / "pdf" / f"{BAR}.pdf", 3)
    assert "Costs by region" in heading_texts(md), md
    assert table_rows(md)[0] == ["Region", "2023", "2024", "Change (%)"], md


def test_italic_panel_heads_a_little_larger_than_their_text_are_headings_under_the_slide_title(
    textlayer_engine, slides
):
    md = page_markdown(textlayer_engine, slides / "pdf" / f"{PANELS}.pdf", 2)
    levels = {
        ln.lstrip("#").strip(): len(ln) - len(ln.lstrip("#")) for ln in md.splitlines() if ln.startswith("#")
    }
    heads = ("Safer crossings", "Open data", "Faster repairs")
    assert all(levels.get(h, 0) > levels["Three priorities for 2026"] for h in heads), md
    assert "Forty crossings get new lights and raised tables." in md.splitlines(), (
        md
    )  # the panel's text stays text


def test_two_tables_side_by_side_are_two_tables_under_their_heads(textlayer_engine, slides):
    md = page_markdown(textlayer_engine, slides / "pdf" / f"{PAIR}.pdf", 6)
    assert heading_texts(md)[-2:] == ["Costs", "Staff"], md
    costs, staff = md.split("### Staff")
    assert table_rows(costs)[0] == ["Region", "Cost", "Change"] and len(table_rows(costs)) == 5, md
    assert table_rows(staff)[0] == ["Region", "Staff", "Change"] and len(table_rows(staff)) == 5, md


def test_two_tables_side_by_side_in_one_layout_box_are_read_one_by_one(textlayer_engine, slides):
    md = page_markdown(textlayer_engine, slides / "pdf" / f"{PAIR_BOXED}.pdf", 6)
    costs, staff = md.split("<table>")[1:]
    assert table_rows("<table>" + costs)[0] == ["Region", "Cost", "Change"], md
    assert table_rows("<table>" + staff)[0] == ["Region", "Staff", "Change"], md
    assert all(len(table_rows("<table>" + t)) == 5 for t in (costs, staff)), md  # heads and four rows


def test_the_third_panels_head_in_the_right_part_of_a_slide_is_a_heading(textlayer_engine, slides):
    """Three panels side by side, each under a bold head a little larger than its text: the third
    head, read as a section of a few words in the right part of the page, is no button's label
    (round 29: the rule for Node.js's "COPY" buttons took it for one, until it kept to lines set
    smaller than the body)."""
    heads = heading_texts("\n\n".join(pages_markdown(textlayer_engine, slides / "pdf" / f"{PLAIN}.pdf")))
    for head in ("Safer crossings", "Open data", "Faster repairs"):
        assert heads.count(head) == 2, heads  # on the priorities slide and on the programme's
