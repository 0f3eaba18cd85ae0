"""Lines of the text in a running line's place stay text (issue 30, round 35). A document's running
lines are found by their words (repeated at an edge) and by their place (a spot near an edge that holds
a line on page after page). Two kinds of place were no running line's, and the text standing there was
cut from the Markdown: Node.js's web-crypto page lost 21 lines.
- A link the browser prints on every page ("Skip to content", fixed at the top) stands over the text's
  first line: its place is the text's, and on the pages without the link the text's first line was cut.
- A reference whose lists are set on a fixed pitch ends page after page on an item in the same place
  ("'SHA-256'", "'RSA-PSS'"): words the body holds as often as the edge are the body's.
The link's copies that the overprint pass thinned ("Skip to c tent") stay running lines."""

from __future__ import annotations

import pymupdf
import pytest

from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.engines.textlayer import split_running
from ocr_app.structure.docprofile import build_profile
from ocr_app.structure.page_furniture import is_thinned
from tests.factories import pages_markdown

SENTENCE = "Entry {k} of the register states which key type the method accepts and what it returns."


def test_the_first_line_under_a_link_printed_on_every_page_is_kept(textlayer_engine, printer):
    """The link stands at the top of the first pages only (a browser stops printing a fixed element
    partway, as Chromium did on Node.js's pages); each page's first line stands in its place."""
    body = "".join(f"<p>{SENTENCE.format(k=k)}</p>" for k in range(160))
    html = (
        "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:10pt;line-height:1.5;margin:0}"
        "p{margin:0 0 6pt}.skip{position:absolute;top:0;left:0;font-size:10pt;line-height:1.5}</style>"
        f"<div class=skip>Skip to content</div><div class=skip style='top:277mm'>Skip to content</div>"
        f"<div class=skip style='top:554mm'>Skip to content</div><div class=skip style='top:831mm'>"
        f"Skip to content</div>{body}"
    )
    pdf = printer("skip-link", html, margin_mm=10)
    md = "\n".join(pages_markdown(textlayer_engine, pdf))
    lost = [k for k in range(160) if SENTENCE.format(k=k) not in md]
    assert not lost, (lost, md[:2000])
    assert "Skip" not in md, md[:2000]  # the link is a running line still, whole or thinned


@pytest.mark.parametrize(
    "text, thinned",
    [
        ("skip to c tent", True),  # "on" read as the text's, under it
        ("skip t c ntent", True),
        ("skip to content", False),  # the line itself: its key matches already
        ("skip to", False),  # words missing, not letters
        ("skip to the content", False),  # more letters
        ("sk", False),  # too little left
    ],
)
def test_a_running_line_missing_letters_under_the_text_is_still_one(text, thinned):
    assert is_thinned(text, "skip to content") is thinned


def _reference(tmp_path, *, footer: bool):
    """Six pages of a reference: list items on a fixed pitch between paragraphs, each page ending on an
    item at one height, and (``footer``) a page number in the foot."""
    doc = pymupdf.open()
    items = ["'SHA-256'", "'SHA-512'", "'RSA-PSS'"]
    for n in range(6):
        page = doc.new_page(width=595, height=842)
        y = 90
        for k in range(12):
            page.insert_text((72, y), SENTENCE.format(k=12 * n + k), fontsize=10)
            y += 18
            for item in items:
                page.insert_text((90, y), item, fontsize=10)
                y += 18
            if y > 700:
                break
        page.insert_text((90, 790), items[n % 3], fontsize=10)  # the page ends on an item
        if footer:
            page.insert_text((290, 815), f"Page {n + 1}", fontsize=10)
    path = tmp_path / "reference.pdf"
    doc.save(path)
    return pymupdf.open(path)


def test_list_items_a_page_ends_on_are_no_running_lines(tmp_path):
    doc = _reference(tmp_path, footer=True)
    profile = build_profile(doc, extract_lines)
    for page in doc:
        running, rest = split_running(extract_lines(page, 1.0), profile, page.rect.height)
        assert [b.text for b in running] == [f"Page {page.number + 1}"], [b.text for b in running]
        assert rest[-1].text.startswith("'"), rest[-1].text
