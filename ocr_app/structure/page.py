"""``PageLayout``: the one page object the structure passes read and fill (``structure.pipeline``).

Why a module of its own: the pipeline imports the passes and every pass names this type; kept apart
from both, the passes need not import the pipeline back (no import circle).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_app.schema import Block, Box
from ocr_app.structure.lines import DocStyle, Item, LayoutConfig, Table, TextLine

logger = logging.getLogger(__name__)


@dataclass
class PageLayout:
    """Everything the passes know about one page; each pass reads some fields and fills others."""

    lines: list[TextLine]  # the page's text lines not yet claimed by a table or a figure
    page_width: float
    page_height: float = 0.0  # 0: unknown
    config: LayoutConfig = field(default_factory=LayoutConfig)
    style: DocStyle | None = None  # the whole document's style, when the engine has it
    given_tables: Sequence[tuple] = ()  # tables the engine found itself (ruled grids)
    given_forms: Sequence[tuple[Box, list[list[str]]]] = ()
    body: float = 1.0  # the page's body text size (``prepare``)
    # A scanned document's body size over its first pages, from the engine (0: none given), and the
    # size headings are measured against on this page (``prepare``; 0: the page's own body).
    document_body: float = 0.0
    heading_body: float = 0.0
    vocabulary: frozenset[str] = frozenset()  # words the page and document have unbroken
    rtl: bool = False
    panel: frozenset[int] = frozenset()  # ids of the lines of a text panel over a picture
    found: list[Table] = field(default_factory=list)  # tables and figure-label groups, as items
    sections: list[list[Item]] = field(default_factory=list)  # single-column runs in reading order
    blocks: list[Block] = field(default_factory=list)
    regions: list[tuple[str, Box]] = field(default_factory=list)  # a layout model's (label, box), if any
    # The layout model's table boxes when the engine asked it (None: not asked): tables found from word
    # positions elsewhere are text (two columns of prose, footnotes, a chart's labels), issue 30.
    table_regions: Sequence[Box] | None = None
    # Its text and reference boxes on the same page: a word grid whose columns it reads as blocks of
    # text side by side is two columns of text (a glossary, a list in two columns), issue 30.
    text_regions: Sequence[Box] = ()
    # Filled shapes with text on them and nothing else drawn (a slide's panels, a shaded sidebar):
    # each is read whole, in its place among the page's columns (``passes.columns``), issue 30.
    containers: Sequence[Box] = ()
    done: bool = False  # set by ``prepare`` on an empty page: nothing left to do

    @property
    def items(self) -> list[Item]:
        return [*self.lines, *self.found]
