"""Positioned text lines and what every structure pass speaks: ``TextLine``, rows of lines on one
baseline, the ``Table`` item a pass puts in their place, the page's body size, direction and box
geometry, and the two settings objects (``LayoutConfig``, the document's ``DocStyle``).

Why a module of its own: the light OCR engine (RapidOCR boxes) and the PDF text layer (PyMuPDF spans)
both produce the same thing — short runs of text with a box and a size — and every pass (tables,
columns, headings, paragraphs) reads it; kept apart, the passes share it without importing each other.
Pure Python over boxes, cheap to test.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_app.schema import Box, union_box
from ocr_app.structure.table_html import Cell, table_html

EDGE_BAND = 0.12  # top / bottom fraction of the page where running headers, footers, page numbers live


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
    # In a monospaced font, on a page read as a typescript (``mono`` then off: its lines are prose).
    typed: bool = False
    # x-ranges of the words of ``text`` (one per ``text.split()`` token), when the engine knows where
    # each glyph stands: table cells set one space apart come as one line and are cut on them.
    words: tuple[tuple[float, float], ...] = ()
    # The page's layout model's word on this line (scans, ``structure.scan_regions``): "title" (a
    # heading), "prose" (a line of a paragraph: never a table cell), "figure"; "" = no model.
    role: str = ""
    # The colour most of its characters are drawn in, as sRGB 0xRRGGBB (the text layer knows it;
    # -1 = unknown: the light engine, scans). A brand colour marks headings, a light grey running lines.
    color: int = -1
    # The capitals' size when the line is set in small capitals (capitals, the other letters as
    # smaller capitals), else 0: a section title's style in papers ("Abstract", "References" in IEEE's
    # template). ``size`` stays the letters' mean size, as tables and paragraphs compare it.
    caps_size: float = 0.0
    # Underlined from end to end by a drawn stroke (not a link): a title's style in older documents.
    underlined: bool = False


def channels(color: int) -> tuple[float, float, float]:
    """0xRRGGBB → (r, g, b) in 0..1."""
    return ((color >> 16) & 255) / 255, ((color >> 8) & 255) / 255, (color & 255) / 255


def light_grey(color: int) -> bool:
    """Whether text in ``color`` reads as light grey: every channel at least ``LIGHT_GREY`` and about
    neutral (no channel more than ``NEUTRAL_SPREAD`` from another). Running heads and footers are set
    so, a step back from the text; body text and headings never are (they must read on white)."""
    if color < 0:
        return False
    rgb = channels(color)
    return min(rgb) >= LIGHT_GREY and max(rgb) - min(rgb) <= NEUTRAL_SPREAD and min(rgb) < 0.95


def accent(color: int, body: int) -> bool:
    """Whether text in ``color`` is set in a colour of its own against body text in ``body``: clearly
    coloured (channels at least ``MIN_CHROMA`` apart: not black, grey or white), not near-black (the
    brightest channel at least ``MIN_ACCENT_LIGHT``: a dark navy still counts, a black with a tint does
    not), and far from the body's colour (a document set in blue throughout has no accent in blue)."""
    if color < 0 or body < 0:
        return False
    rgb, base = channels(color), channels(body)
    return (
        max(rgb) - min(rgb) >= MIN_CHROMA
        and max(rgb) >= MIN_ACCENT_LIGHT
        and max(abs(a - b) for a, b in zip(rgb, base, strict=True)) >= MIN_CHROMA
    )


LIGHT_GREY = 0.55  # every channel of a light grey at least this (0x8C)
NEUTRAL_SPREAD = 0.1  # a grey's channels at most this far apart
MIN_CHROMA = 0.15  # a colour's channels at least this far apart (and this far from the body's)
MIN_ACCENT_LIGHT = 0.25  # a colour's brightest channel at least this (darker is near-black)


ANY_WEIGHT = -1  # a title face's weight where its family, at every weight, sets titles only (``DocStyle``)


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
    # (size, weight, font) of the document's lines that read as headings without a colon (larger or
    # heavier than the body, short, ending in no punctuation): a line ending in ":" set in one of these
    # is a heading in the document's own heading style, not a label.
    heading_styles: tuple[tuple[float, int, str], ...] = ()
    body_color: int = -1  # sRGB of most body-size characters; -1 = unknown
    # (colour, size) of the document's short standalone-looking lines set in an accent colour at body
    # size or larger, two or more of them: headings marked by colour alone (``docprofile``).
    color_styles: tuple[tuple[int, float], ...] = ()
    # normalised text → numbering depth of the lines that head numbered sections, where the numbers'
    # own hierarchy says so (``numbering.numbered_titles``): titles set like the body text.
    numbered: dict[str, int] = field(default_factory=dict)
    # Faces (font family, weight or ``ANY_WEIGHT``) in which the document sets its titles and nothing else
    # (``docprofile``): a short line at body size in one is a heading marked by its typeface alone.
    title_faces: frozenset[tuple[str, int]] = frozenset()
    # The level of each of ``heading_sizes`` as the document's bookmarks set the headings of that size
    # (``docprofile``); () where the bookmarks name none of them: levels then go by rank.
    tier_levels: tuple[int, ...] = ()
    # Titles (``numbering.normal_title``) that the document sets as larger headings and also lists, two
    # or more lines in a row at body size: a contents list's entries (``heading_tiers.contents_entries``).
    contents: frozenset[str] = frozenset()
    # This page's body size over the document's where the page is set in another print and the
    # heading sizes were scaled to it (``passes.prepare``); 1.0 elsewhere.
    print_scale: float = 1.0

    def in_color_style(self, color: int, size: float) -> bool:
        """Whether a line of this colour and size is set like the document's coloured headings."""
        return any(color == c and abs(size - s) <= 0.03 * s for c, s in self.color_styles)

    def in_heading_style(self, size: float, weight: int, font: str) -> bool:
        """Whether a line of this size, weight and font is set like the document's other headings."""
        return any(
            abs(size - s) <= 0.03 * s and weight == w and (font == f or not font or not f)
            for s, w, f in self.heading_styles
        )

    def level_for_size(self, size: float) -> int:
        """Level of the nearest heading size at or below ``size`` (bigger = higher); below them all,
        one level under the smallest."""
        for k, s in enumerate(self.heading_sizes):
            if size >= 0.97 * s:
                return self.tier_levels[k] if self.tier_levels else k + self.first_level
        if self.tier_levels:
            return self.tier_levels[-1] + 1
        return len(self.heading_sizes) + self.first_level


MAX_COLOR_HEADING_WORDS = 12  # a heading marked by colour alone is a short line


def color_heading_like(text: str, color: int, size: float, style: DocStyle) -> bool:
    """Whether a line could be a heading marked by its colour alone: set in an accent colour against the
    body's (``accent``) at body size or larger, short (``MAX_COLOR_HEADING_WORDS``), not a sentence nor
    a clause (no closing full stop, comma or semicolon: a coloured pull quote ends its sentence), with
    letters, starting with no lower-case letter (the wrapped second line of a coloured caption)."""
    text = text.strip()
    return (
        accent(color, style.body_color)
        and size >= 0.95 * style.body_size
        and len(text.split()) <= MAX_COLOR_HEADING_WORDS
        and not text.endswith((".", ",", ";"))
        and not text[:1].islower()
        and sum(c.isalpha() for c in text) >= 2
    )


@dataclass
class LayoutConfig:
    """Thresholds of the layout heuristics (ratios, so they work at any resolution)."""

    heading_ratio: float = 1.4  # size ≥ this × body size → heading
    h1_ratio: float = 1.9  # size ≥ this × body size → "#"
    bold_heading_ratio: float = 1.15  # bold, short, standalone line this much larger → "###"
    # without a document style: a plain short line standing alone this much larger → "###" (0: never;
    # the light engine sets 1.12, clear of the ±5 % a scan's sizes spread by)
    plain_alone_ratio: float = 0.0
    max_heading_chars: int = 160
    max_merged_heading_chars: int = 90  # with a document style: longer bold runs are paragraphs
    min_gutter_ratio: float = 0.8  # gutter ≥ this × body size
    styled_heading_ratio: float = 1.12  # with a document style: size ≥ this × body → heading
    min_heading_weight_gain: int = 150  # with a document style: this much heavier than body → heading
    min_cell_gap_ratio: float = 1.2  # table cells separated by ≥ this × body size
    paragraph_gap_ratio: float = 0.5  # gap ≥ typical gap + this × size → new paragraph
    max_line_gap_ratio: float = 0.8  # the typical gap is at most this × body size (see group_section)
    indent_ratio: float = 1.0  # first-line indent ≥ this × size → new paragraph
    max_isolated_heading_words: int = 12  # a bold line standing alone is a heading up to this length
    max_lead_in_words: int = 10  # a bold line ending in ":" on its own is a heading up to this length
    isolation_gap_ratio: float = 1.0  # a line is alone with a gap ≥ this × its size above and below
    chapter_number_ratio: float = 2.0  # with a document style: a bare number this large is a heading
    max_term_words: int = 6  # a definition list's bold term is at most this long
    max_definition_rows: int = 2  # and its definition a line or two (a section runs longer)
    min_definition_entries: int = 3  # entries in one style, one after another, that make a list


@dataclass
class Table:
    """A table (or a figure's labels, a form) found by a pass, standing in for the lines it was built
    from: the later passes place it as one item, like a line."""

    box: Box
    rows: list[list[str]] | list[list[Cell]]
    size: float = 0.0
    items: list[TextLine] = field(default_factory=list)  # the lines it was built from
    form: bool = False  # a sparse grid (a form): rendered as one text line per row
    header_rows: int = 0  # leading rows that are the header (0: not known)
    contents: bool = False  # a table of contents (dot leaders), found from its rows' text alone
    panel: bool = False  # a filled panel's lines, read whole (``passes.columns``): no table

    @property
    def html(self) -> str:
        """The table as DeepSeek-OCR-2 writes it (``engines.table_html``)."""
        return table_html(self.rows, self.header_rows)


Rule = tuple[float, float, float]  # a horizontal rule drawn on the page: x0, y, x1 (page pixels)


@dataclass
class Row:
    """Lines on one baseline (``group_rows``): the pieces of one printed line, or cells side by side."""

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
    def caps_size(self) -> float:
        """The capitals' size when every piece is set in small capitals, else 0."""
        return max(i.caps_size for i in self.items) if all(i.caps_size for i in self.items) else 0.0

    @property
    def underlined(self) -> bool:
        return all(i.underlined for i in self.items)

    @property
    def italic(self) -> bool:
        return all(i.italic for i in self.items)

    @property
    def color(self) -> int:
        """The colour all the row's pieces share, or -1 (several colours: a link inside a sentence)."""
        colors = {i.color for i in self.items}
        return colors.pop() if len(colors) == 1 else -1

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


Item = TextLine | Table

_RTL_RANGES = ((0x0590, 0x08FF), (0xFB1D, 0xFDFF), (0xFE70, 0xFEFF))


_RTL_CHAR = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _RTL_RANGES) + "]")


def is_rtl(text: str) -> bool:
    """Whether most letters of ``text`` are of a right-to-left script (Hebrew, Arabic, Persian...)."""
    if not text or not _RTL_CHAR.search(text):
        # No character of those scripts (most text): one C-speed pass. ``max(text) < "\u0590"`` was
        # that test, but a curly quote or a dash is past it, and most lines of print hold one.
        return False
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    rtl = sum(1 for c in letters if any(a <= ord(c) <= b for a, b in _RTL_RANGES))
    return rtl > len(letters) / 2


def _height(box: Box) -> float:
    return max(box[3] - box[1], 1e-6)


def vertical_overlap(a: Box, b: Box) -> float:
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


_LINE_NUMBER = re.compile(r"\d{1,5}")


def listing_rows(rows: Sequence[Row]) -> set[int]:
    """The ids of the rows (top to bottom) that are lines of a listing: set in a monospaced font all
    through, or so after their line number in the margin (a numbered listing, docstrip's code in a
    package's manual: "134" in the text face beside ``\\global\\let\\lhd``). Their columns are set
    with spaces, and the numbers are no column of a table.

    Line numbers run on: a numbered row counts where the numbered row before or after it carries the
    number one less or one more. A table of character codes beside command names ("2304" beside
    ``\\nless``, "2302" beside ``\\nleq``) does not, nor does a footnote's raised mark before a web
    address in typewriter (the number must also sit on the code's line, the code hold no address)."""
    out: set[int] = set()
    # Typewriter faces the rows use: a line that MuPDF returns with its number ("37 \\providecommand…")
    # is typed in one of them, though the number is not.
    mono_fonts = {i.font for row in rows for i in row.items if i.mono and i.font}
    numbered: list[tuple[int, Row, bool]] = []  # (number, row, its text monospaced)
    for row in rows:
        items = sorted(row.items, key=lambda i: i.box[0])
        if items[0].mono and all(i.mono or icon(i.text) for i in items[1:]):
            out.add(id(row))
        elif (n := _line_number(items)) is not None:
            rest = items[1:] if len(items) > 1 else []
            code = all(i.mono for i in rest) if rest else items[0].font in mono_fonts
            numbered.append((n, row, code))
    for k, (n, row, code) in enumerate(numbered):
        before = numbered[k - 1][0] if k else None
        after = numbered[k + 1][0] if k + 1 < len(numbered) else None
        if code and (before == n - 1 or after == n + 1):
            out.add(id(row))
    return out


def icon(text: str) -> bool:
    """Whether a piece is a mark set after code in a text face, no word: rustdoc's "ⓘ" after a
    signature that returns an iterator (a glyph the text layer may not map)."""
    text = text.strip()
    return len(text) <= 2 and not any(c.isalnum() for c in text)


_NUMBERED_LINE = re.compile(r"(\d{1,5})\s+\S")


def _line_number(items: Sequence[TextLine]) -> int | None:
    """The number a row carries in its margin before text, or None: a piece of its own on the text's
    line, or the start of a one-piece line. A line holding a web address is a footnote's."""
    if any("://" in i.text or "www." in i.text for i in items):
        return None
    if len(items) == 1:
        m = _NUMBERED_LINE.match(items[0].text.strip())
        return int(m.group(1)) if m else None
    if not _LINE_NUMBER.fullmatch(items[0].text.strip()):
        return None
    num, text = items[0].box, union_box([i.box for i in items[1:]])
    middle = (text[1] + text[3]) / 2
    if abs((num[1] + num[3]) / 2 - middle) > 0.25 * (text[3] - text[1]):
        return None
    return int(items[0].text.strip())


MAX_LABEL_CHARS = 24  # a version or a tag beside a signature ("1.28.0 ·", "1.36.0 (const: 1.36.0) ·")
MAX_LABEL_WORDS = 4
LABEL_GAP = 2.0  # × size: at least this much blank between the signature and its label


def margin_label(row: Row) -> TextLine | None:
    """The label set flush right beside a signature, or None: the row's last piece, short and not in
    code, at least ``LABEL_GAP`` sizes right of the code before it, every other piece in bold code.
    rustdoc prints the version since which a method exists beside its signature ("1.0.0 ·"); on the
    signature's line the label kept it from being read as code (round 36). A button beside a listing's
    line ("COPY" on Node.js's code panels) is no label of a signature: it stays on its line."""
    if len(row.items) < 2:
        return None
    items = sorted(row.items, key=lambda i: i.box[0])
    label, code = items[-1], items[:-1]
    text = label.text.strip()
    if (
        label.mono
        or not code[0].mono
        or not all((i.mono and i.bold) or icon(i.text) for i in code)
        or sum(c.isalpha() for i in code for c in i.text) < 2  # a listing's closing "}", no signature
        or len(text) > MAX_LABEL_CHARS
        or len(text.split()) > MAX_LABEL_WORDS
        or label.box[0] - code[-1].box[2] < LABEL_GAP * label.size
    ):
        return None
    return label


def split_margin_labels(units: Sequence[Row | Table]) -> list[Row | Table]:
    """``units`` with each row's ``margin_label`` taken out onto a row of its own, right before its line."""
    out: list[Row | Table] = []
    for row in units:
        label = margin_label(row) if isinstance(row, Row) else None
        if label is None:
            out.append(row)
        else:
            out += [Row([label]), Row([i for i in row.items if i is not label])]
    return out


def group_rows(items: Sequence[TextLine], min_overlap: float = 0.5) -> list[Row]:
    """Items whose y-ranges overlap enough form one row; rows top to bottom."""
    rows: list[Row] = []
    # Each row's box as it grows: ``Row.box`` goes over all of a row's items, for every item weighed
    # (a chart's 2,000 scattered labels, rows of dozens of them: 6,000 boxes of dozens of items each).
    boxes: list[Box] = []
    for item in sorted(items, key=lambda i: (i.box[1] + i.box[3]) / 2):
        for k in range(len(rows) - 1, max(len(rows) - 4, -1), -1):
            if vertical_overlap(boxes[k], item.box) >= min_overlap:
                rows[k].items.append(item)
                b, i = boxes[k], item.box
                boxes[k] = (min(b[0], i[0]), min(b[1], i[1]), max(b[2], i[2]), max(b[3], i[3]))
                break
        else:
            rows.append(Row([item]))
            boxes.append(union_box([item.box]))
    rows.sort(key=lambda r: (r.box[1] + r.box[3]) / 2)
    return rows


LEADING = 0.6  # × a line's height: the lines of one block of text (a listing) stand closer one under another


def stacked_runs(rows: Sequence[Row], leading: float = LEADING) -> list[list[Row]]:
    """``rows`` (top to bottom) in runs of rows set one right under another, less than ``leading`` of
    a line's height apart, as the lines of one block of text (a listing's rows) are."""
    runs: list[list[Row]] = []
    for row in rows:
        if runs and row.box[1] - runs[-1][-1].box[3] <= leading * (runs[-1][-1].box[3] - runs[-1][-1].box[1]):
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def size_close(a: float, b: float) -> bool:
    return max(a, b) <= 1.6 * min(a, b)


def in_margin_band(box: Box, height: float) -> bool:
    """Whether the box lies wholly in the page's top or bottom band (running lines, page numbers)."""
    return box[3] <= EDGE_BAND * height or box[1] >= (1 - EDGE_BAND) * height
