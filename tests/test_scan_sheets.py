"""Scans of a sheet on a darker ground, and what OCR leaves of a leader's dots (issue 30, round 43).

A phone photo or a flatbed scan with its lid open shows the paper on a dark ground. The layout model
boxes the whole sheet as one picture, and its text then came out as a figure's labels: a contents
table with a header row became lines of text (pymupdf4llm's ``test_sce_150_2``). The pages here are
real PDFs made by PyMuPDF and rendered to pixels; the REAL light engine (RapidOCR and the CDLA layout
model) reads them.
"""

from __future__ import annotations

import json

import numpy as np
import pymupdf
import pytest

from bench.accuracy import sheets
from bench.accuracy.printed import build
from ocr_app.engines.light import LightOcrEngine
from ocr_app.structure import ink, rulings
from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from ocr_app.structure.regions import detect_regions
from ocr_app.structure.scan_regions import FIGURE_SCORE, GRAPHIC_INK, _filled_bands, graphic_ink
from ocr_app.structure.word_columns import Part, separators
from tests.test_light_scans import read, scan

ENTRIES = [
    ("1", "Main news", "44"),
    ("2", "Arts and leisure", "24"),
    ("2A", "Holiday movies", "36"),
    ("3", "Business", "28"),
    ("4", "Week in review", "16"),
    ("5", "Travel", "16"),
    ("6", "Magazine", "88"),
    ("7", "Book review", "40"),
    ("8", "Sports", "10"),
    ("11", "Real estate", "36"),
    ("12", "Automobiles", "14"),
]


@pytest.fixture(scope="module")
def engine() -> LightOcrEngine:
    eng = LightOcrEngine()
    eng.load()
    return eng


def sheet_page(ground: tuple[float, float, float]) -> pymupdf.Document:
    """A contents page (a head row, then entries with dot leaders) on a white sheet 60 pt in from
    the edges of a ground of ``ground``'s colour."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.draw_rect(page.rect, fill=ground, color=None)
    page.draw_rect(pymupdf.Rect(60, 20, 535, 830), fill=(1, 1, 1), color=None)
    page.insert_text((230, 120), "CONTENTS", fontsize=12, fontname="cour")
    for x, head in ((110, "SECTION"), (200, "HEADING"), (440, "PAGES")):
        page.insert_text((x, 160), head, fontsize=10, fontname="cour")
    for k, (number, title, pages) in enumerate(ENTRIES):
        y = 190 + 24 * k
        page.insert_text((110, y), number, fontsize=10, fontname="cour")
        page.insert_text(
            (200, y), title + " " + ". " * ((200 - 6 * len(title)) // 12), fontsize=10, fontname="cour"
        )
        page.insert_text((450, y), pages, fontsize=10, fontname="cour")
    return doc


@pytest.mark.parametrize("ground", [(0.3, 0.3, 0.3), (0.5, 0.45, 0.4)])
def test_a_sheet_on_a_dark_ground_is_a_page_not_a_figure(engine: LightOcrEngine, ground) -> None:
    # Before: the model's one box over the sheet held a third of ground ink, so the whole page was an
    # ``image`` block and the table inside it a figure's labels.
    out = read(engine, scan(sheet_page(ground)))
    md = blocks_to_markdown(out.blocks)
    labels = [b.label for b in out.blocks]
    assert "image" not in labels and labels.count("table") == 1, (labels, md)
    assert "<th>SECTION</th><th>HEADING</th><th>PAGES</th>" in md, md
    for number, title, pages in ENTRIES:
        assert f"<td>{number}</td><td>{title}</td><td>{pages}</td>" in md, md
    assert md.index("CONTENTS") < md.index("<table>")


def _row(*cells: tuple[str, float]) -> list[Part]:
    y = 100.0
    return [Part(text, (x, y, x + 6.0 * len(text), y + 10.0), False, 400) for text, x in cells]


def test_a_leaders_stray_dot_fences_in_no_column() -> None:
    """OCR keeps one dot of a row's leader between the title and its page number: the strip on
    either side of it is white in every row, and it made a column of its own holding "•" alone."""
    rows = [_row(("1", 100), ("Main", 200), ("44", 450)) for _ in range(9)]
    rows.append(_row(("6-T", 100), ("Design and living", 200), ("•", 380), ("140", 450)))
    seps = separators(rows, 10.0)
    assert len(seps) == 2, seps
    assert seps[0][1] <= 200 and seps[1][0] >= 200 + 6 * len("Design and living") and seps[1][1] <= 450


def test_a_column_of_marks_under_a_head_stays_a_column() -> None:
    # A feature grid's ticks: the head over them is a word, so the column is one.
    rows = [_row(("Feature", 100), ("Basic", 300), ("Pro", 400))]
    rows += [_row((f"Feature {k}", 100), ("•", 310), ("•", 405)) for k in range(6)]
    rows.append(_row(("Export", 100), ("•", 405)))
    assert len(separators(rows, 10.0)) == 2


def test_dots_in_many_rows_are_a_column() -> None:
    # Dots alone in half the rows are no stray: a column of "." placeholders is the table's own.
    rows = [
        _row(("Item", 100), (".", 300), ("12", 400)) if k % 2 else _row(("Item", 100), ("12", 400))
        for k in range(10)
    ]
    assert len(separators(rows, 10.0)) == 2


def _grid_lines(x0: float, y0: float) -> list[TextLine]:
    """Three rows of four cells under a head row, 40 px apart: a table's lines."""
    return [
        TextLine(f"cell {r}{c}", (x0 + 100 * c, y0 + 40 * r, x0 + 100 * c + 60, y0 + 40 * r + 20), 20.0)
        for r in range(4)
        for c in range(4)
    ]


def _region_page() -> np.ndarray:
    return np.full((400, 500), 255, np.uint8)


def test_text_under_a_band_filled_across_the_region_is_no_figure() -> None:
    # A table whose head row is set on a dark fill: the band spans the region, white lettering in it.
    grey = _region_page()
    grey[40:80, 20:480] = 60
    lines = _grid_lines(40, 50)
    for ln in lines[:4]:
        x0, y0, x1, y1 = (int(v) for v in ln.box)
        grey[y0 + 5 : y1 - 5, x0 + 5 : x1 - 5] = 250  # the head's letters, white on the fill
    region = (10.0, 30.0, 490.0, 220.0)
    assert graphic_ink(grey, region, [ln.box for ln in lines]) >= GRAPHIC_INK  # the model's "figure"
    assert _filled_bands(grey, region, lines)


def test_bars_or_a_photo_under_labels_stay_a_figure() -> None:
    lines = _grid_lines(40, 50)
    region = (10.0, 30.0, 490.0, 220.0)
    bars = _region_page()
    bars[40:80, 20:480] = 60  # a title band...
    bars[120:210, 150:170] = 30  # ...over a chart's bars
    bars[150:210, 350:370] = 30
    assert not _filled_bands(bars, region, lines)
    photo = np.random.default_rng(0).integers(0, 120, (400, 500)).astype(np.uint8)  # dark all over
    assert not _filled_bands(photo, region, lines)
    few = _region_page()
    few[40:80, 20:480] = 60
    assert not _filled_bands(few, region, lines[:4])  # a banner over a line or two: no table's rows


def test_a_table_on_a_dark_head_fill_that_the_model_calls_a_figure_is_read_as_a_table(engine, tmp_path):
    """A report page printed by Chromium (bench/accuracy/printed.py), its table's head row on a blue
    fill, photographed on a dark ground: the layout model boxes the table as a figure, and its cells
    came out as a figure's labels."""
    build(tmp_path, only=("word-wrapped-two-centred",))
    image = sheets.on_ground(sheets.scan(tmp_path / "pdf" / "word-wrapped-two-centred.pdf"), 7)
    figures = [r for r in detect_regions(image) if r.label == "figure" and r.score >= FIGURE_SCORE]
    assert figures, "the layout model no longer calls this table a figure: the test checks nothing"
    out = read(engine, image)
    md = blocks_to_markdown(out.blocks)
    labels = [b.label for b in out.blocks]
    assert "image" not in labels and labels.count("table") == 1, (labels, md)
    assert "<th>Measure</th><th>Description</th><th>Owner</th><th>Due</th>" in md, md
    assert "<td>M3</td>" in md and "Education" in md, md


def test_the_sheets_bench_reads_a_page_plain_and_on_a_ground(tmp_path, capsys):
    # The bench behind docs/ACCURACY.md's round 43 table, on the test's own contents page.
    sheet_page((1.0, 1.0, 1.0)).save(tmp_path / "contents.pdf")
    assert sheets.main([str(tmp_path / "contents.pdf"), "--json", str(tmp_path / "rows.json")]) == 0
    table = capsys.readouterr().out
    assert "| contents.pdf |" in table and "| all: [1, 1] | all: [0, 0] |" in table, table
    [row] = json.loads((tmp_path / "rows.json").read_text())
    assert row["tables"] == [1, 1] and row["figures"] == [0, 0] and row["nid"] > 0.9, row


def _head_fill_page() -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    """A table head on a dark fill, three rows of white lettering in it, and a dark text line over a
    thin rule below it: the text lines' boxes with them."""
    grey = np.full((400, 700), 255, np.uint8)
    grey[40:130, 50:650] = 50  # the fill
    boxes = []
    for y in (48, 76, 104):  # its rows' letters, white, 18 px tall, with 8-10 px of fill between rows
        for x in (60, 250, 450):
            grey[y : y + 18, x : x + 90] = np.where(np.arange(90) % 6 < 2, 250, 50)  # strokes
            boxes.append((float(x), float(y - 2), float(x + 90), float(y + 20)))
    grey[200:218, 60:400] = np.where(np.arange(340) % 6 < 2, 20, 255)  # a dark line of text...
    boxes.append((60.0, 198.0, 400.0, 220.0))
    grey[224:226, 50:650] = 0  # ...over a rule of its own
    return grey, boxes


def test_a_head_fill_cut_by_its_lines_is_no_ruling_inside() -> None:
    """Blanking the text lines' cores cuts a dark head fill into strips as thin as rulings: between
    its rows, and along its top and bottom edges. The fill's edges and the strips between its rows
    framed the head alone as a table drawn by rules (``rule_frames``: four "rules" around three rows
    of cells), split from its body below. The edges stay: they frame a table as rules do."""
    grey, boxes = _head_fill_page()
    thick = max(rulings.MAX_THICK * 30.0, 6.0)
    strips = rulings._segments(rulings._horizontal(rulings.rule_ink(grey), 120, boxes), True, thick)
    inner = [s.pos for s in strips if 50 <= s.pos <= 120]
    assert len(inner) >= 2, "no strips between the fill's rows: the test checks nothing"
    found = rulings.horizontal_rules(grey, line_px=30.0, text_boxes=boxes)
    # The fill's top and bottom edges, and the rule under the dark text; nothing between.
    assert sorted(round(y) for _, y, _ in found) == [44, 126, 225], found


def test_a_table_under_a_dark_head_fill_on_a_scan_is_one_table(engine, tmp_path):
    """A report page printed by Chromium whose table's two head rows are set white on a blue fill,
    with no rules under its body. The fill's strips framed the head as a table of its own, above the
    body's, and its lettering was read into three wrong columns."""
    build(tmp_path, only=("headfill-grouped-two",))
    md = blocks_to_markdown(read(engine, sheets.scan(tmp_path / "pdf" / "headfill-grouped-two.pdf")).blocks)
    assert md.count("<table>") == 1, md
    table = md[md.index("<table>") : md.index("</table>")]
    # Both head rows are heads: the years are bold too (``ink.bold_flags`` counts digits).
    assert '<th rowspan="2">Site</th><th colspan="2">Nitrate (mg/l)</th>' in table, table
    assert "<th>2024</th><th>2025</th><th>2024</th><th>2025</th></tr></thead>" in table, table
    assert "<td>Upper weir</td><td>2.74</td><td>7.90</td><td>3.18</td><td>7.37</td>" in table, table


def test_a_row_of_years_set_bold_is_bold() -> None:
    # Strokes as measured on the probe's scan: body text and figures at 2.0-2.1 px, the head's years
    # at 3.0-3.4 px. Fewer than three glyphs stay unjudged, letters or digits.
    strokes = [2.05, 2.02, 2.08, 2.03, 2.06, 3.35, 3.04, 3.2, 3.3]
    texts = ["The regional office", "2.74", "7.90", "Upper weir", "3.57", "2024", "2025", "Site", "12"]
    assert ink.bold_flags(strokes, texts) == [False] * 5 + [True, True, True, False]


def test_cells_a_column_gap_apart_by_their_ink_are_cells_though_their_boxes_nearly_touch(engine, tmp_path):
    """The probe's report-smallcaps-1 printed by Chromium: a table under a dark head bar, no rules, its
    Description cells long enough to run up to the Owner column. The OCR's boxes are padded: "... on
    the ring road" and "Roads unit" measured 10 px apart (half the body size, the least gap of two
    cells), their ink 30 px. The row was no row of cells, and the table was read column by column."""
    build(tmp_path, only=("report-smallcaps-1",))
    md = blocks_to_markdown(read(engine, sheets.scan(tmp_path / "pdf" / "report-smallcaps-1.pdf")).blocks)
    assert md.count("<table>") == 1, md
    table = md[md.index("<table>") : md.index("</table>")]
    assert "<th>Measure</th><th>Description</th><th>Owner</th><th>Due</th>" in table, table
    row = "<td>M1</td><td>Replace the bearings of the three oldest bridges on the ring road</td><td>Roads unit</td>"
    assert row in table, table


def test_a_rows_cells_are_told_apart_by_their_words_ink_not_their_boxes() -> None:
    from ocr_app.structure.borderless_runs import is_multi

    def line(text: str, box: tuple[float, float, float, float], words: tuple) -> TextLine:
        return TextLine(text, box, 20.0, words=words)

    key = line("M1", (120.0, 1138.0, 158.0, 1164.0), ((128.0, 151.0),))
    words = tuple((226.0 + 40 * k, 260.0 + 40 * k) for k in range(12))
    text = line(
        "Replace the bearings of the three oldest bridges on the ring road",
        (222.0, 1141.0, 718.0, 1163.0),
        words,
    )
    unit = line("Roads unit", (728.0, 1141.0, 826.0, 1163.0), ((740.0, 786.0), (792.0, 820.0)))
    due = line("Q2 2026", (859.0, 1138.0, 939.0, 1166.0), ((867.0, 889.0), (895.0, 932.0)))
    assert is_multi([key, text, unit, due], 20.0, 1192.0)
    # Boxes 8 px apart and ink 11 px: a word space the detector split the line at, not a column gap.
    full = line(text.text, text.box, (*words[:-1], (666.0, 716.0)))
    close = line("Roads unit", (726.0, 1141.0, 826.0, 1163.0), ((727.0, 786.0), (792.0, 820.0)))
    assert not is_multi([key, full, close, due], 20.0, 1192.0)
    # Two pieces, a note's marker and its text (ICDAR's us-009 as a scan): boxes 7 px apart, ink 22 px.
    marker = line("(1)", (136.0, 1033.0, 168.0, 1058.0), ((142.0, 159.0),))
    spans = tuple((181.0 + 120 * k, 281.0 + 120 * k) for k in range(7))
    note = line("Unallowable costs per OMB Circular A-122 include", (175.0, 1035.0, 1083.0, 1054.0), spans)
    assert not is_multi([marker, note], 17.6, 1224.0)


def test_a_right_to_left_lines_ink_spans_its_words_whatever_order_they_come_in() -> None:
    """A right-to-left line lists its words from the right (the text layer's glyph runs): its first
    word's start is its right end. Read as the left end, a paragraph of docling's right_to_left_02 was
    a row of cells, and cutting it failed."""
    from ocr_app.structure.borderless_runs import _ink_span, is_multi
    from ocr_app.structure.word_columns import cut

    words = ((480.0, 560.0), (400.0, 470.0), (300.0, 390.0), (100.0, 290.0))
    line = TextLine("وعليه فإن الحكومة المصرية", (100.0, 100.0, 560.0, 120.0), 12.0, words=words)
    assert _ink_span([line]) == (100.0, 560.0)
    assert not is_multi([line], 12.0, 612.0)
    parts = cut([line], [(470.0, 480.0)], 12.0)  # at its first word as listed: an empty part
    assert all(p.text for p in parts) and " ".join(p.text for p in parts).split() == line.text.split()


def test_a_tables_head_white_on_a_blue_bar_is_its_header_row(engine, tmp_path):
    """The probe's word-plain-wide printed by Chromium, as a scan: Word's table style, the head white
    on a blue bar and the body parted by pale rules. The bar's foot was no ruling: the grid began a
    row down, "North 629 653 +3.8" became the head, and "Region 2023 2024 Change (%)" a heading."""
    build(tmp_path, only=("word-plain-wide",))
    md = blocks_to_markdown(read(engine, sheets.scan(tmp_path / "pdf" / "word-plain-wide.pdf")).blocks)
    assert md.count("<table>") == 1, md
    assert "<thead><tr><th>Region</th><th>2023</th><th>2024</th><th>Change (%)</th></tr></thead>" in md, md
    assert "<tbody><tr><td>North</td><td>629</td><td>653</td><td>+3.8</td></tr>" in md, md
    assert not any(ln.startswith("#") and "Region" in ln for ln in md.splitlines()), md


def test_a_ruled_table_broken_across_two_columns_is_one_table_with_its_broken_row_whole(engine, tmp_path):
    """The probe's grid-wrapped-two-centred printed by Chromium, as a scan: the table breaks at the
    foot of the first column inside row M2, whose part there is ruled at its sides only; the head
    repeats at the top of the second. M2's first lines were read as text between two tables."""
    build(tmp_path, only=("grid-wrapped-two-centred",))
    md = blocks_to_markdown(
        read(engine, sheets.scan(tmp_path / "pdf" / "grid-wrapped-two-centred.pdf")).blocks
    )
    assert md.count("<table>") == 1, md
    row = "<tr><td>M2</td><td>Publish quarterly water quality data for all forty stations</td><td>Environment</td>"
    assert row in md, md
    assert [ln for ln in md.splitlines() if ln.startswith("M2")] == [], md
