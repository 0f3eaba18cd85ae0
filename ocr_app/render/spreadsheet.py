"""Every table of a document as a sheet of one Excel workbook (the ``xlsx`` output format).

Why: people convert reports to get at their tables. HTML tables inside Markdown paste into a spreadsheet
cell by cell at best; a workbook keeps each table whole, its spanning cells merged, its header rows
bold, and its body figures as numbers a formula can use ("1,204" → 1204, "(35)" → -35, "12.5%" →
0.125), while header labels ("2019"), codes with leading zeros ("007") and anything else stay text as
printed.

The tables come from the pages' ``table`` blocks, whatever engine read them (the text layer's, the
light engine's and DeepSeek-OCR-2's HTML alike); ``openpyxl`` writes the file and is imported only when
a workbook is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

MAX_SHEET_TITLE = 31  # Excel's limit
MAX_COLSPAN = 256  # a span is merged cell by cell: a model's "colspan=100000" must not make millions
# A figure as reports print it: thousands grouped by commas or thin spaces, a decimal point, a sign or
# accounting parentheses for a negative, a trailing percent sign. No leading zero before other digits.
_NUMBER = re.compile(
    r"^(?P<open>\()?(?P<sign>[-\u2212\u2013+])?"
    r"(?P<int>0|[1-9]\d{0,2}(?:[,\u00a0\u202f]\d{3})+|[1-9]\d*)(?P<frac>\.\d+)?(?P<close>\))?(?P<pct>%)?$"
)


@dataclass
class SheetCell:
    """One cell of a table at its grid position (spans from the HTML)."""

    row: int
    col: int
    text: str
    rowspan: int = 1
    colspan: int = 1
    header: bool = False


@dataclass
class SheetTable:
    """A table and where it was: the sheet is named after its page and its place on the page."""

    page: int  # 1-based page number
    index: int  # 1-based, per page
    cells: list[SheetCell]

    @property
    def title(self) -> str:
        return f"p{self.page}-t{self.index}"[:MAX_SHEET_TITLE]


class _TableParser(HTMLParser):
    """Rows of ``(text, rowspan, colspan, header)`` from one ``<table>`` (nested tables flattened)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[tuple[str, int, int, bool]]] = []
        self._cell: list[str] | None = None
        self._span = (1, 1, False)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            if not self.rows:
                self.rows.append([])
            a = dict(attrs)
            self._cell = []
            self._span = (_span(a.get("rowspan")), _span(a.get("colspan")), tag == "th")
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            text = "\n".join(" ".join(part.split()) for part in "".join(self._cell).split("\n")).strip()
            self.rows[-1].append((text, *self._span))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _span(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), 100_000))
    except ValueError:
        return 1


def table_cells(html: str) -> list[SheetCell]:
    """The cells of an HTML table at their grid positions: a cell takes the first column its row has
    free (cells spanning down from rows above hold theirs)."""
    parser = _TableParser()
    parser.feed(html)
    parser.close()
    taken: set[tuple[int, int]] = set()
    cells: list[SheetCell] = []
    for r, row in enumerate(parser.rows):
        c = 0
        for text, asked_down, asked_across, header in row:
            rowspan = min(asked_down, len(parser.rows) - r)  # no deeper than the table's rows
            colspan = min(asked_across, MAX_COLSPAN)
            while (r, c) in taken:
                c += 1
            cells.append(SheetCell(r, c, text, rowspan, colspan, header))
            taken.update((r + dr, c + dc) for dr in range(rowspan) for dc in range(colspan))
            c += colspan
    return cells


def cell_value(text: str) -> tuple[Any, str | None]:
    """A cell's value for the sheet and its number format: a number when the text is one figure as
    reports print it, else the text itself."""
    m = _NUMBER.match(text.strip())
    if m is None or bool(m.group("open")) != bool(m.group("close")):
        return text, None
    digits = m.group("int").replace(",", "").replace("\u00a0", "").replace("\u202f", "")
    frac = m.group("frac") or ""
    value: float = float(digits + frac) if frac else int(digits)
    if m.group("open") or m.group("sign") in ("-", "\u2212", "\u2013"):
        value = -value
    places = len(frac) - 1 if frac else 0
    if m.group("pct"):
        return value / 100, "0" + ("." + "0" * places if places else "") + "%"
    grouped = "," in m.group("int") or "\u00a0" in m.group("int") or "\u202f" in m.group("int")
    fmt = ("#,##0" if grouped else "0") + ("." + "0" * places if places else "")
    return value, (fmt if grouped or places else None)


def write_workbook(tables: list[SheetTable], path: Path) -> None:
    """``path`` as an .xlsx workbook, one sheet per table (a note sheet when given none)."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font

    book = Workbook()
    first = book.active
    if not tables:
        first.title = "tables"
        first["A1"] = "No tables were found in this document."
    bold = Font(bold=True)
    for k, table in enumerate(tables):
        sheet = first if k == 0 else book.create_sheet()
        sheet.title = table.title
        for cell in table.cells:
            value, fmt = (cell.text, None) if cell.header else cell_value(cell.text)  # labels stay text
            target = sheet.cell(row=cell.row + 1, column=cell.col + 1, value=value)
            if fmt:
                target.number_format = fmt
            if cell.header:
                target.font = bold
            if "\n" in cell.text:
                target.alignment = Alignment(wrap_text=True, vertical="top")
            if cell.rowspan > 1 or cell.colspan > 1:
                sheet.merge_cells(
                    start_row=cell.row + 1,
                    start_column=cell.col + 1,
                    end_row=cell.row + cell.rowspan,
                    end_column=cell.col + cell.colspan,
                )
    book.save(path)


__all__ = ["SheetCell", "SheetTable", "cell_value", "table_cells", "write_workbook"]
