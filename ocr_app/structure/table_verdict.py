"""Two readings of one table compared: the structure model's and the rules' (the word grid).

Why: each reader fails in its own way: the model may break a sentence across cells, join the heads to
the first body row or read a cell's wrapped line as a row, and the word grid cannot see spanning cells.
These measures say which reading keeps the page's words, rows and heads; ``learned_tables`` emits that
one.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ocr_app.structure.lines import group_rows
from ocr_app.structure.rule_frames import pieces
from ocr_app.structure.slot_rows import HEAD_ROWS
from ocr_app.structure.table_bounds import reads_as_sentence
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_slots import FIGURE, shape, spans

if TYPE_CHECKING:
    from ocr_app.structure.lines import TextLine


def without_sentences(
    held: Sequence[TextLine], grid: Sequence[TextLine], body: float
) -> list[TextLine] | None:
    """A region's lines without the rows of running text above or below the table the word grid
    reads in it, or None when there are none to leave out. Left out: every row from the region's edge
    to the sentence nearest the grid (``reads_as_sentence``), each a single piece, and no line of the grid
    among them (a slide's "Table detail" over "The table below sets out the figures by line." over
    the table, all in one layout box: the structure model took both lines in as rows and merged two
    columns). A head right over the grid (a label spanning a column group) is no sentence and stays."""

    mine = {id(ln) for ln in grid}
    if not grid or len(grid) >= len(held) or not mine <= {id(ln) for ln in held}:
        return None
    top, bottom = min(ln.box[1] for ln in grid), max(ln.box[3] for ln in grid)
    rest = [ln for ln in held if id(ln) not in mine]
    above = group_rows([ln for ln in rest if ln.box[3] <= top + 0.2 * body])
    below = group_rows([ln for ln in rest if ln.box[1] >= bottom - 0.2 * body])
    if sum(len(r.items) for r in [*above, *below]) != len(rest):
        return None  # a line beside the grid's rows: not the grid's edge
    gone: list[TextLine] = []
    for side in (above, list(reversed(below))):
        last = max((k for k, r in enumerate(side) if reads_as_sentence(r.text)), default=-1)
        if any(len(pieces(r.items, body)) > 1 for r in side[: last + 1]):
            return None
        gone += [ln for r in side[: last + 1] for ln in r.items]
    if not gone:
        return None
    out = {id(ln) for ln in gone}
    return [ln for ln in held if id(ln) not in out]


def _norm(text: str) -> str:
    """A cell's text with its white space as one space (cells compared across two readings)."""
    return " ".join(text.split())


def reading_size(rows: Sequence[Sequence[Cell]]) -> int:
    """How much text a reading holds: its letters and digits (a word mended at a line-end hyphen by
    one reading and not the other counts the same)."""
    return sum(ch.isalnum() for row in rows for c in row for ch in c.text)


def keyed_rows(rows: Sequence[Sequence[Cell]], head: int) -> int:
    """The rows of a reading, body rows under a key the model spans over them counted with it. Why:
    where rows are set without padding, the model reads a wrapped description's lines as rows under a
    key spanning them ("M2" over "Publish" and "quarterly water quality data"); the word positions'
    one row a key is then the better reading. A head spanning the header rows ("Site" beside a group's
    head and its years) is structure and counts as read."""
    n = under = 0
    for k, row in enumerate(rows):
        if under > 0:
            under -= 1
            continue
        n += 1
        under = row[0].rowspan - 1 if row and k >= head else 0
    return n


def broken_sentences(rows: Sequence[Sequence[Cell]]) -> int:
    """How many cells of a reading start in the middle of a sentence: three words or more in lower
    case, under a cell of three words or more that ends no sentence. Why: where a table's rows are
    set as close as a cell's lines (a LaTeX ``p`` column), the model may cut a wrapped description
    between two of its lines ("… to four more" | "schools in the east" under it); the word grid's
    rows, each begun by a key, do not."""
    width = shape(rows)[1]
    if width < 2:
        return 0
    grid, under = _grid(rows, width)
    n = 0
    for r in range(1, len(grid)):
        for k in range(width):
            upper, lower = grid[r - 1][k].strip(), grid[r][k].strip()
            if (
                not under[r][k]
                and len(upper.split()) >= 3
                and len(lower.split()) >= 3  # ("no." under "Coronary heart disease": a head)
                and not upper.endswith(_SENTENCE_ENDS)
                and lower[:2].isalpha()
                and lower[:2].islower()
            ):
                n += 1
    return n


_SENTENCE_ENDS = (".", ":", ";", "!", "?")


def heads_joined_to_body(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int) -> bool:
    """Whether the model read the word grid's one row of heads and its first body row as one row:
    most of its first row's cells are a head and the body cell under it ("Measure M1", "Description
    Replace the bearings …"). Why: a head row set right on the body (a filled bar over rows with no
    padding) may show the model no row boundary, where the weights and the key column do."""
    if head != 1 or len(rules) < 3 or not model or len(rules[0]) != len(rules[1]):
        return False
    joins = {
        _norm(f"{h.text} {b.text}") for h, b in zip(rules[0], rules[1], strict=True) if h.text and b.text
    }
    first = [_norm(c.text) for c in model[0] if c.text.strip()]
    return len(joins) >= 2 and sum(1 for t in first if t in joins) >= max(2, len(first) / 2)


def wrapped_lines(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int) -> int:
    """The model's body rows that are a cell's wrapped line: no key, and each of its texts joins the
    text above it into one cell of the word grid's reading, or into the start of one ("Q1" over "2026"
    in a narrow "Due" column, "Q1 2026" in the grid). Why: the model cuts such a row where the wrapped line's gap looks like a
    row's; the word positions keep the row whole, and the rows then count as one."""
    width = shape(model)[1]
    if not model or not rules or width < 2:
        return 0
    grid, under = _grid(model, width)
    cells = {_norm(c.text) for row in rules for c in row if c.text.strip()}
    n = 0
    above = [_norm(t) for t in grid[max(head, 1)]] if len(grid) > max(head, 1) else []
    for r in range(max(head, 1) + 1, len(model)):
        texts = [(k, _norm(t)) for k, t in enumerate(grid[r]) if t.strip()]
        joined = {k: f"{above[k]} {t}" for k, t in texts if above[k]}
        if (
            texts
            and not grid[r][0].strip()
            and not any(under[r])
            and len(joined) == len(texts)
            and all(j in cells or any(c.startswith(f"{j} ") for c in cells) for j in joined.values())
        ):
            n += 1  # a wrapped line: the text above it grows (a cell of three lines or more)
            above = [joined.get(k, t) for k, t in enumerate(above)]
        else:
            above = [_norm(t) for t in grid[r]]
    return n


def split_head(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int) -> int:
    """How many more header rows the model reads than the word grid where its header rows, put
    together column by column, are the word grid's one head row: each column's head in one of them
    only ("Change (%)" spanning two rows beside an empty cell over three columns, over "Region",
    "2023", "2024": one head row on a dark bar). Heads over column groups have two texts in a column
    and are structure the words cannot show."""
    width = shape(model)[1]
    top = min(max(head, HEAD_ROWS), len(model) - 1)  # the model often marks no header rows
    if top < 2 or not rules or shape(rules)[1] != width:
        return 0
    mine, theirs = _slots(model, width), [_norm(t) for t in _slots(rules, width)[0]]
    for n in range(top, 1, -1):
        cols = [[_norm(mine[r][k]) for r in range(n) if mine[r][k].strip()] for k in range(width)]
        if all(len(c) <= 1 for c in cols) and [c[0] if c else "" for c in cols] == theirs:
            return n - 1
    return 0


def head_only_columns(rows: Sequence[Sequence[Cell]], head: int) -> bool:
    """Whether a word-grid reading has a column that holds no body cell: a head's second piece the
    grid cut off, not a column ("Domestic" and "(%)" set apart on a coloured bar, read by OCR as two
    pieces: ICDAR's eu-019 on a scan came out with eight columns for five), and the model's reading
    is taken. The first row counts as the head where the grid marked none (OCR's weights often show
    none)."""
    body = rows[max(head, 1) :]
    if not body:
        return False
    filled: set[int] = set()
    for row in body:
        k = 0
        for c in row:
            if c.text.strip():
                filled.update(range(k, k + c.colspan))
            k += c.colspan
    return len(filled) < shape(rows)[1]


def figures_side_by_side(rows: Sequence[Sequence[Cell]]) -> bool:
    """Whether a cell spanning columns holds two figures or more side by side ("2,753,438 2,799,250"):
    the model merged a row's value cells, which no table spans; the word positions' reading, with as
    many columns, is then the better one (ICDAR's us-018, a head over column groups just above)."""
    return any(
        c.colspan > 1
        and len(tokens := c.text.split()) >= 2
        and all(any(ch.isdigit() for ch in t) and FIGURE.match(t) for t in tokens)
        for row in rows
        for c in row
    )


def drawn_cells_win(model: Sequence[Sequence[Cell]], ruled: Sequence[Sequence[Cell]]) -> bool:
    """Whether a grid with every row and column ruled apart (``ruled``, read from its rulings) is read
    better from its drawn cells than by the model: cells drawn across several (a timetable's sessions)
    that the model merges or loses, rows it cuts where a cell's lines go on in one drawn row, or lines
    it moves to another row."""
    return inner_spans(ruled) > spans(model) or len(model) > len(ruled) or moved_lines(model, ruled)


def moved_lines(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]]) -> bool:
    """Whether the model's reading, as many rows as the rules' and of the same letters and digits,
    puts some of a row's in another row: a cell's wrapped line taken into the row above ("Use either
    1.5.0 or 1.5.2 Use either" over "1.5.0, 1.5.1 or 1.5.2"). Where the letters differ, one reading
    holds words the other left out (a column a grid lost), and this says nothing of which is right;
    spaces and hyphens differ with how each joins a wrapped word ("deprecated-" over "safe")."""

    def ink(rows: Sequence[Sequence[Cell]]) -> collections.Counter[str]:
        return collections.Counter(ch for row in rows for c in row for ch in c.text if ch.isalnum())

    return (
        len(model) == len(rules)
        and ink(model) == ink(rules)
        and any(ink([a]) != ink([b]) for a, b in zip(model, rules, strict=True))
    )


def inner_spans(rows: Sequence[Sequence[Cell]]) -> int:
    """``spans`` of a ruled reading, less a first or last row of one cell across the table: a title or
    a source note the table's frame holds ("Exhibit 9 …" over ICDAR's us-013 and "Source: …" under
    it) is no cell the model's reading merges or loses. A group's label across the table between its
    rows ("Operations") still counts."""
    width = shape(rows)[1]
    ends = [k for k in (0, len(rows) - 1) if rows and len(rows[k]) == 1 and rows[k][0].colspan == width]
    return spans([row for k, row in enumerate(rows) if k not in ends])


def same_words(model: Sequence[Sequence[Cell]], rules: Sequence[Sequence[Cell]], head: int = 0) -> bool:
    """Whether the model's reading holds the rules' words where the rules have them: each spanning
    cell's text is one cell of the rules' reading (a head over a column group; not heads of three
    columns set one space apart, "Import Export Notes", nor one glued from two columns' lines,
    "Sampled Total students in"), the rows under its lowest span read the same as the rules' last
    rows (no head line moved into the first body row), and each body row (from ``head``) holds the
    rules' row's texts in the same places, a spanning cell's in its first row: a key spanning two
    rows of the model where the rules see a row's rest under the heads and the keyed row after it
    ("M2" beside "bridges on the ring road" and "Publish ...") is not the same table."""

    cells = {_norm(c.text) for row in rules for c in row}
    if any(
        c.text.strip() and _norm(c.text) not in cells
        for row in model
        for c in row
        if c.colspan > 1 or c.rowspan > 1
    ):
        return False
    width = shape(model)[1]
    tail: list[list[str]] = []  # the model's last rows, up to its lowest row a span reaches
    for row in reversed(model):
        if any(c.colspan > 1 or c.rowspan > 1 for c in row) or len(row) != width:
            break
        tail.insert(0, [_norm(c.text) for c in row])
    theirs = [[_norm(c.text) for c in row] for row in rules[len(rules) - len(tail) :]] if tail else []
    if tail != theirs:
        return False
    mine, other = _slots(model, width), _slots(rules, width)
    # the body starts under the header rows and under every cell of the first row ("State" beside
    # the heads over column groups and their "no." and "Rate")
    start = max(head, max((c.rowspan for c in model[0]), default=0) if model else 0)
    return len(mine) == len(other) and all(
        [_norm(t) for t in a] == [_norm(t) for t in b]
        for a, b in zip(mine[start:], other[start:], strict=True)
    )


def _slots(rows: Sequence[Sequence[Cell]], width: int) -> list[list[str]]:
    """A reading as a full grid of texts: a spanning cell's text in its first slot, the slots it
    covers empty."""
    return _grid(rows, width)[0]


def _grid(rows: Sequence[Sequence[Cell]], width: int) -> tuple[list[list[str]], list[list[bool]]]:
    """``_slots``, and for each slot whether a cell of an earlier row spans down over it."""
    grid = [[""] * width for _ in rows]
    taken = [[False] * width for _ in rows]
    under = [[False] * width for _ in rows]
    for r, row in enumerate(rows):
        k = 0
        for c in row:
            while k < width and taken[r][k]:
                k += 1
            if k >= width:
                break
            grid[r][k] = c.text
            for dr in range(c.rowspan):
                for dk in range(c.colspan):
                    if r + dr < len(rows) and k + dk < width:
                        taken[r + dr][k + dk] = True
                        under[r + dr][k + dk] = dr > 0
            k += c.colspan
    return grid, under
