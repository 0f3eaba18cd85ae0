"""A document's heading styles and their levels: sizes, weights, faces and colours over the body's,
the bookmarks, the contents list, the cover's title.

Why: one page cannot say whether its 13 pt bold line is a section heading or the body of a cover page,
and heading levels must be the same on every page, so the tiers are read from a sample of the whole
document; ``docprofile.build_profile`` puts them in the profile every page is read with.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ocr_app.structure.lines import ANY_WEIGHT, DocStyle, TextLine, color_heading_like
from ocr_app.structure.numbering import TitleLine, normal_title, outline_level
from ocr_app.structure.page_furniture import edge_of

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

MAX_HEADINGS_PER_PAGE = 4  # a heading style's lines per page, on average, at most
MIN_HEADING_RATIO = 1.12  # sizes at least this much larger than the body are heading sizes
TITLE_RATIO = 1.9  # a heading this much larger than the body is a title ("#"); else levels start at "##"


SHORT_SHARE = 0.7  # a line this much narrower than the page's widest line of body text stands alone


def title_lines(pages: list[tuple[float, list[TextLine]]], body: float) -> Iterator[TitleLine]:
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


def heading_candidates(pages: list[tuple[float, list[TextLine]]], style: DocStyle):
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


def find_heading_styles(
    pages: list[tuple[float, list[TextLine]]], style: DocStyle
) -> tuple[tuple[float, int, str], ...]:
    """(size, weight, font) of the document's heading styles, in which a line ending in a colon
    ("Requirements:") is a heading too: styles that the style rules mark as headings
    (``heading_candidates``), set on lines ending in no punctuation, on at least two pages and
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


def find_color_styles(
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


def read_outline(doc: pymupdf.Document) -> dict[str, int]:
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


def distinct_sizes(
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


def first_level_of(
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


def with_cover_title(
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


def outline_tiers(
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
