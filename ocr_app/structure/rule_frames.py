"""Table regions that horizontal rules alone draw (booktabs style): a top rule, a rule under the head
and a bottom rule of one width, with rows of cells between them.

Why: the layout model misses some tables set with horizontal rules only, when their cells hold
words rather than figures (ICDAR 2013's us-019: "Variable | Assumption", labels flush left beside
notes flush right, group heads between). It boxes the labels and the notes as blocks of text, and the
word-position rules found only the rows between two group heads. The rules say where the table is;
the structure model then reads the region as it reads the layout model's tables, with the same
checks (no running text side by side, cells that hold the words in a grid).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import NamedTuple

from ocr_app.schema import Box
from ocr_app.structure.lines import Rule, TextLine, group_rows

SAME_EDGE = 1.0  # × body size: rules whose ends are this close have one width
MIN_RULES = 3  # top rule, head rule, bottom rule
MAX_HEAD_ROWS = 3  # the band between the top rule and the next holds at most this many rows of text
MIN_CELL_ROWS = 3  # the region holds at least this many rows of pieces a cell gap apart


class Piece(NamedTuple):
    """Words of a row set close together, and where they start and end (``piece_spans``)."""

    x0: float
    x1: float
    words: list[str]


def piece_spans(items: Sequence[TextLine], body: float) -> list[Piece]:
    """The words of one row of lines in pieces, cut where two words stand a cell gap (a body size)
    apart, each with its left and right edge: PyMuPDF returns cells a few spaces apart as one line."""
    out: list[Piece] = []
    for ln in sorted(items, key=lambda i: i.box[0]):
        spans = ln.words or [(ln.box[0], ln.box[2])]
        words = ln.text.split() if ln.words else [ln.text]
        for (x0, x1), word in zip(spans, words, strict=False):
            if out and x0 - out[-1].x1 < body:
                out[-1] = Piece(out[-1].x0, x1, [*out[-1].words, word])
            else:
                out.append(Piece(x0, x1, [word]))
    return out


def pieces(items: Sequence[TextLine], body: float) -> list[list[str]]:
    """The words of one row of lines in pieces (``piece_spans`` without their edges)."""
    return [p.words for p in piece_spans(items, body)]


RULE_JOIN = 2.0  # pixels: rule pieces this close in height and end to end are one rule


def joined(rules: Sequence[Rule]) -> list[Rule]:
    """Rule pieces end to end on one level joined: a table's rules are often drawn cell by cell."""
    out: list[Rule] = []
    for x0, y, x1 in sorted(rules, key=lambda r: (round(r[1] / RULE_JOIN), r[0])):
        last = out[-1] if out else None
        if last and abs(last[1] - y) <= RULE_JOIN and x0 <= last[2] + RULE_JOIN:
            out[-1] = (last[0], last[1], max(last[2], x1))
        else:
            out.append((x0, y, x1))
    return out


def rule_frames(rules: Sequence[Rule], lines: Sequence[TextLine], body: float) -> list[Box]:
    """Boxes of tables drawn by three or more rules of one width, one under the other: between the
    first two a head of at most ``MAX_HEAD_ROWS`` rows, one of them in pieces a cell gap apart; in
    all, at least ``MIN_CELL_ROWS`` rows in such pieces; no line between the rules that runs out past
    their ends (text around a table is no cell of it). A run stops at such a line."""
    frames: list[Box] = []
    by_y = sorted(lines, key=_mid)
    mids = [_mid(ln) for ln in by_y]

    def between(y0: float, y1: float) -> list[TextLine]:  # the lines whose middle lies between
        return by_y[bisect.bisect_right(mids, y0) : bisect.bisect_left(mids, y1)]

    left = sorted(joined(rules), key=lambda r: r[1])
    while left:
        top = left.pop(0)
        x0, x1 = top[0], top[2]
        run = [top]
        for r in left:
            if abs(r[0] - x0) > SAME_EDGE * body or abs(r[2] - x1) > SAME_EDGE * body:
                continue
            over = [ln for ln in between(run[-1][1], r[1]) if ln.box[2] > x0 and ln.box[0] < x1]
            if any(ln.box[0] < x0 - body or ln.box[2] > x1 + body for ln in over):
                break
            run.append(r)
        if len(run) < MIN_RULES:
            continue
        inside = [ln for ln in between(top[1], run[-1][1]) if x0 <= (ln.box[0] + ln.box[2]) / 2 <= x1]
        head = group_rows([ln for ln in inside if _mid(ln) < run[1][1]])
        if not 1 <= len(head) <= MAX_HEAD_ROWS or not any(len(pieces(row.items, body)) >= 2 for row in head):
            continue
        if sum(1 for row in group_rows(inside) if len(pieces(row.items, body)) >= 2) >= MIN_CELL_ROWS:
            frames.append((x0, top[1], x1, run[-1][1]))
            left = [r for r in left if r[1] > run[-1][1]]
    return frames


def _mid(ln: TextLine) -> float:
    return (ln.box[1] + ln.box[3]) / 2
