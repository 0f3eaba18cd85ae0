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
    page.vocabulary = frozenset(vocabulary_of([ln.text for ln in clean]))
    page.rtl = is_rtl(" ".join(ln.text for ln in clean))
    style = page.style
    if style is None:
        return
    page.vocabulary |= style.vocabulary
    cover = cover_style(clean, style)
    if cover.cover_min_size:
        page.style = cover
    elif sum(len(ln.text) for ln in clean) >= 200 and not 0.88 <= page.body / style.body_size <= 1.12:
        # This page's body text is set in another size than the document's (a sidebar in small
        # print, a sampler of sizes): the document's heading scale, relative to this page's body.
        k = page.body / style.body_size
        page.style = replace(
            style, body_size=page.body, heading_sizes=tuple(h * k for h in style.heading_sizes)
        )


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
