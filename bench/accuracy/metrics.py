"""Accuracy measures: CER, WER (jiwer) and reading-order errors (rapidfuzz alignment).

Why on plain text: the engines' Markdown differs in syntax only where it should (table pipes, list
markers); CER/WER measure the words and their order, headings are checked separately.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

_SEPARATOR_ROW = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?$")
_LINE_MARKER = re.compile(r"^(#{1,6}\s+|[-*+•]\s+|\d{1,3}[.)]\s+)")


def normalize(text: str) -> str:
    return " ".join(text.split())


_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_HTML_TAG = re.compile(r"</?(?:table|thead|tbody|tr|th|td|br|caption)\b[^>]*>", re.I)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def _table_text(m: re.Match[str]) -> str:
    return "\n" + html.unescape(_HTML_TAG.sub(" ", m.group(0))) + "\n"


def markdown_to_plain(md: str) -> str:
    """Drop Markdown syntax: heading hashes, list markers, table pipes and separator rows, HTML table
    tags (the cells' text stays, in order) and code fences."""
    out: list[str] = []
    md = _HTML_TABLE.sub(_table_text, md)
    for line in md.splitlines():
        if _FENCE.match(line):
            continue
        s = line.strip()
        if not s or _SEPARATOR_ROW.match(s):
            continue
        if s.startswith("|"):
            s = " ".join(c.strip().replace("\\|", "|") for c in s.strip("|").split(" | "))
        s = _LINE_MARKER.sub("", s)
        out.append(s)
    return normalize(" ".join(out))


def cer(reference: str, hypothesis: str) -> float:
    import jiwer

    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return float(jiwer.cer(ref, hyp or " "))


def wer(reference: str, hypothesis: str) -> float:
    import jiwer

    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return float(jiwer.wer(ref, hyp or "<empty>"))


def _lis_length(seq: Sequence[float]) -> int:
    import bisect

    tails: list[float] = []
    for v in seq:
        k = bisect.bisect_left(tails, v)
        if k == len(tails):
            tails.append(v)
        else:
            tails[k] = v
    return len(tails)


def reading_order_errors(blocks: Sequence[str], hypothesis: str, snippet: int = 60) -> int:
    """Ground-truth blocks that appear out of order in the hypothesis.

    Each block's opening ``snippet`` characters are located in the hypothesis by fuzzy alignment;
    the errors are the blocks outside the longest run that appears in increasing order. Blocks that
    cannot be found at all (score < 60) count as errors too.
    """
    from rapidfuzz import fuzz

    hyp = normalize(hypothesis)
    positions: list[float] = []
    missing = 0
    for block in blocks:
        needle = normalize(block)[:snippet]
        if not needle:
            continue
        al = fuzz.partial_ratio_alignment(needle, hyp)
        if al is None or al.score < 60:
            missing += 1
            continue
        positions.append(al.dest_start)
    return missing + len(positions) - _lis_length(positions)


def heading_recall(truth_headings: Sequence[tuple[int, str]], markdown: str) -> float:
    """Fraction of true headings found as Markdown headings (any level) with ≥ 80 % similar text."""
    from rapidfuzz import fuzz

    if not truth_headings:
        return 1.0
    found = [ln.lstrip("#").strip() for ln in markdown.splitlines() if ln.startswith("#")]
    hits = sum(1 for _, t in truth_headings if any(fuzz.ratio(t, f) >= 80 for f in found))
    return hits / len(truth_headings)
