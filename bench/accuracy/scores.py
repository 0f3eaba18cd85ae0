"""Document scores of public PDF-to-Markdown benchmarks: NID, TEDS and MHS (see docs/ACCURACY.md).

Why these three: they are what the held-out set of issue 25 is checked with, and what public
benchmarks report for other parsers, so figures measured here can be set beside theirs.

- **NID** (normalised indel similarity): ``1 - indel(gt, pred) / (len(gt) + len(pred))`` over the
  whole Markdown, tables as HTML, emphasis markers dropped, whitespace runs collapsed
  (rapidfuzz's ``Indel``). Heading hashes and table tags count: they are part of the text a user gets.
- **TEDS** (tree-edit-distance similarity, Zhong et al. 2020): all tables of the document, pipe and
  HTML alike, as one ``<body>`` of ``<table>`` trees; nodes are tags, ``td``/``th`` carry their
  colspan, rowspan and text; renaming a cell costs the normalised Levenshtein distance of the texts
  (1 when tags or spans differ); ``1 - APTED(gt, pred) / max(|gt|, |pred|)`` (library ``apted``).
  ``None`` when the ground truth has no table; 0 when it has and the prediction has none.
- **MHS** (Markdown heading similarity): the document as a tree ``document → heading → content``,
  one node per heading in document order, one content node (the text of the lines up to the next
  heading) under the heading it follows (or under the document before the first heading); TEDS's
  formula over that tree, renaming costs as for cells. ``None`` when the ground truth has no heading,
  0 when the prediction has none. Levels are not part of MHS (the flat tree the public evaluators
  use); ``mhs_levels`` nests headings by level for a stricter figure.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser

_HTML_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)
_EMPHASIS = re.compile(r"(\*{1,3}|~~|__)(\S(?:.*?\S)?)\1", re.S)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_WS = re.compile(r"\s+")


def _collapse(text: str) -> str:
    return _WS.sub(" ", text).strip()


def strip_emphasis(text: str) -> str:
    """``**bold**`` → ``bold`` (nested markers too): emphasis is style, not text."""
    prev = None
    while prev != text:
        prev = text
        text = _EMPHASIS.sub(r"\2", text)
    return text


def _split_pipe_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _pipe_table_html(rows: list[str]) -> str:
    """Pipe-table lines → one HTML table; the rows above the separator are header cells."""
    sep = next((k for k, r in enumerate(rows) if _SEPARATOR.match(r)), None)
    out = ["<table>"]
    for k, r in enumerate(rows):
        if k == sep:
            continue
        tag = "th" if sep is not None and k < sep else "td"
        cells = "".join(f"<{tag}>{html.escape(c, quote=False)}</{tag}>" for c in _split_pipe_row(r))
        out.append(f"<tr>{cells}</tr>")
    out.append("</table>")
    return "".join(out)


def pipe_tables_to_html(md: str) -> str:
    """Markdown with every pipe table (≥ 2 lines starting with ``|``) rewritten as an HTML table."""
    out: list[str] = []
    run: list[str] = []

    def close() -> None:
        if len(run) >= 2:
            out.append(_pipe_table_html(run))
        else:
            out.extend(run)
        run.clear()

    for line in md.splitlines():
        if line.strip().startswith("|") and line.count("|") >= 2:
            run.append(line)
            continue
        close()
        out.append(line)
    close()
    return "\n".join(out)


# --- NID ---------------------------------------------------------------------------------------
def nid(gt_md: str, pred_md: str) -> float | None:
    """Normalised indel similarity of the two documents' whole Markdown (None: empty ground truth)."""
    from rapidfuzz.distance import Indel

    gt = _collapse(strip_emphasis(pipe_tables_to_html(gt_md)))
    if not gt:
        return None
    pred = _collapse(strip_emphasis(pipe_tables_to_html(pred_md)))
    return float(Indel.normalized_similarity(gt, pred))


# --- trees for APTED ---------------------------------------------------------------------------
class Node:
    """A node of a table or heading tree: tag, text (cells, headings, content) and spans."""

    def __init__(self, tag: str, text: str = "", colspan: int = 1, rowspan: int = 1) -> None:
        self.tag = tag
        self.text = text
        self.colspan = colspan
        self.rowspan = rowspan
        self.children: list[Node] = []

    def size(self) -> int:
        return 1 + sum(c.size() for c in self.children)

    def __repr__(self) -> str:  # debugging aid only
        return f"Node({self.tag!r}, {self.text[:20]!r}, {len(self.children)} children)"


def _text_distance(a: str, b: str) -> float:
    from rapidfuzz.distance import Levenshtein

    if not a and not b:
        return 0.0
    return Levenshtein.distance(a, b) / max(len(a), len(b))


def _tree_distance(a: Node, b: Node, text_nodes: frozenset[str]) -> float:
    from apted import APTED, Config

    class _Costs(Config):
        def rename(self, n1: Node, n2: Node) -> float:
            if n1.tag != n2.tag or n1.colspan != n2.colspan or n1.rowspan != n2.rowspan:
                return 1.0
            if n1.tag in text_nodes:
                return _text_distance(n1.text, n2.text)
            return 0.0

        def children(self, node: Node) -> list[Node]:
            return node.children

    return float(APTED(a, b, _Costs()).compute_edit_distance())


def tree_similarity(a: Node, b: Node, text_nodes: Iterable[str] = ("td", "th")) -> float:
    """``1 - APTED(a, b) / max(|a|, |b|)``, clipped to [0, 1]."""
    dist = _tree_distance(a, b, frozenset(text_nodes))
    return max(0.0, min(1.0, 1.0 - dist / max(a.size(), b.size(), 1)))


# --- TEDS --------------------------------------------------------------------------------------
class _TableReader(HTMLParser):
    """One HTML table → rows of ``(text, colspan, rowspan)`` (stdlib parser: no lxml needed)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[tuple[str, int, int]]] = []
        self._cell: list[str] | None = None
        self._span = (1, 1)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            if not self.rows:
                self.rows.append([])
            a = dict(attrs)
            self._span = (_int(a.get("colspan")), _int(a.get("rowspan")))
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            text = _collapse(strip_emphasis("".join(self._cell)))
            self.rows[-1].append((text, *self._span))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _int(v: str | None) -> int:
    try:
        return max(1, int(v or 1))
    except ValueError:
        return 1


def tables_tree(md: str) -> Node | None:
    """All tables of a Markdown document as one ``body`` of ``table`` trees (None: no table).

    ``th`` and ``td`` are both "a cell" (PubTabNet's TEDS has no ``th`` either); header rows are
    not scored apart."""
    tables = _HTML_TABLE.findall(pipe_tables_to_html(md))
    if not tables:
        return None
    body = Node("body")
    for src in tables:
        reader = _TableReader()
        reader.feed(src)
        table = Node("table")
        for r in reader.rows:
            row = Node("tr")
            row.children = [Node("td", text, cs, rs) for text, cs, rs in r]
            table.children.append(row)
        body.children.append(table)
    return body


def teds(gt_md: str, pred_md: str) -> float | None:
    """TEDS of all the document's tables together (None: the ground truth has no table)."""
    gt = tables_tree(gt_md)
    if gt is None:
        return None
    pred = tables_tree(pred_md)
    if pred is None:
        return 0.0
    return tree_similarity(gt, pred)


# --- MHS ---------------------------------------------------------------------------------------
def _sections(md: str) -> list[tuple[int, str, str]]:
    """``(level, heading, content)`` in order; level 0 = content before the first heading."""
    md = _HTML_TABLE.sub(lambda m: " " + re.sub(r"<[^>]+>", " ", m.group(0)) + " ", pipe_tables_to_html(md))
    out: list[tuple[int, str, list[str]]] = [(0, "", [])]
    for line in md.splitlines():
        m = _HEADING.match(line)
        if m and m.group(2).strip():
            out.append((len(m.group(1)), _collapse(strip_emphasis(m.group(2))), []))
            continue
        text = _collapse(strip_emphasis(line))
        if text:
            out[-1][2].append(text)
    return [(lvl, head, _collapse(" ".join(content))) for lvl, head, content in out]


def heading_tree(md: str, *, levels: bool = False) -> Node:
    """``document → heading → content``; with ``levels`` a heading nests under the last shallower one."""
    root = Node("document")
    stack: list[tuple[int, Node]] = [(0, root)]
    for lvl, head, content in _sections(md):
        parent = root
        if lvl:
            if levels:
                while stack[-1][0] >= lvl:
                    stack.pop()
            parent = stack[-1][1] if levels else root
            node = Node("heading", head)
            parent.children.append(node)
            if levels:
                stack.append((lvl, node))
            parent = node
        if content:
            parent.children.append(Node("content", content))
    return root


def _has_heading(tree: Node) -> bool:
    return any(c.tag == "heading" for c in tree.children)


def mhs(gt_md: str, pred_md: str, *, levels: bool = False) -> float | None:
    """Heading-tree similarity (None: the ground truth has no heading; 0: the prediction has none)."""
    gt = heading_tree(gt_md, levels=levels)
    if not _has_heading(gt):
        return None
    pred = heading_tree(pred_md, levels=levels)
    if not _has_heading(pred):
        return 0.0
    return tree_similarity(gt, pred, text_nodes=("heading", "content"))


def mhs_levels(gt_md: str, pred_md: str) -> float | None:
    return mhs(gt_md, pred_md, levels=True)


# --- one document, many documents --------------------------------------------------------------
@dataclass
class DocScore:
    name: str
    pages: int
    cpu_s: float
    nid: float | None
    teds: float | None
    mhs: float | None
    mhs_levels: float | None = None
    error: str = ""

    @property
    def overall(self) -> float | None:
        vals = [v for v in (self.nid, self.teds, self.mhs) if v is not None]
        return sum(vals) / len(vals) if vals else None


def score_document(name: str, gt_md: str, pred_md: str, pages: int = 1, cpu_s: float = 0.0) -> DocScore:
    return DocScore(
        name=name,
        pages=pages,
        cpu_s=cpu_s,
        nid=nid(gt_md, pred_md),
        teds=teds(gt_md, pred_md),
        mhs=mhs(gt_md, pred_md),
        mhs_levels=mhs_levels(gt_md, pred_md),
    )


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


@dataclass
class SetScore:
    """Means over documents, each metric over the documents where it is defined (as the public
    evaluators do); ``mean`` = mean of the three means; ``cpu_s_per_page`` over all pages."""

    docs: list[DocScore] = field(default_factory=list)

    def summary(self) -> dict[str, float | int | None]:
        n, t, h = (_mean(getattr(d, k) for d in self.docs) for k in ("nid", "teds", "mhs"))
        pages = sum(d.pages for d in self.docs)
        return {
            "docs": len(self.docs),
            "pages": pages,
            "nid": n,
            "teds": t,
            "mhs": h,
            "mhs_levels": _mean(d.mhs_levels for d in self.docs),
            "mean": _mean([n, t, h]),
            "teds_docs": sum(1 for d in self.docs if d.teds is not None),
            "mhs_docs": sum(1 for d in self.docs if d.mhs is not None),
            "teds_zero": sum(1 for d in self.docs if d.teds == 0.0),
            "cpu_s_per_page": sum(d.cpu_s for d in self.docs) / pages if pages else None,
            "errors": sum(1 for d in self.docs if d.error),
        }
