"""Columns and reading order: the page cut into single-column sections (left column first, right
first on right-to-left pages), titles and full-width items kept in place between them.

How: gap analysis of the x-projection, done locally. Pairs of lines side by side (overlapping
y-ranges) with a gap of at least ``min_gutter_ratio`` × body size vote for a gutter; the x-range
inside most gaps wins. Items crossing it (titles, tables, full-width paragraphs) cut the page into
horizontal bands, so a title above two columns, or a full-width paragraph below them, stays in
place; a band with text on both sides is read left column first, recursively (three columns work
too). A global projection would miss the gutter as soon as one full-width line crosses it. Side
heads (headings in the left margin, level with their paragraph) are each put before their text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ocr_app.structure.headings import bare_label
from ocr_app.structure.lines import (
    Item,
    LayoutConfig,
    Row,
    Table,
    TextLine,
    group_rows,
    margin_label,
    size_close,
    stacked_runs,
    vertical_overlap,
)
from ocr_app.structure.paragraphs import ends_sentence

if TYPE_CHECKING:
    from ocr_app.schema import Box
    from ocr_app.structure.page import PageLayout


def run(page: PageLayout) -> None:
    page.sections = order_with_containers(page.items, page.containers, page.config, page.body, page.rtl)


def order_sections(
    items: Sequence[Item], config: LayoutConfig, body: float, rtl: bool = False
) -> list[list[Item]]:
    """Split items into single-column sections, in reading order (right column first when ``rtl``)."""
    if not items:
        return []
    gutter = find_gutter(items, config, body)
    if gutter is None:
        return [by_position(items, body)]
    g0, g1 = gutter
    left: list[Item] = []
    right: list[Item] = []
    cross: list[Item] = []
    # An item that ends inside the gutter is still a left-column line (ragged right: a longer line
    # below a short side column), one that starts inside it a right-column line; an item crosses
    # only when it reaches over the gutter into the other column.
    slack = 0.5 * body
    across = _listing_across(items, g0, g1, slack)
    for it in items:
        if id(it) in across:
            cross.append(it)
        elif it.box[2] <= max(g0 + slack, g1 - slack):
            left.append(it)
        elif it.box[0] >= min(g1 - slack, g0 + slack):
            right.append(it)
        else:
            cross.append(it)
    if not left or not right:
        return [by_position(items, body)]
    if _labels_only(left, right, body):
        return [by_position(items, body)]
    heads = _side_heads(left, right, body)
    if heads is not None:
        for head in heads:
            head.mono = False  # a term that names code, not a listing of one line
        return _side_head_sections(items, heads)
    # Crossing items cut the page into horizontal bands. A band with text on both sides of the
    # gutter is a column band (left column first); a band with text on one side only (a short last
    # line, a list marker) is single-column content and stays in line with the crossing items.
    sections: list[list[Item]] = []
    single: list[Item] = []
    pending: list[tuple[int, Item]] = []

    def flush_band() -> None:
        sides = {side for side, _ in pending}
        if len(sides) == 2:
            head = _attached_head(pending, single[-1] if single else None, body)
            single.extend(it for _, it in head)
            del pending[: len(head)]
            tail = _detached_tail(pending, body)
            if tail:
                pending[:] = pending[: len(pending) - len(tail)]
            if single:
                sections.append(by_position(single, body))
                single.clear()
            first, second = (1, 0) if rtl else (0, 1)
            sections.extend(order_sections([it for side, it in pending if side == first], config, body, rtl))
            sections.extend(order_sections([it for side, it in pending if side == second], config, body, rtl))
            single.extend(it for _, it in tail)
        else:
            single.extend(it for _, it in pending)
        pending.clear()

    def center(it: Item) -> float:
        return (it.box[1] + it.box[3]) / 2

    tagged = [(center(it), 0, it) for it in left] + [(center(it), 1, it) for it in right]
    tagged += [(center(it), 2, it) for it in cross]
    for _, side, it in sorted(tagged, key=lambda t: t[0]):
        if side == 2:
            flush_band()
            single.append(it)
        else:
            pending.append((side, it))
    flush_band()
    if single:
        sections.append(by_position(single, body))
    return sections


def _listing_across(items: Sequence[Item], g0: float, g1: float, slack: float) -> set[int]:
    """Ids of the pieces of the listings that reach over the gutter: rows of pieces all in a monospaced
    font, one right under another (``stacked_runs``), where one row stands on both sides of it; read
    as crossing it. Why: a listing's columns are set with spaces, and a gutter that other lines show
    (the names and notes of a parameter list beside it) cut an API's signature ("void", "xsltIf", its
    arguments) into the page's columns, each read on its own, its arguments' lines apart from their
    first."""
    mono = [it for it in items if isinstance(it, TextLine) and it.mono]
    return {
        id(piece)
        for run in stacked_runs(group_rows(mono))
        if any(row.box[0] < g0 - slack and row.box[2] > g1 + slack for row in run)
        for row in run
        for piece in row.items
    }


LEVEL = 0.5  # × body: items whose tops are this close stand side by side, read left to right


def by_position(items: Sequence[Item], body: float) -> list[Item]:
    """Items top to bottom, those whose tops are level (within ``LEVEL``) left to right. Why: three
    panels of a slide set at one height came out middle first, its top a thousandth of a point
    higher than the others'."""
    out: list[Item] = []
    row: list[Item] = []
    for it in sorted(items, key=lambda i: (i.box[1], i.box[0])):
        if row and it.box[1] - row[0].box[1] > LEVEL * body:
            out.extend(sorted(row, key=lambda i: i.box[0]))
            row = []
        row.append(it)
    out.extend(sorted(row, key=lambda i: i.box[0]))
    return out


MAX_SIDE_HEAD_WORDS = 6


def _side_heads(left: list[Item], right: list[Item], body: float) -> list[TextLine] | None:
    """The left "column" when it holds only side heads — short bold or larger lines, each level with
    the first line of a paragraph of the right column (a manual's headings in the margin) — else
    None. Read as a column, the headings would all come before all the text. So do the terms of a
    definition list set as a table without rules, names in code beside their descriptions (Ninja's
    tools, "query" beside "dump the inputs and outputs …": round 35)."""
    top = min(it.box[1] for it in right)
    beside = [it for it in left if it.box[3] > top]  # a title above the text is no side head
    if not beside or any(not isinstance(it, TextLine) for it in beside):
        return None
    starts = _paragraph_starts([it for it in right if isinstance(it, TextLine)], body)
    for it in beside:
        heading_like = (it.bold or it.weight >= 600 or it.size >= 1.15 * body or it.mono) and not it.in_figure
        short = len(it.text.split()) <= MAX_SIDE_HEAD_WORDS and not it.text.rstrip().endswith((".", ","))
        level = any(abs(s.box[1] - it.box[1]) <= 0.5 * body for s in starts)
        if not (heading_like and short and level):
            return None
    return beside  # type: ignore[return-value]


def _labels_only(left: list[Item], right: list[Item], body: float) -> bool:
    """Whether the right "column" holds only labels set beside lines of code (``margin_label``:
    rustdoc's "1.28.0 ·" beside an impl's signature). Read as a column, every label came after all
    the signatures (round 36); on the signature's line each goes right before it."""
    for label in right:
        if not isinstance(label, TextLine):
            return False
        level = [
            it
            for it in left
            if isinstance(it, TextLine)
            and abs((it.box[1] + it.box[3]) - (label.box[1] + label.box[3])) <= body
        ]
        if not level or margin_label(Row([*level, label])) is not label:
            return False
    return True


def _paragraph_starts(lines: list[TextLine], body: float) -> list[TextLine]:
    """Lines with a blank line (or nothing) above them in their column."""
    ordered = sorted(lines, key=lambda ln: ln.box[1])
    out = ordered[:1]
    for a, b in itertools.pairwise(ordered):
        if b.box[1] - a.box[3] >= 0.8 * body:
            out.append(b)
    return out


def _side_head_sections(items: Sequence[Item], heads: list[TextLine]) -> list[list[Item]]:
    """Each side head as a section of its own, right before the text that starts level with it."""
    ids = {id(h) for h in heads}
    rest = sorted((it for it in items if id(it) not in ids), key=lambda i: (i.box[1], i.box[0]))
    sections: list[list[Item]] = [[]]
    marks = sorted(heads, key=lambda h: h.box[1])
    k = 0
    for it in rest:
        while k < len(marks) and marks[k].box[1] <= it.box[1] + 0.5 * marks[k].size:
            sections += [[marks[k]], []]
            k += 1
        sections[-1].append(it)
    sections += [[m] for m in marks[k:]]
    return [s for s in sections if s]


def _attached_head(band: list[tuple[int, Item]], above: Item | None, body: float) -> list[tuple[int, Item]]:
    """The band's first item when it is the last line of the full-width paragraph right above the
    columns (a short last line reaches no gutter): set at that paragraph's line spacing, flush with
    its left or right edge, and above the other column's first line. Read with the column below, the
    paragraph would end in two pieces (a paper's abstract over its two columns)."""
    if not band or not isinstance(above, TextLine):
        return []
    side, it = band[0]
    others = [o for s, o in band if s != side]
    if not isinstance(it, TextLine) or not others or not size_close(it.size, above.size):
        return []
    gap = it.box[1] - above.box[3]
    flush = abs(it.box[0] - above.box[0]) <= 0.5 * body or abs(it.box[2] - above.box[2]) <= 0.5 * body
    if flush and -0.2 * body <= gap <= 0.6 * body and it.box[3] <= min(o.box[1] for o in others):
        return [band[0]]
    return []


def _detached_tail(band: list[tuple[int, Item]], body: float) -> list[tuple[int, Item]]:
    """Items at the end of a column band, on one side only, below the other column's end and after
    a clear vertical break: single-column text that follows the columns (e.g. a short full-width
    paragraph), not the continuation of the longer column."""
    other_bottom: dict[int, float] = {}
    for side, it in band:
        other_bottom[side] = max(other_bottom.get(side, 0.0), it.box[3])
    tail: list[tuple[int, Item]] = []
    k = len(band)
    while k > 0:
        side, it = band[k - 1]
        if it.box[1] <= other_bottom.get(1 - side, 0.0) + 0.5 * body:
            break
        if tail and side != tail[0][0]:
            break
        if tail and tail[0][1].box[1] - it.box[3] >= 1.5 * body:
            # a clear break: the column ends at ``it``, what follows is the tail (unless it runs on)
            return [] if _runs_on(tail[-1][1], [o for s, o in band if s == side]) else tail
        tail.insert(0, band[k - 1])
        k -= 1
    if not tail:
        return []
    side = tail[0][0]
    previous = [it for s, it in band[:k] if s == side]
    if previous and tail[0][1].box[1] - previous[-1].box[3] < 1.5 * body:
        return []
    if _runs_on(tail[-1][1], [it for s, it in band if s == side]):
        return []  # the column's last paragraph goes on at the top of the next column
    return tail


def _runs_on(last: Item, column: list[Item]) -> bool:
    """Whether ``last``, the bottom line of a column, is a full line of running text broken
    mid-sentence: the column's text goes on in the next column (a word processor fills one column
    before the next, so the first may run longer than the second), no text that follows the columns."""
    if not isinstance(last, TextLine):
        return False
    width = max((it.box[2] - it.box[0] for it in column if isinstance(it, TextLine)), default=0.0)
    text = last.text.strip()
    return bool(text) and not ends_sentence(text) and last.box[2] - last.box[0] >= FULL_LINE * width


FULL_LINE = 0.8  # × the column's widest line: a line this long was wrapped, not ended
PROSE_WIDTH = 12  # × body size: a line this wide is running text, not a label or a cell
TITLE_SIZE = 1.3  # × body size: a line this large beside running text is a title in its own column


def find_gutter(
    items: Sequence[Item], config: LayoutConfig, body: float, *, beside_text: bool = False
) -> tuple[float, float] | None:
    """The x-position most side-by-side pairs of text lines are separated at, or None.

    Two lines side by side (their y-ranges overlap) with a gap of at least a gutter between them
    are evidence of columns; the position inside the most such gaps is the gutter. Lines elsewhere
    on the page that cross it (titles, tables, short full-width lines) do not hide it, they become
    section breaks. List markers and other tiny items are not evidence (width < 2 × body size). A
    form (a ruled box read as lines of text: a key-facts box) beside the text is evidence too: it
    stands in a column of its own, and read by height alone it would cut a paragraph beside it. So does
    a filled panel (a sidebar) beside lines of text; panels beside panels (a slide's grid of boxes) are
    no evidence: read by height, a row of panels stays a row. Two tables side by side count once for
    each row they stand apart on (up to three): so their titles go with them, each over its table; so
    does a table beside lines of running text (a table in one column of a paper). ``beside_text``:
    only gaps with a line of running text on one side count (the gutter a table in one column stands
    beside; the gaps between its own cells are no columns of the page).
    """
    import numpy as np

    min_gap = config.min_gutter_ratio * body
    # A section's number set a quad before its title ("3.1.2" before "Mac OS X", four such headings on
    # a page of the TeX Live guide) is no column of its own: taken for one, it parted each heading
    # from its number (issue 30, round 24).
    solid = [
        i
        for i in items
        if (isinstance(i, TextLine) and i.box[2] - i.box[0] >= 2 * body and not bare_label(i.text))
        or (isinstance(i, Table) and (i.form or i.panel))
    ]

    def panel(it: Item) -> bool:
        return isinstance(it, Table) and it.panel

    def listing(it: Item) -> bool:
        return isinstance(it, TextLine) and it.mono

    def running(it: Item) -> bool:
        return isinstance(it, TextLine) and it.box[2] - it.box[0] >= PROSE_WIDTH * body

    def titled(it: Item) -> bool:  # a title's line: no row of running text holds it and body text
        return isinstance(it, TextLine) and it.size >= TITLE_SIZE * body

    gaps: list[tuple[float, float]] = []
    prose = 0  # gaps between two lines of running text (each ≥ PROSE_WIDTH × body)
    listed = 0  # pairs of pieces of a monospaced listing's rows
    # Only the items right of ``a`` whose heights meet its own can stand beside it: picked out at once,
    # in their order, so a dense page is no pair-by-pair scan (840 lines of an index: most of a CPU s).
    boxes = np.array([i.box for i in solid], dtype=float).reshape(-1, 4)
    for a in solid:
        nearest: Item | None = None
        level: list[Item] = []  # beside a title's line: each line of the column it stands beside
        right = boxes[:, 0] >= a.box[2] - 0.1 * body
        meets = np.minimum(boxes[:, 3], a.box[3]) - np.maximum(boxes[:, 1], a.box[1]) > 0
        for k in np.flatnonzero(right & meets):
            b = solid[k]
            if b is a or b.box[0] < a.box[2] - 0.1 * body or vertical_overlap(a.box, b.box) < 0.3:
                continue
            if panel(a) and panel(b):
                continue
            if listing(a) and listing(b):
                listed += 1  # a listing's columns, set with spaces: no columns of the page
                continue
            if nearest is None or b.box[0] < nearest.box[0]:
                nearest = b
            level.append(b)
        if nearest is None or nearest.box[0] - a.box[2] < min_gap:
            continue
        # A title's line, taller than the lines beside it, stands beside each of them.
        column = [b for b in level if abs(b.box[0] - nearest.box[0]) <= body] if titled(a) else [nearest]
        for b in column:
            text = [running(a), running(b)]
            if beside_text and not any(text):
                continue
            gaps.append((a.box[2], b.box[0]))
            prose += all(text) or (any(text) and (titled(a) or titled(b)))
    # Two tables side by side stand apart on each of their rows, as lines of two columns do.
    grids = [i for i in items if isinstance(i, Table) and i.rows and not (i.form or i.panel)]
    prose_lines = [i for i in solid if running(i)]
    for a in grids:
        beside = [
            b
            for b in grids
            if b is not a and b.box[0] - a.box[2] >= min_gap and vertical_overlap(a.box, b.box) >= 0.3
        ]
        if beside:
            b = min(beside, key=lambda t: t.box[0])
            gaps.extend([(a.box[2], b.box[0])] * min(len(a.rows), len(b.rows), 3))
        # So does a table beside two or more lines of running text: it stands in a column of its own.
        level = [ln for ln in prose_lines if vertical_overlap(ln.box, a.box) > 0]
        right = [ln for ln in level if ln.box[0] - a.box[2] >= min_gap]
        left = [ln for ln in level if a.box[0] - ln.box[2] >= min_gap]
        if len(right) >= 2:
            gaps.extend([(a.box[2], min(ln.box[0] for ln in right))] * min(len(a.rows), 3))
        if len(left) >= 2:
            gaps.extend([(max(ln.box[2] for ln in left), a.box[0])] * min(len(a.rows), 3))
    # Three pairs make a gutter; two do when both are lines of running text side by side, or one is
    # and the other a title's line, and nothing else stands side by side (the last page of a
    # two-column paper, two references left in each column; a column's title beside the last lines of
    # the other column).
    least = 2 if prose == len(gaps) and not listed else 3
    if len(gaps) < least:
        return None
    # Sweep: the x-range covered by the most gaps.
    events = sorted([(g[0], 1) for g in gaps] + [(g[1], -1) for g in gaps], key=lambda e: (e[0], e[1]))
    best, count, best_range = 0, 0, (0.0, 0.0)
    for k, (x, delta) in enumerate(events):
        count += delta
        if delta == 1 and count > best:
            nxt = events[k + 1][0] if k + 1 < len(events) else x
            best, best_range = count, (x, nxt)
    if best < least:
        return None
    return best_range


def order_with_containers(
    items: Sequence[Item], containers: Sequence[Box], config: LayoutConfig, body: float, rtl: bool = False
) -> list[list[Item]]:
    """``order_sections`` where each container (a filled panel with text on it) is read whole.

    Why: the panels of a slide stand side by side, each a title and its bullets; rows across them
    are not lines of one text, and their gutters may hold too few lines side by side to be found. Each
    container's items stand in the page's order as one block (like a table), and are then ordered
    on their own (a panel may hold columns too). A container holding a single row (a shaded heading
    bar, a highlight) is no block of its own.
    """
    held: dict[int, list[Item]] = {}
    free: list[Item] = []
    for it in items:
        k = next((k for k, c in enumerate(containers) if _inside(it.box, c)), None)
        if k is None:
            free.append(it)
        else:
            held.setdefault(k, []).append(it)
    proxies: dict[int, list[Item]] = {}
    for k, members in held.items():
        if len(group_rows([m for m in members if isinstance(m, TextLine)])) < 2:
            free.extend(members)
            continue
        proxy = Table(
            box=containers[k], rows=[], items=[m for m in members if isinstance(m, TextLine)], panel=True
        )
        proxies[id(proxy)] = members
        free.append(proxy)
    if not proxies:
        return order_sections(items, config, body, rtl)
    sections: list[list[Item]] = []
    for section in order_sections(free, config, body, rtl):
        run: list[Item] = []
        for it in section:
            if id(it) not in proxies:
                run.append(it)
                continue
            if run:
                sections.append(run)
                run = []
            sections.extend(order_sections(proxies[id(it)], config, body, rtl))
        if run:
            sections.append(run)
    return sections


def _inside(box: Box, container: Box, tol: float = 1.0) -> bool:
    return (
        box[0] >= container[0] - tol
        and box[1] >= container[1] - tol
        and box[2] <= container[2] + tol
        and box[3] <= container[3] + tol
    )
