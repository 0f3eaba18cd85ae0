"""Structure measures for the peers benchmark: edit distance, headings, lists, tables, hyphenation.

Why separate from ``metrics``: these compare a tool's whole-document Markdown with a Markdown ground
truth written by somebody else (docling's test set), so both sides are parsed the same way: headings
are ``#`` lines, list items are ``-``/``*``/``1.`` lines, tables are pipe tables or HTML tables.
Emphasis (``**``), image placeholders and page markers are syntax, not content, and are dropped.
"""

from __future__ import annotations

import html
import itertools
import re
from dataclasses import dataclass, field

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_HTML_ROW = re.compile(r"<tr\b.*?</tr>", re.S | re.I)
_HTML_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_SEPARATOR_ROW = re.compile(r"^\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)]|[a-zA-Z][.)])\s+(.*)$")
_HYPHENATED = re.compile(r"\b([A-Za-z]{2,})-[ \t]*\n?[ \t]*([a-z]{2,})\b")
_WORD = re.compile(r"[A-Za-z]+")


def normalize(text: str) -> str:
    return " ".join(text.split())


_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def _clean(text: str) -> str:
    """Markdown escapes ("\\_"), emphasis and HTML entities are syntax, not content."""
    return normalize(html.unescape(_EMPHASIS.sub("", _ESCAPE.sub(r"\1", text))))


def split_tables(md: str) -> tuple[str, list[list[list[str]]]]:
    """The Markdown without its tables, and the tables (rows of cell texts), pipe and HTML alike."""
    tables: list[list[list[str]]] = []

    def html_table(m: re.Match[str]) -> str:
        rows = [
            [_clean(_TAG.sub(" ", c)) for c in _HTML_CELL.findall(r)] for r in _HTML_ROW.findall(m.group(0))
        ]
        tables.append([r for r in rows if r])
        return "\n\n"

    md = _HTML_TABLE.sub(html_table, md)
    out: list[str] = []
    current: list[list[str]] | None = None
    for line in md.splitlines():
        s = line.strip()
        if s.startswith("|") and s.count("|") >= 2:
            if current is None:
                current = []
                tables.append(current)
            if not _SEPARATOR_ROW.match(s):
                cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s.strip("|"))]
                current.append([_clean(c) for c in cells])
            continue
        current = None
        out.append(line)
    return "\n".join(out), [t for t in tables if t]


def plain_text(md: str) -> str:
    """Words of a Markdown document in order: syntax, comments and images removed, tables as text."""
    md = _IMAGE.sub(" ", _COMMENT.sub(" ", md))
    rest_parts: list[str] = []

    def html_table(m: re.Match[str]) -> str:
        return "\n" + _TAG.sub(" ", m.group(0)) + "\n"

    md = _HTML_TABLE.sub(html_table, md)
    for line in md.splitlines():
        s = line.strip()
        if not s or _SEPARATOR_ROW.match(s) or s == "---":
            continue
        if s.startswith("|"):
            s = " ".join(c.strip() for c in s.strip("|").split("|"))
        s = re.sub(r"^#{1,6}\s+", "", s)
        s = re.sub(r"^(?:[-*+•]|\d{1,3}[.)])\s+", "", s)
        rest_parts.append(s)
    return _clean(_TAG.sub(" ", " ".join(rest_parts)))


def ned(truth_md: str, out_md: str) -> float:
    """Normalized Levenshtein distance of the two documents' plain text (0 = identical, 1 = nothing alike)."""
    from rapidfuzz.distance import Levenshtein

    a, b = plain_text(truth_md), plain_text(out_md)
    if not a and not b:
        return 0.0
    return float(Levenshtein.normalized_distance(a, b))


def headings(md: str) -> list[str]:
    body, _ = split_tables(_COMMENT.sub("", md))
    return [
        _clean(m.group(2)) for line in body.splitlines() if (m := _HEADING.match(line)) and m.group(2).strip()
    ]


_BLOCK_START = re.compile(r"\n\s*\n|\n(?=\s{0,3}#)|\n(?=\s*(?:[-*+•]|\d{1,3}[.)])\s)")
_BREAK_WORD = re.compile(r"\w+")


def _breaks(md: str) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The word pairs a block break stands between (the last word of a paragraph, heading or list item
    and the next block's first), and every pair of neighbouring words, over the text outside tables."""
    body, _ = split_tables(_IMAGE.sub(" ", _COMMENT.sub("", md)))
    breaks: set[tuple[str, str]] = set()
    words: list[str] = []
    for block in _BLOCK_START.split(body):
        found = [w.lower() for w in _BREAK_WORD.findall(_clean(_TAG.sub(" ", block)))]
        if found and words:
            breaks.add((words[-1], found[0]))
        words += found
    return breaks, set(itertools.pairwise(words))


def paragraph_breaks(truth_md: str, out_md: str) -> tuple[int, int, int]:
    """Paragraph breaks put where the truth has one, where it has none, and missed: ``(hits, false,
    missed)``, counted over the word pairs a break stands between. Why pairs: the two documents differ
    in what they hold (furniture, figures), and a break counts only between words that are neighbours
    in the truth. NID and NED do not see breaks at all; a reader does (issue 30, round 43)."""
    truth, neighbours = _breaks(truth_md)
    out, _ = _breaks(out_md)
    out &= neighbours
    hits = len(out & truth)
    return hits, len(out) - hits, len(truth) - hits


def list_items(md: str) -> list[str]:
    body, _ = split_tables(_COMMENT.sub("", md))
    return [_clean(m.group(1)) for line in body.splitlines() if (m := _LIST_ITEM.match(line))]


def _matches(a: str, b: str, threshold: float = 80) -> bool:
    from rapidfuzz import fuzz

    return fuzz.ratio(a.lower(), b.lower()) >= threshold


@dataclass
class StructureScore:
    """Counts summed over documents (ratios are computed at the end, over all documents)."""

    docs: int = 0
    pages: int = 0
    neds: list[float] = field(default_factory=list)
    headings_truth: int = 0
    headings_found: int = 0
    headings_out: int = 0
    headings_correct: int = 0
    table_rows_truth: int = 0
    table_rows_out: int = 0
    cells_truth: int = 0
    cells_in_tables: int = 0
    list_truth: int = 0
    list_found: int = 0
    hyphenated: int = 0
    breaks_hit: int = 0
    breaks_false: int = 0
    breaks_missed: int = 0
    seconds: float = 0.0

    def add(self, truth_md: str, out_md: str, pages: int, seconds: float) -> None:
        self.docs += 1
        self.pages += pages
        self.seconds += seconds
        self.neds.append(ned(truth_md, out_md))
        th, oh = headings(truth_md), headings(out_md)
        self.headings_truth += len(th)
        self.headings_out += len(oh)
        self.headings_found += sum(1 for t in th if any(_matches(t, o) for o in oh))
        self.headings_correct += sum(1 for o in oh if any(_matches(t, o) for t in th))
        _, ttables = split_tables(truth_md)
        _, otables = split_tables(out_md)
        self.table_rows_truth += sum(len(t) for t in ttables)
        self.table_rows_out += sum(len(t) for t in otables)
        inside = normalize(" ".join(c for t in otables for r in t for c in r)).lower()
        cells = [c.lower() for t in ttables for r in t for c in r if c.strip()]
        self.cells_truth += len(cells)
        self.cells_in_tables += sum(1 for c in cells if c in inside)
        ti, oi = list_items(truth_md), list_items(out_md)
        self.list_truth += len(ti)
        self.list_found += sum(1 for t in ti if any(_matches(t[:80], o[:80]) for o in oi))
        self.hyphenated += hyphenated_words(truth_md, out_md)
        hit, false, missed = paragraph_breaks(truth_md, out_md)
        self.breaks_hit += hit
        self.breaks_false += false
        self.breaks_missed += missed

    def row(self) -> dict[str, float | int]:
        import statistics

        def ratio(a: int, b: int) -> float:
            return a / b if b else float("nan")

        return {
            "docs": self.docs,
            "pages": self.pages,
            "ned": statistics.fmean(self.neds) if self.neds else float("nan"),
            "headings_found": self.headings_found,
            "headings_truth": self.headings_truth,
            "heading_recall": ratio(self.headings_found, self.headings_truth),
            "heading_precision": ratio(self.headings_correct, self.headings_out),
            "headings_out": self.headings_out,
            "table_rows_out": self.table_rows_out,
            "table_rows_truth": self.table_rows_truth,
            "cells_in_tables": ratio(self.cells_in_tables, self.cells_truth),
            "list_found": self.list_found,
            "list_truth": self.list_truth,
            "list_recall": ratio(self.list_found, self.list_truth),
            "hyphenated": self.hyphenated,
            "break_precision": ratio(self.breaks_hit, self.breaks_hit + self.breaks_false),
            "break_recall": ratio(self.breaks_hit, self.breaks_hit + self.breaks_missed),
            "s_per_page": self.seconds / self.pages if self.pages else float("nan"),
        }


def hyphenated_words(truth_md: str, out_md: str) -> int:
    """Words the output leaves split by a line-end hyphen ("docu- ment" / "docu-ment") where the truth
    has the whole word ("document") and not the hyphenated form."""
    truth_plain = plain_text(truth_md).lower()
    vocab = {w.lower() for w in _WORD.findall(truth_plain)}
    count = 0
    for m in _HYPHENATED.finditer(_COMMENT.sub(" ", out_md)):
        a, b = m.group(1), m.group(2)
        joined = (a + b).lower()
        if joined in vocab and f"{a}-{b}".lower() not in truth_plain:
            count += 1
    return count
