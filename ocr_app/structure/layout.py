"""Positioned text lines → reading-order Markdown blocks, for engines that see lines, not blocks.

Why one module: the light OCR engine (RapidOCR boxes) and the PDF text layer (PyMuPDF spans) both
produce the same thing — short runs of text with a box and a size — and must turn it into the same
blocks (headings, paragraphs, lists, tables) in the same reading order. Pure Python, no imports beyond
the schema and ``table_html``, so it is cheap to test exhaustively.

The pipeline, in order:

0. ``_figure_items``: the labels of a diagram (lines the engine marked as inside one figure, all
   short) become one item read row by row, so they never pose as text columns or table rows.
1. ``detect_tables``: rows (items sharing a baseline band) with several well-separated cells whose
   columns line up over at least two consecutive rows become a table, written as the HTML table the
   DeepSeek engine writes (``engines.table_html``).
2. ``order_sections``: gap analysis of the x-projection, done locally. Pairs of lines side by
   side (overlapping y-ranges) with a gap of at least ``min_gutter_ratio`` × body size vote for a
   gutter; the x-range inside most gaps wins. Items crossing it (titles, tables, full-width
   paragraphs) cut the page into horizontal bands, so a title above two columns, or a full-width
   paragraph below them, stays in place; a band with text on both sides is read left column first,
   recursively (three columns work too). A global projection would miss the gutter as soon as one
   full-width line crosses it.
3. ``_group_section``: inside one column, items on one baseline are joined into rows; rows become
   paragraphs (break on a larger vertical gap, a size change, a first-line indent), list items
   (``-``, ``•``, ``1.``, ``a)`` markers; bullets become ``- ``), or headings (size ≥
   ``heading_ratio`` × the page's body size: ≥ ``h1_ratio`` → ``#``, else ``##``; on scans a line the
   layout model puts in a title region → ``##``; bold lines a bit larger than body → ``###``; at body
   size never a line that ends a sentence). With a document style (the text layer) headings come from the whole
   document instead (``_styled_heading_level``): the outline, sizes and weights against the body's,
   section numbers ("2.1", "3 -"), typefaces and bold lines standing alone where the body itself is
   bold, a chapter number alone in display type (``_chapter_number``) and, in a text panel over a
   picture, only a bold block heading a lighter paragraph (``_panel_leads``); never a row of pieces a
   cell gap apart (column headers, footers), a line that is mostly a number, a web address, or a
   lighter subtitle right under a heading.
"""

from __future__ import annotations

import itertools
import logging
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ocr_app.schema import Block, Box, union_box
from ocr_app.structure.borderless import find_grids
from ocr_app.structure.numbering import numbered_level
from ocr_app.structure.table_html import Cell, table_html

logger = logging.getLogger(__name__)

BULLETS = "-•●○◦▪▫■□–—*·‣⁃"
_BULLET_RE = re.compile(rf"^\s*[{re.escape(BULLETS)}]\s+(?P<body>\S.*)$")
EDGE_BAND = 0.12  # top / bottom fraction of the page where running headers, footers, page numbers live
_NUMBER_RE = re.compile(r"^\s*(?P<marker>(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)])\s+(?P<body>\S.*)$")


@dataclass
class TextLine:
    """A run of text on one baseline, as an engine saw it.

    ``size`` is the font size in the same pixels as ``box`` (the text layer knows it; the light
    engine measures it from the ink). Thresholds are ratios of the page's body size.
    """

    text: str
    box: Box
    size: float
    bold: bool = False
    weight: int = 0  # CSS-like font weight (400 regular, 700 bold) when the engine knows it; 0 = unknown
    italic: bool = False
    in_figure: bool = False  # inside a picture or a drawing (labels of a diagram): never a heading
    figure: int = 0  # which figure of the page (1, 2, ...) when ``in_figure``; 0 = unknown
    font: str = ""  # font family ("helvetica", "bnazanin") when the engine knows it
    ink: tuple[float, float] = ()  # x-range of the glyphs without surrounding spaces, when known
    turns: int = 0  # quarter turns (counter-clockwise) that make this line's text upright
    mono: bool = False  # set in a monospaced font all through (a line of code)
    # x-ranges of the words of ``text`` (one per ``text.split()`` token), when the engine knows where
    # each glyph stands: table cells set one space apart come as one line and are cut on them.
    words: tuple[tuple[float, float], ...] = ()
    # The page's layout model's word on this line (scans, ``structure.scan_regions``): "title" (a
    # heading), "prose" (a line of a paragraph: never a table cell), "figure"; "" = no model.
    role: str = ""


@dataclass
class DocStyle:
    """Facts about the whole document, from a pre-pass over its pages (the text layer builds it).

    Why: a page alone cannot tell a heading from body text (a page of only headings, a cover page),
    and heading levels must be the same on every page. Sizes are in the same pixels as the lines.
    """

    body_size: float
    body_weight: int = 400
    heading_sizes: tuple[float, ...] = ()  # distinct heading sizes, largest first → levels 1, 2, ...
    outline: dict[str, int] = field(default_factory=dict)  # normalised bookmark title → level
    vocabulary: frozenset[str] = frozenset()  # lower-case words the document has unbroken
    first_level: int = 1  # 2 when no heading is title-sized: the largest headings are then "##"
    cover_min_size: float = 0.0  # set per page on a cover page: smaller lines are not headings
    body_font: str = ""  # the font family of the body text, when known
    # level → the smallest numbering depth set at it, where headings of several depths share a
    # level by size and weight ("2.1" and "2.1.3" both bold at body size): ``numbering``.
    depth_bases: dict[int, int] = field(default_factory=dict)

    def level_for_size(self, size: float) -> int:
        """Level of the nearest heading size at or below ``size`` (bigger = higher)."""
        for k, s in enumerate(self.heading_sizes):
            if size >= 0.97 * s:
                return k + self.first_level
        return len(self.heading_sizes) + self.first_level


@dataclass
class LayoutConfig:
    """Thresholds of the layout heuristics (ratios, so they work at any resolution)."""

    heading_ratio: float = 1.4  # size ≥ this × body size → heading
    h1_ratio: float = 1.9  # size ≥ this × body size → "#"
    bold_heading_ratio: float = 1.15  # bold, short, standalone line this much larger → "###"
    max_heading_chars: int = 160
    max_merged_heading_chars: int = 90  # with a document style: longer bold runs are paragraphs
    min_gutter_ratio: float = 0.8  # gutter ≥ this × body size
    styled_heading_ratio: float = 1.12  # with a document style: size ≥ this × body → heading
    min_heading_weight_gain: int = 150  # with a document style: this much heavier than body → heading
    min_cell_gap_ratio: float = 1.2  # table cells separated by ≥ this × body size
    paragraph_gap_ratio: float = 0.5  # gap ≥ typical gap + this × size → new paragraph
    max_line_gap_ratio: float = 0.8  # the typical gap is at most this × body size (see _group_section)
    indent_ratio: float = 1.0  # first-line indent ≥ this × size → new paragraph
    max_isolated_heading_words: int = 12  # a bold line standing alone is a heading up to this length
    max_lead_in_words: int = 10  # a bold line ending in ":" on its own is a heading up to this length
    isolation_gap_ratio: float = 1.0  # a line is alone with a gap ≥ this × its size above and below
    chapter_number_ratio: float = 2.0  # with a document style: a bare number this large is a heading


@dataclass
class _Table:
    box: Box
    rows: list[list[str]] | list[list[Cell]]
    size: float = 0.0
    items: list[TextLine] = field(default_factory=list)  # the lines it was built from
    form: bool = False  # a sparse grid (a form): rendered as one text line per row
    header_rows: int = 0  # leading rows that are the header (0: not known)
    contents: bool = False  # a table of contents (dot leaders), found from its rows' text alone

    @property
    def html(self) -> str:
        """The table as DeepSeek-OCR-2 writes it (``engines.table_html``)."""
        return table_html(self.rows, self.header_rows)


@dataclass
class _Row:
    items: list[TextLine] = field(default_factory=list)

    @property
    def box(self) -> Box:
        return union_box([i.box for i in self.items])

    @property
    def text(self) -> str:
        # Right-to-left rows read from the right: pieces of one Arabic line stay in order.
        rtl = is_rtl(" ".join(i.text for i in self.items))
        ordered = sorted(self.items, key=lambda i: -i.box[2] if rtl else i.box[0])
        out = ordered[0].text
        for a, b in itertools.pairwise(ordered):
            out += ("" if _touching(a, b, rtl) else " ") + b.text
        return out

    @property
    def size(self) -> float:
        return max(i.size for i in self.items)

    @property
    def bold(self) -> bool:
        return all(i.bold for i in self.items)

    @property
    def in_figure(self) -> bool:
        return all(i.in_figure for i in self.items)

    @property
    def italic(self) -> bool:
        return all(i.italic for i in self.items)

    @property
    def weight(self) -> int:
        """The lightest weight on the row (a heading is heavy all through)."""
        return min(i.weight or (700 if i.bold else 400) for i in self.items)


def _direction(text: str) -> str:
    if is_rtl(text):
        return "rtl"
    return "ltr" if any(c.isalpha() for c in text) else "neutral"


def _touching(a: TextLine, b: TextLine, rtl: bool) -> bool:
    """Whether two pieces of one line (``b`` after ``a`` in reading order) are set with no space
    between their glyphs: one word the PDF happens to draw in two runs ("1403" "/" "09", an Arabic
    word split where the text direction changes). Only where the engine knows the glyphs' extent."""
    if not a.ink or not b.ink:
        return False
    kinds = {_direction(a.text[-1:]), _direction(b.text[:1])} - {"neutral"}
    if len(kinds) > 1:
        return False  # where the script's direction changes, the space may be drawn elsewhere
    gap = a.ink[0] - b.ink[1] if rtl else b.ink[0] - a.ink[1]
    return -0.3 * min(a.size, b.size) <= gap <= 0.06 * min(a.size, b.size)


Item = TextLine | _Table

_RTL_RANGES = ((0x0590, 0x08FF), (0xFB1D, 0xFDFF), (0xFE70, 0xFEFF))


def is_rtl(text: str) -> bool:
    """Whether most letters of ``text`` are of a right-to-left script (Hebrew, Arabic, Persian...)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    rtl = sum(1 for c in letters if any(a <= ord(c) <= b for a, b in _RTL_RANGES))
    return rtl > len(letters) / 2


def _height(box: Box) -> float:
    return max(box[3] - box[1], 1e-6)


def _vertical_overlap(a: Box, b: Box) -> float:
    """Overlap of the y-ranges as a fraction of the smaller height."""
    inter = min(a[3], b[3]) - max(a[1], b[1])
    return max(inter, 0.0) / min(_height(a), _height(b))


def rotate_box(box: Box, turns: int, width: float, height: float) -> Box:
    """``box`` on a page of ``width`` × ``height`` → the same box on the page turned ``turns`` × 90°
    counter-clockwise (``numpy.rot90`` / PIL ``ROTATE_90``), whose size is (height, width) for odd turns."""
    x0, y0, x1, y1 = box
    turns %= 4
    if turns == 1:
        return (y0, width - x1, y1, width - x0)
    if turns == 2:
        return (width - x1, height - y1, width - x0, height - y0)
    if turns == 3:
        return (height - y1, x0, height - y0, x1)
    return box


def unrotate_box(box: Box, turns: int, width: float, height: float) -> Box:
    """Inverse of ``rotate_box``: a box on the turned page → the page as displayed (``width`` ×
    ``height`` are the displayed page's)."""
    u0, v0, u1, v1 = box
    turns %= 4
    if turns == 1:
        return (width - v1, u0, width - v0, u1)
    if turns == 2:
        return (width - u1, height - v1, width - u0, height - v0)
    if turns == 3:
        return (v0, height - u1, v1, height - u0)
    return box


def body_size(lines: Sequence[TextLine]) -> float:
    """The size most characters are set in (median weighted by text length)."""
    if not lines:
        return 1.0
    weighted = sorted((ln.size, max(len(ln.text), 1)) for ln in lines)
    half = sum(w for _, w in weighted) / 2
    acc = 0
    for size, w in weighted:
        acc += w
        if acc >= half:
            return size
    return weighted[-1][0]


def group_rows(items: Sequence[TextLine], min_overlap: float = 0.5) -> list[_Row]:
    """Items whose y-ranges overlap enough form one row; rows top to bottom."""
    rows: list[_Row] = []
    for item in sorted(items, key=lambda i: (i.box[1] + i.box[3]) / 2):
        for row in reversed(rows[-3:]):
            if _vertical_overlap(row.box, item.box) >= min_overlap:
                row.items.append(item)
                break
        else:
            rows.append(_Row([item]))
    rows.sort(key=lambda r: (r.box[1] + r.box[3]) / 2)
    return rows


def _size_close(a: float, b: float) -> bool:
    return max(a, b) <= 1.6 * min(a, b)


# --- 1. tables ---------------------------------------------------------------------------------
def detect_tables(
    lines: Sequence[TextLine], page_width: float, config: LayoutConfig, body: float
) -> tuple[list[_Table], list[TextLine]]:
    """Tables of contents, then tables without rules (``borderless``); the tables and the lines that
    are not in one."""
    rows = group_rows(lines)
    tables, rows = _contents_tables(rows)
    for grid in find_grids([r.items for r in rows], body, page_width):
        size = statistics.median(it.size for it in grid.pieces)
        tables.append(
            _Table(box=grid.box, rows=grid.rows, size=size, items=grid.pieces, header_rows=grid.header_rows)
        )
    used = {id(it) for t in tables for it in t.items}
    rest = [ln for ln in lines if id(ln) not in used]
    return tables, rest


# The title keeps its dot leaders, as printed; the page number is the second cell.
_CONTENTS_ROW = re.compile(r"^(?P<title>.*?\w.*?(?:\s*\.){3,})\s*(?P<page>\d{1,4}|[ivxlcdm]{1,7})$", re.I)


def _contents_tables(rows: list[_Row]) -> tuple[list[_Table], list[_Row]]:
    """Runs of ≥ 3 rows "title . . . . page" (a table of contents) → two-column tables (title, page)."""
    tables: list[_Table] = []
    rest: list[_Row] = []
    run: list[tuple[_Row, re.Match[str]]] = []

    def close() -> None:
        if len(run) >= 3:
            table = _Table(
                box=union_box([r.box for r, _ in run]),
                rows=[[m.group("title").strip(), m.group("page")] for _, m in run],
                size=statistics.median(r.size for r, _ in run),
                contents=True,
            )
            table.items = [it for r, _ in run for it in r.items]
            tables.append(table)
        else:
            rest.extend(r for r, _ in run)
        run.clear()

    for row in rows:
        m = _CONTENTS_ROW.match(row.text.strip())
        if m:
            run.append((row, m))
        else:
            close()
            rest.append(row)
    close()
    return tables, rest


# --- 2. reading order --------------------------------------------------------------------------
def order_sections(
    items: Sequence[Item], config: LayoutConfig, body: float, rtl: bool = False
) -> list[list[Item]]:
    """Split items into single-column sections, in reading order (right column first when ``rtl``)."""
    if not items:
        return []
    gutter = _find_gutter(items, config, body)
    if gutter is None:
        return [sorted(items, key=lambda i: (i.box[1], i.box[0]))]
    g0, g1 = gutter
    left: list[Item] = []
    right: list[Item] = []
    cross: list[Item] = []
    # An item that ends inside the gutter is still a left-column line (ragged right: a longer line
    # below a short side column), one that starts inside it a right-column line; an item crosses
    # only when it reaches over the gutter into the other column.
    slack = 0.5 * body
    for it in items:
        if it.box[2] <= max(g0 + slack, g1 - slack):
            left.append(it)
        elif it.box[0] >= min(g1 - slack, g0 + slack):
            right.append(it)
        else:
            cross.append(it)
    if not left or not right:
        return [sorted(items, key=lambda i: (i.box[1], i.box[0]))]
    heads = _side_heads(left, right, body)
    if heads is not None:
        return _side_head_sections(items, heads)
    # Crossing items cut the page into horizontal bands. A band with text on both sides of the
    # gutter is a column band (left column first); a band with text on one side only (a short last
    # line, a list marker) is single-column content and stays in line with the crossing items.
    sections: list[list[Item]] = []
    single: list[Item] = []
    pending: list[tuple[int, Item]] = []

    def by_position(run: list[Item]) -> list[Item]:
        return sorted(run, key=lambda i: (i.box[1], i.box[0]))

    def flush_band() -> None:
        sides = {side for side, _ in pending}
        if len(sides) == 2:
            tail = _detached_tail(pending, body)
            if tail:
                pending[:] = pending[: len(pending) - len(tail)]
            if single:
                sections.append(by_position(single))
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
        sections.append(by_position(single))
    return sections


MAX_SIDE_HEAD_WORDS = 6


def _side_heads(left: list[Item], right: list[Item], body: float) -> list[TextLine] | None:
    """The left "column" when it holds only side heads — short bold or larger lines, each level with
    the first line of a paragraph of the right column (a manual's headings in the margin) — else
    None. Read as a column, the headings would all come before all the text."""
    top = min(it.box[1] for it in right)
    beside = [it for it in left if it.box[3] > top]  # a title above the text is no side head
    if not beside or any(not isinstance(it, TextLine) for it in beside):
        return None
    starts = _paragraph_starts([it for it in right if isinstance(it, TextLine)], body)
    for it in beside:
        heading_like = (it.bold or it.weight >= 600 or it.size >= 1.15 * body) and not it.in_figure
        short = len(it.text.split()) <= MAX_SIDE_HEAD_WORDS and not it.text.rstrip().endswith((".", ","))
        level = any(abs(s.box[1] - it.box[1]) <= 0.5 * body for s in starts)
        if not (heading_like and short and level):
            return None
    return beside  # type: ignore[return-value]


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
            return tail  # a clear break: the column ends at ``it``, what follows is the tail
        tail.insert(0, band[k - 1])
        k -= 1
    if not tail:
        return []
    side = tail[0][0]
    previous = [it for s, it in band[:k] if s == side]
    if previous and tail[0][1].box[1] - previous[-1].box[3] < 1.5 * body:
        return []
    return tail


def _find_gutter(items: Sequence[Item], config: LayoutConfig, body: float) -> tuple[float, float] | None:
    """The x-position most side-by-side pairs of text lines are separated at, or None.

    Two lines side by side (their y-ranges overlap) with a gap of at least a gutter between them
    are evidence of columns; the position inside the most such gaps is the gutter. Lines elsewhere
    on the page that cross it (titles, tables, short full-width lines) do not hide it, they become
    section breaks. List markers and other tiny items are not evidence (width < 2 × body size).
    """
    min_gap = config.min_gutter_ratio * body
    solid = [i for i in items if isinstance(i, TextLine) and i.box[2] - i.box[0] >= 2 * body]
    gaps: list[tuple[float, float]] = []
    for a in solid:
        nearest: TextLine | None = None
        for b in solid:
            if b is a or b.box[0] < a.box[2] - 0.1 * body or _vertical_overlap(a.box, b.box) < 0.3:
                continue
            if nearest is None or b.box[0] < nearest.box[0]:
                nearest = b
        if nearest is not None and nearest.box[0] - a.box[2] >= min_gap:
            gaps.append((a.box[2], nearest.box[0]))
    if len(gaps) < 3:
        return None
    # Sweep: the x-range covered by the most gaps.
    events = sorted([(g[0], 1) for g in gaps] + [(g[1], -1) for g in gaps], key=lambda e: (e[0], e[1]))
    best, count, best_range = 0, 0, (0.0, 0.0)
    for k, (x, delta) in enumerate(events):
        count += delta
        if delta == 1 and count > best:
            nxt = events[k + 1][0] if k + 1 < len(events) else x
            best, best_range = count, (x, nxt)
    if best < 3:
        return None
    return best_range


# --- 3. blocks ---------------------------------------------------------------------------------
_EXTRA_BULLETS = re.compile(r"^(?:[•●○◦▪▫■□‣⁃]\s*)+")
_CAPTION = re.compile(r"^\[?(?:table|figure|fig\.|chart|표|그림|図|表)\s*[\d.\-]+\]?(?:[.:\s]|$)", re.I)


def _list_marker(text: str) -> tuple[str, str] | None:
    """``(markdown_marker, body)`` when the text starts a list item."""
    m = _BULLET_RE.match(text)
    if m:
        # Two glyphs drawn on one spot (a check box in two symbol fonts) make one marker.
        return "-", _EXTRA_BULLETS.sub("", m.group("body")) or m.group("body")
    m = _NUMBER_RE.match(text)
    if m:
        return m.group("marker"), m.group("body")
    return None


_TAIL_WORD = re.compile(r"([\w-]*?)(\w+)[-\u00ad\u2010]$")
_HEAD_WORD = re.compile(r"^(\w+)")
# Chinese and Japanese set no spaces between words: a line wrapped inside a sentence joins without one
# (Korean spaces its words, so Hangul is not in here).
_NO_SPACE_SCRIPT = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
)
# First halves of English compounds that are words in their own right and not syllables a word is
# broken at ("self-" + "organising", "well-" + "known"): their hyphen is kept.
COMPOUND_HEADS = frozenset(
    [
        "self",
        "well",
        "non",
        "anti",
        "semi",
        "quasi",
        "pseudo",
        "multi",
        "cross",
        "ill",
        "half",
        "all",
        "over",
        "under",
        "long",
        "short",
        "high",
        "low",
        "full",
        "ever",
        "never",
        "free",
        "open",
    ]
)


def _join(a: str, b: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """Join two lines of one paragraph; a word split by a line-end hyphen is mended.

    The rule, in order: a soft hyphen always goes ("docu\u00ad" + "ment"). A continuation that starts
    in upper case or with a digit keeps the hyphen, without a space ("non-" + "English", "COVID-" +
    "19"). A lower-case continuation is a word broken at the line end — "docu-" + "ment" → "document",
    "Ger-" + "stein" → "Gerstein" — unless the hyphenated form is more plausible: the document uses the
    joined word unbroken (join), or it uses the hyphenated compound, the first half is itself part of a
    compound ("state-of-the-" + "art") or is a word compounds are made with ("self-", "well-":
    ``COMPOUND_HEADS``) (keep). Lines of Chinese or Japanese join without a space.
    """
    if not a:
        return b
    if a.endswith("\u00ad") and b[:1].isalpha():
        return a[:-1] + b
    m = _TAIL_WORD.search(a)
    h = _HEAD_WORD.match(b)
    if m and h and b[:1].islower() and m.group(2)[-1:].isalpha():
        left, right = m.group(2), h.group(1)
        joined = (left + right).lower()
        hyphenated = f"{left}-{right}".lower()
        if joined in vocabulary:
            return a[:-1] + b
        if hyphenated in vocabulary or m.group(1) or left.lower() in COMPOUND_HEADS:
            return a + b  # a known compound, or part of one
        return a[:-1] + b
    if a.endswith(("-", "\u2010")) and len(a) > 1 and a[-2].isalnum() and b[:1].isalnum():
        return a + b  # "COVID-" + "19", "non-" + "English": a real hyphen, no space
    if _NO_SPACE_SCRIPT.match(a[-1]) and _NO_SPACE_SCRIPT.match(b[0]):
        return a + b
    return f"{a} {b}"


join_lines = _join  # public name for engines that join lines themselves (table cells)

_WORDS = re.compile(r"\w+(?:-\w+)*")


def vocabulary_of(texts: Sequence[str]) -> set[str]:
    """Lower-case words (and hyphenated compounds) that occur unbroken: not at a line-end hyphen."""
    words: set[str] = set()
    for text in texts:
        body = text[:-1] if text.endswith(("-", "\u00ad")) else text
        tokens = _WORDS.findall(body.lower())
        if text.endswith(("-", "\u00ad")) and tokens:
            tokens.pop()  # the broken half of a word
        for tok in tokens:
            words.add(tok)
            if "-" in tok:
                words.update(tok.split("-"))
    return words


@dataclass
class _Pending:
    kind: str  # "heading", "text", "list"
    level: int = 0
    parts: list[str] = field(default_factory=list)  # paragraph text, or one entry per list item
    boxes: list[Box] = field(default_factory=list)
    last: _Row | None = None
    left: float = 0.0  # left edge of the block (text start for list items)
    size: float = 0.0
    indents: list[float] = field(default_factory=list)  # list: marker x of each open nesting level


_NUMBERED_HEADING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,4}\.?|[A-Z]\.|[IVX]{1,4}\.)\s+\S")
# Section numbers that a list item does not use: several levels ("2.1", "2-5", "1.2.3.") or a number
# followed by a dash ("3 - Title", "3- عنوان"); "1." and "a)" stay list markers.
_SECTION_NUMBER = re.compile(
    r"^(?:\d{1,2}(?:[.\-]\d{1,2}){1,4}\.?\s*[-\u2013]?|\d{1,2}\s*[-\u2013])\s*(?=\w)"
)
_BARE_NUMBER = re.compile(r"^(?:\d{1,3}(?:[.\-]\d{1,3}){0,4}\.?|[IVXivx]{1,4}\.?)$")
_SENTENCE_END = (".", ",", ";", ":")
_ADDRESS = re.compile(
    r"(?:https?://|www\.)\S+|\S+@\S+\.\w+|[\w.-]+\.(?:com|org|net|gov|edu|int)(?:/\S*)?", re.I
)


def _normal_title(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _cells_apart(row: _Row, gap: float) -> bool:
    """Whether the row is made of pieces set a table-cell gap apart (column headers, a footer's
    "Annex ... 209"): several texts side by side, not one heading. A section number in a box of its
    own before the title ("1   Introduction", "Chapter 1.   Title") is part of the heading."""
    if len(row.items) < 2:
        return False
    rtl = is_rtl(row.text)
    items = sorted(row.items, key=lambda i: -i.box[2] if rtl else i.box[0])
    for a, b in itertools.pairwise(items):
        space = a.box[0] - b.box[2] if rtl else b.box[0] - a.box[2]
        label = a.text.strip()
        numbered = _BARE_NUMBER.match(label) or (len(label) <= 12 and any(c.isdigit() for c in label))
        if space >= gap and not (a is items[0] and numbered):
            return True
    return False


def in_margin_band(box: Box, height: float) -> bool:
    """Whether the box lies wholly in the page's top or bottom band (running lines, page numbers)."""
    return box[3] <= EDGE_BAND * height or box[1] >= (1 - EDGE_BAND) * height


def _chapter_number(row: _Row, style: DocStyle, config: LayoutConfig, page_height: float) -> int:
    """Level of a chapter number set alone in display type ("1" at 40 pt over the chapter title), or
    0. A page number is body-sized or sits in the margin band; this one is neither."""
    if len(row.items) != 1 or row.in_figure or not _BARE_NUMBER.match(row.text.strip()):
        return 0
    if row.size < config.chapter_number_ratio * style.body_size:
        return 0
    if page_height and in_margin_band(row.box, page_height):
        return 0
    return min(style.level_for_size(row.size), 6)


@dataclass(frozen=True)
class _RowContext:
    """Where a row stands on its page: what the heading rules need beyond the row itself."""

    short_line: bool = False  # much shorter than its section is wide
    page_height: float = 0.0  # 0: unknown
    isolated: bool = False  # a blank line above and below it, nothing beside it
    leads_text: bool = False  # inside a text panel over a picture, right above a lighter paragraph
    aligned: bool = True  # starts at its section's left edge or is centred in it (not over a column)


def _heading_level(
    row: _Row,
    body: float,
    config: LayoutConfig,
    style: DocStyle | None = None,
    where: _RowContext = _RowContext(),
) -> int:
    text = row.text
    letters = sum(c.isalpha() for c in text)
    if (
        style is not None
        and letters < 2
        and (chapter := _chapter_number(row, style, config, where.page_height))
    ):
        return chapter
    if len(text) > config.max_heading_chars or letters < 2 or (row.in_figure and not where.leads_text):
        return 0  # long lines, bare numbers (page numbers) and figure labels are not headings
    if style is not None and sum(c.isdigit() for c in text) >= 2 * letters:
        return 0  # mostly a number: an issue number ("No. 1695"), a date, a code
    if style is not None:
        level = _styled_heading_level(row, text, config, style, where.short_line, where.isolated)
        if level and style.depth_bases and style.outline.get(_normal_title(text)) is None:
            level = numbered_level(level, text, style.depth_bases)
        return level
    if any(i.role == "prose" for i in row.items):
        return 0  # the layout model saw a paragraph's line (a scan: ``structure.scan_regions``)
    ratio = row.size / body
    if ratio >= config.h1_ratio:
        return 1
    if ratio >= config.heading_ratio:
        return 2
    # At body size, a line that ends a sentence (or a contents entry's leader dots) is no heading; a
    # bold lead-in ending in a colon ("Steps for using the microscope:") is one.
    if text.rstrip().endswith((".", ",", ";")):
        return 0
    if (
        all(i.role == "title" for i in row.items)
        and (row.bold or not text.rstrip().endswith(":"))
        and (row.bold or ratio >= 1.1 or len(text.split()) <= 8)
    ):
        # A plain lead-in ending in a colon ("Consider this definition:") introduces text; a long
        # line at body size in plain type is a paragraph the model's title box reached into.
        return 2
    if (
        row.bold
        and ratio >= config.bold_heading_ratio
        and len(row.text) <= 80
        and where.aligned
        and not _cells_apart(row, config.min_cell_gap_ratio * body)
        and not text[:1].islower()  # "package", "popcon": a table's column names, not a title
    ):
        return 3  # (a bold line over a table's columns, "Year Ended", is its header, not a heading)
    return 0


def _styled_heading_level(
    row: _Row,
    text: str,
    config: LayoutConfig,
    style: DocStyle,
    short_line: bool = False,
    isolated: bool = False,
) -> int:
    """Headings from the whole document's style: the bookmark outline, larger sizes (levels from the
    document's distinct heading sizes), short lines set heavier than the body text, and short
    isolated italic lines at body size (run-in section titles of handbooks)."""
    if _CAPTION.match(text) or _ADDRESS.fullmatch(text.strip()):
        return 0  # "Table 1:", "[표 1]", "Figure 3-1": captions; web and e-mail addresses
    smallest = min(i.size for i in row.items)
    if style.cover_min_size and (smallest < style.cover_min_size or len(text.split()) < 2):
        return 0  # a cover page: only its title
    if style.outline and row.size >= 0.95 * style.body_size:  # not a smaller running title
        level = style.outline.get(_normal_title(text))
        if level:
            return min(level, 6)
    if _cells_apart(row, config.min_cell_gap_ratio * style.body_size):
        return 0
    if _list_marker(text) and not _NUMBERED_HEADING.match(text):
        return 0
    ratio = row.size / style.body_size
    bold_level = min(len(style.heading_sizes) + style.first_level, 6)
    if (
        _SECTION_NUMBER.match(text)
        and row.weight >= max(style.body_weight, 600)
        and ratio >= 0.95
        and len(text) <= 80
        and not text.rstrip(":").endswith(_SENTENCE_END)  # "3.2 Requirements:": numbered, a heading
    ):
        # A numbered section title ("2.1 Scope", "3 - ...") set in bold. This matters where the body
        # itself is bold (forms whose labels are bold): neither size nor weight sets it apart there.
        return bold_level if ratio < config.styled_heading_ratio else min(style.level_for_size(row.size), 6)
    heavier = row.weight >= style.body_weight + config.min_heading_weight_gain
    if text.endswith(":") and ratio < config.heading_ratio:
        # A bold lead-in at body size on its own line ("Steps for Using the Microscope:") heads what
        # follows; one set a little larger ("For more information:" over an address) is a label.
        lead_in = heavier and text[:1].isupper() and len(text.split()) <= config.max_lead_in_words
        return bold_level if lead_in and 0.75 <= ratio < config.styled_heading_ratio else 0
    if ratio >= config.styled_heading_ratio and (len(text) <= 120 or row.weight > style.body_weight):
        return min(style.level_for_size(row.size), 6)
    if heavier and ratio >= 0.75 and len(text) <= 100 and not text.endswith(_SENTENCE_END):
        return bold_level
    other_face = bool(style.body_font) and all(i.font and i.font != style.body_font for i in row.items)
    if (
        other_face
        and style.body_weight >= 600
        and row.weight >= style.body_weight
        and ratio >= 0.95
        and len(text) <= 100
        and not text.endswith(_SENTENCE_END)
    ):
        # Where the body itself is bold (a form of bold labels), weight cannot mark a heading; a line
        # set bold in another typeface (the form's title) is one.
        return bold_level
    if (
        isolated
        and style.body_weight >= 600
        and row.weight >= style.body_weight
        and ratio >= 0.75
        and len(text.split()) <= config.max_isolated_heading_words
        and not text.endswith(_SENTENCE_END)
    ):
        # Where the body itself is bold, a bold line standing alone (a blank line above and below in
        # its column, nothing beside it) is a heading: a label has its value beside or under it.
        return bold_level
    titled = text[:1].isupper() and not text.endswith(_SENTENCE_END) and len(text) <= 60
    if row.italic and short_line and titled and 0.95 <= ratio <= 1.1:
        return min(bold_level + 1, 6)
    return 0


def _isolated_rows(units: Sequence[_Row | _Table], config: LayoutConfig) -> set[int]:
    """ids of the single-piece rows with no other unit within a blank line above or below them in
    their own x-range (units sorted top to bottom): lines that stand alone, as headings do."""

    def overlaps(a: Box, b: Box) -> bool:
        return min(a[2], b[2]) - max(a[0], b[0]) > 0

    alone: set[int] = set()
    for k, unit in enumerate(units):
        if not isinstance(unit, _Row) or len(unit.items) != 1:
            continue
        gap = config.isolation_gap_ratio * unit.size
        above = next((u for u in reversed(units[:k]) if overlaps(u.box, unit.box)), None)
        below = next((u for u in units[k + 1 :] if overlaps(u.box, unit.box)), None)
        if (above is None or unit.box[1] - above.box[3] >= gap) and (
            below is None or below.box[1] - unit.box[3] >= gap
        ):
            alone.add(id(unit))
    return alone


def _panel_leads(units: Sequence[_Row | _Table], panel: frozenset[int]) -> set[int]:
    """ids of the rows of a text panel over a picture (``panel``: ids of its lines) that head a
    paragraph: a run of rows in one weight and size, right above rows in a lighter weight that start
    at the same left edge and run on for at least two lines. The panel's other lines (taglines,
    labels, a logo's words) stay text."""
    rows = [u for u in units if isinstance(u, _Row) and all(id(i) in panel for i in u.items)]
    leads: set[int] = set()
    k = 0
    while k < len(rows):
        run = [rows[k]]
        while k + len(run) < len(rows):
            nxt, last = rows[k + len(run)], run[-1]
            if not (
                nxt.weight == last.weight
                and _size_close(nxt.size, last.size)
                and abs(nxt.box[0] - last.box[0]) <= 0.5 * last.size
                and nxt.box[1] - last.box[3] <= 0.6 * last.size
            ):
                break
            run.append(nxt)
        after = rows[k + len(run) : k + len(run) + 2]
        last = run[-1]
        if (
            len(after) == 2
            and all(r.weight < last.weight and abs(r.box[0] - last.box[0]) <= 0.5 * last.size for r in after)
            and after[0].box[1] - last.box[3] <= 2.0 * last.size
            and after[1].box[1] - after[0].box[3] <= 0.6 * after[0].size
        ):
            leads.update(id(r) for r in run)
        k += len(run)
    return leads


CODE_GAP_LINES = 2.5  # a blank line or two inside a listing keeps it one code block
# A line that is one web or mail address: set in a typewriter face it is still part of the sentence
# around it (LaTeX's \url, many style sheets), not a listing; inside a listing it stays code.
_URL_LINE = re.compile(
    r"^[(<\[]?(?:(?:https?|ftp)://|www\.|doi:|mailto:)\S+$|^[(<\[]?[\w.+-]+@[\w-]+(?:\.[\w-]+)+[)>\].,;:]?$",
    re.I,
)


def code_block(lines: Sequence[str], boxes: Sequence[Box]) -> str:
    """Lines of code → a fenced Markdown block, line breaks kept and indentation rebuilt from the
    lines' left edges in characters (monospaced: every glyph is one character wide); leading spaces a
    line has in the PDF count too."""
    widths = [(b[2] - b[0]) / len(t) for t, b in zip(lines, boxes, strict=True) if len(t) >= 4]
    char = statistics.median(widths) if widths else max((b[3] - b[1]) * 0.5 for b in boxes)
    left = min(b[0] for b in boxes)
    body = [" " * max(0, round((b[0] - left) / char)) + t for t, b in zip(lines, boxes, strict=True)]
    longest = max((len(m) for m in re.findall(r"`+", "\n".join(body))), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n" + "\n".join(body) + f"\n{fence}"


@dataclass
class _SectionContext:
    """What the block rules know about one single-column section besides the row at hand."""

    body: float
    config: LayoutConfig
    style: DocStyle | None
    vocabulary: frozenset[str]
    page_height: float
    typical_gap: float = 0.0
    isolated: set[int] = field(default_factory=set)
    leads: set[int] = field(default_factory=set)
    left: float = 0.0
    width: float = 0.0


def _section_units(
    section: list[Item], body: float, config: LayoutConfig, style: DocStyle | None, panel: frozenset[int]
) -> tuple[list[_Row | _Table], float, set[int], set[int]]:
    """The section's rows and tables top to bottom, its typical line gap, the rows that stand alone
    and the rows that lead a text panel over a picture."""
    texts = [i for i in section if isinstance(i, TextLine)]
    units: list[_Row | _Table] = [*group_rows(texts), *(i for i in section if isinstance(i, _Table))]
    units.sort(key=lambda u: (u.box[1] + u.box[3]) / 2)
    rows_only = [u for u in units if isinstance(u, _Row)]
    gaps = [
        b.box[1] - a.box[3]
        for a, b in itertools.pairwise(rows_only)
        if _size_close(a.size, b.size) and b.box[1] - a.box[3] < 2.5 * a.size
    ]
    # Capped: on a page whose only gaps are blank lines, the median gap is the blank line itself, and
    # every paragraph would merge; 0.8 × size still passes double-spaced text as one paragraph.
    typical_gap = min(statistics.median(gaps), config.max_line_gap_ratio * body) if gaps else 0.0
    isolated = _isolated_rows(units, config) if style is not None else set()
    leads = _panel_leads(units, panel) if style is not None and panel else set()
    return units, typical_gap, isolated, leads


class _SectionBlocks:
    """Rows of one section → blocks: paragraphs (lines joined, line-end hyphens mended), headings,
    list items (nested by indentation), code blocks and tables, one open block at a time."""

    def __init__(self, ctx: _SectionContext) -> None:
        self.ctx = ctx
        self.blocks: list[Block] = []
        self.cur: _Pending | None = None

    def flush(self) -> None:
        cur, self.cur = self.cur, None
        if cur is None or not cur.parts:
            return
        if cur.kind == "heading":
            label = "title" if cur.level == 1 else "sub_title"
            self.blocks.append(Block(label, "#" * cur.level + " " + cur.parts[0], [union_box(cur.boxes)]))
        elif cur.kind == "list":
            self.blocks.append(Block("list", "\n".join(cur.parts), list(cur.boxes)))
        elif cur.kind == "code":
            self.blocks.append(Block("code", code_block(cur.parts, cur.boxes), [union_box(cur.boxes)]))
        else:
            self.blocks.append(Block("text", cur.parts[0], [union_box(cur.boxes)]))

    def add_table(self, table: _Table) -> None:
        self.flush()
        if table.form:
            self.blocks.extend(Block("text", row[0], [table.box]) for row in table.rows if row and row[0])
        else:
            self.blocks.append(Block("table", table.html, [table.box]))

    def _extend(self, row: _Row, text: str) -> None:
        """The open paragraph or heading goes on with this row."""
        cur = self.cur
        assert cur is not None
        cur.parts[0] = _join(cur.parts[0], text, self.ctx.vocabulary)
        cur.boxes.append(row.box)
        cur.last = row

    def add_code(self, row: _Row, gap: float) -> None:
        """A line of code: kept as it is, in a fenced block."""
        text = " ".join(i.text for i in sorted(row.items, key=lambda i: i.box[0]))
        cur = self.cur
        if cur is not None and cur.kind == "code" and gap <= CODE_GAP_LINES * row.size:
            cur.parts.append(text)
            cur.boxes.append(row.box)
            cur.last = row
            return
        self.flush()
        self.cur = _Pending("code", 0, [text], [row.box], row, row.box[0], row.size)

    def heading_level(self, row: _Row, text: str, big_gap: bool, list_continues: bool) -> int:
        ctx, cur = self.ctx, self.cur
        if list_continues:
            return 0
        short_line = row.box[2] - row.box[0] < 0.7 * ctx.width
        centre = (row.box[0] + row.box[2]) / 2 - (ctx.left + ctx.width / 2)
        aligned = row.box[0] - ctx.left <= 2 * row.size or abs(centre) <= 1.5 * row.size
        where = _RowContext(
            short_line, ctx.page_height, id(row) in ctx.isolated, id(row) in ctx.leads, aligned
        )
        level = _heading_level(row, ctx.body, ctx.config, ctx.style, where)
        if not level or ctx.style is None or cur is None or cur.last is None or big_gap:
            return level
        # The second line of a row of cells (a wrapped column header) is not a heading either.
        after_cells = abs(row.size - cur.last.size) <= 0.1 * cur.last.size and _cells_apart(
            cur.last, ctx.config.min_cell_gap_ratio * ctx.style.body_size
        )
        # A lighter, smaller line set right under a heading is its subtitle or byline ("Expert help
        # to achieve ...", the authors under a title): text, not a heading of its own.
        subtitle = (
            cur.kind == "heading"
            and row.weight < cur.last.weight
            and row.size < 0.9 * cur.last.size
            and ctx.style.outline.get(_normal_title(text)) is None
        )
        return 0 if after_cells or subtitle else level

    def add_heading(self, row: _Row, text: str, level: int, gap: float, big_gap: bool) -> None:
        cur = self.cur
        continues = cur is not None and cur.level == level and not big_gap
        if cur is not None and cur.kind == "heading" and cur.last is not None and self.ctx.style is None:
            # Without a document style (a scan), a title's next line continues it only in its weight
            # and size: a plain body-size line right under a heading is its section's text.
            ratio = row.size / max(cur.last.size, 1e-6)
            continues = continues and row.bold == cur.last.bold and 0.85 <= ratio <= 1.18
        if cur is not None and cur.kind == "heading" and cur.last is not None and self.ctx.style is not None:
            # A title broken over lines keeps one weight; a line in another weight starts
            # something else, a line a little smaller (33 pt over 30 pt) still continues it.
            # A numbered line or another typeface starts a heading of its own.
            same_weight = row.weight == cur.last.weight
            same_face = {i.font for i in row.items} == {i.font for i in cur.last.items}
            near = 0.88 * cur.last.size <= row.size <= cur.last.size and gap <= 0.6 * row.size
            fresh = bool(_SECTION_NUMBER.match(text) or _NUMBERED_HEADING.match(text))
            continues = (
                same_weight and same_face and not fresh and not big_gap and (cur.level == level or near)
            )
        if continues and cur is not None and cur.kind in ("heading", "text"):
            self._extend(row, text)
            too_long = len(cur.parts[0]) > self.ctx.config.max_merged_heading_chars
            if cur.kind == "heading" and self.ctx.style is not None and too_long:
                cur.kind = "text"  # a bold paragraph, not a heading (still joined as one)
            return
        self.flush()
        self.cur = _Pending("heading", level, [text], [row.box], row, row.box[0], row.size)

    def add_list_item(self, row: _Row, marker: tuple[str, str], gap: float) -> None:
        mk, body_text = marker
        item = f"{mk} {body_text}" if mk == "-" or mk[:-1].isdigit() else f"- {mk} {body_text}"
        x = row.box[0]
        cur = self.cur
        if cur and cur.kind == "list" and not (gap > self.ctx.typical_gap + 2.0 * row.size):
            # Nesting from indentation: a marker further right than the open item's is a child.
            while len(cur.indents) > 1 and x < cur.indents[-1] - 0.5 * row.size:
                cur.indents.pop()
            if x > cur.indents[-1] + 0.8 * row.size:
                cur.indents.append(x)
            cur.parts.append("    " * (len(cur.indents) - 1) + item)
            cur.boxes.append(row.box)
        else:
            self.flush()
            cur = self.cur = _Pending("list", 0, [item], [row.box], row, row.box[0], row.size, [x])
        cur.last = row
        # Continuation lines start where the item's text starts (roughly), right of the marker.
        cur.left = row.box[0] + 0.5 * row.size

    def add_text(self, row: _Row, text: str, big_gap: bool) -> None:
        cur, ctx = self.cur, self.ctx
        if cur and cur.kind == "list" and not big_gap and row.box[0] >= cur.left - 0.25 * row.size:
            cur.parts[-1] = _join(cur.parts[-1], text, ctx.vocabulary)
            cur.boxes[-1] = union_box([cur.boxes[-1], row.box])
            cur.last = row
            return
        indented = (
            cur is not None
            and cur.kind == "text"
            and row.box[0] - ctx.left >= ctx.config.indent_ratio * row.size
            and cur.last is not None
            and cur.last.box[0] - ctx.left < 0.5 * row.size
            and not _hanging(cur, ctx.left + ctx.width, row.size)
        )
        # Back at the left edge after a hanging indent's continuation lines: the next entry.
        outdented = (
            cur is not None
            and cur.kind == "text"
            and cur.last is not None
            and cur.last.box[0] - ctx.left >= ctx.config.indent_ratio * row.size
            and cur.left - ctx.left < 0.5 * row.size
            and row.box[0] - ctx.left < 0.5 * row.size
            and not _hanging(cur, ctx.left + ctx.width, row.size)
        )
        if (
            cur
            and cur.kind == "text"
            and not big_gap
            and not indented
            and not outdented
            and _size_close(cur.size, row.size)
        ):
            self._extend(row, text)
            return
        self.flush()
        self.cur = _Pending("text", 0, [text], [row.box], row, row.box[0], row.size)

    def add_row(self, row: _Row) -> None:
        text = row.text.strip()
        if not text:
            return
        cur, ctx = self.cur, self.ctx
        gap = row.box[1] - cur.last.box[3] if cur and cur.last else 0.0
        in_code = cur is not None and cur.kind == "code"
        if all(i.mono for i in row.items) and (in_code or not _URL_LINE.match(text)):
            self.add_code(row, gap)
            return
        big_gap = cur is not None and gap > ctx.typical_gap + ctx.config.paragraph_gap_ratio * min(
            row.size, cur.size or row.size
        )
        list_continues = (
            cur is not None
            and cur.kind == "list"
            and not big_gap
            and row.box[0] >= cur.left - 0.25 * row.size
            and row.size <= 1.1 * cur.size
            and not _list_marker(text)
        )
        level = self.heading_level(row, text, big_gap, list_continues)
        if level:
            self.add_heading(row, text, level, gap, big_gap)
        elif _dash_continues(cur, text, big_gap):
            self.add_text(row, text, big_gap)
        elif marker := _list_marker(text):
            self.add_list_item(row, marker, gap)
        else:
            self.add_text(row, text, big_gap)


def _hanging(cur: _Pending, right: float, size: float) -> bool:
    """Whether the paragraph's last line ran to the column's right edge without ending a sentence:
    the indented line after it continues it (a hanging indent: a reference entry, a glossary item),
    it does not start a new paragraph (issue 30)."""
    last = cur.parts[-1].rstrip() if cur.parts else ""
    full = cur.last is not None and cur.last.box[2] >= right - 2 * size
    return full and bool(last) and not last.endswith((".", "!", "?", ":"))


def _dash_continues(cur: _Pending | None, text: str, big_gap: bool) -> bool:
    """A line starting with an en or em dash inside a running paragraph whose last line does not end
    a sentence is that paragraph's next line ("51" / "– 99 staff"), not a bullet (issue 30)."""
    return (
        cur is not None
        and cur.kind == "text"
        and not big_gap
        and text[:1] in "–—"
        and bool(cur.parts)
        and not cur.parts[-1].rstrip().endswith((".", "!", "?", ":", ";"))
    )


def _group_section(
    section: list[Item],
    body: float,
    config: LayoutConfig,
    style: DocStyle | None = None,
    vocabulary: frozenset[str] = frozenset(),
    page_height: float = 0.0,
    panel: frozenset[int] = frozenset(),
) -> list[Block]:
    """One single-column section (its lines and tables) → blocks in reading order."""
    units, typical_gap, isolated, leads = _section_units(section, body, config, style, panel)
    left = min((u.box[0] for u in units), default=0.0)
    width = max((u.box[2] for u in units), default=0.0) - left
    ctx = _SectionContext(
        body, config, style, vocabulary, page_height, typical_gap, isolated, leads, left, width
    )
    grouper = _SectionBlocks(ctx)
    for unit in units:
        if isinstance(unit, _Table):
            grouper.add_table(unit)
        else:
            grouper.add_row(unit)
    grouper.flush()
    return grouper.blocks


def _tables_beside_a_gutter(
    lines: list[TextLine], page_width: float, config: LayoutConfig, body: float
) -> tuple[list[_Table], list[TextLine]]:
    """Tables inside one column of a page with columns (a two-page spread): their rows share
    baselines with text of the other column, so the whole-page search cannot see them."""
    gutter = _find_gutter(lines, config, body)
    if gutter is None:
        return [], lines
    mid = (gutter[0] + gutter[1]) / 2
    left = [ln for ln in lines if ln.box[2] <= mid]
    right = [ln for ln in lines if ln.box[0] >= mid]
    found: list[_Table] = []
    rest = [ln for ln in lines if not (ln.box[2] <= mid or ln.box[0] >= mid)]
    for side in (left, right):
        tables, others = detect_tables(side, page_width / 2, config, body)
        for table in tables:
            # Only clear grids here (≥ 3 rows of ≥ 3 filled cells): inside a text column, two short
            # lines side by side are more often a heading beside a figure label than a table.
            if len(table.rows) >= 3 and all(sum(1 for c in r if c) >= 3 for r in table.rows):
                found.append(table)
            else:
                ids = {id(it) for it in table.items}
                others += [ln for ln in side if id(ln) in ids]
        rest += others
    return found, rest


MAX_LABEL_WORDS = 8  # a figure whose lines are all shorter holds labels, not prose


def _figure_items(lines: list[TextLine]) -> tuple[list[_Table], list[TextLine], frozenset[int]]:
    """The labels of each figure (a diagram's vector text) as one item, read row by row where the
    figure stands, and the other lines.

    Why: left loose, labels side by side look like text columns or table rows, and a figure that
    spans both columns of a page would be torn in two. A figure with sentences in it (a text box over
    a picture) keeps its lines: they are read as text, and their ids come back as the third item.
    """
    groups: dict[int, list[TextLine]] = {}
    for ln in lines:
        if ln.in_figure and ln.figure:
            groups.setdefault(ln.figure, []).append(ln)
    figures: list[_Table] = []
    grouped: set[int] = set()
    panel: set[int] = set()
    for members in groups.values():
        if any(len(ln.text.split()) >= MAX_LABEL_WORDS for ln in members):
            panel.update(id(ln) for ln in members)
            continue
        rows = group_rows(members)
        figures.append(
            _Table(
                box=union_box([ln.box for ln in members]),
                rows=[[r.text] for r in rows],
                size=statistics.median(ln.size for ln in members),
                items=members,
                form=True,
            )
        )
        grouped.update(id(ln) for ln in members)
    return figures, [ln for ln in lines if id(ln) not in grouped], frozenset(panel)


def _cover_style(lines: Sequence[TextLine], style: DocStyle) -> DocStyle:
    """On a cover page (big type, almost no body text) only the title is a heading: the largest
    line of at least three words; "Front cover", series names, taglines and authors are not."""
    chars = sum(len(ln.text) for ln in lines)
    body_chars = sum(len(ln.text) for ln in lines if abs(ln.size - style.body_size) <= 0.06 * style.body_size)
    if not 40 <= chars <= 800 or body_chars >= 0.2 * chars:  # a cover has little text, little body
        return style
    titled = [ln.size for ln in lines if len(ln.text.split()) >= 3 and ln.size >= 1.5 * style.body_size]
    if not titled:
        return style
    return replace(style, cover_min_size=0.97 * max(titled))


def blocks_to_markdown(blocks: Sequence[Block]) -> str:
    """The page's Markdown: blocks separated by a blank line."""
    return "\n\n".join(b.text for b in blocks if b.text and b.label not in ("page_header", "page_footer"))
