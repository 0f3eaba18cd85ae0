"""The ``xlsx`` output: every table of a document as a sheet a spreadsheet user can work with.

Checked on real conversions: a page built with PyMuPDF holding a booktabs table whose "Results" header
spans three columns (tests/test_table_styles.py's page) goes through the CLI and through the web app's
``/convert`` endpoint; the workbook is read back with openpyxl. A document without a table gets no
workbook. The value rules (figures as numbers, codes as text) are checked on the strings reports print.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ocr_app.render.spreadsheet import cell_value, table_cells
from tests.factories import make_pdf

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("text", "value", "fmt"),
    [
        ("1,204", 1204, "#,##0"),
        ("6,257.50", 6257.5, "#,##0.00"),
        ("982", 982, None),
        ("2019", 2019, None),
        ("3.14", 3.14, "0.00"),
        ("(35)", -35, None),
        ("\u22122.5", -2.5, "0.0"),
        ("12.5%", 0.125, "0.0%"),
        ("40%", 0.4, "0%"),
        ("007", "007", None),  # a code: its zeros are part of it
        ("1,2", "1,2", None),  # not a thousands group: left as printed
        ("(35", "(35", None),
        ("N/A", "N/A", None),
        ("25g", "25g", None),
        ("-", "-", None),
    ],
)
def test_figures_become_numbers_and_everything_else_stays_text(text, value, fmt):
    got, got_fmt = cell_value(text)
    assert got == value and type(got) is type(value) and got_fmt == fmt


def test_spans_take_their_grid_places():
    html = (
        "<table><tr><th rowspan='2'>Region</th><th colspan='3'>Results</th></tr>"
        "<tr><th>2020</th><th>2021</th><th>2022</th></tr>"
        "<tr><td>North</td><td>1,310</td><td>1,402</td><td>1,515<br>(est.)</td></tr></table>"
    )
    cells = [(c.row, c.col, c.text, c.rowspan, c.colspan, c.header) for c in table_cells(html)]
    assert cells == [
        (0, 0, "Region", 2, 1, True),
        (0, 1, "Results", 1, 3, True),
        (1, 1, "2020", 1, 1, True),  # column 0 is held by "Region" from the row above
        (1, 2, "2021", 1, 1, True),
        (1, 3, "2022", 1, 1, True),
        (2, 0, "North", 1, 1, False),
        (2, 1, "1,310", 1, 1, False),
        (2, 2, "1,402", 1, 1, False),
        (2, 3, "1,515\n(est.)", 1, 1, False),
    ]


@pytest.fixture(scope="module")
def table_pdf(tmp_path_factory) -> Path:
    from tests.test_table_styles import _page, spanning

    return _page(spanning, tmp_path_factory.mktemp("xlsx") / "results.pdf")


def _check_results_sheet(path: Path) -> None:
    from openpyxl import load_workbook

    from tests.test_table_styles import BODY, HEADER

    book = load_workbook(path)
    assert book.sheetnames == ["p1-t1"]
    sheet = book["p1-t1"]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    merged = {str(r) for r in sheet.merged_cells.ranges}
    for span in sheet.merged_cells.ranges:  # a merged range's cells read as its top-left value
        for r in range(span.min_row, span.max_row + 1):
            for c in range(span.min_col, span.max_col + 1):
                rows[r - 1][c - 1] = rows[span.min_row - 1][span.min_col - 1]
    assert "C1:E1" in merged, merged  # "Results" over 2020-2022
    assert rows[0][2:] == ["Results"] * 3 and sheet["C1"].font.b
    assert rows[1] == HEADER and sheet["C2"].font.b  # labels: text, bold
    north = rows[2]
    assert north[0] == "North" and north[1:] == [int(v.replace(",", "")) for v in BODY[0][1:]]
    assert sheet["B3"].number_format == "#,##0"
    assert rows[-1][0] == "Total" and sum(r[1] for r in rows[2:-1]) == rows[-1][1]  # figures add up


def test_the_cli_writes_a_workbook_for_a_table_and_none_without_one(table_pdf, tmp_path):
    plain = make_pdf(tmp_path / "memo.pdf", ["# Memo\nNo table here."])
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", "convert", str(table_pdf), str(plain), "-o", str(out),
         "--engine", "textlayer", "--format", "xlsx,md", "-q"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    _check_results_sheet(out / "results" / "results_tables.xlsx")
    assert sorted(p.name for p in (out / "memo").iterdir()) == ["memo.md"]


def test_the_web_app_offers_the_workbook(table_pdf, tiny_checkpoint, tmp_path):
    gradio_client = pytest.importorskip("gradio_client")
    from gradio_client import handle_file

    from tests.ui_support import running_app, tiny_settings

    with running_app(tiny_settings(tiny_checkpoint, tmp_path / "cache")) as app:
        client = gradio_client.Client(app.url, verbose=False, download_files=True)
        _, result, files = client.predict(
            files=[handle_file(str(table_pdf))], engine="textlayer", api_name="/convert"
        )
    assert result["documents"][0]["error"] is None
    names = [Path(f).name for f in files]
    assert "results_tables.xlsx" in names, names
    _check_results_sheet(Path(files[names.index("results_tables.xlsx")]))


def test_spans_past_the_table_are_cut_to_it(tmp_path):
    """A model's HTML may ask for any span: merged cell by cell, "rowspan=100000" would make millions
    of cells. Spans reach no further down than the table's rows and at most 256 columns across."""
    from ocr_app.render.spreadsheet import SheetTable, write_workbook

    html = "<table><tr><td rowspan='100000' colspan='100000'>x</td></tr><tr><td>1</td></tr></table>"
    cells = table_cells(html)
    assert [(c.rowspan, c.colspan) for c in cells] == [(2, 256), (1, 1)]
    write_workbook([SheetTable(1, 1, cells)], tmp_path / "t.xlsx")
    assert (tmp_path / "t.xlsx").stat().st_size < 200_000
