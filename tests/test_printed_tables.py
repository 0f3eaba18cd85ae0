"""Tables and lists as browsers and word processors print them (issue 30, round 8): each cell's
background painted apart (shaded rows, a dark header, white paint where backgrounds are not printed),
cells drawn across rows and columns of a fully ruled grid, a head wrapped onto two lines beside heads
set in the middle of the row, a section heading the layout model boxes with the table under it, years
centred over "$" and figure columns, and list markers drawn as little discs. Real text-layer engine
and models; PDFs printed from HTML by Chromium (Debian's, through Playwright, as the browser tests
drive it), or built with PyMuPDF the way those printers draw."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.lines import TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, page_markdown, table_rows

LEFT, RIGHT = 56.0, 540.0
ABOVE = "Employment rose in every region over the quarter, led by manufacturing in the north."
BELOW = "Source: labour force survey. Figures may not sum because of rounding."
HEAD = ["Region and sector", "Q3 2025", "Q2 2026", "Q3 2026", "Change"]
ROWS = [
    ["North", "", "", "", ""],
    ["Manufacturing", "212.4", "214.0", "218.1", "5.7"],
    ["Construction", "88.1", "90.3", "91.0", "2.9"],
    ["Services", "640.2", "648.8", "652.5", "12.3"],
    ["South", "", "", "", ""],
    ["Manufacturing", "150.9", "149.7", "151.2", "0.3"],
    ["Construction", "102.5", "104.1", "103.8", "1.3"],
    ["Services", "811.0", "820.6", "826.4", "15.4"],
    ["All regions", "2,005.1", "2,027.5", "2,043.0", "37.9"],
]
EDGES = [LEFT, 200.0, 280.0, 360.0, 440.0, RIGHT]
ROW_H = 17.0


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    return TextLayerEngine()


def _text(page: pymupdf.Page, x: float, y: float, text: str, *, right: float | None = None, **kw) -> None:
    font, size = kw.pop("fontname", "helv"), kw.pop("fontsize", 9.0)
    if right is not None:
        x = right - pymupdf.get_text_length(text, fontname=font, fontsize=size)
    page.insert_text((x, y), text, fontname=font, fontsize=size, **kw)


def _cell_fill(page: pymupdf.Page, k: int, y: float, colour: tuple[float, float, float]) -> None:
    """One cell's background, painted on its own as HTML printers do (no stroke)."""
    page.draw_rect(pymupdf.Rect(EDGES[k], y, EDGES[k + 1], y + ROW_H), color=None, fill=colour, width=0)


def _shaded_table(path: Path, shade: Callable[[int], tuple[float, float, float] | None], head_fill) -> Path:
    """A paragraph, a table whose header and some body rows have every cell filled apart, and a note.
    ``shade(k)``: body row k's fill, or None for a row left unpainted."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    _text(page, LEFT, 80, ABOVE, fontsize=10, fontname="tiro")
    y = 100.0
    for k in range(5):
        _cell_fill(page, k, y, head_fill)
    white_text = head_fill != (1.0, 1.0, 1.0)
    for k, text in enumerate(HEAD):
        colour = (1, 1, 1) if white_text else (0, 0, 0)
        _text(page, EDGES[0] + 4, y + 12, text, fontname="hebo", color=colour) if k == 0 else _text(
            page, 0, y + 12, text, right=EDGES[k + 1] - 4, fontname="hebo", color=colour
        )
    y += ROW_H
    for r, row in enumerate(ROWS):
        colour = shade(r)
        if colour is not None:
            for k in range(5):
                _cell_fill(page, k, y, colour)
        group = not any(row[1:])
        for k, text in enumerate(row):
            if not text:
                continue
            if k == 0:
                _text(page, EDGES[0] + (4 if group or text == "All regions" else 14), y + 12, text,
                      fontname="hebo" if group else "helv")  # fmt: skip
            else:
                _text(page, 0, y + 12, text, right=EDGES[k + 1] - 4)
        y += ROW_H
    _text(page, LEFT, y + 14, BELOW, fontsize=8, fontname="tiro")
    doc.save(path)
    return path


def _striped(r: int) -> tuple[float, float, float] | None:
    """Every other row shaded; section label rows and the total on white paint of their own."""
    if not any(ROWS[r][1:]) or r == len(ROWS) - 1:
        return (1.0, 1.0, 1.0)
    return (0.91, 0.93, 0.96) if r % 2 else None


@pytest.mark.parametrize(
    "style",
    [
        pytest.param((_striped, (0.1, 0.3, 0.5)), id="striped-cells-dark-header"),
        pytest.param((lambda r: (1.0, 1.0, 1.0) if r % 2 == 0 else None, (1.0, 1.0, 1.0)), id="white-paint"),
    ],
)
def test_a_table_whose_cells_are_painted_one_by_one_is_one_table(engine, tmp_path, style):
    """Before: PyMuPDF's ruled-grid search took the edges of the painted cells for rulings and
    returned one grid per run of painted rows, so the table came out in four pieces with the
    unpainted rows as loose text between them; with white paint (backgrounds not printed) the
    painted runs were taken for figures. A piece of a table painted row by row is left to the word
    grid and the layout model, and paint that does not show is not a figure."""
    shade, head = style
    md = page_markdown(engine, _shaded_table(tmp_path / "shaded.pdf", shade, head))
    assert md.count("<table>") == 1, md
    rows = table_rows(md)
    assert rows[0] == HEAD and rows[1:] == ROWS, md
    assert_in_order(md, [ABOVE, "<table>", "</table>", BELOW])


def test_a_table_of_coloured_cells_with_nothing_around_it_stays_one_table(engine, tmp_path):
    """Guard: a table whose every row is painted (no unpainted row beside its grid) keeps its grid."""
    md = page_markdown(
        engine, _shaded_table(tmp_path / "all.pdf", lambda r: (0.85, 0.9, 0.95), (0.1, 0.3, 0.5))
    )
    assert md.count("<table>") == 1, md
    assert table_rows(md)[1:] == ROWS, md


def _section_heading_over_table(path: Path) -> Path:
    """A data sheet: section headings on dark bars ("Features", "Technical data", "Ordering"), the
    technical data a two-column table of labels and values with a hairline under each row."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    _text(page, LEFT, 70, "PX-400 Industrial Sensor", fontsize=20, fontname="hebo")

    def bar(y: float, text: str) -> None:
        page.draw_rect(pymupdf.Rect(LEFT, y - 13, RIGHT, y + 5), color=None, fill=(0.2, 0.2, 0.2), width=0)
        _text(page, LEFT + 6, y, text, fontsize=11, fontname="hebo", color=(1, 1, 1))

    bar(110, "Features")
    _text(page, LEFT, 135, "A pressure transmitter for harsh environments, sealed to IP69K.", fontsize=10)
    bar(170, "Technical data")
    spec = [
        ("Measuring range", "0 - 400 bar"),
        ("Accuracy", "± 0.1 % FS"),
        ("Operating temperature", "-40 to +125 °C"),
        ("Supply voltage", "10 - 30 V DC"),
        ("Process connection", "G 1/4 male thread"),
        ("Weight", "120 g"),
    ]
    y = 195.0
    for label, value in spec:
        _text(page, LEFT + 6, y, label, fontsize=10, color=(0.25, 0.25, 0.25))
        _text(page, 260, y, value, fontsize=10)
        page.draw_line((LEFT, y + 6), (RIGHT, y + 6), color=(0.8, 0.8, 0.8), width=0.4)
        y += 21
    bar(y + 25, "Ordering information")
    _text(
        page, LEFT, y + 50, "Order code PX-400-A for the current output; cables are sold apart.", fontsize=10
    )
    doc.save(path)
    return path


def test_a_section_heading_the_table_box_takes_in_stays_a_heading(engine, tmp_path):
    """Before: the layout model's table box took in the "Technical data" bar, and it became the
    table's header row. A region's first row in the style of the page's other short headings, and of
    no line of the table, is the heading above it."""
    md = page_markdown(engine, _section_heading_over_table(tmp_path / "sheet.pdf"))
    assert md.count("<table>") == 1, md
    assert re.search(r"^#+ Technical data$", md, re.M), md
    rows = table_rows(md)
    assert rows[0] == ["Measuring range", "0 - 400 bar"] and len(rows) == 6, md
    assert_in_order(md, ["Features", "Technical data", "<table>", "Ordering information"])


def _drawn_list(path: Path, colour: tuple[float, float, float]) -> Path:
    """Three list items whose markers are little filled discs drawn in ``colour`` left of the text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    _text(page, LEFT, 70, "Features", fontsize=13, fontname="hebo")
    items = [
        "Measuring range 0 to 400 bar with an accuracy of a tenth of a per cent",
        "Stainless steel housing, sealed against dust and water jets",
        "Output of 4 to 20 mA or 0 to 10 V, chosen on site",
    ]
    for k, item in enumerate(items):
        y = 95 + 16 * k
        page.draw_circle((LEFT + 1.5, y - 3.2), 1.5, color=None, fill=colour, width=0)
        _text(page, LEFT + 11, y, item, fontsize=10)
    _text(page, LEFT, 160, "Cables are sold separately and come in three lengths.", fontsize=10)
    doc.save(path)
    return path


def test_list_markers_drawn_as_discs_make_list_items(engine, tmp_path):
    """Before: a browser-printed list's markers (discs drawn as shapes, not text) were not seen, and
    the items ran together into one paragraph. Guard: discs in another colour than the text (a
    chart legend's keys) are not markers."""
    md = page_markdown(engine, _drawn_list(tmp_path / "list.pdf", (0, 0, 0)))
    assert "- Measuring range 0 to 400 bar" in md and "\n- Stainless steel housing" in md, md
    assert "\n- Output of 4 to 20 mA" in md and "- Cables" not in md, md
    legend = page_markdown(engine, _drawn_list(tmp_path / "legend.pdf", (0.9, 0.3, 0.1)))
    assert not re.search(r"^- ", legend, re.M), legend


STRIPED = (
    """<style>
body{font-family:'Liberation Sans',Arial,sans-serif;font-size:9.5pt}
table{border-collapse:collapse;width:100%;font-size:9pt}
th{background:#1a4d80;color:#fff;padding:1.5mm 2mm;text-align:right} th:first-child{text-align:left}
td{padding:1.2mm 2mm;text-align:right} td:first-child{text-align:left}
tbody tr:nth-child(even){background:#e8eef5}
tr.grp td{font-weight:bold;background:#fff} tr.tot td{font-weight:bold;background:#c9d6e6}
</style>
<p>"""
    + ABOVE
    + """</p>
<table><thead><tr>"""
    + "".join(f"<th>{h}</th>" for h in HEAD)
    + """</tr></thead><tbody>"""
    + "".join(
        ("<tr class=grp>" if not any(r[1:]) else "<tr class=tot>" if r[0] == "All regions" else "<tr>")
        + "".join(f"<td>{c}</td>" for c in r)
        + "</tr>"
        for r in ROWS
    )
    + """</tbody></table><p>"""
    + BELOW
    + "</p>"
)


@pytest.mark.parametrize("backgrounds", [True, False], ids=["backgrounds", "no-backgrounds"])
def test_a_browser_printed_striped_table_is_one_table(engine, printer, backgrounds):
    """A table striped with CSS, printed with its backgrounds (each cell's paint apart, rows left
    unpainted between) and without them (every cell painted white, the dark header's white text
    then invisible on paper but still in the text layer). Before: four pieces and loose rows; without
    backgrounds, the white paint made the rows a figure and no table came out."""
    md = page_markdown(engine, printer(f"striped-{backgrounds}", STRIPED, backgrounds=backgrounds))
    assert md.count("<table>") == 1, md
    rows = table_rows(md)
    assert rows[-len(ROWS) :] == ROWS and HEAD[1:] == rows[0][1:], md
    assert_in_order(md, [ABOVE, "<table>", "</table>", BELOW])


TIMETABLE = """<style>
body{font-family:'Liberation Sans',Arial,sans-serif;font-size:10pt}
table{border-collapse:collapse;width:100%} th,td{border:0.5pt solid #888;padding:2mm;vertical-align:top;font-size:9pt}
th{background:#eee} .b{background:#fde9c9}
</style>
<h1>Conference Programme, Day 1</h1><p>All sessions take place in the main building.</p>
<table>
<tr><th>Time</th><th>Hall A</th><th>Hall B</th><th>Room 12</th></tr>
<tr><td>09:00</td><td colspan=3 class=b>Opening keynote: The future of archives</td></tr>
<tr><td>10:00</td><td>Scanning at scale</td><td rowspan=2>Workshop: metadata standards</td><td>Handwriting recognition</td></tr>
<tr><td>11:00</td><td>Preservation formats</td><td>Tables in old ledgers</td></tr>
<tr><td>12:00</td><td colspan=3 class=b>Lunch</td></tr>
<tr><td>13:30</td><td>Panel: open data</td><td>Map digitisation</td><td></td></tr>
</table><p>Evening reception at 19:00 in the city hall.</p>"""


def test_a_browser_printed_timetable_keeps_the_cells_ruled_across_rows_and_columns(engine, printer):
    """Before: the structure model's reading of the ruled grid replaced the rules' one; lunch lost
    its span over the three halls and the workshop took its row. Where the rulings part every row
    and column the words show, and the model loses cells they draw across, the drawn cells stay."""
    md = page_markdown(engine, printer("timetable", TIMETABLE))
    assert md.count("<table>") == 1, md
    assert '<td colspan="3">Opening keynote: The future of archives</td>' in md, md
    assert '<td colspan="3">Lunch</td>' in md, md
    assert '<td rowspan="2">Workshop: metadata standards</td>' in md, md
    assert table_rows(md)[3] == ["11:00", "Preservation formats", "Tables in old ledgers"], md


PROJECTS = """<style>
body{font-family:'Liberation Sans',Arial,sans-serif;font-size:10pt}
table{border-collapse:collapse;width:100%} th{text-align:left;border-bottom:1pt solid #000;padding:1.5mm}
td{padding:1.5mm;vertical-align:middle;border-bottom:0.3pt solid #bbb} td.n{text-align:right}
</style>
<h2>Capital projects approved in 2026</h2>
<table>
<tr><th style="width:55%">Project</th><th>Department</th><th style="text-align:right">Budget (£m)</th>
<th style="text-align:right">Completion</th></tr>
<tr><td>Replacement of the northern ring road bridge deck, including temporary lanes during the works</td>
<td>Transport</td><td class=n>48.2</td><td class=n>2028</td></tr>
<tr><td>New primary school in Westfield</td><td>Education</td><td class=n>12.9</td><td class=n>2027</td></tr>
<tr><td>Flood defences along the river between the old mill and the harbour, phase two of three</td>
<td>Environment</td><td class=n>21.4</td><td class=n>2029</td></tr>
<tr><td>Library refurbishment</td><td>Culture</td><td class=n>3.1</td><td class=n>2026</td></tr>
</table><p>The council will publish progress on each project every six months.</p>"""


def test_a_browser_printed_head_wrapped_onto_two_lines_is_one_head_cell(engine, printer):
    """Before: "Budget" (the first line of a head wrapped onto two, the other heads set in the
    middle of the row) became a group head spanning two columns, and the heads a line of text."""
    md = page_markdown(engine, printer("projects", PROJECTS))
    assert md.count("<table>") == 1, md
    assert table_rows(md)[0] == ["Project", "Department", "Budget (£m)", "Completion"], md
    assert not re.search(r"^#+ .*Budget", md, re.M), md


def test_a_browser_printed_list_is_a_list(engine, printer):
    """Chromium draws an HTML list's markers as little discs, not text."""
    html = (
        "<h2>Features</h2><ul><li>Measuring range 0 to 400 bar with an accuracy of 0.1 per cent of full"
        " scale over the whole temperature range</li><li>Stainless steel housing, sealed to IP69K</li>"
        "<li>Output 4 to 20 mA or 0 to 10 V, selectable on site</li></ul><p>Cables are sold separately.</p>"
    )
    md = page_markdown(engine, printer("list", html))
    assert re.search(r"^- Measuring range 0 to 400 bar .* temperature range$", md, re.M), md
    assert "\n- Stainless steel housing, sealed to IP69K\n- Output 4 to 20 mA" in md, md
    assert "- Cables" not in md, md


def _cells_page(fill: tuple[float, float, float], *, text_inside: bool) -> tuple[pymupdf.Page, list]:
    """A 5 × 6 grid of cells each painted apart in ``fill``; the centres of words set in the cells
    (``text_inside``) or none."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    words = []
    for r in range(6):
        for k in range(5):
            rect = pymupdf.Rect(EDGES[k], 100 + r * ROW_H, EDGES[k + 1], 100 + (r + 1) * ROW_H)
            page.draw_rect(rect, color=None, fill=fill, width=0)
            if text_inside:
                words.append(pymupdf.Point(rect.x0 + 12, rect.y0 + ROW_H / 2))
    return page, words


def test_paint_that_does_not_show_is_no_figure():
    """White paint on white paper (every cell's background when a browser prints without them) is
    not looked at; the same cells in grey, with no text on them, are a drawing."""
    from ocr_app.engines.page_figures import figure_regions

    white, _ = _cells_page((1.0, 1.0, 1.0), text_inside=False)
    assert figure_regions(white, 9.0) == []
    grey, _ = _cells_page((0.8, 0.8, 0.8), text_inside=False)
    assert len(figure_regions(grey, 9.0)) == 1


def test_cells_painted_under_their_text_are_a_tables_shading_not_a_figure():
    """Filled rectangles with text set on them are a table's shading; bars with their labels beside
    them, and a drawn axis, are a chart."""
    from ocr_app.engines.page_figures import figure_regions

    shaded, words = _cells_page((0.85, 0.9, 0.95), text_inside=True)
    assert figure_regions(shaded, 9.0, words=words) == []
    doc = pymupdf.open()
    chart = doc.new_page(width=595, height=842)
    labels = []
    for k, h in enumerate((60, 95, 40, 120, 80)):
        chart.draw_rect(
            pymupdf.Rect(100 + 50 * k, 300 - h, 130 + 50 * k, 300), color=None, fill=(0.2, 0.4, 0.8)
        )
        labels.append(pymupdf.Point(115 + 50 * k, 312))
    chart.draw_line((90, 300), (360, 300), color=(0, 0, 0), width=0.8)
    assert len(figure_regions(chart, 9.0, words=labels)) == 1


STATEMENT = (
    """<style>
body{font-family:'Liberation Serif','Times New Roman',serif;font-size:9.5pt}
h3{font-size:10pt;text-align:center} table{border-collapse:collapse;width:100%} td{padding:0.6mm 1mm}
td.l{width:52%} td.d{width:2%;text-align:right;padding-right:0} td.n{text-align:right;width:13%}
tr.h td{font-weight:bold;text-align:center;border-bottom:0.6pt solid #000}
tr.s td.n,tr.s td.d{border-top:0.6pt solid #000} .ind{padding-left:5mm}
</style>
<h3>CONSOLIDATED STATEMENTS OF OPERATIONS<br>(in millions, except per share data)</h3>
<table><tr class=h><td class=l></td><td colspan=2>2026</td><td colspan=2>2025</td><td colspan=2>2024</td></tr>
"""
    + "".join(
        f"<tr{' class=s' if rule else ''}><td class=l>{label}</td>"
        + "".join(f"<td class=d>{'$' if dollar else ''}</td><td class=n>{v}</td>" for v in values)
        + "</tr>"
        for label, dollar, rule, values in [
            ("Net sales", True, False, ("4,812", "4,390", "4,007")),
            ("Cost of sales", False, False, ("2,901", "2,688", "2,512")),
            ("Gross margin", False, True, ("1,911", "1,702", "1,495")),
            ("Research and development", False, False, ("612", "577", "540")),
            ("Selling, general and administrative", False, False, ("701", "655", "618")),
            ("Operating income", False, True, ("598", "470", "337")),
            ("Net income", True, True, ("584", "479", "315")),
        ]
    )
    + "</table><p>See accompanying notes to the consolidated financial statements.</p>"
)


def test_years_centred_over_dollar_and_figure_columns_head_the_table(engine, printer):
    """Before: the years, each centred over its "$" and figures columns and reaching into neither,
    were left above the table as a line of text. A head within half a line beside its column's lines
    stands over them."""
    md = page_markdown(engine, printer("statement", STATEMENT))
    assert md.count("<table>") == 1, md
    rows = table_rows(md)
    assert [c for c in rows[0] if c] == ["2026", "2025", "2024"], md
    assert "2026 2025 2024" not in md.replace("<", " <"), md
    assert rows[1][0] == "Net sales" and "4,812" in rows[1], md


GRANTS = [
    (str(2000 + k), ["North", "South", "East", "West", "Central"][k % 5], f"{1000 + 37 * k:,}",
     f"{(k * 7) % 23 + 1}.{k % 10}", ("Approved", "Pending", "Rejected")[k % 3])
    for k in range(60)
]  # fmt: skip
APPLICATIONS = (
    """<style>body{font-family:'Liberation Sans',Arial,sans-serif;font-size:9.5pt}
table{border-collapse:collapse;width:100%} th{background:#dde;padding:1.2mm;text-align:left;border-bottom:0.8pt solid #333}
td{padding:1mm;border-bottom:0.3pt solid #ccc} .r{text-align:right}</style>
<h2>Appendix B. Grant applications by year</h2><p>Every application received since 2000.</p>
<table><thead><tr><th>Year</th><th>Region</th><th class=r>Amount (€)</th><th class=r>Score</th><th>Outcome</th></tr></thead>"""
    + "".join(
        f"<tr><td>{y}</td><td>{r}</td><td class=r>{a}</td><td class=r>{s}</td><td>{o}</td></tr>"
        for y, r, a, s, o in GRANTS
    )
    + "</table>"
)


@pytest.mark.parametrize("margin_mm", [15, 0], ids=["15mm", "default-margins"])
def test_a_narrow_column_of_figures_set_close_to_the_next_keeps_its_figures(engine, printer, margin_mm):
    """A "Score" column of short figures set flush right, a padding's width before the outcome
    words, in a table that runs on to a second page (its first page read here). Before: each
    "1.0 Approved" came as one run of words and went whole to the outcome cell, beside an empty
    score column, in most rows (the model read the columns apart: ``refill_empty_columns``), or the
    model read the two as one column and the words' narrow white strip down every row was not taken
    for a column gap (``_strip_in_column``)."""
    md = page_markdown(engine, printer(f"applications-{margin_mm}", APPLICATIONS, margin_mm=margin_mm))
    assert md.count("<table>") == 1, md
    rows = table_rows(md)
    assert rows[0] == ["Year", "Region", "Amount (€)", "Score", "Outcome"], md
    assert len(rows) > 25 and rows[1:] == [list(g) for g in GRANTS[: len(rows) - 1]], md


def test_the_heads_of_a_scanned_table_set_in_the_middle_of_two_lines_head_it(printer):
    """The projects table printed, then scanned (pixels only, the light engine's OCR). Before: the
    heads, "Budget" over "(£m)" beside heads set between those two lines, came out as a ``##``
    heading over the table; the lowest line of heads alone ("(£m)") was taken for the heads' row.
    Heads that overlap in height are one band, and a wrapped head's lines one stack over its column."""
    from PIL import Image

    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.schema import PageImage, PageRequest

    with pymupdf.open(printer("projects-scan", PROJECTS)) as doc:
        pix = doc[0].get_pixmap(dpi=200)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    light = LightOcrEngine()
    out = light.predict_batch(
        [PageRequest(page=PageImage(image=image, index=0, source="scan.png", dpi=200), prompt="")]
    )
    md = blocks_to_markdown(out[0].blocks)
    assert md.count("<table>") == 1, md
    assert not re.search(r"^#+ .*(Project|Department|Completion)", md, re.M), md
    head = table_rows(md)[0]
    assert head[0] == "Project" and head[1] == "Department" and head[3] == "Completion", md
    assert re.fullmatch(r"Budget \((£|E|€)m\)", head[2]), md


GROUPED = """<style>body{font-family:'Liberation Sans',Arial,sans-serif;font-size:9.5pt}
table{border-collapse:collapse;width:100%} th,td{padding:1.2mm 2mm;text-align:right}
th:first-child,td:first-child,td.g{text-align:left} thead tr:first-child th{border-top:1.2pt solid #000}
thead tr:last-child th{border-bottom:0.6pt solid #000} th.grp{border-bottom:0.5pt solid #000}
tbody tr:last-child td{border-bottom:1.2pt solid #000} td.g{vertical-align:middle}</style>
<p>Table 4 gives quarterly sales by region and channel.</p>
<table><thead><tr><th rowspan=2>Region</th><th rowspan=2>Channel</th><th colspan=2 class=grp>2025</th>
<th colspan=2 class=grp>2026</th></tr><tr><th>Q1</th><th>Q2</th><th>Q1</th><th>Q2</th></tr></thead><tbody>
<tr><td class=g rowspan=2>North</td><td>Online</td><td>120</td><td>131</td><td>144</td><td>150</td></tr>
<tr><td>Stores</td><td>310</td><td>305</td><td>298</td><td>301</td></tr>
<tr><td class=g rowspan=2>South</td><td>Online</td><td>95</td><td>99</td><td>110</td><td>118</td></tr>
<tr><td>Stores</td><td>270</td><td>268</td><td>266</td><td>259</td></tr>
<tr><td class=g rowspan=2>West</td><td>Online</td><td>88</td><td>90</td><td>97</td><td>104</td></tr>
<tr><td>Stores</td><td>190</td><td>188</td><td>185</td><td>183</td></tr>
</tbody></table><p style='font-size:8pt'>Figures for the south are restated after the store closures of March.</p>
<p>Online sales grew in every region over the year.</p>"""


def test_heads_set_in_the_middle_of_two_header_rows_keep_the_header_two_rows(engine, printer):
    """ "Region" and "Channel" span both header rows, set between "2025" and "Q1". Before: the bold
    text lines were counted as header rows (three of them), so the first body row ("North Online
    120 …") went into the header. Rows are now counted as the table's, by their words."""
    md = page_markdown(engine, printer("grouped", GROUPED))
    assert md.count("<table>") == 1, md
    head = md[md.index("<thead>") : md.index("</thead>")]
    assert head.count("<tr>") == 2 and "North" not in head and "120" not in head, md
    assert "2025" in head and "Q2" in head and "<th" not in md[md.index("</thead>") :], md


def test_a_note_in_small_type_and_the_paragraph_after_it_are_two_blocks(engine, printer):
    """Every paragraph of the page is set a blank line apart, so the gap under the note (8 pt) is no
    larger than the page's usual one; the note and the body paragraph (9.5 pt) were joined into one.
    A paragraph keeps its size from line to line. Guard: a paragraph's own wrapped lines still join."""
    md = page_markdown(engine, printer("grouped-notes", GROUPED))
    assert (
        "Figures for the south are restated after the store closures of March.\n\nOnline sales grew" in md
    ), md
    wrapped = page_markdown(
        engine, printer("wrapped-note", "<p style='font-size:8pt;width:60mm'>" + ABOVE + " " + ABOVE + "</p>")
    )
    assert ABOVE + " " + ABOVE in wrapped, wrapped


def test_headings_on_dark_bars_of_a_scan_are_measured_by_their_letters(tmp_path):
    """The data sheet scanned (pixels only). Before: the light engine measured a heading's size and
    weight from its crop's dark pixels, so on a dark bar the bar itself was the ink; "Features" (11 pt)
    came out as ``#`` over the 20 pt title, "Ordering information" as text, and "Technical data" as a
    row spanning the table. Light text on a dark ground is turned over before it is measured."""
    from PIL import Image

    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.schema import PageImage, PageRequest

    with pymupdf.open(_section_heading_over_table(tmp_path / "sheet.pdf")) as doc:
        pix = doc[0].get_pixmap(dpi=200)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    page = PageImage(image=image, index=0, source="scan.png", dpi=200)
    md = blocks_to_markdown(LightOcrEngine().predict_batch([PageRequest(page=page, prompt="")])[0].blocks)
    levels = {m.group(2): len(m.group(1)) for m in re.finditer(r"^(#+) (.+)$", md, re.M)}
    bars = [levels.get(t) for t in ("Features", "Technical data", "Ordering information")]
    assert bars[0] is not None and bars == [bars[0]] * 3, md
    assert levels.get("PX-400 Industrial Sensor", 9) < bars[0], md
    assert "Technical data" not in md[md.index("<table>") :], md


def _cell(text: str, x0: float, y: float, width: float) -> TextLine:
    return TextLine(text, (x0, y, x0 + width, y + 20), 16.0)


def test_a_column_beside_a_region_joins_it_unless_a_table_stands_beside():
    """``table_bounds._column_beside`` on lines as the text layer gives them: a region of labels and
    two columns of figures, and a narrow column of figures just right of it, one a row, joins; the
    same column with more columns further out on its rows (a second table beside this one: ICDAR
    eu-015, whose two tables a first version joined) does not."""
    from ocr_app.structure.table_bounds import _column_beside

    held = [
        ln
        for k, label in enumerate(("Manufacturing", "Construction", "Services", "Total"))
        for ln in (
            _cell(label, 100, 100 + 40 * k, 150),
            _cell("212.4", 400, 100 + 40 * k, 50),
            _cell("214.0", 550, 100 + 40 * k, 50),
        )
    ]
    beside = [_cell(v, 700, 100 + 40 * k, 30) for k, v in enumerate(("5.7", "2.9", "12.3", "20.9"))]
    assert _column_beside(held, [*held, *beside]) == beside
    further = [_cell(v, 800, 100 + 40 * k, 60) for k, v in enumerate(("Spain", "France", "Italy", "Greece"))]
    assert _column_beside(held, [*held, *beside, *further]) == []


def test_a_ruled_grid_is_exact_only_where_its_rulings_part_what_the_words_show():
    """``page_tables._exact``: the timetable's grid is exact; a grid whose rulings do not line up cuts
    slivers (a column or a row that starts no filled cell: ICDAR eu-011, eu-021), and one with a cell
    mixing rows or columns (a shaded bar read as one cell across: us-022) is not; on those the model's
    reading stays."""
    from ocr_app.engines.page_tables import _exact
    from ocr_app.structure.table_html import Cell

    grid = [[Cell("Time"), Cell("Hall A"), Cell("Hall B")], [Cell("09:00"), Cell("Keynote", colspan=2)]]
    assert _exact(grid, [True, True, True], mixed=False)
    assert not _exact(grid, [True, True, True], mixed=True)
    assert not _exact(grid, [True, False, True], mixed=False)  # a sliver column
    assert not _exact(
        [*grid, [Cell(""), Cell(""), Cell("")]], [True, True, True], mixed=False
    )  # a sliver row


# mdBook's tables as Chromium prints them: light cell borders, a grey head, striped rows, code on grounds.
MDBOOK_CSS = """<style>
body{font-family:'Liberation Sans',Arial,sans-serif;font-size:12pt}
table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:3px 20px}
thead{background:#ccc} tbody tr:nth-child(2n){background:#f7f7f7}
code{font-family:'Liberation Mono',monospace;font-size:0.875em;background:#e6e6e6;border-radius:3px}
</style>"""

YANKED = (
    MDBOOK_CSS
    + """<p>Consider a crate that published four versions while depending on bar:</p>
<table><thead><tr><th style="width:120px">Yanked Version / SemVer requirement</th><th style="width:110px"><code>bar = "1.5.0"</code></th>
<th style="width:70px">Caret only</th><th style="width:70px">Exact match</th></tr></thead><tbody>
<tr><td>1.5.0</td><td>Use either 1.5.1 or 1.5.2</td><td>Return Error</td><td>Use 2.0.0</td></tr>
<tr><td>1.5.1</td><td>Use either 1.5.0 or 1.5.2</td><td>Use 1.5.0</td><td>Use 2.0.0</td></tr>
<tr><td>2.0.0</td><td>Use either 1.5.0, 1.5.1 or 1.5.2</td><td>Use 1.5.0</td><td>Return Error</td></tr>
</tbody></table><p>Crates should only be yanked in exceptional circumstances.</p>"""
)


def test_a_ruled_table_whose_heads_wrap_in_title_case_and_cells_are_centred_keeps_its_rows(engine, printer):
    """Cargo's yank table: heads wrapped in title case ("Yanked Version /" over "SemVer
    requirement"), body cells set in the row's middle beside cells of two lines ("Return" over
    "Error", "Use either 1.5.0," over "1.5.1 or 1.5.2"). Wrapped text that goes on in capitals or
    figures read as values stacked one a line, so the rulings were not trusted and the heads came out
    as two rows. A header ruled off from rows ruled apart wraps; a one-line cell set between another
    cell's lines says the row is one row."""
    md = page_markdown(engine, printer("yanked", YANKED))
    assert md.count("<table>") == 1, md
    rows = table_rows(md)
    assert rows[0] == ["Yanked Version / SemVer requirement", 'bar = "1.5.0"', "Caret only", "Exact match"], (
        md
    )
    assert rows[1:] == [
        ["1.5.0", "Use either 1.5.1 or 1.5.2", "Return Error", "Use 2.0.0"],
        ["1.5.1", "Use either 1.5.0 or 1.5.2", "Use 1.5.0", "Use 2.0.0"],
        ["2.0.0", "Use either 1.5.0, 1.5.1 or 1.5.2", "Use 1.5.0", "Return Error"],
    ], md


CFG = (
    MDBOOK_CSS
    + """<p>This table gives the argument that matches each setting.</p>
<table><thead><tr><th style="width:110px">Setting</th><th style="width:220px">Matching argument</th></tr></thead><tbody>
<tr><td><code>--cfg foo</code></td><td><code>--check-cfg=cfg(foo)</code></td></tr>
<tr><td><code>--cfg foo="1" --cfg bar="2"</code></td><td><code>--check-cfg=cfg(foo, values("1")) --check-cfg=cfg(bar, values("2"))</code></td></tr>
<tr><td><code>--cfg foo</code></td><td><code>--check-cfg=cfg(foo, values(none()))</code></td></tr>
</tbody></table><p>Every other setting is an error.</p>"""
)


def test_inline_code_that_wraps_in_a_ruled_cell_rules_no_row_of_its_own(engine, printer):
    """A browser paints a wrapped inline box's ground whole on each of its lines, shifted, and clips
    it to that line: rustc's ``--cfg foo="1" --cfg bar="2"`` in a narrow cell had its second line's
    ground run from off the page into the next column. Its unclipped edges cut rows in two and ruled
    a column through the table (a grid of 7 rows and 3 columns, then dropped; on rustc's page the
    code's second line came out as a row of its own). Only the part that shows rules the table."""
    from ocr_app.engines.page_tables import ruled_tables
    from ocr_app.engines.pdf_spans import extract_lines

    pdf = printer("wrapped-code", CFG)
    with pymupdf.open(pdf) as doc:
        grids = ruled_tables(doc[0], extract_lines(doc[0], 2.0), 2.0)[0]
    assert [(len(g.rows), len(g.rows[0]), g.exact) for g in grids] == [(4, 2, True)], grids
    md = page_markdown(engine, pdf)
    assert md.count("<table>") == 1, md
    assert table_rows(md) == [
        ["Setting", "Matching argument"],
        ["--cfg foo", "--check-cfg=cfg(foo)"],
        [
            '--cfg foo="1" --cfg bar="2"',
            '--check-cfg=cfg(foo, values("1")) --check-cfg=cfg(bar, values("2"))',
        ],
        ["--cfg foo", "--check-cfg=cfg(foo, values(none()))"],
    ], md


def test_a_row_a_stray_edge_cut_off_one_empty_cell_joins_the_row_under_it():
    """A browser prints Node.js's "Skip to content" link over the first header cell of a table's
    repeated header on each page; its box cut that cell in two. The grid then had an empty sliver
    row, every other head spanning it, and the header read as two rows: the piece no longer matched
    the table's first page and stayed a table of its own. A row whose own cells are all empty, the
    rest spanning down, and whose places the next row's cells fill, is one row with it. A real head
    row (a group head over its columns) has text of its own and stays."""
    from ocr_app.engines.page_tables import _without_slivers
    from ocr_app.structure.table_html import Cell

    sliver = [
        [Cell(""), Cell("records contains", rowspan=2), Cell("Result type", rowspan=2)],
        [Cell("rrtype")],
    ]
    body = [[Cell("'A'"), Cell("IPv4 addresses"), Cell("<string>")]]
    rows, head = _without_slivers(sliver + body, 2)
    assert rows == [[Cell("rrtype"), Cell("records contains"), Cell("Result type")], *body] and head == 1
    group = [[Cell("Key", rowspan=2), Cell("Revenue", colspan=2)], [Cell("2022"), Cell("2023")]]
    assert _without_slivers(group + body, 2) == (group + body, 2)
    uneven = [[Cell(""), Cell("Result type", rowspan=2)], [Cell("rrtype", colspan=2)]]
    assert _without_slivers(uneven, 1) == (uneven, 1)  # the row under it does not fill the place


def test_a_frames_title_and_note_are_no_spans_and_a_group_label_between_rows_is_one():
    """The drawn reading wins where it holds spans the model's reading lacks. A title on the frame's
    first row and a note on its last (ICDAR's us-013) are no such spans; a group's label across the
    table between its rows ("Operations" on a budget slide) is one."""
    from ocr_app.structure.table_html import Cell
    from ocr_app.structure.table_verdict import inner_spans as _inner_spans

    head = [Cell("Item"), Cell("Budget"), Cell("Spent")]
    body = [
        [Cell("Salaries"), Cell("784"), Cell("521")],
        [Cell("Operations", colspan=3)],
        [Cell("Rent"), Cell("287"), Cell("202")],
    ]
    assert _inner_spans([head, *body]) == 1
    framed = [
        [Cell("Exhibit 9 Budget by item", colspan=3)],
        head,
        *body,
        [Cell("Source: the council", colspan=3)],
    ]
    assert _inner_spans(framed) == 1
