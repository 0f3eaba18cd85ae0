"""A ruled table that a page break cuts keeps its rows (issue 30, round 28): its last row on a page stands
in the footer's band, a lone figure in its first cell like a page number, and its next row stands where
the running headers stand; a column of bold figures keys its rows beside plain values, with its header
row left on the page before. Each was taken for page furniture or a form (Node.js's API reference, its
Node-API version matrix). Real text-layer engine, pages printed by Chromium."""

from __future__ import annotations

import pymupdf

from tests.factories import pages_markdown

CSS = (
    "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:10pt;line-height:1.5;margin:0}"
    ".skip{position:fixed;top:0;left:0;font-size:9pt}"
    "table{border-collapse:collapse} td,th{border:1px solid #aaa;padding:5pt 8pt;text-align:left}"
    "td:first-child{font-weight:bold}</style>"
)
TEXT = (
    "Up until version 9, the interface versions were additive and versioned independently from the "
    "runtime, so that any version was an extension of the one before it, with some additions."
)
VERSIONS = [f"v{10 + k}.{k}.0+, v{12 + k}.{2 * k}.0+ and all later versions" for k in range(24)]


def _document(paragraphs: int) -> str:
    rows = "".join(f"<tr><td>{24 - k}</td><td>{v}</td></tr>" for k, v in enumerate(VERSIONS))
    body = "".join(f"<p>{TEXT}</p>" for _ in range(paragraphs))
    return (
        f"{CSS}<div class=skip>Skip to content</div><h1>Node-API</h1>{body}"
        f"<table><tr><th>Node-API version</th><th>Supported In</th></tr>{rows}</table>"
        f"<p>{TEXT}</p>"
    )


def _pdf(printer):
    """The first document whose table breaks with its last row on page one inside the foot band (the
    lowest 8 % of the page)."""
    for paragraphs in range(14, 30):
        pdf = printer(f"break{paragraphs}", _document(paragraphs), margin_mm=4)
        with pymupdf.open(pdf) as doc:
            page = doc[0]
            words = [w for w in page.get_text("words") if w[4].isdigit() and w[0] < 60]
            if doc.page_count >= 2 and words and max(w[3] for w in words) > 0.92 * page.rect.height:
                return pdf
    raise AssertionError("no layout put a row in the foot band")


def test_rows_at_a_page_break_stay_in_the_table(textlayer_engine, printer):
    """Before: the foot row (a lone figure) went to the page footer as a page number and its
    values, and the next page's rows came out as a form's lines of text."""
    pages = pages_markdown(textlayer_engine, _pdf(printer))
    md = "\n".join(pages)
    for k, version in enumerate(VERSIONS):
        assert f"<td>{24 - k}</td><td>{version}</td>" in md, (k, md)
    assert pages[1].lstrip().startswith("<table>"), pages[1][:300]
    assert "Skip to content" not in md  # the running header is still one
