"""Reading order, page geometry and text cleanup from the text layer (issue 16, items 1 and 8), on PDFs
made here with PyMuPDF: columns of unequal width, a diagram's labels, words set without space glyphs,
marker glyphs made of control characters, ruled frames around prose, and the heading rules that
separate headings from column headers, footers and bold form labels."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.ingest.pdf import import_pymupdf
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

# As the product imports it: a plain ``import pymupdf`` also loads pymupdf.layout, which replaces
# ``find_tables`` with another table finder.
pymupdf = import_pymupdf()

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
FILLER = "words that fill the column of this page"


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _markdown(engine: TextLayerEngine, pdf: Path, index: int = 0) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, index, 72, prompt="")])[0].blocks)


def _headings(md: str) -> list[str]:
    return [ln for ln in md.splitlines() if ln.startswith("#")]


def _raw_text_pdf(path: Path, operators: str) -> Path:
    """A page whose content stream is ``operators`` (Helvetica as /helv): text set the way real PDFs
    set it (TJ arrays with gaps, character spacing), which ``insert_text`` cannot do."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "x", fontname="helv", fontsize=11)  # declares the font resource
    doc.update_stream(page.get_contents()[0], operators.encode())
    doc.save(path)
    return path


def test_unequal_columns_are_read_column_by_column(tmp_path, engine):
    """A wide column beside a narrow one, the wide column's ragged lines longer below the narrow one
    than beside it: the whole wide column first, then the side column."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_text((50, 60), "Unequal Columns Report", fontsize=20, fontname="hebo")
    for k in range(14):
        p.insert_text(
            (50, 100 + k * 14), f"main column sentence {k} is long enough to fill its column", fontsize=10
        )
    for k in range(6):
        p.insert_text((420, 100 + k * 14), f"side note {k} short", fontsize=10)
    pdf = tmp_path / "unequal.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    order = [
        "# Unequal Columns Report",
        "sentence 0 ",
        "sentence 9 ",
        "sentence 13 ",
        "side note 0",
        "side note 5",
    ]
    assert_in_order(md, order)


def test_diagram_labels_stay_out_of_columns_and_tables(tmp_path, engine):
    """Labels of a drawn diagram (a 3 × 3 grid of boxes) below two text columns: no table, no
    columns made of labels; the figure is read row by row after both columns."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_text((56, 60), "Figure Page Title", fontsize=20, fontname="hebo")
    for k in range(30):
        p.insert_text((56, 100 + k * 13), f"left line {k} {FILLER}", fontsize=10)
    for k in range(8):
        p.insert_text((320, 100 + k * 13), f"right line {k} {FILLER}", fontsize=10)
    for r in range(3):
        for c in range(3):
            x, y = 70 + c * 170, 520 + r * 60
            p.draw_rect(pymupdf.Rect(x, y, x + 120, y + 40), color=(0, 0, 0), fill=(0.9, 0.9, 1))
            p.insert_text((x + 10, y + 24), f"Stage {r}{c} node", fontsize=9)
            if c < 2:
                p.draw_line((x + 120, y + 20), (x + 170, y + 20))
    pdf = tmp_path / "diagram.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    lines = md.splitlines()
    assert "|" not in md
    assert "Stage 00 node Stage 01 node Stage 02 node" in lines
    assert "Stage 20 node Stage 21 node Stage 22 node" in lines
    order = [
        "left line 29",
        "right line 0",
        "right line 7",
        "Stage 00 node",
        "Stage 10 node",
        "Stage 20 node",
    ]
    assert_in_order(md, order)


def test_words_set_without_space_glyphs_get_their_spaces(tmp_path, engine):
    """Words placed by TJ gaps of 0.13 em (MuPDF itself spaces only wider gaps); letter-spaced words
    (0.14 em between every letter) stay whole; dot leaders get no space before them."""
    words = ["Composition", "of", "the", "pretraining", "data", "for", "OLMo", "2"]
    tight = " -130 ".join(f"({w})" for w in words)
    ops = (
        f"q BT 1 0 0 1 72 770 Tm /helv 11 Tf [{tight}] TJ ET "
        "BT 1 0 0 1 72 740 Tm /helv 11 Tf 1.5 Tc [(Letter) -400 (spaced)] TJ 0 Tc ET "
        "BT 1 0 0 1 72 710 Tm /helv 11 Tf [(Access) -140 (control) -140 (. . . . . .) -140 (24)] TJ ET Q"
    )
    md = _markdown(engine, _raw_text_pdf(tmp_path / "tj.pdf", ops))
    assert "Composition of the pretraining data for OLMo 2" in md
    assert "Letter spaced" in md
    assert "Access control. . . . . . 24" in md


def test_marker_glyph_with_a_control_character_becomes_a_list_marker(tmp_path, engine):
    """A check-box glyph that extracts as "r" plus a control character, at the start of each line."""
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_font(fontname="dv", fontfile=str(DEJAVU))
    p.insert_text((72, 80), "Global engagements cover topics including:", fontname="dv", fontsize=9)
    items = ["Database performance and scalability", "Advanced SQL knowledge and skills transfer"]
    for k, text in enumerate(items):
        p.insert_text((72, 100 + 12 * k), "r\x01", fontname="dv", fontsize=6)
        p.insert_text((82, 100 + 12 * k), text, fontname="dv", fontsize=9)
    p.insert_text((72, 140), "Version 2\x01 of the draft is final.", fontname="dv", fontsize=9)
    pdf = tmp_path / "checkbox.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    lines = md.splitlines()
    assert "- Database performance and scalability" in lines
    assert "- Advanced SQL knowledge and skills transfer" in lines
    assert "Version 2 of the draft is final." in lines  # inside a line: dropped, no marker
    assert not any(ord(c) < 32 and c != "\n" for c in md)


def test_ruled_frame_around_prose_is_text_not_a_table(tmp_path, engine):
    """A back cover's ruled frame: two boxes side by side, one holding a paragraph. No table; the
    paragraph stays whole and the short box's text is read after it (column by column)."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    paragraph = [f"Paragraph line {k} of the boxed text, a sentence of prose that runs on." for k in range(8)]
    for y in (200, 420, 460):  # the frame's rulings: 3 across, 3 down
        p.draw_line((40, y), (560, y))
    for x in (40, 380, 560):
        p.draw_line((x, 200), (x, 460))
    p.insert_text((50, 445), "REDP-5110-00", fontsize=9)
    for k, text in enumerate(paragraph):
        p.insert_text((50, 230 + 13 * k), text, fontsize=10)
    for k, text in enumerate(["Side box title", "and a few", "short lines", "beside it"]):
        p.insert_text((390, 230 + 13 * k), text, fontsize=10)
    pdf = tmp_path / "frame.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    assert "|" not in md, md
    assert " ".join(paragraph) in md
    assert md.index("Paragraph line 7") < md.index("Side box title")


def test_column_headers_and_footers_are_not_headings(tmp_path, engine):
    """Bold column headers (one wrapped onto a second line) above an unruled table, and a bold
    footer "Annex ... 209" spread across the page: several pieces a cell gap apart, not headings. The
    footer (the page's outermost row, a page number at its end) is the page's footer: out of the
    Markdown's body, kept as a ``page_footer`` block."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    y = 80
    for k in range(4):
        p.insert_text(
            (72, y), f"Body paragraph line {k} explains the survey question in plain words.", fontsize=9
        )
        y += 12
    p.insert_text((300, 150), "State funded", fontsize=9, fontname="hebo")
    p.insert_text((310, 161), "legal aid", fontsize=9, fontname="hebo")
    p.insert_text((400, 150), "CSOs", fontsize=9, fontname="hebo")
    for k, group in enumerate(("Persons with disabilities", "Children", "Women")):
        p.insert_text((72, 180 + 12 * k), group, fontsize=9)
        p.insert_text((320, 180 + 12 * k), "x", fontsize=9)
        p.insert_text((410, 180 + 12 * k), "x", fontsize=9)
    p.insert_text((300, 800), "Annex", fontsize=9, fontname="hebo")
    p.insert_text((520, 800), "209", fontsize=9, fontname="hebo")
    pdf = tmp_path / "headers.pdf"
    doc.save(pdf)
    blocks = engine.predict_batch([pdf_page_request(pdf, 0, 72, prompt="")])[0].blocks
    md = blocks_to_markdown(blocks)
    assert _headings(md) == [], md
    assert "State funded" in md and "CSOs" in md and "Annex" not in md
    assert [b.label for b in blocks if "Annex" in b.text] == ["page_footer"]


def test_numbered_sections_are_headings_where_the_body_is_bold(tmp_path, engine):
    """A form whose labels are bold (most of its text): size and weight cannot tell headings apart.
    Bold lines with a section number ("2-5 -", "3 -", "4.1") and a bold title in another typeface are
    headings; the labels are not."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_text((60, 50), "Admission prospectus of the main market", fontsize=13, fontname="tibo")
    y = 80
    labels = [
        "Name of the standard",
        "National standard number",
        "Is the standard mandatory",
        "Date the documents were given",
        "Date of admission",
        "Number of the committee meeting",
    ]
    for section, labelset in (
        ("2-5 - Standard of the goods", labels[:3]),
        ("3 - Admission to the exchange", labels[3:]),
    ):
        p.insert_text((60, y), section, fontsize=13, fontname="hebo")
        y += 24
        for label in labelset:
            p.insert_text((60, y), label, fontsize=13, fontname="hebo")
            p.insert_text((400, y), "1403/10/04", fontsize=11)
            y += 20
        y += 14
    p.insert_text((60, y), "4.1 Delivery terms", fontsize=13, fontname="hebo")
    p.insert_text((60, y + 20), "Allowed delivery error", fontsize=13, fontname="hebo")
    p.insert_text((400, y + 20), "five percent", fontsize=11)
    pdf = tmp_path / "form.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    heads = [h.lstrip("#").strip() for h in _headings(md)]
    assert heads == [
        "Admission prospectus of the main market",  # bold in another typeface than the bold labels
        "2-5 - Standard of the goods",
        "3 - Admission to the exchange",
        "4.1 Delivery terms",
    ], md


def test_bold_line_standing_alone_is_a_heading_where_the_body_is_bold(tmp_path, engine):
    """In a form of bold labels, a bold line with a blank line above and below and nothing beside it
    (the issuer's name under the title, set smaller) is a heading; bold labels with their value beside
    them, a bold label with its value right under it, and a bold line inside a block of bold lines
    are not."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_text((60, 60), "Admission prospectus of the main market", fontsize=14, fontname="hebo")
    p.insert_text((330, 100), "Commodity Exchange Company", fontsize=11, fontname="hebo")
    y = 150
    for label in ("Name of the standard", "National standard number", "Date of admission", "Delivery terms"):
        p.insert_text((60, y), label, fontsize=14, fontname="hebo")
        p.insert_text((400, y), "1403/10/04", fontsize=12)
        y += 22
    p.insert_text((60, y + 20), "Issuing authority of the standard", fontsize=14, fontname="hebo")
    p.insert_text((60, y + 38), "National standards organisation", fontsize=12)
    y += 80
    for text in ("Terms agreed by the committee", "Price set on world prices", "Minimum share offered"):
        p.insert_text((60, y), text, fontsize=14, fontname="hebo")
        y += 18
    pdf = tmp_path / "form_alone.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    heads = [h.lstrip("#").strip() for h in _headings(md)]
    assert heads == ["Admission prospectus of the main market", "Commodity Exchange Company"], md
    assert "Issuing authority of the standard" in md and "Price set on world prices" in md


def test_boxed_section_number_and_two_size_title(tmp_path, engine):
    """A section number in a box of its own before the title is part of the heading; a title whose
    second line is set a little smaller is one heading; a bold lead-in ending in a colon and the web
    address under it are not headings."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_text((40, 70), "Row and Column Access Control", fontsize=30, fontname="hebo")
    p.insert_text((40, 104), "Support in the Database", fontsize=27, fontname="hebo")
    p.draw_rect(pymupdf.Rect(58, 150, 76, 168), color=(0, 0, 0), fill=(0.2, 0.3, 0.6))
    p.insert_text((63, 164), "1", fontsize=13, fontname="hebo")
    p.insert_text((94, 164), "Introduction", fontsize=13, fontname="hebo")
    y = 190
    for k in range(10):
        p.insert_text(
            (58, y), f"Body line {k} of the introduction, set in the regular body face.", fontsize=10
        )
        y += 13
    p.insert_text((58, y + 10), "For more information:", fontsize=12, fontname="hebo")
    p.insert_text((58, y + 24), "ibm.com/redbooks", fontsize=12)
    pdf = tmp_path / "title.pdf"
    doc.save(pdf)
    heads = [h.lstrip("#").strip() for h in _headings(_markdown(engine, pdf))]
    assert "Row and Column Access Control Support in the Database" in heads
    assert "1 Introduction" in heads
    assert not any("ibm.com" in h or "information" in h for h in heads)  # a lead-in ending in ":" is text


def test_issue_number_and_subtitle_are_not_headings(tmp_path, engine):
    """A bulletin's issue number ("No. 1695", mostly digits) and the lighter, smaller line right under
    the title (its subtitle) are text; the title and a later section heading are headings."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_text((460, 50), "No. 1695", fontsize=14, fontname="hebo")
    p.insert_text((56, 90), "Center of Excellence", fontsize=20, fontname="hebo")
    p.insert_text((56, 106), "Expert help to achieve your business requirements", fontsize=12)
    y = 140
    for k in range(8):
        p.insert_text(
            (56, y), f"Body line {k} describes the services of the center in plain words.", fontsize=10
        )
        y += 13
    p.insert_text((56, y + 14), "Who we are", fontsize=14, fontname="hebo")
    p.insert_text((56, y + 34), "Engagements cover many topics for the clients of the center.", fontsize=10)
    pdf = tmp_path / "bulletin.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    assert [h.lstrip("#").strip() for h in _headings(md)] == ["Center of Excellence", "Who we are"], md
    assert "No. 1695" in md and "Expert help to achieve your business requirements" in md


def test_chapter_number_in_display_type_is_a_heading_page_numbers_are_not(tmp_path, engine):
    """A chapter number set alone at 40 pt (4 x the body) above the chapter title is a heading of its
    own; the bold body-size page number at the foot and a 40 pt page number in the top margin band
    (a magazine's folio) are not. The folio stays as text; the page number alone at the foot is the
    page's furniture (``page_furniture._lone_page_number``), out of the Markdown."""
    doc = pymupdf.open()
    p = doc.new_page(width=612, height=792)
    p.insert_text((40, 60), "12", fontsize=40, fontname="hebo")
    p.insert_text((500, 130), "1", fontsize=40, fontname="hebo")
    p.insert_text((137, 200), "Securing and protecting data", fontsize=26, fontname="hebo")
    y = 250
    for k in range(10):
        p.insert_text((137, y), f"Body line {k} of the chapter, set in the regular body face.", fontsize=10)
        y += 12
    p.insert_text((542, 762), "1", fontsize=10, fontname="hebo")
    pdf = tmp_path / "chapter.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    assert [h.lstrip("#").strip() for h in _headings(md)] == ["1", "Securing and protecting data"], md
    lines = md.splitlines()
    assert "12" in lines and lines[-1] != "1", md  # the folio kept as text, the foot's number not


def test_heading_over_a_background_picture_heads_its_paragraph(tmp_path, engine):
    """Text set over a large picture (a back cover's panel): a bold block right above a lighter
    paragraph at its left edge is a heading; a bold tagline block followed by another bold block and
    bold side labels beside the prose are not, and a diagram's bold labels stay out of the headings."""
    doc = pymupdf.open()
    p = doc.new_page(width=612, height=792)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 40), 0)
    pix.clear_with(230)
    p.insert_image(pymupdf.Rect(18, 232, 601, 579), pixmap=pix)
    side = ["Implement roles and", "separation of duties", "", "Leverage row", "permissions"]
    for k, text in enumerate(side):
        p.insert_text((27, 252 + 14 * k), text, fontsize=12, fontname="hebo")
    for k in range(10):
        p.insert_text(
            (175, 252 + 12 * k), f"Body sentence {k} of the summary on the back cover.", fontsize=10
        )
    for k, text in enumerate(["INTERNATIONAL", "TECHNICAL", "SUPPORT"]):
        p.insert_text((467, 258 + 14 * k), text, fontsize=14, fontname="hebo")
    for k, text in enumerate(["BUILDING TECHNICAL", "INFORMATION BASED"]):
        p.insert_text((467, 360 + 12 * k), text, fontsize=12, fontname="hebo")
    for k, text in enumerate(
        ["Books are developed", "by the support team", "from realistic cases.", "Experts from all"]
    ):
        p.insert_text((467, 400 + 11 * k), text, fontsize=11)
    # A diagram below: bold labels each above a lighter line, no paragraph under any of them.
    p.draw_rect(pymupdf.Rect(60, 600, 550, 760), color=(0, 0, 0), fill=(0.9, 0.9, 0.95))
    for k, (label, note) in enumerate(
        [("Input queue", "jobs"), ("Worker pool", "threads"), ("Output", "files")]
    ):
        p.insert_text((80 + 160 * k, 640), label, fontsize=10, fontname="hebo")
        p.insert_text((80 + 160 * k, 652), note, fontsize=10)
    for k in range(6):
        p.insert_text(
            (60, 60 + 12 * k), f"Page body line {k} of the regular text above the panel.", fontsize=10
        )
    pdf = tmp_path / "panel.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    assert [h.lstrip("#").strip() for h in _headings(md)] == ["BUILDING TECHNICAL INFORMATION BASED"], md
    assert "Implement roles and separation of duties" in md and "INTERNATIONAL TECHNICAL SUPPORT" in md
    assert "Input queue" in md and "Books are developed by the support team" in md


def _grid(page, x: list[float], y: list[float]) -> None:
    for yy in y:
        page.draw_line((x[0], yy), (x[-1], yy))
    for xx in x:
        page.draw_line((xx, y[0]), (xx, y[-1]))


def test_ruled_grid_of_bold_labels_and_plain_answers_reads_as_lines(tmp_path, engine):
    """A ruled form: bold labels in one column, plain answers in the other, no header row. It reads
    as "label answer" lines; a ruled table with a bold header row stays a table."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    form = [
        ("Date of submission", "1403/09/19"),
        ("Date of admission", "1403/10/04"),
        ("Meeting number", "436"),
    ]
    _grid(p, [60, 260, 500], [100 + 24 * k for k in range(len(form) + 1)])
    for k, (label, value) in enumerate(form):
        p.insert_text((70, 116 + 24 * k), label, fontsize=11, fontname="hebo")
        p.insert_text((270, 116 + 24 * k), value, fontsize=11)
    table = [("Region", "Cases"), ("North", "120"), ("South", "87"), ("East", "45")]
    _grid(p, [60, 260, 500], [300 + 24 * k for k in range(len(table) + 1)])
    for k, (a, b) in enumerate(table):
        font = "hebo" if k == 0 else "helv"
        p.insert_text((70, 316 + 24 * k), a, fontsize=11, fontname=font)
        p.insert_text((270, 316 + 24 * k), b, fontsize=11, fontname=font)
    pdf = tmp_path / "kv.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    lines = md.splitlines()
    for label, value in form:
        assert f"{label} {value}" in lines, md
    assert "<tr><th>Region</th><th>Cases</th></tr>" in md and "<tr><td>South</td><td>87</td></tr>" in md, md


def test_pieces_drawn_without_a_gap_are_one_word():
    """Pieces of one line whose glyphs touch ("1403" "/" "09", an Arabic word split where PyMuPDF
    starts a new run) join without a space; a real gap, a change of script direction at the joint,
    or pieces whose glyph extent is unknown (OCR boxes) keep the space."""
    from ocr_app.structure.lines import TextLine
    from ocr_app.structure.pipeline import build_blocks

    def piece(text: str, x0: float, x1: float, ink: bool = True) -> TextLine:
        return TextLine(text, (x0, 100, x1, 112), 12.0, ink=(x0, x1) if ink else ())

    date = [piece("1403", 100, 124), piece("/", 124, 127), piece("09", 127, 139), piece("/", 139, 142)]
    date += [piece("19", 142, 154), piece("days", 158.5, 182)]
    word = [
        piece("\u0627\u0644\u0627", 300, 324),
        piece("\u06a9", 324.4, 331),
    ]  # "ک" then "الا", read right to left
    arabic = (
        "\u062a\u0639\u062a\u0628\u0631 \u0628\u0644\u063a\u0629 R \u0648Python"  # "تعتبر بلغة R وPython"
    )
    mixed = [piece("\u0645\u0646", 200, 214), piece(arabic, 214, 300)]  # "من" to its left
    ocr = [piece("14", 100, 112, ink=False), piece("03", 112, 124, ink=False)]
    texts = [build_blocks(lines, page_width=600)[0].text.strip() for lines in (date, word, mixed, ocr)]
    assert texts == ["1403/09/19 days", "\u06a9\u0627\u0644\u0627", arabic + " \u0645\u0646", "14 03"]


def test_short_paragraph_after_two_columns_stays_after_both():
    """Two columns, the left one ending on a short line; then a short full-width paragraph whose
    end lies inside the gutter (ragged right), then a paragraph across the page: the short paragraph
    follows the right column, it is not read as the left column's tail."""
    from ocr_app.structure.lines import TextLine
    from ocr_app.structure.pipeline import build_blocks

    size = 10.0
    lines = [
        TextLine(f"left column line {k} with words", (56, 100 + 13 * k, 279, 110 + 13 * k), size)
        for k in range(9)
    ]
    lines.append(TextLine("student.", (56, 217, 92, 227), size))
    lines += [
        TextLine(f"right column line {k} of words", (310, 100 + 13 * k, 534, 110 + 13 * k), size)
        for k in range(8)
    ]
    lines.append(TextLine("Deliver engine bridge museum support sample engine.", (56, 250, 298, 260), size))
    lines.append(
        TextLine("Library weekly strong paper final language autumn across.", (56, 271, 522, 281), size)
    )
    md = "\n".join(b.text for b in build_blocks(lines, page_width=595))
    order = [
        "left column line 0",
        "student.",
        "right column line 0",
        "right column line 7",
        "Deliver engine",
        "Library weekly",
    ]
    assert_in_order(md, order)


def test_font_family_and_the_body_typeface_of_the_profile(tmp_path):
    """Font names lose subset prefixes and style words; the profile's body typeface is the family
    most body-size text is set in."""
    from ocr_app.engines.pdf_spans import extract_lines, font_family
    from ocr_app.structure.docprofile import build_profile

    assert font_family("ABCDEF+BNazaninBold") == font_family("BNazanin") == "bnazanin"
    assert font_family("Arial-BoldItalicMT") == "arial" and font_family("Times-Roman") == "times"
    doc = pymupdf.open()
    p = doc.new_page()
    for k in range(6):
        p.insert_text(
            (72, 80 + 14 * k), f"Body line {k} set in the serif face of this document.", fontname="tiro"
        )
    p.insert_text((72, 200), "A short sans line", fontname="helv")
    pdf = tmp_path / "faces.pdf"
    doc.save(pdf)
    with pymupdf.open(pdf) as opened:
        assert build_profile(opened, extract_lines).style.body_font == "times"


_READ_PAGE = """
import sys
if sys.argv[2] == "layout":
    import pymupdf  # a plain import loads pymupdf.layout, which gates find_tables by its own model
    assert "pymupdf.layout" in sys.modules
from ocr_app.engines.page_tables import ruled_tables
from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import pdf_page_request
doc = import_pymupdf().open(sys.argv[1])
tables, forms, _ = ruled_tables(doc[0], extract_lines(doc[0], 1.0), 1.0)
print(len(tables), len(forms))
"""


def test_ruled_tables_do_not_depend_on_what_the_process_imported(tmp_path):
    """The same page gives the same tables whether or not pymupdf.layout was imported first (a plain
    ``import pymupdf`` or pymupdf4llm loads it): here the layout model would make a table of a
    page's column headers and rows where no ruling draws one."""
    import subprocess
    import sys

    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    for k in range(4):
        p.insert_text((72, 80 + 12 * k), f"Body paragraph line {k} explains the survey question.", fontsize=9)
    p.insert_text((300, 150), "State funded", fontsize=9, fontname="hebo")
    p.insert_text((400, 150), "CSOs", fontsize=9, fontname="hebo")
    for k, group in enumerate(("Persons with disabilities", "Children", "Women")):
        p.insert_text((72, 180 + 12 * k), group, fontsize=9)
        p.insert_text((320, 180 + 12 * k), "x", fontsize=9)
        p.insert_text((410, 180 + 12 * k), "x", fontsize=9)
    for y in (60, 800):  # two rules: enough drawing for the table search to run
        p.draw_line((50, y), (545, y))
        p.draw_line((50, y + 2), (545, y + 2))
        p.draw_line((50, y + 4), (545, y + 4))
    pdf = tmp_path / "imports.pdf"
    doc.save(pdf)
    outs = [
        subprocess.run(
            [sys.executable, "-c", _READ_PAGE, str(pdf), mode], capture_output=True, text=True, check=True
        ).stdout.strip()
        for mode in ("plain", "layout")
    ]
    assert outs[0] == outs[1] == "0 0", outs


def test_right_to_left_ruled_table_starts_at_its_right_column(tmp_path, engine):
    """A ruled table of Arabic text: its first column is the one on the right."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_font(fontname="dv", fontfile=str(DEJAVU))
    right, left = (
        ["\u0627\u0644\u0627\u0633\u0645", "\u0633\u0645\u064a\u0631", "\u0644\u064a\u0644\u0649"],
        [
            "\u0627\u0644\u0639\u0645\u0631",
            "\u0663\u0660",
            "\u0662\u0665",
        ],
    )  # name | Samir | Layla on the right, age | 30 | 25 on the left
    _grid(p, [100, 300, 500], [100 + 24 * k for k in range(4)])
    for k in range(3):
        p.insert_text((310, 116 + 24 * k), right[k], fontname="dv", fontsize=11)
        p.insert_text((110, 116 + 24 * k), left[k], fontname="dv", fontsize=11)
    pdf = tmp_path / "rtl_table.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    rows = re.findall(r"<tr>(.*?)</tr>", md)
    cells = [re.findall(r"<t[dh]>(.*?)</t[dh]>", row) for row in rows]
    assert len(cells) == 3, md
    # Letters compared as sets: insert_text draws Arabic unshaped, so the extracted word order of
    # the letters is the drawing's, not the point here.
    assert [sorted(r[0]) for r in cells] == [sorted(w) for w in right], md
    assert [sorted(r[1]) for r in cells] == [sorted(w) for w in left], md


def test_right_to_left_table_keeps_its_merged_header_cell_and_bold_header_row(tmp_path, engine):
    """Both table rule sets at once: a right-to-left table starts at its right column, and its bold
    header row (one cell spanning the two right columns) stays a ``<th colspan="2">`` there."""
    doc = pymupdf.open()
    p = doc.new_page(width=595, height=842)
    p.insert_font(fontname="dv", fontfile=str(DEJAVU))
    p.insert_font(fontname="dvb", fontfile=str(DEJAVU.with_name("DejaVuSans-Bold.ttf")))
    xs, ys = [100, 250, 400, 550], [100 + 24 * k for k in range(5)]
    # (first column, last column, text): columns counted from the left of the page
    header = [
        (0, 1, "\u0627\u0644\u0645\u062c\u0645\u0648\u0639"),
        (1, 3, "\u0627\u0644\u0646\u062a\u0627\u0626\u062c"),
    ]
    body = [
        ["\u0664\u0660", "\u0661\u0660", "\u0633\u0645\u064a\u0631"],
        ["\u0665\u0660", "\u0662\u0660", "\u0644\u064a\u0644\u0649"],
    ]
    body.append(["\u0666\u0660", "\u0663\u0660", "\u0639\u0644\u064a"])
    for c0, c1, text in header:
        p.draw_rect(pymupdf.Rect(xs[c0], ys[0], xs[c1], ys[1]), width=0.6)
        p.insert_text((xs[c0] + 10, ys[0] + 16), text, fontname="dvb", fontsize=11)
    for r, row in enumerate(body, start=1):
        for c, text in enumerate(row):
            p.draw_rect(pymupdf.Rect(xs[c], ys[r], xs[c + 1], ys[r + 1]), width=0.6)
            p.insert_text((xs[c] + 10, ys[r] + 16), text, fontname="dv", fontsize=11)
    pdf = tmp_path / "rtl_header.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", md)
    assert head, md
    heads = re.findall(r"<th( colspan=\"2\")?>(.*?)</th>", head.group(1))
    # The spanning cell (drawn on the right) comes first, then the one on the left.
    assert [(span, sorted(text)) for span, text in heads] == [
        (' colspan="2"', sorted(header[1][2])),
        ("", sorted(header[0][2])),
    ], md
    body_rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", md)[1:]]
    assert [[sorted(c) for c in row] for row in body_rows] == [
        [sorted(c) for c in row[::-1]] for row in body
    ], md
