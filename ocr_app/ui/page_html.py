"""One page as reading HTML: the page image with a box per block, beside its Markdown rendered per block.

Why server-side HTML: the page pane and the Markdown pane must share block ids so that hovering or
clicking one highlights and scrolls to the other (``static/viewer.js``). markdown-it's tokens carry
source line maps, so each rendered element can be tied to the block whose text produced those lines.
Everything rendered goes through nh3 (an allow-list sanitiser): the model's and the text layer's HTML
never reaches the browser unfiltered. Math (``\\( \\)``, ``\\[ \\]``, ``$ $``) becomes MathML, which
Chromium and Firefox render natively, so no script library is needed.
"""

from __future__ import annotations

import html
import logging
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ocr_app.render.markdown import (
    IMAGE_LABELS,
    MARGIN_LABELS,
    block_markdown,
    tidy_markdown,
)

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

    from ocr_app.schema import Block

logger = logging.getLogger(__name__)

FILE_ROUTE = "gradio_api/file="  # relative, so the app also works behind a proxy under a sub-path
BLANK_PAGE = "blank page"
# What the Pages tab shows before the first page arrives (instead of an empty frame).
EMPTY_VIEW = (
    '<div class="ocr-empty"><p><b>No pages yet.</b></p><p>Upload PDFs or images and press <b>Convert</b>: '
    "each page appears here as soon as it is read, its image with a box around every block beside its "
    "text.</p></div>"
)
MATHML_TAGS = frozenset(
    [
        "math",
        "mrow",
        "mi",
        "mn",
        "mo",
        "ms",
        "mtext",
        "mspace",
        "msup",
        "msub",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "mover",
        "munder",
        "munderover",
        "mtable",
        "mtr",
        "mtd",
        "mstyle",
        "mpadded",
        "mphantom",
        "menclose",
        "mmultiscripts",
        "mprescripts",
        "none",
        "semantics",
        "annotation",
    ]
)
MATHML_ATTRS = frozenset(
    [
        "display",
        "xmlns",
        "mathvariant",
        "stretchy",
        "fence",
        "separator",
        "accent",
        "accentunder",
        "columnalign",
        "rowspacing",
        "columnspacing",
        "width",
        "height",
        "depth",
        "lspace",
        "rspace",
        "notation",
        "linethickness",
        "displaystyle",
        "scriptlevel",
        "minsize",
        "maxsize",
        "movablelimits",
        "largeop",
        "symmetric",
        "form",
        "encoding",
    ]
)


def file_url(path: str | Path) -> str:
    """URL under which gradio serves a file from an allowed folder."""
    return FILE_ROUTE + quote(str(path))


# --- block ↔ Markdown lines -----------------------------------------------------------------------
def _block_markdown(block: Block) -> str:
    """The text ``render.markdown.page_markdown`` wrote for ``block`` (raw HTML escaped, tables kept;
    running headers and footers are not in the Markdown at all)."""
    if block.label in MARGIN_LABELS or not block.text.strip():
        return ""
    return tidy_markdown(block_markdown(block))


def block_line_spans(markdown: str, blocks: list[Block]) -> list[tuple[int, int] | None]:
    """For each block, the 0-based line range ``[start, end)`` of ``markdown`` that it produced.

    The page Markdown is the blocks' texts joined in order (figure links before an image block's
    caption), so each block's tidied text is searched after the previous one. A figure block without
    text owns the links between its neighbours. None when a block's text cannot be found.
    """
    spans: list[tuple[int, int] | None] = [None] * len(blocks)
    chars: list[tuple[int, int] | None] = [None] * len(blocks)
    cursor = 0
    pending: list[int] = []  # figure blocks without text, waiting for the next text to bound them

    def give_links(start: int, end: int) -> None:
        """Split [start, end) between the pending figure blocks, one figure link each box."""
        links = []
        pos = markdown.find("![", start)
        while 0 <= pos < end:
            links.append(pos)
            pos = markdown.find("![", pos + 2)
        for n, i in enumerate(pending):
            boxes_before = sum(max(1, len(blocks[j].boxes)) for j in pending[:n])
            mine = links[boxes_before : boxes_before + max(1, len(blocks[i].boxes))]
            if mine:
                stop = links[boxes_before + len(mine)] if boxes_before + len(mine) < len(links) else end
                chars[i] = (mine[0], stop)
        pending.clear()

    for i, block in enumerate(blocks):
        text = _block_markdown(block)
        if not text:
            if block.label in IMAGE_LABELS:
                pending.append(i)
            continue
        pos = markdown.find(text, cursor)
        if pos < 0:
            logger.debug("block %d (%s) not found in the page Markdown", i, block.label)
            continue
        start = cursor
        if pending:
            give_links(cursor, pos)
            start = pos
        chars[i] = (start, pos + len(text))
        cursor = pos + len(text)
    if pending:
        give_links(cursor, len(markdown))
    for i, span in enumerate(chars):
        if span is None:
            continue
        start, end = span
        while start < end and markdown[start].isspace():
            start += 1
        if start < end:
            spans[i] = (markdown.count("\n", 0, start), markdown.count("\n", 0, end - 1) + 1)
    return spans


# --- Markdown → HTML ------------------------------------------------------------------------------
def _math_html(latex: str, display: bool) -> str:
    from latex2mathml.converter import convert

    try:
        return convert(latex.strip(), display="block" if display else "inline")
    except Exception:  # latex2mathml raises plain exceptions on syntax it does not know
        logger.debug("LaTeX not converted to MathML: %r", latex[:80])
        tag = "div" if display else "span"
        return f'<{tag} class="math-source">{html.escape(latex.strip())}</{tag}>'


@lru_cache(maxsize=1)
def _markdown_it() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.texmath import texmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    texmath_plugin(md, delimiters="brackets")  # DeepSeek-OCR-2 writes \( \) and \[ \]
    dollarmath_plugin(md)

    def inline(self, tokens, idx, options, env):
        return _math_html(tokens[idx].content, display=False)

    def block(self, tokens, idx, options, env):
        return _math_html(tokens[idx].content, display=True) + "\n"

    for name in ("math_inline", "math_inline_double", "math_single", "math_inline_eq"):
        md.add_render_rule(name, inline)
    for name in ("math_block", "math_block_eqno", "math_block_label", "math_block_eq"):
        md.add_render_rule(name, block)
    return md


def _top_level_groups(tokens: list[Token]) -> list[list[Token]]:
    """Split a token stream into its top-level elements (an opening token up to its closing one)."""
    groups: list[list[Token]] = []
    depth = 0
    for token in tokens:
        if depth == 0:
            groups.append([])
        groups[-1].append(token)
        depth += token.nesting
    return groups


def _group_line(group: list[Token], previous_end: int, lines: list[str]) -> tuple[int, int]:
    """Source lines of a group; a token without a map (plugin blocks) starts after the previous one."""
    first = group[0]
    if first.map:
        return first.map[0], first.map[1]
    start = previous_end
    while start < len(lines) and not lines[start].strip():
        start += 1
    return start, start + 1


def sanitize(markup: str) -> str:
    """Allow-list sanitising (nh3 / ammonia): HTML tables, images and MathML stay; scripts, event
    handlers and ``javascript:`` links go."""
    import nh3

    tags = set(nh3.ALLOWED_TAGS) | {"div", "span", "section"} | MATHML_TAGS
    attributes: dict[str, set[str]] = {tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()}
    attributes.setdefault("*", set()).update({"class", "data-block", "title"})
    for tag in ("td", "th"):
        attributes.setdefault(tag, set()).update({"colspan", "rowspan", "align"})
    attributes.setdefault("img", set()).update({"src", "alt", "width", "height"})
    for tag in MATHML_TAGS:
        attributes.setdefault(tag, set()).update(MATHML_ATTRS)
    return nh3.clean(
        markup, tags=tags, attributes=attributes, strip_comments=True, attribute_filter=_local_sources
    )


def _local_sources(element: str, attribute: str, value: str) -> str | None:
    """Drop an ``<img>`` source outside the app (``ui/offline.py``): showing a page loads nothing remote."""
    from ocr_app.ui.offline import is_remote

    if element == "img" and attribute in ("src", "srcset") and is_remote(value):
        return None
    return value


def markdown_html(markdown: str, blocks: list[Block], figure_urls: dict[str, str] | None = None) -> str:
    """Sanitised HTML of a page's Markdown; each element sits in ``div.ocr-block[data-block=i]``.

    ``figure_urls`` maps the Markdown's figure links (``images/0_0.jpg``) to URLs the browser can load.
    """
    from ocr_app.ui.offline import is_remote

    md = _markdown_it()
    env: dict[str, Any] = {}
    tokens = md.parse(markdown, env)
    for token in tokens:
        for child in token.children or []:
            if child.type != "image":
                continue
            src = str(child.attrGet("src") or "")
            if figure_urls and src in figure_urls:
                child.attrSet("src", figure_urls[src])
            elif is_remote(src):  # a link to it instead: showing the page loads nothing remote
                alt = "".join(c.content for c in child.children or []) or child.content
                child.type, child.tag, child.nesting, child.children = "html_inline", "", 0, None
                label = html.escape(f"remote image: {alt.strip() or 'image'}")
                child.content = (
                    f'<a class="ocr-remote-image" href="{html.escape(src, quote=True)}" '
                    f'rel="noopener noreferrer nofollow" target="_blank">{label}</a>'
                )
    spans = block_line_spans(markdown, blocks)
    lines = markdown.split("\n")
    parts: list[str] = []
    open_block: int | None = None
    previous_end = 0
    for group in _top_level_groups(tokens):
        start, end = _group_line(group, previous_end, lines)
        previous_end = end
        owner = next((i for i, s in enumerate(spans) if s and s[0] <= start < s[1]), None)
        if owner != open_block:
            if open_block is not None:
                parts.append("</div>\n")
            if owner is not None:
                label = html.escape(blocks[owner].label, quote=True)
                parts.append(f'<div class="ocr-block" data-block="{owner}" title="{label}">\n')
            open_block = owner
        parts.append(md.renderer.render(group, md.options, env))
    if open_block is not None:
        parts.append("</div>\n")
    return sanitize("".join(parts))


# --- the page view --------------------------------------------------------------------------------
def _labels_svg(blocks: list[Block], width: int, height: int) -> str:
    """Each block's label, drawn over the patch the overlay image already has (``LabelPatch``), so the
    script can keep it readable at any zoom: it scales every label about its anchor by ``--ocr-label-k``.
    A second, number-only form ("3" for "3 text") is shown instead when the labels must grow so much that
    whole names would hide the page (a phone at fit width)."""
    from ocr_app.render.overlay import label_patches, text_colour

    parts = []
    for p in label_patches((width, height), blocks):
        ax, ay = p.anchor
        fill = "rgb({},{},{})".format(*p.colour)
        ink = "rgb({},{},{})".format(*text_colour(p.colour))
        number = p.text.split(" ", 1)[0]
        pad = (p.width - p.text_width) / 2
        short = p.text_width * len(number) / max(1, len(p.text)) + 2 * pad
        short_x = p.x if ax == p.x else p.x + p.width - short  # keep the corner at the anchor
        parts.append(
            f'<g class="ocr-label" data-block="{p.block}" style="transform-origin: {ax:.1f}px {ay:.1f}px">'
            f"<title>{html.escape(p.text)}</title>"
            f'<g class="ocr-label-full"><rect x="{p.x:.1f}" y="{p.y:.1f}" width="{p.width:.1f}" '
            f'height="{p.height:.1f}" fill="{fill}"/>{_label_text(p.text, p.x, p.y, p.width, p.height, p, ink)}</g>'
            f'<g class="ocr-label-num"><rect x="{short_x:.1f}" y="{p.y:.1f}" width="{short:.1f}" '
            f'height="{p.height:.1f}" fill="{fill}"/>{_label_text(number, short_x, p.y, short, p.height, p, ink)}</g>'
            "</g>"
        )
    return "".join(parts)


def _label_text(text: str, x: float, y: float, w: float, h: float, patch: Any, ink: str) -> str:
    """SVG text centred in its patch and stretched to the width the overlay's font gives it."""
    length = patch.text_width * len(text) / max(1, len(patch.text))
    return (
        f'<text x="{x + w / 2:.1f}" y="{y + h / 2:.1f}" font-size="{patch.font_size}" fill="{ink}" '
        f'text-anchor="middle" dominant-baseline="central" textLength="{max(1.0, length):.1f}" '
        f'lengthAdjust="spacingAndGlyphs">{html.escape(text)}</text>'
    )


def _boxes_svg(blocks: list[Block], width: int, height: int) -> str:
    from ocr_app.render.overlay import label_font_size

    rects = []
    for i, block in enumerate(blocks):
        label = html.escape(block.label, quote=True)
        for x1, y1, x2, y2 in block.boxes:
            rects.append(
                f'<rect class="ocr-box" data-block="{i}" x="{x1:.1f}" y="{y1:.1f}" '
                f'width="{max(1.0, x2 - x1):.1f}" height="{max(1.0, y2 - y1):.1f}"><title>{label}</title></rect>'
            )
    return (
        f'<svg class="ocr-boxes" viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
        f'data-label-size="{label_font_size((width, height))}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(rects)}{_labels_svg(blocks, width, height)}</svg>'
    )


def page_html(
    *,
    key: str,
    title: str,
    image_path: str | None,
    width: int,
    height: int,
    markdown: str,
    blocks: list[Block],
    figures: list[str],
    error: str | None = None,
    blank: bool = False,
) -> str:
    """The viewer of one page: image pane (zoom, pan, boxes) and Markdown pane, tied by block ids."""
    figure_urls = {f"images/{Path(f).name}": file_url(f) for f in figures}
    if error:
        body = f'<p class="ocr-note ocr-error">{html.escape(error)}</p>'
    elif blank or not markdown.strip():
        body = f'<p class="ocr-note ocr-blank">{BLANK_PAGE}: no text was found on this page.</p>'
    else:
        body = markdown_html(markdown, blocks, figure_urls)
    if image_path and width and height:
        image = (
            f'<div class="ocr-stage"><img class="ocr-page-image" src="{html.escape(file_url(image_path), quote=True)}" '
            f'width="{width}" height="{height}" alt="{html.escape(title, quote=True)}" draggable="false">'
            f"{_boxes_svg(blocks, width, height)}</div>"
        )
    else:
        image = (
            f'<p class="ocr-note">{"no page image" if not error else "this page could not be rendered"}</p>'
        )
    toolbar = (
        '<div class="ocr-toolbar">'
        '<button type="button" data-zoom="out" title="Zoom out">−</button>'
        '<button type="button" data-zoom="in" title="Zoom in">+</button>'
        '<button type="button" data-zoom="width" title="Fit the page width">Fit width</button>'
        '<button type="button" data-zoom="page" title="Show the whole page">Fit page</button>'
        '<span class="ocr-zoom-label">100%</span></div>'
    )
    # A landscape page gets the viewer's whole width, its text below it; a portrait one sits beside its text.
    shape = " ocr-landscape" if width > height else ""
    return (
        f'<div class="ocr-viewer{shape}" data-page="{html.escape(key, quote=True)}" '
        f'data-width="{width}" data-height="{height}">'
        f'<div class="ocr-pane ocr-image-pane">{toolbar}<div class="ocr-scroll">{image}</div></div>'
        f'<div class="ocr-pane ocr-md-pane"><div class="ocr-md">{body}</div></div></div>'
    )


@lru_cache(maxsize=1)
def assets() -> tuple[str, str]:
    """(JavaScript, CSS) of the viewer, shipped as package data in ``ocr_app/ui/static``."""
    folder = resources.files("ocr_app.ui").joinpath("static")
    return folder.joinpath("viewer.js").read_text("utf-8"), folder.joinpath("viewer.css").read_text("utf-8")
