"""Framed tables set one under another with a section heading over each (issue 30, round 24).

Why: luaharfbuzz's reference (an LDoc page printed by Chrome, shipped in TeX Live's documentation)
sets a small framed table of methods under each class's heading. The layout model boxed the whole
stack as one table, and the headings became rows spanning it (``<td colspan="2">Class
Direction</td>``): seven tables came out as two and the outline lost six headings. The frames now cut
such a box into one region per table (``structure.stacked_frames``). With the tables read apart, the
page's only lines outside them were those headings; the page's body size was taken from them and
the document's heading sizes scaled to it, so the titles came out a level deeper than the same
titles on the next page (``passes.prepare._bold_at``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.lines import TextLine
from ocr_app.structure.passes.prepare import _bold_at
from ocr_app.structure.stacked_frames import split_at_frames
from tests.factories import page_markdown

PDF = Path(__file__).parent / "data" / "public" / "manuals" / "luaharfbuzz-p3-p12.pdf"
HEADINGS = [
    "Predefined Script Codes",
    "Class Direction",
    "Predefined directions",
    "Class Language",
    "Predefined languages",
    "Predefined Name IDs",
]


def _line(
    text: str, y: float, size: float = 10.0, x0: float = 100.0, x1: float = 300.0, bold=False
) -> TextLine:
    return TextLine(text=text, box=(x0, y, x1, y + size), size=size, bold=bold)


REGION = (90.0, 90.0, 510.0, 420.0)
FRAMES = [(95.0, 100.0, 505.0, 200.0), (95.0, 260.0, 505.0, 400.0)]
CELLS = [_line("Direction.new (dir)", 110.0), _line("Direction.LTR", 270.0), _line("Direction.RTL", 300.0)]


def test_a_heading_between_two_frames_parts_the_region():
    heading = _line("Predefined directions", 225.0, size=13.0, bold=True)
    parts = split_at_frames(REGION, FRAMES, [*CELLS, heading])
    assert parts == [(90.0, 90.0, 510.0, 200.0), (90.0, 238.0, 510.0, 420.0)]


def test_a_line_in_the_cells_size_between_frames_is_a_row_group_and_keeps_the_region_whole():
    label = _line("Staff", 225.0, size=10.0, bold=True)
    assert split_at_frames(REGION, FRAMES, [*CELLS, label]) == [REGION]


def test_column_heads_over_a_frame_stay_with_it_and_a_heading_below_the_last_frame_ends_it():
    heading = _line("Predefined directions", 215.0, size=13.0, bold=True)
    heads = [_line("Name", 240.0, x1=150.0), _line("Value", 240.0, x0=320.0, x1=360.0)]
    after = _line("Class Language", 405.0, size=13.0, bold=True)
    parts = split_at_frames(REGION, FRAMES, [*CELLS, heading, *heads, after])
    assert parts == [(90.0, 90.0, 510.0, 200.0), (90.0, 228.0, 510.0, 400.0)]


def test_one_frame_or_frames_side_by_side_give_the_region_back():
    heading = _line("Predefined directions", 225.0, size=13.0, bold=True)
    assert split_at_frames(REGION, FRAMES[:1], [*CELLS, heading]) == [REGION]
    beside = [(95.0, 100.0, 505.0, 300.0), (95.0, 250.0, 505.0, 400.0)]  # overlapping: no stack
    assert split_at_frames(REGION, beside, [*CELLS, heading]) == [REGION]


def test_a_page_whose_common_size_is_bold_titles_keeps_the_document_scale():
    titles = [_line(t, 100.0 + 40 * i, size=13.0, bold=True) for i, t in enumerate(HEADINGS)]
    plain = [_line("Language.INVALID Wraps HB_LANGUAGE_INVALID.", 400.0, size=10.0)]
    assert _bold_at([*titles, *plain], 13.0)
    assert not _bold_at([*titles, *plain], 10.0)


@pytest.fixture(scope="module")
def engine(textlayer_engine: TextLayerEngine) -> TextLayerEngine:
    assert textlayer_engine._learned, "the tables extra (rapid-table 0.3.0) is part of the dev install"
    return textlayer_engine


def test_luaharfbuzz_tables_under_their_class_headings_come_out_apart(engine):
    md = page_markdown(engine, PDF, 0)
    lines = md.splitlines()
    for title in HEADINGS:
        assert f"## {title}" in lines, (title, md[:2000])
        assert f">{title}<" not in md, title  # no table cell holds a heading
    tables = [ln for ln in lines if ln.startswith("<table>")]
    assert len(tables) >= 6, md
    direction = next(t for t in tables if "Direction.new (dir)" in t)
    assert "Direction:is_backward ()" in direction and "Direction.LTR" not in direction
    # the titles keep the level of the same titles on the next page
    assert "## Class Script" in page_markdown(engine, PDF, 1).splitlines()
