"""Tables: contents lists and tables without rules from word positions (``structure.borderless``),
on the whole page and inside one column of a page with columns, then the tables and forms the
engine found itself (ruled grids). Each table becomes one ``Table`` item, so the columns pass sees
it as a single block.

Why first among the layout passes: rows of cells side by side look like text columns; taken out as
tables, they cannot pose as a gutter.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ocr_app.schema import union_box
from ocr_app.structure.borderless import find_grids
from ocr_app.structure.lines import LayoutConfig, Row, Table, TextLine, group_rows, listing_rows, margin_label
from ocr_app.structure.passes.columns import find_gutter
from ocr_app.structure.running_text import list_columns, prose_grid
from ocr_app.structure.table_html import Cell, cell_text

if TYPE_CHECKING:
    from ocr_app.schema import Box
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    found, rest = detect_tables(page.lines, page.page_width, page.config, page.body)
    # a grid of words whose columns are running text side by side (narrow justified columns line their
    # rows up like a table's: the GNU FDL set in seven columns), or one indented list set in columns,
    # is text
    prose = [
        t
        for t in found
        if not t.contents and (prose_grid(t.items, page.lines, page.body) or list_columns(t.items, page.body))
    ]
    if prose:
        gone = {id(t) for t in prose}
        found = [t for t in found if id(t) not in gone]
        rest = [*rest, *(ln for t in prose for ln in t.items)]
    given_heads = [_head_texts(t[1], t[2]) for t in page.given_tables if len(t) > 2]
    beside, rest = tables_beside_a_gutter(
        rest, page.page_width, page.config, page.body, [*given_heads, *(_heads(t) for t in found)]
    )
    if page.containers:
        # Panels side by side (a slide's three boxes, each a title and its bullets) line their rows up
        # like a table's: read each panel whole instead (``passes.columns``).
        panels = [t for t in [*found, *beside] if across_panels(t, page.containers)]
        if panels:
            gone = {id(t) for t in panels}
            found = [t for t in found if id(t) not in gone]
            beside = [t for t in beside if id(t) not in gone]
            rest = [*rest, *(ln for t in panels for ln in t.items)]
    if page.table_regions is not None:
        # The layout model looked at this page: a grid of words it does not call a table is text.
        heads = [h for h in [*given_heads, *(_heads(t) for t in [*found, *beside])] if h]
        found, dropped = _split(found, page.table_regions, page.text_regions, heads)
        beside, dropped2 = _split(beside, page.table_regions, page.text_regions, heads)
        taken = {id(it) for t in [*dropped, *dropped2] for it in t.items}
        taken |= {id(ln) for ln in rest}
        rest = [ln for ln in page.lines if id(ln) in taken]
    page.lines = rest
    given = [
        Table(box=t[0], rows=t[1], header_rows=t[2] if len(t) > 2 else 0) for t in page.given_tables if t[1]
    ]
    forms = [Table(box=b, rows=r, form=True) for b, r in page.given_forms if r]
    # Figures were found first but are ordered with the tables, as before the passes existed.
    figures, page.found = page.found, []
    page.found = [*join_split(found, beside, page.body), *given, *forms, *figures]


INSIDE_SHARE = 0.95  # a line this much on a container stands on it


def across_panels(table: Table, containers: Sequence[Box]) -> bool:
    """Whether a word grid is panels side by side: every line of it lies on a container (a filled
    ground at least four body lines tall and wide, ``PageLayout.containers``), and they lie on two or
    more containers apart in x. A table stands on one ground (or none); cells or rows filled one by
    one are smaller than a container, and a highlighted column leaves the label column off it."""
    from ocr_app.structure.regions import overlap

    if not table.items or table.contents or table.form:
        return False
    held: set[int] = set()
    for ln in table.items:
        k = next((k for k, c in enumerate(containers) if overlap(ln.box, c) >= INSIDE_SHARE), None)
        if k is None:
            return False
        held.add(k)
    boxes = [containers[k] for k in held]
    return any(a[2] <= b[0] or b[2] <= a[0] for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def _width(t: Table) -> int:
    return max((sum(c.colspan if isinstance(c, Cell) else 1 for c in row) for row in t.rows), default=0)


def join_split(found: list[Table], beside: list[Table], body: float) -> list[Table]:
    """``found`` and ``beside``, a table of ``beside`` joined with the headless rest of it in ``found``.

    Why: on a page of two columns, the page-wide pass takes a table's last rows where the other column
    has already ended (nothing stands beside them), and the pass over one column then finds the table's
    head and first rows: one table came out as two (docling's table_mislabeled_as_picture: 3 + 4 rows).
    The lower part is the rest when it has no header row of its own, the same columns, the same left
    and right edges (within a body size), and starts within two body sizes under the upper part."""
    if not found or not beside:
        return [*found, *beside]
    out = list(found)
    for up in beside:
        for low in out:
            if (
                not low.header_rows
                and not (low.contents or low.form or up.contents or up.form)
                and _width(low) == _width(up)
                and 0 <= low.box[1] - up.box[3] <= 2 * body
                and abs(low.box[0] - up.box[0]) <= body
                and abs(low.box[2] - up.box[2]) <= body
            ):
                out.remove(low)
                up = Table(
                    box=union_box([up.box, low.box]), rows=[*up.rows, *low.rows], size=up.size,
                    items=[*up.items, *low.items], header_rows=up.header_rows,
                )  # fmt: skip
                break
        out.append(up)
    return out


SMALL_GRID_ROWS = 3  # a grid of this many rows or fewer needs the layout model's word to be a table


def _heads(table: Table) -> tuple[tuple[str, ...], ...]:
    """A grid's header rows as texts (empty without a header row)."""
    return _head_texts(table.rows, table.header_rows)


def _head_texts(rows: Sequence[Sequence[Cell | str]], header_rows: int) -> tuple[tuple[str, ...], ...]:
    """The first ``header_rows`` rows as texts: the heads of a word grid or of a table the engine read."""
    return tuple(tuple(_cell(c) for c in r) for r in rows[:header_rows])


def _cell(c: Cell | str) -> str:
    return cell_text(c).strip()


def _split(
    tables: list[Table],
    regions: Sequence[Box],
    texts: Sequence[Box] = (),
    heads: Sequence[tuple[tuple[str, ...], ...]] = (),
) -> tuple[list[Table], list[Table]]:
    """Tables to keep and grids that are text: a grid of two or three rows (label/value pairs of a
    footnote or legend, a chart's labels) that lies in no table region of the layout model, unless its
    header rows are those of another grid on the page (the first rows of a table a column broke, its
    head repeated over the rest: ``join_repeated_heads`` makes them one), or a
    grid of words there whose columns the model reads as blocks of text side by side
    (``_text_side_by_side``). Other larger grids stay: the model misses tables without rulings that
    the word positions find (issue 25's sets), and tables of contents are told by their dot leaders."""
    from ocr_app.structure.regions import overlap

    keep, drop = [], []
    for t in tables:
        head = _heads(t)
        repeated = bool(head) and sum(1 for h in heads if h == head) >= 2
        small = len(t.rows) <= SMALL_GRID_ROWS and not _headed_figures(t) and not repeated
        inside = any(overlap(t.box, r) >= 0.5 for r in regions)
        text = not inside and _text_side_by_side(t, texts)
        (drop if ((small and not inside) or text) and not t.contents else keep).append(t)
    return keep, drop


def _headed_figures(table: Table) -> bool:
    """Whether a small grid is a table by its own look: header rows in bold over ≥ 3 columns, every
    column headed (by a head of its own or one over its group), and a figure in each body row (the
    rows a table carried over to the top of the next page or slide, under its repeated heads; the
    first rows of one a column broke). Label/value pairs and a chart's labels have no such header
    (round 10)."""
    from ocr_app.structure.word_columns import is_figure

    if not table.header_rows or len(table.rows) <= table.header_rows or table.contents:
        return False

    def spread(row: Sequence[Cell | str]) -> list[str]:  # one text a column, a spanning head over each
        return [_cell(c) for c in row for _ in range(c.colspan if isinstance(c, Cell) else 1)]

    heads = [spread(r) for r in table.rows[: table.header_rows]]
    body = table.rows[table.header_rows :]
    width = len(heads[-1])
    return (
        width >= 3
        and all(len(h) == width for h in heads)
        and all(any(h[k] for h in heads) for k in range(width))  # every column headed
        and all(any(is_figure(_cell(c)) for c in r[1:]) for r in body)
    )


MIN_COLUMN_SHARE = 0.2  # a column of text boxes holding less of a grid's lines than this is a stray caption
MAX_FIGURE_CELLS = 0.2  # a grid with more cells of figures than this is a table whatever its boxes
NESTED_SHARE = 0.9  # a text box this much inside a larger one is a piece of the same block


def _text_side_by_side(table: Table, texts: Sequence[Box]) -> bool:
    """Whether the layout model reads a word grid as two or more blocks of text side by side (apart
    in x, each holding a good share of the grid's lines, together nearly all; a column may be several
    blocks one under the other, its paragraphs and its footnotes, as on ICDAR's us-001 where three
    columns of text over their footnotes were read as a table): two columns of a glossary, a list or
    short lines of verse, not one table. Text is set flush left in each of its
    columns (``_flush_left``); a table's column of words may be set flush right or centred (ICDAR
    2013's us-019: labels beside right-aligned notes, which the model boxes as two blocks of text).
    A grid of figures stays a table (the model boxes a table it misses as text too, but its cells
    then hold numbers)."""
    from ocr_app.structure.regions import overlap
    from ocr_app.structure.word_columns import NUMERIC

    cells = [t for r in table.rows for c in r if (t := _cell(c))]
    if not cells or sum(1 for c in cells if NUMERIC.match(c)) > MAX_FIGURE_CELLS * len(cells):
        return False
    lines = table.items
    if not lines:
        return False

    def inside(box: Box) -> list[TextLine]:
        return [
            ln
            for ln in lines
            if box[0] <= (ln.box[0] + ln.box[2]) / 2 <= box[2]
            and box[1] <= (ln.box[1] + ln.box[3]) / 2 <= box[3]
        ]

    def held(box: Box) -> int:
        return len(inside(box))

    # Narrowest first: a box the model drew over both columns as well does not hide the two.
    blocks = sorted((b for b in texts if held(b)), key=lambda b: b[2] - b[0])
    apart: list[Box] = []
    for b in blocks:
        # beside the others or under them (a column's paragraphs and its footnotes), not over them
        over = [a for a in apart if not (b[0] >= a[2] or b[2] <= a[0] or b[1] >= a[3] or b[3] <= a[1])]
        if not over:
            apart.append(b)
        elif len(over) == 1 and overlap(over[0], b) >= NESTED_SHARE:
            # a weak box over a column's first lines inside the box of its whole paragraph: the
            # paragraph's box stands for the column
            apart[apart.index(over[0])] = b
    columns: list[list[Box]] = []  # the blocks stacked in one column of text
    for b in sorted(apart, key=lambda b: b[0]):
        if columns and any(min(b[2], a[2]) > max(b[0], a[0]) for a in columns[-1]):
            columns[-1].append(b)
        else:
            columns.append([b])
    columns = [col for col in columns if sum(held(b) for b in col) >= MIN_COLUMN_SHARE * len(lines)]
    apart = [b for col in columns for b in col]
    return (
        len(columns) >= 2
        and sum(held(b) for b in apart) >= 0.8 * len(lines)
        and all(_flush_left([ln for b in col for ln in inside(b)]) for col in columns)
    )


FLUSH_SHARE = 0.8  # this share of a column's lines starting at its left edge: the column is set flush left
HANG = 2.0  # × the line height: a line starting this close right of the edge starts there (a hanging mark)


def _flush_left(lines: Sequence[TextLine]) -> bool:
    """Whether most lines start at the same x, give or take an indent (``HANG`` line heights): text set
    flush left, its bullets and footnote marks hanging ("• Approximately …" over "people (18.7
    percent)", "⁸ S2601A …" over "Quarters Population …" on ICDAR's us-001). Notes set flush right
    start their lines far apart (us-019)."""
    left = min(ln.box[0] for ln in lines)
    return sum(1 for ln in lines if ln.box[0] - left <= HANG * (ln.box[3] - ln.box[1])) >= FLUSH_SHARE * len(
        lines
    )


def detect_tables(
    lines: Sequence[TextLine], page_width: float, config: LayoutConfig, body: float
) -> tuple[list[Table], list[TextLine]]:
    """Tables of contents, then tables without rules (``borderless``); the tables and the lines that
    are not in one."""
    rows = group_rows(lines)
    tables, rows = _contents_tables(rows)
    # A row wholly in a monospaced font is a line of a listing, its columns set with spaces: it stays
    # code, and parts the rows around it (a table whose cells are partly code still reads as one). So
    # does a line of code with a label beside it (rustdoc's "1.0.0 ·"): no row of two cells.
    listings = listing_rows(rows) | {id(r) for r in rows if margin_label(r) is not None}
    for listing, run in itertools.groupby(rows, key=lambda r: id(r) in listings):
        if listing:
            continue
        for grid in find_grids([r.items for r in run], body, page_width):
            size = statistics.median(it.size for it in grid.pieces)
            tables.append(
                Table(
                    box=grid.box, rows=grid.rows, size=size, items=grid.pieces, header_rows=grid.header_rows
                )
            )
    used = {id(it) for t in tables for it in t.items}
    rest = [ln for ln in lines if id(ln) not in used]
    return tables, rest


# The title keeps its dot leaders, as printed; the page number is the second cell.
_CONTENTS_ROW = re.compile(r"^(?P<title>.*?\w.*?(?:\s*\.){3,})\s*(?P<page>\d{1,4}|[ivxlcdm]{1,7})$", re.I)
# How a contents row ends, which it must: dot leaders, then the page number.
_CONTENTS_END = re.compile(r"(?:\s*\.){3,}\s*(?:\d{1,4}|[ivxlcdm]{1,7})$", re.I)


def contents_row(text: str) -> re.Match[str] | None:
    """``_CONTENTS_ROW.match(text)``, tried only on a text that ends as a contents row does.

    Why: the title's two lazy runs make a match that fails try every way of cutting the text in
    three, in time that grows with the cube of its length. A chart's scattered value labels, grouped
    into rows of dozens of numbers, were most of the 488 CPU s a page of 2,000 labels took."""
    if text.count(".") < 3 or not _CONTENTS_END.search(text):
        return None
    return _CONTENTS_ROW.match(text)


def _contents_tables(rows: list[Row]) -> tuple[list[Table], list[Row]]:
    """Runs of ≥ 3 rows "title . . . . page" (a table of contents) → two-column tables (title, page).

    Entries set in columns side by side (an index, a contents page in two columns) are read column by
    column: a row across the page held two entries ("asn1Coding program . . . 5" beside "Main type asn1
    node . . . 4"), which made one title of both, and the columns were read across (issue 30, round 24)."""
    cuts = _entry_columns(rows)
    if cuts:
        tables: list[Table] = []
        rest: list[Row] = []
        bounds = [float("-inf"), *cuts, float("inf")]
        for lo, hi in itertools.pairwise(bounds):
            column = [ln for r in rows for ln in r.items if lo <= (ln.box[0] + ln.box[2]) / 2 < hi]
            found, others = _contents_runs(group_rows(column))
            tables += found
            rest += others
        return tables, sorted(rest, key=lambda r: (r.box[1] + r.box[3]) / 2)
    return _contents_runs(rows)


MIN_SIDE_BY_SIDE = 2  # rows holding two contents entries or more side by side: the entries stand in columns


def _entries(row: Row) -> list[list[TextLine]] | None:
    """The row's lines cut into contents entries ("title . . . page"), left to right; None when its
    lines do not all fall into entries."""
    out: list[list[TextLine]] = []
    run: list[TextLine] = []
    text = ""  # the run's texts joined, grown piece by piece
    for ln in sorted(row.items, key=lambda i: i.box[0]):
        text = f"{text} {ln.text.strip()}" if run else ln.text.strip()
        run.append(ln)
        if contents_row(text):
            out.append(run)
            run = []
    return out if out and not run else None


def _entry_columns(rows: list[Row]) -> list[float]:
    """Where columns of contents entries part (x between two entries side by side), or [] when no
    ``MIN_SIDE_BY_SIDE`` rows hold two entries or more, or their gaps do not line up."""
    gaps: list[list[tuple[float, float]]] = []
    for row in rows:
        entries = _entries(row)
        if entries and len(entries) >= 2:
            edges = [
                (max(i.box[2] for i in a), min(i.box[0] for i in b)) for a, b in itertools.pairwise(entries)
            ]
            gaps.append(edges)
    if len(gaps) < MIN_SIDE_BY_SIDE:
        return []
    most = max(len(g) for g in gaps)
    widest = [g for g in gaps if len(g) == most]
    cuts = []
    for k in range(most):
        left, right = max(g[k][0] for g in widest), min(g[k][1] for g in widest)
        if left >= right:
            return []  # the entries' gaps do not line up: no columns
        cuts.append((left + right) / 2)
    return cuts


def _contents_runs(rows: list[Row]) -> tuple[list[Table], list[Row]]:
    """``_contents_tables`` on rows of one column."""
    tables: list[Table] = []
    rest: list[Row] = []
    run: list[tuple[Row, re.Match[str]]] = []

    def close() -> None:
        if len(run) >= 3:
            table = Table(
                box=union_box([r.box for r, _ in run]),
                rows=[[m.group("title").strip(), m.group("page")] for _, m in run],
                size=statistics.median(r.size for r, _ in run),
                contents=True,
            )
            table.items = [it for r, _ in run for it in r.items]
            tables.append(table)
        else:
            rest.extend(r for r, _ in run)
        run.clear()

    matches = [contents_row(row.text.strip()) for row in rows]
    ends = [max(i.box[2] for i in row.items) for row, m in zip(rows, matches, strict=True) if m]
    for row, m in zip(rows, matches, strict=True):
        m = m or (_unled_entry(row, ends) if len(ends) >= 3 else None)
        if m:
            run.append((row, m))
        else:
            close()
            rest.append(row)
    close()
    return tables, rest


# A contents entry set without leaders: its title, then its page number apart.
_UNLED_ROW = re.compile(r"^(?P<title>.*?\w.*?)\s+(?P<page>\d{1,4}|[ivxlcdm]{1,7})$", re.I)


def _unled_entry(row: Row, ends: list[float]) -> re.Match[str] | None:
    """A contents entry without dot leaders among entries with them: a chapter's line set bold with its
    page number and no leaders ("6 Encryption" over "6.1 Encryption Support . . . 41", as xdvipdfmx's
    manual sets its contents). Its page number stands apart, flush with the leader rows' numbers (half
    a line either way). Without it a chapter line ended each run, runs of fewer than three entries were
    no contents, and their spaced leader dots made columns of a word grid (issue 30, round 24)."""
    items = sorted(row.items, key=lambda i: i.box[0])
    if len(items) < 2:
        return None
    last = items[-1]
    if not re.fullmatch(r"\d{1,4}|[ivxlcdm]{1,7}", last.text.strip(), re.I):
        return None
    tolerance = 0.5 * (last.box[3] - last.box[1])
    if not any(abs(last.box[2] - e) <= tolerance for e in ends):
        return None
    return _UNLED_ROW.match(row.text.strip())


def tables_beside_a_gutter(
    lines: list[TextLine],
    page_width: float,
    config: LayoutConfig,
    body: float,
    heads: Sequence[tuple[tuple[str, ...], ...]] = (),
) -> tuple[list[Table], list[TextLine]]:
    """Tables inside one column of a page with columns (a two-page spread): their rows share
    baselines with text of the other column, so the whole-page search cannot see them. ``heads``:
    the header rows of the page's other tables."""
    gutter = find_gutter(lines, config, body, beside_text=True)
    if gutter is None:
        return [], lines
    mid = (gutter[0] + gutter[1]) / 2
    left = [ln for ln in lines if ln.box[2] <= mid]
    right = [ln for ln in lines if ln.box[0] >= mid]
    rest = [ln for ln in lines if not (ln.box[2] <= mid or ln.box[0] >= mid)]
    sides = [detect_tables(side, page_width / 2, config, body) for side in (left, right)]
    known = [*heads, *(_heads(t) for tables, _ in sides for t in tables)]
    found: list[Table] = []
    for side, (tables, others) in zip((left, right), sides, strict=True):
        for table in tables:
            # Only clear grids here (≥ 3 rows of ≥ 3 filled cells): inside a text column, two short
            # lines side by side are more often a heading beside a figure label than a table. A grid
            # whose header rows another table on the page repeats is the first piece of a table the
            # column broke (its head and one row).
            head = _heads(table)
            if (len(table.rows) >= 3 and all(sum(1 for c in r if c) >= 3 for r in table.rows)) or (
                head and sum(1 for h in known if h == head) >= 2
            ):
                found.append(table)
            else:
                ids = {id(it) for it in table.items}
                others += [ln for ln in side if id(ln) in ids]
        rest += others
    return found, rest
