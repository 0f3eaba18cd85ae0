"""Column heads and header rows as browsers print them (issue 30, round 9): a left-set head wider than
its column of figures, a group's label reaching under the next head, the last head of a full-width
table running past the layout model's box, a head standing alone beside a head over column groups
(it spans the header rows), and a group's label row under the heads (it ends the header). Real
text-layer engine and models, pages printed by Chromium; the header rules also as unit tests of
``table_html``."""

from __future__ import annotations

import pytest

from ocr_app.render.markdown import table_going_on, trailing_table
from ocr_app.structure.lines import TextLine
from ocr_app.structure.table_html import Cell, continue_table, stub_heads, table_html
from tests.factories import assert_in_order, page_markdown, table_rows

INTRO = "The table below sets out the figures by line."
AFTER = "Most differences were small and followed from changes in scope approved in writing."


def _style(css: str) -> str:
    return (
        "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:10.5pt}"
        "table{border-collapse:collapse;font-size:9.5pt}"
        "td,th{padding:1.2mm 2.5mm;text-align:left;vertical-align:top} td.grp{font-weight:bold}"
        f"{css}</style>"
    )


def _page(css: str, head: str, body: str) -> str:
    return (
        f"{_style(css)}<h2>Results by region</h2><p>{INTRO}</p>"
        f"<table><thead>{head}</thead><tbody>{body}</tbody></table><p>{AFTER}</p>"
    )


def _tr(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"


HEADS = ["Region", "2023", "2024", "Change (%)"]
REGIONS = [["North", "684", "639", "-6.6"], ["South", "263", "253", "-3.8"], ["East", "274", "350", "+27.7"]]
RULED_ROWS = "td,th{border-bottom:0.5pt solid #999} th{border-bottom:1pt solid #333}"


def test_a_head_wider_than_its_column_of_figures_heads_the_table(textlayer_engine, printer):
    """Rows ruled apart, heads set left: "Change (%)" runs well past its column of figures. Before: the
    heads' row was left above the table as a line of text ("Region 2023 2024 Change (%)"), the table
    headless, because the row reached past the figures' edge."""
    html = _page(RULED_ROWS, _tr(HEADS, "th"), "".join(_tr(r) for r in REGIONS))
    md = page_markdown(textlayer_engine, printer("wide-head", html))
    assert md.count("<table>") == 1, md
    assert table_rows(md) == [HEADS, *REGIONS], md
    assert "<th>Change (%)</th>" in md, md
    assert_in_order(md, [INTRO, "<table>", "</table>", AFTER])


BUDGET = [
    ("Staff", [["Salaries", "385", "177", "46%"], ["Training", "160", "138", "86%"]]),
    ("Operations", [["Energy", "383", "199", "52%"], ["Vehicles", "73", "52", "71%"]]),
]


def _grouped_body() -> str:
    return "".join(
        f"<tr><td colspan=4 class=grp>{label}</td></tr>" + "".join(_tr(r) for r in rows)
        for label, rows in BUDGET
    )


def test_a_group_label_reaching_under_the_next_head_leaves_the_heads_in_the_table(textlayer_engine, printer):
    """ "Operations", a bold group label, reaches under "Budget". Before: the heads' row, which stood
    over that label and the first column alike, was no row of column heads; it was left out as text and
    the label "Staff" became the table's header row."""
    html = _page(RULED_ROWS, _tr(["Item", "Budget", "Spent", "Share"], "th"), _grouped_body())
    md = page_markdown(textlayer_engine, printer("group-labels", html))
    assert md.count("<table>") == 1, md
    rows = table_rows(md)
    assert rows[0] == ["Item", "Budget", "Spent", "Share"], md
    assert rows[1][0] == "Staff" and "<td>Staff</td>" in md and "<th>Staff</th>" not in md, md
    assert rows[-1] == ["Vehicles", "73", "52", "71%"], md


def _line(text: str, x0: float, y: float, width: float) -> TextLine:
    return TextLine(text, (x0, y, x0 + width, y + 20), 16.0)


def test_a_head_running_past_the_table_box_is_the_tables():
    """``table_bounds.snap`` on lines as the text layer gives them: the layout model's box of a table
    across the page stops short of its last head, set left and wider than its figures. Before: only
    lines mostly inside the box were the table's, and "Change (%)" (a third inside) came out as a
    heading. The figures of a table beside, which the box's edge barely reaches, stay out (ICDAR
    eu-015's second page: a first version took them)."""
    from ocr_app.structure.table_bounds import snap

    rows = [
        [
            _line(t, x, 100 + 40 * k, w)
            for t, x, w in zip(row, (130, 550, 650, 740), (60, 40, 40, 40), strict=True)
        ]
        for k, row in enumerate([HEADS, *REGIONS])
    ]
    rows[0][3] = _line("Change (%)", 740, 100, 100)
    table = [ln for row in rows for ln in row]
    beside = [_line(v, 100, 140 + 40 * k, 35) for k, v in enumerate(("16", "522", "13"))]
    snapped = snap((120, 90, 775, 240), [*beside, *table])
    assert snapped is not None and {ln.text for ln in snapped[1]} == {ln.text for ln in table}
    assert snapped[0][2] == 840


def test_a_head_beside_column_groups_spans_the_header_rows(textlayer_engine, printer):
    """Booktabs rules: "Site" beside "Nitrate (mg/l)" and "Phosphate (mg/l)", each over two years.
    "Site" is one head over both header rows (as ICDAR 2013's ground truth has such heads), not a head
    over an empty cell."""
    css = (
        "thead tr:first-child th{border-top:1.2pt solid #000} thead tr:last-child th{border-bottom:0.6pt solid #000}"
        "tbody tr:last-child td{border-bottom:1.2pt solid #000} th{text-align:center}"
    )
    head = (
        "<tr><th rowspan=2>Site</th><th colspan=2>Nitrate (mg/l)</th><th colspan=2>Phosphate (mg/l)</th></tr>"
        + _tr(["2024", "2025", "2024", "2025"], "th")
    )
    body = [
        ["Upper weir", "5.29", "6.45", "6.70", "6.13"],
        ["Mill bridge", "5.69", "1.25", "4.11", "8.92"],
        ["Town park", "3.58", "3.98", "2.63", "6.45"],
    ]
    md = page_markdown(
        textlayer_engine, printer("stub-head", _page(css, head, "".join(_tr(r) for r in body)))
    )
    assert '<th rowspan="2">Site</th><th colspan="2">Nitrate (mg/l)</th>' in md, md
    assert table_rows(md)[1:] == [["2024", "2025", "2024", "2025"], *body], md


SITES = [
    ["Upper weir", "3.37", "1.40", "8.81", "8.10"],
    ["Mill bridge", "4.43", "1.44", "6.89", "8.75"],
    ["Town park", "3.06", "3.64", "7.89", "6.87"],
]
GROUP_HEAD = (
    "<tr><th rowspan=2>Site</th><th colspan=2>Nitrate (mg/l)</th><th colspan=2>Phosphate (mg/l)</th></tr>"
    + _tr(["2024", "2025", "2024", "2025"], "th")
)
PAINTED_HEAD = "th{background:#1f3b63;color:#fff}"  # each head cell painted on its own, white between


def _group_table(md: str) -> None:
    assert md.count("<table>") == 1, md
    assert '<th rowspan="2">Site</th><th colspan="2">Nitrate (mg/l)</th><th colspan="2">Phosphate' in md, md
    assert table_rows(md)[1:] == [["2024", "2025", "2024", "2025"], *SITES], md
    assert_in_order(md, [INTRO, "<table>", "</table>", AFTER])


def test_a_head_set_in_the_middle_of_two_painted_header_rows_spans_them(textlayer_engine, printer):
    """A header painted cell by cell, "Site" centred down both header rows, the groups' heads centred
    over right-aligned figures. Before: "Site" on a line of its own between the two header lines
    parted the heads over the groups from the table; they came out as a line of text over it
    ("Nitrate (mg/l) Phosphate (mg/l) Site") and the table began at "2024" (the structure model
    reads the dark header as one cell)."""
    css = (
        PAINTED_HEAD
        + "th{text-align:center;vertical-align:middle} td{text-align:right} td:first-child{text-align:left}"
    )
    html = _page(css, GROUP_HEAD, "".join(_tr(r) for r in SITES))
    _group_table(page_markdown(textlayer_engine, printer("painted-middle", html)))


BESIDE = [
    "Our estimates assume that interest rates stay at their current level and that the exchange rate "
    "moves within the band observed over the past twelve months.",
    "Maintenance costs rose because several bridges reached the age at which their bearings must be "
    "replaced. The work was spread over two years to keep lanes open.",
    "Water quality was sampled at forty stations along the river. Nitrate levels fell at most "
    "stations, while phosphate stayed close to last year's values except downstream of the plant.",
]


def test_a_table_in_one_column_of_a_short_two_column_page_is_read_in_its_column(textlayer_engine, printer):
    """Two short text columns: the left holds a sentence, a table and a sentence, the right three
    paragraphs. The heads over the groups wrap ("Nitrate" over "(mg/l)"). Before: too few lines of
    the two columns stood side by side to show the gutter, so the table's rows and the right
    column's lines were read as one table of six columns, the paragraphs cut into its last column.
    Now a grid whose outer column is running text is no table, a gutter is looked for among gaps
    beside running text only (a table's own column gaps are no gutter), a table beside lines of
    running text stands in a column, and heads over groups on the run's first lines head them."""
    css = (
        ".cols{column-count:2;column-gap:8mm;text-align:justify} table{width:100%;font-size:8.5pt}"
        + PAINTED_HEAD
    )
    table = f"<table><thead>{GROUP_HEAD}</thead><tbody>{''.join(_tr(r) for r in SITES)}</tbody></table>"
    html = (
        _style(css)
        # inside a browser's default body margin (8 px): the intro then wraps onto a second line
        + f"<div style='padding:8px'><h2>Results by region</h2><div class=cols><p>{INTRO}</p>{table}"
        + f"<p>{AFTER}</p>"
        + "".join(f"<p>{p}</p>" for p in BESIDE)
        + "</div></div>"
    )
    md = page_markdown(textlayer_engine, printer("beside-text", html))
    _group_table(md)
    assert "<table>" not in md[md.index("</table>") :], md
    assert_in_order(md, [INTRO, "<table>", "</table>", AFTER, *BESIDE])


def test_a_head_alone_in_its_columns_spans_the_header_rows():
    over = [
        [Cell("Site"), Cell("Nitrate", 2)],
        [Cell(""), Cell("2024"), Cell("2025")],
        [Cell("a"), Cell("1"), Cell("2")],
    ]
    assert [[(c.text, c.colspan, c.rowspan) for c in r] for r in stub_heads(over, 2)] == [
        [("Site", 1, 2), ("Nitrate", 2, 1)],
        [("2024", 1, 1), ("2025", 1, 1)],
        [("a", 1, 1), ("1", 1, 1), ("2", 1, 1)],
    ]
    # set on the lower header row under an empty corner, it spans up; the body's empty cells stay
    under = [
        [Cell(""), Cell("Nitrate", 2)],
        [Cell("Site"), Cell("2024"), Cell("2025")],
        [Cell(""), Cell("1"), Cell("2")],
    ]
    assert [[(c.text, c.rowspan) for c in r] for r in stub_heads(under, 2)] == [
        [("Site", 2), ("Nitrate", 1)],
        [("2024", 1), ("2025", 1)],
        [("", 1), ("1", 1), ("2", 1)],
    ]
    # a head with a head under it, an empty column, one header row: unchanged
    stacked = [[Cell("Total"), Cell("")], [Cell("(€m)"), Cell("")], [Cell("4"), Cell("5")]]
    assert stub_heads(stacked, 2) == stacked
    # no head over a group of columns: the rows may be one head read apart ("Design effect" over heads)
    apart = [[Cell(""), Cell("Design effect"), Cell("")], [Cell("Proportion"), Cell("1.7"), Cell("1.8")]]
    assert stub_heads([*apart, [Cell("0.95"), Cell("272"), Cell("288")]], 2)[:2] == apart
    assert stub_heads(over, 1) == over


def test_a_group_label_row_ends_the_header():
    rows = [["Item", "Budget"], ["Staff", ""], ["Salaries", "385"]]
    html = table_html(rows, header_rows=2)
    assert html.startswith(
        "<table><thead><tr><th>Item</th><th>Budget</th></tr></thead><tbody><tr><td>Staff</td>"
    )
    # a second row of heads stays in the header
    assert "<th>Q1</th>" in table_html([["", "2025"], ["Region", "Q1"], ["North", "4"]], header_rows=2)


def test_a_table_running_into_the_next_column_is_one_table(textlayer_engine, printer):
    """Chromium repeats a table's header at the top of each column it runs into. Before: two tables,
    the second with the header again; a reader sees one table going on."""
    rows = [[f"Station {k:02d}", f"{3 + k % 7}.{k % 10}", f"{40 + k}"] for k in range(1, 29)]
    html = (
        "<style>body{font-family:'Liberation Sans',sans-serif;font-size:10pt}"
        ".cols{column-count:2;column-gap:10mm;column-fill:auto;height:110mm}"
        "table{border-collapse:collapse;width:100%;font-size:9pt;border:0.8pt solid #000}"
        "thead{border-bottom:0.8pt solid #000} td,th{padding:1mm 2mm;text-align:left}</style>"
        f"<div class=cols><p>{INTRO}</p><table><thead>{_tr(['Site', 'Nitrate', 'Samples'], 'th')}</thead>"
        f"<tbody>{''.join(_tr(r) for r in rows)}</tbody></table><p>{AFTER}</p></div>"
    )
    md = page_markdown(textlayer_engine, printer("two-columns", html))
    assert md.count("<table>") == 1 and md.count("<thead>") == 1, md
    assert table_rows(md) == [["Site", "Nitrate", "Samples"], *rows], md
    assert_in_order(md, [INTRO, "<table>", "</table>", AFTER])


def test_a_table_repeating_the_header_before_it_goes_on_from_it():
    upper = table_html([["Site", "Samples"], ["Weir", "4"]], header_rows=1)
    lower = table_html([["Site", "Samples"], ["Park", "6"], ["Mill", "2"]], header_rows=1)
    assert table_rows(continue_table(upper, lower)) == [
        ["Site", "Samples"],
        ["Weir", "4"],
        ["Park", "6"],
        ["Mill", "2"],
    ]
    # another header: two tables
    assert continue_table(upper, table_html([["Site", "Tests"], ["Park", "6"]], header_rows=1)) is None
    assert continue_table(upper, table_html([["Site", "Tests"], ["Park", "6"]])) is None
    # the header repeated but not read as one on the next page (round 28: Node.js's encodings table,
    # its bold unseen there): its words in the first row say it is
    assert table_rows(continue_table(upper, table_html([["Site", "Samples"], ["Park", "6"]]))) == [
        ["Site", "Samples"],
        ["Weir", "4"],
        ["Park", "6"],
    ]
    # across a page break: the table ending one page takes the rows of the one starting the next
    page, held = trailing_table(f"{INTRO}\n\n{upper}")
    assert (page, held) == (INTRO, upper)
    assert trailing_table(f"{upper}\n\n{AFTER}") == (f"{upper}\n\n{AFTER}", "")
    joined, rest = table_going_on(held, f"{lower}\n\n{AFTER}")
    assert joined == continue_table(upper, lower) and rest == AFTER
    assert table_going_on(held, f"{AFTER}\n\n{lower}") == (held, f"{AFTER}\n\n{lower}")


@pytest.mark.parametrize("n_rows, n_pages, n_cols", [(60, 2, 3), (130, 4, 3), (130, 4, 2)])
def test_a_table_printed_across_a_page_break_is_one_table_in_the_document(
    tmp_path, printer, n_rows, n_pages, n_cols
):
    """Chromium repeats a table's header on each page it runs onto. The document's Markdown (the file
    and the app's document view) holds one table, kept where it starts; each page's own Markdown and
    JSON keep what lies on that page. Over four pages, before: the middle pages, only the table's rows,
    ended the join (the rows after the first were a second table); the heads at the top of every page
    and each page's last figures, on page after page at the page's edge, were cut as running lines
    (three columns: heads lost, "Station | 001" in two cells); with two columns the two rows at each
    page's head and foot were cut, as running lines in one place."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines
    from ocr_app.ui.viewer import document_markdown

    keep = [0, 1, 2] if n_cols == 3 else [0, 2]  # two columns: without "Nitrate"
    heads = [["Site", "Nitrate", "Samples"][j] for j in keep]
    rows = [
        [[f"Station {k:03d}", f"{3 + k % 7}.{k % 10}", f"{40 + k}"][j] for j in keep]
        for k in range(1, n_rows + 1)
    ]
    html = (
        "<style>body{font-family:'Liberation Sans',sans-serif;font-size:10pt}"
        "table{border-collapse:collapse;font-size:9.5pt} td,th{padding:1mm 3mm;text-align:left;"
        "border-bottom:0.4pt solid #999}</style>"
        f"<h2>Sampling stations</h2><p>{INTRO}</p><table><thead>{_tr(heads, 'th')}</thead>"
        f"<tbody>{''.join(_tr(r) for r in rows)}</tbody></table><p>{AFTER}</p>"
    )
    pdf = printer(f"across-{n_pages}-pages-{n_cols}", html)
    settings = load_settings(engine="textlayer")
    converter = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine="textlayer", formats=frozenset({"md"}))
    (doc,) = converter.convert([pdf], tmp_path / "out", options)
    assert len(doc.pages) == n_pages and all("<table>" in p.markdown for p in doc.pages)
    for md in (doc.outputs["md"].read_text(encoding="utf-8"), document_markdown([doc])):
        assert md.count("<table>") == 1, md
        assert table_rows(md) == [heads, *rows], md
        assert_in_order(md, [INTRO, "<table>", "</table>", AFTER])
    markers = [f"<!-- page {k} -->" for k in range(2, n_pages + 1)]
    assert_in_order(doc.outputs["md"].read_text(encoding="utf-8"), ["</table>", *markers, AFTER])


def test_heads_over_column_groups_above_a_borderless_table_are_one_header_row():
    """``borderless.find_grids`` on the rows of a slide printed by Chromium (the text layer's boxes at
    144 DPI): two bold heads a clear gap apart, each centred over a pair of year columns, right above
    a table without rulings, "Site" set in the middle of the two header rows. Before: only a single
    line above could be a group head; the row of two was left out of the table as text."""
    from ocr_app.structure.borderless import find_grids

    def line(text: str, x0: float, x1: float, y: float, *, bold: bool = False) -> TextLine:
        return TextLine(text, (x0, y, x1, y + 31), 30.0, bold=bold, weight=700 if bold else 400)

    heads = [
        line("Nitrate (mg/l)", 530, 730, 406, bold=True),
        line("Phosphate (mg/l)", 954, 1207, 406, bold=True),
    ]
    site = [line("Site", 241, 299, 429, bold=True)]
    years = [
        line(y, x, x + 73, 450, bold=True)
        for y, x in zip(("2024", "2025") * 2, (492, 695, 920, 1169), strict=True)
    ]
    body = [
        [line(name, 127, 127 + 10 * len(name), 493 + 44 * k)]
        + [line(f"{k + 1}.{c}5", x, x + 58, 493 + 44 * k) for c, x in enumerate((558, 760, 1008, 1257))]
        for k, name in enumerate(("Upper weir", "Mill bridge", "Town park", "Estuary"))
    ]
    [grid] = find_grids([heads, site, years, *body], 30.0, 1440.0)
    assert [(c.text, c.colspan) for c in grid.rows[0]] == [
        ("", 1),
        ("Nitrate (mg/l)", 2),
        ("Phosphate (mg/l)", 2),
    ]
    assert [c.text for c in grid.rows[1]] == ["Site", "2024", "2025", "2024", "2025"]
    assert grid.header_rows == 2 and len(grid.rows) == 6


def test_a_cell_spanning_columns_with_a_head_centred_in_each_is_a_cell_a_column():
    """``slot_columns.split_spans`` on the structure model's cells as it read Word's "Grid Table 4"
    header (a blue bar whose cell borders have the bar's colour, heads centred; printed by Chromium,
    text-layer boxes at 144 DPI): "Measure" and "Description" came as one cell over two columns, each
    centred in its own; "Nitrate (mg/l)" and "Phosphate (mg/l)", each set from the first of its two
    columns, came as one head over four. A head over two columns, one phrase, stays one cell."""
    from ocr_app.structure.slot_columns import split_spans
    from ocr_app.structure.table_slots import Slot

    def word(
        text: str, x0: float, x1: float, y: float = 639
    ) -> tuple[tuple[float, float, float, float], str]:
        return (x0, y, x1, y + 21), text

    body = [
        Slot(1, 0, words=[word("M1", 128, 150, 680)]),
        Slot(
            1,
            1,
            words=[
                word("Replace", 240, 310, 680),
                word("the", 316, 345, 680),
                word("bearings", 351, 430, 680),
            ],
        ),
        Slot(1, 2, words=[word("Roads", 705, 760, 680), word("unit", 766, 800, 680)]),
    ]
    merged = Slot(
        0, 0, colspan=2, header=True, words=[word("Measure", 128, 198), word("Description", 424, 518)]
    )
    got = split_spans([merged, Slot(0, 2, header=True, words=[word("Owner", 720, 785)]), *body], 16.0)
    assert [(s.row, s.col, s.colspan, " ".join(t for _, t in s.words)) for s in got if s.row == 0] == [
        (0, 0, 1, "Measure"),
        (0, 1, 1, "Description"),
        (0, 2, 1, "Owner"),
    ]
    phrase = Slot(0, 1, colspan=2, header=True, words=[word("Year", 300, 345), word("ended", 351, 410)])
    assert split_spans([phrase, *body], 16.0) == [phrase, *body]
    # two heads set from the first of their two columns, read as one head over four
    figures = [
        Slot(2, c + 1, words=[word("2.62", x, x + 42, 720)]) for c, x in enumerate((259, 346, 434, 540))
    ]
    groups = Slot(1, 1, colspan=4, header=True, words=[word("Nitrate", 259, 320), word("(mg/l)", 326, 405)])
    groups.words += [word("Phosphate", 434, 530), word("(mg/l)", 536, 600)]
    got = split_spans([groups, *figures], 16.0)
    assert [(s.col, s.colspan, " ".join(t for _, t in s.words)) for s in got if s.row == 1] == [
        (1, 2, "Nitrate (mg/l)"),
        (3, 2, "Phosphate (mg/l)"),
    ]
    # dates each centred over a "$000's" and a "%" column, narrower than the two (ICDAR us-004)
    dates = Slot(
        1, 1, colspan=4, header=True, words=[word("12/31/2009", 275, 345), word("12/31/2010", 455, 525)]
    )
    got = split_spans([dates, *figures], 16.0)
    assert [(s.col, s.colspan, " ".join(t for _, t in s.words)) for s in got if s.row == 1] == [
        (1, 2, "12/31/2009"),
        (3, 2, "12/31/2010"),
    ]
    # a title wrapped over two lines across the table stays one cell
    title = Slot(0, 1, colspan=4, words=[word("Exhibit", 259, 320, 600), word("for", 450, 480, 625)])
    assert split_spans([title, *figures], 16.0)[0] is title
