"""Scans of a sheet on a darker ground, and what OCR leaves of a leader's dots (issue 30, round 43).

A phone photo or a flatbed scan with its lid open shows the paper on a dark ground. The layout model
boxes the whole sheet as one picture, and its text then came out as a figure's labels: a contents
table with a header row became lines of text (pymupdf4llm's ``test_sce_150_2``). The pages here are
real PDFs made by PyMuPDF and rendered to pixels; the REAL light engine (RapidOCR and the CDLA layout
model) reads them.
"""

from __future__ import annotations

import pymupdf
import pytest

from ocr_app.engines.light import LightOcrEngine
from ocr_app.structure.pipeline import blocks_to_markdown
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
