"""The reading order of a right-to-left span's glyphs, from where they stand on the page.

Why: PDF producers write Arabic, Persian and Hebrew glyphs in an order of their own. Letters mostly
come in reading order, but punctuation often does not: the comma after a word is written before it
("،وعليه" for "وعليه،"), a colon lands after the space that follows it. A reader takes an RTL line
from right to left, so the glyphs' positions give the order; only runs of left-to-right text inside
it (digits, Latin words, "2024-2026") read left to right. Combining marks stay with their letter,
and a zero-width glyph stays with the glyph written after it (a lam-alef ligature's alef, mended
later by the caller).
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Sequence

_RTL = {"R", "AL"}
_NUMBER = {"EN", "AN"}
_IN_NUMBER = {"ES", "CS", "ET"}  # one of these between two digits keeps the number whole ("3.5", "2024-2026")


def _bidi(ch: dict) -> str:
    c = ch["c"]
    return unicodedata.bidirectional(c[0]) if c else ""


def is_rtl_span(chars: Sequence[dict]) -> bool:
    """Most of the span's strong letters are right-to-left."""
    classes = [_bidi(ch) for ch in chars]
    rtl = sum(1 for b in classes if b in _RTL)
    return rtl > 0 and rtl >= sum(1 for b in classes if b == "L")


def _clusters(chars: Sequence[dict], size: float) -> list[list[dict]]:
    out: list[list[dict]] = []
    glue = False  # the previous glyph had no width: it goes with this one
    for ch in chars:
        box = ch["bbox"]
        mark = bool(ch["c"]) and unicodedata.category(ch["c"][0]) in ("Mn", "Me")
        if out and (mark or glue):
            out[-1].append(ch)
        else:
            out.append([ch])
        glue = not ch["c"].isspace() and box[2] - box[0] < 0.05 * size and not mark
    return out


def _x(cluster: list[dict]) -> float:
    base = next((ch for ch in cluster if ch["bbox"][2] - ch["bbox"][0] > 0), cluster[0])
    return (base["bbox"][0] + base["bbox"][2]) / 2


def _ltr_run_end(kinds: list[str], touching: list[bool], k: int) -> int:
    """End of the left-to-right run starting at ``k`` (``k`` when none starts there), in right-to-left
    order. Latin text runs from one Latin letter to the last one before the next RTL letter, taking
    the spaces, digits and punctuation between (a name, "Windows 10"); a number alone is its digits
    and single separators touching them (``touching[j]``: cluster ``j`` touches ``j + 1``), so
    "2024 - 2026" stays two numbers in their RTL order."""
    n = len(kinds)
    if kinds[k] == "L":
        last = k
        j = k + 1
        while j < n and kinds[j] not in _RTL:
            if kinds[j] == "L":
                last = j
            j += 1
        return last + 1
    if kinds[k] in _NUMBER:
        j = k + 1
        while j < n:
            if kinds[j] in _NUMBER:
                j += 1
            elif (
                kinds[j] in _IN_NUMBER
                and j + 1 < n
                and kinds[j + 1] in _NUMBER
                and touching[j - 1]
                and touching[j]
            ):
                j += 2
            else:
                break
        return j
    return k


def _edges(cluster: list[dict]) -> tuple[float, float]:
    return min(ch["bbox"][0] for ch in cluster), max(ch["bbox"][2] for ch in cluster)


def _gap(a: list[dict], b: list[dict]) -> float:
    """The white space between two clusters side by side (0 when they touch or overlap)."""
    (a0, a1), (b0, b1) = _edges(a), _edges(b)
    return max(0.0, a0 - b1, b0 - a1)


def logical_order(chars: Sequence[dict], size: float) -> list[dict]:
    """The span's glyphs in reading order (see the module doc).

    Spaces are placed again, not sorted: a producer that writes a Latin word into an RTL line may put
    its space on the word's right, where sorting would move it to the wrong side. A space goes between
    two neighbours in reading order when a space glyph stood between them or they are a word gap
    (a quarter of the font size) apart."""
    ink = [ch for ch in chars if not ch["c"].isspace()]
    if not ink:
        return list(chars)
    gaps = [((ch["bbox"][0] + ch["bbox"][2]) / 2) for ch in chars if ch["c"].isspace()]
    clusters = _clusters(ink, size)
    ordered = sorted(clusters, key=lambda c: -_x(c))  # stable: glyphs at one x keep their order
    kinds = [_bidi(c[0]) for c in ordered]
    touching = [_gap(a, b) < 0.25 * size for a, b in itertools.pairwise(ordered)] + [False]
    runs: list[list[dict]] = []
    k = 0
    while k < len(ordered):
        end = _ltr_run_end(kinds, touching, k)
        runs.extend(reversed(ordered[k:end]) if end > k else ordered[k : k + 1])
        k = max(end, k + 1)
    out: list[dict] = []
    for a, b in zip([None, *runs], runs, strict=False):
        if a is not None:
            (a0, a1), (b0, b1) = _edges(a), _edges(b)
            lo, hi = (b1, a0) if b1 <= a0 else (a1, b0)  # the space between them, either way round
            if _gap(a, b) >= 0.25 * size or any(lo <= g <= hi for g in gaps):
                y0, y1 = b[0]["bbox"][1], b[0]["bbox"][3]
                out.append({"c": " ", "bbox": (min(lo, hi), y0, max(lo, hi), y1)})
        out.extend(b)
    if out and gaps:  # a space at the span's edge separates it from the next span (or the one before)
        left, right = min(ch["bbox"][0] for ch in ink), max(ch["bbox"][2] for ch in ink)
        y0, y1 = out[0]["bbox"][1], out[0]["bbox"][3]
        if any(g > right for g in gaps):
            out.insert(0, {"c": " ", "bbox": (right, y0, right, y1)})
        if any(g < left for g in gaps):
            out.append({"c": " ", "bbox": (left, y0, left, y1)})
    return out


__all__ = ["is_rtl_span", "logical_order"]
