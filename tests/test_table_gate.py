"""Which born-digital pages the layout model is asked about (``structure.table_gate``; issue 30's speed
bar: pages without tables cost no more than before the learned tables).

Before: a page in two columns of running text passed the test on its paragraph ends alone (a short
last line of one column beside a full line of the other reads as "a label beside a value"), and every
page of a two-column paper paid for the layout model: 0.25-0.35 CPU s a page instead of 0.07.
"""

from __future__ import annotations

import pymupdf

from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.structure.lines import body_size, group_rows
from ocr_app.structure.rule_frames import piece_spans
from ocr_app.structure.table_gate import column_gutter, worth_looking

SENTENCES = [
    "The committee met on three occasions during the year to review the progress of the programme.",
    "Each meeting considered the reports of the working groups and the accounts of the quarter.",
    "Members noted that the revised schedule had been met in every region but one.",
    "A further review is planned.",
    "The survey of households was extended to the northern districts in the spring of that year.",
    "Response rates were higher than in earlier rounds, which the team put down to the new forms.",
    "Results follow below.",
]
CSS = "p {font-family: serif; font-size: 10pt; text-align: justify; margin: 0 0 6pt 0;}"
TABLE_CSS = CSS + " td {font-size: 10pt; padding: 1pt 14pt 1pt 0;}"


def _paragraphs(k: int) -> str:
    """Paragraphs of a few sentences each, their last lines of different lengths."""
    return "".join(
        f"<p>{' '.join(SENTENCES[(k + j) % len(SENTENCES)] for j in range(n))}</p>"
        for n in (1, 2, 1, 3, 1, 2, 1, 2)
    )


def _page(left: str, right: str, *, across: str = "") -> tuple[list, float]:
    """A US-letter page in two columns (``left``, ``right``: HTML), ``across``: a block over both
    columns at the top; its lines as the text layer reads them, and the body size."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    top = 60
    if across:
        page.insert_htmlbox(pymupdf.Rect(54, top, 558, top + 120), across, css=TABLE_CSS)
        top += 130
    page.insert_htmlbox(pymupdf.Rect(54, top, 297, 740), left, css=TABLE_CSS)
    page.insert_htmlbox(pymupdf.Rect(315, top, 558, 740), right, css=TABLE_CSS)
    lines = extract_lines(page, 2.0)
    doc.close()
    return lines, body_size(lines)


def _short_beside_long(lines: list, body: float) -> int:
    """Rows of two pieces a cell gap apart, one of them of three words or fewer: what the test counted
    before it knew of gutters."""
    count = 0
    for row in group_rows(lines):
        cut = piece_spans(row.items, body)
        if len(cut) == 2 and min(len(p.words) for p in cut) <= 3:
            count += 1
    return count


def test_two_columns_of_running_text_are_not_worth_the_layout_model():
    lines, body = _page(_paragraphs(0), _paragraphs(3))
    assert _short_beside_long(lines, body) >= 3  # paragraph ends beside full lines: what fooled it
    rows = [cut for row in group_rows(lines) if len(cut := piece_spans(row.items, body)) >= 2]
    gutter = column_gutter(rows, body)
    assert gutter is not None
    end, start = gutter
    assert 290 * 2 - body <= end <= 297 * 2 and 315 * 2 - body <= start <= 315 * 2 + body
    assert not worth_looking(lines, body, drawn=False)
    assert worth_looking(lines, body, drawn=True)  # rulings or fills: always asked


TABLE = (
    "<table><tr><td>Region</td><td>Sites</td><td>Share</td></tr>"
    "<tr><td>North</td><td>14</td><td>21 %</td></tr>"
    "<tr><td>South</td><td>22</td><td>33 %</td></tr>"
    "<tr><td>East</td><td>31</td><td>46 %</td></tr></table>"
)


def test_a_table_inside_one_column_is_still_worth_it():
    lines, body = _page(_paragraphs(0) + TABLE + _paragraphs(2), _paragraphs(3))
    assert worth_looking(lines, body, drawn=False)


def test_a_table_over_both_columns_is_still_worth_it():
    wide = TABLE.replace("<td>Share</td>", "<td>Share</td><td>Change on the year</td>")
    for label, value in (("21 %", "up"), ("33 %", "down"), ("46 %", "level")):
        wide = wide.replace(f"<td>{label}</td>", f"<td>{label}</td><td>{value}</td>")
    lines, body = _page(_paragraphs(0), _paragraphs(3), across=wide)
    assert worth_looking(lines, body, drawn=False)


def _hung(rows: list[tuple[str, ...]]) -> tuple[list, float]:
    """A one-column page of prose with ``rows`` set in pieces a cell gap apart (at 72, 108, 400 pt)."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80
    for sentence in SENTENCES:
        page.insert_text((72, y), sentence[:90], fontsize=10)
        y += 14
    for row in rows:
        for x, piece in zip((72, 108, 400), row, strict=False):
            page.insert_text((x, y), piece, fontsize=10)
        y += 14
    lines = extract_lines(page, 2.0)
    doc.close()
    return lines, body_size(lines)


MARKED = [
    ("6.1", "Market size and the size of the firms in the sector"),
    ("•", "Over time, we know that the number of firms grew"),
    ("33.", "Two recent studies show the effect of the new rules"),
    ("(b)", "Even acknowledging that the data are partial, the trend holds"),
]


def test_marks_hung_before_lines_of_text_are_no_cells():
    """Numbered sections, numbered paragraphs and bullets with their mark set apart in the margin
    (ICDAR 2013's EU reports: 14 pages that asked the model and hold no table)."""
    lines, body = _hung(MARKED)
    assert _short_beside_long(lines, body) >= 3  # a short piece beside a long one: what fooled it
    assert not worth_looking(lines, body, drawn=False)


def test_numbers_beside_short_cells_or_in_rows_of_three_still_count():
    short = [("1", "North"), ("2", "South"), ("3", "East")]
    assert worth_looking(*_hung(short), drawn=False)
    three = [(mark, text, "2,400") for mark, text in MARKED]
    assert worth_looking(*_hung(three), drawn=False)
