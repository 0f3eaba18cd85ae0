"""Step 3 of a table without rules: the run's lines into rows and cells.

Why: without rules between the rows, a wrapped cell looks like a row of its own. Each piece goes to
the column its centre falls in; the row rhythm (two sizes of gaps: line spacing inside a cell and
padding between rows), empty key columns and lone key lines say which lines make one row.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_app.schema import Box, union_box
from ocr_app.structure.borderless_runs import (
    LETTERS,
    MAX_LABEL_WORDS,
    OVERLAP,
    column_of,
    is_heavy,
    last_label_wrap,
)
from ocr_app.structure.paragraphs import join_lines
from ocr_app.structure.table_html import Cell
from ocr_app.structure.word_columns import Piece, is_figure, words_of


@dataclass
class Grid:
    """A table found on the page: its cells, header rows and the pieces it was built from."""

    rows: list[list[Cell]]
    header_rows: int
    pieces: list = field(default_factory=list)
    box: Box = (0.0, 0.0, 0.0, 0.0)
    columns: list[list[float]] = field(default_factory=list)  # x-ranges of the columns


def place_pieces(rows: Sequence[Sequence[Piece]], cols: list[list[float]]) -> list[list[list[Piece]]]:
    grid: list[list[list[Piece]]] = []
    for r in rows:
        cells: list[list[Piece]] = [[] for _ in cols]
        for p in sorted(r, key=lambda q: (q.box[1], q.box[0])):
            cells[column_of(p, cols)].append(p)
        grid.append(cells)
    return grid


def row_bands(run: Sequence[Sequence[Piece]], cols: list[list[float]]) -> list[list[Piece]]:
    """Lines of the run grouped into table rows by the row rhythm: where the gaps between lines
    come in two sizes (line spacing inside a cell, padding between rows), the small ones join lines
    into one row — wrapped cells, and cells centred on a taller row's middle line (the space under a
    bold header row does not count: a header is often set apart from rows with no padding). A full line
    (``_full``) under a row that already has one starts a new row whatever the gap: rows of one line
    set close under a header with more space below it are rows, not one tall row."""
    boxes = [union_box([p.box for p in r]) for r in run]
    gaps = [b[1] - a[3] for a, b in itertools.pairwise(boxes)]
    line = min(b[3] - b[1] for b in boxes)
    # Lines that overlap by a good part of their height belong to one row (cells centred beside a
    # taller one; line boxes of tightly leaded text overlap a little); the sizes of the other gaps
    # tell line spacing from row padding.
    # A heavy first line over plain ones is a header row: the space under it is no row padding. So is
    # one of heads over a bold label alone in the first column (a statement's first section).
    head = (
        len(run) > 2
        and all(is_heavy(p) for p in run[0])
        and (not all(is_heavy(p) for p in run[1]) or (len(run[0]) >= 2 and len(run[1]) == 1))
    )
    cut = _rhythm_cut(gaps[1:] if head else gaps, line)
    if not head and _head_apart(run, cols):
        head = True
        cut = _rhythm_cut(gaps[1:], line)
    if cut is None:
        return [list(r) for r in run]
    bands: list[list[Piece]] = [list(run[0])]
    anchored = [_full(run[0], cols)]
    key_right = max((p.box[2] for r in run for p in r if column_of(p, cols) == 0), default=0.0)
    for k, (r, g) in enumerate(zip(run[1:], gaps, strict=True)):
        full = _full(r, cols)
        if (
            g > cut
            or (full and anchored[-1])
            or (head and k == 0)
            or _new_figures(bands[-1], r, cols)
            or (
                # a label row and a row of figures, one over the other (a statement's section label)
                (full or anchored[-1])
                and (_key_only(r, cols) or _key_only(bands[-1], cols))
                and _short_key_above(bands[-1], r, cols, key_right)
            )
        ):
            bands.append(list(r))
            anchored.append(full)
        else:
            bands[-1].extend(r)
            anchored[-1] = anchored[-1] or full
    return bands


def _head_apart(run: Sequence[Sequence[Piece]], cols: list[list[float]]) -> bool:
    """Whether the run's first line is a head set apart over body rows set without padding: the space
    under it is the only gap of the wider size, and every body line opens with its key, the keys flush
    with each other.

    Why: read as the row rhythm, that one wider gap (booktabs' midrule under the heads) made every
    other gap "line spacing inside a cell", and the whole body came out as one row of wrapped lines
    ("FreeBSD OpenBSD Solaris …" in one cell; issue 30, round 24). The first line is then the head, and
    the body's own gaps say what is a row. Lines without a key may be a key's second row or a wrapped
    line: such a body is left as it was read (ifplatform's "nul:" over "true" and "false")."""
    if len(run) <= 2 or all(is_heavy(p) for p in run[0]):
        return False  # (a heavy first line is a head already)
    boxes = [union_box([p.box for p in r]) for r in run]
    gaps = [b[1] - a[3] for a, b in itertools.pairwise(boxes)]
    cut = _rhythm_cut(gaps, min(b[3] - b[1] for b in boxes))
    if cut is None or [k for k, g in enumerate(gaps) if g > cut] != [0]:
        return False
    keys = [
        min((p for p in r if column_of(p, cols) == 0), key=lambda p: p.box[0], default=None) for r in run[1:]
    ]
    if any(k is None for k in keys):
        return False
    # Every key flush with the others: a key's line set in from the rest is the wrapped end of the key
    # above (a census table's "Disposable income per capita in" over an indented "constant dollars").
    edge = min(k.box[0] for k in keys if k is not None)
    return all(k.box[0] - edge <= 0.5 * (k.box[3] - k.box[1]) for k in keys if k is not None)


def _rhythm_cut(gaps: Sequence[float], line: float) -> float | None:
    """The gap size between line spacing inside a cell and padding between rows, where the gaps come in
    two sizes (or some lines overlap); None when they do not."""
    deep = -OVERLAP * line
    apart = [g for g in gaps if g >= deep]
    if len(apart) >= 2 and max(apart) - min(apart) >= 0.2 * line:
        cut = (max(apart) + min(apart)) / 2
    elif len(apart) < len(gaps):
        cut = deep
    else:
        return None
    return cut if any(g > cut for g in gaps) else None


def _key_only(line: Sequence[Piece], cols: list[list[float]]) -> bool:
    """A line with text in the first column only (a label)."""
    return bool(line) and all(column_of(p, cols) == 0 for p in line)


def _short_key_above(
    band: Sequence[Piece], line: Sequence[Piece], cols: list[list[float]], right: float
) -> bool:
    """Whether the first-column text of ``line`` cannot be the wrapped end of the band's: the band's
    last first-column line ended so short that the line's first word would have fitted after it
    (within the column's widest line). A section label ("Revenue") over its first item ("Product
    sales 48,210") is two rows; so is an item ("Licences 1,130") over a line that starts left of it
    (the next label, "Expenses"). A label too long for its column wraps and goes on."""
    above = [p for p in band if column_of(p, cols) == 0]
    below = [p for p in line if column_of(p, cols) == 0]
    if not above or not below:
        return False
    last = max(above, key=lambda p: (p.box[1], p.box[2]))
    first = min(below, key=lambda p: p.box[0])
    word = words_of(first)[0]
    height = last.box[3] - last.box[1]
    # A wrapped line does not start left of its cell's first line (a hanging indent goes right).
    outdented = first.box[0] < min(p.box[0] for p in above) - 0.25 * height
    return outdented or last.box[2] + 0.25 * height + (word[2] - word[1]) <= right


def _new_figures(band: Sequence[Piece], line: Sequence[Piece], cols: list[list[float]]) -> bool:
    """A line with a label in the first column and a figure in a column where the row so far already
    has one: figures do not wrap, so it is the next row (a total under the items of a statement, set
    as close as they are, with no note beside it to make the line full)."""
    first = [p for p in line if column_of(p, cols) == 0]
    others = [p for p in line if column_of(p, cols) > 0]
    # A short label (leader dots are no words) and figures alone: a line of prose beside a figure's
    # labels is not a row.
    if not first or not others or not all(_figure(p) for p in others):
        return False
    if sum(1 for p in first for w in p.text.split() if LETTERS.search(w)) > MAX_LABEL_WORDS:
        return False
    held = {column_of(p, cols) for p in band if _figure(p)}
    return any(column_of(p, cols) in held for p in others)


def _full(line: Sequence[Piece], cols: list[list[float]]) -> bool:
    """A line with a piece in every column, one of them a figure: a row's anchors. A cell's wrapped
    lines continue some of a row's cells, never all of them at once, and figures do not wrap."""
    return (
        len(cols) >= 2
        and len({column_of(p, cols) for p in line}) == len(cols)
        and any(_figure(p) for p in line)
    )


def merge_wrapped(grid: list[list[list[Piece]]]) -> list[list[list[Piece]]]:
    """Rows that continue the row above: the first column empty where the table has a key column,
    or a bold row right under a bold first row with nothing new in its columns (a wrapped header)."""
    full = [r for r in grid if sum(1 for c in r if c) >= 2]
    keyed = bool(full) and sum(1 for r in full if r[0]) >= 0.8 * len(full)
    widths = [
        max((p.box[2] for r in grid for p in r[c]), default=0.0) for c in range(len(grid[0]) if grid else 0)
    ]
    out: list[list[list[Piece]]] = []
    for k, row in enumerate(grid):
        # Under the heads, a row of words without its key is the rest of a row a column or page
        # broke (``table_html.continue_table`` joins it to that row), not a wrapped head; a row of
        # figures there is a head's second row (the years under a group's head).
        under_heads = (
            len(out) == 1
            and _heavy_row(out[0])
            and not _heavy_row(row)
            and not any(_figure(p) for c in row for p in c)
        )
        if out and keyed and not row[0] and not under_heads:
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        if (
            out
            and keyed
            and _key_wrap(out[-1], row, len(full) >= 0.8 * sum(1 for r in grid if r[0]), widths[0])
        ):
            out[-1][0].extend(row[0])
            continue
        if out and _wrapped_row(out[-1], row, widths):
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        if k == len(grid) - 1 and out and last_label_wrap(out[-1], row):
            out[-1][0].extend(row[0])
            continue
        if k == 1 and out and _wrapped_header(out[0], row, widths[0]):
            for c, pieces in enumerate(row):
                out[-1][c].extend(pieces)
            continue
        out.append([list(c) for c in row])
    return out


def _heavy_row(row: list[list[Piece]]) -> bool:
    pieces = [p for c in row for p in c]
    return bool(pieces) and all(is_heavy(p) for p in pieces)


def _wrapped_row(prev: list[list[Piece]], row: list[list[Piece]], widths: list[float]) -> bool:
    """A row with no figure under a row with some (and none in their columns), each of its cells
    starting right under the last line of a filled cell above it (under half a line: line spacing, not a row's padding), reaching
    beyond the first column: the wrapped lines of the row above (rows are anchored by their
    figures, one line a row, on the row's first line). A lone first-column line may be a group
    label and is left to ``_key_wrap``."""
    filled = [c for c, pieces in enumerate(row) if pieces]
    figures = [c for c, pieces in enumerate(prev) if pieces and all(_figure(p) for p in pieces)]
    if not filled or filled == [0] or set(filled) & set(figures):
        return False
    if figures:
        if any(_figure(p) for c in filled for p in row[c]):
            return False
    elif row[0] or not prev[0] or (_heavy_row(prev) and not _heavy_row(row)):
        return False  # a keyed row's wrapped lines; a plain line under the heads is no head's
    for c in filled:
        if not prev[c]:
            return False
        a, b = union_box([p.box for p in prev[c]]), union_box([p.box for p in row[c]])
        if not -0.5 * (b[3] - b[1]) <= b[1] - a[3] < 0.5 * (b[3] - b[1]):
            return False
        # The line above was full: the first word of this one would not have fitted after it within
        # the column's widest line (else that line ended there, and this is a cell of its own).
        last = max(prev[c], key=lambda p: p.box[1])
        word = words_of(min(row[c], key=lambda p: (p.box[1], p.box[0])))[0]
        if last.box[2] + 0.25 * (b[3] - b[1]) + word[2] - word[1] <= widths[c]:
            return False
    return True


def _figure(p: Piece) -> bool:
    return is_figure(p.text)


def _key_wrap(prev: list[list[Piece]], row: list[list[Piece]], mostly_full: bool, right: float) -> bool:
    """A row with only its key, right under a full row, in a table whose rows are mostly full: the
    key cell's wrapped line where rows have no padding (not a bold group label, not a new key after
    a key that ended with a colon or a full stop, not after a key so short that the line's first word
    would have fitted after it within the column's widest line, ``right``: a label on scans, where
    no weight is known)."""
    if not mostly_full or any(row[1:]) or sum(1 for c in prev if c) < 2 or not row[0] or not prev[0]:
        return False
    if any(is_heavy(p) for p in row[0]) or prev[0][-1].text.rstrip().endswith((":", ".")):
        return False
    a, b = union_box([p.box for p in prev[0]]), union_box([p.box for p in row[0]])
    word = words_of(min(row[0], key=lambda p: p.box[0]))[0]
    if a[2] + 0.25 * (a[3] - a[1]) + (word[2] - word[1]) <= right:
        return False
    return b[1] - a[3] <= 0.3 * (b[3] - b[1]) and abs(b[0] - a[0]) <= 0.5 * (b[3] - b[1])


def _wrapped_header(first: list[list[Piece]], row: list[list[Piece]], right: float) -> bool:
    """A bold row right under the bold first row, with nothing in columns the first leaves empty: the
    heads' wrapped lines. Not a line under the first head alone whose first word would have fitted
    after that head within the first column's widest line (``right``): a group's label ("Staff" under
    "Item", bold, in a table set without padding), which ``_key_wrap`` leaves alone for the same
    reason."""
    pieces = [p for c in row for p in c]
    above = [p for c in first for p in c]
    if not pieces or not above or not all(is_heavy(p) for p in pieces + above):
        return False
    if any(row[c] and not first[c] for c in range(len(row))):
        return False
    if not any(row[1:]) and first[0]:
        head = max(first[0], key=lambda p: p.box[1])
        word = words_of(min(row[0], key=lambda p: p.box[0]))[0]
        if head.box[2] + 0.25 * (head.box[3] - head.box[1]) + (word[2] - word[1]) <= right:
            return False
    gap = min(p.box[1] for p in pieces) - max(p.box[3] for p in above)
    return gap <= 0.25 * min(p.box[3] - p.box[1] for p in pieces)


def pieces_text(pieces: list[Piece]) -> str:
    """A cell's pieces as one text; a word broken by a hyphen at the end of one of its lines mended
    (``paragraphs.join_lines``: "bear-" over "ings" in a narrow justified cell, as LaTeX breaks it)."""
    out, last = "", None
    for p in pieces:
        text = " ".join(p.text.split())
        under = last is not None and p.box[1] >= (last.box[1] + last.box[3]) / 2
        out = join_lines(out, text) if under and out.endswith("-") else f"{out} {text}" if out else text
        last = p
    return out.strip()
