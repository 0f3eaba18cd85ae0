"""Definition lists are no headings (issue 30 item 4): a glossary's bold terms, each right above its
short definition in the body's weight, follow one another at the list's pitch; they are the entries of
a list, not a run of ``###`` headings. Short bold lines set off by a blank line above a section's text
stay headings. Pages built with PyMuPDF (A4), read by the text-layer engine."""

from __future__ import annotations

import pytest

from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import heading_texts, pages_markdown

pymupdf = import_pymupdf()

TERMS = [
    ("Baseline", "the line on which the letters of a line of type sit."),
    ("Gutter", "the white space between two columns of text on a page."),
    ("Kerning", "the space taken out or added between two letters."),
    ("Leading", "the space between the baselines of two lines of type."),
    ("Ligature", "two or more letters drawn as one glyph, such as fi."),
    ("Margin", "the white space around the text block of a page."),
    ("Orphan", "a paragraph's first line left alone at a column's foot."),
    ("Running head", "a title printed atop every page of a chapter."),
]
PROSE = (
    "This paragraph of body text says what the guide is about and runs on across the column for "
    "several lines, so that the document has a body size and weight of its own to compare with the "
    "lines set in bold. It goes on a little longer still, as the opening of a chapter does, before "
    "the next part of the page begins."
)
LEFT, WIDTH, SIZE, LEAD = 56.0, 470.0, 10.0, 13.0


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _wrap(text: str, width: float) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}" if line else word
        if line and pymupdf.get_text_length(trial, fontsize=SIZE) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line] if line else lines


def _paragraph(page: pymupdf.Page, y: float, text: str = PROSE, x: float = LEFT) -> float:
    """Body text (10 pt Helvetica) from baseline ``y``; the baseline after it."""
    for line in _wrap(text, WIDTH - (x - LEFT)):
        page.insert_text((x, y), line, fontsize=SIZE)
        y += LEAD
    return y


def _document(glossary: list[tuple[str, str]], indent: float = 0.0, run_in: bool = False) -> pymupdf.Document:
    """Two pages: a chapter whose second part is a glossary (bold terms, each over its definition at
    ``indent`` or ``run_in`` before it on its line, entries 18 pt apart), and a chapter of prose."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((LEFT, 80), "Terms of the trade", fontsize=18, fontname="hebo")
    y = _paragraph(page, 110) + 12
    page.insert_text((LEFT, y), "Glossary", fontsize=13, fontname="hebo")
    y += 20
    for term, meaning in glossary:
        page.insert_text((LEFT, y), term, fontsize=SIZE, fontname="hebo")
        if run_in:
            x = LEFT + pymupdf.get_text_length(term + " ", fontname="hebo", fontsize=SIZE)
            page.insert_text((x, y), meaning, fontsize=SIZE)
            y += 18
            continue
        page.insert_text((LEFT + indent, y + LEAD), meaning, fontsize=SIZE)
        y += LEAD + 18
    _paragraph(page, y + 12)
    page = doc.new_page(width=595, height=842)
    page.insert_text((LEFT, 80), "Setting a page", fontsize=18, fontname="hebo")
    y = _paragraph(page, 110)
    _paragraph(page, y + 6)
    return doc


@pytest.mark.parametrize("indent", [0.0, 16.0])
def test_a_glossarys_bold_terms_over_their_definitions_are_no_headings(tmp_path, engine, indent):
    """Eight bold terms at body size, each right above its one-line definition (flush with the term or
    indented under it), the entries a line and a half apart: a glossary under its heading. Only the
    chapter title and "Glossary" are headings; each term stays a line of its own, its definition after
    it, in order."""
    pdf = tmp_path / "glossary.pdf"
    _document(TERMS, indent).save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == ["Terms of the trade", "Glossary"], md
    blocks = [b.strip() for b in md.split("\n\n")]
    for term, meaning in TERMS:
        assert term in blocks, md  # the term on its own, not run into the definition above it
        assert blocks.index(meaning) == blocks.index(term) + 1, md


def test_short_bold_lines_set_off_above_their_sections_stay_headings(tmp_path, engine):
    """The control: the same short bold lines at body size, each with a blank line above it and a
    paragraph of several lines under it, are the headings of short sections."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((LEFT, 80), "Setting a page", fontsize=18, fontname="hebo")
    y = _paragraph(page, 110)
    names = ["Baseline", "Gutter", "Kerning", "Leading"]
    for name in names:
        y += 14
        page.insert_text((LEFT, y), name, fontsize=SIZE, fontname="hebo")
        y = _paragraph(page, y + LEAD + 2)
    pdf = tmp_path / "sections.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == ["Setting a page", *names], md


def test_bold_lines_close_above_paragraphs_of_three_lines_stay_headings(tmp_path, engine):
    """Sections packed close (less than a blank line above each bold line), each of three lines: a
    definition runs a line or two, a section longer; the bold lines are headings."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((LEFT, 80), "Setting a page", fontsize=18, fontname="hebo")
    y = _paragraph(page, 110)
    names = ["Baseline", "Gutter", "Kerning", "Leading"]
    for name in names:
        y += 7
        page.insert_text((LEFT, y), name, fontsize=SIZE, fontname="hebo")
        y = _paragraph(page, y + LEAD + 2, PROSE[:220])
    pdf = tmp_path / "packed.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == ["Setting a page", *names], md


def test_a_glossary_with_its_terms_run_in_has_no_headings(tmp_path, engine):
    """The same glossary with each bold term run in, its definition after it on the line: no headings
    but the chapter's and the glossary's."""
    pdf = tmp_path / "run_in.pdf"
    _document(TERMS, run_in=True).save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == ["Terms of the trade", "Glossary"], md


def test_bold_lines_each_set_off_over_a_short_paragraph_stay_headings(tmp_path, engine):
    """Short sections of a line or two each, every heading a blank line below the text above it: the
    blank line sets each one off, as a list's entries are not."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((LEFT, 80), "Setting a page", fontsize=18, fontname="hebo")
    y = _paragraph(page, 110)
    for term, meaning in TERMS[:4]:
        y += 16
        page.insert_text((LEFT, y), term, fontsize=SIZE, fontname="hebo")
        y = _paragraph(page, y + LEAD + 2, meaning.capitalize())
    pdf = tmp_path / "short.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == ["Setting a page", *(t for t, _ in TERMS[:4])], md


OPTIONS = [
    ("VALGRIND_COUNT_ERRORS:", 1),
    ("VALGRIND_PRINTF(format, ...):", 2),
    ("VALGRIND_MONITOR_COMMAND(command):", 1),
    ("VALGRIND_STACK_REGISTER(start, end):", 2),
    ("VALGRIND_CLO_CHANGE(option):", 1),
]


def _option_list(term_size: float, term_font: str, indent: float) -> pymupdf.Document:
    """A chapter, then an option list: each term on a line of its own (``term_font`` at
    ``term_size``), a line's space under it its definition of one or two paragraphs set ``indent``
    in from it, as DocBook prints a variable list. The last term falls at the foot of page one, its
    definition on page two."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((LEFT, 80), "The client request mechanism", fontsize=18, fontname="hebo")
    y = _paragraph(page, 110) + 12
    for term, paragraphs in OPTIONS:
        page.insert_text((LEFT, y), term, fontsize=term_size, fontname=term_font)
        y += 2 * LEAD
        for _ in range(paragraphs):
            y = _paragraph(page, y, PROSE, x=LEFT + indent) + 6
        y += 8
    assert y > 700, y  # the last term stands at the foot of a full page
    page.insert_text(
        (LEFT, y), "VALGRIND_STACK_CHANGE(id, start, end):", fontsize=term_size, fontname=term_font
    )
    page = doc.new_page(width=595, height=842)
    y = _paragraph(page, 80, PROSE[:200], x=LEFT + indent) + 12
    page.insert_text((LEFT, y + 12), "Debugging with GDB", fontsize=18, fontname="hebo")
    _paragraph(page, y + 40)
    return doc


def test_an_option_lists_terms_over_indented_definitions_are_no_headings(tmp_path, engine):
    """Bold code terms ending in a colon, each over a definition of one or two paragraphs set in from
    it (Valgrind's manual, DocBook XSL): the terms of a list, not ``####`` headings, in order over
    their definitions. Before: every term was a heading (a bold lead-in ending in a colon)."""
    pdf = tmp_path / "options.pdf"
    _option_list(8.5, "hebo", 28.0).save(pdf)
    pages = pages_markdown(engine, pdf)
    md = "\n\n".join(pages)
    assert heading_texts(md) == ["The client request mechanism", "Debugging with GDB"], md
    blocks = [b.strip() for b in md.split("\n\n")]
    terms = [t for t, _ in OPTIONS] + ["VALGRIND_STACK_CHANGE(id, start, end):"]
    at = [next(k for k, b in enumerate(blocks) if b.startswith(t)) for t in terms]
    assert at == sorted(at), md
    assert all(blocks[k + 1].startswith("This paragraph") for k in at), md


def test_headings_outdented_over_their_text_stay_headings(tmp_path, engine):
    """The control: bold lines set larger than the text, outdented over sections set in from them (a
    hanging-heads design) are headings."""
    pdf = tmp_path / "hanging.pdf"
    _option_list(12.0, "hebo", 28.0).save(pdf)
    md = "\n\n".join(pages_markdown(engine, pdf))
    assert [t for t, _ in OPTIONS][:4] == heading_texts(md)[1:5], md
