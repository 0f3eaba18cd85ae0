"""Page facts the other passes use: the clean lines, the body size, the vocabulary, the direction,
and the document style as it applies to this page (a cover page, a page in another body size)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ocr_app.structure.lines import DocStyle, TextLine, body_size, is_rtl
from ocr_app.structure.paragraphs import vocabulary_of

if TYPE_CHECKING:
    from ocr_app.structure.page import PageLayout

logger = logging.getLogger(__name__)


def run(page: PageLayout) -> None:
    page.lines = [ln for ln in page.lines if ln.text.strip()]
    clean = page.lines
    if not clean and not page.given_tables and not page.given_forms:
        page.done = True
        return
    page.body = body_size(clean) if clean else 1.0
    page.lines = clean = join_drop_caps(clean, page.body)
    page.vocabulary = frozenset(vocabulary_of([ln.text for ln in clean]))
    page.rtl = is_rtl(" ".join(ln.text for ln in clean))
    style = page.style
    if style is None:
        small_print = page.body < SMALL_PRINT * page.document_body
        if page.document_body and (
            (small_print and _holds_body_text(clean, page.document_body))
            or not _holds_body_text(clean, page.body)
        ):
            # A scanned page mostly in small print (a paper's references under the end of its
            # conclusion): its paragraphs in the document's body size are no headings against it.
            # Or one with next to no text outside its tables and figures (a slide's title over a
            # table, with its footer or two labels): what little there is is no body, and the title
            # measured 3× the footer, or 1.2× the labels.
            page.heading_body = page.document_body
        return
    page.vocabulary |= style.vocabulary
    # A page holding a table is no cover, however little running text it has beside the table.
    cover = style if page.given_tables else cover_style(clean, style)
    if cover.cover_min_size:
        page.style = cover
    elif (
        sum(len(ln.text) for ln in clean) >= 200
        and not 0.88 <= _prose_body(clean, page.body, style.body_size) / style.body_size <= 1.12
        and not _holds_body_text(clean, style.body_size)
        and not _bold_at(clean, page.body)
    ):
        # This page's body text is set in another size than the document's (a sidebar in small
        # print, a sampler of sizes): the document's heading scale, relative to this page's body.
        k = page.body / style.body_size
        page.style = replace(
            style, body_size=page.body, heading_sizes=tuple(h * k for h in style.heading_sizes), print_scale=k
        )


def _prose_body(lines: Sequence[TextLine], body: float, style_body: float) -> float:
    """The page's body size, or its prose's (lines not in a monospaced face) when that is the
    document's: a page of a language guide holding more code than prose, its listings a size smaller,
    keeps the document's heading scale; scaled to the listings, its prose came out as headings (Rust's
    book, printed by Chromium)."""
    prose = [ln for ln in lines if not ln.mono]
    if prose and len(prose) < len(lines) and 0.88 <= (size := body_size(prose)) / style_body <= 1.12:
        return size
    return body


SMALL_PRINT = 0.88  # a page's body this much smaller than the document's is small print
BODY_TEXT_CHARS = 200  # a page holding this much text in the document's body size ...
BODY_TEXT_SHARE = 0.2  # ... and this share of its text keeps the document's scale


def _bold_at(lines: Sequence[TextLine], size: float) -> bool:
    """Whether most of the text set in ``size`` is bold: the page's most common size is then its
    headings', not a body in other print. A page of framed tables holds little else outside them than
    the section titles over each (a reference manual's "Class Direction" over its table of methods);
    scaled to those, the titles read as body text and came out four levels deep (issue 30, round 24)."""
    at = [ln for ln in lines if abs(ln.size - size) <= 0.06 * size]
    bold = sum(len(ln.text) for ln in at if ln.bold or ln.weight >= 600)
    return 2 * bold > sum(len(ln.text) for ln in at)


def _holds_body_text(lines: Sequence[TextLine], body: float) -> bool:
    """Whether the page still sets much of its text in the document's body size: a paper's last page,
    mostly references in small print under the end of its conclusion, whose paragraphs must not turn
    into headings against the small print (issue 30, round 10)."""
    total = sum(len(ln.text) for ln in lines)
    held = sum(len(ln.text) for ln in lines if abs(ln.size - body) <= 0.06 * body)
    return held >= BODY_TEXT_CHARS and held >= BODY_TEXT_SHARE * total


def cover_style(lines: Sequence[TextLine], style: DocStyle) -> DocStyle:
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


DROP_CAP_SIZE = 2.0  # × the body: a single capital this large beside the text starts its paragraph
DROP_CAP_LINES = 2  # it stands beside at least this many lines of the paragraph


def join_drop_caps(lines: list[TextLine], body: float) -> list[TextLine]:
    """A drop cap (one capital letter set over two or more body lines, the text wrapped around it)
    joined to the first word of the line level with its top; the lines beside it start where it does.

    Why: alone, the letter is a line of its own, larger than any heading, read where its middle falls
    ("S planned in every region…") and its paragraph starts with half a word ("mall towns cut…"); the
    lines indented beside it look like a new paragraph."""
    out = list(lines)
    for cap in lines:
        letter = cap.text.strip()
        if (
            len(letter) != 1
            or not letter.isalpha()
            or not letter.isupper()
            or cap.size < DROP_CAP_SIZE * body
        ):
            continue
        beside = sorted(
            (
                ln
                for ln in out
                if ln is not cap
                # (from its glyph's edge on: LaTeX's lettrine sets the text right at the letter's advance)
                and -0.1 * body <= ln.box[0] - cap.box[2] <= 1.5 * body
                and ln.size <= 1.15 * body  # body text wraps around a drop cap, not a heading
                and cap.box[1] - 0.5 * body <= (ln.box[1] + ln.box[3]) / 2 <= cap.box[3] + 0.5 * body
            ),
            key=lambda ln: ln.box[1],
        )
        if len(beside) < DROP_CAP_LINES or beside[0].text[:1].isspace() or not beside[0].text[:1].isalpha():
            continue
        first = beside[0]
        x0 = cap.box[0]
        words = ((x0, first.words[0][1]), *first.words[1:]) if first.words else ()
        ink = (x0, first.ink[1]) if first.ink else ()
        joined = replace(first, text=letter + first.text, box=(x0, *first.box[1:]), words=words, ink=ink)
        moved = {id(ln): replace(ln, box=(x0, *ln.box[1:])) for ln in beside[1:]}
        out = [joined if ln is first else moved.get(id(ln), ln) for ln in out if ln is not cap]
    return out
