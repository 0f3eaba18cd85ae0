"""Section titles set like the text around them (issue 30, round 10): underlined, in small capitals or
in another typeface at the body's size and weight, only their numbers' hierarchy marks them
(``numbering.numbered_titles``, applied through the document profile); titles in small capitals are
headings by that style too (``pdf_spans.small_caps_size``), numbered or not ("Abstract", "References"
in IEEE's template).

Before: "1. Recommendations" in small capitals or underlined came out as a numbered list item, and
"1.1 Scope" in the body's own face and size as a line of text: 59 % of these reports' headings found;
an IEEE paper's "I. Introduction" … "VI. Conclusion", "Abstract" and "References" were text (MHS 0.33).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.printed import build
from ocr_app.engines.pdf_spans import small_caps_size
from ocr_app.structure.numbering import numbered_titles, section_parts
from tests.factories import heading_texts, page_markdown

BODY = (10.5, 400, "serif")
SUB = (10.5, 400, "serif-italic")


def test_section_parts_are_digit_numbers_only():
    assert section_parts("2.1 Scope") == (2, 1)
    assert section_parts("3. Costs") == (3,)
    assert section_parts("A. Annex") == ()
    assert section_parts("Results") == ()


def test_sections_with_subsections_are_titles_a_numbered_list_among_them_is_not():
    lines = [
        ("Annual review", BODY, False),
        ("1. Recommendations", BODY, True),
        ("The board asked for three changes, set out below in the order of their cost.", BODY, False),
        ("1.1 Costs", SUB, True),
        ("Costs rose in every region.", BODY, False),
        ("1. Publish the data every quarter", BODY, True),
        ("2. Train two more inspectors", BODY, True),
        ("3. Review the grant rules", BODY, True),
        ("Each change is costed below.", BODY, False),
        ("1.2 Risks", SUB, True),
        ("The risks are small.", BODY, False),
        ("2. Background", BODY, True),
        ("2.1 Scope", SUB, True),
        ("The review covers the year.", BODY, False),
        ("3. Outlook", BODY, True),
        ("Demand will grow.", BODY, False),
    ]
    assert numbered_titles(lines) == {
        "1 recommendations": 1,
        "1 1 costs": 2,
        "1 2 risks": 2,
        "2 background": 1,
        "2 1 scope": 2,
        "3 outlook": 1,
    }
    # A numbered list alone (no section opens a subsection) is no outline at all.
    assert numbered_titles([ln for ln in lines if ln[1] == BODY]) == {}


def test_roman_sections_and_their_lettered_subsections_make_an_outline():
    lines = [
        ("Abstract", BODY, True),
        ("We study bridges.", BODY, False),
        ("I. Introduction", BODY, True),
        ("Bridges age.", BODY, False),
        ("II. Related work", BODY, True),
        ("Others studied this.", BODY, False),
        ("III. Method", BODY, True),
        ("A. Inspectors", SUB, True),
        ("Ninety inspectors.", BODY, False),
        ("B. Photographs", SUB, True),
        ("Two hundred bridges.", BODY, False),
        ("IV. Results", BODY, True),
        ("A. Agreement", SUB, True),
        ("It was high.", BODY, False),
        ("V. Conclusion", BODY, True),
        ("Train inspectors.", BODY, False),
    ]
    got = numbered_titles(lines)
    assert got == {
        "i introduction": 1,
        "ii related work": 1,
        "iii method": 1,
        "a inspectors": 2,
        "b photographs": 2,
        "iv results": 1,
        "a agreement": 2,
        "v conclusion": 1,
    }


def test_small_capitals_are_told_from_other_size_changes():
    assert small_caps_size([(9.3, "A"), (6.3, "bstract")]) == 9.3  # a browser's small capitals
    assert small_caps_size([(10.0, "I. I"), (7.0, "NTRODUCTION")]) == 10.0  # LaTeX's
    assert small_caps_size([(9.3, "II. R"), (6.3, "elated"), (9.3, " "), (6.3, "work")]) == 9.3
    assert small_caps_size([(10.0, "Results of the survey")]) == 0.0  # one size
    assert small_caps_size([(10.0, "Water use"), (6.0, "a")]) == 0.0  # a footnote letter, not a style
    assert small_caps_size([(10.0, "the River"), (7.0, "thames")]) == 0.0  # a capital-less big span
    assert small_caps_size([(10.0, "T"), (3.0, "he")]) == 0.0  # far smaller: not small capitals


def test_underlined_lines_are_told_from_links_and_rules(tmp_path):
    """A title underlined end to end is marked; an underlined link is not, nor a line over a table's
    rule that runs far past it, nor a line whose first word only is underlined."""
    from ocr_app.engines.pdf_drawings import mark_underlined
    from ocr_app.engines.pdf_spans import extract_lines

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    texts = (
        (100, "Scope of the review"),
        (160, "Visit the portal"),
        (220, "Costs by region"),
        (280, "Note well"),
    )
    for y, text in texts:
        page.insert_text((72, y), text, fontsize=11, fontname="helv")
    width = pymupdf.get_text_length("Scope of the review", fontname="helv", fontsize=11)
    page.draw_rect(pymupdf.Rect(72, 101.5, 72 + width, 102.3), color=None, fill=(0, 0, 0))
    link = pymupdf.get_text_length("Visit the portal", fontname="helv", fontsize=11)
    page.draw_rect(pymupdf.Rect(72, 161.5, 72 + link, 162.3), color=None, fill=(0, 0, 0))
    target = {"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(72, 150, 72 + link, 164), "uri": "https://x.org"}
    page.insert_link(target)
    page.draw_rect(pymupdf.Rect(60, 221.5, 520, 222.3), color=None, fill=(0, 0, 0))  # a table's rule
    page.draw_rect(pymupdf.Rect(72, 281.5, 95, 282.3), color=None, fill=(0, 0, 0))  # "Note" only
    path = tmp_path / "underlined.pdf"
    doc.save(path)
    with pymupdf.open(path) as pdf:
        lines = extract_lines(pdf[0], 2.0)
        mark_underlined(pdf[0], lines, 2.0)
    assert {ln.text: ln.underlined for ln in lines} == {
        "Scope of the review": True,
        "Visit the portal": False,
        "Costs by region": False,
        "Note well": False,
    }


def test_links_are_listed_only_where_a_stroke_may_underline(tmp_path, monkeypatch):
    """A page of linked lines without a stroke under any of them does not list its links (PyMuPDF
    walks the page's annotations anew for each link: 3,000 links cost 4.5 CPU s); the linked line
    over a stroke above is still told from a title (``test_underlined_lines_are_told_from_links_and_rules``)."""
    from ocr_app.engines.pdf_drawings import mark_underlined
    from ocr_app.engines.pdf_spans import extract_lines
    from tests.factories import count_calls

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for k in range(40):
        page.insert_text((72, 80 + 16 * k), f"Entry {k} of the index", fontsize=11, fontname="helv")
        target = pymupdf.Rect(72, 70 + 16 * k, 200, 84 + 16 * k)
        page.insert_link({"kind": pymupdf.LINK_URI, "from": target, "uri": f"https://x.org/{k}"})
    doc.save(tmp_path / "index.pdf")
    listed = count_calls(monkeypatch, pymupdf.Page, "get_links")
    with pymupdf.open(tmp_path / "index.pdf") as pdf:
        lines = extract_lines(pdf[0], 2.0)
        mark_underlined(pdf[0], lines, 2.0)
        assert len(pdf[0].get_links()) == 40
    assert len(lines) == 40 and not any(ln.underlined for ln in lines)
    assert sum(listed.values()) == 1  # the test's own call above


REPORTS = (
    "report-underline-0",
    "report-smallcaps-1",
    "report-otherface-0",
    "report-smallcaps-2",
    "report-underline-2",
    "paper-ieee-two",
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("numbered")
    build(out, REPORTS)
    return out


@pytest.mark.parametrize("name", REPORTS)
def test_every_numbered_title_of_a_printed_report_is_a_heading(textlayer_engine, reports, name):
    pdf = reports / "pdf" / f"{name}.pdf"
    with pymupdf.open(pdf) as doc:
        md = "\n\n".join(page_markdown(textlayer_engine, pdf, k) for k in range(doc.page_count))
    truth = (reports / "gt" / f"{name}.md").read_text(encoding="utf-8")
    want = [h.lstrip("#").strip() for h in truth.splitlines() if h.startswith("#")]
    assert heading_texts(md) == want, md
    assert not [ln for ln in md.splitlines() if ln[:3] in ("1. ", "2. ", "3. ", "4. ")], md  # no list items
