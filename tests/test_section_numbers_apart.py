"""Section numbers set a quad before their titles are no column of the page (issue 30, round 24).

Why: the TeX Live guide (TeX Live's documentation) sets its subsection titles bold with the number a
quad before the title ("3.1.2" then "Mac OS X"). MuPDF returns the two as separate lines; with four
such headings on a page, the number and title stood side by side a gutter apart four times, and the
columns pass read a column of numbers beside the text: each heading came out as "3.1.2" on a line of
its own over "## Mac OS X". A section's number alone is no evidence of columns now
(``passes.columns.find_gutter``, ``headings.bare_label``). The page is built with PyMuPDF.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

from ocr_app.structure.headings import bare_label
from tests.factories import heading_texts, page_markdown

SECTIONS = [("3.1.2", "Mac OS X"), ("3.1.3", "Windows"), ("3.1.4", "Cygwin"), ("3.1.5", "The text installer")]
TEXT = (
    "As mentioned in section 2.1, a separate distribution is prepared for this system, and we recommend "
    "using its native installer instead of the generic one, because it makes a few adjustments of its own."
)


def _guide_page(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80.0
    for number, title in SECTIONS:
        page.insert_text((72, y), number, fontname="tibo", fontsize=11)
        page.insert_text(
            (72 + pymupdf.get_text_length(number, "tibo", 11) + 11, y), title, fontname="tibo", fontsize=11
        )
        y += 22
        writer = pymupdf.TextWriter(page.rect)
        writer.fill_textbox(
            pymupdf.Rect(72, y - 9, 540, y + 60), TEXT, fontsize=10, font=pymupdf.Font("tiro")
        )
        writer.write_text(page)
        y += 110
    doc.save(path)
    return path


def test_a_bare_section_number_is_a_label():
    assert bare_label("3.1.2") and bare_label("B.2") and bare_label("4.")
    assert not bare_label("3.1.2 Mac OS X") and not bare_label("Mac")
    # a letter alone is no section number here: a letterhead's big "M" stands in a column of its own
    assert not bare_label("M") and not bare_label("IV.")


def test_numbered_headings_keep_their_numbers(tmp_path: Path, textlayer_engine):
    md = page_markdown(textlayer_engine, _guide_page(tmp_path / "guide.pdf"), 0)
    assert heading_texts(md) == [f"{n} {t}" for n, t in SECTIONS], md
