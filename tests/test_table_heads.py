"""Column heads that stand apart above a table (issue 30): a balance sheet's years over its figures,
above a rule, with an empty first cell. The layout model's box starts at the first body row; the heads
must still be the table's first row. Real text-layer engine and models, PDFs built with PyMuPDF."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure import table_bounds
from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

INTRO = (
    "The balance sheet below shows the group's assets and liabilities at the end of the last two "
    "financial years, in thousands of euros."
)
AFTER = "Borrowings fell as the group repaid part of its term loan ahead of schedule."
SECTIONS = [
    ("Assets", [("Property, plant and equipment", "12,410", "11,980"), ("Intangible assets", "3,220", "3,400"),
                ("Inventories", "5,115", "4,870"), ("Trade receivables", "7,340", "6,910"), ("Cash", "2,050", "1,760")]),
    ("Liabilities", [("Borrowings", "9,800", "10,400"), ("Trade payables", "4,420", "4,100"),
                     ("Provisions", "1,150", "1,090")]),
]  # fmt: skip


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    return TextLayerEngine()


def _balance_sheet(path: Path, above: str) -> Path:
    """The table with its section bars on fills; ``above``: "years" (the heads over the figure
    columns) or "caption" (a one-line caption instead)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "Consolidated balance sheet", fontsize=14, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(50, 70, 545, 110), INTRO, fontsize=9.5, fontname="helv")
    y = 130.0
    if above == "years":
        page.insert_text((380, y), "2023", fontsize=9, fontname="hebo")
        page.insert_text((470, y), "2022", fontsize=9, fontname="hebo")
    else:
        page.insert_text((50, y), "Table 4. Balance sheet at 31 December", fontsize=9, fontname="helv")
    y += 6
    page.draw_line((50, y), (545, y), width=0.5)
    y += 14
    for section, rows in SECTIONS:
        page.draw_rect(pymupdf.Rect(50, y - 11, 545, y + 5), color=None, fill=(0.85, 0.88, 0.95))
        page.insert_text((54, y), section, fontsize=9.5, fontname="hebo")
        y += 18
        for label, a, b in rows:
            page.insert_text((54, y), label, fontsize=9, fontname="helv")
            page.insert_text((380, y), a, fontsize=9, fontname="helv")
            page.insert_text((470, y), b, fontsize=9, fontname="helv")
            y += 15
        y += 6
    page.draw_line((50, y - 10), (545, y - 10), width=0.5)
    page.insert_textbox(pymupdf.Rect(50, y + 10, 545, y + 60), AFTER, fontsize=9.5, fontname="helv")
    doc.save(path)
    return path


def _markdown(engine: TextLayerEngine, pdf: Path) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, 144, prompt="")])[0].blocks)


def test_years_above_a_rule_are_the_tables_first_row(tmp_path, engine):
    md = _markdown(engine, _balance_sheet(tmp_path / "years.pdf", "years"))
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    assert re.sub(r"</?t[hd]>", "|", rows[0]).replace("||", "|") == "||2023|2022|", rows[0]
    assert "<td>Borrowings</td><td>9,800</td><td>10,400</td>" in table
    assert "2023 2022" not in md.replace(table, "")  # not a line of text above the table any more
    assert_in_order(md, [INTRO[:30], "<table>", AFTER[:30]])


def test_a_caption_above_stays_text(tmp_path, engine):
    md = _markdown(engine, _balance_sheet(tmp_path / "caption.pdf", "caption"))
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert "Table 4" not in table and "Table 4. Balance sheet" in md.replace(table, "")


def _line(text: str, x0: float, y0: float, x1: float) -> TextLine:
    return TextLine(text, (x0, y0, x1, y0 + 18), 18)


BODY = (
    [_line(label, 100, 300 + 30 * k, 380) for k, label in enumerate(["Property", "Inventories", "Cash"])]
    + [_line(f"{k},410", 760, 300 + 30 * k, 820) for k in range(3)]
    + [_line(f"{k},980", 940, 300 + 30 * k, 1000) for k in range(3)]
)


def test_heads_above_take_only_short_pieces_over_separate_columns_right_above():
    years = [_line("2023", 770, 262, 815), _line("2022", 950, 262, 995)]
    assert table_bounds._heads_above(BODY, [*BODY, *years]) == years
    # not: too far above (more than HEAD_GAP rows), one piece only, words over one label, a sentence
    far = [_line("2023", 770, 200, 815), _line("2022", 950, 200, 995)]
    one = [_line("2023", 770, 262, 815)]
    label = [_line("Group", 100, 262, 160), _line("unaudited", 200, 262, 300)]
    sentence = [_line("Figures in thousands of euros, audited", 100, 262, 700), _line("2022", 950, 262, 995)]
    # ... or the last row of a table above, which holds values (p4llm's test_sce_150_1)
    values = [_line("CHANGE_AT_MAX", 100, 262, 300), _line("25.16%", 940, 262, 1000)]
    for row in (far, one, label, sentence, values):
        assert table_bounds._heads_above(BODY, [*BODY, *row]) == [], row


def test_heads_centred_over_columns_of_figures_set_flush_right_are_taken():
    """Heads centred in wide columns stand over none of their figures, set flush right: "Budget" a
    row's height left of its column (the probe's rows-labelled-wide-centred, both engines)."""
    heads = [_line("Item", 150, 262, 200), _line("Budget", 700, 262, 745), _line("Spent", 880, 262, 925)]
    assert table_bounds._heads_above(BODY, [*BODY, *heads]) == heads
    # A head as near one column as the next belongs to neither; one far from every column, to none.
    between = [_line("Item", 150, 262, 200), _line("Budget spent", 830, 262, 930)]
    far = [_line("Item", 150, 262, 200), _line("Budget", 600, 262, 640)]
    for row in (between, far):
        assert table_bounds._heads_above(BODY, [*BODY, *row]) == [], row


def _segments(path: Path) -> Path:
    """Two groups of years under spanning heads ("Revenue", "Operating profit"), each group with a rule
    of its own under its head and a white gap between the groups (booktabs' cmidrules)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(50, 50, 545, 90), INTRO, fontsize=9.5, fontname="helv")
    y = 110.0
    page.draw_line((50, y), (545, y), width=0.8)
    y += 14
    page.insert_text((262, y), "Revenue", fontsize=9, fontname="hebo")
    page.insert_text((432, y), "Operating profit", fontsize=9, fontname="hebo")
    y += 5
    page.draw_line((230, y), (350, y), width=0.4)
    page.draw_line((400, y), (545, y), width=0.4)
    y += 13
    page.insert_text((54, y), "Segment", fontsize=9, fontname="hebo")
    for x, head in [(240, "2023"), (300, "2022"), (420, "2023"), (490, "2022")]:
        page.insert_text((x, y), head, fontsize=9, fontname="hebo")
    y += 5
    page.draw_line((50, y), (545, y), width=0.4)
    y += 14
    for row in SEGMENTS:
        for x, cell in zip((54, 240, 300, 420, 490), row, strict=True):
            page.insert_text((x, y), cell, fontsize=9, fontname="helv")
        y += 15
    page.draw_line((50, y - 6), (545, y - 6), width=0.8)
    page.insert_textbox(pymupdf.Rect(50, y + 10, 545, y + 60), AFTER, fontsize=9.5, fontname="helv")
    doc.save(path)
    return path


SEGMENTS = [
    ("Industrial", "4,210", "3,980", "512", "470"),
    ("Consumer", "2,880", "2,950", "301", "322"),
    ("Services", "1,640", "1,410", "288", "241"),
    ("Other", "220", "260", "-35", "-28"),
]


def test_spanning_group_heads_over_a_gap_keep_their_spans_and_no_empty_column(tmp_path, engine):
    md = _markdown(engine, _segments(tmp_path / "segments.pdf"))
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    assert '<th colspan="2">Revenue</th><th colspan="2">Operating profit</th>' in rows[0], rows[0]
    assert rows[1] == "<th>2023</th><th>2022</th><th>2023</th><th>2022</th>", rows[1]
    for row, cells in zip(rows[2:], SEGMENTS, strict=True):
        assert row == "".join(f"<td>{c}</td>" for c in cells), row
