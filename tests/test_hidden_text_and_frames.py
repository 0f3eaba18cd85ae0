"""Text no reader sees, and a framed table's bottom rule (issue 30, round 14).

Why: ICDAR 2013's us-032 carries 100 pt invisible glyphs ("zy", "yxwvuts") beside its header and over
its body; they were read as words, joined the page number ("## 2 zy") and the first line of text (a
heading). The layout model's box for its framed table reaches past the frame's bottom rule over the
"Source: OIG." note, which became the table's last row; and the structure model, one row short, put
"Mobile:" (under the rule that opens the table's second section) in one cell with "Area". An OCR layer (invisible text over a scan's
picture) and a page whose only text is invisible must keep their words.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure import slot_columns, slot_rows, table_bounds, table_slots
from tests.factories import page_markdown, table_rows

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"
BODY = "The survey counted every household in the district and reported the results by ward and by year."


def _texts(page: pymupdf.Page) -> list[str]:
    return [ln.text for ln in extract_lines(page, 1.0)]


def test_invisible_marks_on_a_page_of_visible_text_are_not_read(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    for k in range(6):
        page.insert_text((72, 100 + 16 * k), BODY, fontsize=10)
    page.insert_text((400, 60), "zy", fontsize=60, render_mode=3)  # render mode 3: invisible
    page.insert_text((72, 400), "hidden watermark", fontsize=40, fill_opacity=0)
    texts = _texts(page)
    assert texts.count(BODY) == 6
    assert not any("zy" in t or "watermark" in t for t in texts)


def test_an_ocr_layer_over_a_picture_keeps_its_words(tmp_path):
    picture = tmp_path / "scan.png"
    Image.new("RGB", (400, 200), "white").save(picture)
    doc = pymupdf.open()
    page = doc.new_page()
    for k in range(6):
        page.insert_text((72, 100 + 16 * k), BODY, fontsize=10)
    page.insert_image(pymupdf.Rect(72, 300, 472, 500), filename=str(picture))
    page.insert_text((80, 350), "Scanned receipt total 42.00", fontsize=12, render_mode=3)
    texts = _texts(page)
    assert "Scanned receipt total 42.00" in texts and texts.count(BODY) == 6


def test_a_page_whose_text_is_all_invisible_keeps_it():
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Text drawn as outlines, searchable through a hidden layer", render_mode=3)
    assert _texts(page) == ["Text drawn as outlines, searchable through a hidden layer"]


@pytest.mark.parametrize(
    "frame, cut",
    [
        ((100, 100, 500, 380), 380),  # the region runs 20 px past the frame's bottom rule: cut there
        ((100, 100, 500, 410), 400),  # the frame ends below the region: nothing to cut
        ((100, 100, 250, 380), 400),  # a grid in one corner of the region is not its table
        ((100, 300, 500, 380), 400),  # nor one under most of it (a ruled total row)
    ],
)
def test_a_table_region_ends_at_the_bottom_of_the_frame_it_holds(frame, cut):
    region = (95, 90, 505, 400)
    assert table_bounds.cut_at_frames(region, [frame])[3] == cut
    assert table_bounds.cut_at_frames(region, [frame])[:3] == region[:3]


def test_a_framed_tables_source_note_and_hidden_marks_stay_out_of_it():
    """us-032: a table drawn in a frame, with a "Source: OIG." note under its bottom rule."""
    engine = TextLayerEngine()
    assert engine._learned, "the tables extra (rapid-table 0.3.0) is part of the dev install"
    md = page_markdown(engine, DATA / "us-032.pdf")
    rows = table_rows(md)
    assert rows[0] == ["Source", "Definition", "Examples"]
    assert not any("Source: OIG" in cell for row in rows for cell in row)
    assert "Source: OIG." in md.split("</table>")[-1]
    assert [r[0] for r in rows] == [
        "Source",
        "Stationary:",
        "Major",
        "Area",
        "Mobile:",
        "On-road",
        "Non-road",
    ]
    assert rows[-1][1].endswith("operated off public roads")
    assert "zy" not in md and "yxwvuts" not in md
    assert not any(line.startswith("#") for line in md.splitlines())  # no heading on this page


def _slot(row: int, col: int, *lines: tuple[float, str], rowspan: int = 1) -> table_slots.Slot:
    x = 20.0 + 120.0 * col
    return table_slots.Slot(row, col, rowspan, words=[((x, y, x + 60, y + 12), t) for y, t in lines])


def test_a_model_row_across_a_rule_drawn_under_all_its_cells_is_two_rows():
    slots = [
        _slot(0, 0, (100, "Area"), (130, "Mobile:")), _slot(0, 1, (100, "Emissions of less")),
        _slot(0, 2, (100, "Dry cleaners")), _slot(0, 3, (100, "north"), rowspan=2),
        _slot(1, 0, (150, "On-road")), _slot(1, 1, (150, "Emissions from")), _slot(1, 2),
    ]  # fmt: skip
    # The rule is drawn cell by cell: three pieces end to end make one rule under the whole row.
    cuts = [(18.0, 122.0, 140.0), (140.0, 122.5, 260.0), (260.0, 122.0, 445.0)]
    out = slot_rows.split_at_rules(slots, cuts)
    rows = slot_rows.cell_rows(out, None)
    assert [[c.text for c in r] for r in rows] == [
        ["Area", "Emissions of less", "Dry cleaners", "north"],
        ["Mobile:", "", ""],
        ["On-road", "Emissions from", ""],
    ]
    spanning = next(s for s in out if s.col == 3)
    assert spanning.rowspan == 3  # a cell down the side still spans every row it did


@pytest.mark.parametrize(
    "cuts, why",
    [
        ([(18.0, 122.0, 140.0)], "a rule under one cell only (an underline, a sub-head's rule)"),
        ([(18.0, 106.0, 400.0)], "a rule through the words' middle (struck through)"),
        ([(18.0, 122.0, 140.0), (200.0, 122.0, 445.0)], "pieces that do not meet"),
        ([(130.0, 122.0, 445.0)], "a rule under a group's columns only (a head over its sub-heads)"),
    ],
)
def test_a_row_stays_whole_without_a_rule_under_all_of_it(cuts, why):
    slots = [
        _slot(0, 0, (100, "Area"), (130, "Mobile:")), _slot(0, 1, (100, "Emissions of less")),
        _slot(0, 2, (100, "Dry cleaners")), _slot(0, 3, (100, "north")),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.split_at_rules(slots, cuts), None)) == 1, why


def test_lines_under_the_rule_that_begin_the_next_rows_cells_join_them():
    """docling's normal_4pages: the model's row reached over the rule and took the first line of the
    next row's cell ("◦ 대상질병에 U코드 일부(3종)" over "포함"); it goes down to that cell, no row of its own."""
    slots = [
        _slot(0, 0, (100, "Disease")), _slot(0, 1, (100, "six kinds")),
        _slot(0, 2, (100, "seventeen kinds"), (130, "some U codes")),
        _slot(1, 0, (156, "U code")), _slot(1, 1, (156, "no U code")), _slot(1, 2, (143, "included")),
    ]  # fmt: skip
    out = slot_rows.split_at_rules(slots, [(18.0, 122.0, 330.0)])
    rows = slot_rows.cell_rows(out, None)
    assert [[c.text for c in r] for r in rows] == [
        ["Disease", "six kinds", "seventeen kinds"],
        ["U code", "no U code", "some U codes included"],
    ]


def test_a_heads_last_line_over_the_rule_goes_back_up_to_its_head():
    """ICDAR's eu-004: "(000)", the last line of "number of enterprises", was fitted to the first row
    of figures; the rule under the heads says it is the head's."""
    slots = [
        _slot(0, 0, (100, "")), _slot(0, 1, (100, "number of"), (112, "enterprises")), _slot(0, 2, (100, "turnover")),
        _slot(1, 0, (140, "EU15")), _slot(1, 1, (124, "(000)"), (140, "2553")), _slot(1, 2, (140, "1261")),
    ]  # fmt: skip
    out = slot_rows.split_at_rules(slots, [(18.0, 138.0, 330.0)])
    rows = slot_rows.cell_rows(out, None)
    assert [[c.text for c in r] for r in rows] == [
        ["", "number of enterprises (000)", "turnover"],
        ["EU15", "2553", "1261"],
    ]


@pytest.mark.parametrize(
    "slots, why",
    [
        (
            [
                _slot(0, 0, (100, "Ammonia (NH3)")),
                _slot(0, 1, (100, "10 000")),
                _slot(1, 0, (112, "Carbon monoxide (CO)"), (128, "Chlorine and")),
                _slot(1, 1, (112, "500 000")),
            ],
            "a row of figures a line under another's",
        ),
        (
            [
                _slot(0, 0, (100, "Ammonia")),
                _slot(0, 1, (100, "a gas")),
                _slot(1, 0, (112, "Argon"), (128, "Barium")),
                _slot(1, 1, (112, "a noble gas"), (128, "a metal")),
            ],
            "a whole row of words set a line under the one above",
        ),
    ],
)
def test_a_whole_row_over_the_rule_is_its_own_row(slots, why):
    out = slot_rows.split_at_rules(slots, [(18.0, 125.0, 330.0)])
    assert [r[0].text for r in slot_rows.cell_rows(out, None)] == [
        slots[0].words[0][1],
        slots[2].words[0][1],
        slots[2].words[1][1],
    ], why


def _at(row: int, col: int, x: float, text: str = "", header: bool = False) -> table_slots.Slot:
    words = [((x, 100 + 20 * row, x + 24, 112 + 20 * row), text)] if text else []
    return table_slots.Slot(row, col, header=header, words=words)


def test_a_headless_column_holding_the_last_rows_figures_under_its_neighbour_is_that_column():
    """ICDAR's eu-023: the model read one column too many and fitted the last rows' "3.1%" and "1.0%"
    to it; they stand under "Often", whose cells in those rows are empty."""
    often = [_at(0, 0, 60, header=True), _at(0, 1, 330, "Often", header=True), _at(0, 2, 380, header=True)]
    body = [[_at(r, 0, 60, f"Item {r}"), _at(r, 1, 329, f"{r}.5%"), _at(r, 2, 380)] for r in range(1, 6)]
    late = [[_at(r, 0, 60, f"Item {r}"), _at(r, 1, 329), _at(r, 2, 331, f"{r}.1%")] for r in (6, 7)]
    slots = often + [s for row in body + late for s in row]
    slot_columns.merge_interleaved_columns(slots)
    rows = slot_rows.cell_rows(slot_columns.drop_columns(slots, slot_columns.empty_columns(slots)), None)
    assert [c.text for c in rows[-1]] == ["Item 7", "7.1%"]
    assert all(len(r) == 2 for r in rows)


def test_a_column_of_its_own_beside_another_stays():
    """Figures standing right of the neighbour's words (a column of the page) stay in their column."""
    slots = [
        s
        for r in range(6)
        for s in (
            _at(r, 0, 60, "a"),
            _at(r, 1, 200, "1" if r < 4 else ""),
            _at(r, 2, 300, "2" if r >= 4 else ""),
        )
    ]
    slot_columns.merge_interleaved_columns(slots)
    assert [s.col for s in slots if s.words and s.words[0][1] == "2"] == [2, 2]


def test_a_label_under_the_rule_over_a_label_alone_in_its_row_is_a_row_of_its_own():
    """ICDAR's us-008: "All Randomly Assigned (N=4,667):" under the heads' rule, a line over "3-Year-Old
    Cohort", which is alone in its row: two labels, two rows (not one cell)."""
    slots = [
        _slot(0, 0, (100, "Sample Group"), (130, "All Randomly Assigned (N=4,667):")),
        _slot(0, 1, (100, "Participation")), _slot(0, 2, (100, "Total")),
        _slot(1, 0, (143, "3-Year-Old Cohort")), _slot(1, 1), _slot(1, 2),
        _slot(2, 0, (170, "Head Start Group")), _slot(2, 1, (170, "85.1%")), _slot(2, 2, (170, "100%")),
    ]  # fmt: skip
    rows = slot_rows.cell_rows(slot_rows.split_at_rules(slots, [(18.0, 122.0, 330.0)]), None)
    assert [r[0].text for r in rows] == [
        "Sample Group",
        "All Randomly Assigned (N=4,667):",
        "3-Year-Old Cohort",
        "Head Start Group",
    ]


def _lines(y: float, cells: list[tuple[float, str]], h: float = 12.0, bold: bool = False) -> list:
    from ocr_app.structure.lines import TextLine

    return [TextLine(text, (x, y, x + 6.0 * len(text), y + h), h, bold) for x, text in cells]


def test_a_caption_over_the_table_and_notes_under_it_in_one_frame_are_not_its_rows():
    """ICDAR's us-014: a frame drawn round an exhibit's caption, its table and its notes; the caption
    ("Exhibit 19", two lines of title, the last "2006–07") and the notes ("Exhibit reads: …", "Note: …"
    with the tails of their paragraphs, "Source: …") came out as rows of the table."""
    head = [
        *_lines(100, [(250, "Exhibit 19")], bold=True),
        *_lines(
            113, [(60, "Percentage of Schools Identified and Not Identified for Improvement, by")], bold=True
        ),
        *_lines(126, [(230, "2006–07")], bold=True),
        *_lines(150, [(50, "Designation"), (300, "Identified"), (420, "Not identified")]),
    ]
    body = [
        ln
        for k in range(4)
        for ln in _lines(166 + 16 * k, [(50, f"Group {k}"), (300, f"{k}4%"), (420, f"{k}%")])
    ]
    notes = [
        *_lines(240, [(50, "Exhibit reads: Thirty-four percent of schools identified for improvement were")]),
        *_lines(253, [(50, "also designated as low-performing.")]),
        *_lines(270, [(50, "Note: Analysis includes respondents in jurisdictions with an initiative")]),
        *_lines(283, [(50, "in 2006–07.")]),
        *_lines(300, [(50, "Source: Principal Surveys.")]),
    ]
    kept = table_bounds._trim_prose(head + body + notes)
    assert [ln.text for ln in kept] == [ln.text for ln in head[3:] + body]


def test_a_head_spanning_the_columns_under_a_caption_stays_in_the_table():
    """A caption's label over a head that spans every column ("Design effect"): only the label goes."""
    lines = [
        *_lines(100, [(200, "Table 3")], bold=True),
        *_lines(118, [(220, "Design effect")]),
        *_lines(134, [(50, "Proportion"), (200, "1.0"), (300, "1.1")]),
        *_lines(150, [(50, "0.99"), (200, "800"), (300, "880")]),
        *_lines(166, [(50, "0.95"), (200, "160"), (300, "176")]),
    ]
    assert [ln.text for ln in table_bounds._trim_prose(lines)][:2] == ["Design effect", "Proportion"]


def test_a_first_row_that_only_starts_like_a_caption_stays():
    """ "Tablets sold" is no caption's label ("Table 3", "Exhibit A-1"): the row stays the table's."""
    lines = [
        *_lines(100, [(200, "Tablets sold")]),
        *_lines(118, [(50, "Region"), (200, "Units"), (300, "Share")]),
        *_lines(134, [(50, "North"), (200, "800"), (300, "12%")]),
        *_lines(150, [(50, "South"), (200, "160"), (300, "9%")]),
    ]
    assert table_bounds._trim_prose(lines)[0].text == "Tablets sold"
