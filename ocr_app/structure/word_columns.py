"""Columns of a table without rules from the words' own positions (issue 25).

Why words, not lines: PyMuPDF returns the cells of one row as one piece when nothing but a space
separates them ("Toronto Yes"), so a table's columns are the white strips that no word of its rows
touches; pieces are cut there (``cut``). The text layer gives each word's x-range from its glyphs;
OCR lines get estimates in proportion to their characters (``words_of``). Numbers set one space
apart at a row's end are cut into cells of their own (``split_numbers``).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from ocr_app.schema import Box

logger = logging.getLogger(__name__)


NUMERIC = re.compile(r"^[\s$€£¥(+\-−–]*[\d.,]+%?[)\s%]*$|^(?:n/?a|-|—|–)$", re.I)


def is_figure(text: str) -> bool:
    """A number ("1,012.50", "(804.2)", "12%"), not a placeholder such as "n/a" (which ``NUMERIC``
    takes as a table's figure cell too)."""
    text = text.strip()
    return bool(NUMERIC.match(text)) and any(ch.isdigit() for ch in text)


class Piece(Protocol):
    text: str
    box: Box
    bold: bool
    weight: int
    in_figure: bool
    words: tuple[tuple[float, float], ...]  # x-ranges of the words of ``text``; () when unknown


Word = tuple[str, float, float]  # text, x0, x1


MIN_SEPARATOR = 0.2  # × body size: the narrowest white strip between two columns (about one space)


def is_mono(p: Piece) -> bool:
    """Set in a monospaced font: its spaces are content (code, a hex dump), never a cell gap."""
    return bool(getattr(p, "mono", False))


def words_of(p: Piece) -> list[Word]:
    """The piece's words with their x-ranges: the glyphs' own where the engine gave them, else
    estimated in proportion to the characters before them (OCR lines)."""
    tokens = list(re.finditer(r"\S+", p.text))
    known = getattr(p, "words", ())
    if known and len(known) == len(tokens):
        return [(t.group(), a, b) for t, (a, b) in zip(tokens, known, strict=True)]
    x0, width, n = p.box[0], p.box[2] - p.box[0], max(len(p.text), 1)
    return [(t.group(), x0 + width * t.start() / n, x0 + width * t.end() / n) for t in tokens]


def separators(rows: Sequence[Sequence[Piece]], body: float) -> list[tuple[float, float]]:
    """White vertical strips between columns: x-ranges no word of any row touches, at least
    ``MIN_SEPARATOR`` × body wide. A strip no piece crosses parts two columns (as the pieces' own
    gaps do); a strip that falls between two words of a piece ("Toronto Yes": cells set one space
    apart come as one piece) parts columns only where other cells line up on it — at least one
    piece starts at its right edge (a number may end at its left one), and with the crossing
    pieces' own words there, two edges in all — so word spaces that happen to line up in a column
    of text, right of shorter cells, cut nothing."""
    pieces = [(p, words_of(p)) for r in rows for p in r]
    spans = sorted((a, b) for _, words in pieces for _, a, b in words)
    if not spans:
        return []
    free: list[tuple[float, float]] = []
    end = spans[0][1]
    for a, b in spans[1:]:
        if a - end >= MIN_SEPARATOR * body:
            free.append((end, a))
        end = max(end, b)
    tol = 0.25 * body
    seps = []
    for s0, s1 in free:
        crossing = [w for _, w in pieces if w and w[0][1] < s0 and w[-1][2] > s1]
        if any(is_mono(p) and w[0][1] < s0 and w[-1][2] > s1 for p, w in pieces if w):
            continue
        if crossing:
            # Edges on the strip: cells that start at its right edge (or numbers that end at its
            # left one, right-aligned), and the crossing pieces' words that do.
            edges = sum(
                1
                for p, w in pieces
                if w
                and not (w[0][1] < s0 and w[-1][2] > s1)
                and (
                    abs(w[0][1] - s1) <= tol or (abs(w[-1][2] - s0) <= tol and NUMERIC.match(p.text.strip()))
                )
            )
            inner = sum(
                1
                for w in crossing
                if any(abs(a - s1) <= tol for _, a, _ in w) or any(abs(b - s0) <= tol for *_, b in w)
            )
            if edges < 1 or edges + inner < 2:
                continue
        seps.append((s0, s1))
    if seps and any(STRAY_DOTS.match(t) for _, words in pieces for t, _, _ in words):
        return _without_stray_dots(rows, seps)
    return seps


STRAY_DOTS = re.compile(r"^[.·•…‥]+$")  # what is left of a leader when OCR drops most of its dots
STRAY_ROWS = 0.1  # a column of dots alone in at most this share of a run's rows (one at least) is none


def _without_stray_dots(
    rows: Sequence[Sequence[Piece]], seps: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """The separators less those that only fence in a leader's stray dots ("DESIGN & LIVING WINTER •
    140" where OCR kept one of the dots): a column whose words are all dots, in a few of the rows, is
    no column, and joins its neighbour across the narrower of its two strips. A column of marks with a
    head over it ("Pro" over "•" ticks) holds a word, so it stays."""
    seps = list(seps)
    most = max(1, int(STRAY_ROWS * len(rows)))
    while seps:
        held: list[list[tuple[int, str]]] = [[] for _ in range(len(seps) + 1)]
        for i, r in enumerate(rows):
            for p in r:
                for text, a, b in words_of(p):
                    held[sum(1 for s in seps if s[1] <= (a + b) / 2)].append((i, text))
        stray = next(
            (
                k
                for k, words in enumerate(held)
                if words and len({i for i, _ in words}) <= most and all(STRAY_DOTS.match(t) for _, t in words)
            ),
            None,
        )
        if stray is None:
            break
        sides = [j for j in (stray - 1, stray) if 0 <= j < len(seps)]
        seps.pop(min(sides, key=lambda j: seps[j][1] - seps[j][0]))
    return seps


def columns_between(rows: Sequence[Sequence[Piece]], seps: list[tuple[float, float]]) -> list[list[float]]:
    """The x-ranges of the rows' words between consecutive separators: the table's columns."""
    cols: list[list[float]] = [[] for _ in range(len(seps) + 1)]
    for r in rows:
        for p in r:
            for _, a, b in words_of(p):
                k = sum(1 for s in seps if s[1] <= (a + b) / 2)
                cols[k].extend((a, b))
    return [[min(c), max(c)] for c in cols if c]


def grid_columns(rows: Sequence[Sequence[Piece]], body: float) -> list[list[float]]:
    """The column x-ranges of a run's rows: split at the separators (``separators``)."""
    return columns_between(rows, separators(rows, body)) if rows else []


def opens(a: Word, b: Word, sep: tuple[float, float], body: float) -> bool:
    """Whether the space between two words, at least a narrow space wide, opens onto the separator."""
    return a[2] < sep[1] and b[1] > sep[0] and b[1] - a[2] >= MIN_SEPARATOR * body


def cut(row: Sequence[Piece], seps: list[tuple[float, float]], body: float) -> list:
    """The row with its pieces cut where a separator crosses them: for each separator, at the space
    between two words of the row that overlaps it most, when that space lies inside a piece."""
    words = sorted(((w, k) for k, p in enumerate(row) for w in words_of(p)), key=lambda t: t[0][1])
    cuts: dict[int, set[int]] = {}  # piece → indexes of its words that start a new part
    for s in seps:
        opening = [j for j in range(1, len(words)) if opens(words[j - 1][0], words[j][0], s, body)]
        if not opening:
            continue
        j = max(opening, key=lambda j: min(words[j][0][1], s[1]) - max(words[j - 1][0][2], s[0]))
        (_, k), (w, k2) = words[j - 1], words[j]
        if k == k2:
            cuts.setdefault(k, set()).add([x[1] for x in words_of(row[k])].index(w[1]))
    out: list = []
    for k, p in enumerate(row):
        if k not in cuts or is_mono(p):
            out.append(p)
            continue
        own = words_of(p)
        # (a right-to-left line lists its words from the right: a cut may fall at its first word)
        out.extend(part(p, own[a:b]) for a, b in itertools.pairwise([0, *sorted(cuts[k]), len(own)]) if a < b)
    return out


@dataclass
class Part:
    """A word or words cut out of a piece whose cells were set one space apart."""

    text: str
    box: Box
    bold: bool
    weight: int
    in_figure: bool = False
    words: tuple[tuple[float, float], ...] = ()


def split_numbers(row: Sequence[Piece], most: int) -> list:
    """The row with trailing runs of numbers cut out of its pieces ("Net income 400.3 480.1" →
    "Net income", "400.3", "480.1"): cells set one space apart come as one piece. A single trailing
    number is cut only when the row has fewer pieces than the run's fullest row."""
    out: list = []
    for p in row:
        words = words_of(p)
        k = len(words)
        while k > 0 and NUMERIC.match(words[k - 1][0]):
            k -= 1
        numbers = len(words) - k
        if numbers == 0 or len(words) < 2 or (numbers == 1 and len(row) >= most) or is_mono(p):
            out.append(p)
            continue
        if k:
            out.append(part(p, words[:k]))
        out.extend(part(p, [w]) for w in words[k:])
    return out


def part(p: Piece, words: Sequence[Word]) -> Part:
    """The piece's ``words`` as a piece of their own."""
    box = (words[0][1], p.box[1], words[-1][2], p.box[3])
    return Part(
        " ".join(w[0] for w in words), box, p.bold, p.weight, p.in_figure, tuple((a, b) for _, a, b in words)
    )


CENTRED = 1.5  # × body height: how far a spanning cell's middle may sit from its columns' middle
FLUSH = 0.25  # × body height: text this close to a column's edge is set flush with that column


def column_bounds(cols: Sequence[Sequence[float]]) -> list[float]:
    """The x where each column's territory starts, and the last one's end: halfway across the white
    gap between two columns' words, the outer ones at their words' edge."""
    return [cols[0][0], *((a[1] + b[0]) / 2 for a, b in itertools.pairwise(cols)), cols[-1][1]]


def centred_span(
    x0: float, x1: float, cols: Sequence[Sequence[float]], body: float, blocked: Collection[int] = ()
) -> tuple[int, int] | None:
    """The columns ``(first, last)`` that text from ``x0`` to ``x1`` is centred over (two or more),
    or None: when no run of columns free of ``blocked`` ones holds it centred, or when it starts or
    ends flush with a column's edge (set from that column, whatever its middle happens to be near).

    Why: a header cell over several columns ("Results" over 2020–2022) is set centred over them,
    and with no rule under it the centre is all a reader goes by; its text is often narrower than
    the columns, so the columns its ink overlaps say too little. Each column reaches halfway across
    the white gap to its neighbours (``column_bounds``); of the runs that hold the text whole with
    their middle within ``CENTRED`` body heights of the text's, the widest (a run centred over four
    columns is centred over their middle two as well), then the nearest."""
    if len(cols) < 2 or any(abs(x0 - c[0]) <= FLUSH * body or abs(x1 - c[1]) <= FLUSH * body for c in cols):
        return None
    bounds = column_bounds(cols)
    mid = (x0 + x1) / 2
    best: tuple[int, float, int, int] | None = None
    for a in range(len(cols)):
        for b in range(a, len(cols)):
            left, right = bounds[a], bounds[b + 1]
            if x0 < left - 1 or x1 > right + 1 or any(a <= c <= b for c in blocked):
                continue
            off = abs((left + right) / 2 - mid)
            if off <= CENTRED * body and (best is None or (b - a, -off) > best[:2]):
                best = (b - a, -off, a, b)
    if best is None or best[0] == 0:
        return None
    return best[2], best[3]
