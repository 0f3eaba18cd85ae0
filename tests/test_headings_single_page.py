"""Headings on a document of one page (issue 30 item 4, the held-out set's single pages): with nothing
to compare across pages, the page alone must say (a) which short line in the margin is a running header
or footer, (b) which bold line ending in a colon heads what follows, (c) that headings in columns stay
whole and apart from the neighbouring column, (d) that a numbered bold heading at body size is found.
Pages built with PyMuPDF in several fonts, sizes, page
formats and column counts, read through the text-layer engine."""

from __future__ import annotations

import itertools

import pytest

from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import SURVEY_TEXT, body_paragraph, heading_texts, pages_markdown, saved_markdown

pymupdf = import_pymupdf()

A4, LETTER = (595, 842), (612, 792)
WORDS = SURVEY_TEXT.split()
FACES = [("hebo", "helv"), ("tibo", "tiro")]  # (bold face, body face)


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


# (a) running headers and footers on a page of its own


def _report_page(
    size, header: str, header_size: float, header_font: str, body_font: str, rule: bool, edge: str
):
    """A report's page: a header (or footer) line in the margin band, optionally over (under) a rule,
    set well clear of the text; two numbered sections with 13 pt bold headings."""
    doc = pymupdf.open()
    width, height = size
    page = doc.new_page(width=width, height=height)
    y_line = 40 if edge == "top" else height - 36
    page.insert_text((56, y_line), header, fontsize=header_size, fontname=header_font)
    if rule:
        y_rule = 46 if edge == "top" else height - 50
        page.draw_line((56, y_rule), (width - 56, y_rule), width=0.5)
    y = 90
    for number, (title, count) in enumerate((("Results of the survey", 12), ("Discussion", 14)), start=2):
        page.insert_text((56, y), f"{number} {title}", fontsize=13, fontname="hebo")
        y = body_paragraph(page, 56, y + 23, width - 112, number, count, body_font) + 12
    return doc


@pytest.mark.parametrize("edge", ["top", "bottom"])
@pytest.mark.parametrize(
    ("size", "header", "header_size", "header_font", "body_font", "rule"),
    [
        (LETTER, "ANNUAL REPORT 2022", 9, "hebo", "tiro", True),  # bold, smaller, over a rule
        (A4, "Section 3: Housing and Incomes", 13, "hebo", "helv", True),  # in the headings' size
        (LETTER, "Housing Policy Review", 10, "tibo", "tiro", True),  # bold at body size
        (A4, "Regional Economic Outlook", 10, "hebo", "helv", False),  # bold, no rule: two lines clear
    ],
)
def test_a_header_line_set_apart_in_the_margin_is_no_heading(
    tmp_path, engine, size, header, header_size, header_font, body_font, rule, edge
):
    """A short line in the top or bottom margin band, two lines or more clear of the text (and, when
    set as large as the headings, cut off by a rule with the headings' type below it), is the page's
    running header or footer: page furniture, neither a heading nor text."""
    doc = _report_page(size, header, header_size, header_font, body_font, rule, edge)
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["2 Results of the survey", "3 Discussion"], md
    assert header not in md, md


@pytest.mark.parametrize("faces", FACES)
def test_a_heading_a_page_break_left_at_the_foot_of_a_longer_document_stays_a_heading(
    tmp_path, engine, faces
):
    """A heading the page break left at the foot of page 1 of 2, under a listing's frame (a rule between
    it and the text) and in the headings' size, is the next section's heading: a document of several
    pages tells its feet across pages, and sets none larger than its text (npm's "Using a Node version
    manager to install Node.js and npm" was dropped as a running foot). Alone on its page, the same row
    is a running foot (``test_a_header_line_set_apart_in_the_margin_is_no_heading``)."""
    bold, body = faces
    doc = pymupdf.open()
    width, height = A4
    page = doc.new_page(width=width, height=height)
    page.insert_text((56, 60), "Installing the tools", fontsize=18, fontname=bold)
    page.insert_text((56, 100), "1 Checking your version", fontsize=13, fontname=bold)
    y = body_paragraph(page, 56, 123, width - 112, 1, 30, body) + 12
    frame = pymupdf.Rect(56, y, width - 56, height - 122)
    page.draw_rect(frame, color=(0.8, 0.8, 0.8), fill=(0.96, 0.96, 0.96), width=0.75, radius=0.03)
    page.insert_text((66, y + 16), "tool --version", fontsize=9, fontname="cour")
    page.insert_text((56, height - 80), "2 Using a version manager", fontsize=13, fontname=bold)
    page = doc.new_page(width=width, height=height)
    y = body_paragraph(page, 56, 70, width - 112, 2, 12, body) + 24
    page.insert_text((56, y), "3 Using an installer", fontsize=13, fontname=bold)
    body_paragraph(page, 56, y + 23, width - 112, 3, 10, body)
    doc.save(tmp_path / "two.pdf")
    md = "\n\n".join(pages_markdown(engine, tmp_path / "two.pdf"))
    heads = heading_texts(md)
    assert "2 Using a version manager" in heads, md
    assert heads[-3:] == ["1 Checking your version", "2 Using a version manager", "3 Using an installer"], md


@pytest.mark.parametrize("faces", FACES)
def test_a_journals_name_and_volume_over_a_rule_and_a_page_x_footer_are_furniture(tmp_path, engine, faces):
    """A journal page alone: its name (bold) and volume (plain) in small type over a rule, and a footer
    of the report's name and "Page 14": neither heads nor text. The mixed row stayed in the text (only
    an all-bold row counted), and "Page 14" was no page number."""
    bold, body = faces
    doc = _report_page(LETTER, "", 9, bold, body, False, "top")
    page = doc[0]
    page.insert_text((56, 34), "JOURNAL OF APPLIED ENERGY RESEARCH", fontsize=8, fontname=bold)
    page.insert_text((440, 34), "Vol. 12, No. 3 (2024)", fontsize=8, fontname=body)
    page.draw_line((56, 40), (556, 40), width=0.5)
    page.insert_text((56, 770), "Housing Policy Review 2024", fontsize=8, fontname=body)
    page.insert_text((500, 770), "Page 14", fontsize=8, fontname=body)
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["2 Results of the survey", "3 Discussion"], md
    for furniture in ("JOURNAL OF APPLIED", "Vol. 12", "Housing Policy Review", "Page 14"):
        assert furniture not in md, md


def test_a_plain_small_line_at_the_top_without_a_rule_stays_text(tmp_path, engine):
    """The other side: plain small type at the top with no rule under it (a draft's notice) may be the
    page's own text; only its shape says nothing, so it stays."""
    doc = _report_page(A4, "Draft for consultation, not for citation", 8, "helv", "helv", False, "top")
    md = saved_markdown(engine, doc, tmp_path)
    assert "Draft for consultation, not for citation" in md, md


def test_a_pages_own_title_over_a_rule_and_an_underlined_heading_stay_headings(tmp_path, engine):
    """The other side: a page's title in the top band over a rule is its largest type (no heading as
    large below it), and a section heading underlined by a rule has its text right under the rule."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((56, 50), "Executive Summary", fontsize=12, fontname="hebo")
    page.draw_line((56, 56), (556, 56), width=0.5)
    y = body_paragraph(page, 56, 90, 500, 1, 8, "helv") + 12
    page.insert_text((56, y), "Key results", fontsize=11, fontname="hebo")
    page.draw_line((56, y + 4), (556, y + 4), width=0.5)
    body_paragraph(page, 56, y + 18, 500, 2, 8, "helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["Executive Summary", "Key results"], md


@pytest.mark.parametrize("size", [11, 17.6])
def test_a_title_alone_on_its_page_is_the_pages_content(tmp_path, engine, size):
    """A cover or section page holding only its bold title: nothing to be set apart from, so the
    title is the page, not a running header (CI's one-line title page lost "Title")."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 70), "Annual Report", fontsize=size, fontname="hebo")
    md = saved_markdown(engine, doc, tmp_path)
    assert "Annual Report" in md, md


def test_a_footnote_under_a_rule_at_the_pages_foot_stays_text(tmp_path, engine):
    """A footnote in the bottom band under its rule ends in a full stop: a sentence, not a footer."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    body_paragraph(page, 56, 80, 480, 1, 30, "tiro")
    page.draw_line((56, 760), (200, 760), width=0.5)
    page.insert_text(
        (56, 792), "1 Figures for the last quarter are provisional.", fontsize=8, fontname="tiro"
    )
    md = saved_markdown(engine, doc, tmp_path)
    assert "Figures for the last quarter are provisional." in md, md


# (b) a heading ending in a colon


def _brief(size, heading_size: float, faces: tuple[str, str], follow: str, label_size: float):
    """A one-page brief: a title, a paragraph, "Key findings:" (bold, ``heading_size``) over a list or a
    paragraph, a paragraph, then "For more information:" (bold, ``label_size``) over an address and a
    run-in "Note:" inside a paragraph."""
    bold, body = faces
    doc = pymupdf.open()
    width, height = size
    page = doc.new_page(width=width, height=height)
    page.insert_text((60, 80), "Housing Market Brief", fontsize=22, fontname=bold)
    y = body_paragraph(page, 60, 120, width - 120, 3, 5, body) + 12
    page.insert_text((60, y), "Key findings:", fontsize=heading_size, fontname=bold)
    y += 1.6 * heading_size
    if follow == "list":
        for k in range(4):
            item = " ".join(WORDS[5 * k : 5 * k + 9]).capitalize()
            page.insert_text((70, y), f"\u2022 {item}.", fontsize=10, fontname=body)
            y += 14
    else:
        y = body_paragraph(page, 60, y, width - 120, 4, 4, body)
    y = body_paragraph(page, 60, y + 12, width - 120, 5, 5, body) + 12
    page.insert_text((60, y), "For more information:", fontsize=label_size, fontname=bold)
    y += 1.4 * label_size
    for line in ("Regional Statistics Office", "12 Market Street, Springfield", "www.stats.example.org"):
        page.insert_text((60, y), line, fontsize=10, fontname=body)
        y += 13
    page.insert_text((60, y + 12), "Note:", fontsize=10, fontname=bold)
    page.insert_text(
        (90, y + 12), "figures for the last quarter are provisional.", fontsize=10, fontname=body
    )
    return doc


@pytest.mark.parametrize("follow", ["list", "para"])
@pytest.mark.parametrize("faces", FACES)
@pytest.mark.parametrize(("size", "heading_size"), [(A4, 12), (LETTER, 13)])
def test_a_larger_bold_colon_line_over_a_list_or_paragraph_is_a_heading(
    tmp_path, engine, size, heading_size, faces, follow
):
    """ "Key findings:" set bold and larger than the body over bullets or a full paragraph heads them; the
    same style over an address ("For more information:") labels it, and a run-in "Note:" is text."""
    md = saved_markdown(engine, _brief(size, heading_size, faces, follow, 11.5), tmp_path)
    assert heading_texts(md) == ["Housing Market Brief", "Key findings:"], md
    assert "Note: figures for the last quarter" in md, md


def test_a_list_of_bold_terms_ending_in_colons_stays_a_list(tmp_path, engine):
    """Bold terms with a colon at body size in a list ("Rent: ...") are list items, not headings."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = body_paragraph(page, 60, 80, 490, 1, 5, "helv") + 12
    for term in ("Rent:", "Income:", "Ownership:"):
        page.insert_text((60, y), f"\u2022 {term}", fontsize=10, fontname="hebo")
        page.insert_text((130, y), "rose faster than prices in most areas.", fontsize=10, fontname="helv")
        y += 14
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md


# (c) headings in columns


def _columns(size, faces, heading_size: float, count: int) -> tuple[object, list[str]]:
    """A newsletter page of ``count`` columns on one baseline grid, a heading in each column at a line
    where the other columns hold body text, and a full-width heading over a second band."""
    bold, body = faces
    doc = pymupdf.open()
    width, _ = size
    page = doc.new_page(width=width, height=size[1])
    gutter, margin, pitch = 18, 50, 13
    col = (width - 2 * margin - (count - 1) * gutter) / count
    names = itertools.cycle(
        [
            "Garden Club News",
            "Road Works Ahead",
            "Library Hours",
            "Summer Festival",
            "School Board",
            "Recycling",
        ]
    )
    heads: list[str] = []
    for c in range(count):
        x = margin + c * (col + gutter)
        at = {0, 14 + 2 * c}
        for slot in range(30):
            y = 80 + slot * pitch
            if slot in at:
                heads.append(next(names))
                page.insert_text((x, y), heads[-1], fontsize=heading_size, fontname=bold)
                continue
            start = (slot * 5 + c * 7) % 40
            line = ""
            for word in WORDS[start:] + WORDS:
                if pymupdf.get_text_length(f"{line} {word}", fontname=body, fontsize=10) > col:
                    break
                line = f"{line} {word}".strip()
            page.insert_text((x, y), line, fontsize=10, fontname=body)
    y = 80 + 31 * pitch
    page.insert_text((margin + 60, y), "Residents Survey Results", fontsize=heading_size + 4, fontname=bold)
    for c in range(count):
        body_paragraph(page, margin + c * (col + gutter), y + 26, col, c, 6, body)
    return doc, [*heads, "Residents Survey Results"]


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("faces", FACES)
@pytest.mark.parametrize(("size", "heading_size"), [(A4, 10), (LETTER, 12)])
def test_headings_in_columns_stay_whole_and_apart_from_the_next_column(
    tmp_path, engine, size, heading_size, faces, count
):
    """A heading on the baseline of a body line in the neighbouring column is one heading, no more and
    no less; so is a full-width heading over the columns. (Guards: these pass before this round.)"""
    doc, heads = _columns(size, faces, heading_size, count)
    md = saved_markdown(engine, doc, tmp_path)
    assert sorted(heading_texts(md)) == sorted(heads), md


# (d) bold headings at body size


@pytest.mark.parametrize("faces", [*FACES, ("cobo", "cour")])
@pytest.mark.parametrize("heads", [["3.1 Data and methods", "3.2 Results"], ["II. METHODS", "III. RESULTS"]])
def test_numbered_bold_headings_at_body_size_after_short_paragraphs_are_headings(
    tmp_path, engine, faces, heads
):
    """A numbered heading set bold at body size right after a paragraph of two lines, with no extra
    space around it, is a heading. (A guard: this passes before this round.)"""
    bold, body = faces
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 60, 80, 470, 1, 2, body)
    for k, head in enumerate(heads):
        page.insert_text((60, y), head, fontsize=10, fontname=bold)
        y = body_paragraph(page, 60, y + 13, 470, k, 2, body)
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == heads, md


@pytest.mark.parametrize(
    "quote",
    [
        '"We did not expect the savings to come so fast."',
        '"Nobody here expected the savings to come so fast, and nobody expected the town to vote for more."',
    ],
)
def test_a_pull_quote_set_large_is_text_not_a_heading(tmp_path, engine, quote):
    """A magazine page: a pull quote in large italics over the right column, then a real subheading.
    Set large and short, the quote was a heading and the column's text fell under it."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 80), "The quiet revolution", fontsize=28, fontname="tibo")
    body_paragraph(page, 50, 110, 240, 1, 14, "tiro")
    page.insert_textbox(pymupdf.Rect(320, 100, 545, 200), quote, fontsize=16, fontname="tiit")
    page.insert_text((320, 220), "Local grants", fontsize=14, fontname="tibo")
    body_paragraph(page, 320, 240, 225, 2, 8, "tiro")
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["The quiet revolution", "Local grants"], md
    assert quote.split()[0] in md, md


@pytest.mark.parametrize("faces", FACES)
def test_a_field_name_in_quotes_is_a_heading_and_a_one_word_quote_is_not(tmp_path, engine, faces):
    """A reference's fields titled by their names in quotes (Node.js's "main", "packageManager"), set
    bold over their text: a name, not a quotation, so a heading. A quoted exclamation set large is
    still a pull quote."""
    bold, body = faces
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 70), "Package fields", fontsize=18, fontname=bold)
    y = 100
    for k, name in enumerate(('"main"', '"packageManager"', '"exports"')):
        page.insert_text((50, y), name, fontsize=13, fontname=bold)
        y = body_paragraph(page, 50, y + 20, 480, k, 3, body) + 16
    page.insert_text((50, y + 10), '"Remarkable!"', fontsize=16, fontname=body)
    body_paragraph(page, 50, y + 36, 480, 5, 3, body)
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == ["Package fields", '"main"', '"packageManager"', '"exports"'], md
    assert '"Remarkable!"' in md, md


@pytest.mark.parametrize("number", ["7-45", "12", "Page 3"])
def test_a_page_number_alone_at_the_foot_of_a_page_alone_is_furniture(tmp_path, engine, number):
    """A manual's page on its own: its number alone at the foot ("7-45"), a line clear of the text.
    A reader skips it, and docling's ground truth for its manual page leaves it out; it stayed text."""
    doc = _report_page(A4, "", 9, "helv", "helv", False, "top")
    doc[0].insert_text((280, 810), number, fontsize=9, fontname="helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert number not in md, md
    assert heading_texts(md) == ["2 Results of the survey", "3 Discussion"], md


@pytest.mark.parametrize("edge", ["top", "bottom"])
def test_page_n_of_m_and_the_label_stacked_with_it_are_running_lines(engine, tmp_path, edge):
    """A proposal's page of its own (ICDAR's us-009): "Appendix 5" over "Page 8 of 11" in the
    top right corner, bold and as large as its headings, came out as the heading "Appendix 5 Page 8
    of 11". Spelled out, a page's number among its document's is furniture whatever its size."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 44 if edge == "top" else 740
    page.insert_text((486, y), "Appendix 5", fontname="hebo", fontsize=11)
    page.insert_text((482, y + 12), "Page 8 of 11", fontname="hebo", fontsize=11)
    page.insert_text((72, 120), "Indirect Cost Rate Proposal", fontname="hebo", fontsize=14)
    body_paragraph(page, 72, 150, 468, 1, 12, "helv")
    page.insert_text(
        (72, 400), "The proposal runs to Page 8 of 11 in this copy.", fontname="helv", fontsize=10
    )
    md = saved_markdown(engine, doc, tmp_path)
    assert "Appendix 5" not in md and "Page 8 of 11\n" not in md, md
    assert heading_texts(md) == ["Indirect Cost Rate Proposal"], md
    assert "The proposal runs to Page 8 of 11 in this copy." in md


def test_an_appendix_title_numbered_a_quad_apart_and_hyphenated_over_two_lines_is_one_heading(
    engine, tmp_path
):
    """ICDAR's eu-027 (LaTeX): "B" a quad before "Appendix B: Financial Literacy and Stock Mar-", the
    title's second line 13 pt under it at 17 pt. The letter was taken for a cell beside the title, so
    the first line was text and "ket Participation over ..." a heading; joined, the title ran past the
    length a bold paragraph runs at the body's size."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((74, 97), "B", fontname="hebo", fontsize=17)
    page.insert_text((107, 97), "Appendix B: Financial Literacy and Stock Mar-", fontname="hebo", fontsize=17)
    page.insert_text(
        (107, 126), "ket Participation over Deciles of Financial Wealth", fontname="hebo", fontsize=17
    )
    body_paragraph(page, 74, 160, 440, 2, 10, "helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [
        "B Appendix B: Financial Literacy and Stock Market Participation over Deciles of Financial Wealth"
    ], md


def test_a_bold_paragraph_at_the_body_size_is_no_heading_however_it_wraps(engine, tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    body_paragraph(page, 74, 100, 440, 3, 3, "hebo")
    body_paragraph(page, 74, 160, 440, 2, 10, "helv")
    md = saved_markdown(engine, doc, tmp_path)
    assert heading_texts(md) == [], md


@pytest.mark.parametrize("faces", FACES)
def test_a_bold_sentence_of_two_lines_between_paragraphs_is_one_paragraph(engine, tmp_path, faces):
    """A bold statement set off between paragraphs at the body size, its first line filled to the
    column's edge and its second ending the sentence ("For a generic type to soundly implement drop,
    its generics arguments must" / "strictly outlive it."): its first line was a heading and the rest
    a paragraph of its own. A wrapped line that runs on into a sentence's end is prose. The control: a
    heading of two bold lines that ends no sentence stays one heading."""
    bold, body = faces
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = body_paragraph(page, 74, 100, 440, 2, 4, body) + 12
    y = body_paragraph(page, 74, y, 440, 3, 2, bold) + 12
    y = body_paragraph(page, 74, y, 440, 4, 4, body) + 14
    page.insert_text(
        (74, y),
        "Income, rents and the share of families who own their home in the towns",
        fontsize=10,
        fontname=bold,
    )
    page.insert_text((74, y + 13), "and the regions", fontsize=10, fontname=bold)
    body_paragraph(page, 74, y + 32, 440, 5, 4, body)
    md = saved_markdown(engine, doc, tmp_path)
    heads = heading_texts(md)
    assert heads == [
        "Income, rents and the share of families who own their home in the towns and the regions"
    ], md
    assert len([p for p in md.split("\n\n") if p.strip()]) == 5, md
