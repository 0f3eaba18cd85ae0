"""One page's structure as an ordered list of small passes over one page object (issue 25).

Why passes: each job — page facts, figure labels, tables, columns and reading order, blocks (headings,
lists, code, paragraphs with line-end hyphens mended) — is a function of its own over ``PageLayout``,
so an engine can run the same pipeline (the text layer and the light engine do) and a new opinion
(a layout model's regions) plugs in between two passes with ``insert_pass`` instead of being
threaded through one long function. The order matters: figure labels are taken out before tables
are looked for, tables become single items before columns are found, and blocks are built per
column section.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ocr_app.schema import Block, Box
from ocr_app.structure.lines import DocStyle, LayoutConfig, TextLine
from ocr_app.structure.page import PageLayout
from ocr_app.structure.passes import blocks, columns, figures, prepare, tables
from ocr_app.structure.table_html import Cell

logger = logging.getLogger(__name__)


PagePass = Callable[[PageLayout], None]

# name → pass, in order
DEFAULT_PASSES: tuple[tuple[str, PagePass], ...] = (
    ("prepare", prepare.run),
    ("figures", figures.run),
    ("tables", tables.run),
    ("columns", columns.run),
    ("blocks", blocks.run),
)


def insert_pass(
    passes: Sequence[tuple[str, PagePass]], name: str, new: PagePass, *, before: str
) -> tuple[tuple[str, PagePass], ...]:
    """``passes`` with ``new`` (called ``name``) run right before the pass called ``before``."""
    names = [n for n, _ in passes]
    if before not in names:
        raise ValueError(f"no pass called {before!r} (passes: {', '.join(names)})")
    k = names.index(before)
    return (*passes[:k], (name, new), *passes[k:])


def run_passes(page: PageLayout, passes: Sequence[tuple[str, PagePass]] = DEFAULT_PASSES) -> list[Block]:
    for name, run in passes:
        if page.done:
            break
        run(page)
        logger.debug(
            "pass %s: %d lines, %d found, %d blocks", name, len(page.lines), len(page.found), len(page.blocks)
        )
    return page.blocks


def build_blocks(
    lines: Sequence[TextLine],
    *,
    page_width: float,
    config: LayoutConfig | None = None,
    tables: Sequence[tuple[Box, list[list[str]]] | tuple[Box, list[list[Cell]], int]] = (),
    style: DocStyle | None = None,
    forms: Sequence[tuple[Box, list[list[str]]]] = (),
    page_height: float = 0.0,
    passes: Sequence[tuple[str, PagePass]] = DEFAULT_PASSES,
    table_regions: Sequence[Box] | None = None,
    text_regions: Sequence[Box] = (),
    containers: Sequence[Box] = (),
    document_body: float = 0.0,
) -> list[Block]:
    """Lines of one page → Markdown-ready blocks in reading order.

    ``tables`` are tables an engine already found (box, cell rows of text or ``Cell``s with spans, and
    optionally the number of header rows); lines inside their boxes must already be removed by the
    caller. ``style`` (the whole document's body size, heading sizes, outline and vocabulary)
    replaces the page-level guesses when the engine has it. ``page_height`` (0: unknown) tells what
    lies in the margin bands, where a large bare number is no chapter number. ``table_regions``: the
    layout model's table boxes when the engine asked it; grids of words outside them are then text.
    ``text_regions``: its text boxes; a grid outside its table boxes whose columns they hold apart is text.
    ``containers``: filled shapes that hold text (a slide's panels): each is read whole, in its place.
    ``document_body``: a scanned document's body size over its first pages (the light engine), which
    headings on a page of small print are measured against.
    """
    page = PageLayout(
        lines=list(lines),
        page_width=page_width,
        page_height=page_height,
        config=config or LayoutConfig(),
        style=style,
        given_tables=tables,
        given_forms=forms,
        table_regions=table_regions,
        text_regions=text_regions,
        containers=containers,
        document_body=document_body,
    )
    return run_passes(page, passes)


def blocks_to_markdown(blocks: Sequence[Block]) -> str:
    """The page's Markdown: blocks separated by a blank line."""
    return "\n\n".join(b.text for b in blocks if b.text and b.label not in ("page_header", "page_footer"))
