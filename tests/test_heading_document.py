"""Headings from the whole document (issue 30 item 4, round 2): running heads whose text changes from
page to page stay out of the heading tree, while a slide deck's titles, which also stand in one place
on every page, stay headings."""

from __future__ import annotations

import pytest

from ocr_app.ingest.pdf import import_pymupdf
from tests.factories import heading_texts, pages_markdown

pymupdf = import_pymupdf()


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _body(page: pymupdf.Page, y: float, count: int, text: str, step: float = 13) -> float:
    """``count`` body lines "Line j <text>" at x 56 from ``y``, ``step`` apart; the y after them."""
    for j in range(count):
        page.insert_text((56, y), f"Line {j} {text}", fontsize=10)
        y += step
    return y


def test_a_running_head_that_names_the_current_section_is_no_heading(tmp_path, engine):
    """A book's running head names the section it is in (bold, larger than the body, in the top
    margin), so its text changes every few pages and no text runs on three pages: the place and size
    it stands in on every page make it a running line. The sections' own headings stay headings."""
    sections = ["Introduction", "Introduction", "Methods", "Methods", "Results", "Discussion"]
    doc = pymupdf.open()
    for k, name in enumerate(sections):
        page = doc.new_page(width=595, height=842)
        page.insert_text((56, 40), name, fontsize=12, fontname="hebo")
        y = 100
        if k == 0 or sections[k - 1] != name:
            page.insert_text((56, y), name, fontsize=16, fontname="hebo")
            y += 30
        _body(page, y, 20, f"of page {k + 1} runs on in the body face of the book.", step=14)
    pdf = tmp_path / "book.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert [heading_texts(md) for md in pages] == [
        ["Introduction"],
        [],
        ["Methods"],
        [],
        ["Results"],
        ["Discussion"],
    ], pages
    assert all("Line 0 of page" in md for md in pages)  # the first body line is no running line


def test_the_first_row_of_a_long_table_at_each_pages_top_is_no_running_line(tmp_path, engine):
    """A table running over pages puts a row in the same place at the top of each page, and its cells
    repeat from page to page: several pieces a page are a table's row, not a running head."""
    firsts = [("Alder", "Active", "North"), ("Birch", "Closed", "South")]
    doc = pymupdf.open()
    for k in range(4):
        page = doc.new_page(width=595, height=842)
        for j in range(30):
            cells = firsts[k // 2] if j == 0 else (f"Tree {k}-{j}", f"State {j}", f"Zone {k}{j}")
            for x, cell in zip((56, 250, 420), cells, strict=True):
                page.insert_text((x, 95 + 16 * j), cell, fontsize=10)
    pdf = tmp_path / "long_table.pdf"
    doc.save(pdf)
    for k, md in enumerate(pages_markdown(engine, pdf)):
        assert all(cell in md for cell in firsts[k // 2]), md


def test_a_cell_value_repeated_at_every_pages_top_is_no_running_line(tmp_path, engine):
    """A long table's rows reach into the top margin band of every page, and its cell values
    ("Active", "North") stand there on every page, but just as often further down: they are the
    table's text, not running lines, and the row they stand in keeps all its cells."""
    names = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Juniper", "Larch"]
    doc = pymupdf.open()
    for k in range(4):
        page = doc.new_page(width=595, height=842)
        for j in range(30):
            y = 60 + 16 * j
            page.insert_text(
                (56, y), f"{names[(k * 3 + j) % len(names)]} {chr(65 + k)}{chr(65 + j % 26)}", fontsize=10
            )
            page.insert_text((250, y), ["Active", "Closed"][j % 2], fontsize=10)
            page.insert_text((420, y), ["North", "South", "East"][j % 3], fontsize=10)
    pdf = tmp_path / "cells.pdf"
    doc.save(pdf)
    for k, md in enumerate(pages_markdown(engine, pdf)):
        first = f"{names[(k * 3) % len(names)]} {chr(65 + k)}A"
        assert f"<td>{first}</td><td>Active</td><td>North</td>" in md, md


def test_a_two_page_documents_running_header_is_no_heading(tmp_path, engine):
    """Two pages are too few to count repeats on three; the same bold line in the same place at the
    top of both pages is still the document's running header, not a heading on each page."""
    doc = pymupdf.open()
    for k, title in enumerate(["Sales grew in every region", "Outlook for next year"]):
        page = doc.new_page(width=595, height=842)
        page.insert_text((56, 40), "ACME Quarterly Report 2024", fontsize=11, fontname="hebo")
        page.insert_text((56, 100), title, fontsize=16, fontname="hebo")
        _body(page, 130, 20, f"of page {k + 1} runs on in the body face.", step=14)
    pdf = tmp_path / "two.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert [heading_texts(md) for md in pages] == [["Sales grew in every region"], ["Outlook for next year"]]
    assert not any("ACME" in md for md in pages)  # a page header: in the JSON, not the Markdown body


def test_slide_titles_in_one_place_on_every_slide_stay_headings(tmp_path, engine):
    """Each slide's title stands in the same place and size; its text is new on each slide."""
    titles = ["Agenda", "Market overview", "Our product", "Pricing", "Roadmap", "Questions"]
    doc = pymupdf.open()
    for title in titles:
        page = doc.new_page(width=720, height=405)
        page.insert_text((40, 40), title, fontsize=24, fontname="hebo")
        for j in range(4):
            page.insert_text(
                (60, 110 + 30 * j), f"Point {j + 1} about {title.lower()} in a few words", fontsize=14
            )
    pdf = tmp_path / "deck.pdf"
    doc.save(pdf)
    assert [heading_texts(md) for md in pages_markdown(engine, pdf)] == [[t] for t in titles]


def test_a_heading_ending_in_a_colon_is_one_where_the_documents_headings_are_set_alike(tmp_path, engine):
    """Section titles set 1.3 x the body in bold on both pages: the one that ends in a colon is a
    heading too (the style says heading); a colon line in a size no other heading uses stays a label."""
    doc = pymupdf.open()
    for titles in (["Scope of the grant", "Eligibility requirements:"], ["How to apply", "Deadlines"]):
        page = doc.new_page(width=595, height=842)
        y = 80
        for title in titles:
            page.insert_text((56, y), title, fontsize=13, fontname="hebo")
            y += 22
            y = _body(page, y, 6, "under this title says what applies in plain words.")
            y += 12
    page.insert_text((56, y), "Write to us at:", fontsize=11.5, fontname="hebo")
    page.insert_text((56, y + 14), "Grants Office, 1 Main Street, Springfield", fontsize=10)
    pdf = tmp_path / "grant.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert [heading_texts(md) for md in pages] == [
        ["Scope of the grant", "Eligibility requirements:"],
        ["How to apply", "Deadlines"],
    ], pages
    assert "Write to us at:" in pages[1]


def test_a_small_kicker_over_a_slides_title_is_text_and_the_title_heads_the_slide(tmp_path, engine):
    slides = [
        ("CASE STUDY", "How Acme cut costs by half"),
        ("OUR APPROACH", "Three steps to a leaner plant"),
        ("PART II", "Running the plant"),
    ]
    doc = pymupdf.open()
    for kick, title in slides:
        page = doc.new_page(width=720, height=405)
        page.insert_text((40, 50), kick, fontsize=11, fontname="hebo", color=(0.8, 0.2, 0.2))
        page.insert_text((40, 80), title, fontsize=26, fontname="hebo")
        for j in range(4):
            page.insert_text(
                (60, 140 + 30 * j), f"Point {j + 1} about the topic in a few plain words", fontsize=14
            )
    pdf = tmp_path / "kicker.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert [heading_texts(md) for md in pages[:2]] == [[title] for _, title in slides[:2]], pages
    assert all(kick in md for (kick, _), md in zip(slides, pages, strict=True))
    assert heading_texts(pages[2]) == ["PART II", "Running the plant"]  # a numbered label keeps its heading


def test_a_heading_sized_kicker_over_a_larger_slide_title_is_text(tmp_path, engine):
    """A deck whose bullets are 16 pt sets its kickers at 20 pt bold, larger than the body and so
    heading-sized on their own, right above 30 pt titles: still a label two thirds of the title's
    size, nothing between them; the title heads the slide, the kicker stays its text."""
    slides = [
        ("CASE STUDY", "How a regional bank cut its costs"),
        ("MARKET VIEW", "Where the market is heading"),
        ("OUR APPROACH", "Three steps to a cleaner ledger"),
    ]
    doc = pymupdf.open()
    for kick, title in slides:
        page = doc.new_page(width=960, height=540)
        page.insert_text((60, 70), kick, fontsize=20, fontname="hebo", color=(0.9, 0.5, 0.1))
        page.insert_text((60, 109), title, fontsize=30, fontname="hebo")
        for j in range(4):
            page.insert_text(
                (80, 200 + 29 * j), f"Point {j + 1} of the slide in a few plain words", fontsize=16
            )
    pdf = tmp_path / "kicker20.pdf"
    doc.save(pdf)
    pages = pages_markdown(engine, pdf)
    assert [heading_texts(md) for md in pages] == [[title] for _, title in slides], pages
    assert all(kick in md for (kick, _), md in zip(slides, pages, strict=True)), pages


def test_the_second_line_of_a_bold_caption_is_no_heading(tmp_path, engine):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 80
    y = _body(page, y, 8, "of the paragraph before the scheme, in the body face.")
    page.insert_text(
        (56, y + 10), "Scheme 1. Strategies for the Functionalization and", fontsize=10, fontname="hebo"
    )
    page.insert_text((56, y + 23), "Olefination of Ketones", fontsize=10, fontname="hebo")
    y += 50
    _body(page, y, 8, "of the paragraph after the scheme, in the body face.")
    pdf = tmp_path / "scheme.pdf"
    doc.save(pdf)
    md = pages_markdown(engine, pdf)[0]
    assert heading_texts(md) == [], md
    assert "Scheme 1. Strategies for the Functionalization and Olefination of Ketones" in md


def test_a_cover_pages_title_is_the_top_of_the_outline(tmp_path, engine):
    """A report's cover holds only its title (24 pt), a subtitle and a date; its chapters (15 pt) start
    on the next pages. Before: the cover's own body size (its subtitle's) set it apart, its title size
    was not counted among the document's heading sizes, and the title came out at the chapters' level
    ("##"). Guard: a cover without such a title adds nothing (the chapters stay at "##")."""

    def report(title_size: float) -> list[str]:
        doc = pymupdf.open()
        cover = doc.new_page(width=595, height=842)
        cover.insert_text(
            (56, 200), "Annual Report of the Audit Committee", fontsize=title_size, fontname="hebo"
        )
        cover.insert_text((56, 240), "For the year ended 31 March 2026", fontsize=14)
        cover.insert_text((56, 270), "Presented to the Board on 14 May 2026", fontsize=14)
        for k, chapter in enumerate(("1 Introduction", "2 Work of the committee")):
            page = doc.new_page(width=595, height=842)
            page.insert_text((56, 80), chapter, fontsize=15, fontname="hebo")
            _body(page, 110, 25, f"of chapter {k + 1} runs on in the body face of the report.")
        pdf = tmp_path / f"report-{title_size}.pdf"
        doc.save(pdf)
        return pages_markdown(engine, pdf)

    pages = report(24)
    assert "# Annual Report of the Audit Committee" in pages[0].splitlines(), pages[0]
    assert (
        "## 1 Introduction" in pages[1].splitlines() and "## 2 Work of the committee" in pages[2].splitlines()
    )
    plain = report(14)
    assert "## 1 Introduction" in plain[1].splitlines(), plain[1]
    assert not any(ln.startswith("# ") for md in plain for ln in md.splitlines()), plain
