"""Step 4 of a table without rules: its header rows and the heads over column groups.

Why: a header is what makes a grid of figures readable, and a spanning head ("Year Ended") lost or
read as a heading of the page breaks the table. Leading rows set heavier than the body, a first row of
words over columns of numbers, heads centred over their columns and short heavy lines over groups of
columns are read as the header, with the columns each head spans.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from ocr_app.schema import Box, union_box
from ocr_app.structure.borderless_rows import pieces_text
from ocr_app.structure.borderless_runs import (
    HEAD_WORDS,
    MEASURE,
    close_under,
    column_of,
    heads_over_columns,
    is_heavy,
    line_height,
    x_share,
    x_stacks,
)
from ocr_app.structure.table_html import MAX_HEADER_ROWS, Cell
from ocr_app.structure.word_columns import FLUSH, NUMERIC, Part, Piece, centred_span


def numeric_body_header(texts: list[list[str]]) -> int:
    """1 when the first row is words over columns that are numbers in the rows below, else 0."""
    if len(texts) < 3 or not all(texts[0]) or any(NUMERIC.match(t) for t in texts[0] if t):
        return 0
    numeric_cols = [
        c
        for c in range(len(texts[0]))
        if sum(1 for r in texts[1:] if r[c] and NUMERIC.match(r[c])) >= 0.6 * (len(texts) - 1)
    ]
    return 1 if numeric_cols else 0


def head_start(above: Sequence[Piece], heads: list[list[Piece]]) -> int | None:
    """The column whose head ``above`` begins: a heavy line right over one head of the first row, a
    line's spacing above it (under a quarter line), over no other head, while the row's other heads
    stand in the middle of the two lines. The first line of a head that wraps more than its
    neighbours ("Budget" over "(€m)"), not a group head over several columns ("Year Ended" over a
    row of years)."""
    if not all(is_heavy(p) for p in above):
        return None
    box = union_box([p.box for p in above])
    under = [
        c
        for c, cell in enumerate(heads)
        if cell
        and min(box[2], (b := union_box([p.box for p in cell]))[2]) - max(box[0], b[0])
        >= 0.5 * min(box[2] - box[0], b[2] - b[0])
    ]
    if len(under) != 1:
        return None
    b = union_box([p.box for p in heads[under[0]]])
    height = box[3] - box[1]
    if b[1] - box[3] > 0.25 * height:
        return None
    # The other heads stand in the middle of the two lines, less than a line under this one; a group
    # head ("Year Ended") stands a full line over a row of heads all on one line.
    others = [p for c, cell in enumerate(heads) if c != under[0] for p in cell]
    if not others or any(p.box[1] - box[1] >= MIDDLE_SET * height for p in others):
        return None
    return under[0]


MIDDLE_SET = 0.75  # × a line: a head set in the middle of two lines starts less than this under the first


def group_header(above: Sequence[Piece] | None, cols: list[list[float]], body: float) -> list[Cell] | None:
    """A short heavy line right above the table, right of its first column: a header over the
    columns it is centred over (``centred_span``), else from the one it starts in to the table's
    right edge."""
    if not above or not all(is_heavy(p) for p in above):
        return None
    if len(above) >= 2 and (heads := _group_heads(above, cols, body)) is not None:
        return heads
    if len(" ".join(p.text for p in above).split()) > 6:
        return None
    box = union_box([p.box for p in above])
    if box[0] <= cols[0][1] or box[2] > cols[-1][1] + body:
        return None
    span = centred_span(box[0], box[2], cols, body)
    start, end = span if span else (column_of(min(above, key=lambda p: p.box[0]), cols), len(cols) - 1)
    if start == 0:
        return None
    text = pieces_text(sorted(above, key=lambda p: p.box[0]))
    return [Cell("")] * start + [Cell(text, colspan=end + 1 - start)] + [Cell("")] * (len(cols) - 1 - end)


def _left_set_span(
    pieces: Sequence[Piece], k: int, cols: list[list[float]], body: float
) -> tuple[int, int] | None:
    """The columns a head set flush left over its group covers: from the column it starts at (its
    left edge at that column's) to the column before the next head's, or the last one. It must end
    over its last column (a body height past it; over the table's last columns, half the group's
    width: a head wider than its figures)."""
    start = next((c for c, col in enumerate(cols) if abs(pieces[k].box[0] - col[0]) <= 0.5 * body), None)
    if start is None or start == 0:
        return None
    if k + 1 < len(pieces):
        end = next(
            (c - 1 for c, col in enumerate(cols) if abs(pieces[k + 1].box[0] - col[0]) <= 0.5 * body), None
        )
    else:
        end = len(cols) - 1
    if end is None or end <= start:
        return None
    # A head may reach past its last column's figures, by up to half the group's width over the
    # table's last columns (no next head bounds it there).
    reach = body if k + 1 < len(pieces) else max(body, 0.5 * (cols[end][1] - cols[start][0]))
    return (start, end) if pieces[k].box[2] <= cols[end][1] + reach else None


def _covered_span(
    p: Piece, cols: list[list[float]], blocked: Sequence[int], body: float
) -> tuple[int, int] | None:
    """The columns a head as wide as their figures, or wider, covers: two or more columns whose ink
    lies whole under it, none of another column's under it ("Nitrate (mg/l)" over right-aligned
    "2024 2025", ending where they end: neither centred by a margin nor set from the first one's
    edge, ``centred_span`` leaves it)."""
    tol = FLUSH * body
    under = [c for c, col in enumerate(cols) if p.box[0] - tol <= col[0] and col[1] <= p.box[2] + tol]
    touched = [c for c, col in enumerate(cols) if col[0] < p.box[2] and p.box[0] < col[1]]
    if len(under) < 2 or touched != under or any(c in blocked for c in under):
        return None
    return under[0], under[-1]


def _group_heads(above: Sequence[Piece], cols: list[list[float]], body: float) -> list[Cell] | None:
    """Heads a clear gap apart on the line right above the table, each centred over a run of its
    columns between its neighbours ("Nitrate (mg/l)" and "Phosphate (mg/l)", each over "2024 2025"),
    none over the first but its own head: one header cell each, spanning its run; else None."""
    pieces = sorted(above, key=lambda p: p.box[0])
    if any(len(p.text.split()) > 6 for p in pieces):
        return None
    spans: list[tuple[int, int]] = []
    for k, p in enumerate(pieces):
        lo = pieces[k - 1].box[2] if k else float("-inf")
        hi = pieces[k + 1].box[0] if k + 1 < len(pieces) else float("inf")
        beyond = [c for c, col in enumerate(cols) if not lo < (col[0] + col[1]) / 2 < hi]
        if k == 0 and len(cols) > 1 and p.box[0] <= cols[0][1] and p.box[2] < cols[1][0]:
            spans.append((0, 0))  # the first column's own head, set as its cells are
            continue
        span = (
            centred_span(p.box[0], p.box[2], cols, body, beyond)
            or _left_set_span(pieces, k, cols, body)
            or _covered_span(p, cols, beyond, body)
        )
        if span is None:
            return None
        spans.append(span)
    # The first column's head may stand on the line too ("Site" beside the groups), alone over it
    # (``table_html`` spans it down the header rows).
    stub = spans[0] == (0, 0) and len(spans) >= 3 and all(b > a for a, b in spans[1:])
    if (spans[0][0] == 0 and not stub) or any(a[1] >= b[0] for a, b in itertools.pairwise(spans)):
        return None
    row: list[Cell] = []
    end = 0  # the grid columns the row covers so far
    for p, (a, b) in zip(pieces, spans, strict=True):
        row += [Cell("")] * (a - end) + [Cell(pieces_text([p]), colspan=b + 1 - a)]
        end = b + 1
    return row + [Cell("")] * (len(cols) - end)


def group_tier(run: Sequence[Sequence[Piece]], most: int) -> int:
    """How many of the run's first rows are heads over column groups: heavy rows of fewer heads than
    the fullest row has cells less one, with a body row of two or more cells (one: the first piece
    of a table a column broke) under the full row of heads that follows them; else 0."""
    k = 0
    while (
        k < min(len(run), MAX_HEADER_ROWS) and all(map(is_heavy, run[k])) and len(x_stacks(run[k])) < most - 1
    ):
        k += 1
    if not k or k >= len(run) or not all(map(is_heavy, run[k])) or len(run[k]) < most - 1:
        return 0
    body = [r for r in run[k + 1 :] if not all(map(is_heavy, r)) and len(r) >= 2]
    return k if body else 0


def stacked_heads(rows: Sequence[Sequence[Piece]]) -> list[Piece]:
    """The heads of several lines as one piece each: lines that overlap in x (a head wrapped onto
    two lines) joined top to bottom."""
    pieces = sorted((p for r in rows for p in r), key=lambda p: (p.box[1], p.box[0]))
    stacks = x_stacks(pieces)
    out: list[Piece] = []
    for st in stacks:
        if len(st) == 1:
            out.append(st[0])
            continue
        st = sorted(st, key=lambda p: p.box[1])
        out.append(Part(pieces_text(st), union_box([p.box for p in st]), st[0].bold, st[0].weight))
    return out


def plain_heads(above: Sequence[Piece], cols: list[list[float]]) -> bool:
    """Whether the line right over a run is a head for each of its columns: as many short pieces
    (``HEAD_WORDS``, no figures) as columns, each over another column (``heads_over_columns``)."""
    return (
        len(above) == len(cols) >= 2
        and not any(p.in_figure for p in above)
        and all(len(p.text.split()) <= HEAD_WORDS and not MEASURE.search(p.text) for p in above)
        and heads_over_columns(above, cols)
    )


def stub_between(top: Sequence[Piece], mid: Sequence[Piece], heads: Sequence[Piece]) -> bool:
    """Whether ``mid`` is the first column's head set in the middle of two header lines (a head
    spanning both, centred down them as HTML and word processors set it): heavy, alone left of the
    heads on the line ``top`` above it (heads over column groups, "Nitrate (mg/l)" over "2024
    2025"), its middle between the middles of ``top`` and of the run's first row ``heads``, which
    stand a line's spacing apart. ``top`` and ``mid`` are then read as one line over the table
    (``_group_heads``: "Site" beside the groups), as when the stub stands on the groups' line."""
    if not top or not mid or not all(is_heavy(p) for p in [*top, *mid]):
        return False
    upper, stub, lower = (union_box([p.box for p in r]) for r in (top, mid, heads))

    def middle(b: Box) -> float:
        return (b[1] + b[3]) / 2

    return (
        stub[2] < upper[0]
        and stub[2] < lower[0]
        and middle(upper) < middle(stub) < middle(lower)
        and stub[1] > upper[1]
        and stub[3] < lower[3]
        and close_under(top, heads)
    )


def centred_heads(
    rows: Sequence[Sequence[Piece]], k: int, taken: int, sources: dict[int, tuple[Piece, list[Piece]]]
) -> list[Piece] | None:
    """The heads over a table set in the middle of their cells (a word processor's head row
    centred down its height): bold rows overlapping each other from ``rows[k]`` up ("Site" beside
    "Nitrate (mg/l)" beside the two lines of "Phosphate (mg/l)"), as one row of heads, a head's lines
    joined top to bottom (``sources``: a joined head's id → the head, kept so no other piece takes
    its id, and its lines). None where ``rows[k]`` overlaps no bold row above it."""
    top = k
    while top - 1 > taken and head_over(rows[top - 1], rows[top]):
        top -= 1
    if top == k:
        return None
    heads = []
    for stack in x_stacks(
        sorted((p for r in rows[top : k + 1] for p in r), key=lambda p: (p.box[1], p.box[0]))
    ):
        stack = sorted(stack, key=lambda p: p.box[1])
        box = union_box([p.box for p in stack])
        head = dataclasses.replace(stack[0], text=pieces_text(stack), box=box) if len(stack) > 1 else stack[0]
        sources[id(head)] = (head, stack)
        heads.append(head)
    return heads


def head_over(upper: Sequence[Piece], lower: Sequence[Piece]) -> bool:
    """Whether the bold row ``upper`` is more of the heads in ``lower``: overlapping it (heads
    centred down their cells), or its heads' first lines right over their second ("Nitrate" over
    "(mg/l)"), each over a head of ``lower``."""
    if not all(is_heavy(p) for p in upper) or not all(is_heavy(p) for p in lower):
        return False
    if x_share(upper, lower):
        return True
    gap = union_box([p.box for p in lower])[1] - union_box([p.box for p in upper])[3]
    return 0 <= gap <= 0.5 * line_height(upper) and all(
        any(min(a.box[2], b.box[2]) > max(a.box[0], b.box[0]) for b in lower) for a in upper
    )
