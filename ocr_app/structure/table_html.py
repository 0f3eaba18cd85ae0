"""Table cells → the HTML table DeepSeek-OCR-2 writes (``<table><tr><td>…</td></tr></table>``).

Why: the text layer and the light engine find tables from geometry; writing them in the same HTML as
the DeepSeek engine makes every engine's Markdown, JSON and UI look alike, and HTML (unlike a pipe
table) keeps merged cells (``colspan``/``rowspan``), header rows (``<th>`` in ``<thead>``) and cells
of several lines (``<br>``). Cell text comes from a document, so it is HTML-escaped here; the
renderer keeps the table tags of ``table`` blocks (``render.markdown``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A line that starts a new item inside a cell (a bullet, "①", "1.", "a)"): kept on its own line (<br>).
_ITEM_START = re.compile(
    r"^\s*(?:(?:[-•●○◦▪▫■□–—*·‣⁃※]|\(?\d{1,3}[.)]|[a-z][.)])\s|[\u2460-\u24ff\u2776-\u2793])"
)
# A line that is one value (a number, a percentage, a short code): stacked values stay stacked.
_VALUE = re.compile(r"^[-+±]?[\d.,]+\s*%?$|^[-–—*✓✗xX]$")


# The lead word of a note under a table ("Source: national accounts", "Note: …", "N.B. …"), in the
# languages the sets hold; shared by the table readers of the text layer and of pictures.
NOTE_LEAD = r"(?:sources?|notes?|n\.?b\.?|quelles?|fuentes?|fonte|remarks?)\s*[:.]"

MAX_HEADER_ROWS = 3


@dataclass
class Cell:
    """One table cell: its text (plain, not escaped) and how many grid columns/rows it covers."""

    text: str
    colspan: int = 1
    rowspan: int = 1


def join_cell_lines(lines: Sequence[str], join: Callable[[str, str], str] | None = None) -> str:
    """The text lines of one cell (top to bottom) → one cell text; ``\\n`` marks a kept line break.

    Wrapped lines of one sentence are joined with a space (``join`` mends words hyphenated at the
    line end); a line that starts a new item (a bullet, "①") or a stacked value ("0.965" under
    "0.969") keeps its own line, written ``<br>`` in the HTML.
    """
    out = ""
    prev = ""
    for raw in lines:
        line = " ".join(raw.split())
        if not line:
            continue
        if not out:
            out = line
        elif _ITEM_START.match(line) or (_VALUE.match(line) and _VALUE.match(prev)):
            out = f"{out}\n{line}"
        else:
            out = join(out, line) if join else f"{out} {line}"
        prev = line
    return out


# Superscripts and subscripts the text layer marks (``<sup>2</sup>``): balanced, short, no attributes.
SCRIPT_TAG = re.compile(r"<(sup|sub)>([^<>\n]{1,40})</\1>")


def escape_keeping_scripts(text: str) -> str:
    """HTML-escape ``text`` except balanced ``<sup>…</sup>``/``<sub>…</sub>`` pairs (their content
    escaped too)."""
    out: list[str] = []
    pos = 0
    for m in SCRIPT_TAG.finditer(text):
        out.append(html.escape(text[pos : m.start()], quote=False))
        out.append(f"<{m.group(1)}>{html.escape(m.group(2), quote=False)}</{m.group(1)}>")
        pos = m.end()
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


def _cell_html(text: str) -> str:
    return "<br>".join(escape_keeping_scripts(part) for part in text.split("\n"))


def table_html(rows: Sequence[Sequence[Cell | str]], header_rows: int = 0) -> str:
    """Rows of cells → one line of HTML; the first ``header_rows`` rows go in ``<thead>`` as ``<th>``
    (up to a group's label row), a head alone in its columns spanning them (``stub_heads``).

    Without a known header the table is plain ``<tr><td>`` rows, exactly as DeepSeek-OCR-2 writes it.
    """
    parts = ["<table>"]
    header_rows = max(0, min(header_rows, len(rows) - 1))  # a table of only header rows has none
    header_rows = next((k for k in range(1, header_rows) if _label_row(rows[k])), header_rows)
    rows = stub_heads(rows, header_rows)
    for k, row in enumerate(rows):
        if header_rows and k == 0:
            parts.append("<thead>")
        if header_rows and k == header_rows:
            parts.append("<tbody>")
        tag = "th" if k < header_rows else "td"
        parts.append("<tr>")
        for cell in row:
            c = cell if isinstance(cell, Cell) else Cell(cell)
            attrs = (f' colspan="{c.colspan}"' if c.colspan > 1 else "") + (
                f' rowspan="{c.rowspan}"' if c.rowspan > 1 else ""
            )
            parts.append(f"<{tag}{attrs}>{_cell_html(c.text)}</{tag}>")
        parts.append("</tr>")
        if header_rows and k == header_rows - 1:
            parts.append("</thead>")
    if header_rows:
        parts.append("</tbody>")
    parts.append("</table>")
    return "".join(parts)


def _label_row(row: Sequence[Cell | str]) -> bool:
    """A row that fills only its first cell: under the heads, the label of the group of rows below it
    ("Staff" over "Salaries", "Training"), which ends the header."""
    texts = [cell_text(c).strip() for c in row]
    return len(texts) > 1 and bool(texts[0]) and not any(texts[1:])


def _starts(rows: Sequence[Sequence[Cell]]) -> list[list[int]]:
    """The grid column each cell of each row starts in (cells spanning rows from above take their
    columns)."""
    below: dict[tuple[int, int], bool] = {}
    out: list[list[int]] = []
    for k, row in enumerate(rows):
        col = 0
        starts: list[int] = []
        for cell in row:
            while below.get((k, col)):
                col += 1
            starts.append(col)
            for dr in range(1, cell.rowspan):
                for dc in range(cell.colspan):
                    below[(k + dr, col + dc)] = True
            col += cell.colspan
        out.append(starts)
    return out


def stub_heads(rows: Sequence[Sequence[Cell | str]], header_rows: int) -> list[list[Cell]]:
    """In a header of several rows with heads over groups of columns, a head with nothing above or
    under it in its columns spans the header rows: "Site" beside "Nitrate (mg/l)" over "2024 2025" is
    one cell over both header rows, not a head over an empty cell (ICDAR 2013's ground truth spans
    such heads 38 times in 40). Without a group head the header rows may be one head read apart
    (ICDAR us-034: "Design effect" over a row of heads), and nothing moves."""
    grid = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in rows]
    if not any(c.colspan > 1 and c.text.strip() for row in grid[: header_rows - 1] for c in row):
        return grid  # no head over a group of columns: nothing tells the header's rows apart
    while (pair := _stub_pair(grid, header_rows)) is not None:
        k, i, m, j = pair
        upper, lower = grid[k][i], grid[m][j]
        grid[k][i] = Cell(upper.text or lower.text, upper.colspan, upper.rowspan + lower.rowspan)
        del grid[m][j]
    return grid


def _stub_pair(grid: list[list[Cell]], header_rows: int) -> tuple[int, int, int, int] | None:
    """A header cell and the one right under it, over the same columns and both in the header, one
    of them empty and the other not: ``(row, index, row under, index)``."""
    starts = _starts(grid)
    for k in range(header_rows - 1):
        for i, upper in enumerate(grid[k]):
            m = k + upper.rowspan
            if m >= header_rows:
                continue
            for j, lower in enumerate(grid[m]):
                if (
                    starts[m][j] == starts[k][i]
                    and lower.colspan == upper.colspan
                    and m + lower.rowspan <= header_rows
                    and bool(upper.text.strip()) != bool(lower.text.strip())
                ):
                    return k, i, m, j
    return None


_THEAD = re.compile(r"<thead>.*?</thead>", re.S)
_BODY_END = "</tbody></table>"


def continue_table(upper: str, lower: str) -> str | None:
    """``upper`` (a table as ``table_html`` writes it) with the body rows of ``lower`` when ``lower``
    repeats ``upper``'s header rows, else None. Browsers and word processors print a table's header
    again at the top of each column or page it runs into: a reader sees one table going on. An
    ``upper`` whose header was not read as one (its first row plain) takes it from the repeat
    (``_headed_by``)."""
    upper = _headed_by(upper, lower) or upper
    head, again = _THEAD.search(upper), _THEAD.search(lower)
    if not (head and upper.startswith("<table><thead>") and upper.endswith(_BODY_END)):
        return None
    if again and head.group(0) == again.group(0) and lower.startswith("<table><thead>"):
        tail = _drop_repeated_rows(upper[head.end() :], lower[again.end() :].removeprefix("<tbody>"))
        return _mend_break(upper[: -len(_BODY_END)], tail)
    # The header repeated, but not read as one on this page (its bold not seen, no rule under it): a
    # first row whose cells say what the header's cells say.
    first = _ROW.match(lower, len("<table>")) if lower.startswith("<table><tr>") else None
    heads = _TH.findall(head.group(0))
    if again or first is None or head.group(0).count("<tr>") != 1 or _TD.findall(first.group(1)) != heads:
        return None
    return _mend_break(upper[: -len(_BODY_END)], lower[first.end() : -len("</table>")] + _BODY_END)


def _headed_by(upper: str, lower: str) -> str | None:
    """``upper``, a table with no header rows, with its first row as its header where ``lower`` opens
    with the same cells (as its header or as a plain row), else None. Why: on a scan, a header set in
    small capitals on the paper's grey was read as a plain row above a page break, and as a header
    under it, where the row repeats alone over the table's last rows; the two parts stood as two
    tables. A row repeated at the top of the next part is the header a reader sees printed again."""
    first = _ROW.match(upper, len("<table>")) if upper.startswith("<table><tr>") else None
    if first is None or not upper.endswith("</table>"):
        return None
    cells = _TD.findall(first.group(1))
    if sum(1 for c in cells if c.strip() and not _VALUE.match(c.strip())) < MIN_HEAD_CELLS:
        return None
    again = _THEAD.search(lower)
    if again is not None and lower.startswith("<table><thead>"):
        repeated = again.group(0).count("<tr>") == 1 and _TH.findall(again.group(0)) == cells
    else:
        opening = _ROW.match(lower, len("<table>")) if lower.startswith("<table><tr>") else None
        repeated = opening is not None and _TD.findall(opening.group(1)) == cells
    if not repeated:
        return None
    head = "".join(f"<th>{c}</th>" for c in cells)
    body = upper[first.end() : -len("</table>")]
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}{_BODY_END}"


MIN_HEAD_CELLS = 2  # a repeated first row is a header only with this many cells of words


def _drop_repeated_rows(upper_body: str, lower_body: str) -> str:
    """``lower_body`` without its first rows where they repeat the first rows of ``upper_body`` (both
    as ``table_html`` writes a body), one row of the upper body at least left unrepeated. Why: a header
    of three lines on a scan ("Nitrate" over "(mg/l)" over "2024 2025") was read as one header row and
    two body rows, on both sides of the column break that Chromium repeats it across; joined, the two
    rows stood twice in the body."""
    above = [m.group(0) for m in _ANY_ROW.finditer(upper_body)]
    below = list(_ANY_ROW.finditer(lower_body))
    k = 0
    while (
        k < len(below)
        and k < len(above) - 1
        and below[k].group(0) == above[k]
        and below[k].start() == (below[k - 1].end() if k else 0)
    ):
        k += 1
    return lower_body[below[k - 1].end() :] if k else lower_body


_ANY_ROW = re.compile(r"<tr>.*?</tr>")
_ROW = re.compile(r"<tr>((?:<td>.*?</td>)+)</tr>")
_TD = re.compile(r"<td>(.*?)</td>")
_TH = re.compile(r"<th>(.*?)</th>")
MIN_KEYED_ROWS = 2  # body rows with a key that show the table keys every row


def _mend_break(head: str, tail: str) -> str:
    """``head`` (a table up to its last body row) and ``tail`` (the body rows that go on after a page
    or column break) as one table, the first row of ``tail`` joined to the last of ``head`` when it
    is that row's rest: its key cell empty where every other body row has a key, and no cell filled
    where the last row's is empty. Why: word processors let a row break across pages by default, so
    a wrapped description's last lines open the next page beside empty cells, under the repeated
    header."""
    last = list(_ROW.finditer(head))
    rows = list(_ROW.finditer(tail))
    if not last or not rows or rows[0].start() != 0:
        return head + tail
    above, below = _TD.findall(last[-1].group(1)), _TD.findall(rows[0].group(1))
    keys = [_TD.findall(m.group(1))[0] for m in (*last, *rows[1:])]
    if (
        len(above) != len(below)
        or below[0]
        or len(keys) < MIN_KEYED_ROWS
        or not all(keys)
        or any(b and not a for a, b in zip(above, below, strict=True))
        or not any(below)
    ):
        return head + tail
    cells = "".join(f"<td>{a} {b}</td>" if b else f"<td>{a}</td>" for a, b in zip(above, below, strict=True))
    return head[: last[-1].start()] + f"<tr>{cells}</tr>" + head[last[-1].end() :] + tail[rows[0].end() :]


def head_as_rest(upper: str, lower: str) -> str | None:
    """``lower`` with its one header row made its first body row, where that row reads as the rest of
    ``upper``'s last row broken over a page: its first cell empty, a cell that goes on in lower case
    ("ring road"), every filled cell under a filled one of that row, as many cells; else None. Why: a
    word processor breaks a row across pages, and on a scan the rest of it, shaded like the row,
    opened the next page's part as its header (the probe's word-wrapped-single: "ring road", "2026")."""
    head = _THEAD.search(lower)
    last = list(_ROW.finditer(upper))
    if head is None or not lower.startswith("<table><thead>") or head.group(0).count("<tr>") != 1 or not last:
        return None
    cells, above = _TH.findall(head.group(0)), _TD.findall(last[-1].group(1))
    if (
        len(cells) != len(above)
        or cells[0].strip()
        or not any(c[:1].islower() for c in cells)
        or any(c.strip() and not a.strip() for c, a in zip(cells, above, strict=True))
    ):
        return None
    row = "".join(f"<td>{c}</td>" for c in cells)
    body = lower[head.end() :].removesuffix("</table>").removeprefix("<tbody>").removesuffix("</tbody>")
    return f"<table><tr>{row}</tr>{body}</table>"


def append_rows(upper: str, lower: str) -> str | None:
    """``upper`` (a table with header rows, as ``table_html`` writes it) with the rows of ``lower``, a
    table of body rows only, as more of its body; None when they are not so written. Whether the rows
    do go on is the caller's reading (``render.markdown.rows_go_on``)."""
    if not (
        upper.startswith("<table><thead>") and upper.endswith(_BODY_END) and lower.startswith("<table><tr>")
    ):
        return None
    return (
        _mend_break(upper[: -len(_BODY_END)], lower.removeprefix("<table>").removesuffix("</table>"))
        + _BODY_END
    )


def cell_text(cell: Cell | str) -> str:
    return cell.text if isinstance(cell, Cell) else cell


def header_rows(heavy: list[bool | None], shaded: list[bool]) -> int:
    """Leading rows marked as a header: set heavier than the body rows, or shaded unlike them.

    ``heavy[k]`` says whether every line of row k is bold (None: an empty row). A table whose rows
    are all bold (or all shaded, or shaded in stripes) has no header we can tell; neither has one
    whose first row is plain.
    """
    n = 0
    while n < min(MAX_HEADER_ROWS, len(heavy) - 1) and heavy[n] is True:
        n += 1
    if n and any(h is False for h in heavy[n:]):
        return n
    n = 0
    while n < min(MAX_HEADER_ROWS, len(shaded) - 1) and shaded[n]:
        n += 1
    # Rows shaded again further down are stripes (a zebra table's piece that a page break starts on a
    # shaded row), not a header's ground.
    return n if n and not any(shaded[n:]) else 0
