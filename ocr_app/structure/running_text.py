"""Running text: columns whose sentences run on from one line to the next (issue 30 item 3).

Why: columns of prose set side by side (a sidebar beside two body columns, a newsletter's three
columns) line up like the columns of a table, and a narrow column has few words a line and a ragged
edge, so word counts and line lengths alone do not tell them apart. What a reader sees is that the
sentences carry on: a line that does not close its sentence is followed, right under it, by a line
that starts in lower case. A table's cell may wrap too, but a column of labels or figures does not
run on, and the next row's cell starts an entry of its own.

Duck-typed over lines or pieces with ``text``, ``box``, ``bold`` and ``weight``.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections.abc import Sequence
from typing import Any

SENTENCE_END = (".", "!", "?", ":", ";")
RUN_ON_SHARE = 0.5  # this share of a column's plain lines running on into the next: running text
MIN_RUN_ONS = 2


def _heavy(line: Any) -> bool:
    return bool(getattr(line, "bold", False) or getattr(line, "weight", 400) >= 600)


def _wordy(text: str) -> bool:
    """Two words or more: a line of a sentence, not a label or an identifier over the next ("subtype"
    over "attr" in a column of field names, "Afrikaans" over "af")."""
    return sum(1 for w in text.split() if sum(ch.isalpha() for ch in w) >= 2) >= 2


def runs_on(upper: Any, lower: Any) -> bool:
    """Whether ``lower`` carries on the sentence of ``upper``: right under it (a gap under a line's
    height), ``upper`` not closing a sentence, ``lower`` starting in lower case."""
    top, bottom = upper.text.rstrip(), lower.text.lstrip()
    if not top or not bottom or top.endswith(SENTENCE_END) or not bottom[0].islower():
        return False
    # a line's box can be lower than its type (some fonts' glyph boxes hold only the x-height): the
    # size, where known, keeps "right under it" at the line pitch
    height = max(upper.box[3] - upper.box[1], getattr(upper, "size", 0.0))
    return -0.5 * height <= lower.box[1] - upper.box[3] <= height


def running_text(column: Sequence[Any]) -> bool:
    """Whether one column's lines (any order) are running text: half or more of its plain lines
    (headings set heavy do not count) run on into the line under them."""
    lines = sorted(column, key=lambda ln: (ln.box[1], ln.box[0]))
    plain = [ln for ln in lines if not _heavy(ln)]
    ons = sum(1 for a, b in itertools.pairwise(lines) if not _heavy(a) and _wordy(a.text) and runs_on(a, b))
    return ons >= MIN_RUN_ONS and ons >= RUN_ON_SHARE * len(plain)


def by_start(lines: Sequence[Any], body: float) -> list[list[Any]]:
    """``lines`` grouped by where they start, left to right: a line starting within a body height of
    its group's first line is in that group."""
    groups: list[list[Any]] = []
    for ln in sorted(lines, key=lambda ln: ln.box[0]):
        if groups and ln.box[0] - groups[-1][0].box[0] <= body:
            groups[-1].append(ln)
        else:
            groups.append([ln])
    return groups


MIN_COLUMN_LINES = 3  # lines starting at one x that make a column
COVER_SHARE = 0.8  # the columns of running text hold this share of the lines: the whole is text
HANG = 2.0  # × body size: how far a list's labels may hang out to the left of their running column


def text_columns(lines: Sequence[Any], body: float) -> bool:
    """Whether ``lines`` (a layout model's table region) are two or more columns of running text
    side by side: the lines grouped by where they start (within a body height), two groups of three
    or more that are running text, and the groups of three or more together nearly all the lines. A
    table's column of labels or figures does not run on, and figures set flush right start at no
    shared x.

    A group that does not run on may still belong to a running column: a narrow justified column's
    wide spaces part some of its lines, so their second pieces start at odd places inside it, and a
    list's labels hang out to its left by a few characters, their lines running into the column (the
    GNU FDL set in seven columns). Such groups count with the column. A table's column of labels
    lies wholly left of its descriptions, and keeps the region a table."""
    columns = [g for g in by_start(lines, body) if len(g) >= MIN_COLUMN_LINES]
    running = [g for g in columns if running_text(g)]
    if len(running) < 2:
        return False
    spans = [(min(ln.box[0] for ln in g), max(ln.box[2] for ln in g)) for g in running]

    def part_of(g: list[Any]) -> bool:
        for x0, x1 in spans:
            within = all(x0 - HANG * body <= ln.box[0] and ln.box[2] <= x1 + body / 2 for ln in g)
            if within and 2 * sum(1 for ln in g if ln.box[2] >= x0 + body) >= len(g):
                return True
        return False

    rest = [g for g in columns if g not in running]
    return sum(len(g) for g in columns) >= COVER_SHARE * len(lines) and all(part_of(g) for g in rest)


GRID_RUN_COLUMNS = 3  # columns of a word grid whose lines run on: running text set in narrow columns
MANY_TEXT_COLUMNS = 5  # this many such columns are text whatever their widths
SAME_MEASURE = 1.25  # columns of text whose widths are within this ratio share one measure


def prose_grid(lines: Sequence[Any], page: Sequence[Any], body: float) -> bool:
    """Whether a grid of words (``lines``) is columns of running text: half or more of its plain lines
    run on into the page's line right under them (``page``: every line of the page, so a sentence may
    run on out of the grid's last row), in ``GRID_RUN_COLUMNS`` or more of its columns (lines grouped
    by where they start) of one width, or in ``MANY_TEXT_COLUMNS``. A table's cells may wrap, but
    mostly in a column or two of descriptions; its labels and figures do not run on."""
    plain = [ln for ln in lines if not _heavy(ln)]
    if not plain:
        return False

    ordered = sorted(page, key=lambda b: b.box[1])
    tops = [b.box[1] for b in ordered]

    def below(a: Any) -> Any | None:
        """The nearest line under ``a`` that shares some of its width (only lines starting within
        two of its heights below are looked at: a run-on is right under)."""
        reach = a.box[3] + 2 * max(a.box[3] - a.box[1], getattr(a, "size", 0.0))
        for b in ordered[bisect.bisect_right(tops, a.box[1]) : bisect.bisect_right(tops, reach)]:
            if b is not a and min(a.box[2], b.box[2]) - max(a.box[0], b.box[0]) > 0:
                return b
        return None

    # a label over a value in lower case ("Afrikaans" over "af") is no sentence: a run-on's upper line
    # holds words of a sentence
    ons = [a for a in plain if _wordy(a.text) and (b := below(a)) is not None and runs_on(a, b)]
    if len(ons) < RUN_ON_SHARE * len(plain):
        return False
    columns = by_start(ons, body)
    if len(columns) < GRID_RUN_COLUMNS:
        return False
    # A table whose cells wrap in three columns (a risk, its description, what is done about it) has
    # columns of different widths; columns of text share one measure, unless there are many of them.
    widths = [max(ln.box[2] for ln in c) - min(ln.box[0] for ln in c) for c in columns]
    return len(columns) >= MANY_TEXT_COLUMNS or max(widths) <= SAME_MEASURE * min(widths)


LEVEL_LINES = 2  # lines starting at one indent that make a level of a list column
RAGGED = 2.0  # × body size: right edges spread this far are a ragged edge (no column set flush right)
MAX_STEP = 2.0  # × body size: the most a list indents one level further (an em or two)
TOGETHER = 0.5  # correlation of the starts of lines side by side in two columns that indent together


def _columns_by_extent(lines: Sequence[Any]) -> list[list[Any]]:
    """``lines`` grouped into columns by their horizontal extents, left to right: a line overlapping
    the extent of the column so far joins it."""
    columns: list[list[Any]] = []
    right = float("-inf")
    for ln in sorted(lines, key=lambda ln: ln.box[0]):
        if columns and ln.box[0] < right:
            columns[-1].append(ln)
            right = max(right, ln.box[2])
        else:
            columns.append([ln])
            right = ln.box[2]
    return columns


def _indents(column: Sequence[Any], body: float) -> list[float]:
    """Where a column's lines start, as offsets from its leftmost start: the starts shared by
    ``LEVEL_LINES`` or more lines, within half a body height (a glyph's side bearing or a chart's
    samples set a few points apart are no indent; a list's indent is half an em or more)."""
    starts = sorted(ln.box[0] for ln in column)
    levels: list[list[float]] = []
    for x in starts:
        if levels and x - levels[-1][0] <= body / 2:
            levels[-1].append(x)
        else:
            levels.append([x])
    return [lv[0] - starts[0] for lv in levels if len(lv) >= LEVEL_LINES]


def _one_line_a_row(column: Sequence[Any]) -> bool:
    """Whether no two of a column's lines stand side by side (a list column holds one entry a row; the
    columns of a table under one spanning head do not)."""
    rows = sorted(column, key=lambda ln: ln.box[1])
    return all(b.box[1] >= a.box[3] - 0.5 * (a.box[3] - a.box[1]) for a, b in itertools.pairwise(rows))


def list_columns(lines: Sequence[Any], body: float) -> bool:
    """Whether a grid of words is one indented list set in two or more columns (a list of packages,
    their parts and languages, each level set in a step further, run on from the foot of one column
    to the head of the next): two or more of its columns start their lines at two or more levels,
    the same steps in each, with a ragged right edge. Row by row, such columns line up like a table's,
    but a table aligns each column's cells at one edge or their centres; only its first column may
    indent (row labels under a group's label), and figures are set flush right. A level is at most
    ``MAX_STEP`` further in, and a list column holds one line a row: a table's columns under one
    spanning head, taken as one extent, start at a column's width apart and share their rows. Columns
    that step in and out together, row by row, are one table (``_indent_together``)."""
    columns = _columns_by_extent(lines)
    indented: list[tuple[list[Any], list[float]]] = []
    for column in columns:
        levels = _indents(column, body)
        edges = [ln.box[2] for ln in column]
        steps = [b - a for a, b in itertools.pairwise(levels)]
        if (
            len(levels) >= 2
            and max(steps) <= MAX_STEP * body
            and max(edges) - min(edges) >= RAGGED * body
            and _one_line_a_row(column)
        ):
            indented.append((column, levels))
    if len(indented) < 2:
        return False
    first = indented[0]

    def same_steps(levels: list[float]) -> bool:
        shorter, longer = sorted((first[1], levels), key=len)
        return all(any(abs(a - b) <= body / 4 for b in longer) for a in shorter)

    return all(same_steps(levels) for _, levels in indented[1:]) and not _indent_together(
        first[0], indented[1][0]
    )


def _indent_together(left: list[Any], right: list[Any]) -> bool:
    """Whether two indented columns step in and out row by row together (a directory tree beside its
    descriptions, each description set in about as far as its directory): then each row is one entry
    across both, a table. The two halves of one list set in columns do not: the right column's rows
    carry on the list where the left one ended, so its indents follow the left one's no more than by
    chance. Together: the starts of the lines side by side correlate (``TOGETHER``)."""
    pairs = []
    for a in left:
        height = a.box[3] - a.box[1]
        beside = [b for b in right if min(a.box[3], b.box[3]) - max(a.box[1], b.box[1]) > 0.5 * height]
        if beside:
            pairs.append((a.box[0], beside[0].box[0]))
    if len(pairs) < 3:
        return False
    try:
        return statistics.correlation([x for x, _ in pairs], [y for _, y in pairs]) >= TOGETHER
    except statistics.StatisticsError:  # one of them does not indent beside the other's rows
        return False
