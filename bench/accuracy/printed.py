"""Documents printed by a browser, with their ground truth known exactly: a probe, not a tuning set.

Usage (from the repository root; needs Playwright and Debian's Chromium, as the browser tests do):

    python -m bench.accuracy.printed --out DIR [--tools auto] [--only NAME,...] [--printer mupdf|mupdf-serif|office|latex]

Each document is built from blocks (headings, paragraphs, lists, one table), written as HTML and as
Markdown (the ground truth), and printed to PDF by Chromium ("Save as PDF", backgrounds on):

- **style matrix**: the same content with its table in eight styles (full grid, booktabs rules,
  zebra stripes, a dark header bar, row rules, no rules, an outer frame, Word's "Grid Table 4" look)
  × four shapes (plain figures, heads over column groups, rows under group labels, wrapped text), on
  one column, two CSS columns, a full-width table or a 16:9 slide; heads left-set or centred over
  right-set figures; headings in five styles (sizes, numbers, capitals, one size in bold, a colon);
- **reports**: three-page reports with a running header and page numbers (not in the ground truth),
  numbered sections and subsections, lists, a chart with its caption and a table that may run onto
  the next page (Chromium repeats its header there);
- **papers** (round 10): title, authors, abstract, numbered sections in one or two columns, a table
  with its caption, a figure, a line that starts with an en dash, references set with hanging indents
  (numbered or author-year), a page number; two in IEEE's style (Roman sections in small capitals,
  lettered subsections, references at a tab after their labels);
- **reports with quiet titles** (round 10): section titles underlined, in small capitals or in another
  typeface at the body's size and weight, numbered or not;
- **decks** (round 10): 16:9 slides with a title slide, a small kicker line over each title (or none),
  bullets, coloured panels side by side with a head each, a table under a header bar, a running footer;
  titles on a dark bar and a slide in two halves in two of them;
- **long tables of wrapped descriptions** (round 19): 24 measures over two pages in five styles,
  the header repeated, where Chromium breaks a row at the page (its description's rest opens the
  next page under the repeated head);
- **statements, merged cells, pictured tables** (round 10): an annual report's income statement
  (blank corner, notes column, bracketed costs, bold subtotals); body cells spanning rows; a table
  pasted as a picture (a screenshot of the same HTML table, which only OCR can read).

``--printer mupdf`` lays the same HTML out with MuPDF's own engine instead (``story_print``, round 20):
another producer's fonts, fills and line breaks under the same truth; ``--printer mupdf-serif`` sets
every face in its serif and justifies the paragraphs. ``--printer office`` (round 21) hands the same
HTML, its styles computed by Chromium and written inline, to LibreOffice Writer, which lays it out and
exports PDF as a word processor does (``office_print``; needs Debian's libreoffice-writer-nogui).
``--printer latex`` (round 22) writes the same HTML, its styles computed by Chromium, as LaTeX and
typesets it with pdfTeX, as most papers are made (``latex_print``; needs Debian's texlive-latex-extra
and texlive-fonts-recommended).

Scored with the public sets' measures (``public.markdown_set``: NID / TEDS / MHS and the structure
measures). The documents are ours, so they only probe kinds no public set here has (docs/ACCURACY.md,
round 9); they are not tuned on. Row-group labels are written as one cell across the table, as the
HTML has them; ICDAR 2013's ground truth puts such labels in the first column alone, which the
engines follow, so those tables score below 1 on purpose.
"""

from __future__ import annotations

import argparse
import html
import itertools
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"

PARAS = (
    "The regional office reviewed every contract signed during the year and compared the agreed prices "
    "with the amounts finally paid. Most differences were small and followed from changes in scope that "
    "both parties had approved in writing.",
    "Demand for rail freight recovered in the second half, helped by a mild winter and by the reopening "
    "of two border crossings that had been closed for repairs since the spring.",
    "Water quality was sampled at forty stations along the river. Nitrate levels fell at most stations, "
    "while phosphate stayed close to last year's values except downstream of the treatment plant.",
    "The survey asked households how they heat their homes, how much they spend on energy, and whether "
    "they plan to replace their boiler within the next five years.",
    "Staff turnover fell for the third year in a row. Exit interviews point to flexible hours and clearer "
    "career paths as the main reasons people chose to stay.",
    "The pilot ran in six schools for one term. Teachers reported that pupils read more at home when "
    "they could choose their own books from the mobile library.",
    "Maintenance costs rose because several bridges reached the age at which their bearings must be "
    "replaced. The work was spread over two years to keep lanes open.",
    "Our estimates assume that interest rates stay at their current level and that the exchange rate "
    "moves within the band observed over the past twelve months.",
)
TITLES = (
    "Annual Review of Regional Services",
    "Freight and Logistics Report",
    "River Quality Monitoring 2025",
    "Household Energy Survey",
    "Workforce Report",
    "Bridge Maintenance Programme",
)
SECTIONS = (
    "Summary",
    "Background",
    "Results by region",
    "Costs and funding",
    "Method",
    "Outlook",
    "Recommendations",
    "Data sources",
)
SUBSECTIONS = (
    "Scope",
    "Approach",
    "Main findings",
    "Limitations",
    "Costs",
    "Timeline",
    "Risks",
    "Next steps",
)
ITEMS = (
    "Publish the data every quarter",
    "Replace the oldest bearings first",
    "Train two more inspectors",
    "Review the grant rules with the housing team",
    "Report progress to the board in June",
)

Cell = tuple[str, int, int]  # text, colspan, rowspan
Table = tuple[list[list[Cell]], list[list[Cell]]]  # header rows, body rows


def _plain(r: random.Random) -> Table:
    rows = []
    for name in ("North", "South", "East", "West", "Central", "Coast")[: r.randint(4, 6)]:
        a = r.randint(120, 980)
        b = a + r.randint(-60, 90)
        rows.append([(name, 1, 1), (f"{a:,}", 1, 1), (f"{b:,}", 1, 1), (f"{(b - a) / a * 100:+.1f}", 1, 1)])
    return [[(h, 1, 1) for h in ("Region", "2023", "2024", "Change (%)")]], rows


def _grouped(r: random.Random) -> Table:
    head = [
        [("Site", 1, 2), ("Nitrate (mg/l)", 2, 1), ("Phosphate (mg/l)", 2, 1)],
        [(y, 1, 1) for y in ("2024", "2025", "2024", "2025")],
    ]
    sites = ("Upper weir", "Mill bridge", "Town park", "Plant outlet", "Estuary")[: r.randint(3, 5)]
    return head, [[(s, 1, 1)] + [(f"{r.uniform(0.5, 9):.2f}", 1, 1) for _ in range(4)] for s in sites]


def _labelled(r: random.Random) -> Table:
    body: list[list[Cell]] = []
    for label, items in (("Staff", ("Salaries", "Training")), ("Operations", ("Energy", "Vehicles", "Rent"))):
        body.append([(label, 4, 1)])
        for item in items:
            a = r.randint(50, 900)
            b = r.randint(40, a)
            body.append([(item, 1, 1), (str(a), 1, 1), (str(b), 1, 1), (f"{b / a * 100:.0f}%", 1, 1)])
    return [[(h, 1, 1) for h in ("Item", "Budget", "Spent", "Share")]], body


def _wrapped(r: random.Random) -> Table:
    rows = (
        ("M1", "Replace the bearings of the three oldest bridges on the ring road", "Roads unit", "Q2 2026"),
        ("M2", "Publish quarterly water quality data for all forty stations", "Environment", "Q1 2026"),
        ("M3", "Extend the mobile library to four more schools in the east", "Education", "Q3 2026"),
        ("M4", "Review heating grants for households on low incomes", "Housing", "Q4 2026"),
    )
    head = [[(h, 1, 1) for h in ("Measure", "Description", "Owner", "Due")]]
    return head, [[(c, 1, 1) for c in row] for row in rows[: r.randint(3, 4)]]


STATEMENT = (  # (line, note, subtotal): an income statement, costs in brackets, subtotals in bold
    ("Revenue", "3", False),
    ("Cost of sales", "", False),
    ("Gross profit", "", True),
    ("Distribution costs", "", False),
    ("Administrative expenses", "4", False),
    ("Operating profit", "", True),
    ("Finance income", "5", False),
    ("Finance costs", "5", False),
    ("Profit before tax", "", True),
    ("Income tax expense", "6", False),
    ("Profit for the year", "", True),
)


def _statement(r: random.Random) -> Table:
    """An annual report's income statement: a blank corner, a notes column, two years of figures with
    costs in brackets, subtotals in bold."""
    body: list[list[Cell]] = []
    totals = [0, 0]
    for line, note, subtotal in STATEMENT:
        if subtotal:
            figures = totals[:]
        else:
            sign = 1 if line in ("Revenue", "Finance income") else -1
            figures = [sign * r.randint(200, 9000 if sign > 0 else 2500) for _ in range(2)]
            totals = [t + f for t, f in zip(totals, figures, strict=True)]
        cells = [f"{v:,}" if v >= 0 else f"({-v:,})" for v in figures]
        body.append([(line, 1, 1), (note, 1, 1), *((c, 1, 1) for c in cells)])
    return [[("", 1, 1), ("Note", 1, 1), ("2025", 1, 1), ("2024", 1, 1)]], body


def _merged(r: random.Random) -> Table:
    """Body cells spanning rows: a programme's area over its projects (a ruled table shows the span)."""
    body: list[list[Cell]] = []
    for area, projects in (
        ("Roads", ("Ring road bearings", "Bridge decks")),
        ("Water", ("River stations", "Plant outlet", "Flood gates")),
        ("Schools", ("Mobile library", "Heating")),
    ):
        for k, name in enumerate(projects):
            lead: list[Cell] = [(area, 1, len(projects))] if k == 0 else []
            budget = r.randint(100, 900)
            body.append([*lead, (name, 1, 1), (f"{budget:,}", 1, 1), (f"{r.randint(10, 95)}%", 1, 1)])
    return [[(h, 1, 1) for h in ("Area", "Project", "Budget", "Done")]], body


SHAPES: dict[str, Callable[[random.Random], Table]] = {
    "plain": _plain,
    "grouped": _grouped,
    "labelled": _labelled,
    "wrapped": _wrapped,
}
TABLE_STYLES = {
    "grid": "table.t td,table.t th{border:0.6pt solid #000}",
    "booktabs": "table.t thead tr:first-child th{border-top:1.2pt solid #000} table.t thead tr:last-child th"
    "{border-bottom:0.6pt solid #000} table.t tbody tr:last-child td{border-bottom:1.2pt solid #000}",
    "zebra": "table.t tbody tr:nth-child(even) td{background:#e8eef6} table.t th{background:#c9d6ea}",
    "headfill": "table.t th{background:#1f3b63;color:#fff}",
    "rows": "table.t td,table.t th{border-bottom:0.5pt solid #999} table.t th{border-bottom:1pt solid #333}",
    "none": "",
    "frame": "table.t{border:0.8pt solid #000} table.t thead{border-bottom:0.8pt solid #000}",
    "word": "table.t td,table.t th{border:0.5pt solid #8eaadb} table.t th{background:#4472c4;color:#fff;"
    "border-color:#4472c4} table.t tbody tr:nth-child(odd) td{background:#d9e2f3}",
}
HEADING_STYLES = {
    "plain": "h1{font-size:20pt} h2{font-size:14pt} h3{font-size:11.5pt}",
    "numbered": "h1{font-size:18pt} h2{font-size:13pt} h3{font-size:11pt}",
    "caps": "h1{font-size:18pt;color:#1f3b63} h2{font-size:11pt;letter-spacing:0.5pt;color:#1f3b63}"
    " h3{font-size:10.5pt;color:#1f3b63}",
    "samesize": "h1{font-size:16pt} h2{font-size:10.5pt} h3{font-size:10.5pt;font-style:italic;font-weight:normal}",
    "colon": "h1{font-size:18pt} h2{font-size:12pt} h3{font-size:10.5pt}",
    # Round 10: headings a size or a weight does not mark (reports only).
    "underline": "h1{font-size:18pt} h2,h3{font-size:10.5pt;font-weight:normal;text-decoration:underline}"
    " h3{font-style:italic}",
    "smallcaps": "h1{font-size:18pt} h2{font-size:11pt;font-weight:normal;font-variant:small-caps;"
    "letter-spacing:0.4pt} h3{font-size:10.5pt;font-style:italic;font-weight:normal}",
    "otherface": "h1{font-size:18pt} h2,h3{font-family:'DejaVu Sans',sans-serif;font-weight:normal}"
    " h2{font-size:12pt} h3{font-size:10.5pt}",
}
FONTS = {
    "serif": "'Liberation Serif',serif",
    "sans": "'Liberation Sans',sans-serif",
    "dejavu": "'DejaVu Sans',sans-serif",
}
LAYOUTS = {
    "single": "",
    "wide": "table.t{width:100%}",
    "two": ".cols{column-count:2;column-gap:8mm;text-align:justify} table.t{width:100%;font-size:8.5pt}",
    "slide": "body{font-size:15pt} h1{font-size:26pt} body h2{font-size:19pt} body h3{font-size:16pt}"
    " table.t{font-size:13pt;width:100%}",
}
CENTRED = "table.t th{text-align:center;vertical-align:middle} table.t td{text-align:right} table.t td:first-child{text-align:left}"


def table_html(table: Table) -> str:
    head, body = table
    out = ["<table class=t><thead>"]
    for row in head:
        out.append(
            "<tr>"
            + "".join(f"<th colspan={c} rowspan={r}>{html.escape(t)}</th>" for t, c, r in row)
            + "</tr>"
        )
    out.append("</thead><tbody>")
    for row in body:
        out.append(
            "<tr>"
            + "".join(
                f"<td colspan={c} rowspan={rs}{' class=grp' * (c > 1)}>{html.escape(t)}</td>"
                for t, c, rs in row
            )
            + "</tr>"
        )
    return "".join(out) + "</tbody></table>"


def table_markdown(table: Table) -> str:
    def cell(tag: str, text: str, colspan: int, rowspan: int) -> str:
        attrs = (f' colspan="{colspan}"' if colspan > 1 else "") + (
            f' rowspan="{rowspan}"' if rowspan > 1 else ""
        )
        return f"<{tag}{attrs}>{html.escape(text)}</{tag}>"

    head, body = table
    rows = ["<tr>" + "".join(cell("th", *c) for c in row) + "</tr>" for row in head]
    rows += ["<tr>" + "".join(cell("td", *c) for c in row) + "</tr>" for row in body]
    return "<table>" + "".join(rows) + "</table>"


Block = tuple[str, object]  # ("h1".."h3" | "p" | "ul" | "table" | "chart" | "caption", content)


def _render(blocks: list[Block], css: str, *, columns: bool = False) -> tuple[str, str]:
    """Blocks → (HTML to print, ground-truth Markdown)."""
    parts, md = [], []
    for kind, v in blocks:
        if kind == "table":
            parts.append(table_html(v))  # type: ignore[arg-type]
            md.append(table_markdown(v))  # type: ignore[arg-type]
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in v) + "</ul>")  # type: ignore[union-attr]
            md.append("\n".join(f"- {x}" for x in v))  # type: ignore[union-attr]
        elif kind == "chart":
            bars = "".join(
                f'<rect x="{50 + 70 * q}" y="{130 - h}" width="40" height="{h}" fill="#4472c4"/>'
                f'<text x="{55 + 70 * q}" y="143" font-size="9">Q{q + 1}</text>'
                for q, h in enumerate((60, 85, 95, 110))
            )
            parts.append(f'<svg width="360" height="150" xmlns="http://www.w3.org/2000/svg">{bars}</svg>')
        elif kind == "tabref":  # a reference whose label stands in a column of its own ("[3]", then a tab)
            label, _, rest = str(v).partition(" ")
            parts.append(
                f"<p class=tabref><span class=label>{html.escape(label)}</span>{html.escape(rest)}</p>"
            )
            md.append(str(v))
        elif kind in ("p", "caption", "kicker", "meta", "ref"):
            parts.append(f"<p class={kind}>{html.escape(str(v))}</p>")
            md.append(str(v))
        elif kind == "wrapline":  # a paragraph whose second part starts a line (set full width above)
            full, rest = v  # type: ignore[misc]
            parts.append(f"<p><span class=full>{html.escape(full)}</span>{html.escape(rest)}</p>")
            md.append(f"{full} {rest}")
        elif kind == "panels":  # boxes side by side, each a head over its text (slides, report covers)
            boxes = "".join(
                f"<div class=panel><h3>{html.escape(h)}</h3><p>{html.escape(t)}</p></div>"
                for h, t in v  # type: ignore[union-attr]
            )
            parts.append(f"<div class=panels>{boxes}</div>")
            md += [f"### {h}\n\n{t}" for h, t in v]  # type: ignore[union-attr]
        elif kind == "pair":  # two tables side by side, each under its own head
            boxes = "".join(
                f"<div><h3>{html.escape(h)}</h3>{table_html(t)}</div>"
                for h, t in v  # type: ignore[union-attr]
            )
            parts.append(f"<div class=pair>{boxes}</div>")
            md += [f"### {h}\n\n{table_markdown(t)}" for h, t in v]  # type: ignore[union-attr]
        elif kind == "split":  # a slide's two halves: bullets on the left, a paragraph on the right
            items, para = v  # type: ignore[misc]
            bullets = "".join(f"<li>{html.escape(x)}</li>" for x in items)
            parts.append(f"<div class=split><ul>{bullets}</ul><p>{html.escape(para)}</p></div>")
            md += ["\n".join(f"- {x}" for x in items), para]
        elif kind == "columns":  # what follows sits in two columns
            parts.append("<div class=cols>")
        elif kind == "ol":  # numbered steps
            parts.append("<ol>" + "".join(f"<li>{html.escape(x)}</li>" for x in v) + "</ol>")  # type: ignore[union-attr]
            md.append("\n".join(f"{k}. {x}" for k, x in enumerate(v, start=1)))  # type: ignore[arg-type]
        elif kind == "note":  # a callout: a bold lead-in and its sentence in a ruled box
            parts.append(f"<p class=note><b>Note:</b> {html.escape(str(v))}</p>")
            md.append(f"Note: {v}")  # inline weight is not marked in the probe's truth
        elif kind == "code":
            parts.append(f"<pre>{html.escape(str(v))}</pre>")
            md.append(f"```\n{v}\n```")
        elif kind == "cols3":  # what follows sits in three columns (a newsletter)
            parts.append("<div class=cols3>")
        elif kind == "dropcap":  # a paragraph whose first letter is set large over three lines
            text = str(v)
            parts.append(f"<p><span class=drop>{html.escape(text[0])}</span>{html.escape(text[1:])}</p>")
            md.append(text)
        elif kind == "wide":  # a caption and a table spanning every column of a multi-column flow
            caption, table = v  # type: ignore[misc]
            parts.append(
                f"<div class=wide><p class=caption>{html.escape(caption)}</p>{table_html(table)}</div>"
            )
            md += [caption, table_markdown(table)]
        elif kind == "pull":  # a pull quote set large between the column's paragraphs
            parts.append(f"<p class=pull>{html.escape(str(v))}</p>")
            md.append(str(v))
        elif kind == "sidebar":  # a shaded box in the column: a head over a short list
            head, items = v  # type: ignore[misc]
            bullets = "".join(f"<li>{html.escape(x)}</li>" for x in items)
            parts.append(f"<div class=side><h3>{html.escape(head)}</h3><ul>{bullets}</ul></div>")
            md += [f"### {head}", "\n".join(f"- {x}" for x in items)]
        elif kind == "slide":  # the next slide starts on a new page
            parts.append("</div><div class=slide>")
        else:
            parts.append(f"<{kind}>{html.escape(str(v))}</{kind}>")
            md.append("#" * int(kind[1]) + " " + str(v))
    if columns:
        parts.insert(1, "<div class=cols>")
    body = "".join(parts) + "</div>" * sum(p.startswith("<div class=cols") for p in parts)
    return f"<html><head><style>{css}</style></head><body>{body}</body></html>", "\n\n".join(md) + "\n"


BASE_CSS = (
    "body{{font-family:{font};font-size:10.5pt;margin:0;line-height:1.3}} h1,h2,h3{{margin:4mm 0 2mm}}"
    "table.t{{border-collapse:collapse;margin:3mm 0;font-size:9.5pt}} table.t td,table.t th"
    "{{padding:1.2mm 2.5mm;text-align:left;vertical-align:top}} table.t td.grp{{font-weight:bold}}"
    ".caption{{font-size:9pt;font-style:italic}}"
)


def _heading(text: str, style: str, number: str, colon: bool) -> str:
    text = f"{number} {text}" if style == "numbered" and number else text
    text = text + ":" if colon else text
    return text.upper() if style == "caps" else text


def matrix_document(
    layout: str, tstyle: str, shape: str, hstyle: str, font: str, seed: int, centred: bool
) -> tuple[str, str]:
    r = random.Random(seed)
    paras, secs = list(PARAS), list(SECTIONS)
    r.shuffle(paras)
    r.shuffle(secs)
    blocks: list[Block] = [("h1", r.choice(TITLES))]
    for i in range(3):
        blocks += [
            ("h2", _heading(secs[i], hstyle, str(i + 1), hstyle == "colon" and i == 1)),
            ("p", paras[2 * i]),
        ]
        if i == 1:
            blocks += [
                ("h3", _heading("Table detail", hstyle, f"{i + 1}.1", False)),
                ("p", "The table below sets out the figures by line."),
                ("table", (SHAPES.get(shape) or EXTRA_SHAPES[shape])(r)),
            ]
        blocks.append(("p", paras[2 * i + 1]))
    css = BASE_CSS.format(font=FONTS[font]) + TABLE_STYLES[tstyle] + HEADING_STYLES[hstyle] + LAYOUTS[layout]
    if shape == "statement":
        css += STATEMENT_CSS
    return _render(blocks, css + (CENTRED if centred else ""), columns=layout == "two")


EXTRA_SHAPES: dict[str, Callable[[random.Random], Table]] = {"statement": _statement, "merged": _merged}
# Subtotal rows in bold over a rule, figures set right (as annual reports set them).
STATEMENT_CSS = (
    ",".join(f"table.t tbody tr:nth-child({k + 1}) td" for k, (_, _, sub) in enumerate(STATEMENT) if sub)
    + "{font-weight:bold;border-top:0.6pt solid #000}"
    " table.t td:nth-child(n+3),table.t th:nth-child(n+3){text-align:right}"
)


def report_document(hstyle: str, font: str, seed: int, lists: bool, numbered: bool) -> tuple[str, str]:
    r = random.Random(seed)
    paras = list(PARAS) * 3
    r.shuffle(paras)
    text = iter(paras)
    blocks: list[Block] = [("h1", r.choice(TITLES)), ("p", next(text))]
    for i, sec in enumerate(r.sample(SECTIONS, 4)):
        head = f"{i + 1}. {sec}" if numbered else sec
        blocks += [("h2", head.upper() if hstyle == "caps" else head), ("p", next(text))]
        for j, sub in enumerate(r.sample(SUBSECTIONS, 2)):
            blocks += [("h3", f"{i + 1}.{j + 1} {sub}" if numbered else sub), ("p", next(text))]
            if lists and (i + j) % 3 == 0:
                blocks.append(("ul", r.sample(ITEMS, 3)))
            if (i, j) == (1, 0):
                blocks.append(("table", SHAPES[list(SHAPES)[seed % 4]](r)))
            if (i, j) == (2, 1):
                blocks += [
                    ("chart", None),
                    ("caption", "Figure 1: Share of works completed on time, by quarter."),
                ]
            blocks.append(("p", next(text)))
    css = (
        BASE_CSS.format(font=FONTS[font])
        + TABLE_STYLES[list(TABLE_STYLES)[seed % 8]]
        + HEADING_STYLES[hstyle]
    )
    return _render(blocks, css)


ABSTRACT = (
    "We study how often field inspectors agree when they grade the condition of road bridges from the "
    "same photographs. Ninety inspectors graded two hundred bridges twice, six weeks apart. Agreement "
    "was high for the deck and low for the bearings, and training on reference photographs raised it."
)
PAPER_SECTIONS = (
    ("Introduction", 2),
    ("Related work", 1),
    ("Data and method", 3),
    ("Results", 3),
    ("Discussion", 2),
    ("Conclusion", 1),
)
PAPER_SUBS = ("Inspectors", "Photographs", "Grading scale", "Agreement measures", "Training")
AUTHORS = (
    ("Okafor, N.", "Lindqvist, M."),
    ("Moreau, C.", "Tanaka, H.", "Alvarez, P."),
    ("Novak, J.", "Brennan, S."),
)
JOURNALS = (
    "Journal of Bridge Engineering",
    "Structure and Infrastructure Engineering",
    "Transportation Research Record",
    "Reliability Engineering and System Safety",
)
REF_TITLES = (
    "Visual inspection of highway bridges: a study of reliability",
    "Condition rating from images with convolutional networks",
    "Inter-rater agreement in infrastructure condition surveys",
    "Deterioration models for bridge bearings under traffic load",
    "Training inspectors with reference photographs: a field trial",
    "Kappa statistics for ordinal scales with many raters",
)
DASHED = (  # (lines set full width, the line that starts with an en dash)
    (
        "The survey counted costs by the size of the firm, and the pattern was the same in every region "
        "that took part. Firms with 10",
        "– 49 staff reported the largest rise in costs, while those with fewer staff saw little change.",
    ),
    (
        "Grades differed most where the bearings were hard to see from the deck, and least on short "
        "spans. Grades fell by one step on spans of 30",
        "– 60 metres, where the bearings carry the largest share of the load.",
    ),
)


def _refs(r: random.Random, numbered: bool) -> list[str]:
    out = []
    for k, title in enumerate(r.sample(REF_TITLES, 5), start=1):
        names = ", ".join(r.choice(AUTHORS))
        year, vol = r.randint(2008, 2024), r.randint(8, 40)
        first = r.randint(10, 400)
        body = f"{names} ({year}). {title}. {r.choice(JOURNALS)}, {vol}({r.randint(1, 6)}), {first}–{first + r.randint(8, 30)}."
        out.append(f"[{k}] {body}" if numbered else body)
    return out if numbered else sorted(out)


ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII")
IEEE_CSS = (
    "h2{font-size:10pt;font-weight:normal;font-variant:small-caps;text-align:center;letter-spacing:0.3pt}"
    " h3{font-size:10pt;font-weight:normal;font-style:italic}"
    " .tabref{position:relative;padding-left:7mm;margin:1mm 0;font-size:8pt;text-align:justify}"
    " .tabref .label{position:absolute;left:0}"
)


def paper_document(
    font: str, seed: int, numbered_refs: bool, columns: bool, ieee: bool = False, wide: bool = False
) -> tuple[str, str]:
    """A scientific paper: title, authors, abstract, numbered sections in two columns, a table with
    its caption, a figure, a wrapped line starting with an en dash, hanging-indent references.
    ``ieee``: sections numbered in Roman numerals, centred in small capitals at the body's weight,
    subsections lettered in italic ("I. Introduction", "A. Inspectors"), and each reference's label in a
    column of its own, its text hanging at a tab ("[3]" then the entry), as IEEE's template sets them."""
    r = random.Random(seed)
    paras = list(PARAS) * 3
    r.shuffle(paras)
    text = iter(paras)
    blocks: list[Block] = [
        (
            "h1",
            "Agreement between inspectors grading " + r.choice(("road bridges", "bridge decks", "culverts")),
        ),
        ("meta", ", ".join(r.choice(AUTHORS))),
        ("h2", "Abstract"),
        ("p", ABSTRACT),
    ]
    if columns:
        blocks.append(("columns", None))
    subs = iter(r.sample(PAPER_SUBS, 4))
    for i, (sec, n) in enumerate(PAPER_SECTIONS, start=1):
        blocks += [("h2", f"{ROMAN[i - 1]}. {sec}" if ieee else f"{i} {sec}"), ("p", next(text))]
        for j in range(1, n):
            if sec in ("Data and method", "Results"):
                sub = f"{'ABCDEF'[j - 1]}. {next(subs)}" if ieee else f"{i}.{j} {next(subs)}"
                blocks += [("h3", sub), ("p", next(text))]
            else:
                blocks.append(("p", next(text)))
        if sec == "Results":
            blocks.append(("wrapline", r.choice(DASHED)))
            if wide:  # the table and its caption across both columns, the columns going on below
                blocks += [("wide", ("Table 1: Agreement by element, by region.", _grouped(r)))]
            else:
                blocks += [("caption", "Table 1: Agreement by element."), ("table", _plain(r))]
            blocks += [("chart", None), ("caption", "Figure 1: Share of bridges graded alike, by quarter.")]
    blocks += [("h2", "References")] + [("tabref" if ieee else "ref", x) for x in _refs(r, numbered_refs)]
    css = (
        BASE_CSS.format(font=FONTS[font])
        + TABLE_STYLES["booktabs"]
        + "h1{font-size:17pt;text-align:center} h2{font-size:11.5pt} h3{font-size:10.5pt;font-style:italic}"
        " .meta{text-align:center;font-size:10pt} body{font-size:9.5pt}"
        " .ref{padding-left:6mm;text-indent:-6mm;margin:1mm 0;font-size:8.5pt}"
        " .full{display:block;text-align:justify;text-align-last:justify}"
        + (
            ".cols{column-count:2;column-gap:7mm;text-align:justify} table.t{width:100%;font-size:8pt}"
            if columns
            else ""
        )
        + (IEEE_CSS if ieee else "")
        + (" .wide{column-span:all;margin:3mm 0} .wide table.t{width:100%;font-size:9pt}" if wide else "")
    )
    return _render(blocks, css)


DECK = (
    ("Where we stand", "bullets"),
    ("Three priorities for 2026", "panels"),
    ("Costs by region", "table"),
    ("What changes for staff", "bullets"),
    ("Our programme at a glance", "panels"),
)
PANELS = (
    ("Faster repairs", "Crews reach a reported fault within two working days."),
    ("Safer crossings", "Forty crossings get new lights and raised tables."),
    ("Cleaner rivers", "Nitrate below 5 mg/l at every station by 2027."),
    ("Open data", "Every dataset is published each quarter."),
)


def _two_by(r: random.Random, head: str) -> Table:
    regions = r.sample(("North", "South", "East", "West", "Central", "Coast"), 4)
    return (
        [[("Region", 1, 1), (head, 1, 1), ("Change", 1, 1)]],
        [
            [(g, 1, 1), (str(r.randint(100, 900)), 1, 1), (f"{r.uniform(-20, 20):+.1f}%", 1, 1)]
            for g in regions
        ],
    )


def deck_document(
    hstyle: str, font: str, seed: int, kicker: bool, bar: bool = False, pair: bool = False
) -> tuple[str, str]:
    """A slide deck: a title slide, then slides with a small kicker line over the title, bullets,
    coloured panels side by side, a table with a header bar; a running footer with the slide number.
    ``bar``: each slide's title in white on a dark bar across the slide, and a slide in two halves."""
    r = random.Random(seed)
    title = r.choice(TITLES)
    blocks: list[Block] = [("h1", title), ("meta", "Board meeting, 12 March 2026")]
    slides = DECK + ((("Two views of the year", "split"),) if bar else ())
    slides += (("Costs and staff side by side", "pair"),) if pair else ()
    for k, (head, kind) in enumerate(slides, start=1):
        blocks.append(("slide", None))
        if kicker:
            blocks.append(("kicker", f"PART {k} · {r.choice(SECTIONS).upper()}"))
        blocks.append(("h2", head))
        if kind == "bullets":
            blocks.append(("ul", r.sample(ITEMS, 4)))
        elif kind == "panels":
            blocks.append(("panels", r.sample(PANELS, 3)))
        elif kind == "split":
            blocks.append(("split", (r.sample(ITEMS, 3), r.choice(PARAS))))
        elif kind == "pair":
            blocks.append(("pair", (("Costs", _two_by(r, "Cost")), ("Staff", _two_by(r, "Staff")))))
        else:
            blocks.append(("table", _plain(r)))
    css = (
        BASE_CSS.format(font=FONTS[font])
        + TABLE_STYLES["headfill"]
        + HEADING_STYLES[hstyle]
        + LAYOUTS["slide"]
        + ".slide{page-break-before:always} .kicker{font-size:9pt;color:#c0504d;letter-spacing:1pt;margin:0}"
        " .meta{font-size:14pt;color:#555} .panels{display:flex;gap:6mm}"
        " .panel{flex:1;background:#e8eef6;padding:4mm} .panel h3{margin:0 0 2mm} ul{font-size:15pt}"
        " .split{display:flex;gap:10mm} .split>*{flex:1;margin-top:0}"
        " .pair{display:flex;gap:12mm} .pair>div{flex:1} .pair h3{margin:0 0 2mm}"
        + (" .slide h2{background:#1f3b63;color:#fff;padding:3mm 5mm;margin:0 0 4mm}" if bar else "")
    )
    page, truth = _render(blocks, css)
    return page.replace("<body>", "<body><div>").replace("</body>", "</div></body>"), truth


NEWS_SECTIONS = ("Around the region", "People", "Works in progress", "Dates for your diary")
QUOTES = (
    "“We finally know which bridge will be closed, and for how long.”",
    "“The pupils chose the books themselves, and they read them.”",
    "“Nobody had asked us before how we heat our homes.”",
)
NEWS_CSS = (
    "body{{font-size:9.5pt}} h1{{font-size:24pt;margin:0 0 1mm}} h2{{font-size:13pt;margin:3mm 0 1.5mm}}"
    " h3{{font-size:10.5pt;margin:2mm 0 1mm}} .kicker{{font-size:8.5pt;letter-spacing:1pt;color:#c0504d;margin:0}}"
    " .meta{{font-size:9pt;color:#555;margin:0 0 4mm}} .cols3{{column-count:3;column-gap:6mm;text-align:{align}}}"
    " .pull{{font-size:13pt;font-style:italic;color:#1f3b63;border-top:1pt solid #1f3b63;"
    "border-bottom:1pt solid #1f3b63;padding:2mm 0;margin:3mm 0;text-align:left}}"
    " .side{{background:#e8eef6;padding:2mm 3mm;break-inside:avoid;margin:3mm 0}} .side ul{{padding-left:4mm;margin:1mm 0}}"
    " p{{margin:0 0 2mm}}"
)


def newsletter_document(font: str, seed: int, justified: bool, dropcap: bool = False) -> tuple[str, str]:
    """A newsletter: a kicker and the title across the page, then three columns of sections with
    subsections, a pull quote between paragraphs, and a shaded sidebar (a head over a short list);
    read column by column. ``dropcap``: each section's first paragraph opens with a drop capital."""
    r = random.Random(seed)
    paras = list(PARAS) * 3
    r.shuffle(paras)
    text = iter(paras)
    blocks: list[Block] = [
        ("kicker", "REGIONAL COUNCIL NEWSLETTER · ISSUE 14"),
        ("h1", r.choice(TITLES)),
        ("meta", "Spring 2026 · for residents and staff"),
        ("cols3", None),
    ]
    subs = iter(r.sample(SUBSECTIONS, 4))
    for i, sec in enumerate(NEWS_SECTIONS):
        blocks += [("h2", sec), ("dropcap" if dropcap else "p", next(text)), ("p", next(text))]
        if i % 2 == 0:
            blocks += [("h3", next(subs)), ("p", next(text))]
        if i == 1:
            blocks.append(("pull", r.choice(QUOTES)))
            blocks.append(("p", next(text)))
        if i == 2:
            blocks.append(("sidebar", ("At a glance", r.sample(ITEMS, 3))))
        blocks.append(("p", next(text)))
    css = BASE_CSS.format(font=FONTS[font]) + NEWS_CSS.format(align="justify" if justified else "left")
    css += " .drop{float:left;font-size:30pt;line-height:0.9;margin:1mm 1.5mm 0 0;color:#1f3b63}"
    return _render(blocks, css)


STEPS = (
    "Switch the meter off at the wall and wait until the display goes dark before you open the cover.",
    "Lift the cover and take the battery out of its holder.",
    "Put the new battery in with its flat side facing the back of the meter, then close the cover until it clicks.",
    "Switch the meter on again and check that the display shows today's date.",
)
PARAMS = (
    ("interval", "integer", "Minutes between two readings; the meter rounds it to a multiple of five."),
    ("unit", "text", "kWh or MJ."),
    (
        "upload",
        "boolean",
        "Whether readings are sent to the council's server each night over the mobile network.",
    ),
    ("retries", "integer", "How often a failed upload is tried again."),
)
MANUAL_CSS = (
    "h1{{font-size:18pt}} h2{{font-size:13pt}} h3{{font-size:11pt}} ol,ul{{margin:1mm 0 2mm}}"
    " .note{{border:0.8pt solid #999;background:#f3f3f3;padding:2mm 3mm}}"
    " pre{{font-family:'DejaVu Sans Mono',monospace;font-size:9pt;background:#f6f6f6;padding:2mm}}"
)


def _params(r: random.Random) -> Table:
    rows = list(PARAMS)
    r.shuffle(rows)
    return (
        [[("Setting", 1, 1), ("Type", 1, 1), ("Meaning", 1, 1)]],
        [[(a, 1, 1), (b, 1, 1), (c, 1, 1)] for a, b, c in rows],
    )


def manual_document(font: str, seed: int, tstyle: str) -> tuple[str, str]:
    """A user manual: numbered sections, numbered steps that wrap, a note in a ruled box with a bold
    lead-in, a code listing, a table of settings whose meanings wrap, and a bulleted list."""
    r = random.Random(seed)
    paras = list(PARAS) * 2
    r.shuffle(paras)
    text = iter(paras)
    blocks: list[Block] = [
        ("h1", "Smart Meter M2 — User Guide"),
        ("p", next(text)),
        ("h2", "1 Replacing the battery"),
        ("p", next(text)),
        ("ol", list(STEPS)),
        ("note", "A battery that is put in the wrong way round does no harm, but the meter stays dark."),
        ("h2", "2 Settings"),
        ("p", next(text)),
        ("h3", "2.1 The settings file"),
        ("p", "The meter reads its settings from a small text file when it starts:"),
        ("code", "interval = 15\nunit = kWh\nupload = true"),
        ("h3", "2.2 What each setting means"),
        ("table", _params(r)),
        ("p", next(text)),
        ("h2", "3 Getting help"),
        ("ul", r.sample(ITEMS, 3)),
        ("p", next(text)),
    ]
    css = BASE_CSS.format(font=FONTS[font]) + TABLE_STYLES[tstyle] + MANUAL_CSS.format()
    return _render(blocks, css)


STATIONS = (
    "Ashford",
    "Bridgend",
    "Carlow",
    "Dunmore",
    "Elmwood",
    "Fairfield",
    "Glenview",
    "Harlow",
    "Inverness",
    "Kilby",
)


def long_table_document(
    font: str, seed: int, tstyle: str, repeat: bool, wrapped: bool = False
) -> tuple[str, str]:
    """A report whose table of 60 stations runs over two pages; ``repeat``: its heads repeated at the
    top of the second page (a ``thead`` the browser repeats), else the rows go on under no heads.
    ``wrapped``: 24 measures whose descriptions wrap onto several lines in a narrow column, so the
    page may break a row (the rest of its description opens the next page)."""
    r = random.Random(seed)
    body = [
        [
            (f"{STATIONS[k % 10]} {k // 10 + 1}", 1, 1),
            (f"{r.uniform(1, 9):.1f}", 1, 1),
            (f"{r.uniform(0.1, 0.9):.2f}", 1, 1),
            (f"{r.uniform(-20, 20):+.1f}", 1, 1),
        ]
        for k in range(60)
    ]
    table: Table = (
        [[("Station", 1, 1), ("Nitrate (mg/l)", 1, 1), ("Phosphate (mg/l)", 1, 1), ("Change (%)", 1, 1)]],
        body,
    )
    if wrapped:
        texts = [
            " ".join(p.split()[: r.randint(14, 30)]) for p in itertools.islice(itertools.cycle(PARAS), 24)
        ]
        table = (
            [[("Measure", 1, 1), ("Description", 1, 1), ("Owner", 1, 1), ("Budget", 1, 1)]],
            [
                [(f"M{k + 1}", 1, 1), (t, 1, 1), (STATIONS[k % 10], 1, 1), (f"{r.randint(20, 900):,}", 1, 1)]
                for k, t in enumerate(texts)
            ],
        )
    blocks: list[Block] = [
        ("h1", r.choice(TITLES)),
        ("h2", "Water quality by station"),
        ("p", PARAS[1]),
        ("table", table),
        ("p", PARAS[3]),
    ]
    css = (
        BASE_CSS.format(font=FONTS[font])
        + TABLE_STYLES[tstyle]
        + "table.t td:nth-child(n+2){text-align:right}"
        + ("table.t td:nth-child(2){text-align:left;width:45%}" if wrapped else "")
    )
    page, truth = _render(blocks, css)
    if not repeat:  # the heads as the body's first row: printed once
        page = page.replace("<thead>", "<tbody>").replace("</thead><tbody>", "")
    return page, truth


def plan() -> Iterator[tuple[str, str, Callable[[], tuple[str, str]]]]:
    """``(name, page format, build)`` for every document, in a fixed order."""
    fonts, hstyles = list(FONTS), list(HEADING_STYLES)
    for seed, (tstyle, shape) in enumerate(itertools.product(TABLE_STYLES, SHAPES), start=1):
        for centred in (False, True):
            layout = ("single", "wide", "two", "slide")[(seed + 2 * centred) % 4]
            hstyle, font = hstyles[(seed + centred) % 5], fonts[(seed + centred) % 3]
            args = (layout, tstyle, shape, hstyle, font, seed + 100 * centred, centred)
            name = f"{tstyle}-{shape}-{layout}{'-centred' if centred else ''}"
            yield name, "slide" if layout == "slide" else "A4", lambda a=args: matrix_document(*a)
    for seed, (hstyle, variant) in enumerate(itertools.product(HEADING_STYLES, range(3)), start=200):
        args = (hstyle, fonts[seed % 3], seed, variant != 1, variant != 2)
        yield f"report-{hstyle}-{variant}", "report", lambda a=args: report_document(*a)
    for seed, (tstyle, shape) in enumerate(
        (
            ("grid", "plain"),
            ("booktabs", "grouped"),
            ("zebra", "wrapped"),
            ("headfill", "plain"),
            ("zebra", "plain"),
        ),
        start=700,
    ):
        layout = ("single", "wide")[seed % 2]
        args = (layout, tstyle, shape, hstyles[seed % 5], fonts[seed % 3], seed, False)
        yield f"raster-{tstyle}-{shape}-{layout}", "A4", lambda a=args: matrix_document(*a)
    for seed, tstyle in enumerate(("grid", "word", "frame", "zebra"), start=600):
        layout = ("single", "wide", "two", "slide")[seed % 4]
        args = (layout, tstyle, "merged", hstyles[seed % 5], fonts[seed % 3], seed, False)
        yield (
            f"merged-{tstyle}-{layout}",
            "slide" if layout == "slide" else "A4",
            lambda a=args: matrix_document(*a),
        )
    for seed, tstyle in enumerate(("none", "rows", "booktabs", "zebra", "grid", "frame"), start=500):
        layout = ("single", "wide")[seed % 2]
        args = (layout, tstyle, "statement", hstyles[seed % 5], fonts[seed % 3], seed, seed % 4 == 1)
        yield f"statement-{tstyle}-{layout}", "A4", lambda a=args: matrix_document(*a)
    for seed, (numbered, columns) in enumerate(itertools.product((True, False), (True, False)), start=300):
        args = (fonts[seed % 3], seed, numbered, columns)
        name = f"paper-{'numbered' if numbered else 'authoryear'}-{'two' if columns else 'one'}"
        yield name, "paper", lambda a=args: paper_document(*a)
    for seed, numbered in enumerate((True, False), start=330):
        args = (fonts[seed % 3], seed, numbered, True, False, True)
        yield (
            f"paper-wide-{'numbered' if numbered else 'authoryear'}",
            "paper",
            lambda a=args: paper_document(*a),
        )
    for seed, columns in enumerate((True, False), start=320):
        args = (fonts[seed % 3], seed, True, columns, True)
        yield f"paper-ieee-{'two' if columns else 'one'}", "paper", lambda a=args: paper_document(*a)
    for seed, (hstyle, kicker) in enumerate(
        itertools.product(("plain", "caps", "samesize"), (True, False)), start=400
    ):
        args = (hstyle, fonts[seed % 3], seed, kicker)
        yield f"deck-{hstyle}{'-kicker' if kicker else ''}", "deck", lambda a=args: deck_document(*a)
    for seed, tstyle in enumerate(("grid", "booktabs", "zebra"), start=460):
        args = (fonts[seed % 3], seed, tstyle)
        yield f"manual-{tstyle}", "A4", lambda a=args: manual_document(*a)
    for seed, justified in enumerate((True, False), start=440):
        args = (fonts[seed % 3], seed, justified)
        yield f"news-{'justified' if justified else 'ragged'}", "A4", lambda a=args: newsletter_document(*a)
    for seed, (tstyle, repeat) in enumerate(
        (("rows", True), ("rows", False), ("none", False), ("zebra", True)), start=480
    ):
        args = (fonts[seed % 3], seed, tstyle, repeat)
        yield (
            f"long-{tstyle}-{'repeated' if repeat else 'once'}",
            "report",
            lambda a=args: long_table_document(*a),
        )
    for seed, tstyle in enumerate(("rows", "zebra", "grid", "none", "booktabs"), start=490):  # round 19
        args = (fonts[seed % 3], seed, tstyle, True, True)
        yield f"long-wrapped-{tstyle}", "report", lambda a=args: long_table_document(*a)
    yield "news-dropcap", "A4", lambda: newsletter_document(fonts[1], 442, False, True)
    for seed, hstyle in enumerate(("plain", "samesize"), start=430):
        args = (hstyle, fonts[seed % 3], seed, False, False, True)
        yield f"deck-pair-{hstyle}", "deck", lambda a=args: deck_document(*a)
    for seed, hstyle in enumerate(("plain", "caps"), start=420):
        args = (hstyle, fonts[seed % 3], seed, seed % 2 == 0, True)
        yield f"deck-bar-{hstyle}", "deck", lambda a=args: deck_document(*a)


def build(out: Path, only: tuple[str, ...] = (), printer: str = "chromium") -> list[str]:
    """Print every document (or ``only`` these) into ``out/pdf`` with its truth in ``out/gt``.
    ``printer``: "chromium" (the browser's "Save as PDF"), "mupdf" (MuPDF's HTML engine,
    ``story_print``; the documents it cannot lay out are left out), "mupdf-serif" (the same, every
    face serif, paragraphs justified), "office" (LibreOffice Writer, ``office_print``) or "latex"
    (pdfTeX, ``latex_print``)."""
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    (out / "gt").mkdir(parents=True, exist_ok=True)
    if printer in ("mupdf", "mupdf-serif"):
        return _build_story(out, only, serif=printer == "mupdf-serif")
    from playwright.sync_api import sync_playwright

    if printer == "office":
        return _build_office(out, only)
    if printer == "latex":
        return _build_latex(out, only)

    names = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for name, kind, make in plan():
                if only and name not in only:
                    continue
                page_html, truth = make()
                if name.startswith("raster-"):
                    page_html = _table_as_picture(browser, page_html)
                page = browser.new_page()
                try:
                    page.set_content(page_html)
                    _print(page, out / "pdf" / f"{name}.pdf", kind)
                finally:
                    page.close()
                (out / "gt" / f"{name}.md").write_text(truth, encoding="utf-8")
                names.append(name)
        finally:
            browser.close()
    return names


def _build_story(out: Path, only: tuple[str, ...], *, serif: bool = False) -> list[str]:
    from bench.accuracy.story_print import print_story, printable

    names = []
    for name, kind, make in plan():
        if (only and name not in only) or not printable(name):
            continue
        page_html, truth = make()
        print_story(page_html, out / "pdf" / f"{name}.pdf", kind, serif=serif)
        (out / "gt" / f"{name}.md").write_text(truth, encoding="utf-8")
        names.append(name)
    return names


def _build_office(out: Path, only: tuple[str, ...]) -> list[str]:
    from bench.accuracy.office_print import available, inline, print_office, printable

    if not available():
        raise SystemExit(
            "--printer office needs LibreOffice's soffice on the PATH (apt install libreoffice-writer-nogui)"
        )
    pages = _read_in_chromium(out, only, printable, inline)
    print_office(pages, out / "pdf")
    return [name for name, _, _ in pages]


def _build_latex(out: Path, only: tuple[str, ...]) -> list[str]:
    from bench.accuracy.latex_print import available, print_latex, printable, tree

    if not available():
        raise SystemExit(
            "--printer latex needs pdflatex on the PATH (apt install texlive-latex-extra texlive-fonts-recommended)"
        )
    pages = _read_in_chromium(out, only, printable, tree)
    names = print_latex(pages, out / "pdf")
    for name, _, _ in pages:  # a document pdflatex could not typeset has no truth either
        if name not in names:
            (out / "gt" / f"{name}.md").unlink()
    return names


def _read_in_chromium(
    out: Path, only: tuple[str, ...], printable: Callable[[str], bool], read: Callable
) -> list:
    """(name, ``read(browser, html)``, kind) for each document another producer prints (Chromium
    computes the styles it hands over), its truth written to ``out/gt``."""
    from playwright.sync_api import sync_playwright

    pages = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for name, kind, make in plan():
                if (only and name not in only) or not printable(name):
                    continue
                page_html, truth = make()
                if name.startswith("raster-"):
                    page_html = _table_as_picture(browser, page_html)
                pages.append((name, read(browser, page_html), kind))
                (out / "gt" / f"{name}.md").write_text(truth, encoding="utf-8")
        finally:
            browser.close()
    return pages


A4_TEXT_PX = 643  # CSS pixels between an A4 page's 20 mm margins: the table is laid out as printed


def _table_as_picture(browser, page_html: str) -> str:
    """The page with its table replaced by a picture of it (a screenshot at three times the
    resolution, set at the table's size): a table pasted into a report as an image, which only OCR
    can read."""
    import base64
    import re

    page = browser.new_page(device_scale_factor=3, viewport={"width": A4_TEXT_PX, "height": 1000})
    try:
        page.set_content(page_html)
        table = page.locator("table.t").first
        width = table.bounding_box()["width"]
        png = base64.b64encode(table.screenshot()).decode()
    finally:
        page.close()
    picture = (
        f'<img src="data:image/png;base64,{png}" style="width:{width:.1f}px;display:block;margin:3mm 0">'
    )
    return re.sub(r"<table class=t>.*?</table>", lambda _: picture, page_html, count=1, flags=re.S)


def _print(page, path: Path, kind: str) -> None:
    margin = {side: "20mm" for side in ("top", "bottom", "left", "right")}
    if kind in ("slide", "deck"):
        if kind == "deck":
            margin = {**margin, "bottom": "14mm"}
        page.pdf(
            path=str(path),
            width="10in",
            height="5.625in",
            print_background=True,
            margin=margin,
            display_header_footer=kind == "deck",
            header_template="<div></div>",
            footer_template="<div style='font-size:8px;width:100%;padding:0 20mm'>Regional Council"
            " · <span class=pageNumber></span></div>",
        )
    elif kind == "paper":
        page.pdf(
            path=str(path),
            format="A4",
            print_background=True,
            margin=margin,
            display_header_footer=True,
            header_template="<div></div>",
            footer_template="<div style='font-size:8px;width:100%;text-align:center'><span class=pageNumber></span></div>",
        )
    elif kind == "report":
        page.pdf(
            path=str(path),
            format="A4",
            print_background=True,
            margin={**margin, "top": "22mm", "bottom": "22mm"},
            display_header_footer=True,
            header_template="<div style='font-size:8px;width:100%;padding:0 20mm'>Regional Council — annual report</div>",
            footer_template="<div style='font-size:8px;width:100%;text-align:center'>Page <span class=pageNumber></span></div>",
        )
    else:
        page.pdf(path=str(path), format="A4", print_background=True, margin=margin)


def main(argv: list[str] | None = None) -> int:
    from bench.accuracy.public import markdown_set, markdown_table

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the printed PDFs and their truth")
    ap.add_argument("--tools", default="auto")
    ap.add_argument("--only", default="", help="comma-separated document names")
    ap.add_argument(
        "--printer",
        choices=("chromium", "mupdf", "mupdf-serif", "office", "latex"),
        default="chromium",
        help="who lays out and prints the HTML",
    )
    args = ap.parse_args(argv)
    only = tuple(n for n in args.only.split(",") if n)
    names = build(args.out, only, args.printer)
    label = {
        "chromium": "printed",
        "mupdf": "printed by MuPDF",
        "mupdf-serif": "printed by MuPDF, serif",
        "office": "printed by LibreOffice Writer",
        "latex": "typeset by LaTeX",
    }[args.printer]
    rows = {f"{label}, {tool}": markdown_set(args.out, tool, tuple(names)) for tool in args.tools.split(",")}
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
