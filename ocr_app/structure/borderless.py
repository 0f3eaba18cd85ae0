"""Tables without ruling lines, rebuilt from where the words stand (issue 25).

Why by hand: the libraries' text strategies (PyMuPDF ``find_tables(strategy="text")``, pdfplumber's
``text`` settings) take whole pages of prose for a grid — measured in docs/ACCURACY.md — and camelot's
stream mode and img2table need OpenCV/Ghostscript stacks for the same word-alignment idea. This pass
works on the positioned lines every engine gives (text layer and OCR alike):

1. **Rows**: lines sharing a baseline band. A *multi* row has ≥ 2 pieces a clear gap apart; a run
   is consecutive rows in the page's rhythm (no blank line): multi rows, rows the run's columns cut
   into cells that line up with theirs (``_on_grid``: cells set one space apart), and single lines
   between them that fit one column (wrapped cells; more of them where they interleave in two or
   more columns: cells centred on rows without padding), also above the first and below the last.
2. **Columns**: the white strips between the run's words (``word_columns``); a run whose pieces do
   not line up, whose "columns" are prose (full lines, long runs of words, or two columns that start
   where the page's prose does), or whose grid is mostly empty is no table.
3. **Cells**: each piece goes to the column its centre falls in; lines that overlap in height, or
   that the row rhythm (two sizes of gaps) joins, make one row; a row whose first column is empty
   while the table's first column is a key column continues the row above, as does a lone key line
   right under a full row; a short bold line right above the run that starts right of the first
   column is a spanning group header ("Year Ended") whose cell reaches to the table's right edge.
4. **Header**: leading rows set heavier than the body, else a first row of words over columns of
   numbers.

Each step is a room of its own: runs (1) in ``borderless_runs``, the prose checks of (2) in
``borderless_prose``, rows and cells (3) in ``borderless_rows``, the header (4) in
``borderless_heads``; this module builds a run's grid (``build_grid``) and finds a page's tables
(``find_grids``).

Duck-typed over lines with ``text``, ``box``, ``bold``, ``weight``, ``in_figure``, ``words`` (``layout.TextLine``),
so it imports nothing from ``layout``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence

from ocr_app.schema import union_box
from ocr_app.structure.borderless_heads import (
    centred_heads,
    group_header,
    group_tier,
    head_over,
    head_start,
    numeric_body_header,
    plain_heads,
    stacked_heads,
    stub_between,
)
from ocr_app.structure.borderless_prose import (
    justified_lines,
    prose_beside,
    prose_columns,
    prose_pairs,
    text_columns_of_page,
)
from ocr_app.structure.borderless_rows import Grid, merge_wrapped, pieces_text, place_pieces, row_bands
from ocr_app.structure.borderless_runs import centre_x, close_under, column_of, find_runs, is_heavy
from ocr_app.structure.centred_keys import key_spans, spread_keys, straddling
from ocr_app.structure.table_html import Cell, header_rows
from ocr_app.structure.word_columns import (
    NUMERIC,
    Piece,
    columns_between,
    cut,
    separators,
    split_numbers,
    words_of,
)

logger = logging.getLogger(__name__)


def _fullest(run: Sequence[Sequence[Piece]], plain: Sequence[Sequence[Piece]]) -> list[Sequence[Piece]]:
    """Rows to find the columns from when the body has fewer than two rows of cells (the first piece
    of a table the column broke): the body's rows and the header rows with about as many cells as the
    fullest row. A group's head over two columns ("Nitrate (mg/l)" over "2024" and "2025") covers
    the gap between them, so its row must not hide the columns (issue 30, round 10)."""
    most = max(len(r) for r in run)
    return [r for r in run if any(r is q for q in plain) or len(r) >= most - 1]


def build_grid(
    run: Sequence[Sequence[Piece]], body: float, above: Sequence[Piece] | None = None
) -> Grid | None:
    """One run of rows → a table, or None when the rows do not make one."""
    most = max(len(r) for r in run)
    if tier := group_tier(run, most):
        # Heads over column groups on the run's first lines (wrapped, "Nitrate" over "(mg/l)"), over a
        # full row of heads: read as the line over the table when they are heads over groups.
        heads = stacked_heads(run[:tier])
        grid = _build_grid(run[tier:], body, heads)
        if (
            grid is not None
            and all(any(h is q for q in grid.pieces) for h in heads)
            and sum(1 for c in grid.rows[0] if c.text) == len(heads)  # each head over its own group
        ):
            grid.pieces = [q for q in grid.pieces if not any(q is h for h in heads)]
            grid.pieces += [p for r in run[:tier] for p in r]  # the lines themselves, as the page has them
            grid.box = union_box([p.box for p in grid.pieces])
            return grid
    return _build_grid(run, body, above)


def _build_grid(
    run: Sequence[Sequence[Piece]], body: float, above: Sequence[Piece] | None = None
) -> Grid | None:
    originals = [p for r in run for p in r]
    most = max(len(r) for r in run)
    run = [split_numbers(r, most) for r in run]
    # Columns from the body rows where there are enough: a header cell wider than its column must
    # not merge two columns.
    plain = [r for r in run if not all(is_heavy(p) for p in r)]
    basis = plain
    if sum(1 for r in plain if len(r) >= 2) < 2:
        # Too few body rows to find the columns from (the first piece of a table the column broke):
        # a first header row of fewer cells than the fullest rows holds heads over column groups,
        # read as such (``group_header``), and the columns come from the rows below it.
        if above is None and len(run) >= 3 and all(map(is_heavy, run[0])) and len(run[0]) < most - 1:
            above, run = run[0], run[1:]
            originals = [p for r in run for p in r]
        basis = _fullest(run, plain)
    # Single lines (wrapped cells) must leave a column gap white, but only rows of two or more
    # cells make one: a line set further right than every cell is a cell's continuation.
    spread = [w for r in basis if len(r) >= 2 for p in r for w in words_of(p)]
    seps = [
        s
        for s in separators(basis, body)
        if any(w[2] <= s[0] + 0.05 * body for w in spread) and any(w[1] >= s[1] - 0.05 * body for w in spread)
    ]
    run = [cut(r, seps, body) for r in run]
    multis = [r for r in run if len(r) >= 2]
    cols = columns_between(basis, seps)
    if len(cols) < 2 or len(multis) < 2:
        return None
    if len(cols) > max(len(r) for r in run) + 1 or prose_columns(multis, cols):
        return None
    filled = sum(len({column_of(p, cols) for p in r}) for r in multis)
    if filled < 0.45 * len(cols) * len(multis):
        return None
    run, keys = straddling(run, lambda p: column_of(p, cols))
    grid = merge_wrapped(spread_keys(place_pieces(row_bands(run, cols), cols), keys, is_heavy))
    if len(grid) < 2:
        return None
    texts = [[pieces_text(c) for c in r] for r in grid]
    if (len(cols) == 2 and prose_pairs(texts)) or justified_lines(grid, texts, body):
        return None
    heavy = [all(is_heavy(p) for c in r for p in c) if any(r) else None for r in grid]
    head = header_rows(heavy, []) or numeric_body_header(texts)
    # A bold row of its first cell alone under the heads is the first section's label, not a head.
    head = next((k for k in range(1, head) if texts[k][0] and not any(texts[k][1:])), head)
    pieces = originals
    if above and head and (c := head_start(above, grid[0])) is not None:
        texts[0][c] = pieces_text([*sorted(above, key=lambda p: p.box[0]), *grid[0][c]])
        pieces, above = [*originals, *above], None
    rows = _spanned_rows(texts, key_spans(grid))
    group = group_header(above, cols, body) if head or any(heavy[:1]) else None
    if group is None and not head and above and plain_heads(above, cols):
        # Heads in the body's weight (italic, say), one centred over each column of a table with no
        # header of its own (dvipdfm's "Option" over "-c", "Description" over the descriptions):
        # the table's header row, not a line of text over it (issue 30, round 24).
        rows.insert(0, [Cell(pieces_text([p])) for p in sorted(above, key=lambda p: p.box[0])])
        return Grid(
            rows=rows,
            header_rows=1,
            pieces=[*pieces, *above],
            box=union_box([p.box for p in [*pieces, *above]]),
            columns=cols,
        )
    if group is not None:
        rows.insert(0, group)
        head = max(head, 1) + 1
        pieces += list(above or ())
    return Grid(
        rows=rows, header_rows=head, pieces=pieces, box=union_box([p.box for p in pieces]), columns=cols
    )


def _spanned_rows(texts: list[list[str]], spans: list[int]) -> list[list[Cell]]:
    """The rows' cells, a key over several rows (``centred_keys``) one cell spanning them."""
    rows = []
    for r, n in zip(texts, spans, strict=True):
        cells = [Cell(t) for t in r]
        rows.append(cells[1:] if n == 0 else [Cell(r[0], rowspan=n), *cells[1:]] if n > 1 else cells)
    return rows


def side_by_side(run: Sequence[Sequence[Piece]]) -> tuple[float, int] | None:
    """The x between two tables set side by side and read as one run: a row of heads whose first
    head comes again further right ("Region Cost Change | Region Staff Change"), after the widest
    gap of that row, with two heads or more on each side, and under it rows whose first cell on each
    side is a label (words, not figures): each table has a column of labels of its own. Heads over
    column groups ("2009 2010 | 2009 2010") repeat too, but figures stand under the second group's
    first head. The x and the index of the row of heads; None: one table."""
    for n, row in enumerate(run):
        heads = sorted(row, key=lambda p: p.box[0])
        if len(heads) < 4:
            continue
        gaps = [b.box[0] - a.box[2] for a, b in itertools.pairwise(heads)]
        for k in range(2, len(heads) - 1):
            if heads[k].text.strip() == heads[0].text.strip() and gaps[k - 1] >= max(gaps):
                split = (heads[k - 1].box[2] + heads[k].box[0]) / 2
                if _labels_on_both_sides(run[n + 1 :], split):
                    return split, n
    return None


def _labels_on_both_sides(rows: Sequence[Sequence[Piece]], split: float) -> bool:
    """Whether most rows start each side of ``split`` with a label (a piece that is no figure)."""
    firsts = [
        [min(side, key=lambda p: p.box[0]) for side in (left, right)]
        for r in rows
        if (left := [p for p in r if centre_x(p) < split])
        and (right := [p for p in r if centre_x(p) >= split])
    ]
    labels = sum(1 for a, b in firsts if not NUMERIC.match(a.text) and not NUMERIC.match(b.text))
    return len(firsts) >= 2 and labels >= 0.7 * len(firsts)


def _halves(run: Sequence[Sequence[Piece]], split: float) -> list[list[Sequence[Piece]]]:
    """The run's rows cut at ``split`` into the left table's and the right one's, each without the
    lines of one piece over it (its title: text, not a row)."""
    out = []
    for left in (True, False):
        half = [kept for r in run if (kept := [p for p in r if (centre_x(p) < split) == left])]
        while half and len(half[0]) == 1:
            half = half[1:]
        out.append(half)
    return out


def find_grids(rows: Sequence[Sequence[Piece]], body: float, page_width: float) -> list[Grid]:
    """All borderless tables among the page's rows (top to bottom); two tables set side by side
    (``side_by_side``) are read one by one (issue 30, round 11)."""
    grids: list[Grid] = []
    taken = -1
    sources: dict[int, tuple[Piece, list[Piece]]] = {}  # heads joined from lines centred in their cells
    runs = find_runs(rows, body, page_width)
    for first, last in runs:
        above = rows[first - 1] if first - 1 > taken and first > 0 else None
        if above is not None and first - 2 > taken and stub_between(rows[first - 2], above, rows[first]):
            above = [*rows[first - 2], *above]
        elif above is not None and not close_under(above, rows[first]):
            above = None
        elif above is not None and not head_over(above, rows[first]):
            # (heads that run on into the run's first row are read with it, as before)
            above = centred_heads(rows, first - 1, taken, sources) or above
        run = rows[first : last + 1]
        others = [*rows[:first], *rows[last + 1 :]]
        pair = side_by_side(run)
        if pair is not None:
            found = [
                g for h in _halves(run, pair[0]) if len(h) >= 2 and (g := build_grid(h, body)) is not None
            ]
        else:
            found = [g for g in [build_grid(run, body, above)] if g is not None]
        for grid in found:
            if not text_columns_of_page(grid, others, body, page_width) and not prose_beside(
                grid, others, body, page_width
            ):
                grid.pieces = [
                    q for p in grid.pieces for q in (sources[id(p)][1] if id(p) in sources else [p])
                ]
                grids.append(grid)
                taken = last
    logger.debug("borderless: %d runs → %d tables", len(runs), len(grids))
    return grids
