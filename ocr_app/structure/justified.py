"""Justified lines that the PDF's text extraction broke at their word spaces, joined again.

Why: in a narrow justified column (a newsletter's three columns) a line of few words gets wide, even
word spaces, and MuPDF returns its words as separate lines ("agreed", "prices", "with", "the"). Left
so, the words stand a cell gap apart like a table's cells, and the gaps of two such lines line up as
a gutter: the column was read as a table, or in word-wide strips (issue 30, round 11).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import replace

from ocr_app.schema import union_box
from ocr_app.structure.lines import TextLine, is_rtl

EVEN_GAP = 0.2  # × size: a justified line's word spaces differ by at most this (the line is spread evenly)
# × size: a wider space than this is no word space, however the line is set; a line of three words
# or more spread evenly over a narrow column may have spaces of up to ``MAX_SPREAD_GAP``.
MAX_GAP = 3.0
MAX_SPREAD_GAP = 6.0
MEASURE_WORDS = 3  # a neighbouring line of this many words or more gives the column's measure
MEASURE_LINES = 2.5  # × line height: how far above or below the measure's line may stand
EDGE = 0.5  # × size: the joined line starts and ends this close to the measure's ends


def join_justified(lines: list[TextLine]) -> list[TextLine]:
    """``lines`` with the justified lines the extraction broke joined again (``join_pass``); a line
    joined gives the measure to the broken lines near it, so passes repeat while lines join."""
    for _ in range(MAX_PASSES):
        before = len(lines)
        lines = join_pass(lines)
        if len(lines) == before:
            break
    return lines


MAX_PASSES = 4


def join_pass(lines: list[TextLine]) -> list[TextLine]:
    """``lines`` with each run of pieces on one baseline joined into one line where together they are
    a justified line: every word space in the run (between the pieces and inside them) is the same
    width, none wider than ``MAX_GAP``, and the run starts and ends where a neighbouring line of prose
    starts and ends (the column's measure). A table row's cell gaps differ from its word spaces, and
    its ends rarely meet a paragraph's."""
    # Right-to-left words are read from the right: joining them left to right would reverse them.
    flat = [
        ln
        for ln in lines
        if not ln.turns and not ln.mono and ln.words and ln.box[3] > ln.box[1] and not is_rtl(ln.text)
    ]
    if len(flat) < 3:
        return lines
    measures = sorted(
        (ln for ln in flat if len(ln.words) >= MEASURE_WORDS), key=lambda ln: (ln.box[1] + ln.box[3]) / 2
    )
    middles = [(ln.box[1] + ln.box[3]) / 2 for ln in measures]
    joined: dict[int, TextLine] = {}  # id of a run's first piece → the joined line
    gone: set[int] = set()  # ids of the run's other pieces
    rows = _baselines(flat)
    for run in _measuring_each_other(rows):
        joined[id(run[0])] = _joined(run)
        gone.update(id(p) for p in run[1:])
    taken = set(joined) | gone
    for whole in rows:
        for row in (
            list(g) for held, g in itertools.groupby(whole, key=lambda p: id(p) in taken) if not held
        ):
            k = 0
            reach = _reach(row)
            while k < len(row):
                end = _run_end(row, k, measures, middles, reach[k])
                if end > k:
                    joined[id(row[k])] = _joined(row[k : end + 1])
                    gone.update(id(p) for p in row[k + 1 : end + 1])
                k = end + 1
    if not joined:
        return lines
    return [joined.get(id(ln), ln) for ln in lines if id(ln) not in gone]


def _baselines(lines: Sequence[TextLine]) -> list[list[TextLine]]:
    """Pieces sharing a bottom edge and a size (to a fifth of the line height), left to right; only
    groups of two or more."""
    rows: list[list[TextLine]] = []
    for ln in sorted(lines, key=lambda ln: (ln.box[3], ln.box[0])):
        last = rows[-1][-1] if rows else None
        if (
            last is not None
            and abs(ln.box[3] - last.box[3]) <= 0.2 * (ln.box[3] - ln.box[1])
            and abs(ln.size - last.size) <= 0.05 * last.size
        ):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return [sorted(r, key=lambda ln: ln.box[0]) for r in rows if len(r) >= 2]


def _measuring_each_other(rows: list[list[TextLine]]) -> list[list[TextLine]]:
    """Broken runs of words that are each other's measure: two evenly spread runs of ``MEASURE_WORDS``
    words or more, each of them words (no figures), on baselines at most ``MEASURE_LINES`` apart,
    starting and ending at the same x. A narrow justified cell (a LaTeX ``p`` column) may have no
    line left whole to measure it by; a table's rows of single words rarely start and end together
    with their gaps even."""
    runs = []
    for row in rows:
        reach = _reach(row)
        for start in range(len(row) - 1):
            for end in range(reach[start], start, -1):
                run = row[start : end + 1]
                words = [w for ln in run for w in ln.text.split()]
                if len(words) >= MEASURE_WORDS and _even(run) and _spread(run) and _words(words):
                    runs.append(run)
                    break
            else:
                continue
            break
    out, taken = [], set()
    for a, b in itertools.combinations(runs, 2):
        size = max(ln.size for ln in (*a, *b))
        height = max(ln.box[3] - ln.box[1] for ln in (*a, *b))
        if (
            abs(a[0].box[0] - b[0].box[0]) <= EDGE * size
            and abs(a[-1].box[2] - b[-1].box[2]) <= EDGE * size
            and 0 < abs(a[0].box[3] - b[0].box[3]) <= MEASURE_LINES * height
        ):
            for run in (a, b):
                if id(run[0]) not in taken:
                    taken.add(id(run[0]))
                    out.append(run)
    return out


SPREAD = 0.45  # × size: word spaces this wide at least are a justified line's, spread (a space is a third)


def _spread(run: Sequence[TextLine]) -> bool:
    """Whether the run's word spaces are wider than a plain space: spread to fill a justified line
    (a table's heads side by side, set a space apart, are not)."""
    words = [w for ln in run for w in ln.words]
    size = max(ln.size for ln in run)
    return all(b[0] - a[1] >= SPREAD * size for a, b in itertools.pairwise(words))


def _words(words: Sequence[str]) -> bool:
    """Words of prose: no figure among them, most of two letters or more."""
    return not any(_DIGIT.search(w) for w in words) and sum(
        1 for w in words if _LETTERS.search(w)
    ) >= 2 / 3 * len(words)


_LETTERS = re.compile(r"[^\W\d_]{2}")
_DIGIT = re.compile(r"\d")


def _run_end(
    row: list[TextLine], start: int, measures: list[TextLine], middles: list[float], reach: int
) -> int:
    """The last piece of the longest justified run from ``row[start]`` (``start`` itself: none), at
    most ``reach`` (``_reach``)."""
    for end in range(reach, start, -1):
        run = row[start : end + 1]
        if _even(run) and _on_measure(run, measures, middles):
            return end
    return start


def _reach(row: Sequence[TextLine]) -> list[int]:
    """For each piece of ``row``, the last piece a run from it can reach and still be even (``_even``):
    a run past it holds a piece whose words do not match its text, a word space of no width or wider
    than ``MAX_SPREAD_GAP`` times the row's largest size, or two spaces further apart than
    ``EVEN_GAP`` times that size. The piece itself where no run from it can be even.

    Why: a row's runs are tried from their longest, each measured word by word, in time that grows
    with the cube of its pieces: a chart's 2,000 scattered value labels, grouped into rows of dozens,
    were most of the 14 CPU s their page still took. The row's largest size bounds every run's, so no
    run skipped could be even."""
    size = max(ln.size for ln in row)
    widest, spread = MAX_SPREAD_GAP * size, EVEN_GAP * size

    def inner(ln: TextLine) -> list[float] | None:
        if len(ln.words) != len(ln.text.split()):
            return None
        return [b[0] - a[1] for a, b in itertools.pairwise(ln.words)]

    gaps = [inner(ln) for ln in row]
    out = []
    for start in range(len(row)):
        end = start
        own = gaps[start]
        if own is not None and (
            not own or (min(own) > 0 and max(own) <= widest and max(own) - min(own) <= spread)
        ):
            lo, hi = min(own, default=float("inf")), max(own, default=float("-inf"))
            while end + 1 < len(row) and (more := gaps[end + 1]) is not None:
                new = [row[end + 1].words[0][0] - row[end].words[-1][1], *more]
                low, high = min(lo, *new), max(hi, *new)
                if not (low > 0 and high <= widest and high - low <= spread):
                    break
                lo, hi, end = low, high, end + 1
        out.append(end)
    return out


def _even(run: Sequence[TextLine]) -> bool:
    words = [w for ln in run for w in ln.words]
    if any(len(ln.words) != len(ln.text.split()) for ln in run):
        return False
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(words)]
    size = max(ln.size for ln in run)
    widest = MAX_SPREAD_GAP if len(gaps) >= 2 else MAX_GAP
    return (
        bool(gaps)
        and min(gaps) > 0
        and max(gaps) <= widest * size
        and max(gaps) - min(gaps) <= EVEN_GAP * size
    )


def _on_measure(run: Sequence[TextLine], measures: list[TextLine], middles: list[float]) -> bool:
    x0, x1 = run[0].box[0], run[-1].box[2]
    top, bottom = min(ln.box[1] for ln in run), max(ln.box[3] for ln in run)
    reach = MEASURE_LINES * (bottom - top)
    size = max(ln.size for ln in run)
    lo = bisect.bisect_left(middles, top - reach)
    hi = bisect.bisect_right(middles, bottom + reach)
    return any(
        abs(m.box[0] - x0) <= EDGE * size
        and abs(m.box[2] - x1) <= EDGE * size
        and not (top <= middles[j] <= bottom)
        for j, m in enumerate(measures[lo:hi], start=lo)
    )


def _joined(run: Sequence[TextLine]) -> TextLine:
    main = max(run, key=lambda ln: len(ln.text))
    inks = [ln.ink for ln in run]
    return replace(
        main,
        text=" ".join(ln.text for ln in run),
        box=union_box([ln.box for ln in run]),
        words=tuple(w for ln in run for w in ln.words),
        ink=(inks[0][0], inks[-1][1]) if all(inks) else (),
        bold=all(ln.bold for ln in run),
        italic=all(ln.italic for ln in run),
        weight=min(ln.weight for ln in run),
        caps_size=min(ln.caps_size for ln in run),
    )
