"""Captions, source notes, the tails of titles read apart and charts' labels are no headings (issue 30, round 17).

Why: reading the headings of ICDAR 2013's 67 reports (they have no heading truth; only read), 45 of
them were no headings but captions, notes set bold and the tails of titles: "Exhibit 2a. Summary of ITT Cognitive
Impacts", "Table A-1. Summary of forecast assumptions", "Table ES-1 Percent of Species Range", the
second line of a caption whose label is set plain and its title bold ("Figure SA3." | "Age-specific
distribution ..." / "for reporting MSs, 2007"), and "Source: LSA, 1998" under tables. A caption's
label may be a word other than Table or Figure (Exhibit, Graph, Diagram) and carry letters (an
appendix's "A-1", a series' "SA3"); a note starts with its lead word ("Source:", "Notes:"). A line
that opens on a plain lower-case word ("through 2021–22") is the rest of a title or caption whose first
line was read apart (a running head), when it is the first line of its column. A chart drawn in
vectors whose labels all stand outside its drawn area is a figure by its ticks, and its axis titles
("Age Group", "Year") are its labels, not headings.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pymupdf
import pytest

from ocr_app.structure.headings import CAPTION, NOTE_LINE, lowercase_start
from tests.factories import heading_texts, page_markdown, pages_markdown

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"
BODY = (
    "The regional office reviewed every contract signed during the year and compared the agreed "
    "prices with the amounts finally paid, and most differences were small."
)


@pytest.mark.parametrize(
    "text",
    [
        "Exhibit 2a. Summary",
        "Table A-1. Summary",
        "Table ES-3 Wildlife",
        "Figure SA3.",
        "Graph 3: Sales",
        "Table 1:",
        "Table 1\u2014Command line options recognized by dvipdfm",  # Texinfo's dash (round 24)
        "Figure 2\u2013Results",
    ],
)
def test_caption_labels(text):
    assert CAPTION.match(text)


@pytest.mark.parametrize(
    "text",
    ["Table of Contents", "Tablespoons and cups", "Figures of speech", "Exhibitions", "Table\u2014of sorts"],
)
def test_words_that_start_like_a_label_are_no_caption(text):
    assert not CAPTION.match(text)


def test_note_leads():
    assert NOTE_LINE.match("Source: LSA, 1998") and NOTE_LINE.match("Notes: figures rounded")
    assert not NOTE_LINE.match("Notes") and not NOTE_LINE.match("Note on the methods")


def test_source_notes_under_tables_are_no_headings(textlayer_engine):
    """eu-007 sets "Source: LSA, 1998" under each table in the bold of its headings."""
    md = "\n".join(page_markdown(textlayer_engine, DATA / "eu-007.pdf", k) for k in range(5))
    assert "Source: LSA, 1998" in md
    assert not [h for h in heading_texts(md) if h.startswith("Source")], heading_texts(md)
    assert "8.6.3 Butter and Margarine" in heading_texts(md)


def _report(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 80.0

    def line(x: float, text: str, font: str, size: float, gap: float = 1.25) -> None:
        nonlocal y
        page.insert_text((x, y), text, fontname=font, fontsize=size)
        y += gap * size

    line(72, "1 Results", "hebo", 16, 2.0)
    for _ in range(2):
        for text in textwrap.wrap(BODY, 95):
            line(72, text, "helv", 10)
        y += 10
    # A caption: its label plain, its title bold italic, wrapped under the title's start.
    page.insert_text((72, y), "Figure SA3.", fontname="helv", fontsize=9.5)
    line(130, "Age-specific distribution of reported confirmed cases, TESSy data", "hebi", 9.5)
    line(130, "for reporting countries, 2007", "hebi", 9.5, 2.5)
    line(72, "Exhibit 2a. Summary of Cognitive Impacts by Year", "hebo", 12, 2.0)
    for text in textwrap.wrap(BODY, 95):
        line(72, text, "helv", 10)
    y += 10
    line(72, "Source: Regional accounts, 2007", "hebo", 9.5, 2.5)
    line(72, "2 Discussion", "hebo", 16, 2.0)
    for text in textwrap.wrap(BODY, 95):
        line(72, text, "helv", 10)
    doc.save(path)
    return path


def test_captions_and_notes_set_bold_are_text_and_headings_stay(textlayer_engine, tmp_path):
    md = pages_markdown(textlayer_engine, _report(tmp_path / "report.pdf"))[0]
    assert heading_texts(md) == ["1 Results", "2 Discussion"], md
    # The caption is one paragraph: its title's next line hangs under the title, after the label.
    caption = next(p for p in md.split("\n\n") if p.startswith("Figure SA3."))
    assert caption.endswith("TESSy data for reporting countries, 2007"), caption
    assert "Exhibit 2a. Summary of Cognitive Impacts by Year" in md


@pytest.mark.parametrize(
    "text, tail",
    [
        ("through 2021–22", True),
        ("teacher hires, by control of school: Fall 1996", True),
        ("iPhone sales by region", False),
        ("asn1_create_element", False),
        ("mime.cache", False),
        ("Results", False),
        ("été 2020", False),
        ("new assert.AssertionError(options)", False),
        ("through the year (estimated)", True),
    ],
)
def test_a_line_opening_on_a_plain_lower_case_word(text, tail):
    assert lowercase_start(text) is tail


def test_a_titles_tail_whose_first_line_is_a_running_head_is_no_heading(textlayer_engine):
    """us-018 repeats each table's title over its pages ("Table 14. Actual and projected numbers
    for ..."), so the title's first line goes as a running head; its second line ("through 2021–22")
    was left a heading on every page."""
    md = "\n".join(page_markdown(textlayer_engine, DATA / "us-018.pdf", k) for k in range(3))
    assert "through 2021–22" in md
    assert not [h for h in heading_texts(md) if lowercase_start(h)], heading_texts(md)


def test_a_signature_heading_at_a_pages_top_stays_a_heading(textlayer_engine, printer):
    """Node.js's API pages head an entry with its signature, "new assert.AssertionError(options)",
    in bold at a heading's size. At the top of a page it was taken for a title's tail, the rest of a
    title whose first line went as a running head, and came out as plain text (round 35). A name
    right against its parenthesis is a call, which no title's tail writes."""
    prose = " ".join(["The options object sets the message and the values compared."] * 6)
    html = (
        "<div style='font-family:Liberation Sans,sans-serif;font-size:15px;padding:0 3em'>"
        "<h3>new widget.FrameError(options)</h3>"
        f"<p>{prose}</p><h3>Class: widget.Frame</h3><p>{prose}</p></div>"
    )
    md = pages_markdown(textlayer_engine, printer("signature-top", html))[0]
    assert heading_texts(md)[:2] == ["new widget.FrameError(options)", "Class: widget.Frame"], md


def test_a_heading_wrapped_before_a_lower_case_word_stays_whole(textlayer_engine, tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 80), "Understanding Financial Aid", fontname="hebo", fontsize=16)
    page.insert_text((72, 100), "and Your Loan Options", fontname="hebo", fontsize=16)
    for k, text in enumerate(textwrap.wrap(BODY * 2, 95)):
        page.insert_text((72, 130 + 12.5 * k), text, fontname="helv", fontsize=10)
    doc.save(tmp_path / "title.pdf")
    md = pages_markdown(textlayer_engine, tmp_path / "title.pdf")[0]
    assert heading_texts(md) == ["Understanding Financial Aid and Your Loan Options"], md


def _chart_page(path: Path, *, ticks: bool) -> Path:
    """A report page with a bar chart drawn in vectors: its frame and bars are what it draws; its
    ticks, its bold axis title under them and its upright axis title stand outside the frame."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 70), "1 Cases by age", fontname="hebo", fontsize=14)
    y = 95.0
    for text in textwrap.wrap(BODY * 2, 95):
        page.insert_text((72, y), text, fontname="helv", fontsize=10)
        y += 12.5
    frame = pymupdf.Rect(150, 200, 470, 400)
    page.draw_rect(frame, color=(0, 0, 0), width=0.6)
    for k, h in enumerate([60, 120, 150, 90, 40, 20]):
        x = 165 + 50 * k
        page.draw_rect(pymupdf.Rect(x, 400 - h, x + 25, 400), color=None, fill=(0.2, 0.4, 0.7))
    if ticks:
        for k, v in enumerate(["0", "40", "80", "120", "160"]):
            page.insert_text((130, 403 - 50 * k), v, fontname="helv", fontsize=8)
        page.insert_text((160, 412), "0-4   5-14   15-24   25-44   45-64   ≥65", fontname="helv", fontsize=8)
    page.insert_text((285, 428), "Age Group", fontname="hebo", fontsize=8)
    page.insert_text((118, 360), "Confirmed cases", fontname="helv", fontsize=8, rotate=90)
    page.insert_text((72, 470), "2 Discussion", fontname="hebo", fontsize=14)
    y = 495.0
    for text in textwrap.wrap(BODY * 2, 95):
        page.insert_text((72, y), text, fontname="helv", fontsize=10)
        y += 12.5
    doc.save(path)
    return path


def test_a_charts_labels_outside_its_frame_are_no_headings(textlayer_engine, tmp_path):
    """ICDAR's eu-016 and eu-019 (EU reports): "Age Group" and "Year" under their charts' ticks came
    out as headings; the chart's drawn area held none of its labels, so it was no figure."""
    md = pages_markdown(textlayer_engine, _chart_page(tmp_path / "chart.pdf", ticks=True))[0]
    assert heading_texts(md) == ["1 Cases by age", "2 Discussion"], md
    assert "Age Group" in md and "0-4" in md


def test_a_drawing_without_ticks_takes_no_line_beside_it(textlayer_engine, tmp_path):
    """A drawn box with a bold line under it and no ticks around it shows no chart: the line is read
    as it was (here a heading of its own)."""
    md = pages_markdown(textlayer_engine, _chart_page(tmp_path / "box.pdf", ticks=False))[0]
    assert "Age Group" in heading_texts(md), md


def test_a_title_and_a_source_note_inside_a_tables_frame_stay_out_of_the_table(textlayer_engine):
    """ICDAR's us-013 frames its table with its title ("Exhibit 9 Characteristics of …") on top and
    its source note at the foot, each one ruled row across the table. Once its heads (wrapped in title
    case beside a centred one) read as one row, the rulings' reading took the title and the note in as
    rows of one cell across: they count as spans the model's reading lacks, but they are no cells."""
    md = "\n\n".join(pages_markdown(textlayer_engine, DATA / "us-013.pdf"))
    table = md[md.index("<table>") : md.index("</table>")]
    assert "Exhibit 9" in md and "Exhibit 9" not in table, table
    assert "Source: Adapted from" in md and "Source:" not in table, table
    assert "General Assessment" in table and "Achievement standards" in table, table
