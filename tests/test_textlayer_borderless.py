"""Tables without rules, headings and columns on the text layer: the typical misses of issue 25, each
on a PDF typeset here by PyMuPDF's Story from HTML (a real layout engine places the words)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.ingest.pdf import import_pymupdf
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

pymupdf = import_pymupdf()

CSS = (
    "body {font-family: sans-serif; font-size: 10pt} table {border-collapse: collapse} "
    "td, th {padding: 2pt 12pt 2pt 0; text-align: left; vertical-align: top}"
)
PROSE = "This paragraph is ordinary prose that runs over more than one line of the page to give it a body."


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _story_pdf(path: Path, html: str, columns: str = "") -> Path:
    page = pymupdf.paper_rect("a4")
    frame = pymupdf.Rect(56, 56, page.width - 56, page.height - 56)
    writer = pymupdf.DocumentWriter(str(path))
    story = pymupdf.Story(html=html, user_css=CSS)
    dev = writer.begin_page(page)
    _, filled = story.place(frame)
    story.draw(dev)
    if columns:
        top = pymupdf.Rect(filled).y1 + 10
        half = (frame.width - 24) / 2
        col = pymupdf.Story(html=columns, user_css=CSS)
        for r in (
            pymupdf.Rect(frame.x0, top, frame.x0 + half, frame.y1),
            pymupdf.Rect(frame.x1 - half, top, frame.x1, frame.y1),
        ):
            more, _ = col.place(r)
            col.draw(dev)
            if not more:
                break
    writer.end_page()
    writer.close()
    return path


def _markdown(engine: TextLayerEngine, pdf: Path) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, 72, prompt="")])[0].blocks)


def _tables(md: str) -> list[str]:
    return re.findall(r"<table>.*?</table>", md, re.S)


def _rows(table: str) -> list[list[str]]:
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r) for r in re.findall(r"<tr>(.*?)</tr>", table)]


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def test_five_column_table_without_rules_keeps_header_rows_and_long_cells(tmp_path, engine):
    long_cell = "Permitted under the national rules since the last revision of the agreement text"
    rows = [["Canada", "Y", "Y", "N", long_cell], ["Mexico", "N", "Y", "Y", "Pending"]]
    rows += [["Norway", "Y", "N", "N", "Permitted with a licence from the ministry of trade"]]
    html = f"<h1>Trade Rules</h1><p>{PROSE}</p>" + _table(
        ["Country", "Import", "Export", "Transit", "Notes"], rows
    )
    md = _markdown(engine, _story_pdf(tmp_path / "five.pdf", html + f"<p>{PROSE}</p>"))
    assert [h for h in md.splitlines() if h.startswith("#")] == ["# Trade Rules"], md
    (table,) = _tables(md)
    assert (
        "<thead><tr><th>Country</th><th>Import</th><th>Export</th><th>Transit</th><th>Notes</th></tr></thead>"
        in table
    )
    got = _rows(table)
    assert got[1] == rows[0] and got[3] == rows[2], got  # the wrapped long cell stays one cell
    assert "Canada Y Y" not in md


def test_three_column_worksheet_table_has_no_heading_inside(tmp_path, engine):
    rows = [["Lens", "Clean it with the paper", ""], ["Stage", "Centre the slide", "gently"]]
    rows += [["Light", "Switch on before focusing", ""], ["Focus", "Coarse knob first, then fine", "slowly"]]
    html = f"<h1>Microscope Worksheet</h1><p>{PROSE}</p>" + _table(["Part", "What to do", "Notes"], rows)
    md = _markdown(engine, _story_pdf(tmp_path / "worksheet.pdf", html))
    assert [h for h in md.splitlines() if h.startswith("#")] == ["# Microscope Worksheet"], md
    (table,) = _tables(md)
    assert _rows(table)[1:] == rows


def test_four_column_table_is_read_row_by_row_not_column_by_column(tmp_path, engine):
    rows = [[f"Region {k}", f"{k * 11}.5", f"{k * 7}.25", f"{k * 3}.0"] for k in range(1, 6)]
    html = f"<p>{PROSE}</p>" + _table(["Region", "North", "South", "East"], rows)
    md = _markdown(engine, _story_pdf(tmp_path / "four.pdf", html))
    (table,) = _tables(md)
    assert _rows(table) == [["Region", "North", "South", "East"], *rows]
    assert "<thead>" in table  # words over columns of numbers: the first row is the header


def test_year_ended_group_header_is_a_spanning_header_cell_not_a_heading(tmp_path, engine):
    rows = [["Revenue", "1,204.5", "1,330.1", "1,415.9"], ["Costs", "(804.2)", "(850.0)", "(901.3)"]]
    rows += [["Net income", "400.3", "480.1", "514.6"]]
    table = (
        '<table><tr><th></th><th colspan="3">Year Ended</th></tr>'
        "<tr><th>(in millions)</th><th>2022</th><th>2023</th><th>2024</th></tr>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        + "</table>"
    )
    md = _markdown(
        engine, _story_pdf(tmp_path / "year.pdf", f"<h2>Income Statement</h2><p>{PROSE}</p>{table}")
    )
    assert "## Year Ended" not in md and "# Year Ended" not in md
    (got,) = _tables(md)
    # "(in millions)" under the empty corner is one head over both header rows, as ICDAR 2013's ground
    # truth has such heads (``table_html.stub_heads``)
    assert '<th rowspan="2">(in millions)</th><th colspan="3">Year Ended</th>' in got
    assert _rows(got)[1] == ["2022", "2023", "2024"]
    assert got.count("</th>") == 5 and "</thead>" in got


def test_twenty_two_row_parameter_table_stays_one_table(tmp_path, engine):
    names = ["FIXED_INV_INC_FACTOR", "VAR_RATE", "BASE_COST_PER_UNIT_ANNUAL_ADJUSTMENT", "TAX"]
    rows = [[f"{names[k % 4]}_{k}", f"{(k * 37 % 900) / 100 + 0.5:.2f}%"] for k in range(22)]
    rows[0] = ["FIXED_INV_INC_FACTOR", "8.39%"]
    md = _markdown(
        engine, _story_pdf(tmp_path / "params.pdf", f"<p>{PROSE}</p>" + _table(["Parameter", "Value"], rows))
    )
    (table,) = _tables(md)
    got = _rows(table)
    assert len(got) == 23 and got[1] == ["FIXED_INV_INC_FACTOR", "8.39%"] and got[1:] == rows


def test_chart_axis_labels_are_not_a_table(tmp_path, engine):
    pdf = _story_pdf(tmp_path / "chart.pdf", f"<h2>Sales by Region</h2><p>{PROSE}</p>" + "<p>&#160;</p>" * 16)
    doc = pymupdf.open(pdf)
    page = doc[0]
    x0, y1, h = 110.0, 330.0, 170.0
    shape = page.new_shape()
    shape.draw_line((x0, y1), (x0 + 330, y1))
    shape.draw_line((x0, y1), (x0, y1 - h))
    shape.finish(color=(0, 0, 0), width=0.8)
    for k, v in enumerate((0.4, 0.8, 0.6, 0.9, 0.3)):
        bx = x0 + 20 + k * 62
        shape.draw_rect(pymupdf.Rect(bx, y1 - v * h, bx + 36, y1))
        shape.finish(fill=(0.3, 0.45, 0.7), color=None)
        page.insert_text((bx + 4, y1 + 11), ["north", "south", "east", "west", "centre"][k], fontsize=7)
    shape.commit()
    for k in range(5):
        page.insert_text((x0 - 18, y1 - k * h / 4 + 2), str(k * 25), fontsize=7)
    doc.saveIncr()
    doc.close()
    md = _markdown(engine, pdf)
    assert "<table" not in md and "|" not in md, md
    assert "## Sales by Region" in md


def test_bold_colon_lead_in_is_a_heading_and_its_list_follows(tmp_path, engine):
    html = (
        f"<h1>Using the Microscope</h1><p>{PROSE}</p><p><b>Steps for Using the Microscope:</b></p>"
        "<ol><li>Place the slide on the stage.</li><li>Turn on the light.</li></ol>"
        f"<p>{PROSE}</p>"
    )
    md = _markdown(engine, _story_pdf(tmp_path / "lead.pdf", html))
    heads = [h for h in md.splitlines() if h.startswith("#")]
    assert heads[0] == "# Using the Microscope"
    assert re.fullmatch(r"#{2,6} Steps for Using the Microscope:", heads[1]), md
    assert "1. Place the slide on the stage." in md


def test_numbered_sections_and_two_columns_are_not_interleaved(tmp_path, engine):
    left = [f"Left column sentence number {k} about the first topic of the article." for k in range(12)]
    right = [f"Right column sentence number {k} about the second topic here." for k in range(12)]
    columns = "<h2>1 Method</h2>" + "".join(f"<p>{s}</p>" for s in left)
    columns += "<h2>2 Results</h2>" + "".join(f"<p>{s}</p>" for s in right)
    md = _markdown(engine, _story_pdf(tmp_path / "cols.pdf", f"<h1>An Article</h1><p>{PROSE}</p>", columns))
    assert [h for h in md.splitlines() if h.startswith("#")] == [
        "# An Article",
        "## 1 Method",
        "## 2 Results",
    ]
    assert_in_order(md, [*left, *right])
    assert "<table" not in md


def test_line_break_hyphens_are_removed_on_a_two_column_page(tmp_path, engine):
    left = [
        "The committee studied the environ-",
        "mental effects of the new regu-",
        "lation on the harbour and its",
    ]
    left += [
        "surroundings over several years",
        "and wrote a report on its find-",
        "ings for the council members.",
    ]
    right = [
        "A second team measured the tem-",
        "perature of the water every morn-",
        "ing and compared the readings",
    ]
    right += [
        "with the records kept by the",
        "museum since the previous cen-",
        "tury in a long table of values.",
    ]
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 70), "Harbour Study", fontsize=20, fontname="hebo")
    for k, (a, b) in enumerate(zip(left, right, strict=True)):
        page.insert_text((56, 120 + 13 * k), a, fontsize=10)
        page.insert_text((310, 120 + 13 * k), b, fontsize=10)
    pdf = tmp_path / "hyphens.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    for word in ("environmental", "regulation", "findings", "temperature", "morning", "century"):
        assert word in md, md
    assert_in_order(
        md, ["The committee studied", "for the council members.", "A second team", "long table of values."]
    )


def test_numbers_set_one_space_apart_are_cells_of_their_own(tmp_path, engine):
    """A tight table (no cell padding, as LibreOffice sets HTML tables): each row's numbers come from
    PyMuPDF as one piece; they are cut into their columns."""
    rows = [["Revenue", "1,204.5", "1,330.1", "1,415.9"], ["Costs", "(804.2)", "(850.0)", "(901.3)"]]
    rows += [["Taxes", "(100.0)", "(120.5)", "(130.7)"], ["Net income", "300.3", "359.6", "383.9"]]
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    words = PROSE.split()
    page.insert_text((60, 80), " ".join(words[:12]), fontsize=10)
    page.insert_text((60, 94), " ".join(words[12:]), fontsize=10)
    for k, (label, *numbers) in enumerate(rows):
        y = 130 + 14 * k
        page.insert_text((60, y), label, fontsize=10)
        for c, number in enumerate(numbers):  # each cell at its column, a space's width after the last
            page.insert_text((160 + 38 * c, y), number, fontsize=10)
    pdf = tmp_path / "tight.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    (table,) = _tables(md)
    assert _rows(table) == rows, md


def _tight_pdf(path: Path, html: str, valign: str = "top", extra: str = "") -> Path:
    """A table typeset with one space between cells (no cell padding), as LibreOffice sets HTML tables:
    PyMuPDF returns cells of one row that sit that close as one piece ("Toronto Yes")."""
    css = (
        "body {font-family: sans-serif; font-size: 10pt} table {border-collapse: collapse} "
        f"td, th {{padding: 0 3pt 0 0; text-align: left; vertical-align: {valign}}} {extra}"
    )
    writer = pymupdf.DocumentWriter(str(path))
    page = pymupdf.paper_rect("a4")
    story = pymupdf.Story(html=html, user_css=css)
    dev = writer.begin_page(page)
    story.place(pymupdf.Rect(56, 56, page.width - 56, page.height - 56))
    story.draw(dev)
    writer.end_page()
    writer.close()
    return path


def _one_line(pdf: Path, text: str) -> bool:
    return any(ln.strip() == text for ln in pymupdf.open(pdf)[0].get_text().splitlines())


def test_text_cells_set_one_space_apart_are_cut_at_the_other_rows_columns(tmp_path, engine):
    head = ["City", "Import", "Export", "Notes"]
    rows = [["Nairobi", "n/a", "Y", "storage museum"], ["Berlin", "Yes", "Yes", "cold storage"]]
    rows += [["Toronto", "Yes", "n/a", "culture daily"], ["Toronto", "n/a", "Yes", "eastern growth"]]
    pdf = _tight_pdf(tmp_path / "cities.pdf", f"<p>{PROSE}</p>" + _table(head, rows) + f"<p>{PROSE}</p>")
    assert _one_line(pdf, "Toronto Yes") and _one_line(pdf, "Import Export Notes")  # one piece each
    md = _markdown(engine, pdf)
    (table,) = _tables(md)
    assert _rows(table) == [head, *rows], md


def test_a_row_whose_every_cell_is_one_space_from_the_next_stays_in_its_table(tmp_path, engine):
    head = ["Country", "Capital", "Language"]
    rows = [["France", "Paris", "French"], ["United Kingdom", "Westminster", "English"]]
    rows += [["Spain", "Madrid", "Spanish"], ["Italy", "Rome", "Italian"]]
    pdf = _tight_pdf(tmp_path / "countries.pdf", f"<p>{PROSE}</p>" + _table(head, rows) + f"<p>{PROSE}</p>")
    assert _one_line(pdf, "United Kingdom Westminster English")
    md = _markdown(engine, pdf)
    (table,) = _tables(md)
    assert _rows(table) == [head, *rows], md


def test_cells_centred_on_rows_without_padding_keep_their_rows(tmp_path, engine):
    """Cells centred on their row's middle line, rows without padding: the lines of neighbouring
    cells interleave, a key cell wraps onto a line of its own, and a long cell runs into the next
    column's cell one space away."""
    head = ["Part", "What to do", "Notes"]
    clean = "Clean the lens with the soft paper from the box before each use of the microscope"
    centre = "Centre the slide under the clips and hold it with two fingers while you move it"
    rows = [["Lens", clean, "x"], ["Coarse Focus Knob", "Turn slowly", "gently"]]
    rows += [["Stage", centre, "firm"], ["Light", "Switch on", "first"]]
    html = f"<p>{PROSE}</p>" + _table(head, rows) + f"<p>{PROSE}</p>"
    pdf = _tight_pdf(tmp_path / "centred.pdf", html, valign="middle")
    assert _one_line(pdf, "Knob")  # the wrapped key's second line stands alone
    md = _markdown(engine, pdf)
    (table,) = _tables(md)
    assert _rows(table) == [head, *rows], md
    assert md.index(PROSE) < md.index("<table>") < md.rindex(PROSE)


def test_wrapped_key_cells_of_a_centred_table_join_their_rows_and_a_lead_in_after_it_stays_out(
    tmp_path, engine
):
    """LibreOffice's worksheet layout: cells centred on their rows with little padding, so a key
    cell's two lines ("Report" / "Forest") sit above and below the other cells' middle line, and a
    bold lead-in right under the table is a heading, not a last row."""
    head = ["Item", "Description", "Notes"]
    rows = [["Market Energy", "daily summer improve school spring national measure", ""]]
    rows += [["Deliver", "evening theater compare document modern daily water collect", "language lesson"]]
    rows += [["Garden", "narrow memory water paper", ""]]
    rows += [["Report Forest", "quiet mountain machine client support storage", "memory student"]]
    html = _table(head, rows) + "<p><b>Steps for Using the Microscope:</b></p>" + f"<p>{PROSE}</p>"
    css_pdf = _tight_pdf(tmp_path / "worksheet.pdf", f"<p>{PROSE}</p>" + html, valign="middle")
    md = _markdown(engine, css_pdf)
    (table,) = _tables(md)
    assert _rows(table) == [head, *rows], md
    assert re.search(r"^#{2,6} Steps for Using the Microscope:$", md, re.M), md


def test_paragraph_ends_and_section_titles_side_by_side_in_two_columns_are_no_table(tmp_path, engine):
    """Two text columns whose paragraphs end on the same line, with the next section titles beside
    each other: short pieces a gutter apart, two rows in rhythm — and still two columns of text."""
    left = [f"left column prose line {k} with several words" for k in range(8)] + ["ends here."]
    right = [f"right column prose line {k} with several words" for k in range(8)] + ["stops too."]
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 70), "Two Column Article", fontsize=20, fontname="hebo")
    y = 110
    for a, b in zip(left, right, strict=True):
        page.insert_text((56, y), a, fontsize=10)
        page.insert_text((316, y), b, fontsize=10)
        y += 13
    y += 10
    page.insert_text((56, y), "2 Mountain Support", fontsize=14, fontname="hebo")
    page.insert_text((316, y), "4 Scanner", fontsize=14, fontname="hebo")
    for k in range(6):
        page.insert_text((56, y + 20 + 13 * k), f"more left prose in line {k} of the section", fontsize=10)
        page.insert_text((316, y + 20 + 13 * k), f"more right prose in line {k} of the section", fontsize=10)
    pdf = tmp_path / "twocol.pdf"
    doc.save(pdf)
    md = _markdown(engine, pdf)
    assert "<table" not in md, md
    assert_in_order(
        md, ["left column prose line 0", "ends here.", "## 2 Mountain Support", "right column prose"]
    )


def test_key_value_table_without_header_keeps_long_values_and_wrapped_keys(tmp_path, engine):
    """A form-like table of labels and values: values longer than the first row's run further
    right, labels wrap onto a second line; the paragraph after it stays text."""
    rows = [["Strong Report Language:", "growth quarter winter bridge council teacher history"]]
    rows += [["Library Winter Announce:", "river ancient chapter paper national garden summer engine"]]
    rows += [["Increase Western Spring Library Observe:", "budget improve customer forest observe network"]]
    rows += [["Modern Museum Village:", "service museum server client report village product river"]]
    rows += [["River Storage Public Simple:", "painting"]]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    html = f"<p>{PROSE}</p><table>{body}</table><p>{PROSE} {PROSE}</p>"
    md = _markdown(engine, _story_pdf(tmp_path / "form.pdf", html))
    (table,) = _tables(md)
    assert _rows(table) == rows, md
    assert md.count(PROSE) == 3


def test_centred_key_value_rows_whose_cells_never_share_a_line_stay_one_table(tmp_path, engine):
    """LibreOffice's form layout: labels and values centred on rows without padding, so in most
    rows — the first and the last included — no line of the label stands beside a line of the value."""
    rows = [["Rapid:", "science service annual quarter music daily client product energy eastern"]]
    rows += [["Ancient:", "printer mountain result forest"]]
    rows += [["Customer Forecast Engine Bridge Value:", "school network gentle revenue"]]
    rows += [["Result:", "private measure"]]
    rows += [["Quiet Report River Revenue Water:", "engine winter"]]
    rows += [
        ["Language History:", "analysis growth mountain library private garden sample journal paper weekly"]
    ]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    html = f"<p>{PROSE}</p><table style='width: 80%'>{body}</table><p>{PROSE}</p>"
    md = _markdown(engine, _tight_pdf(tmp_path / "centred-form.pdf", html, valign="middle"))
    (table,) = _tables(md)
    assert _rows(table) == rows, md
    assert md.count(PROSE) == 2


def test_product_sheet_text_first_column_beside_short_centred_values(tmp_path, engine):
    """A product sheet as LibreOffice sets it: feature names (one wrapping over several lines) beside
    short values centred in their columns, cells centred on rows without padding."""
    head = ["Feature", "Model A", "Model B", "Model C"]
    battery = (
        "Battery life in everyday use with the screen on at half brightness and the radio on all day long"
    )
    rows = [[battery, "12 h", "9 h", "n/a"], ["Weight", "1.2 kg", "980 g", "1.4 kg"]]
    rows += [["Waterproof", "IP67", "—", "IP54"], ["Charging port", "USB-C", "USB-C", "Micro USB"]]
    rows += [["Memory", "16 GB", "8 GB", "4"]]
    body = "".join(
        "<tr>"
        + "".join(f'<td class="c">{c}</td>' if k else f"<td>{c}</td>" for k, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    head_html = "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"
    html = f"<p>{PROSE}</p><table>{head_html}{body}</table><p>{PROSE}</p>"
    extra = "td, th {padding: 0 8pt 0 0} td.c {text-align: center}"
    md = _markdown(engine, _tight_pdf(tmp_path / "sheet.pdf", html, valign="middle", extra=extra))
    (table,) = _tables(md)
    assert _rows(table) == [head, *rows], md


def test_key_cell_wrapping_onto_its_own_line_in_a_tight_top_aligned_table(tmp_path, engine):
    """Rows without padding, cells at the top: a long key's second line stands alone under its row
    (no other cell beside it), tightly leaded line boxes overlap a little, and the paragraph after
    the table — one of its words happening to start at a column's edge — stays text."""
    head = ["Part", "What to do", "Notes"]
    clean = "Clean the lens with the soft paper from the box before each use of the microscope and after it"
    rows = [["Lens", clean, "x"], ["Coarse Focus Knob of the Microscope Stand", "Turn slowly", "gently"]]
    rows += [["Stage", "Centre the slide", "firm"], ["Light", "Switch on", "first"]]
    pdf = _tight_pdf(tmp_path / "tight-top.pdf", f"<p>{PROSE}</p>" + _table(head, rows) + f"<p>{PROSE}</p>")
    assert _one_line(pdf, "Microscope Stand")
    md = _markdown(engine, pdf)
    (table,) = _tables(md)
    assert _rows(table) == [head, *rows], md
    assert md.count(PROSE) == 2
