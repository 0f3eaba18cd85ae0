"""Letter-spaced words read as words: the spaces MuPDF adds between their letters are taken out.

Why: designed documents set headings, kickers and buttons with tracking ("A N N U A L  R E P O R T",
a "COPY" button). MuPDF puts a *synthetic* space into every gap it finds wide enough, so each letter
becomes a word of its own: the heading reads "A N N U A L", search and the heading tree miss it.
A synthetic space is a word space only where its gap is clearly wider than the line's tracking.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

MIN_TRACKING = 0.04  # × type size: a line whose letters stand this far apart is letter-spaced
WORD_EXTRA = 0.1  # × type size: a word space is at least this much wider than the tracking
MAX_TRACKING = 0.5  # × type size: wider "tracking" between single characters is a table's columns
MIN_RUN = 3  # single characters in a row, each after a synthetic space, that may be one spaced word
UNIFORM = 0.05  # × type size: the gaps of one letter-spaced word differ by at most this


def _visible(ch: dict) -> bool:
    return not ch["c"].isspace()


def drop_tracking_spaces(spans: Sequence[dict]) -> None:
    """Remove from ``spans`` (a rawdict line's spans, left to right) the synthetic spaces that
    stand between the letters of one letter-spaced word. Real space glyphs are never touched."""
    seq = [(k, ch) for k, span in enumerate(spans) for ch in span.get("chars", ())]
    if not any(ch.get("synthetic") for _, ch in seq):
        return
    glyphs = [ch for _, ch in seq if _visible(ch)]
    if any(b["bbox"][0] < a["bbox"][0] for a, b in itertools.pairwise(glyphs)):
        return  # not a plain left-to-right line
    size = statistics.median(spans[k].get("size", 10.0) or 10.0 for k, ch in seq if _visible(ch))
    tokens, spaces = _tokens(seq)
    drop = _tracked(tokens, spaces, size) | _spaced_letters(tokens, spaces, size)
    if not drop:
        return
    for span in spans:
        if span.get("chars"):
            span["chars"] = [ch for ch in span["chars"] if id(ch) not in drop]


def _tokens(seq: list[tuple[int, dict]]) -> tuple[list[list[dict]], list[dict | None]]:
    """The line's runs of glyphs, and after each run what parts it from the next: the synthetic
    space char when only synthetic spaces stand there, else None (a real space glyph, the end)."""
    tokens: list[list[dict]] = []
    spaces: list[dict | None] = []
    run: list[dict] = []
    between: list[dict] = []  # the space chars since the run's last glyph
    for _, ch in seq:
        if not _visible(ch):
            if run:
                between.append(ch)
            continue
        if between:
            tokens.append(run)
            synthetic = all(c.get("synthetic") for c in between)
            spaces.append(between[0] if synthetic else None)
            run, between = [], []
        run.append(ch)
    if run:
        tokens.append(run)
        spaces.append(None)
    return tokens, spaces


def _gap(left: list[dict], right: list[dict]) -> float:
    return right[0]["bbox"][0] - left[-1]["bbox"][2]


def _inner(token: list[dict]) -> list[float]:
    return [b["bbox"][0] - a["bbox"][2] for a, b in itertools.pairwise(token)]


def _tracked(tokens: list[list[dict]], spaces: list[dict | None], size: float) -> set[int]:
    """Synthetic spaces no wider than the tracking inside the words on either side ("C OPY": a
    tracked button at the end of a line of ordinary type)."""
    drop: set[int] = set()
    for k, space in enumerate(spaces[:-1]):
        inner = _inner(tokens[k]) + _inner(tokens[k + 1])
        if space is None or len(inner) < 2:
            continue
        tracking = statistics.median(inner)
        if tracking >= MIN_TRACKING * size and _gap(tokens[k], tokens[k + 1]) < tracking + WORD_EXTRA * size:
            drop.add(id(space))
    return drop


def _spaced_letters(tokens: list[list[dict]], spaces: list[dict | None], size: float) -> set[int]:
    """In runs of single letters or digits parted by synthetic spaces only ("A N N U A L"), the
    spaces as narrow as the run's narrowest (its tracking) when they are all alike."""
    drop: set[int] = set()
    k = 0
    while k < len(tokens):
        end = k
        while (
            end + 1 < len(tokens)
            and spaces[end] is not None
            and _letter(tokens[end])
            and _letter(tokens[end + 1])
        ):
            end += 1
        if end - k + 1 >= MIN_RUN:
            gaps = [_gap(tokens[j], tokens[j + 1]) for j in range(k, end)]
            tracking = min(gaps)
            narrow = [j for j, g in zip(range(k, end), gaps, strict=True) if g < tracking + WORD_EXTRA * size]
            alike = max(gaps[j - k] for j in narrow) - tracking <= UNIFORM * size
            if alike and 0 <= tracking <= MAX_TRACKING * size and len(narrow) >= MIN_RUN - 1:
                drop.update(id(spaces[j]) for j in narrow)
        k = end + 1
    return drop


def _letter(token: list[dict]) -> bool:
    return len(token) == 1 and token[0]["c"].isalnum()
