"""A caption set beside its table is not the table's first column (issue 30, round 25).

Why: KOMA-Script's guide sets table captions in the margin left of the table ("Table 3.6.: Default
font styles for the elements of the table of contents" in three short lines). The layout model's table
box takes them in, and the caption came out as a first column spanning every row. ``learned_tables.
_trim_side_caption`` takes such a column out: the region's top-left line opens with a caption label,
no other line does, and the column lies wholly left of the table.
"""

from __future__ import annotations

from ocr_app.structure.lines import TextLine
from ocr_app.structure.table_bounds import _trim_side_caption


def _ln(text: str, x0: float, y: float, x1: float) -> TextLine:
    return TextLine(text=text, box=(x0, y, x1, y + 28.0), size=23.0)


TABLE = [
    _ln("Element", 434, 100, 525),
    _ln("Default font style", 753, 100, 948),
    _ln("partentry", 434, 157, 554),
    _ln("\\usekomafont{disposition}\\large", 753, 157, 1168),
    _ln("chapterentry", 434, 221, 594),
    _ln("\\usekomafont{disposition}", 753, 221, 1100),
]
CAPTION = [
    _ln("Table 3.6.: Default", 143, 68, 333),
    _ln("font", 358, 68, 398),  # the justified line's second piece
    _ln("styles for the elements of", 143, 96, 398),
    _ln("the table of contents", 143, 124, 352),
]


def test_a_caption_in_the_margin_left_of_the_table_is_taken_out():
    assert _trim_side_caption([*CAPTION, *TABLE]) == TABLE


def test_a_first_column_of_table_labels_stays():
    listing = [_ln(f"Table {k}", 143, 68 + 40 * k, 240) for k in range(1, 4)]
    titles = [_ln(f"Population by region, part {k}", 434, 68 + 40 * k, 800) for k in range(1, 4)]
    held = [*listing, *titles]
    assert _trim_side_caption(held) == held


def test_a_caption_over_the_table_or_reaching_into_its_columns_stays_for_the_other_rules():
    over = [_ln("Table 2: Defaults of the letter class options", 143, 40, 900), *TABLE]
    assert _trim_side_caption(over) == over
    wide = [_ln("Table 3.6.: Default font styles", 143, 68, 600), *TABLE]
    assert _trim_side_caption(wide) == wide
