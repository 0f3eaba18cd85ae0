"""Tables set in the styles of public reports (issue 30): cells on fills with no rulings (alternating
row shading, a dark header fill), booktabs (three horizontal rules only) and a two-level header whose
top cell spans three columns. Each page is A4 with body paragraphs above and below the table, built
here with PyMuPDF; each must come out as one table with its rows, columns and header cells, the
paragraphs around it kept as text in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from tests.factories import assert_in_order, page_markdown, table_rows

A4 = (595.0, 842.0)
LEFT, RIGHT = 72.0, 523.0
SIZE = 9.5

ABOVE = (
    "Table 3 summarises the regional accounts for the reporting period. Figures are in thousands of "
    "units and are rounded; totals may therefore differ slightly from the sum of their parts. The "
    "methodology follows the one used in the previous edition of this report."
)
BELOW = (
    "Growth was strongest in the northern and western regions, where new capacity came into service "
    "during the second quarter. The southern region remained flat over the period, in line with the "
    "forecast published in the spring, and the central region recovered from a weak start."
)

HEADER = ["Region", "2019", "2020", "2021", "2022"]
BODY = [
    ["North", "1,204", "1,310", "1,402", "1,515"],
    ["South", "982", "1,015", "1,077", "1,120"],
    ["East", "1,430", "1,388", "1,456", "1,562"],
    ["West", "1,112", "1,190", "1,254", "1,339"],
    ["Central", "874", "901", "955", "1,003"],
    ["Coastal", "655", "702", "748", "790"],
    ["Total", "6,257", "6,506", "6,892", "7,329"],
]
# x of each column's left edge (labels flush left, figures flush right to the next edge)
COLS = [LEFT, 200.0, 280.0, 360.0, 440.0]
ROW_H = 16.0


def _paragraph(page: pymupdf.Page, y: float, text: str) -> float:
    """A flush-left paragraph in Times; returns the y below it."""
    from bench.accuracy.false_table_pages import wrap

    lead = SIZE * 1.3
    for line in wrap(text, RIGHT - LEFT, SIZE, "tiro"):
        y += lead
        page.insert_text((LEFT, y), line, fontname="tiro", fontsize=SIZE)
    return y + lead


def _cell(page: pymupdf.Page, col: int, y: float, text: str, *, bold: bool = False, color=(0, 0, 0)) -> None:
    """One cell's text on the baseline ``y``: the first column flush left, the others flush right."""
    font = "hebo" if bold else "helv"
    if col == 0:
        x = COLS[0] + 4
    else:
        right = (COLS[col + 1] if col + 1 < len(COLS) else RIGHT) - 4
        x = right - pymupdf.get_text_length(text, fontname=font, fontsize=SIZE)
    page.insert_text((x, y), text, fontname=font, fontsize=SIZE, color=color)


def _fill(page: pymupdf.Page, y: float, color: tuple[float, float, float]) -> None:
    page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + ROW_H), color=None, fill=color, width=0)


def _rows(page: pymupdf.Page, y: float, rows: list[list[str]], fill: Callable[[int], tuple | None]) -> float:
    """Body rows from the top ``y``, row ``k`` on ``fill(k)`` (or none); returns the y below them."""
    for k, row in enumerate(rows):
        colour = fill(k)
        if colour is not None:
            _fill(page, y, colour)
        for c, text in enumerate(row):
            _cell(page, c, y + ROW_H - 4.5, text)
        y += ROW_H
    return y


def _page(table: Callable[[pymupdf.Page, float], float], path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    y = _paragraph(page, 90.0, ABOVE)
    y = table(page, y + 6)
    _paragraph(page, y + 10, BELOW)
    doc.save(path)
    doc.close()
    return path


def _header(page: pymupdf.Page, y: float, **kw) -> float:
    for c, text in enumerate(HEADER):
        _cell(page, c, y + ROW_H - 4.5, text, bold=True, **kw)
    return y + ROW_H


def striped(page: pymupdf.Page, y: float) -> float:
    """Alternating light grey fills, no lines; the header in bold on white."""
    y = _header(page, y)
    return _rows(page, y, BODY, lambda k: (0.9, 0.9, 0.9) if k % 2 == 0 else None)


def dark_header(page: pymupdf.Page, y: float) -> float:
    """A dark blue header fill with white bold text; body rows on two light fills."""
    _fill(page, y, (0.12, 0.23, 0.45))
    y = _header(page, y, color=(1, 1, 1))
    return _rows(page, y, BODY, lambda k: (0.86, 0.9, 0.96) if k % 2 == 0 else (0.95, 0.97, 1.0))


def booktabs(page: pymupdf.Page, y: float) -> float:
    """A thick top rule, a thin rule under the header, a thick bottom rule; nothing else."""
    page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=1.0)
    y = _header(page, y + 2)
    page.draw_line((LEFT, y + 1), (RIGHT, y + 1), color=(0, 0, 0), width=0.5)
    y = _rows(page, y + 3, BODY, lambda k: None)
    page.draw_line((LEFT, y + 2), (RIGHT, y + 2), color=(0, 0, 0), width=1.0)
    return y + 2


def faint_booktabs(page: pymupdf.Page, y: float) -> float:
    """Booktabs drawn faint: mid-grey hairlines (0.25-0.4 pt), as many report templates set them."""
    grey = (0.6, 0.6, 0.6)
    page.draw_line((LEFT, y), (RIGHT, y), color=grey, width=0.4)
    y = _header(page, y + 2)
    page.draw_line((LEFT, y + 1), (RIGHT, y + 1), color=grey, width=0.25)
    y = _rows(page, y + 3, BODY, lambda k: None)
    page.draw_line((LEFT, y + 2), (RIGHT, y + 2), color=grey, width=0.4)
    return y + 2


def _results(page: pymupdf.Page, y: float, color=(0, 0, 0)) -> None:
    """ "Results" centred over the columns 2020-2022 on the header band from ``y``."""
    text = "Results"
    x = (COLS[2] + RIGHT) / 2 - pymupdf.get_text_length(text, fontname="hebo", fontsize=SIZE) / 2
    page.insert_text((x, y + ROW_H - 2.5), text, fontname="hebo", fontsize=SIZE, color=color)


def spanning(page: pymupdf.Page, y: float) -> float:
    """Booktabs with a two-level header: "Results" over the columns 2020-2022, with a short rule
    under it spanning those three columns (a cmidrule)."""
    page.draw_line((LEFT, y), (RIGHT, y), color=(0, 0, 0), width=1.0)
    _results(page, y)
    page.draw_line((COLS[2] + 4, y + ROW_H + 1), (RIGHT - 4, y + ROW_H + 1), color=(0, 0, 0), width=0.4)
    y += ROW_H + 1
    y = _header(page, y)
    page.draw_line((LEFT, y + 1), (RIGHT, y + 1), color=(0, 0, 0), width=0.5)
    y = _rows(page, y + 3, BODY, lambda k: None)
    page.draw_line((LEFT, y + 2), (RIGHT, y + 2), color=(0, 0, 0), width=1.0)
    return y + 2


def spanning_on_stripes(page: pymupdf.Page, y: float) -> float:
    """No rules: "Results" centred over its three columns, body rows on alternating grey fills."""
    _results(page, y)
    y = _header(page, y + ROW_H)
    return _rows(page, y, BODY, lambda k: (0.9, 0.9, 0.9) if k % 2 == 0 else None)


def spanning_on_dark_fill(page: pymupdf.Page, y: float) -> float:
    """Both header rows on one dark fill, white bold text; body rows on light fills."""
    page.draw_rect(pymupdf.Rect(LEFT, y, RIGHT, y + 2 * ROW_H), color=None, fill=(0.12, 0.23, 0.45), width=0)
    _results(page, y, color=(1, 1, 1))
    y = _header(page, y + ROW_H, color=(1, 1, 1))
    return _rows(page, y, BODY, lambda k: (0.86, 0.9, 0.96) if k % 2 == 0 else (0.95, 0.97, 1.0))


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine()
    assert eng._learned, "the tables extra (rapid-table) is part of the dev install"
    return eng


def _check(md: str) -> list[list[str]]:
    """One table, the paragraphs around it in order, no heading made of header text; its rows."""
    assert md.count("<table>") == 1, md
    assert not re.search(r"^#+ ", md, re.M), md
    table, after = md[md.index("<table>") : md.index("</table>")], md.partition("</table>")[2]
    assert "summarises" not in table and "Growth" not in table, md
    assert_in_order(md, ["Table 3 summarises", "previous edition of this report", "<table>", "Growth was"])
    assert "central region recovered from a weak start" in re.sub(r"\s+", " ", after)
    return table_rows(md)


def _header_and_body(md: str, rows: list[list[str]]) -> None:
    assert rows[-len(BODY) :] == BODY, md
    assert re.search(
        r"<tr>\s*<th>Region</th><th>2019</th><th>2020</th><th>2021</th><th>2022</th>\s*</tr>", md
    ), md


def _grid(md: str) -> list[list[str]]:
    """The table's header as a grid: each cell's text in every position its spans cover."""
    table = md[md.index("<table>") : md.index("</table>")]
    grid: dict[tuple[int, int], str] = {}
    for r, tr in enumerate(re.findall(r"<tr>(.*?)</tr>", table, re.S)):
        c = 0
        for attrs, text in re.findall(r"<t[dh]([^>]*)>([^<]*)</t[dh]>", tr):
            while (r, c) in grid:
                c += 1
            span = re.search(r'colspan="(\d+)"', attrs)
            down = re.search(r'rowspan="(\d+)"', attrs)
            for dr in range(int(down.group(1)) if down else 1):
                for dc in range(int(span.group(1)) if span else 1):
                    grid[(r + dr, c + dc)] = text
            c += int(span.group(1)) if span else 1
    rows = 1 + max(r for r, _ in grid)
    return [[grid.get((r, c), "") for c in range(1 + max(c for _, c in grid))] for r in range(rows)]


@pytest.mark.parametrize("style", [striped, dark_header, booktabs, faint_booktabs], ids=lambda f: f.__name__)
def test_a_table_set_with_fills_or_three_rules_is_one_table(tmp_path, engine, style):
    md = page_markdown(engine, _page(style, tmp_path / "page.pdf"))
    rows = _check(md)
    assert len(rows) == 1 + len(BODY) and all(len(r) == 5 for r in rows), md
    _header_and_body(md, rows)


@pytest.mark.parametrize(
    "style",
    [spanning, spanning_on_stripes, spanning_on_dark_fill],
    ids=lambda f: f.__name__,
)
def test_a_spanning_header_cell_spans_its_three_columns(tmp_path, engine, style):
    md = page_markdown(engine, _page(style, tmp_path / "page.pdf"))
    _check(md)
    assert '<th colspan="3">Results</th>' in md, md
    grid = _grid(md)
    assert len(grid) == 2 + len(BODY) and all(len(r) == 5 for r in grid), md
    # "Results" over 2020-2022 only; "Region" and "2019" spanning both header rows or left blank above
    assert grid[0][2:] == ["Results"] * 3 and grid[0][:2] in (HEADER[:2], ["", ""]), md
    assert grid[1] == HEADER and grid[2:] == BODY, md
    head = md[md.index("<table>") : md.index("<td>North")]
    assert "<td" not in head and len(re.findall(r"<th[ >]", head)) in (6, 8), md  # rowspans or blanks


def test_a_starred_significance_note_under_a_table_is_a_note_not_a_bullet(engine, tmp_path):
    """ "* p < 0.05; ** p < 0.01" under a table is the table's note: its asterisks are marks, escaped in the
    Markdown so no renderer draws a bulleted list. Guard: lines that start with "* " and ordinary words
    are still a list."""

    def noted(page: pymupdf.Page, y: float) -> float:
        y = booktabs(page, y)
        page.insert_text((LEFT, y + 12), "* p < 0.05; ** p < 0.01 (two-tailed)", fontname="tiro", fontsize=8)
        page.insert_text((LEFT, y + 22), "* Source: regional household survey", fontname="tiro", fontsize=8)
        return y + 26

    md = page_markdown(engine, _page(noted, tmp_path / "noted.pdf"))
    assert table_rows(md)[-len(BODY) :] == BODY, md
    after = md.partition("</table>")[2]
    assert "\n\\* p < 0.05; ** p < 0.01 (two-tailed)\n" in after, md  # a line-start mark is escaped
    assert "\n\\* Source: regional household survey\n" in after, md  # a note of its own
    assert not re.search(r"^\s*[-*] (p <|Source)", md, re.M), md

    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    y = _paragraph(page, 90.0, ABOVE)
    for item in ("apples from the northern orchards", "pears from the river valley", "plums from the hills"):
        page.insert_text((LEFT, y), f"* {item}", fontname="tiro", fontsize=SIZE)
        y += SIZE * 1.4
    doc.save(tmp_path / "starred_list.pdf")
    listed = page_markdown(engine, tmp_path / "starred_list.pdf")
    assert "- apples from the northern orchards\n- pears from the river valley" in listed, listed
