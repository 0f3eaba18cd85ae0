"""Blocks of each section in reading order: headings (levels from the document's hierarchy), list
items, code, tables, and paragraphs whose lines are joined with line-end hyphens mended.

How: inside one column, items on one baseline are joined into rows; each row, top to bottom, either
goes on with the open block or closes it and opens another (``_SectionBlocks``): a heading
(``structure.headings`` says which level), a list item (``-``, ``•``, ``1.``, ``a)`` markers,
nested by indentation), a line of code, or paragraph text (broken on a larger vertical gap, a size
change, a first-line indent; ``structure.paragraphs`` has the joins and continuations).

Why the assembly is apart from the rules: it holds the state (the one open block), the rules are
pure functions over a row that can be tested alone.
"""

from __future__ import annotations

import itertools
import logging
import re
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ocr_app.schema import Block, union_box
from ocr_app.structure.definition_lists import definition_terms, indented_terms
from ocr_app.structure.headings import (
    CAPTION,
    NUMBERED_HEADING,
    SECTION_NUMBER,
    RowContext,
    cells_apart,
    code_title_level,
    code_titles,
    colored_rows,
    heading_level,
    isolated_rows,
    leading_rows,
    lowercase_start,
    open_quotation,
    panel_leads,
    wrapped_code_titles,
)
from ocr_app.structure.lines import (
    DocStyle,
    Item,
    LayoutConfig,
    Row,
    Table,
    TextLine,
    group_rows,
    listing_rows,
    size_close,
    split_margin_labels,
)
from ocr_app.structure.numbering import outline_level
from ocr_app.structure.paragraphs import (
    CODE_GAP_LINES,
    URL_LINE,
    WRAP_CHARS,
    Pending,
    code_block,
    dash_continues,
    hanging,
    hanging_indent,
    hangs_under_label,
    join_lines,
    label_text_x,
    list_marker,
    next_entry,
    next_keyed,
    next_numbered,
    one_line_entry,
    star_note,
    word_fits_above,
    wrapped_marker,
)
from ocr_app.structure.table_html import continue_table

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout

logger = logging.getLogger(__name__)


def run(page: PageLayout) -> None:
    open_end: Block | None = None
    items = [i for section in page.sections for i in section]
    frame = (min((i.box[0] for i in items), default=0.0), max((i.box[2] for i in items), default=0.0))
    for section in page.sections:
        grouper = _group(
            section,
            page.body,
            page.config,
            page.style,
            page.vocabulary,
            page.page_height,
            page.panel,
            frame,
            page.heading_body,
        )
        blocks, tail = grouper.blocks, grouper.open_end
        ends_open = open_end is not None and bool(page.blocks) and page.blocks[-1] is open_end
        if ends_open and blocks and next_column(open_end, blocks[0], page.body):  # type: ignore[arg-type]
            first = blocks.pop(0)
            joined = Block(
                "text",
                join_lines(open_end.text, first.text, page.vocabulary),  # type: ignore[union-attr]
                [*open_end.boxes, *first.boxes],  # type: ignore[union-attr]
            )
            page.blocks[-1] = joined
            tail = joined if tail is first else tail
        page.blocks.extend(blocks)
        open_end = tail
    page.blocks[:] = join_repeated_heads(page.blocks)
    logger.debug(
        "layout: %d lines → %d blocks (%d tables)", len(page.lines), len(page.blocks), len(page.found)
    )


def next_column(upper: Block, lower: Block, body: float) -> bool:
    """Whether ``lower`` (a paragraph opening the next section) stands at the top of the next column,
    beside ``upper`` (a paragraph whose last line ran to its column's edge mid-sentence) and higher on
    the page: the column broke the paragraph, the text goes on (issue 30, round 10)."""
    a, b = upper.box, lower.box
    if lower.label != "text" or a is None or b is None:
        return False
    beside = b[0] >= a[2] - 0.5 * body or b[2] <= a[0] + 0.5 * body
    return beside and b[1] < a[3] - body


def join_repeated_heads(blocks: list[Block]) -> list[Block]:
    """A table whose header rows repeat those of the table right before it in reading order (nothing
    between them) goes on from it (``table_html.continue_table``): one table, the header once."""
    out: list[Block] = []
    for block in blocks:
        prev = out[-1] if out else None
        if prev is not None and prev.label == block.label == "table":
            joined = continue_table(prev.text, block.text)
            if joined is not None:
                out[-1] = Block("table", joined, [*prev.boxes, *block.boxes])
                continue
        out.append(block)
    return out


RUN_WORDS = 6  # a one-line paragraph of this many words that runs to the column's edge may go on in the next
LONGER_TITLE = 1.5  # × ``max_merged_heading_chars``: a title set larger than the body may run so long
SIZE_STEP = 0.88  # lines whose sizes differ more than this ratio are set in two sizes
TITLE_LEADING = 0.6  # × size: a title's wrapped line stands at most this far under its first line


def _size_step(last: Row | None, row: Row) -> bool:
    """Whether two lines of running text (four words or more each) are set in sizes apart by more than
    ``SIZE_STEP``: a paragraph keeps its size from line to line, so a note in small type under a table
    and the body paragraph after it are two blocks, even where the page sets every paragraph a blank
    line apart and the gap between them is no larger than the page's usual one. Superscripts do not
    count (a line's size is its text's)."""
    if last is None:
        return False
    small, big = sorted((last.size, row.size))
    return small < SIZE_STEP * big and len(last.text.split()) >= 4 and len(row.text.split()) >= 4


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
    panel_leads: set[int] = field(default_factory=set)  # heads of text panels over pictures (``panel_leads``)
    terms: set[int] = field(default_factory=set)
    leads: set[int] = field(default_factory=set)  # rows right above what they head (``leading_rows``)
    left: float = 0.0
    width: float = 0.0
    hang_x: float | None = None  # where wrapped lines start in a section set with hanging indents
    hang_top: float = 0.0  # ... from this height down (the first entry that wraps)
    colored: set[int] = field(default_factory=set)  # rows standing apart in an accent colour
    listings: set[int] = field(default_factory=set)  # rows of a listing (``lines.listing_rows``)
    code_titles: set[int] = field(default_factory=set)  # headings set in code (``headings.code_titles``)
    code_tails: set[int] = field(default_factory=set)  # their lines after the first (``wrapped_code_titles``)
    frame: tuple[float, float] = (0.0, 0.0)  # left and right edges of the page's text
    # The left and right edges of the section's rows (``column_right``).
    spans: list[tuple[float, float]] = field(default_factory=list)
    tags: bool = False  # the section is a few rows of a word or three (``MAX_TAGS``)
    heading_body: float = 0.0  # what headings are measured against (0: ``body``; ``prepare``)

    def column_right(self, cur: Pending, row: Row) -> float:
        """The right edge of the column ``row`` and the open paragraph stand in: the widest of the
        section's rows that start at their left edge (or a paragraph's indent in from it). Why not the
        section's width: a table set beside the text shares the section, and its rows reach further."""
        left = min(cur.left, row.box[0])
        return max(
            (x1 for x0, x1 in self.spans if left - row.size <= x0 <= left + MAX_INDENT * row.size),
            default=self.left + self.width,
        )

    def far_right(self, row: Row) -> bool:
        """Whether ``row`` starts in the right part of its section."""
        return row.box[0] - self.left > FAR_RIGHT * self.width

    def tag(self, row: Row) -> bool:
        """Whether ``row`` stands in a section of a few words in the right part of the page's text:
        buttons or tags that the columns set apart ("COPY" at the foot of each code panel, read as a
        column of their own)."""
        left, right = self.frame
        return self.tags and row.box[0] - left > FAR_RIGHT * (right - left)


# "(2) They shall …", "(xii) any amount …", "(e) “eligible …": a clause's enumerator in brackets.
_ENUMERATOR = re.compile(r"^\(\s*(\d{1,3}|[a-z]{1,2}|[ivxlc]{1,6}|[A-Z])\s*\)\s+\S")


def _enumerates_next(a: str, b: str) -> bool:
    """Whether enumerator ``b`` follows ``a``: 1 → 2, a → b, ix → x (roman numerals in lower case)."""
    if a.isdigit() and b.isdigit():
        return int(b) == int(a) + 1
    if len(a) == len(b) == 1 and a.isalpha() and b.isalpha() and ord(b) == ord(a) + 1:
        return True
    ra, rb = _roman(a), _roman(b)
    return ra is not None and rb is not None and rb == ra + 1


def _roman(text: str) -> int | None:
    """The value of a lower-case roman numeral ("xii" → 12), or None for any other text."""
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
    if not text or any(ch not in values for ch in text):
        return None
    digits = [values[ch] for ch in text]
    return sum(-d if k + 1 < len(digits) and d < digits[k + 1] else d for k, d in enumerate(digits))


CLAUSE_ENDS = (".", ";", ":", "-", "—", "–")  # how a clause may end before the next one


def _ends_sentence(text: str) -> bool:
    return text.rstrip().endswith((".", "!", "?"))


GAP_JUMP = 0.5  # × body size: sorted line gaps that jump by this much come in two sizes
SHORT_LINE = 3.0  # × size: a paragraph's last line stops at least this short of the column's edge...
PARSKIP = 0.3  # ... with at least this × size more space under it than between its lines: it ended
OVERLAP = 0.25  # × size: rows overlapping more than this are side by side, not stacked lines
MAX_INDENT = 4.0  # × size: a row starting this far in from a column's left edge is still in the column


def _typical_gap(gaps: list[float], body: float, config: LayoutConfig, *, one: bool = False) -> float:
    """The gap between the lines of a paragraph: the median of the smallest gaps, where the gaps come
    in two sizes (lines, and blank lines between paragraphs of two or three lines each, which may be
    half the gaps or more), of all of them otherwise. ``one``: a single smallest gap counts as the
    smallest size (a scanned slide's panel: a head, a blank line, two lines of text).

    Capped: on a page whose only gaps are blank lines, the median gap is the blank line itself, and
    every paragraph would merge; 0.8 × size still passes double-spaced text as one paragraph."""
    if not gaps:
        return 0.0
    ordered = sorted(gaps)
    cut = next(
        (
            k + 1
            for k in range(0 if one else 1, len(ordered) - 1)
            if ordered[k + 1] - ordered[k] >= GAP_JUMP * body
        ),
        len(ordered),
    )
    return min(statistics.median(ordered[:cut]), config.max_line_gap_ratio * body)


def _section_units(
    section: list[Item], body: float, config: LayoutConfig, style: DocStyle | None, panel: frozenset[int]
) -> tuple[list[Row | Table], float, set[int], set[int], set[int]]:
    """The section's rows and tables top to bottom, its typical line gap, the rows that stand alone,
    the rows that lead a text panel over a picture and the terms of a definition list."""
    texts = [i for i in section if isinstance(i, TextLine)]
    units: list[Row | Table] = [*group_rows(texts), *(i for i in section if isinstance(i, Table))]
    units.sort(key=lambda u: (u.box[1] + u.box[3]) / 2)
    units = split_margin_labels(units)
    rows_only = [u for u in units if isinstance(u, Row)]
    # Rows that overlap by more than a quarter of a line are no lines of one paragraph (the heads of a
    # table set in the middle of their cells, beside and over each other): their "gaps" are no spacing.
    gaps = [
        b.box[1] - a.box[3]
        for a, b in itertools.pairwise(rows_only)
        if size_close(a.size, b.size) and -OVERLAP * a.size <= b.box[1] - a.box[3] < 2.5 * a.size
    ]
    typical_gap = _typical_gap(gaps, body, config)
    # On a scan too (a bold line alone is a heading there, ``heading_level``), where the OCR's boxes
    # reach into the spacing: a blank line there is half a line more than the paragraph's line gap.
    # The blank line of a panel of three rows (a head, two lines) is half its gaps: the line gap is the other.
    isolated = isolated_rows(
        units, config, None if style is not None else _typical_gap(gaps, body, config, one=True)
    )
    leads = panel_leads(units, panel) if style is not None and panel else set()
    terms = definition_terms(units, config) if style is not None else set()
    return units, typical_gap, isolated, leads, terms


def _title_rest(row: Row, text: str, cur: Pending | None, ctx: _SectionContext) -> bool:
    """Whether a bare number ("2025") is the last line of the display title open above it: in the
    title's size, weight and face, at its line spacing. Alone it is no heading (a page number, a
    figure), but "River Quality Monitoring" over "2025" is one title broken where the line ran out."""
    last = cur.last if cur is not None else None
    style = ctx.style
    if cur is None or cur.kind != "heading" or last is None or style is None:
        return False
    return (
        sum(c.isalpha() for c in text) < 2
        and any(c.isdigit() for c in text)
        and len(text.split()) == 1
        and row.size >= ctx.config.styled_heading_ratio * style.body_size
        and size_close(row.size, last.size)
        and row.weight == last.weight
        and {i.font for i in row.items} == {i.font for i in last.items}
        and -0.3 * row.size <= row.box[1] - last.box[3] <= 0.6 * row.size
    )


FAR_RIGHT = 0.6  # a line that starts past this share of its section's width is far right
MAX_TAGS = 4  # rows in a section of tags or buttons (a column's section runs longer)
KICKER_RATIO = 0.8  # a kicker is at least a fifth smaller than the title under it
_ORDINAL_END = re.compile(r"\b(?:[IVXLC]{1,5}|[A-Z])$")  # "PART IV", "Appendix B": a numbered label


def kicker(cur: Pending, row: Row, text: str, level: int, gap: float) -> bool:
    """Whether the open one-line heading ``cur`` is a kicker: a short line in a clearly smaller type
    (at most ``KICKER_RATIO`` of the title's size) set right above a larger heading over the same
    column ("CASE STUDY" over a slide's title). It labels the title; the title heads the section. A
    heading of a higher rank never stands right above a larger one with nothing between them, so the
    kicker may be heading-sized itself (20 pt over a 30 pt title on slides whose body is 16 pt). A
    numbered line ("Chapter 3", "PART IV", "2.1") keeps its heading."""
    last = cur.last
    if cur.kind != "heading" or last is None or len(cur.boxes) != 1 or cur.level <= level:
        return False
    first = cur.parts[0]
    numbered = bool(
        SECTION_NUMBER.match(first) or NUMBERED_HEADING.match(first) or _ORDINAL_END.search(first)
    ) or any(c.isdigit() for c in first)
    return (
        not numbered
        and len(first.split()) <= 5
        and last.size <= KICKER_RATIO * row.size
        and gap <= row.size
        and min(last.box[2], row.box[2]) > max(last.box[0], row.box[0])
        and not SECTION_NUMBER.match(text)
    )


# A mark with no letter or digit at a heading's start or end, raised ("<sup>[*]</sup>", "¶") or in
# brackets ("[*]", "[†]"): an anchor a reference prints beside its titles (the Rust Reference's rule
# links), no part of the title.
_BARE_MARK = re.compile(
    r"^\s*<sup>[^\w<]*</sup>\s*|\s*<sup>[^\w<]*</sup>\s*$|^\s*\[[^\w\[\]]{1,3}\]\s+(?=\w)"
)


class _SectionBlocks:
    """Rows of one section → blocks: paragraphs (lines joined, line-end hyphens mended), headings,
    list items (nested by indentation), code blocks and tables, one open block at a time."""

    def __init__(self, ctx: _SectionContext) -> None:
        self.ctx = ctx
        self.blocks: list[Block] = []
        self.cur: Pending | None = None
        self.open_end: Block | None = None  # the last block, when its paragraph may go on elsewhere

    def flush(self) -> None:
        cur, self.cur = self.cur, None
        self.open_end = None
        if cur is None or not cur.parts:
            return
        if cur.kind == "heading":
            label = "title" if cur.level == 1 else "sub_title"
            text = _BARE_MARK.sub("", cur.parts[0]).strip() or cur.parts[0]
            self.blocks.append(Block(label, "#" * cur.level + " " + text, [union_box(cur.boxes)]))
        elif cur.kind == "list":
            self.blocks.append(Block("list", "\n".join(cur.parts), list(cur.boxes)))
        elif cur.kind == "code":
            self.blocks.append(Block("code", code_block(cur.parts, cur.boxes), [union_box(cur.boxes)]))
        else:
            self.blocks.append(Block("text", cur.parts[0], [union_box(cur.boxes)]))
            last = cur.last.text.strip() if cur.last is not None else ""
            # a paragraph of the column, not a label of a drawing: two lines, or one line of running
            # text (a paragraph the column breaks after its first line)
            lines = len(cur.boxes) >= 2 or len(last.split()) >= RUN_WORDS
            if lines and len(last) >= WRAP_CHARS and hanging(cur, self.ctx.left + self.ctx.width, cur.size):
                self.open_end = self.blocks[-1]  # ran to the edge mid-sentence: may go on in the next column

    def add_table(self, table: Table) -> None:
        self.flush()
        if table.form:
            self.blocks.extend(Block("text", row[0], [table.box]) for row in table.rows if row and row[0])
        else:
            self.blocks.append(Block("table", table.html, [table.box]))

    def _extend(self, row: Row, text: str) -> None:
        """The open paragraph or heading goes on with this row."""
        cur = self.cur
        assert cur is not None
        cur.parts[0] = join_lines(cur.parts[0], text, self.ctx.vocabulary)
        cur.boxes.append(row.box)
        cur.last = row

    def add_code(self, row: Row, gap: float) -> None:
        """A line of code: kept as it is, in a fenced block; pieces of the line set apart (a listing's
        columns) a space for each character's width between them, so its columns stay lined up."""
        pieces = sorted(row.items, key=lambda i: i.box[0])
        widths = [(i.box[2] - i.box[0]) / len(i.text) for i in pieces if len(i.text) >= 2]
        char = statistics.median(widths) if widths else row.size * 0.6
        text = pieces[0].text
        for a, b in itertools.pairwise(pieces):
            text += " " * max(1, round((b.box[0] - a.box[2]) / char)) + b.text
        cur = self.cur
        if cur is not None and cur.kind == "code" and gap <= CODE_GAP_LINES * row.size:
            cur.parts.append(text)
            cur.boxes.append(row.box)
            cur.last = row
            return
        self.flush()
        self.cur = Pending("code", 0, [text], [row.box], row, row.box[0], row.size)

    def row_level(self, row: Row, text: str, big_gap: bool, list_continues: bool) -> int:
        ctx, cur = self.ctx, self.cur
        if list_continues:
            return 0
        if id(row) in ctx.code_titles and ctx.style is not None:
            return code_title_level(row, ctx.style, ctx.config)
        short_line = row.box[2] - row.box[0] < 0.7 * ctx.width
        centre = (row.box[0] + row.box[2]) / 2 - (ctx.left + ctx.width / 2)
        aligned = row.box[0] - ctx.left <= 2 * row.size or abs(centre) <= 1.5 * row.size
        where = RowContext(
            short_line=short_line,
            page_height=ctx.page_height,
            isolated=id(row) in ctx.isolated,
            leads_text=id(row) in ctx.panel_leads,
            aligned=aligned,
            term=id(row) in ctx.terms,
            leads=id(row) in ctx.leads,
            colored=id(row) in ctx.colored,
            far_right=ctx.far_right(row),
            tag=ctx.tag(row),
            centred=row.box[0] - ctx.left > 2 * row.size and abs(centre) <= 1.5 * row.size,
        )
        level = heading_level(row, ctx.heading_body or ctx.body, ctx.config, ctx.style, where)
        if not level and not big_gap and _title_rest(row, text, cur, ctx):
            return cur.level  # type: ignore[union-attr]
        if level and ctx.style is not None and cur is None and lowercase_start(text):
            # First in its column on a plain lower-case word: the next line of a title or caption whose
            # first line was read apart (a running head). Further down, a function's name may head
            # its entry in a manual ("foo parse tree", its underscores drawn as rules).
            return 0
        if not level or cur is None or cur.last is None or big_gap:
            return level
        # A pull quote's next lines, in its size, go on with it until its quotation mark closes.
        if cur.kind == "text" and open_quotation(cur.parts[0]) and size_close(row.size, cur.last.size):
            return 0
        if ctx.style is None:
            return level
        # The next lines of a caption in the caption's size go on with it ("Scheme 1. Strategies for
        # ..." / "Olefination of Ketones"), however much they look like a title: in its weight, or in
        # another (a plain "Figure SA3." before a bold title) after a line that ended no sentence.
        if (
            cur.kind == "text"
            and CAPTION.match(cur.parts[0].strip())
            and (
                row.weight == cur.last.weight
                or not (cur.parts[-1].rstrip().endswith((".", "!", "?")) or NUMBERED_HEADING.match(text))
            )
            and size_close(row.size, cur.last.size)
        ):
            return 0
        # The second line of a row of cells (a wrapped column header) is not a heading either.
        after_cells = abs(row.size - cur.last.size) <= 0.1 * cur.last.size and cells_apart(
            cur.last, ctx.config.min_cell_gap_ratio * ctx.style.body_size
        )
        # A lighter, smaller line set right under a heading is its subtitle or byline ("Expert help
        # to achieve ...", the authors under a title): text, not a heading of its own.
        subtitle = (
            cur.kind == "heading"
            and row.weight < cur.last.weight
            and row.size < 0.9 * cur.last.size
            and outline_level(ctx.style.outline, text) is None
        )
        return 0 if after_cells or subtitle else level

    def add_heading(self, row: Row, text: str, level: int, gap: float, big_gap: bool) -> None:
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
            # A heading set in code is a line of its own (its wrapped lines are ``code_tails``): rustdoc
            # stacks impl headings with no text between them, each as wide as it is (round 36).
            fresh = (
                bool(SECTION_NUMBER.match(text) or NUMBERED_HEADING.match(text))
                or id(row) in self.ctx.code_titles
            )
            # A title hyphenated at its line's end goes on, whatever the space its leading leaves.
            broken = cur.parts[0].endswith("-") and size_close(row.size, cur.last.size) and gap <= row.size
            # Two headings one under the other ("Description" over "Details", an empty section): more
            # space between them than a title's leading, and the line above ended short of the word.
            stacked = gap > TITLE_LEADING * row.size and word_fits_above(
                cur.last, row, self.ctx.left + self.ctx.width
            )
            continues = (
                same_weight
                and same_face
                and not fresh
                and not stacked
                and (not big_gap or broken)
                and (cur.level == level or near or broken)
            )
        if continues and cur is not None and cur.kind in ("heading", "text"):
            self._extend(row, text)
            # A bold paragraph runs long at the body's size; a title set larger may take two lines.
            style, config = self.ctx.style, self.ctx.config
            larger = style is not None and cur.size >= config.styled_heading_ratio * style.body_size
            too_long = len(cur.parts[0]) > config.max_merged_heading_chars * (LONGER_TITLE if larger else 1)
            if cur.kind == "heading" and self.ctx.style is not None and too_long:
                cur.kind = "text"  # a bold paragraph, not a heading (still joined as one)
            return
        if cur is not None and kicker(cur, row, text, level, gap):
            cur.kind = "text"
        self.flush()
        self.cur = Pending("heading", level, [text], [row.box], row, row.box[0], row.size)

    def add_list_item(self, row: Row, marker: tuple[str, str], gap: float) -> None:
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
            cur = self.cur = Pending("list", 0, [item], [row.box], row, row.box[0], row.size, [x])
        cur.last = row
        # Continuation lines start where the item's text starts (roughly), right of the marker.
        cur.left = row.box[0] + 0.5 * row.size

    def add_text(self, row: Row, text: str, big_gap: bool) -> None:
        cur, ctx = self.cur, self.ctx
        if cur is not None and cur.kind == "heading" and self._wraps_on(row, big_gap):
            # A bold paragraph's first line, taken for a heading: its line wrapped onto this one
            # ("… its generics arguments must" / "strictly outlive it."). One paragraph, no heading.
            self._extend(row, text)
            cur.kind = "text"
            return
        # A line at a list item's text goes on with the item when the item's last line wrapped; after
        # one broken on purpose ("ANY DEFINED BY.") it starts a paragraph set in by a first-line indent.
        if (
            cur
            and cur.kind == "list"
            and not big_gap
            and row.box[0] >= cur.left - 0.25 * row.size
            and not (
                cur.last is not None
                and _ends_sentence(cur.parts[-1])
                and word_fits_above(cur.last, row, ctx.left + ctx.width)
            )
        ):
            cur.parts[-1] = join_lines(cur.parts[-1], text, ctx.vocabulary)
            cur.boxes[-1] = union_box([cur.boxes[-1], row.box])
            cur.last = row
            return
        hang = ctx.hang_x if row.box[1] >= ctx.hang_top - 0.5 * row.size else None
        # In a section set with hanging indents, a line at the indent continues the entry above
        # whatever that entry's first line ended with; a line back at the left edge after one that did
        # not wrap ("… Press." / "Chen, L., …") starts the next entry, as does one after an entry of
        # one line that ends a sentence.
        at_hang = hang is not None and not big_gap and abs(row.box[0] - hang) <= 0.5 * row.size
        next_flush = (
            hang is not None
            and cur is not None
            and cur.kind == "text"
            and cur.last is not None
            and cur.last.box[0] - ctx.left < 0.5 * row.size
            and row.box[0] - ctx.left < 0.5 * row.size
            and (one_line_entry(cur) or word_fits_above(cur.last, row, ctx.left + ctx.width))
        )
        indented = (
            not at_hang
            and cur is not None
            and cur.kind == "text"
            and row.box[0] - ctx.left >= ctx.config.indent_ratio * row.size
            and cur.last is not None
            and cur.last.box[0] - ctx.left < 0.5 * row.size
            and not hanging(cur, ctx.left + ctx.width, row.size)
            and not hangs_under_label(cur, row, big_gap)
        )
        # Back at the left edge after a hanging indent's continuation lines: the next entry. In a
        # section set with hanging indents, an entry may start at the indent too (its first line
        # ended the column before: the section's first line).
        outdented = (
            cur is not None
            and cur.kind == "text"
            and cur.last is not None
            and cur.last.box[0] - ctx.left >= ctx.config.indent_ratio * row.size
            and (
                cur.left - ctx.left < 0.5 * row.size
                or (hang is not None and abs(cur.left - hang) <= 0.5 * row.size)
            )
            and row.box[0] - ctx.left < 0.5 * row.size
            and not hanging(cur, ctx.left + ctx.width, row.size)
        ) or self._set_in_ends(row)
        # A caption set in another weight than the paragraph above starts a block of its own.
        caption = (
            cur is not None and cur.last is not None and cur.last.weight != row.weight and CAPTION.match(text)
        )
        if (
            cur
            and cur.kind == "text"
            and not big_gap
            and not indented
            and not outdented
            and not next_flush
            and not caption
            and not next_entry(cur, row)
            and not next_numbered(cur, row)
            and not next_keyed(cur, row, ctx.left + ctx.width)
            and not self._broke_after_sentence(row)
            and size_close(cur.size, row.size)
            and not _size_step(cur.last, row)
        ):
            self._extend(row, text)
            return
        self.flush()
        self.cur = Pending("text", 0, [text], [row.box], row, row.box[0], row.size, text_x=label_text_x(row))

    def _broke_after_sentence(self, row: Row) -> bool:
        """Whether ``row`` starts a paragraph of its own though it stands no farther below the open one
        than its lines stand apart. Either the open paragraph's last line ended a sentence where
        ``row``'s first word (not a lower-case one: OCR reads a comma as a full stop) would have fitted
        after it, inside the column's widest line, so the line was broken on purpose ("… day of April,
        2014." / "G.S.R 256(E) …"); or ``row`` opens on an enumerator in brackets at the paragraph's left
        edge, the next one after the paragraph's own ("(1)" / "(2)") or one after a clause's end ("…
        trust;" / "(xii) any amount …"), as statutes and contracts set their clauses."""
        cur, ctx = self.cur, self.ctx
        if cur is None or cur.kind != "text" or cur.last is None or not cur.parts:
            return False
        text, first = cur.parts[0].rstrip(), row.text.lstrip()
        if not text or not first or first[0].islower():
            return False
        label = CAPTION.match(text)
        if label is not None and not text[label.end() :].strip():
            return False  # "Table 1." over its title: one caption
        # An em to spare: a browser's column may end short of its widest line (a list item's margin).
        if _ends_sentence(text) and word_fits_above(cur.last, row, ctx.column_right(cur, row) - row.size):
            return True
        below = _ENUMERATOR.match(first)
        if below is None or abs(row.box[0] - cur.left) > 0.5 * row.size:
            return False
        above = _ENUMERATOR.match(text)
        if above is not None and _enumerates_next(above.group(1), below.group(1)):
            return True  # "(1) … Rules, 2014" / "(2) They shall …", whatever OCR left of the stop
        return text.endswith(CLAUSE_ENDS) and (above is not None or text.endswith(":"))

    def _set_in_ends(self, row: Row) -> bool:
        """Whether ``row``, back at the column's left edge, follows a paragraph set in as a whole (a
        definition under its term, a note set in from the text): it had two lines or more at the indent,
        or one that ends a sentence where the first word of ``row`` would have fitted. Only a first-line
        indent runs on at the left edge, and only from a first line that wrapped ("E formatting." /
        "UpperHex": the next term, not the note's next line)."""
        cur, ctx = self.cur, self.ctx
        indent = ctx.config.indent_ratio * row.size
        return (
            cur is not None
            and cur.kind == "text"
            and cur.last is not None
            and cur.left - ctx.left >= indent
            and cur.last.box[0] - ctx.left >= indent
            and row.box[0] - ctx.left < 0.5 * row.size
            and (
                len(cur.boxes) >= 2
                or (_ends_sentence(cur.parts[0]) and word_fits_above(cur.last, row, ctx.left + ctx.width))
            )
        )

    def _wraps_on(self, row: Row, big_gap: bool) -> bool:
        """Whether ``row``, no heading, is the next line of the open heading's text: the same type
        (weight, typeface, size), at its left edge, close under it, and the heading's line wrapped
        (``row``'s first word would not have fitted at its end). Why: a heading's line ends where the
        heading does; a line filled to the edge that runs on into a sentence's end is prose."""
        cur, ctx = self.cur, self.ctx
        last = cur.last if cur is not None else None
        return (
            cur is not None
            and last is not None
            and not big_gap
            and row.weight == last.weight
            and {i.font for i in row.items} == {i.font for i in last.items}
            and size_close(last.size, row.size)
            and abs(row.box[0] - last.box[0]) < 0.5 * row.size
            and not word_fits_above(last, row, ctx.left + ctx.width)
        )

    def ended_short(self, gap: float) -> bool:
        """Whether the open paragraph ended a sentence well short of the column's right edge, with a
        little more space under it than between its lines: the end of a paragraph in a document that
        sets its paragraphs apart by a small skip (texinfo's 0.4 em between a function's argument
        notes), too small for a blank line. In ragged-right text lines end short within a paragraph
        too, but they are set at one spacing."""
        cur, ctx = self.cur, self.ctx
        if cur is None or cur.kind != "text" or cur.last is None or not cur.parts:
            return False
        size = cur.last.size
        return (
            _ends_sentence(cur.parts[-1])
            and cur.last.box[2] <= ctx.left + ctx.width - SHORT_LINE * size
            and gap >= ctx.typical_gap + PARSKIP * size
        )

    def add_row(self, row: Row) -> None:
        text = row.text.strip()
        if not text:
            return
        note = star_note(text)  # "* p < 0.05" under a table: a note of its own, its asterisks escaped
        text = note or text
        cur, ctx = self.cur, self.ctx
        gap = row.box[1] - cur.last.box[3] if cur and cur.last else 0.0
        in_code = cur is not None and cur.kind == "code"
        if id(row) in ctx.code_tails and cur is not None and cur.kind == "heading":
            self._extend(row, text)  # a signature's next line, or its where-clause
            return
        if id(row) in ctx.listings and (in_code or not URL_LINE.match(text)):
            self.add_code(row, gap)
            return
        big_gap = cur is not None and gap > ctx.typical_gap + ctx.config.paragraph_gap_ratio * min(
            row.size, cur.size or row.size
        )
        marker = list_marker(text)
        # A marker-like start on a wrapped line ("B. Jones", "12. The") continues the open block.
        wrapped = marker is not None and wrapped_marker(cur, row, ctx.left + ctx.width, big_gap)
        list_continues = (
            cur is not None
            and cur.kind == "list"
            and not big_gap
            and row.box[0] >= cur.left - 0.25 * row.size
            and row.size <= 1.1 * cur.size
            and (marker is None or wrapped)
        )
        level = self.row_level(row, text, big_gap, list_continues)
        if level:
            self.add_heading(row, text, level, gap, big_gap)
        elif id(row) in ctx.terms:
            self.flush()  # a glossary's term: a line of its own, above its definition
            self.add_text(row, text, big_gap)
            self.flush()
        elif dash_continues(cur, text, big_gap) or wrapped:
            self.add_text(row, text, big_gap)
        elif marker:
            self.add_list_item(row, marker, gap)
        elif note:
            self.flush()
            self.add_text(row, text, big_gap)
        else:
            self.add_text(row, text, big_gap or self.ended_short(gap))


def group_section(
    section: list[Item],
    body: float,
    config: LayoutConfig,
    style: DocStyle | None = None,
    vocabulary: frozenset[str] = frozenset(),
    page_height: float = 0.0,
    panel: frozenset[int] = frozenset(),
) -> list[Block]:
    """One single-column section (its lines and tables) → blocks in reading order."""
    return _group(section, body, config, style, vocabulary, page_height, panel).blocks


def _group(
    section: list[Item],
    body: float,
    config: LayoutConfig,
    style: DocStyle | None = None,
    vocabulary: frozenset[str] = frozenset(),
    page_height: float = 0.0,
    panel: frozenset[int] = frozenset(),
    frame: tuple[float, float] | None = None,
    heading_body: float = 0.0,
) -> _SectionBlocks:
    """``frame``: the left and right edges of the page's text (default: the section's own);
    ``heading_body``: what headings are measured against, where not ``body`` (``prepare``)."""
    units, typical_gap, isolated, heads_of_panels, terms = _section_units(section, body, config, style, panel)
    left = min((u.box[0] for u in units), default=0.0)
    width = max((u.box[2] for u in units), default=0.0) - left
    rows = [u for u in units if isinstance(u, Row)]
    listings = listing_rows(rows)
    titles: set[int] = set()
    code_tails: set[int] = set()
    if style is not None:
        titles = code_titles(rows, listings, config.styled_heading_ratio * style.body_size)
        wrapped, code_tails = wrapped_code_titles(rows, listings)
        titles |= wrapped
    # Bold code over a definition set in from it is an option list's term (Expat's "XML_DTD" over
    # "Include support for …"), not a heading set in code: a line of text of its own, as terms are.
    code_terms = titles & indented_terms(units, config) if titles else set()
    titles -= code_terms
    hang = hanging_indent(rows, left, left + width, config.indent_ratio)
    ctx = _SectionContext(
        body,
        config,
        style,
        vocabulary,
        page_height,
        typical_gap,
        isolated=isolated,
        panel_leads=heads_of_panels,
        terms=terms,
        leads=leading_rows(units, width) if style is not None else set(),
        left=left,
        width=width,
        spans=[(r.box[0], r.box[2]) for r in rows],
        hang_x=hang[0] if hang else None,
        hang_top=hang[1] if hang else 0.0,
        colored=colored_rows(units, style, typical_gap) if style is not None else set(),
        listings=listings - titles - code_terms - code_tails,
        code_titles=titles,
        code_tails=code_tails,
        frame=frame or (left, left + width),
        tags=len(units) <= MAX_TAGS and all(isinstance(u, Row) and len(u.text.split()) <= 3 for u in units),
        heading_body=heading_body,
    )
    grouper = _SectionBlocks(ctx)
    for unit in units:
        if isinstance(unit, Table):
            grouper.add_table(unit)
        else:
            grouper.add_row(unit)
    grouper.flush()
    return grouper
