"""The probe's HTML laid out and printed by MuPDF's own HTML engine (``pymupdf.Story``): a second producer.

Why: every probe document was printed by Chromium, so the rules were only ever checked against one
producer's habits (its fonts, how it draws a cell's border or fill, how it breaks lines). MuPDF lays
out the same HTML with other fonts (its built-in Nimbus and Charis faces where a named face is not
found), draws cell fills and the fills behind each wrapped line of a cell, and ends a page's flow
where Chromium would not; the same truth then measures how far the rules carry to another producer.

What MuPDF cannot lay out is left out (``SKIPPED``): flex boxes (a deck's panels side by side), the
long tables' wrapped descriptions (it shrinks that column to one word a line), small capitals (its
synthetic ones carry no text: "IƿǵǡǈŠǼŕǵƗǈƿ" for "Introduction"), pictured tables (they need a
browser's screenshot). A flow in CSS columns is placed into as many column rectangles a page;
running headers and page numbers are written onto each page afterwards, as Chromium's templates do.
"""

from __future__ import annotations

import re
from pathlib import Path

SKIPPED = (
    "deck-",
    "long-wrapped-",
    "raster-",
    "report-smallcaps-",
    "paper-ieee-",
)  # what MuPDF cannot lay out as written
MM = 72 / 25.4
COLUMN_GAP = 7 * MM


def printable(name: str) -> bool:
    """Whether MuPDF's HTML engine lays out this probe document as its HTML means."""
    return not name.startswith(SKIPPED)


def print_story(page_html: str, path: Path, kind: str, *, serif: bool = False) -> None:
    """``page_html`` → a PDF at ``path`` in the page size, margins and running lines of ``kind``.
    ``serif``: every face set in MuPDF's serif (Charis) and paragraphs justified, as a book or a
    report from a word processor's other template is set (other glyph widths, other line breaks)."""
    import pymupdf

    if serif:
        page_html = re.sub(r"font-family:[^;}]*", "font-family:serif", page_html)
        page_html = page_html.replace("</style>", "p{text-align:justify}</style>", 1)

    if kind in ("slide", "deck"):
        page = pymupdf.Rect(0, 0, 720, 405)  # 10 × 5.625 in
        margins = (20 * MM, 20 * MM, 20 * MM, (14 if kind == "deck" else 20) * MM)
    else:
        page = pymupdf.paper_rect("a4")
        top = (22 if kind == "report" else 20) * MM
        margins = (20 * MM, top, 20 * MM, top)
    inner = pymupdf.Rect(
        page.x0 + margins[0], page.y0 + margins[1], page.x1 - margins[2], page.y1 - margins[3]
    )
    columns = 3 if "class=cols3" in page_html else 2 if "class=cols" in page_html else 1
    width = (inner.width - COLUMN_GAP * (columns - 1)) / columns
    rects = [
        pymupdf.Rect(
            inner.x0 + k * (width + COLUMN_GAP),
            inner.y0,
            inner.x0 + k * (width + COLUMN_GAP) + width,
            inner.y1,
        )
        for k in range(columns)
    ]
    story = pymupdf.Story(html=page_html)
    draft = path.with_suffix(".draft.pdf")
    writer = pymupdf.DocumentWriter(str(draft))
    more = True
    while more:
        device = writer.begin_page(page)
        for rect in rects:
            more, _ = story.place(rect)
            story.draw(device)
            if not more:
                break
        writer.end_page()
    writer.close()
    doc = pymupdf.open(str(draft))
    try:
        for number, p in enumerate(doc, start=1):
            for point, text in running_lines(kind, number, page):
                p.insert_text(point, text, fontsize=6)
        doc.save(str(path))
    finally:
        doc.close()
        draft.unlink(missing_ok=True)


def running_lines(kind: str, number: int, page) -> list[tuple[tuple[float, float], str]]:
    """The running header and page number Chromium's templates print for ``kind`` (MuPDF and Writer print them afterwards)."""
    if kind == "report":
        return [
            ((20 * MM, 14 * MM), "Regional Council — annual report"),
            ((page.width / 2 - 12, page.height - 12 * MM), f"Page {number}"),
        ]
    if kind == "paper":
        return [((page.width / 2 - 3, page.height - 10 * MM), str(number))]
    if kind == "deck":
        return [((20 * MM, page.height - 6 * MM), f"Regional Council · {number}")]
    return []
