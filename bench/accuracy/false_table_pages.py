"""Pages that hold no table but look like one to rules over word positions (issue 30 item 3), built
with PyMuPDF: two-column prose, reference lists, slide panels, two columns of short lines; and two
pages that do hold one (ruled, unruled), so a fix that drops every table shows.

Why built and not collected: the kinds of page the issue names are common in the documents people
convert, and rare in the public tuning sets; each builder sets its page the way such documents do
(justified text, hanging indents, a gutter of 12-20 pt, panels on coloured fills).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pymupdf

A4 = (595.0, 842.0)
SLIDE = (960.0, 540.0)  # 16:9 in points

PROSE = [
    "Document conversion starts from what the page shows: the glyphs, their positions and the lines "
    "drawn around them. A parser that reads a page must decide which words belong together, in which "
    "order they are read, and which of them form a heading, a list or a table.",
    "Most scientific articles are set in two columns with a narrow gutter between them. The reader goes "
    "down the left column and then down the right one, and a heading that starts a section belongs to "
    "the column it stands in, not to the whole width of the page.",
    "Tables are different: their cells line up in rows and columns, each cell holds a short label or a "
    "figure, and a row is read across the page before the next one. Rulings often mark the grid, but "
    "many tables in reports are set with white space alone.",
    "When the two ideas are confused, a page of prose comes out as a grid of sentence fragments. The "
    "headings inside it are lost, the order of the paragraphs breaks, and the text can no longer be "
    "searched or quoted as the author wrote it.",
    "We therefore measure how often a converter calls something a table that is not one, on pages of "
    "several kinds: two columns of body text, lists of references with hanging indents, and slides "
    "whose panels stand side by side on coloured fills.",
    "The results show that the geometry of the words alone is not enough. A gutter looks like the gap "
    "between two columns of a table, and a list of numbered entries looks like a table of two columns "
    "whose first column holds the numbers.",
]

REFERENCES = [
    "A. Smith and B. Jones. Reading order detection in scanned documents. In Proceedings of the "
    "International Conference on Document Analysis and Recognition, pages 112-119, 2019.",
    "C. Wang, D. Liu, and E. Garcia. Table structure recognition with graph neural networks. Pattern "
    "Recognition, 98:107-121, 2020.",
    "F. Müller. A survey of layout analysis methods. International Journal on Document Analysis and "
    "Recognition, 15(3):201-236, 2012.",
    "G. Rossi, H. Tanaka, and I. Novak. Learning to parse invoices from few examples. arXiv preprint "
    "arXiv:2104.01234, 2021.",
    "J. Brown. Typesetting and the perception of tables. Journal of Visual Communication, 7:33-48, 2008.",
    "K. Lee and M. Patel. Robust heading detection across fonts and languages. In Findings of the "
    "Association for Computational Linguistics, pages 501-512, 2022.",
    "N. Ivanova. Born-digital PDF text extraction: pitfalls and remedies. Technical report, Open "
    "Document Lab, 2017.",
    "O. Kim, P. Silva, and Q. Zhang. End-to-end document understanding with vision transformers. In "
    "Advances in Neural Information Processing Systems, volume 35, pages 1200-1213, 2022.",
    "R. Dubois. Whitespace analysis for page segmentation. Document Engineering, 4(2):77-95, 2005.",
    "S. Okafor and T. Nguyen. Benchmarks for table detection: a critical look. In Workshop on Document "
    "Intelligence, pages 10-18, 2023.",
    "U. Berg. Column detection in multi-column layouts. Information Processing Letters, 41:1-9, 1998.",
    "V. Costa and W. Hansen. Semantic markup from visual cues. ACM Transactions on Information "
    "Systems, 29(4):1-30, 2011.",
]

AUTHOR_YEAR = [
    "Anderson, P., and Clark, R. (2015). Measuring reading order in multi-column documents. Journal of "
    "Document Engineering, 12(4), 233-251.",
    "Baker, T. (2009). The typography of scholarly articles. Cambridge University Press.",
    "Chen, L., Gupta, S., and Hoffmann, M. (2021). Layout models for born-digital files. In Proceedings of "
    "the Conference on Document Intelligence, 45-58.",
    "Davies, K. (2018). Why tables are hard to find. Information Design Journal, 24(1), 5-19.",
    "Evans, J., and Fischer, A. (2012). Page segmentation by white space. Pattern Recognition Letters, "
    "33(8), 1001-1010.",
    "Fernández, R. (2020). Reading PDF files at scale. O'Reilly Media.",
    "Greene, S., Holt, D., and Ito, Y. (2016). Heading detection in technical reports. Document Analysis "
    "and Recognition, 19(2), 88-102.",
    "Harris, B. (2023). Evaluating document converters fairly. arXiv preprint arXiv:2301.04567.",
    "Ibrahim, N., and Jensen, O. (2011). Hanging indents and list structure. Typography Papers, 9, 61-74.",
    "Johnson, M. (2007). Text extraction from the portable document format. Springer.",
]

PANELS = [
    (
        "Problem",
        [
            "Converters emit tables where there are none",
            "Headings inside columns are lost",
            "Column order breaks around false grids",
        ],
    ),
    (
        "Approach",
        [
            "Measure false tables on public and built pages",
            "Trace each one to the rule that made it",
            "Check cells hold words in a grid",
        ],
    ),
    (
        "Results",
        [
            "Fewer false tables on prose and slides",
            "Real tables still found on reports",
            "No slower on born-digital pages",
        ],
    ),
]

GLOSSARY = [
    ("Baseline", "the line the letters sit on"),
    ("Gutter", "white space between columns"),
    ("Kerning", "space between two letters"),
    ("Leading", "space between lines"),
    ("Ligature", "two letters drawn as one"),
    ("Margin", "white space around the text"),
    ("Orphan", "a paragraph's first line alone"),
    ("Ruling", "a line drawn on the page"),
    ("Serif", "a small stroke at a letter's end"),
    ("Widow", "a paragraph's last line alone"),
    ("Tracking", "space across a run of letters"),
    ("Folio", "the page number"),
    ("Recto", "a right-hand page"),
    ("Verso", "a left-hand page"),
    ("Caption", "the text under a figure"),
    ("Running head", "a title atop every page"),
]


def wrap(text: str, width: float, size: float, font: str = "helv") -> list[str]:
    """``text`` broken into lines no wider than ``width`` points."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        trial = f"{line} {word}" if line else word
        if line and pymupdf.get_text_length(trial, fontname=font, fontsize=size) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    if line:
        lines.append(line)
    return lines


def _justified(page: pymupdf.Page, x: float, y: float, width: float, text: str, size: float) -> float:
    """A justified paragraph (its last line flush left); returns the y below it."""
    lead = size * 1.25
    lines = wrap(text, width, size)
    for k, line in enumerate(lines):
        words = line.split()
        if k == len(lines) - 1 or len(words) == 1:
            page.insert_text((x, y), line, fontname="helv", fontsize=size)
        else:
            ink = sum(pymupdf.get_text_length(w, fontname="helv", fontsize=size) for w in words)
            gap = (width - ink) / (len(words) - 1)
            cx = x
            for w in words:
                page.insert_text((cx, y), w, fontname="helv", fontsize=size)
                cx += pymupdf.get_text_length(w, fontname="helv", fontsize=size) + gap
        y += lead
    return y + size * 0.6


def two_column_prose(doc: pymupdf.Document, gutter: float = 16.0) -> None:
    """A journal page: a title across the page, then two justified columns, each with its headings."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size = 56.0, 9.5
    col = (A4[0] - 2 * margin - gutter) / 2
    page.insert_text((margin, 80), "False Tables in Document Conversion", fontname="hebo", fontsize=18)
    heads = {
        0: "1 Introduction",
        2: "2 Tables and Columns",
        4: "3 Measuring",
        6: "4 Results",
        8: "5 Discussion",
        10: "6 Conclusion",
    }
    x, y = margin, 120.0
    for k, para in enumerate(PROSE * 2):
        if k == 6:
            x, y = margin + col + gutter, 120.0
        if k in heads:
            page.insert_text((x, y), heads[k], fontname="hebo", fontsize=12)
            y += 18
        y = _justified(page, x, y, col, para, size)


def _hanging(
    page: pymupdf.Page, x: float, y: float, width: float, marker: str, text: str, size: float, indent: float
) -> float:
    lead = size * 1.22
    if marker:
        page.insert_text((x, y), marker, fontname="helv", fontsize=size)
        lines = wrap(text, width - indent, size)
        for k, line in enumerate(lines):
            page.insert_text((x + indent, y + k * lead), line, fontname="helv", fontsize=size)
    else:  # author-year: first line flush left, the rest indented
        lines = wrap(text, width, size)
        first, rest = lines[0], wrap(" ".join(lines[1:]), width - indent, size) if len(lines) > 1 else []
        page.insert_text((x, y), first, fontname="helv", fontsize=size)
        for k, line in enumerate(rest, 1):
            page.insert_text((x + indent, y + k * lead), line, fontname="helv", fontsize=size)
        lines = [first, *rest]
    return y + len(lines) * lead + size * 0.4


def numbered_references(doc: pymupdf.Document, gutter: float = 14.0) -> None:
    """A paper's last page: a heading, then a numbered reference list in two columns, hanging indents."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size = 56.0, 8.0
    col = (A4[0] - 2 * margin - gutter) / 2
    page.insert_text((margin, 70), "References", fontname="hebo", fontsize=12)
    x, y = margin, 92.0
    refs = REFERENCES * 2
    for k, ref in enumerate(refs):
        if k == len(refs) // 2:
            x, y = margin + col + gutter, 92.0
        y = _hanging(page, x, y, col, f"[{k + 1}]", ref, size, 16.0)


def author_year_references(doc: pymupdf.Document) -> None:
    """A report's bibliography: author-year entries, one column, hanging indents."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size = 72.0, 10.0
    page.insert_text((margin, 80), "Bibliography", fontname="hebo", fontsize=14)
    y = 110.0
    for ref in AUTHOR_YEAR:
        y = _hanging(page, margin, y, A4[0] - 2 * margin, "", ref, size, 18.0)


def slide_panels(doc: pymupdf.Document, panels: int = 3) -> None:
    """A 16:9 slide: a title, then panels side by side on coloured fills, each a heading and bullets."""
    page = doc.new_page(width=SLIDE[0], height=SLIDE[1])
    page.insert_text((48, 70), "Finding False Tables", fontname="hebo", fontsize=30)
    gap, x0 = 24.0, 48.0
    w = (SLIDE[0] - 2 * x0 - gap * (panels - 1)) / panels
    fills = [(0.86, 0.92, 0.98), (0.90, 0.96, 0.88), (0.99, 0.93, 0.85)]
    for k, (title, bullets) in enumerate(PANELS[:panels]):
        x = x0 + k * (w + gap)
        page.draw_rect(pymupdf.Rect(x, 110, x + w, 480), color=None, fill=fills[k], width=0)
        page.insert_text((x + 16, 145), title, fontname="hebo", fontsize=20)
        y = 185.0
        for b in bullets:
            lines = wrap(b, w - 50, 16)
            page.insert_text((x + 16, y), "•", fontname="helv", fontsize=16)
            for line in lines:
                page.insert_text((x + 34, y), line, fontname="helv", fontsize=16)
                y += 21
            y += 12


def short_line_columns(doc: pymupdf.Document, gutter: float = 18.0) -> None:
    """A glossary in two columns of short lines (a term in bold, its meaning), under a heading."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size = 64.0, 10.0
    col = (A4[0] - 2 * margin - gutter) / 2
    page.insert_text((margin, 80), "Glossary", fontname="hebo", fontsize=16)
    half = len(GLOSSARY) // 2
    for k, (term, meaning) in enumerate(GLOSSARY):
        x = margin if k < half else margin + col + gutter
        y = 112 + (k % half) * 30
        page.insert_text((x, y), term, fontname="hebo", fontsize=size)
        page.insert_text((x, y + 13), meaning, fontname="helv", fontsize=size)


def poem_columns(doc: pymupdf.Document, gutter: float = 20.0) -> None:
    """A poem in two columns of short lines, stanzas apart, with a title."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size = 72.0, 11.0
    col = (A4[0] - 2 * margin - gutter) / 2
    page.insert_text((margin, 80), "The Columns", fontname="hebo", fontsize=16)
    stanza = [
        "The page is white and wide,",
        "two columns side by side,",
        "the reader goes down one",
        "and then the other's run.",
    ]
    for k in range(8):
        x = margin if k < 4 else margin + col + gutter
        y = 115 + (k % 4) * 80
        for j, line in enumerate(stanza):
            page.insert_text(
                (x, y + j * 15), line if (k + j) % 2 else line.capitalize(), fontname="helv", fontsize=size
            )


def justified_footnote(doc: pymupdf.Document) -> None:
    """A report page: paragraphs, then a two-line footnote set justified with wide spaces (long
    words, a narrow measure), its first line indented after the note's superscript number."""
    page = doc.new_page(width=A4[0], height=A4[1])
    y = 100.0
    for para in PROSE[:4]:
        y = _justified(page, 72, y, A4[0] - 144, para, 11)
    page.draw_line((72, 700), (200, 700), width=0.5)
    page.insert_text((72, 716), "14", fontname="helv", fontsize=5)
    lines = (
        (80.0, 720.0, "Estimated on the basis of Statistisches Bundesamt (2009): Volkswirtschaftliche and"),
        (72.0, 730.0, "Gesamtrechnungen of private households. Table from the Finanzierungsrechnung;"),
    )
    for x0, yy, text in lines:
        words = text.split()
        ink = sum(pymupdf.get_text_length(w, fontname="helv", fontsize=8) for w in words)
        gap, cx = (A4[0] - 72 - x0 - ink) / (len(words) - 1), x0
        for w in words:
            page.insert_text((cx, yy), w, fontname="helv", fontsize=8)
            cx += pymupdf.get_text_length(w, fontname="helv", fontsize=8) + gap
    page.insert_text((72, 740), "Wiesbaden, 2008.", fontname="helv", fontsize=8)


LETTER = (612.0, 792.0)

SIDEBAR = [
    ("At a glance", "The survey covers 199 public files from reports, papers and slide decks."),
    ("Why it matters", "A false table hides the headings and breaks the order in which the text is read."),
    ("What we did", "Each false table was traced to the rule that made it and fixed from the page."),
]


def _ragged(
    page: pymupdf.Page,
    x: float,
    y: float,
    width: float,
    text: str,
    size: float,
    lead: float,
    font: str = "helv",
) -> float:
    """A paragraph set ragged right on a grid of ``lead``; returns the baseline after it."""
    for line in wrap(text, width, size, font):
        page.insert_text((x, y), line, fontname=font, fontsize=size)
        y += lead
    return y


def prose_with_sidebar(doc: pymupdf.Document) -> None:
    """A magazine page: two columns of body text and, beside them, a 150 pt sidebar of short wrapped
    lines on the same line grid, its sections headed by bold lines at body size."""
    page = doc.new_page(width=A4[0], height=A4[1])
    size, lead, margin, gutter, side_w = 10.0, 13.0, 48.0, 18.0, 150.0
    col = (A4[0] - 2 * margin - side_w - 2 * gutter) / 2
    page.insert_text((margin, 80), "Annual Review of Conversion Quality", fontname="hebo", fontsize=16)
    for k in range(2):
        x, y = margin + k * (col + gutter), 116.0
        for para in PROSE[k * 3 : k * 3 + 3]:
            y = _ragged(page, x, y, col, para, size, lead) + lead
    x, y = A4[0] - margin - side_w, 116.0
    for head, text in SIDEBAR:
        page.insert_text((x, y), head, fontname="hebo", fontsize=size)
        y = _ragged(page, x, y + lead, side_w, text, size, lead) + lead


NEWSLETTER = [
    ("From the Editor", PROSE[0] + " " + PROSE[1]),
    ("Club News", PROSE[2] + " " + PROSE[3]),
    ("Next Meeting", PROSE[4] + " " + PROSE[5]),
]


def courier_newsletter(doc: pymupdf.Document) -> None:
    """A typewriter-style newsletter on Letter paper: a title, then three columns in Courier, each
    a 10 pt bold heading over ragged text."""
    page = doc.new_page(width=LETTER[0], height=LETTER[1])
    margin, gutter, size, lead = 40.0, 18.0, 9.0, 11.0
    col = (LETTER[0] - 2 * margin - 2 * gutter) / 3
    page.insert_text((margin, 70), "THE PARSER'S GAZETTE", fontname="cobo", fontsize=20)
    page.insert_text(
        (margin, 90), "Newsletter of the Document Club - Spring Issue", fontname="cour", fontsize=10
    )
    for k, (head, text) in enumerate(NEWSLETTER):
        x = margin + k * (col + gutter)
        page.insert_text((x, 124), head, fontname="cobo", fontsize=10)
        y = 124.0 + 16
        for para in (text, PROSE[(k + 2) % len(PROSE)]):
            y = _ragged(page, x, y, col, para, size, lead, "cour") + lead


def two_pitch_columns(doc: pymupdf.Document) -> None:
    """Two columns of ragged prose whose lines do not share a grid: the left set on 11 pt, the right
    on 13 pt leading (two articles side by side)."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, gutter, size = 56.0, 18.0, 9.0
    col = (A4[0] - 2 * margin - gutter) / 2
    page.insert_text((margin, 80), "Two Articles", fontname="hebo", fontsize=16)
    for k, lead in enumerate((11.0, 13.0)):
        x, y = margin + k * (col + gutter), 116.0
        page.insert_text(
            (x, y), ("Left: Reading Order", "Right: Line Grids")[k], fontname="hebo", fontsize=11
        )
        y += 18
        for para in PROSE[k * 3 : k * 3 + 3]:
            y = _ragged(page, x, y, col, para, size, lead) + lead / 2


KEY_FACTS = [
    ("Founded", "1998"),
    ("Headquarters", "Lyon, France"),
    ("Employees", "about 240"),
    ("Products", "document converters"),
    ("Customers", "banks and archives"),
]


def key_facts_box(doc: pymupdf.Document) -> None:
    """A company profile: body text in a column and, beside it, a ruled box holding a bold title and
    five short lines "label: value" (the value one space after the colon)."""
    page = doc.new_page(width=A4[0], height=A4[1])
    size, lead, margin = 10.0, 13.0, 56.0
    box_w, gutter = 160.0, 20.0
    main_w = A4[0] - 2 * margin - box_w - gutter
    page.insert_text((margin, 80), "Company Profile", fontname="hebo", fontsize=16)
    y = 116.0
    for para in PROSE[:4]:
        y = _ragged(page, margin, y, main_w, para, size, lead) + lead
    x0 = margin + main_w + gutter
    page.draw_rect(pymupdf.Rect(x0, 104, x0 + box_w, 116 + (len(KEY_FACTS) + 1) * lead + 6), width=0.8)
    page.insert_text((x0 + 8, 118), "Key facts", fontname="hebo", fontsize=size)
    for k, (label, value) in enumerate(KEY_FACTS, 1):
        yy = 118 + k * lead
        page.insert_text((x0 + 8, yy), f"{label}:", fontname="hebo", fontsize=size)
        w = pymupdf.get_text_length(f"{label}: ", fontname="hebo", fontsize=size)
        page.insert_text((x0 + 8 + w, yy), value, fontname="helv", fontsize=size)


# --- pages that do hold a table -----------------------------------------------------------------
TABLE_ROWS = [
    ["Region", "2019", "2020", "2021", "2022"],
    ["North", "1,204", "1,310", "1,402", "1,515"],
    ["South", "987", "1,021", "1,113", "1,190"],
    ["East", "2,410", "2,388", "2,502", "2,611"],
    ["West", "1,776", "1,802", "1,934", "2,040"],
    ["Total", "6,377", "6,521", "6,951", "7,356"],
]


def _table_page(doc: pymupdf.Document, ruled: bool) -> None:
    page = doc.new_page(width=A4[0], height=A4[1])
    margin = 72.0
    page.insert_text((margin, 80), "Annual Report", fontname="hebo", fontsize=16)
    y = _justified(page, margin, 110, A4[0] - 2 * margin, PROSE[2], 10)
    page.insert_text((margin, y + 6), "Table 1: Sales by region (units).", fontname="helv", fontsize=10)
    top, row_h, widths = y + 20, 20.0, [120.0, 80.0, 80.0, 80.0, 80.0]
    xs = [margin]
    for w in widths:
        xs.append(xs[-1] + w)
    for r, row in enumerate(TABLE_ROWS):
        for c, cell in enumerate(row):
            font = "hebo" if r == 0 else "helv"
            if c == 0:
                page.insert_text((xs[c] + 4, top + r * row_h + 14), cell, fontname=font, fontsize=10)
            else:
                tw = pymupdf.get_text_length(cell, fontname=font, fontsize=10)
                page.insert_text((xs[c + 1] - 6 - tw, top + r * row_h + 14), cell, fontname=font, fontsize=10)
    bottom = top + len(TABLE_ROWS) * row_h
    if ruled:
        for r in range(len(TABLE_ROWS) + 1):
            page.draw_line((xs[0], top + r * row_h), (xs[-1], top + r * row_h), width=0.6)
        for x in xs:
            page.draw_line((x, top), (x, bottom), width=0.6)
    else:  # booktabs: rules above and below the header and at the foot only
        for yy in (top, top + row_h):
            page.draw_line((xs[0], yy), (xs[-1], yy), width=0.8)
    _justified(page, margin, bottom + 30, A4[0] - 2 * margin, PROSE[3], 10)


def ruled_table(doc: pymupdf.Document) -> None:
    """A report page: a paragraph, a fully ruled table of figures, a paragraph."""
    _table_page(doc, ruled=True)


def unruled_table(doc: pymupdf.Document) -> None:
    """A report page: a table set with white space (a rule under its header only)."""
    _table_page(doc, ruled=False)


CONTENTS = [
    (0, "1 Introduction", "1"),
    (1, "1.1 Scope of this report", "2"),
    (1, "1.2 How to read it", "4"),
    (0, "2 Tables and Columns", "7"),
    (1, "2.1 Rulings and white space", "8"),
    (1, "2.2 Columns of prose", "11"),
    (1, "2.3 Slides and panels", "13"),
    (0, "3 Measuring False Tables", "17"),
    (1, "3.1 Public sets", "18"),
    (1, "3.2 Built pages", "21"),
    (0, "4 Results", "25"),
    (0, "Appendix A Data", "31"),
]


def table_of_contents(doc: pymupdf.Document) -> None:
    """A report's contents page: entries with dot leaders to right-aligned page numbers, chapters in
    bold, sections indented under them. Public ground truths (docling's) write it as a table of two
    columns, title and page."""
    _contents_page(doc, chapter_leaders=True)


def contents_bold_chapters(doc: pymupdf.Document) -> None:
    """A manual's contents page as xdvipdfmx's sets it: chapters in bold with their page numbers and
    no leaders, sections indented under them with dot leaders, every page number flush right."""
    _contents_page(doc, chapter_leaders=False)


def _contents_page(doc: pymupdf.Document, *, chapter_leaders: bool) -> None:
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size = 72.0, 11.0
    right = A4[0] - margin
    page.insert_text((margin, 90), "Contents", fontname="hebo", fontsize=18)
    y = 130.0
    for level, title, number in CONTENTS:
        font = "hebo" if level == 0 else "helv"
        y += 8 if level == 0 and y > 130 else 0
        x = margin + 18 * level
        page.insert_text((x, y), title, fontname=font, fontsize=size)
        nw = pymupdf.get_text_length(number, fontname=font, fontsize=size)
        page.insert_text((right - nw, y), number, fontname=font, fontsize=size)
        if level or chapter_leaders:
            start = x + pymupdf.get_text_length(title, fontname=font, fontsize=size) + 6
            dots = int(
                (right - nw - 6 - start) / pymupdf.get_text_length(" .", fontname="helv", fontsize=size)
            )
            page.insert_text((start, y), " ." * dots, fontname="helv", fontsize=size)
        y += 17


INDEX = {
    "A": [("asn1 coding program", "5"), ("asn1 decoding program", "7"), ("asn1 parser program", "5")],
    "F": [("free documentation licence", "24"), ("future developments", "4"), ("function index", "33")],
    "H": [("header files", "4"), ("hexadecimal output", "12"), ("history of changes", "30")],
    "M": [("main node type", "4"), ("memory use", "9"), ("modules and names", "14")],
    "P": [("parser errors", "6"), ("porting notes", "1"), ("printing a tree", "16")],
    "S": [("schema files", "2"), ("supported types", "2"), ("syntax rules", "3")],
}


def index_in_columns(doc: pymupdf.Document) -> None:
    """A manual's index in two columns (as Texinfo sets one): letter heads in bold, entries with dot
    leaders to their page numbers, the columns 24 pt apart, A to H left and M to S right, so each row
    across the page holds two entries side by side."""
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size, gap = 72.0, 9.0, 24.0
    width = (A4[0] - 2 * margin - gap) / 2
    page.insert_text((margin, 90), "Index", fontname="hebo", fontsize=18)
    for k, letters in enumerate((["A", "F", "H"], ["M", "P", "S"])):
        x, y = margin + k * (width + gap), 130.0
        for letter in letters:
            page.insert_text((x, y), letter, fontname="hebo", fontsize=14)
            y += 18
            for title, number in INDEX[letter]:
                page.insert_text((x, y), title, fontname="helv", fontsize=size)
                nw = pymupdf.get_text_length(number, fontname="helv", fontsize=size)
                page.insert_text((x + width - nw, y), number, fontname="helv", fontsize=size)
                start = x + pymupdf.get_text_length(title, fontname="helv", fontsize=size) + 4
                dots = int(
                    (x + width - nw - 4 - start)
                    / pymupdf.get_text_length(" .", fontname="helv", fontsize=size)
                )
                page.insert_text((start, y), " ." * dots, fontname="helv", fontsize=size)
                y += 12
            y += 14


NO_TABLE: dict[str, Callable[[pymupdf.Document], None]] = {
    "two-column prose": two_column_prose,
    "numbered references, two columns": numbered_references,
    "author-year references": author_year_references,
    "slide, 3 panels": slide_panels,
    "slide, 2 panels": lambda doc: slide_panels(doc, 2),
    "glossary, two columns": short_line_columns,
    "poem, two columns": poem_columns,
    "justified footnote": justified_footnote,
    "prose with a sidebar": prose_with_sidebar,
    "newsletter, three Courier columns": courier_newsletter,
    "two columns, two line pitches": two_pitch_columns,
    "key facts box": key_facts_box,
}
WITH_TABLE: dict[str, Callable[[pymupdf.Document], None]] = {
    "ruled table": ruled_table,
    "unruled table": unruled_table,
    "table of contents": table_of_contents,
}


def build(path: Path, page: Callable[[pymupdf.Document], None]) -> Path:
    """One PDF at ``path`` holding the page ``page`` builds."""
    doc = pymupdf.open()
    page(doc)
    doc.save(path)
    doc.close()
    return path
