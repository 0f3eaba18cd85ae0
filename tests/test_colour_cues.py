"""Colour as a cue (issue 30 item 4): reports and brochures set their headings in a brand colour (blue,
teal), at body size or only a little larger and not bold, and their running headers and footers in a
light grey. Text lines carry the colour of their characters (``TextLine.color``), the document profile
the body's (``DocStyle.body_color``). Pages built with PyMuPDF, read through the text-layer engine.

Controls (guards, they pass without the colour cue too): blue links inside paragraphs, a coloured line
that runs on into a paragraph, a coloured pull quote, a table's coloured header row and black bold
headings are read as before."""

from __future__ import annotations

import pytest

from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import SURVEY_TEXT, body_paragraph, heading_texts, pages_markdown, saved_markdown

pymupdf = import_pymupdf()

BLUE = (0.0, 0.35, 0.7)
TEAL = (0.0, 0.5, 0.5)
GREY = (0.62, 0.62, 0.62)
DARK = (0.2, 0.2, 0.2)  # a dark grey body text
WORDS = SURVEY_TEXT.split()


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _blocks(engine, doc, tmp_path):
    from tests.factories import pdf_page_request

    pdf = tmp_path / "blocks.pdf"
    doc.save(pdf)
    return engine.predict_batch([pdf_page_request(pdf, 0, 72, prompt="")])[0].blocks


def test_colour_helpers_tell_accents_from_black_and_grey():
    """The colour tests themselves: blue, teal, red and a dark navy are accents against black; black, a
    near-black, greys and white are not; a light grey is light grey, a mid grey is not."""
    from ocr_app.structure.lines import accent, light_grey

    black = 0x000000
    for color in (0x0059B3, 0x008080, 0xC00000, 0x1F3864):
        assert accent(color, black), hex(color)
    for color in (0x000000, 0x1A1A1A, 0x202830, 0x808080, 0x9E9E9E, 0xFFFFFF):
        assert not accent(color, black), hex(color)
    assert not accent(0x0059B3, 0x0055B0)  # a document set in blue throughout
    assert not accent(0x0059B3, -1) and not accent(-1, black)  # unknown colours say nothing
    assert light_grey(0x9E9E9E) and light_grey(0xBFBFBF)
    assert not light_grey(0x595959) and not light_grey(0xFFFFFF) and not light_grey(0x0059B3)


# Headings in a brand colour


@pytest.mark.parametrize("fonts", [("helv", "helv"), ("tiro", "tiro"), ("helv", "tiro")])
def test_blue_body_size_headings_over_paragraphs(tmp_path, engine, fonts):
    """A report's section titles set in blue at the body's size, not bold, a blank line above, each over
    its paragraphs: the colour marks them as headings, as weight marks bold ones."""
    head_font, body_font = fonts
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 110, 475, 1, 6, body_font) + 14
    titles = ["Household incomes", "Rents in the larger towns", "Home ownership"]
    for k, title in enumerate(titles):
        page.insert_text((60, y), title, fontsize=10, fontname=head_font, color=BLUE)
        y = body_paragraph(page, 60, y + 15, 475, k + 2, 7, body_font) + 14
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == titles, md


@pytest.mark.parametrize("count", [3, 1])
def test_teal_slightly_larger_headings_in_a_brochure(tmp_path, engine, count):
    """A brochure's titles in teal, 11 pt over 10 pt text (too little larger for size alone to say):
    in a style used more than once, or once on the page, since it is also larger than the body."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = body_paragraph(page, 56, 110, 500, 3, 5, "helv") + 16
    titles = ["Our services", "Where to find us", "Opening times"][:count]
    for k, title in enumerate(titles):
        page.insert_text((56, y), title, fontsize=11, fontname="helv", color=TEAL)
        y = body_paragraph(page, 56, y + 16, 500, k + 4, 6, "helv") + 16
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == titles, md


# Running lines in light grey


@pytest.mark.parametrize(("header_size", "font"), [(9, "helv"), (10, "tiro"), (12, "helv")])
def test_grey_running_header_and_footer_are_page_furniture(tmp_path, engine, header_size, font):
    """A report's name over the text and a note under it, set in light grey a line or more clear of the
    text, are its running header and footer (not text, never headings), even in plain type."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    header, footer = "Northern Water Board Annual Review", "Prepared for the regional assembly"
    page.insert_text((60, 50), header, fontsize=header_size, fontname=font, color=GREY)
    page.insert_text((60, 805), footer, fontsize=9, fontname=font, color=GREY)
    page.insert_text((60, 80), "Water supply", fontsize=14, fontname="hebo")
    body_paragraph(page, 60, 104, 475, 2, 40, font)
    blocks = _blocks(engine, doc, tmp_path)
    kinds = {b.text: b.label for b in blocks}
    assert kinds.get(header) == "page_header", blocks
    assert kinds.get(footer) == "page_footer", blocks
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["Water supply"], md
    assert header not in md and footer not in md, md


def test_black_footer_in_plain_type_stays_text(tmp_path, engine):
    """Guard: the same footer line in black plain type is a contact line or a note: it stays text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    footer = "Prepared for the regional assembly"
    page.insert_text((60, 805), footer, fontsize=9, fontname="helv")
    page.insert_text((60, 80), "Water supply", fontsize=14, fontname="hebo")
    body_paragraph(page, 60, 104, 475, 2, 40, "helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert footer in md, md


# Controls


def _link_line(page, x: float, y: float, parts: list[tuple[str, tuple[float, float, float]]]) -> None:
    for text, color in parts:
        page.insert_text((x, y), text, fontsize=10, fontname="helv", color=color)
        x += pymupdf.get_text_length(text + " ", fontname="helv", fontsize=10)


def test_guard_blue_links_inside_paragraphs_are_no_headings(tmp_path, engine):
    """Guard: blue links inside a paragraph, one filling a line of its own at the paragraph's spacing,
    stay in the paragraph; so does a coloured lead line that runs on into black text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 100, 475, 1, 4, "helv")
    _link_line(
        page, 60, y, [("More figures are in", (0, 0, 0)), ("the regional tables", BLUE), ("and", (0, 0, 0))]
    )
    y += 13
    _link_line(page, 60, y, [("Regional statistics online", BLUE)])
    y += 13
    _link_line(page, 60, y, [("which the office updates every quarter.", (0, 0, 0))])
    y = body_paragraph(page, 60, y + 26, 475, 3, 4, "helv") + 14
    _link_line(page, 60, y, [("Our findings in brief", BLUE)])
    y += 13
    _link_line(page, 60, y, [("show that incomes grew faster than prices in most areas.", (0, 0, 0))])
    body_paragraph(page, 60, y + 26, 475, 5, 4, "helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md
    assert "Regional statistics online which the office" in md, md
    assert "Our findings in brief show that" in md, md


def test_guard_coloured_pull_quote_and_wrapping_colour_paragraph_are_text(tmp_path, engine):
    """Guard: a pull quote in blue (a sentence, ending in a full stop) and a paragraph set in teal all
    through are text, even with two of them on the page."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 100, 475, 1, 5, "helv") + 16
    for quote in ("Rents in the larger towns rose by a third.", "Incomes grew faster than prices."):
        page.insert_text((80, y), quote, fontsize=10, fontname="tiit", color=BLUE)
        y = body_paragraph(page, 60, y + 24, 475, 2, 5, "helv") + 16
    for _ in range(2):
        for line in ("The share of families who own their home fell", "for the fifth year in a row"):
            page.insert_text((60, y), line, fontsize=10, fontname="helv", color=TEAL)
            y += 13
        y = body_paragraph(page, 60, y + 14, 475, 4, 4, "helv") + 16
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md


def test_guard_coloured_table_header_stays_in_the_table(tmp_path, engine):
    """Guard: a ruled table whose header row is set in blue keeps that row as its header cells."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 100, 475, 1, 4, "helv") + 20
    rows = [["Region", "Income", "Rent"], ["North", "31 200", "8 400"], ["South", "29 800", "9 100"]]
    xs = [60, 220, 380, 535]
    for r, row in enumerate(rows):
        top = y + 20 * r
        page.draw_line((60, top), (535, top), width=0.5)
        for c, cell in enumerate(row):
            page.insert_text(
                (xs[c] + 4, top + 14), cell, fontsize=10, fontname="helv", color=BLUE if r == 0 else (0, 0, 0)
            )
    bottom = y + 20 * len(rows)
    page.draw_line((60, bottom), (535, bottom), width=0.5)
    for x in xs:
        page.draw_line((x, y), (x, bottom), width=0.5)
    body_paragraph(page, 60, bottom + 30, 475, 3, 4, "helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md
    assert "<table>" in md and "Region" in md.split("<table>")[1], md


def test_guard_black_bold_headings_unchanged(tmp_path, engine):
    """Guard: black bold headings at body size over black paragraphs are headings as before."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 100, 475, 1, 5, "helv") + 14
    titles = ["Household incomes", "Home ownership"]
    for k, title in enumerate(titles):
        page.insert_text((60, y), title, fontsize=10, fontname="hebo")
        y = body_paragraph(page, 60, y + 15, 475, k + 2, 6, "helv") + 14
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == titles, md


def test_one_blue_heading_a_page_is_a_style_across_the_document(tmp_path, engine):
    """A report of three pages with one blue body-size title on each, over dark-grey text: the
    document's profile sees the style repeat from page to page (one line alone on a page would not
    say it)."""
    doc = pymupdf.open()
    titles = ["Household incomes", "Rents in the larger towns", "Home ownership"]
    for k, title in enumerate(titles):
        page = doc.new_page(width=595, height=842)
        y = body_paragraph(page, 60, 110, 475, k, 8, "tiro", color=DARK) + 14
        page.insert_text((60, y), title, fontsize=10, fontname="tiro", color=BLUE)
        body_paragraph(page, 60, y + 15, 475, k + 3, 12, "tiro", color=DARK)
    pdf = tmp_path / "report.pdf"
    doc.save(pdf)
    found = [heading_texts(md) for md in pages_markdown(engine, pdf)]
    assert found == [[t] for t in titles], found


def test_guard_a_document_set_in_blue_throughout_has_no_colour_headings(tmp_path, engine):
    """Guard: where the body itself is blue, short blue lines standing apart are not set off by colour
    (lines in the body's colour are no headings by colour)."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 100
    for k, label in enumerate(["Household incomes", "Home ownership"]):
        y = body_paragraph(page, 60, y, 475, k, 6, "helv", color=BLUE) + 14
        page.insert_text((60, y), label, fontsize=10, fontname="helv", color=BLUE)
        y += 28
    body_paragraph(page, 60, y, 475, 4, 6, "helv", color=BLUE)
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md


def test_blue_lead_in_ending_in_a_colon_is_a_heading(tmp_path, engine):
    """A blue lead-in at body size ending in a colon over its bullets ("Key findings:") heads them, in a
    document whose blue titles are its headings: the colour counts as a bold lead-in's weight does."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 100, 475, 1, 5, "helv") + 14
    page.insert_text((60, y), "Background", fontsize=10, fontname="helv", color=BLUE)
    y = body_paragraph(page, 60, y + 15, 475, 2, 5, "helv") + 14
    page.insert_text((60, y), "Key findings:", fontsize=10, fontname="helv", color=BLUE)
    y += 15
    for k in range(3):
        page.insert_text((70, y), f"\u2022 {' '.join(WORDS[5 * k : 5 * k + 8]).capitalize()}.", fontsize=10)
        y += 13
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["Background", "Key findings:"], md


def test_guard_coloured_captions_stay_captions(tmp_path, engine):
    """Guard: captions set in blue over two lines ("Figure 1 Incomes by region" / "and household type,
    2007"), two on the page, are captions: neither line is a heading."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 100, 475, 1, 5, "helv") + 16
    for k in (1, 2):
        page.insert_text((60, y), f"Figure {k} Incomes by region", fontsize=10, fontname="helv", color=BLUE)
        page.insert_text((60, y + 13), "and household type, 2007", fontsize=10, fontname="helv", color=BLUE)
        y = body_paragraph(page, 60, y + 40, 475, k + 2, 5, "helv") + 16
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md
