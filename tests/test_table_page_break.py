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


def test_a_long_table_keeps_its_repeated_header_and_marks(textlayer_engine, printer):
    """A long ruled table over three pages: the browser repeats its header row at the top of every page,
    and its marks stand in the same column at the top and foot of page after page. On rustc's platform
    list those words, repeated at the page's edges, were running lines (each page's piece lost its
    header and marks, its first body row became a header, the pieces did not join); here the document
    profile already knows them for a table's rows, so this guards the whole; the rule itself is
    ``test_lines_of_a_drawn_table_are_no_furniture``."""
    from ocr_app.render.markdown import tables_kept_whole

    marks = ["", "", "✓", ""]
    rows = [
        (f"target-{k:03d}-unknown-linux-gnu", marks[k % 4], marks[(k + 1) % 4], f"Platform {k} with tools")
        for k in range(90)
    ]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    html = (
        "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:10pt;margin:0}"
        "table{border-collapse:collapse} td,th{border:1px solid #aaa;padding:3pt 6pt;text-align:left}"
        "tbody tr:nth-child(odd){background:#f6f7f6}</style><h1>Platform Support</h1>"
        f"<p>{TEXT}</p><table><thead><tr><th>target</th><th>std</th><th>host</th><th>notes</th></tr>"
        f"</thead><tbody>{body}</tbody></table><p>{TEXT}</p>"
    )
    pdf = printer("platforms", html, margin_mm=8)
    with pymupdf.open(pdf) as doc:
        assert doc.page_count >= 3
    md = "\n\n".join(tables_kept_whole(pages_markdown(textlayer_engine, pdf)))
    assert md.count("<table>") == 1, md
    assert md.count("<th>target</th>") == 1, md
    table = md[md.index("<table>") : md.index("</table>")]
    for target, *_, notes in rows:
        assert f"<td>{target}</td>" in table and notes in table, (target, md)
    # no mark lost to the page's furniture (a mark beside the notes may share their cell: a cell
    # read apart from its neighbour one space away is another matter, left open)
    for mark in ("✓",):
        assert table.count(mark) == sum(row[1:3].count(mark) for row in rows), (mark, md)


def test_lines_of_a_drawn_table_are_no_furniture():
    """``split_running`` with the page's drawn grids, on a profile that counts a long table's header
    words ("target") and a fixed link ("Skip to content") as running lines, and a page-number guess at
    the foot: in a drawn table of three rows or more a line stays the table's, unless it is printed
    over another line's words (the link over a cell); in a smaller grid only repeated words make
    furniture; outside any grid the old rules hold."""
    from ocr_app.engines.textlayer import split_running
    from ocr_app.structure.docprofile import DocumentProfile
    from ocr_app.structure.lines import DocStyle, TextLine

    height = 1000.0
    profile = DocumentProfile(
        style=DocStyle(body_size=10.0), running={("top", "target"), ("top", "skip to content")}
    )
    head = TextLine("target", (50, 40, 90, 52), 10.0)
    link = TextLine("Skip to content", (45, 38, 140, 50), 10.0)
    cell = TextLine("8", (52, 41, 58, 53), 10.0)
    foot = TextLine("9", (52, 960, 58, 972), 10.0)
    body = [
        TextLine(f"row {k} of the table, its cells", (50, 200 + 20 * k, 400, 212 + 20 * k), 10.0)
        for k in range(5)
    ]

    def kept(lines, grids):
        return [ln.text for ln in split_running(lines, profile, height, (), grids)[1]]

    page = [head, foot, *body]
    whole_page = ((40.0, 30.0, 560.0, 990.0), 30)
    assert kept(page, [whole_page]) == [ln.text for ln in page]  # header words and foot row: the table's
    assert "target" not in kept(page, [((40.0, 30.0, 560.0, 990.0), 2)])  # a small grid: repeated words go
    assert kept(page, []) == [ln.text for ln in body]  # no grid: a running head and a page number
    overlay = kept([link, cell, *body], [whole_page])
    assert "Skip to content" not in overlay and "8" in overlay  # printed over a cell: still furniture


def test_stripes_of_shading_are_no_header():
    """A zebra table's piece that a page break starts on a shaded row: the shading marks stripes, not
    a header (``table_html.header_rows``); a shaded first row over plain ones is a header, and bold
    still marks one over stripes."""
    from ocr_app.structure.table_html import header_rows

    plain = [False] * 6
    assert header_rows(plain, [True, False, True, False, True, False]) == 0
    assert header_rows(plain, [True, False, False, False, False, False]) == 1
    assert header_rows([True, *plain[1:]], [True, False, True, False, True, False]) == 1
