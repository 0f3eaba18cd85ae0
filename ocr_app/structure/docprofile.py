"""A PDF's text layer → what is true of the whole document: body style, heading sizes, running lines.

Why a document-level pass: one page cannot say whether its 13 pt bold line is a section heading or
the body text of a cover page, and heading levels must be the same on every page. Running headers,
footers and page numbers are only recognisable as such across pages (the same text, or the same text
with another number, near the same edge of ≥ 3 pages). The text-layer engine builds one profile per
file (a sample of at most ``MAX_PAGES`` pages) and applies it to every page.
"""

from __future__ import annotations

import collections
import logging
import re
import statistics
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ocr_app.structure.lines import (
    ANY_WEIGHT,
    EDGE_BAND,
    DocStyle,
    TextLine,
    color_heading_like,
    light_grey,
)
from ocr_app.structure.numbering import TitleLine, depth_bases, normal_title, numbered_titles, outline_level
from ocr_app.structure.paragraphs import vocabulary_of
from ocr_app.structure.regions import overlap

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

MAX_PAGES = 120  # pages sampled (evenly) for the profile; the rest of a long document uses it too
EDGE = EDGE_BAND  # top / bottom fraction of the page where running headers and footers live
MIN_REPEATS = 3  # pages a running line must appear on
SLOT_TOLERANCE = 0.006  # of the page height (5 pt on A4): a line this near a running header's place
SLOT_SIZE_TOLERANCE = 0.06  # and its size within 6 % of the header's stands where the headers stand
TITLE_OVER_RUNNING = 1.5  # a running line's words set this many times its usual size are a title
# A place near an edge that holds a line on ≥ MIN_REPEATS pages, in one size, whose texts repeat from
# page to page (at most this share of them distinct: a book's running head names its chapter or
# section for several pages) is a running header or footer whatever its text. A slide deck's titles
# stand in one place too, but each slide has its own.
MAX_DISTINCT_SHARE = 0.67
MAX_RUNNING_RATIO = 1.3
MAX_HEADINGS_PER_PAGE = 4  # a heading style's lines per page, on average, at most
MIN_HEADING_RATIO = 1.12  # sizes at least this much larger than the body are heading sizes
TITLE_RATIO = 1.9  # a heading this much larger than the body is a title ("#"); else levels start at "##"
_ROMAN = re.compile(r"^[ivxlcdm]+$")

Extract = Callable[["pymupdf.Page", float], list[TextLine]]


def running_key(text: str) -> str:
    """The text of a possible running line with its numbers abstracted ("Page 3 of 9" → "page # of #")."""
    t = " ".join(text.lower().split())
    t = re.sub(r"\d+", "#", t)
    return " ".join("#" if _ROMAN.match(w) else w for w in t.split())


def lines_under(line: TextLine, lines: Sequence[TextLine]) -> list[TextLine]:
    """The other lines ``line`` is printed over (or under): their boxes share a third of the smaller one."""
    top, bottom = line.box[1], line.box[3]
    return [
        other
        for other in lines
        if other is not line
        and min(bottom, other.box[3]) - max(top, other.box[1]) > 0  # heights that meet: cheap, and needed
        and max(overlap(line.box, other.box), overlap(other.box, line.box)) >= 1 / 3
    ]


def over_text(line: TextLine, lines: Sequence[TextLine]) -> bool:
    """Whether ``line`` is printed over another line."""
    return bool(lines_under(line, lines))


def _thinned(text: str, key: str) -> bool:
    """Whether ``text`` is running line ``key`` with letters missing ("skip to c tent" for "skip to
    content"): printed over the text's first line, the glyphs it shares with that line are read once,
    as the text's (``engines.overprint``), and a gap is left where they were."""
    thin, full = text.replace(" ", ""), key.replace(" ", "")
    if len(text.split()) < len(key.split()) or thin == full or len(thin) < MIN_THINNED * len(full):
        return False  # (a gap is left where letters went: words are split, never joined)
    rest = iter(full)
    return thin[:1] == full[:1] and all(c in rest for c in thin)


MIN_THINNED = 0.6  # of a running line's characters, a copy missing letters keeps at least this many


def page_number_key(key: str) -> bool:
    """Whether a running key is figures and their punctuation alone ("#", "- # -", "# / #", a chapter's
    "#-#"): what a page number's line reads as, which a table's cells read as too. Three numbers are
    a version ("1.0.0 ·", which rustdoc sets beside signatures, at a page's top as often as not), no
    page number (round 36)."""
    return not key.strip(_NUMBER_PUNCTUATION) and key.count("#") <= MAX_PAGE_NUMBERS


MAX_PAGE_NUMBERS = 2  # "3 / 9", "4-12": a page number's line holds at most two numbers


_NUMBER_PUNCTUATION = "#-–—/|.·:()[] "


def edge_of(box: tuple[float, float, float, float], height: float) -> str | None:
    """``"top"`` / ``"bottom"`` when the box lies in the page's top or bottom band, else None."""
    if box[3] <= EDGE * height:
        return "top"
    if box[1] >= (1 - EDGE) * height:
        return "bottom"
    return None


# A page's number as footers print it: "9", "xii", "Page 14", "page 3 of 20", "14 / 20", "– 7 –", "p. 5".
_PAGE_NUMBER = re.compile(
    r"^(?:(?:page|p\.|seite|página|pagina)\s*)?[-–—]?\s*(?:\d{1,4}|[ivxlc]{1,6})\s*[-–—]?"
    r"(?:\s*(?:of|/|von|de|di)\s*\d{1,4})?$",
    re.I,
)
MAX_MARGIN_PIECES = 4  # a spread's footer: number, title, part, number


def outer_row(lines: list[TextLine], height: float, edge: str) -> tuple[list[TextLine], float]:
    """The page's outermost row at ``edge`` (its lines left to right; those that start in the edge band:
    a head may reach a little below it, as LNCS sets its running head 91-103 pt down a US Letter page
    whose band ends at 95 pt) and the blank between it and the next line inward (the page's height
    when nothing is there); ([], 0) when no line starts in the band."""
    top = edge == "top"
    band = [ln for ln in lines if (ln.box[1] <= EDGE * height if top else ln.box[3] >= (1 - EDGE) * height)]
    if not band:
        return [], 0.0
    outer = min(band, key=lambda ln: ln.box[1]) if top else max(band, key=lambda ln: ln.box[3])
    middle = (outer.box[1] + outer.box[3]) / 2
    row = sorted(
        (ln for ln in band if abs((ln.box[1] + ln.box[3]) / 2 - middle) <= SLOT_TOLERANCE * height),
        key=lambda ln: ln.box[0],
    )
    inner, size = (max(r.box[3] for r in row), min(r.box[1] for r in row)), max(r.size for r in row)
    gaps = [
        (o.box[1] - inner[0]) if top else (inner[1] - o.box[3]) for o in lines if all(o is not r for r in row)
    ]
    return row, min((g for g in gaps if g > -0.5 * size), default=height)


Rule = tuple[float, float, float]  # a horizontal rule drawn on the page: x0, y, x1 (page pixels)
HEADER_GAP_LINES = 2.0  # a running line stands at least two body lines clear of the text
SMALL_RUNNING_RATIO = 0.9  # a margin row this much smaller than the body, ruled off, is furniture


def margin_rows(
    lines: list[TextLine], height: float, rules: Sequence[Rule] = (), alone: bool = True
) -> set[int]:
    """ids of the lines of a page's outermost row at the top or bottom edge that reads as a running head
    or foot by its shape alone, on a page of its own: nothing to compare across pages, so the row's
    shape says it (``_numbered_margin_row``, ``_set_apart_margin_row``). ``rules``: the page's
    horizontal rules, in the lines' pixels. ``alone``: the page is its document's only one."""
    sizes: collections.Counter[float] = collections.Counter()
    for ln in lines:
        sizes[round(ln.size * 2) / 2] += len(ln.text)
    body = _weighted_mode(sizes)
    out: set[int] = set()
    for edge in ("top", "bottom"):
        row, gap = outer_row(lines, height, edge)
        if not 1 <= len(row) <= MAX_MARGIN_PIECES:
            continue
        if (
            _numbered_margin_row(row, gap, body)
            or _lone_page_number(row, gap, body)
            or _set_apart_margin_row(row, gap, body, lines, rules, edge, alone)
        ):
            out.update(id(ln) for ln in row)
    return out | _page_of_stack(lines, height)


# "Page 8 of 11": a page's number among its document's, spelled out; no text of the page reads so.
_PAGE_OF = re.compile(r"^(?:page|seite|página|pagina)\s*\d{1,4}\s*(?:of|/|von|de|di)\s*\d{1,4}$", re.I)
STACK_WORDS = 6  # a label stacked with "Page 8 of 11" ("Appendix 5") has at most this many words


def _page_of_stack(lines: list[TextLine], height: float) -> set[int]:
    """ids of "Page N of M" lines in a page's top or bottom band and of the short lines stacked with
    them (a line's height apart, overlapping in x: "Appendix 5" over "Page 8 of 11"), whatever their
    size: a form's or proposal's running head, which the page numbers of its one page cannot show by
    repeating."""
    band = [ln for ln in lines if ln.box[1] <= EDGE * height or ln.box[3] >= (1 - EDGE) * height]
    out: set[int] = set()
    for mark in (ln for ln in band if _PAGE_OF.match(ln.text.strip())):
        stack = [mark]
        for ln in sorted(band, key=lambda ln: abs(ln.box[1] - mark.box[1])):
            near = any(
                min(abs(ln.box[1] - o.box[3]), abs(o.box[1] - ln.box[3])) <= 0.5 * o.size
                and min(ln.box[2], o.box[2]) > max(ln.box[0], o.box[0])
                for o in stack
            )
            if ln not in stack and near and len(ln.text.split()) <= STACK_WORDS:
                stack.append(ln)
        out.update(id(ln) for ln in stack)
    return out


# A chapter's page ("7-45", "3.12"), as manuals number their pages.
_CHAPTER_PAGE = re.compile(r"^\d{1,2}\s?[-–.]\s?\d{1,3}$")


def _lone_page_number(row: list[TextLine], gap: float, body: float) -> bool:
    """A page number alone at the edge ("9", "7-45", "Page 3"): one piece, no larger than the body, set
    a line's height clear of the text. Why: a reader skips it, and so does the ground truth of every
    public set (docling's manual page "7-45")."""
    if len(row) != 1:
        return False
    text = row[0].text.strip()
    size = row[0].size
    return bool(_PAGE_NUMBER.match(text) or _CHAPTER_PAGE.match(text)) and size <= 1.03 * body and gap >= size


def _numbered_margin_row(row: list[TextLine], gap: float, body: float) -> bool:
    """An article's page 9 alone, a spread's footer: two to ``MAX_MARGIN_PIECES`` pieces, a bare page
    number at one end, the others short texts, none larger than the page's body, set apart from the
    text by at least a line's height. The page number at the row's end says it."""
    texts = [ln.text.strip() for ln in row]
    size = max(ln.size for ln in row)
    return bool(
        len(row) >= 2
        and (_PAGE_NUMBER.match(texts[0]) or _PAGE_NUMBER.match(texts[-1]))
        and all(
            _PAGE_NUMBER.match(t) or (sum(c.isalpha() for c in t) >= 2 and len(t.split()) <= 12)
            for t in texts
        )
        and any(not _PAGE_NUMBER.match(t) for t in texts)
        and size <= 1.03 * body
        and gap >= size
    )


def _set_apart_margin_row(
    row: list[TextLine],
    gap: float,
    body: float,
    lines: list[TextLine],
    rules: Sequence[Rule],
    edge: str,
    alone: bool = True,
) -> bool:
    """A journal's or report's name, a date, a section's name in the margin of a page of its own: a short
    row of one or two pieces (at most twelve words, not a sentence: a footnote ends in a full stop) set
    ``HEADER_GAP_LINES`` body lines clear of the text, either bold and no larger than the body (set
    plain, a page number or a contact line stays in the text: it cannot pose as a heading), or up to
    ``MAX_RUNNING_RATIO`` × the body (bold, in the headings' size) where a rule runs between it and the
    text and the page holds type as large below it: a page's own title is its largest line, and a
    heading underlined by a rule has its text right under the rule. Set in light grey (``light_grey``:
    a step back from the black text, as no heading or paragraph is set) a line's height clear of the
    text is enough, at any size up to ``MAX_RUNNING_RATIO`` × the body.

    At the foot of a page of a longer document (not ``alone``), a row larger than the body is a heading
    the page break left behind (a browser keeps no heading with its text; npm's "Using a Node version
    manager …" under a listing's frame): its feet are told across pages, and none is set larger than
    the text."""
    texts = [ln.text.strip() for ln in row]
    words = sum(len(t.split()) for t in texts)
    size = max(ln.size for ln in row)
    rest = sum(len(ln.text) for ln in lines if all(ln is not r for r in row))
    grey = all(light_grey(ln.color) for ln in row)
    if (
        rest <= sum(len(t) for t in texts)  # no text to be set apart from: the row is the page's content
        or len(row) > 2  # a name and a date or a number; more pieces are a table's header cells
        or words > 12
        or sum(c.isalpha() for t in texts for c in t) < 2
        or texts[-1].endswith(".")
        or gap < (1.0 if grey else HEADER_GAP_LINES) * body
        or size > MAX_RUNNING_RATIO * body
    ):
        return False
    if grey:
        return True
    x0, x1 = min(ln.box[0] for ln in row), max(ln.box[2] for ln in row)
    if edge == "top":
        inner = max(ln.box[3] for ln in row)
        between = (inner - 0.25 * size, inner + gap)
    else:
        inner = min(ln.box[1] for ln in row)
        between = (inner - gap, inner + 0.25 * size)
    ruled = any(
        between[0] <= y <= between[1] and min(r1, x1) - max(r0, x0) > 0.5 * (x1 - x0) for r0, y, r1 in rules
    )
    if size <= body + 0.25:
        # Plain, a page number or a contact line stays in the text; bold, it would pose as a heading.
        # Smaller than the text and ruled off from it (a journal's name and volume over a rule), it is
        # the page's furniture whatever its weight.
        bold = all((ln.weight or (700 if ln.bold else 400)) >= 600 for ln in row)
        return bold or (ruled and size <= SMALL_RUNNING_RATIO * body)
    if edge == "bottom" and not alone:
        return False
    larger_below = any(ln.size >= 0.97 * size for ln in lines if all(ln is not r for r in row))
    return ruled and larger_below


@dataclass
class DocumentProfile:
    """The style (in PDF points) and the running lines of one document."""

    style: DocStyle
    running: set[tuple[str, str]] = field(default_factory=set)  # (edge, running_key)
    pages: int = 0
    # Where the running headers stand: (middle, size), both as fractions of the page height.
    header_slots: tuple[tuple[float, float], ...] = ()
    # Places near an edge whose lines are running lines whatever their text: (edge, middle, size).
    running_slots: tuple[tuple[str, float, float], ...] = ()
    # Each running line's usual size, as a fraction of the page height.
    running_sizes: dict[tuple[str, str], float] = field(default_factory=dict)

    def style_at(self, scale: float) -> DocStyle:
        """The style in the pixels of a page rendered at ``scale`` pixels per point."""
        return replace(
            self.style,
            body_size=self.style.body_size * scale,
            heading_sizes=tuple(s * scale for s in self.style.heading_sizes),
            heading_styles=tuple((s * scale, w, f) for s, w, f in self.style.heading_styles),
            color_styles=tuple((c, s * scale) for c, s in self.style.color_styles),
        )

    def repeated(self, line: TextLine, height: float) -> str | None:
        """``"top"`` / ``"bottom"`` when ``line``'s text runs on other pages at that edge (numbers aside):
        a running line by its words, not by where it stands."""
        edge = edge_of(line.box, height)
        if edge is None:
            return None
        key = (edge, running_key(line.text))
        if key not in self.running:
            text = " ".join(line.text.lower().split())  # (not its key: a lone "c" left reads as a numeral)
            key = next((k for k in self.running if k[0] == edge and _thinned(text, k[1])), key)
        if key not in self.running:
            return None
        usual = self.running_sizes.get(key)
        # The same words set far larger are the document's title on its first page, whose running
        # header repeats it ("Shared MIME-info Database" at 25 pt over a 10 pt header).
        if usual and height > 0 and line.size / height > TITLE_OVER_RUNNING * usual:
            return None
        return edge

    def is_running(self, line: TextLine, height: float) -> str | None:
        """``"top"`` / ``"bottom"`` when ``line`` (page pixels, page ``height``) is a running line: its text
        runs on other pages at that edge, or it stands where the document's running headers stand, in
        their size (a first page's own header, e.g. the journal's citation line above the title: its
        text is on no other page, and set like the title it would join the title)."""
        edge = self.repeated(line, height)
        if edge is not None:
            return edge
        edge = edge_of(line.box, height)
        if edge is not None and height > 0:
            middle, size = (line.box[1] + line.box[3]) / 2 / height, line.size / height
            slots = [(m, z) for e, m, z in self.running_slots if e == edge]
            if edge == "top":
                slots += self.header_slots
            for slot_middle, slot_size in slots:
                near = abs(middle - slot_middle) <= SLOT_TOLERANCE
                if near and abs(size - slot_size) <= SLOT_SIZE_TOLERANCE * slot_size:
                    return edge
        return None


def _sample(count: int, limit: int = MAX_PAGES) -> list[int]:
    if count <= limit:
        return list(range(count))
    step = count / limit
    return sorted({int(k * step) for k in range(limit)})


def _running_slots(
    placed: list[tuple[str, float, float, str, int, float]],
    pages: int,
    body: float,
    inside: collections.Counter[str],
) -> tuple[tuple[str, float, float], ...]:
    """Places near an edge whose lines run from page to page although their text changes (a running
    head that names the current chapter): ``placed`` holds (edge, middle, size, running key, page,
    size in points) of every edge-band line of the sample. Lines are grouped by edge, place and size;
    a group on at least ``MIN_REPEATS`` pages whose texts repeat (``MAX_DISTINCT_SHARE``), at most two
    pieces a page (a head and its page number), set no larger than ``MAX_RUNNING_RATIO`` × the body,
    is a running place. A page's first body line stands in one place too, but its text is new on every
    page; so are a slide deck's titles, which are also larger; a long table's first row on each page
    has more pieces. Nor is a place whose lines mostly read as the body's: texts that stand between
    the bands as often as at an edge (``inside``: running keys counted there). A reference whose lists
    are set on a fixed pitch ends page after page on an item in one place ("'SHA-256'", "'RSA-PSS'"),
    and those items were cut."""
    if pages < MIN_REPEATS:
        return ()
    at_edge = collections.Counter(e[3] for e in placed)

    def body_text(key: str) -> bool:  # a text the body holds as often as the edges do
        return not page_number_key(key) and inside[key] >= at_edge[key]

    groups: list[list[tuple[str, float, float, str, int, float]]] = []
    for entry in sorted(placed, key=lambda e: (e[0], e[1])):
        edge, middle, size = entry[:3]
        for group in groups:
            first = group[0]
            if (
                first[0] == edge
                and abs(first[1] - middle) <= SLOT_TOLERANCE
                and abs(first[2] - size) <= SLOT_SIZE_TOLERANCE * first[2]
            ):
                group.append(entry)
                break
        else:
            groups.append([entry])
    slots: list[tuple[str, float, float]] = []
    for group in groups:
        texts = {(e[4], e[3]) for e in group}  # (page, key)
        on_pages = len({page for page, _ in texts})
        # Texts the body holds too repeat from page to page as the body's do, not as a running head's
        # (rustdoc's "1.0.0 ·" beside the signature that opens page after page): the place's other
        # texts must repeat as well.
        own = {(page, key) for page, key in texts if not body_text(key)}
        if (
            on_pages < MIN_REPEATS
            or len(group) > 2 * on_pages  # several pieces a page: a table's first row, not a running head
            or _mostly_new(texts)
            or _mostly_new(own)
            or statistics.median(e[5] for e in group) > MAX_RUNNING_RATIO * body
            or sum(body_text(e[3]) for e in group) > len(group) / 2
        ):
            continue
        slots.append(
            (
                group[0][0],
                round(statistics.median(e[1] for e in group), 4),
                round(statistics.median(e[2] for e in group), 5),
            )
        )
    return tuple(sorted(slots))


def _mostly_new(texts: set[tuple[int, str]]) -> bool:
    """Whether (page, running key) pairs hold too many different texts for a running line's place."""
    return len({key for _, key in texts}) > MAX_DISTINCT_SHARE * len(texts)


def _weighted_mode(values: collections.Counter) -> float:
    return values.most_common(1)[0][0] if values else 0.0


# Below this share of a document's characters, text in proportional type does not set the body size:
# a listing with a few notes, a typewritten letter.
PROSE_SHARE = 0.25


def _prose_first(
    prose: collections.Counter[float],
    every: collections.Counter[float],
    sentences: collections.Counter[float],
) -> collections.Counter[float]:
    """The sizes of the prose (lines not in a monospaced face) when it holds ``PROSE_SHARE`` of the
    characters, else of its lines of sentences where there are some (``SENTENCE_WORDS`` words or more,
    ``MIN_SENTENCE_CHARS`` in all), else of every line: code listings set no body size. A language
    reference's pages hold more code than prose, its listings a size smaller; the body taken from them
    made every line of prose "larger than the body", a heading (Rust's reference, printed by Chromium;
    a Texinfo manual's one-page example, one sentence over its listing). A source file printed under
    its name has no sentence: its listing is its body."""
    if prose.total() >= PROSE_SHARE * every.total():
        return prose
    return sentences if sentences.total() >= MIN_SENTENCE_CHARS else every


MIN_SENTENCE_CHARS = 40  # prose sentences that hold this many characters set a code-heavy page's body
SENTENCE_WORDS = 6  # a line of prose of this many words is one of a sentence's lines (no title)


def _sentence(line: TextLine) -> bool:
    return not (line.mono or line.typed) and len(line.text.split()) >= SENTENCE_WORDS


SHORT_SHARE = 0.7  # a line this much narrower than the page's widest line of body text stands alone


def _title_lines(pages: list[tuple[float, list[TextLine]]], body: float) -> Iterator[TitleLine]:
    """The sampled lines in order as ``numbering.numbered_titles`` reads them: text, style (size to
    half a point, weight, font) and whether the line is short against its page's lines of body text."""
    for _, lines in pages:
        widths = [ln.box[2] - ln.box[0] for ln in lines if abs(ln.size - body) <= 0.5]
        wide = max(widths, default=0.0)
        for ln in lines:
            style = (round(ln.size * 2) / 2, ln.weight or (700 if ln.bold else 400), ln.font)
            yield ln.text.strip(), style, ln.box[2] - ln.box[0] <= SHORT_SHARE * wide


MIN_CONTENTS_RUN = 2  # lines in a row naming larger headings: a contents list
CONTENTS_SIZE_RATIO = 1.05  # an entry is set at most this much larger than the body


def contents_entries(pages: list[tuple[float, list[TextLine]]], body: float) -> frozenset[str]:
    """The titles (``normal_title``) of the lines that list the document's headings: two or more lines
    in a row, top to bottom on a page, at body size, each the text of a line set at a heading's size
    (``MIN_HEADING_RATIO``) somewhere in the document. A chapter's contents list printed from HTML
    (DocBook's "Table of Contents" over its sections, in the headings' colour, with no page numbers or
    leaders to mark it) or a slide deck's agenda repeats the titles it lists: its lines are entries,
    not headings. A heading set at body size is listed by no larger line, and keeps its rules."""
    larger = {
        normal_title(ln.text)
        for _, lines in pages
        for ln in lines
        if ln.size >= MIN_HEADING_RATIO * body and len(ln.text) <= 120
    }
    larger.discard("")
    out: set[str] = set()
    for _, lines in pages:
        run: list[str] = []
        for ln in [*sorted(lines, key=lambda ln: (ln.box[1], ln.box[0])), None]:
            title = normal_title(ln.text) if ln is not None else ""
            if ln is not None and ln.size <= CONTENTS_SIZE_RATIO * body and title in larger:
                run.append(title)
                continue
            if len(run) >= MIN_CONTENTS_RUN:
                out.update(run)
            run = []
    return frozenset(out)


def _heading_candidates(pages: list[tuple[float, list[TextLine]]], style: DocStyle):
    """(level, text) of the sampled lines that the style marks as headings by size or weight alone
    (the levels the page rules give them), for the numbering depths of each level."""
    bold_level = min(style.level_for_size(0.0), 6)
    for _, lines in pages:
        for ln in lines:
            text = ln.text.strip()
            if len(text) > 100 or text.endswith((".", ",", ";")) or sum(c.isalpha() for c in text) < 2:
                continue
            size = max(ln.caps_size, ln.size)  # small capitals by their capitals' size
            ratio = size / style.body_size
            if ratio >= MIN_HEADING_RATIO:
                yield min(style.level_for_size(size), 6), text
            elif (ln.weight or (700 if ln.bold else 400)) >= style.body_weight + 150 and ratio >= 0.75:
                yield bold_level, text


def _heading_styles(
    pages: list[tuple[float, list[TextLine]]], style: DocStyle
) -> tuple[tuple[float, int, str], ...]:
    """(size, weight, font) of the document's heading styles, in which a line ending in a colon
    ("Requirements:") is a heading too: styles that the style rules mark as headings
    (``_heading_candidates``), set on lines ending in no punctuation, on at least two pages and
    sparsely (``MAX_HEADINGS_PER_PAGE``): a cover's list of authors in bold is no heading style, and a
    style seen on one page only cannot tell a heading from a label (a flyer's "For more information:"
    set a little larger over an address)."""
    seen: dict[tuple[float, int, str], list[int]] = collections.defaultdict(list)
    for number, (_, lines) in enumerate(pages):
        for ln in lines:
            text = ln.text.strip()
            ratio = ln.size / style.body_size
            # A title that leads into its section with a colon ("Use a Vec when:", rustdoc's seven on
            # its collections page, round 36) shows a style as well, where it is set larger than the
            # body; a bold label at the body's size ("Phone:") is a form's.
            ended = text[-1:].isalnum() or (text.endswith(":") and ratio >= MIN_HEADING_RATIO)
            if len(text) > 100 or not ended or sum(c.isalpha() for c in text) < 2:
                continue
            weight = ln.weight or (700 if ln.bold else 400)
            if ratio >= MIN_HEADING_RATIO or (weight >= style.body_weight + 150 and ratio >= 0.75):
                seen[(round(ln.size * 2) / 2, weight, ln.font)].append(number)
    return tuple(
        sorted(
            key
            for key, on in seen.items()
            if len(set(on)) >= 2 and len(on) <= MAX_HEADINGS_PER_PAGE * len(set(on))
        )
    )


def _color_styles(
    pages: list[tuple[float, list[TextLine]]], style: DocStyle
) -> tuple[tuple[int, float], ...]:
    """(colour, size) of the document's headings marked by colour: lines that could be such headings
    (``lines.color_heading_like``) between the margin bands, in one colour and size, at least twice in the
    sample and sparsely (``MAX_HEADINGS_PER_PAGE`` a page on average): a brochure's teal section titles.
    A coloured sidebar's list of short lines, or a slide's coloured bullets, come many to a page."""
    seen: dict[tuple[int, float], list[int]] = collections.defaultdict(list)
    for number, (height, lines) in enumerate(pages):
        for ln in lines:
            if edge_of(ln.box, height) is None and color_heading_like(ln.text, ln.color, ln.size, style):
                seen[(ln.color, round(ln.size * 2) / 2)].append(number)
    return tuple(
        sorted(
            key
            for key, on in seen.items()
            if len(on) >= 2 and len(on) <= MAX_HEADINGS_PER_PAGE * len(set(on))
        )
    )


def title_faces(pages: list[tuple[float, list[TextLine]]], style: DocStyle) -> frozenset[tuple[str, int]]:
    """Faces (a font family at a weight, or at ``ANY_WEIGHT``) other than the body's in which the
    document sets its titles and nothing else: every line of the face between the margin bands at body
    size or larger reads as a title (short, ending in no punctuation, not code), the face also sets a
    heading larger than the body (so it is the document's heading face, not a sidebar's or a table's),
    and its body-size lines stand on at least two pages, sparsely (``MAX_HEADINGS_PER_PAGE``). A report
    whose subsection titles differ from the text only in typeface ("Scope" in a sans among serif
    paragraphs) then keeps them. A family is read whole and at each weight apart: rustdoc sets "Examples"
    in Fira Sans Medium, like its section titles, and its version labels ("1.8.0 ·", dozens a page) in
    Fira Sans Regular, which spoil the family but not its Medium (round 33)."""
    whole = _title_faces(pages, style, lambda ln: (ln.font, ANY_WEIGHT))
    return whole | _title_faces(pages, style, lambda ln: (ln.font, ln.weight))


def _title_faces(
    pages: list[tuple[float, list[TextLine]]], style: DocStyle, face_of: Callable[[TextLine], tuple[str, int]]
) -> frozenset[tuple[str, int]]:
    larger: set[tuple[str, int]] = set()
    spoiled: set[tuple[str, int]] = set()
    at_body: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
    for number, (height, lines) in enumerate(pages):
        for ln in lines:
            ratio = ln.size / style.body_size
            if not ln.font or ln.font == style.body_font or ratio < 0.95 or edge_of(ln.box, height):
                continue
            face = face_of(ln)
            text = ln.text.strip()
            if ln.mono or len(text.split()) > MAX_FACE_TITLE_WORDS or text.endswith((".", ",", ";", ":")):
                spoiled.add(face)
            elif ratio >= MIN_HEADING_RATIO:
                larger.add(face)
            else:
                at_body[face].append(number)
    return frozenset(
        face
        for face, on in at_body.items()
        if face in larger
        and face not in spoiled
        and len(set(on)) >= 2
        and len(on) <= MAX_HEADINGS_PER_PAGE * len(set(on))
    )


MAX_FACE_TITLE_WORDS = 12  # a line of a title face longer than this is text set in it: no title face


def _outline(doc: pymupdf.Document) -> dict[str, int]:
    """The PDF's bookmarks as normalised title -> level (empty when it has none or they are broken)."""
    outline: dict[str, int] = {}
    try:
        for level, title, _page in doc.get_toc(simple=True):
            key = normal_title(str(title))
            if key:
                outline.setdefault(key, int(level))
    except Exception as exc:  # a broken outline must not cost the text
        logger.debug("outline unreadable: %s", exc)
    return outline


def _running_lines(
    seen: dict[tuple[str, str], set[int]],
    placed: dict[tuple[str, str], list[tuple[float, float]]],
    inside: collections.Counter[str],
    sampled: int,
    read: int,
    apart: Collection[tuple[str, str]] = (),
) -> set[tuple[str, str]]:
    """The (edge, text) keys of running headers and footers: at the same edge on MIN_REPEATS pages of
    the sample, or on two pages in the same place and size where the document has only two, or, in a
    longer one, where the line stands as a running header does (``apart``, see ``_heads_apart``): a
    report's header printed on alternate pages ("Issue brief" at the top of the even pages of four). A
    heading repeated at the top of two slides is larger than the body; a table's header row that runs
    on to the next page has several pieces and stands under the table's caption."""

    def body_word(key: tuple[str, str], on: set[int]) -> bool:
        """A text that stands as a line of its own between the bands at least as often as at the edge:
        a table's cell value ("Active", "North", a "✔") that a long table puts at the top of its pages
        too, not a running head. Numbers (page numbers) are exempt: tables hold numbers everywhere."""
        return not page_number_key(key[1]) and inside[key[1]] >= len(on)

    def in_place(key: tuple[str, str]) -> bool:
        return max(m for m, _ in placed[key]) - min(m for m, _ in placed[key]) <= SLOT_TOLERANCE and max(
            z for _, z in placed[key]
        ) <= (1 + SLOT_SIZE_TOLERANCE) * min(z for _, z in placed[key])

    running = set()
    if sampled >= MIN_REPEATS:
        running = {
            key for key, on in seen.items() if len(on) >= MIN_REPEATS and key[1] and not body_word(key, on)
        }
    if read < 2:
        return running
    # On two pages at the same edge, in the same place and size: a two-page document's letterhead
    # ("Quarterly report 2024" over both pages), or a small header over alternate pages.
    return running | {
        key
        for key, on in seen.items()
        if len(on) >= 2
        and key[1]
        and (read == 2 or key in apart)
        and not body_word(key, on)
        and in_place(key)
    }


MIN_ROW_PIECES = 3  # a row of this many pieces next to a row of as many: rows of a table


def table_row_lines(lines: Sequence[TextLine], height: float) -> set[int]:
    """ids of the page's edge-band lines that are cells of a table's rows: a row of ``MIN_ROW_PIECES``
    pieces or more with a row of as many next to it on the inward side, less than a line apart, or a
    row of two whose pieces stand over the next row's two, as near.

    Why: a long table's heads, printed again at the top of every page it runs onto, and its rows at
    each page's head and foot stand at the page's edges on page after page, in one place and size,
    their texts alike ("Station 038", "78"; figures look like page numbers): taken for running lines,
    the heads and the edge rows were cut from every page. A running header or footer stands clear of
    the text, and next to it is a line of text or two columns, not a row of cells."""
    out: set[int] = set()
    for ln in lines:
        edge = edge_of(ln.box, height)
        if edge is None or id(ln) in out:
            continue
        middle = (ln.box[1] + ln.box[3]) / 2
        row = [o for o in lines if abs((o.box[1] + o.box[3]) / 2 - middle) <= 0.5 * ln.size]
        if len(row) < 2:
            continue
        if edge == "top":
            inner = max(o.box[3] for o in row)
            near = [o for o in lines if inner - 0.25 * ln.size <= o.box[1] <= inner + ln.size]
            gap = min((o.box[1] for o in near), default=inner) - inner
            nxt = [o for o in near if o.box[1] <= inner + gap + 0.5 * ln.size]
        else:
            inner = min(o.box[1] for o in row)
            near = [o for o in lines if inner - ln.size <= o.box[3] <= inner + 0.25 * ln.size]
            gap = inner - max((o.box[3] for o in near), default=inner)
            nxt = [o for o in near if o.box[3] >= inner - gap - 0.5 * ln.size]
        if len(row) >= MIN_ROW_PIECES:
            cells = len(nxt) >= len(row)
        else:
            cells = len(nxt) == 2 and all(
                any(min(a.box[2], b.box[2]) > max(a.box[0], b.box[0]) for b in nxt) for a in row
            )
        if cells:
            out.update(id(o) for o in row)
    return out


def _heads_apart(pages: list[tuple[float, list[TextLine]]], body: float) -> set[tuple[str, str]]:
    """(edge, running key) of the edge-band lines that, on every sampled page they stand on, are the
    page's outermost row at their edge, alone on it but for one piece (a page number), no larger than
    the body and a line's height apart from the text: how a running header looks. A table's header
    cells repeated on the next page stand under its caption; a note's last line sits right under the
    note's other lines."""
    ok: dict[tuple[str, str], bool] = {}
    for height, lines in pages:
        rows = {edge: outer_row(lines, height, edge) for edge in ("top", "bottom")}
        for ln in lines:
            edge = edge_of(ln.box, height)
            if edge is None:
                continue
            row, gap = rows[edge]
            good = len(row) <= 2 and any(r is ln for r in row) and ln.size <= body + 0.25 and gap >= ln.size
            key = (edge, running_key(ln.text))
            ok[key] = ok.get(key, True) and good
    return {key for key, good in ok.items() if good and key[1]}


LONE_TITLE_RATIO = 1.5  # × body: a size set once, on the first page, over smaller heading sizes is a title
LONE_TITLE_LINES = 3
LONE_TITLE_OVER = 1.2  # × the largest heading size: a cover's line this much larger is its title


def _lone_title(
    pages: list[tuple[float, list[TextLine]]],
    cover: tuple[float, list[TextLine]] | None,
    heading_sizes: list[float],
    body: float,
) -> bool:
    """Whether the largest heading size is a title's: set on the first page only, on at most
    ``LONE_TITLE_LINES`` lines, over at least one smaller heading size. Why: LaTeX sets a paper's
    title at 1.7 times its body (``\\LARGE``), under ``TITLE_RATIO``: it came out at the sections'
    level ("##"), the sections one under it."""
    if cover is None or len(heading_sizes) < 2 or heading_sizes[0] < LONE_TITLE_RATIO * body:
        return False
    top = heading_sizes[0]
    at = [page for page in pages for ln in page[1] if round(ln.size * 2) / 2 == top]
    return 0 < len(at) <= LONE_TITLE_LINES and all(page is cover for page in at)


def _distinct_sizes(
    short_sizes: collections.Counter[float], sizes: collections.Counter[float], body: float
) -> list[float]:
    """The heading sizes, largest first: sizes of short lines well over the body's, not the bulk of
    the text, each at least 4 % under the one before."""
    total = sum(sizes.values()) or 1
    candidates = sorted(
        (s for s in short_sizes if s >= MIN_HEADING_RATIO * body and sizes[s] <= 0.3 * total), reverse=True
    )
    heading_sizes: list[float] = []
    for s in candidates:
        if not heading_sizes or s < 0.96 * heading_sizes[-1]:
            heading_sizes.append(s)
    return heading_sizes


def _first_level(
    pages: list[tuple[float, list[TextLine]]],
    cover: tuple[float, list[TextLine]] | None,
    heading_sizes: list[float],
    body: float,
) -> int:
    """1 when the largest heading size is a title's (``TITLE_RATIO`` of the body, or ``_lone_title``),
    else 2: the largest headings are then chapters or sections, "##"."""
    if heading_sizes and (
        heading_sizes[0] >= TITLE_RATIO * body or _lone_title(pages, cover, heading_sizes, body)
    ):
        return 1
    return 2


def _with_cover_title(
    heading_sizes: list[float], first: tuple[float, list[TextLine]] | None, body: float
) -> list[float]:
    """The heading sizes with the cover's title on top: the first page set in another size than the
    body (a cover: its own body is its title's or subtitle's size, so its sizes are not counted), its
    largest short line of title size (``TITLE_RATIO``), when the body pages hold none. Else the
    title came out at the chapters' level ("##"), its page left out of the heading sizes."""
    if first is None or (heading_sizes and heading_sizes[0] >= TITLE_RATIO * body):
        return heading_sizes
    page_body, lines = first
    if 0.88 <= (page_body or body) / body <= 1.12:
        return heading_sizes  # a first page in the body's size: already counted
    titles = [
        round(ln.size * 2) / 2
        for ln in lines
        if ln.size >= LONE_TITLE_RATIO * body
        and len(ln.text) <= 120
        and sum(c.isalpha() for c in ln.text) >= 2
    ]
    if not titles:
        return heading_sizes
    top = max(titles)
    # Under a title's size, a line stands over the sections as a lone title does (``_lone_title``):
    # a few lines in one size well over every heading size (npm's pages: a title at 1.8 times the
    # body over a contents list in small code, the page's own body).
    lone = titles.count(top) <= LONE_TITLE_LINES and (
        not heading_sizes or top >= LONE_TITLE_OVER * heading_sizes[0]
    )
    return [top, *heading_sizes] if top >= TITLE_RATIO * body or lone else heading_sizes


def _outline_tiers(
    pages: list[tuple[float, list[TextLine]]], sizes: tuple[float, ...], outline: dict[str, int]
) -> tuple[int, ...]:
    """The level of each heading size as the bookmarks set the sampled lines of that size that they
    name (the commonest); a size none of them is set in sits a level under the size above it (or one
    over the size below it, at the top). () when the bookmarks name no line of a heading size.

    Why: headings the bookmarks name take their level from them, the others from their size's rank;
    texinfo's manuals bookmark chapters and sections but not the function entries under them, which
    came out as ``#####`` under ``##`` sections (ranked under a cover title and two more sizes)."""
    if not outline or not sizes:
        return ()
    found: dict[int, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    for _, lines in pages:
        for ln in lines:
            tier = next((k for k, s in enumerate(sizes) if round(ln.size * 2) / 2 >= 0.97 * s), None)
            level = outline_level(outline, ln.text) if tier is not None else None
            if level is not None:
                found[tier][level] += 1
    if not found:
        return ()
    levels: list[int | None] = [
        found[k].most_common(1)[0][0] if k in found else None for k in range(len(sizes))
    ]
    first = min(found)
    for k in range(first - 1, -1, -1):
        levels[k] = max(1, (levels[k + 1] or 1) - 1)
    for k in range(first + 1, len(sizes)):
        above = levels[k - 1] or 1
        levels[k] = min(6, above + 1) if levels[k] is None else max(levels[k], above)
    return tuple(level or 1 for level in levels)


@dataclass
class _BodySizes:
    """Characters by type size (to half a point) of every line, of the prose (lines not in a monospaced
    face) and of its lines of sentences: what ``_prose_first`` weighs to find the body's size."""

    every: collections.Counter[float] = field(default_factory=collections.Counter)
    prose: collections.Counter[float] = field(default_factory=collections.Counter)
    sentences: collections.Counter[float] = field(default_factory=collections.Counter)

    def add(self, line: TextLine, size: float, chars: int) -> None:
        self.every[size] += chars
        if not (line.mono or line.typed):
            self.prose[size] += chars
        if _sentence(line):
            self.sentences[size] += chars

    def body(self) -> float:
        return _weighted_mode(_prose_first(self.prose, self.every, self.sentences))


def build_profile(
    doc: pymupdf.Document, extract: Extract, skip: Callable[[pymupdf.Page], bool] | None = None
) -> DocumentProfile:
    """Read a sample of the document's pages once and derive its style and running lines (``skip``:
    pages the sample leaves out, e.g. ones whose content is too heavy to read quickly)."""
    sizes = _BodySizes()
    weights: collections.Counter[int] = collections.Counter()
    colors: collections.Counter[int] = collections.Counter()
    fonts: collections.Counter[str] = collections.Counter()
    seen: dict[tuple[str, str], set[int]] = collections.defaultdict(set)
    placed: dict[tuple[str, str], list[tuple[float, float]]] = collections.defaultdict(list)
    at_edges: list[tuple[str, float, float, str, int, float]] = []  # see _running_slots
    inside: collections.Counter[str] = collections.Counter()  # running keys of the lines between the bands
    # Running keys of edge lines → the texts of the lines they are printed over, on any page.
    over: dict[str, set[str]] = collections.defaultdict(set)
    in_rows: dict[tuple[str, str], bool] = {}  # edge keys that are a table's cells on every page they are on
    texts: list[str] = []
    pages: list[tuple[float, list[TextLine]]] = []  # (page body size, lines)
    page_lines: list[tuple[float, list[TextLine]]] = []  # (page height, lines)
    indices = _sample(doc.page_count)
    cover: tuple[float, list[TextLine]] | None = None  # the first page, when read
    for index in indices:
        page = doc[index]
        if skip is not None and skip(page):
            continue  # a heavy (or hostile) page costs seconds to read; the sample does without it
        lines = extract(page, 1.0)
        height = page.rect.height
        page_sizes = _BodySizes()
        cells = table_row_lines(lines, height)  # a long table's rows at the edges
        for ln in lines:
            n = sum(1 for c in ln.text if not c.isspace())
            size = round(ln.size * 2) / 2
            sizes.add(ln, size, n)
            page_sizes.add(ln, size, n)
            texts.append(ln.text)
            edge = edge_of(ln.box, height)
            if edge is None:
                inside[running_key(ln.text)] += 1
            else:
                key = (edge, running_key(ln.text))
                over[key[1]].update(" ".join(other.text.split()) for other in lines_under(ln, lines))
                seen[key].add(index)
                placed[key].append(((ln.box[1] + ln.box[3]) / 2 / height, ln.size / height))
                in_rows[key] = in_rows.get(key, True) and id(ln) in cells
                if height > 0 and running_key(ln.text) and id(ln) not in cells:
                    middle = (ln.box[1] + ln.box[3]) / 2 / height
                    at_edges.append((edge, middle, ln.size / height, running_key(ln.text), index, ln.size))
        pages.append((page_sizes.body(), lines))
        cover = pages[-1] if index == 0 else cover
        page_lines.append((height, lines))
    body = sizes.body() or 10.0
    # Heading sizes come from the pages set in the document's body size: a page in another size
    # (small-print appendix, a sampler of sizes) would add levels that mean nothing elsewhere. A title
    # in small capitals counts at its capitals' size (``headings`` reads it so).
    short_sizes: collections.Counter[float] = collections.Counter()
    for page_body, lines in pages:
        if not 0.88 <= (page_body or body) / body <= 1.12:
            continue
        for ln in lines:
            size = round(max(ln.caps_size, ln.size) * 2) / 2
            if len(ln.text) <= 120 and sum(c.isalpha() for c in ln.text) >= 2:
                short_sizes[size] += sum(1 for c in ln.text if not c.isspace())
            if abs(ln.size - body) <= 0.5:
                weights[ln.weight or (700 if ln.bold else 400)] += len(ln.text)
                colors[ln.color] += len(ln.text)
                if ln.font:
                    fonts[ln.font] += len(ln.text)
    body_weight = int(_weighted_mode(weights) or 400)
    heading_sizes = _with_cover_title(_distinct_sizes(short_sizes, sizes.every, body), cover, body)
    outline = _outline(doc)
    running = _running_lines(seen, placed, inside, len(indices), len(pages), _heads_apart(page_lines, body))
    running -= {key for key, cells in in_rows.items() if cells}  # a long table's rows, not running lines
    slots = {
        (
            round(statistics.median(m for m, _ in placed[key]), 4),
            round(statistics.median(z for _, z in placed[key]), 5),
        )
        for key in running
        # A line printed over the text's lines, other ones page after page (a link the browser prints
        # on every page, "Skip to content"), stands in the text's place, not in one of its own.
        if key[0] == "top" and len(over[key[1]]) < MIN_REPEATS
    }
    style = DocStyle(
        body_size=body,
        body_weight=body_weight,
        heading_sizes=tuple(heading_sizes),
        outline=outline,
        vocabulary=frozenset(vocabulary_of(texts)),
        first_level=_first_level(pages, cover, heading_sizes, body),
        body_font=fonts.most_common(1)[0][0] if fonts else "",
        body_color=colors.most_common(1)[0][0] if colors else -1,
    )
    style = replace(
        style,
        depth_bases=depth_bases(_heading_candidates(pages, style)),
        heading_styles=_heading_styles(pages, style),
        color_styles=_color_styles(page_lines, style),
        title_faces=title_faces(page_lines, style),
        numbered={} if outline else numbered_titles(_title_lines(pages, body)),
        tier_levels=_outline_tiers(pages, tuple(heading_sizes), outline),
        contents=contents_entries(pages, body),
    )
    logger.debug(
        "profile: body %.1f pt weight %d, heading sizes %s, %d running lines, %d outline entries",
        body,
        body_weight,
        heading_sizes,
        len(running),
        len(outline),
    )
    return DocumentProfile(
        style=style,
        running=running,
        pages=doc.page_count,
        header_slots=tuple(sorted(slots)),
        running_sizes={key: statistics.median(z for _, z in placed[key]) for key in running if placed[key]},
        running_slots=_running_slots(
            [e for e in at_edges if len(over[e[3]]) < MIN_REPEATS], len(pages), body, inside
        ),
    )
