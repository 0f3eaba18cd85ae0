"""A PDF's text layer → what is true of the whole document: body style, heading sizes, running lines.

Why a document-level pass: one page cannot say whether its 13 pt bold line is a section heading or
the body text of a cover page, and heading levels must be the same on every page. Running headers,
footers and page numbers are only recognisable as such across pages (the same text, or the same text
with another number, near the same edge of ≥ 3 pages). The text-layer engine builds one profile per
file (a sample of at most ``MAX_PAGES`` pages) and applies it to every page. The running lines are
found in ``page_furniture`` and the heading tiers in ``heading_tiers``; this module reads the sample and
puts the profile together.
"""

from __future__ import annotations

import collections
import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ocr_app.structure.heading_tiers import (
    contents_entries,
    distinct_sizes,
    find_color_styles,
    find_heading_styles,
    first_level_of,
    heading_candidates,
    outline_tiers,
    read_outline,
    title_faces,
    title_lines,
    with_cover_title,
)
from ocr_app.structure.lines import DocStyle, TextLine
from ocr_app.structure.numbering import depth_bases, numbered_titles
from ocr_app.structure.page_furniture import (
    MIN_REPEATS,
    SLOT_SIZE_TOLERANCE,
    SLOT_TOLERANCE,
    edge_of,
    find_running_slots,
    heads_apart,
    is_thinned,
    lines_under,
    running_key,
    running_lines,
    table_row_lines,
    weighted_mode,
)
from ocr_app.structure.paragraphs import vocabulary_of

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

MAX_PAGES = 120  # pages sampled (evenly) for the profile; the rest of a long document uses it too
TITLE_OVER_RUNNING = 1.5  # a running line's words set this many times its usual size are a title

Extract = Callable[["pymupdf.Page", float], list[TextLine]]


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
            key = next((k for k in self.running if k[0] == edge and is_thinned(text, k[1])), key)
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
        return weighted_mode(_prose_first(self.prose, self.every, self.sentences))


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
    at_edges: list[tuple[str, float, float, str, int, float]] = []  # see find_running_slots
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
    body_weight = int(weighted_mode(weights) or 400)
    heading_sizes = with_cover_title(distinct_sizes(short_sizes, sizes.every, body), cover, body)
    outline = read_outline(doc)
    running = running_lines(seen, placed, inside, len(indices), len(pages), heads_apart(page_lines, body))
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
        first_level=first_level_of(pages, cover, heading_sizes, body),
        body_font=fonts.most_common(1)[0][0] if fonts else "",
        body_color=colors.most_common(1)[0][0] if colors else -1,
    )
    style = replace(
        style,
        depth_bases=depth_bases(heading_candidates(pages, style)),
        heading_styles=find_heading_styles(pages, style),
        color_styles=find_color_styles(page_lines, style),
        title_faces=title_faces(page_lines, style),
        numbered={} if outline else numbered_titles(title_lines(pages, body)),
        tier_levels=outline_tiers(pages, tuple(heading_sizes), outline),
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
        running_slots=find_running_slots(
            [e for e in at_edges if len(over[e[3]]) < MIN_REPEATS], len(pages), body, inside
        ),
    )
