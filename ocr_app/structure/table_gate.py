"""Whether a born-digital page may hold a table, so that the layout model is asked about it.

Why: the layout model costs about 0.10 CPU s a page, more than the rest of a plain page's reading
(0.02-0.07 s), so it is asked only where a table may stand: the page draws rulings or cell fills, or
three rows hold pieces of words set a cell gap apart (three pieces or more, or two of which one is
short: a label, a number). A page set in two columns of running text has two pieces in every row,
and one of them is short wherever a paragraph ends in one column beside a full line of the other:
pages of two-column papers and reports passed the test on their paragraph ends alone, and paid for
the model (0.25-0.35 CPU s a page instead of 0.06) where they hold no table. The gap between the
columns (``column_gutter``) is no cell gap: rows are judged on each side of it apart, so a table set in
one column still counts. Nor is a mark hung before a line of text ("6.1", "33.", "•" set apart in the
margin) a cell beside it: ICDAR 2013's EU reports asked the model on 14 pages for their numbered
sections and paragraphs alone.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from ocr_app.structure.lines import TextLine, group_rows
from ocr_app.structure.paragraphs import GLYPH_BULLETS
from ocr_app.structure.rule_frames import Piece, piece_spans

MIN_ROWS = 3  # rows of pieces a cell gap apart that make a page worth the model
SHORT_WORDS = 3  # a piece of at most this many words is a label or a figure, a cell's content
LONG_WORDS = 4  # a piece of this many words or more may be a full line of a column of text
MIN_PROSE_ROWS = 6  # rows of two long pieces at one gutter: the page is set in two columns
ALIGNED_SHARE = 0.8  # of those rows, this share has its right piece start at one place (within a body size)


def worth_looking(lines: Sequence[TextLine], body: float, *, drawn: bool) -> bool:
    """Whether a page may hold a table (``drawn``: it draws rulings or cell fills)."""
    if drawn:
        return True
    rows = [cut for row in group_rows(lines) if len(cut := piece_spans(row.items, body)) >= 2]
    gutter = column_gutter(rows, body)
    count = 0
    for cut in rows:
        groups = apart(cut, gutter, body) if gutter else [cut]
        if any(_cells(g) for g in groups):
            count += 1
            if count >= MIN_ROWS:
                return True
    return False


def _cells(group: Sequence[Piece]) -> bool:
    """Pieces that may be a table row's cells: three or more, or two of which one is short and which
    are not a list's or a section's mark before its line of text (``_marked``)."""
    if len(group) < 2:
        return False
    if len(group) >= 3:
        return True
    return min(len(" ".join(p.words).split()) for p in group) <= SHORT_WORDS and not _marked(group)


def _marked(pair: Sequence[Piece]) -> bool:
    """A bullet or a number alone ("•", "33.", "5.2.1.", "(b)") set apart before a long piece of text:
    a list item's or a numbered section's first line, its mark hung in the margin."""
    mark, text = pair
    return len(mark.words) == 1 and _long(text) and bool(_MARK.match(mark.words[0]))


_MARK = re.compile(
    rf"^(?:[{GLYPH_BULLETS}\-–—*]|\(?(?:\d{{1,3}}(?:\.\d{{1,3}}){{0,4}}|[a-zA-Z]|[ivxIVX]{{1,4}})[.)]?)$"
)


def _long(piece: Piece) -> bool:
    return len(piece.words) >= LONG_WORDS


def column_gutter(rows: Sequence[Sequence[Piece]], body: float) -> tuple[float, float] | None:
    """The gap between two columns of running text, as (where the left column's lines end at most,
    where the right column's lines start), from the rows holding one long piece on each side: at least
    ``MIN_PROSE_ROWS`` of them, nearly all with their right piece starting at one place (a column's
    lines start flush; paragraph ends and indents stay within a body size). None: no such gap."""
    prose = [cut for cut in rows if len(cut) == 2 and _long(cut[0]) and _long(cut[1])]
    if len(prose) < MIN_PROSE_ROWS:
        return None
    start = statistics.median(cut[1].x0 for cut in prose)
    aligned = [cut for cut in prose if abs(cut[1].x0 - start) <= body]
    if len(aligned) < max(MIN_PROSE_ROWS, ALIGNED_SHARE * len(prose)):
        return None
    return max(cut[0].x1 for cut in aligned), start


def apart(cut: Sequence[Piece], gutter: tuple[float, float], body: float) -> list[list[Piece]]:
    """A row's pieces on each side of the gutter (the lines of two columns side by side), or the
    whole row where a piece stands across it (a line over both columns, or a table's)."""
    end, start = gutter
    left = [p for p in cut if p.x1 <= end + body / 2]
    rest = [p for p in cut if p.x0 >= start - body]
    if not left or not rest or len(left) + len(rest) != len(cut):
        return [list(cut)]
    return [left, rest]
