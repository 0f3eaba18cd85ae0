"""A document's page furniture: running headers and footers, page numbers, and the margin rows of a
page that belong to none of its text.

Why: a running header is only recognisable as such across pages (the same text, or the same text with
another number, near the same edge of ``MIN_REPEATS`` pages or more), and a page of its own (a one-page
document, a cover) says it by where and how its outermost row is set. Left in, such lines become
headings and split paragraphs; ``docprofile.build_profile`` finds them once for the whole document.
"""

from __future__ import annotations

import collections
import re
import statistics
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ocr_app.structure.lines import EDGE_BAND, Rule, TextLine, light_grey
from ocr_app.structure.regions import overlap

if TYPE_CHECKING:
    pass

EDGE = EDGE_BAND  # top / bottom fraction of the page where running headers and footers live
MIN_REPEATS = 3  # pages a running line must appear on
SLOT_TOLERANCE = 0.006  # of the page height (5 pt on A4): a line this near a running header's place
SLOT_SIZE_TOLERANCE = 0.06  # and its size within 6 % of the header's stands where the headers stand
# A place near an edge that holds a line on ≥ MIN_REPEATS pages, in one size, whose texts repeat from
# page to page (at most this share of them distinct: a book's running head names its chapter or
# section for several pages) is a running header or footer whatever its text. A slide deck's titles
# stand in one place too, but each slide has its own.
MAX_DISTINCT_SHARE = 0.67
MAX_RUNNING_RATIO = 1.3
_ROMAN = re.compile(r"^[ivxlcdm]+$")


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


def is_thinned(text: str, key: str) -> bool:
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
OCR_SIZE_SPREAD = 1.1  # × the body: no larger than the text, on a scan's measure


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


HEADER_GAP_LINES = 2.0  # a running line stands at least two body lines clear of the text
SMALL_RUNNING_RATIO = 0.9  # a margin row this much smaller than the body, ruled off, is furniture


def margin_rows(
    lines: list[TextLine], height: float, rules: Sequence[Rule] = (), alone: bool = True, ocr: bool = False
) -> set[int]:
    """ids of the lines of a page's outermost row at the top or bottom edge that reads as a running head
    or foot by its shape alone, on a page of its own: nothing to compare across pages, so the row's
    shape says it (``_numbered_margin_row``, ``_set_apart_margin_row``). ``rules``: the page's
    horizontal rules, in the lines' pixels. ``alone``: the page is its document's only one. ``ocr``:
    the lines are OCR's, which reads a page number and the title beside it as one line."""
    sizes: collections.Counter[float] = collections.Counter()
    for ln in lines:
        sizes[round(ln.size * 2) / 2] += len(ln.text)
    body = weighted_mode(sizes)
    out: set[int] = set()
    for edge in ("top", "bottom"):
        row, gap = outer_row(lines, height, edge)
        if not 1 <= len(row) <= MAX_MARGIN_PIECES:
            continue
        if (
            _numbered_margin_row(row, gap, body, ocr)
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


def _numbered_margin_row(row: list[TextLine], gap: float, body: float, ocr: bool = False) -> bool:
    """An article's page 9 alone, a spread's footer: two to ``MAX_MARGIN_PIECES`` pieces, a bare page
    number at one end, the others short texts, none larger than the page's body, set apart from the
    text by at least a line's height. The page number at the row's end says it. ``ocr``: sizes measured
    on a scan, which spread by ±5 % ("Annex" at 1.06 × the body in a scanned spread's footer, "208 |
    Global Study on Legal Aid | Annex | 209")."""
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
        and size <= (OCR_SIZE_SPREAD if ocr else 1.03) * body
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


def find_running_slots(
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


def weighted_mode(values: collections.Counter) -> float:
    return values.most_common(1)[0][0] if values else 0.0


def running_lines(
    seen: dict[tuple[str, str], set[int]],
    placed: dict[tuple[str, str], list[tuple[float, float]]],
    inside: collections.Counter[str],
    sampled: int,
    read: int,
    apart: Collection[tuple[str, str]] = (),
) -> set[tuple[str, str]]:
    """The (edge, text) keys of running headers and footers: at the same edge on MIN_REPEATS pages of
    the sample, or on two pages in the same place and size where the document has only two, or, in a
    longer one, where the line stands as a running header does (``apart``, see ``heads_apart``): a
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


def heads_apart(pages: list[tuple[float, list[TextLine]]], body: float) -> set[tuple[str, str]]:
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
