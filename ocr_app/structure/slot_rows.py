"""The model's rows put right from where the words stand and the rules the page draws.

Why: without rules between the rows the model merges rows (two rows of figures as one) and splits a
cell's wrapped lines into rows of their own; a header's last line lands in the first body row. The
words' lines, the figures in them, the keys set flush left and the rules drawn across the table say
where a row ends. Each pass takes the cells (``table_slots.Slot``) and gives them back.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ocr_app.structure.rule_frames import joined
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_slots import (
    FIGURE,
    Slot,
    body_start,
    cell_text,
    drop_lines,
    is_figure,
    word_bands,
)

if TYPE_CHECKING:
    from ocr_app.schema import Box
    from ocr_app.structure.lines import Rule


def merge_header_rows(slots: list[Slot], cuts: Sequence[Rule] = ()) -> list[Slot]:
    """Two header rows whose cells stand one over the other, a line apart, are one row of wrapped cells.

    Why: the structure model often cuts a header cell set on two lines ("to air" / "kg/year") into
    two rows; the words say they are one cell each: every filled cell of the upper row over a cell
    of the lower with the same span, whose first line is right under its last (a gap under half a
    line, where rows of a table are set at least a line's padding apart). A cell under an empty one
    is a head set at the header's foot (ICDAR's us-009: "Cost Category" beside two-line heads; us-037's
    "No.") and moves up into it, where the two rows are the table's first or the model's header
    (lower down, figures under empty cells are a row of their own: eu-007). Only above the
    first row that holds a figure (the body); a table of words only (names in a grid, set a line
    apart) has no header to tell from its body and is left alone. Rows with a rule drawn across the
    table between them (``cuts``) are two rows."""
    body_at = min((s.row for s in slots if is_figure(s)), default=0)  # no figures: no header to tell
    r = 0
    while r + 1 < body_at:
        upper = sorted((s for s in slots if s.row == r and s.words), key=lambda s: s.col)
        lower = sorted((s for s in slots if s.row == r + 1 and s.words), key=lambda s: s.col)
        under = {(s.col, s.colspan): s for s in lower if s.rowspan == 1}
        pairs = [(a, under.get((a.col, a.colspan))) for a in upper]
        # a head under an empty cell (set at the foot of the header, "Cost Category" beside two-line
        # heads) moves up into it: in the table's first two rows, or in the model's header rows
        empty = {(s.col, s.colspan): s for s in slots if s.row == r and s.rowspan == 1 and not s.words}
        extra = [s for s in lower if (s.col, s.colspan) not in {(a.col, a.colspan) for a in upper}]
        if (
            len(upper) >= 2
            and all(b is not None for _, b in pairs)
            and all(s.rowspan == 1 for s in [*upper, *lower])
            and all((s.col, s.colspan) in empty for s in extra)
            and (not extra or r == 0 or r + 1 < body_start(slots))
            and all(_wrapped(a, b) for a, b in pairs if b is not None)
            and not _ruled_apart({a.col: a for a in upper}, {b.col: b for _, b in pairs if b}, slots, cuts)
        ):
            for a, b in pairs:
                if b is not None:
                    a.words += b.words
            for s in extra:
                empty[s.col, s.colspan].words = s.words
            gone = {id(s) for s in lower}
            kept: list[Slot] = []
            for s in slots:
                if id(s) in gone or (s.row == r + 1 and not s.words and s.rowspan == 1):
                    continue
                if s.row > r + 1:
                    s.row -= 1
                elif s.row + s.rowspan > r + 1:
                    s.rowspan = max(1, s.rowspan - 1)
                kept.append(s)
            slots = kept
            body_at -= 1
            continue
        r += 1
    return slots


def join_wrapped_rows(slots: list[Slot], cuts: Sequence[Rule] = ()) -> list[Slot]:
    """A body row with no figure whose cells each continue the cell above it is that row's wrapped lines.

    Why: where rows are set without padding, the model cuts a row whose text cells wrap into two
    or more rows (the extra lines of "Timber joists, treated …" a row of their own beside empty
    figure cells). Rows are anchored by their figures, one line a row, on the row's first line
    (top-aligned cells). A row of the body with none joins the row above when that row has some
    (and it has nothing in their columns: values with units under figures are a row), every filled
    cell of it starts right under the last line of the filled cell above (under half a line: line
    spacing, not a row's padding), that line was full (its first word would not have fitted
    there: ``_would_fit``), and it continues a column beyond the first (a lone line of the first
    column may be a group label)."""
    body_at = min((s.row for s in slots if is_figure(s)), default=None)
    if body_at is None:
        return slots
    r = body_at + 1
    while r < max(s.row + s.rowspan for s in slots):
        lower = {s.col: s for s in slots if s.row == r and s.words}
        upper = {s.col: s for s in slots if s.row == r - 1 and s.words}
        crossing = any(s.rowspan > 1 and s.row <= r < s.row + s.rowspan + 1 for s in slots)
        if (
            crossing
            or not lower
            or any(is_figure(s) for s in lower.values())
            or not any(is_figure(s) for s in upper.values())
            or any(is_figure(upper[c]) for c in lower if c in upper)
            or set(lower) <= {0}
            or not _continues(upper, lower, slots, cuts)
        ):
            r += 1
            continue
        slots = _merge_up(slots, r, upper, lower)
    return slots


def drop_empty_rows(slots: list[Slot]) -> list[Slot]:
    """``slots`` without the body rows where no cell starts with a word; cells spanning such a row
    span one less. Why: the model can read a row of empty cells under a table's last row (or between
    two), and it came out as a row of empty cells with the first column's last cell spanning it. A
    header row stays, and so does a row under a head over several columns: the heads under it may be
    gone as running lines (us-018's pages), and the spans still say the header's shape."""
    n_rows = max((s.row + s.rowspan for s in slots), default=0)
    filled = {s.row for s in slots if s.words or s.header}
    filled |= {s.row + s.rowspan for s in slots if s.colspan > 1}
    return drop_lines(slots, sorted(set(range(n_rows)) - filled), "row", "rowspan")


def lift_stray_lines(slots: list[Slot]) -> list[Slot]:
    """A cell's first lines that stand above its row's first line are the cell above's last lines.

    Why: a wrapped cell of three lines beside one-line cells ("Delays from the two main suppliers of /
    parts for … / first half of the year") reaches down to the next row's height; the rows fitted to
    the model's put its last line in the next row, on top of that row's own text ("first half of the
    year Loss of key engineers"). The row's key (its first column, top-aligned) says where the row
    starts: lines of a cell that end above the key's first line, right under the last line of the
    cell above (line spacing, not a row's padding), where that line was full, go back up."""
    keys = {s.row: s for s in slots if s.col == 0 and s.rowspan == 1 and s.words}
    cells = {(s.row, s.col, s.colspan): s for s in slots if s.rowspan == 1}
    for s in slots:
        key = keys.get(s.row)
        upper = cells.get((s.row - 1, s.col, s.colspan))
        if s.col == 0 or key is None or upper is None or not upper.words or s.rowspan != 1 or not s.words:
            continue
        if s.row - 1 not in keys or s.row <= body_start(slots):
            continue
        top = min(w[0][1] for w in key.words)
        bands = word_bands(s.words)
        stray = [w for _, ws in bands for w in ws if w[0][3] <= top + 0.25 * (w[0][3] - w[0][1])]
        rest = [w for w in s.words if w not in stray]
        if not stray or not rest:
            continue
        moved = Slot(s.row, s.col, colspan=s.colspan, words=stray)
        if _wrapped(upper, moved) and not _would_fit(upper, moved, slots):
            upper.words += stray
            s.words = rest
    return slots


def join_wrapped_text_rows(slots: list[Slot], cuts: Sequence[Rule] = ()) -> list[Slot]:
    """In a table of words (no figures), a body row with an empty first column, or one whose key is set
    in under a hanging indent, whose cells each continue the cell above is that row's wrapped lines.

    Why: ``join_wrapped_rows`` anchors rows by their figures, so a table of text (a risk register, a
    glossary in columns) kept a wrapped description's second line as a row of its own beside empty
    cells. Here the first column is the anchor: a row starts where it has a key; a row without one
    whose filled cells each start right under the cell above, whose last line was full, is that
    row's next line."""
    if any(is_figure(s) for s in slots):
        return slots
    r = body_start(slots) + 1
    while r < max((s.row + s.rowspan for s in slots), default=0):
        lower = {s.col: s for s in slots if s.row == r and s.words}
        upper = {s.col: s for s in slots if s.row == r - 1 and s.words}
        crossing = any(s.rowspan > 1 and s.row <= r < s.row + s.rowspan + 1 for s in slots)
        keyed = 0 in lower and not (0 in upper and _hangs(upper[0], lower[0]))
        if crossing or not lower or keyed or 0 not in upper or not _continues(upper, lower, slots, cuts):
            r += 1
            continue
        slots = _merge_up(slots, r, upper, lower)
    return slots


def _hangs(upper: Slot, lower: Slot) -> bool:
    """Whether ``lower``'s first line is set in from ``upper``'s first line: a key's wrapped line under a
    hanging indent, not a key of its own."""
    height = min(w[0][3] - w[0][1] for w in lower.words)
    return _first_left(lower) - _first_left(upper) >= OUTDENT * height


def _continues(
    upper: dict[int, Slot], lower: dict[int, Slot], slots: Sequence[Slot], cuts: Sequence[Rule] = ()
) -> bool:
    """Whether every filled cell of a row (``lower``, by column) goes on from the cell above it in the
    row above (``upper``): the same span, starting right under it, after a last line that was full,
    and no rule drawn across the table between them (``cuts``: a ruled table's row that a page or
    column break left with one cell's last lines is a row of its own)."""
    return all(
        c in upper
        and upper[c].colspan == s.colspan
        and _wrapped(upper[c], s)
        and not _would_fit(upper[c], s, slots)
        for c, s in lower.items()
    ) and not _ruled_apart(upper, lower, slots, cuts)


def join_ruled_bands(slots: list[Slot], cuts: Sequence[Rule]) -> list[Slot]:
    """In a table whose body rows are ruled apart (two rules or more drawn across it between body
    rows), a row with no key under a keyed row, no rule between them, is more lines of that row.

    Why: the rules say where each row ends. A row whose cells hold a total on its first line and
    brand names on the lines under it ("Total: 47%" over "(Fruit d'or, Plantafin, …)", ICDAR's
    eu-007) was cut by the model into a keyed row and a row of loose lines. Only below the header's
    band (a rule between the table's first row and this one): a head's second row may have no key."""
    across = _rules_across(slots, cuts)
    first = [w for s in slots if s.row == 0 for w in s.words]
    if not across or not first:
        return slots
    every = [w for s in slots for w in s.words]
    head_foot = max((w[0][1] + w[0][3]) / 2 for w in first)
    bottom = max((w[0][1] + w[0][3]) / 2 for w in every)
    if sum(1 for y in across if head_foot < y < bottom) < MIN_BODY_RULES + 1:
        return slots  # the header's rule and one other at least: rows ruled apart
    r = 1
    while r < max((s.row + s.rowspan for s in slots), default=0):
        lower = {s.col: s for s in slots if s.row == r and s.words}
        upper = {s.col: s for s in slots if s.row == r - 1 and s.words}
        crossing = any(s.rowspan > 1 and s.row <= r < s.row + s.rowspan + 1 for s in slots)
        top = min((w[0][1] + w[0][3]) / 2 for s in lower.values() for w in s.words) if lower else 0.0
        if (
            crossing
            or not lower
            or 0 in lower
            or 0 not in upper
            or any(s.colspan > 1 for s in [*lower.values(), *upper.values()])
            or not any(head_foot < y < top for y in across)
            or _ruled_apart(upper, lower, slots, cuts)
            or any(c not in upper for c in lower)
            or not all(_in_column(w, c, slots, s) for c, s in lower.items() for w in s.words)
        ):
            r += 1
            continue
        slots = _merge_up(slots, r, upper, lower)
    return slots


def _in_column(word: tuple[Box, str], c: int, slots: Sequence[Slot], own: Slot) -> bool:
    """Whether a word's middle lies within the reach of column ``c``'s words in its other cells (a
    "Total" the model put beside its figure stands in the key column's reach, not the figure's)."""
    xs = [
        (w[0][0], w[0][2]) for s in slots if s.col == c and s.colspan == 1 and s is not own for w in s.words
    ]
    mid = (word[0][0] + word[0][2]) / 2
    return bool(xs) and min(a for a, _ in xs) <= mid <= max(b for _, b in xs)


MIN_BODY_RULES = 2  # rules drawn across a table's body that show its rows are ruled apart


def _ruled_apart(
    upper: dict[int, Slot], lower: dict[int, Slot], slots: Sequence[Slot], cuts: Sequence[Rule]
) -> bool:
    """Whether a rule drawn from the table's first column to its last (``_rules_across``) runs between
    a cell of ``lower`` and the cell above it in ``upper``."""
    across = _rules_across(slots, cuts)
    for c, s in lower.items():
        if c not in upper or not across:
            continue
        # Between the lines' middles, clear of both: word boxes overlap the rules of a tight table.
        height = min(w[0][3] - w[0][1] for w in s.words)
        bottom = max((w[0][1] + w[0][3]) / 2 for w in upper[c].words) + RULE_CLEAR * height
        top = min((w[0][1] + w[0][3]) / 2 for w in s.words) - RULE_CLEAR * height
        if any(bottom <= y <= top for y in across):
            return True
    return False


def _rules_across(slots: Sequence[Slot], cuts: Sequence[Rule]) -> list[float]:
    """The heights of the rules drawn from a table's first column to its last, as ``split_at_rules``
    takes a rule across: its ends within half a line of the outer words'."""
    every = [w for s in slots for w in s.words]
    if not cuts or not every:
        return []
    left, right = min(w[0][0] for w in every), max(w[0][2] for w in every)
    reach = RULE_REACH * statistics.median(w[0][3] - w[0][1] for w in every)
    return sorted(y for x0, y, x1 in joined(cuts) if x0 <= left + reach and x1 >= right - reach)


def _merge_up(slots: list[Slot], r: int, upper: dict[int, Slot], lower: dict[int, Slot]) -> list[Slot]:
    """Row ``r``'s words joined to the cells above (``_continues``), the row gone, the rows below
    moved up one."""
    for c, s in lower.items():
        upper[c].words += s.words
    kept: list[Slot] = []
    for s in slots:
        if s.row == r:
            continue
        if s.row > r:
            s.row -= 1
        kept.append(s)
    return kept


def _would_fit(upper: Slot, lower: Slot, slots: Sequence[Slot]) -> bool:
    """Whether ``lower``'s first word would have fitted after ``upper``'s last line, within the
    widest line of their column: then that line did not wrap, and ``lower`` is a cell of its own."""
    last = word_bands(upper.words)[-1][1]
    first = min(word_bands(lower.words)[0][1], key=lambda w: w[0][0])[0]
    right = max(w[0][2] for o in slots if o.col == upper.col and o.colspan == upper.colspan for w in o.words)
    space = 0.25 * (first[3] - first[1])
    return max(w[0][2] for w in last) + space + (first[2] - first[0]) <= right


def split_merged_rows(slots: list[Slot]) -> list[Slot]:
    """A model row holding two or more rows of figures is that many rows.

    Why: the model merges body rows set without padding ("0 250 | 39 30 | 5.8 5.9"); where two or
    more cells hold only figures, one a line, on the same lines, each of those lines is a row. The
    other cells' lines go to the row whose first line they are level with or below (a wrapped label
    stays in its row)."""
    r = 0
    while r < max((s.row + s.rowspan for s in slots), default=0):
        cells = [s for s in slots if s.row == r and s.rowspan == 1 and s.words]
        stacks = []
        for s in cells:
            lines = word_bands(s.words)
            if len(lines) >= 2 and all(FIGURE.match(" ".join(t for _, t in ws)) for _, ws in lines):
                stacks.append([m for m, _ in lines])
        k = len(stacks[0]) if stacks else 0
        height = min((w[0][3] - w[0][1] for s in cells for w in s.words), default=0.0)
        if (
            len(stacks) < 2
            or any(len(m) != k for m in stacks)
            or any(abs(a - b) > 0.5 * height for m in stacks for a, b in zip(m, stacks[0], strict=True))
        ):
            r += 1
            continue
        starts = [sum(m[i] for m in stacks) / len(stacks) - 0.5 * height for i in range(k)]
        slots = _cut_row(slots, r, starts)
        r += k
    return slots


KEYS_FLUSH = 0.6  # this share of the body rows' keys starting at their column's edge: keys are set flush left
OUTDENT = (
    0.5  # × the line height: a key line this far left of the key's first line is another key's; at the edge
)


def split_keys(slots: list[Slot]) -> list[Slot]:
    """A body row whose key (its first column's cell, keys set flush left) holds another key's first
    line is two rows from that line on: a line at the column's edge that starts left of the key's
    first line (an outdent), or one under a key line that broke early (the next word would have
    fitted in the column), level with a line of every other filled cell of the row that follows a
    line which broke early too.

    Why: keys that wrap with a hanging indent ("Disposable income per capita in" over "constant
    dollars", set in) in rows set at line spacing were fitted a line off: one model row held a key's
    indented last line and the next key's first line (ICDAR 2013's us-019, "constant dollars
    Education revenue receipts from state"); and two one-line rows of words set at line spacing came
    out as one ("Ages 20 to 24 Age 25 and over" beside "Remains between …" twice). A key's wrapped
    lines never start left of its first line, and a line breaks early only where its cell ends; a key
    broken early beside a description that runs on is one key on two lines ("Books and" / "school
    supplies", us-036). The other cells' lines go to the row they are level with (``_cut_row``)."""
    body_at = body_start(slots)
    keys = [
        s for s in slots if s.col == 0 and s.colspan == 1 and s.rowspan == 1 and s.row >= body_at and s.words
    ]
    if not keys:
        return slots
    edge = min(w[0][0] for s in keys for w in s.words)
    height = statistics.median(w[0][3] - w[0][1] for s in keys for w in s.words)
    if sum(1 for s in keys if _first_left(s) - edge <= OUTDENT * height) < KEYS_FLUSH * len(keys):
        return slots
    widths: dict[tuple[int, int], float] = {}  # (column, span) → its widest line
    for s in slots:
        for _, ws in word_bands(s.words):
            width = max(w[0][2] for w in ws) - min(w[0][0] for w in ws)
            widths[s.col, s.colspan] = max(widths.get((s.col, s.colspan), 0.0), width)

    def early(s: Slot, above: list[tuple[Box, str]], below: list[tuple[Box, str]]) -> bool:
        """Whether the line ``above`` broke before the first word of ``below`` had to (it would have fitted)."""
        lead = min(below, key=lambda w: w[0][0])[0]
        used = max(w[0][2] for w in above) - min(w[0][0] for w in above)
        return used + 0.25 * height + (lead[2] - lead[0]) <= widths[s.col, s.colspan]

    def level(s: Slot, mid: float) -> bool:
        """Whether cell ``s`` has a line level with ``mid`` that starts it or follows a line broken early."""
        bands = word_bands(s.words)
        return abs(bands[0][0] - mid) <= 0.5 * height or any(
            abs(m - mid) <= 0.5 * height and early(s, up, ws)
            for (_, up), (m, ws) in itertools.pairwise(bands)
        )

    for key in sorted(keys, key=lambda s: -s.row):  # from the bottom: a cut moves only the rows below
        first = _first_left(key)
        others = [s for s in slots if s.row == key.row and s.rowspan == 1 and s.col > 0 and s.words]
        starts = []
        for (_, above), (mid, ws) in itertools.pairwise(word_bands(key.words)):
            x = min(w[0][0] for w in ws)
            if x - edge > OUTDENT * height:
                continue  # set in: a wrapped line
            beside = bool(others) and early(key, above, ws) and all(level(s, mid) for s in others)
            if x <= first - OUTDENT * height or beside:
                starts.append(min(w[0][1] for w in ws))
        if starts:
            slots = _cut_row(slots, key.row, [float("-inf"), *starts])
    return slots


def _first_left(s: Slot) -> float:
    """Where the cell's first line starts."""
    return min(w[0][0] for w in word_bands(s.words)[0][1])


RULE_REACH = 0.5  # × the line height: how far short of a row's outer words a rule under them may end
RULE_CLEAR = 0.3  # × the line height: a rule this far from every word's middle (no strike-through)


_BULLET_GLYPH = re.compile(r"^[•●○◦▪▫■□‣⁃*·]$")


def _goes_on(upper: Slot, lower: Slot) -> bool:
    """``lower`` goes on ``upper``'s text a line below, in one cell: no figure under a figure (two
    rows of figures set a line apart are two rows)."""
    return _wrapped(upper, lower) and not (is_figure(upper) and is_figure(lower))


def split_at_rules(slots: list[Slot], cuts: Sequence[Rule]) -> list[Slot]:
    """A model row whose words lie on both sides of a rule drawn across the whole table is two rows.

    Why: the structure model sometimes misses a row and the word rows are then fitted to one row
    too few (us-032's "Area" and, below the rule that opens the next section, "Mobile:" became one
    cell "Area Mobile:"). A rule drawn from the table's first column to its last parts rows: no
    cell's text runs across it. A rule under some columns only (a group's head over its sub-heads,
    "TEDs" over simple / complex / all) parts nothing, nor does one in a row with words in one cell
    only (an underlined first line of a wrapped cell). Lines over the rule that end the cells above
    them a line lower (ICDAR's eu-004: a head's last line "(000)" fitted to the first row of figures)
    join those cells; lines under it that begin the next row's cells join them (docling's
    normal_4pages: a cell's first line fitted to the row above the rule)."""
    every = [w for s in slots for w in s.words]
    if not cuts or not every:
        return slots
    cuts = joined(cuts)
    left, right = min(w[0][0] for w in every), max(w[0][2] for w in every)
    stub = min(s.col for s in slots if s.words)
    r = 0
    while r <= max((s.row for s in slots), default=-1):
        cells = [s for s in slots if s.row == r and s.rowspan == 1 and s.words]
        words = [w for s in cells for w in s.words]
        cut = None
        if len([s for s in cells if s.words]) >= 2:
            height = min(w[0][3] - w[0][1] for w in words)
            for x0, y, x1 in cuts:
                mids = [(w[0][1] + w[0][3]) / 2 - y for w in words]
                if (
                    x0 <= left + RULE_REACH * height
                    and x1 >= right - RULE_REACH * height
                    and min(mids) < 0 < max(mids)
                    and all(abs(m) >= RULE_CLEAR * height for m in mids)
                ):
                    cut = y
                    break
        if cut is None:
            r += 1
            continue
        upper = {s.col: [w for w in s.words if w[0][1] + w[0][3] < 2 * cut] for s in cells}
        lower = {s.col: [w for w in s.words if w[0][1] + w[0][3] > 2 * cut] for s in cells}
        # A lone bullet glyph says nothing: a symbol font sets it higher or lower than its line.
        upper = {c: ws for c, ws in upper.items() if ws and not all(_BULLET_GLYPH.match(t) for _, t in ws)}
        lower = {c: ws for c, ws in lower.items() if ws and not all(_BULLET_GLYPH.match(t) for _, t in ws)}
        prv = {s.col: s for s in slots if s.row + s.rowspan == r and s.words}
        nxt = {s.col: s for s in slots if s.row == r + 1 and s.rowspan == 1 and s.words}
        # Lines over the rule that end, a line below, the cells above them in their columns (a head's
        # last line, "(000)") go up to those cells; lines under it that begin the next row's cells
        # go down. The rest of the row stays where it is.
        # A part with words in every column that the rest of the row or the neighbour row fills is a
        # row of its own (rows set a line apart look "wrapped" too: "Carbon monoxide (CO)" under
        # "Ammonia (NH3)").
        # A row holding only a label in the first column takes no part: a label under the rule over
        # one alone in its row are two rows ("All Randomly Assigned (N=4,667):" over "3-Year-Old
        # Cohort", ICDAR's us-008).
        # Neither moves over another rule across the table (a row ruled apart from the next).
        above = {c: Slot(r, c, words=ws) for c, ws in upper.items()}
        below = {c: Slot(r, c, words=ws) for c, ws in lower.items()}
        if (
            len(upper) < len(set(lower) | set(prv))
            and set(prv) != {stub}
            and all(c in prv and _goes_on(prv[c], above[c]) for c in upper)
            and not _ruled_apart(prv, above, slots, cuts)
        ):
            moved, into, first = upper, prv, False
        elif (
            len(lower) < len(set(upper) | set(nxt))
            and set(nxt) != {stub}
            and all(c in nxt and _goes_on(below[c], nxt[c]) for c in lower)
            and not _ruled_apart(below, nxt, slots, cuts)
        ):
            moved, into, first = lower, nxt, True
        else:
            moved, into, first = {}, {}, False
        if moved:
            for s in cells:
                if s.col in moved:
                    s.words = [w for w in s.words if w not in moved[s.col]]
                    cell = into[s.col]
                    cell.words = moved[s.col] + cell.words if first else cell.words + moved[s.col]
            r += 1
            continue
        slots = _cut_row(slots, r, [float("-inf"), cut], heads=False)
    return slots


def _cut_row(slots: list[Slot], r: int, starts: Sequence[float], *, heads: bool = True) -> list[Slot]:
    """Row ``r`` cut into one row a level of ``starts`` (ascending): each one-row cell's word goes to
    the last level its middle reaches (the first when none), rows below move down, cells spanning down
    over ``r`` span the new rows too. ``heads``: the new rows keep a header cell's mark (False: only
    the first does)."""
    k = len(starts)
    out: list[Slot] = []
    for s in slots:
        if s.row == r and s.rowspan == 1:
            parts = [
                Slot(r + i, s.col, 1, s.colspan, s.header and (heads or i == 0), s.box) for i in range(k)
            ]
            for w in s.words:
                mid = (w[0][1] + w[0][3]) / 2
                parts[max([i for i in range(k) if mid >= starts[i]], default=0)].words.append(w)
            out += parts
            continue
        if s.row > r:
            s.row += k - 1
        elif s.row + s.rowspan > r:
            s.rowspan += k - 1
        out.append(s)
    return out


def lift_header_tails(slots: list[Slot]) -> list[Slot]:
    """A header cell's last line that the model put in the first body row goes back up.

    Why: a header cell wrapped over more lines than its neighbours ("number of enterprises" /
    "(000)") reaches below the model's header row, and its last line lands in the first row of
    figures ("(000) 2553"). Such a line stands above the row's own line of figures (the top of the
    row's one-line figure cells), right under the header cell of its column (under half a line),
    in a cell whose own text below it is a figure."""
    body_at = min((s.row for s in slots if is_figure(s)), default=0)
    if body_at < 1:
        return slots
    row = [s for s in slots if s.row == body_at and s.rowspan == 1 and s.words]
    level = [min(w[0][1] for w in s.words) for s in row if is_figure(s) and len(word_bands(s.words)) == 1]
    if not level:
        return slots
    band_top = min(level)
    for s in row:
        lines = word_bands(s.words)
        above = [
            a
            for a in slots
            if a.row + a.rowspan == body_at and a.words and a.col <= s.col < a.col + a.colspan
        ]
        if len(lines) < 2 or len(above) != 1:
            continue
        tail = [(m, ws) for m, ws in lines if m < band_top]
        rest = [w for m, ws in lines if m >= band_top for w in ws]
        if not tail or not rest or not FIGURE.match(" ".join(t for _, t in rest)):
            continue
        height = min(w[0][3] - w[0][1] for w in s.words)
        if min(w[0][1] for _, ws in tail for w in ws) - max(w[0][3] for w in above[0].words) >= 0.5 * height:
            continue
        above[0].words += [w for _, ws in tail for w in ws]
        s.words = rest
    return slots


def _wrapped(upper: Slot, lower: Slot) -> bool:
    """Whether ``lower``'s words continue ``upper``'s text on the next line of one cell."""
    bottom = max(w[0][3] for w in upper.words)
    top = min(w[0][1] for w in lower.words)
    height = sorted(w[0][3] - w[0][1] for w in upper.words + lower.words)[0]
    return -0.5 * height <= top - bottom < 0.5 * height


def cell_rows(slots: list[Slot], join: Callable[[str, str], str] | None) -> list[list[Cell]]:
    """Cells row by row, dropping rows with no text (the model's spare rows) and their spans."""
    n_rows = max(s.row + s.rowspan for s in slots)
    used = [r for r in range(n_rows) if any(s.words and s.row <= r < s.row + s.rowspan for s in slots)]
    index = {r: k for k, r in enumerate(used)}
    rows: list[list[Cell]] = [[] for _ in used]
    for s in sorted(slots, key=lambda s: (s.row, s.col)):
        covered = [r for r in range(s.row, s.row + s.rowspan) if r in index]
        if not covered:
            continue
        rows[index[covered[0]]].append(Cell(cell_text(s.words, join), s.colspan, len(covered)))
    return [r for r in rows if r]


HEAD_ROWS = 3  # a head over a rule has at most this many rows


def head_over_rule(slots: list[Slot], cuts: Sequence[Rule]) -> None:
    """With no header row read, the first rows are the header where a rule drawn across the whole
    table runs under them and over the rest (a booktabs table's head rule: "Variable | Assumption" on
    ICDAR 2013's us-019, where the head is set like the body). Not in a table that draws a rule under
    most of its rows: there the first rule says nothing about a head."""
    every = [w for s in slots for w in s.words]
    if not cuts or not every or any(s.header for s in slots):
        return
    height = statistics.median(w[0][3] - w[0][1] for w in every)
    left, right = min(w[0][0] for w in every), max(w[0][2] for w in every)
    top, bottom = min(w[0][1] for w in every), max(w[0][3] for w in every)
    n_rows = max(s.row + s.rowspan for s in slots)
    across = sorted(
        y
        for x0, y, x1 in joined(cuts)
        if x0 <= left + RULE_REACH * height and x1 >= right - RULE_REACH * height and top < y < bottom
    )
    if not across:
        return
    above = {s.row + s.rowspan for s in slots if s.words and max(w[0][3] for w in s.words) <= across[0]}
    below = {s.row for s in slots if s.words and min(w[0][1] for w in s.words) >= across[0]}
    k = max(above, default=0)
    if not 1 <= k <= HEAD_ROWS or k != min(below, default=-1) or len(across) - 1 > (n_rows - k) / 2:
        return
    if n_rows - k < 2 or any(s.row < k < s.row + s.rowspan for s in slots):
        return
    for s in slots:
        if s.row < k:
            s.header = True


def count_header_rows(slots: Sequence[Slot]) -> int:
    heads = {s.row for s in slots if s.header}
    n = 0
    while n in heads:
        n += 1
    return n
