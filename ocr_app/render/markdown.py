"""Blocks → Markdown, the way the official DeepSeek-OCR-2 scripts do it, minus their silent losses.

Why this shape: ``Block.text`` is already Markdown (tables stay HTML, formulas stay LaTeX), so rendering
only crops figures, removes leftover tags, applies the two official LaTeX fixes and joins pages with a
stable separator that tools can split on.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.render.atomic import atomic_write_bytes
from ocr_app.schema import Block, Box, StopReason
from ocr_app.structure.table_html import SCRIPT_TAG, append_rows, continue_table, head_as_rest

if TYPE_CHECKING:
    from PIL import Image

    from ocr_app.schema import PageResult

logger = logging.getLogger(__name__)

IMAGE_LABELS = frozenset({"image", "figure"})
# Running headers, footers and page numbers: kept in the JSON, left out of the Markdown body.
MARGIN_LABELS = frozenset({"page_header", "page_footer"})
LATEX_FIXES = (("\\coloneqq", ":="), ("\\eqqcolon", "=:"))
JPEG_QUALITY = 90
# Document layout (stable; tools may split on it): every page starts with ``<!-- page N -->`` (1-based)
# and pages are separated by a horizontal rule, which is the visible part in rendered Markdown.
PAGE_MARKER = "<!-- page {number} -->"
PAGE_RULE = "\n\n---\n\n"

_TAG_RE = re.compile(r"<\|/?(?:ref|det|grounding)\|>")
# Raw HTML in CommonMark starts with "<" then a letter, "/", "!" or "?"; "a < b" is text and stays.
_HTML_START_RE = re.compile(r"<(?=[A-Za-z/!?])")
# Markup DeepSeek-OCR-2 writes (tables; <center> around captions; sub/superscripts): kept, attributes
# other than colspan/rowspan dropped. Everything else is escaped.
MODEL_TAGS = ("table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "colgroup", "col", "br")
MODEL_TAGS += ("center", "sup", "sub", "b", "i", "u", "em", "strong")
_MODEL_TAG_RE = re.compile(rf"<(/?)({'|'.join(MODEL_TAGS)})\b([^<>]*)>", re.IGNORECASE)
_SPAN_ATTR_RE = re.compile(r"""\b(colspan|rowspan)\s*=\s*["']?(\d{1,3})["']?""", re.IGNORECASE)
_MANY_NEWLINES_RE = re.compile(r"\n{3,}")
_FENCE_RE = re.compile(r"(`{3,})[\w+-]*")


def escape_raw_html(text: str, *, keep_table_tags: bool = False) -> str:
    """Make HTML in source text inert (``<script>`` → ``&lt;script>``) so the Markdown is safe anywhere.

    Why: a PDF's text layer (or a scan of a web page) can hold ``<script>`` or ``<img onerror=…>``, and
    Markdown renderers pass raw HTML through. ``keep_table_tags`` keeps the markup a model writes
    (``MODEL_TAGS``: DeepSeek-OCR-2 tables are HTML), rebuilt with only ``colspan``/``rowspan``.
    """
    if not keep_table_tags:
        return _HTML_START_RE.sub("&lt;", text)
    parts: list[str] = []
    pos = 0
    for m in _MODEL_TAG_RE.finditer(text):
        parts.append(_HTML_START_RE.sub("&lt;", text[pos : m.start()]))
        closing, name = m.group(1), m.group(2).lower()
        attrs = (
            "" if closing else "".join(f' {a.lower()}="{v}"' for a, v in _SPAN_ATTR_RE.findall(m.group(3)))
        )
        parts.append(f"<{closing}{name}{attrs}>")
        pos = m.end()
    parts.append(_HTML_START_RE.sub("&lt;", text[pos:]))
    return "".join(parts)


def fix_latex(text: str) -> str:
    """``\\coloneqq`` → ``:=`` and ``\\eqqcolon`` → ``=:`` (MathJax/KaTeX lack them without extensions)."""
    for old, new in LATEX_FIXES:
        text = text.replace(old, new)
    return text


def tidy_markdown(text: str) -> str:
    """Remove leftover grounding tags, apply LaTeX fixes, collapse 3+ newlines to 2, strip the ends."""
    return _MANY_NEWLINES_RE.sub("\n\n", fix_latex(_TAG_RE.sub("", text))).strip()


def close_open_table(text: str) -> str:
    """Close an HTML table that the model left open (token cap), so it cannot swallow the pages after it.

    Only the end is repaired: the missing ``</td>``/``</th>``, ``</tr>`` and ``</table>`` are appended.
    Why not lxml or html5lib (``bench/eval_libraries.py``, 2026-11-30): on a cut model table lxml gives
    the same bytes at ~50 µs against ~7 µs here and would make lxml a core dependency; html5lib
    (~1 ms) rewrites complete tables too (adds ``<tbody>``), changing output that was fine.
    """
    lower = text.lower()
    missing = lower.count("<table") - lower.count("</table>")
    if missing <= 0:
        return text
    tail = lower[lower.rfind("<table") :]
    closers = []
    for tag in ("td", "th", "tr"):
        if tail.rfind(f"<{tag}") > tail.rfind(f"</{tag}>"):
            closers.append(f"</{tag}>")
    return text + "".join(closers) + "</table>" * missing


def pixel_crop_box(box: Box, size: tuple[int, int]) -> tuple[int, int, int, int] | None:
    """Round a float pixel box to whole pixels inside the page; None when nothing is left."""
    width, height = size
    x1, y1, x2, y2 = (round(v) for v in box)
    x1, x2 = max(0, min(x1, width)), max(0, min(x2, width))
    y1, y2 = max(0, min(y1, height)), max(0, min(y2, height))
    if x2 - x1 < 1 or y2 - y1 < 1:
        return None
    return (x1, y1, x2, y2)


def save_crop(image: Image.Image, box: Box, path: Path) -> Path | None:
    """Crop ``box`` from the page and write it as JPEG (atomically); None when the box is empty."""
    crop_box = pixel_crop_box(box, image.size)
    if crop_box is None:
        return None
    buf = io.BytesIO()
    image.crop(crop_box).convert("RGB").save(buf, format="JPEG", quality=JPEG_QUALITY)
    return atomic_write_bytes(path, buf.getvalue())


def page_markdown(
    blocks: Sequence[Block],
    image: Image.Image | None,
    page_number: int,
    images_dir: Path | None,
    link_prefix: str = "images",
    *,
    keep_table_html: bool = True,
) -> tuple[str, list[Path]]:
    """Markdown of one page and the figure files written for it.

    ``page_number`` is 0-based, like the official script's ``images/{page}_{idx}.jpg`` names; ``idx``
    counts figures on the page. Each box of an image block becomes one crop and one link, followed by
    the block's own text if it has any. Without ``images_dir`` (or without the page image) nothing is
    written and image blocks contribute only their text, so no link ever points at a missing file.
    Raw HTML in block text is escaped; ``keep_table_html`` keeps the model's markup (for engines that
    write HTML; in the text layer's and the light engine's text, HTML is source text, except in their
    ``table`` blocks, see ``block_markdown``).
    """
    parts: list[str] = []
    figures: list[Path] = []
    for block in blocks:
        if block.label in MARGIN_LABELS:
            continue
        if block.label in IMAGE_LABELS and images_dir is not None and image is not None:
            for box in block.boxes:
                name = f"{page_number}_{len(figures)}.jpg"
                path = save_crop(image, box, Path(images_dir) / name)
                if path is None:
                    logger.debug("page %d: empty figure box %s skipped", page_number, box)
                    continue
                figures.append(path)
                parts.append(f"![]({link_prefix}/{name})" if link_prefix else f"![]({name})")
        if block.text.strip():
            parts.append(block_markdown(block, keep_table_html=keep_table_html))
    return tidy_markdown("\n\n".join(parts)), figures


def block_markdown(block: Block, *, keep_table_html: bool = True) -> str:
    """One block's Markdown text, raw HTML made inert (see ``page_markdown``).

    ``table`` blocks keep their table markup whatever the engine: the text layer and the light engine
    build them from escaped cell text (``engines.table_html``), so only their own tags are HTML. A
    ``code`` block that is one closed fence stays as it is (a fence shows its content literally, so
    escaping would show "&lt;"). Elsewhere, the text layer's ``<sup>``/``<sub>`` marks stay when they
    are balanced pairs without attributes around a short text; all other HTML is escaped.
    """
    if block.label == "code" and _is_fenced(block.text):
        return block.text
    keep = keep_table_html or block.label == "table"
    text = close_open_table(block.text) if keep else block.text
    if keep:
        return escape_raw_html(text, keep_table_tags=True)
    parts: list[str] = []
    pos = 0
    for m in SCRIPT_TAG.finditer(text):
        parts.append(escape_raw_html(text[pos : m.start()]))
        parts.append(f"<{m.group(1)}>{escape_raw_html(m.group(2))}</{m.group(1)}>")
        pos = m.end()
    parts.append(escape_raw_html(text[pos:]))
    out = "".join(parts)
    if block.label not in _MARKED_LABELS:
        # Plain text that opens with "#" and a space ("# of Incidents", a chart's axis title) would
        # read as a heading: the mark is escaped, as CommonMark escapes it.
        out = _HASH_START.sub(r"\\\1", out)
    return out


_MARKED_LABELS = frozenset({"title", "sub_title", "list", "code", "table"})  # text written as Markdown
_HASH_START = re.compile(r"^(#{1,6})(?=[ \t]|$)", re.M)


def _is_fenced(text: str) -> bool:
    """One fenced code block: an opening fence line, a closing line of the same fence, and no line in
    between that could close it early."""
    lines = text.split("\n")
    m = _FENCE_RE.fullmatch(lines[0]) if len(lines) >= 2 else None
    if m is None or lines[-1] != m.group(1):
        return False
    return not any(ln.lstrip().startswith(m.group(1)) for ln in lines[1:-1])


def document_markdown(pages: Sequence[str], page_numbers: Sequence[int] | None = None) -> str:
    """Join page Markdown: ``<!-- page N -->`` before each page, ``---`` between pages.

    ``page_numbers`` are the 1-based numbers shown in the markers (default 1, 2, ...); pass them when a
    page range was selected so the markers match the source document.
    """
    numbers = list(page_numbers) if page_numbers is not None else list(range(1, len(pages) + 1))
    if len(numbers) != len(pages):
        raise ValueError(f"{len(pages)} pages but {len(numbers)} page numbers")
    parts = [page_block(number, md) for number, md in zip(numbers, pages, strict=True)]
    return PAGE_RULE.join(parts) + "\n" if parts else ""


def trailing_table(md: str) -> tuple[str, str]:
    """``md`` without its last block when that block is a table, and that table (held until the next
    page says whether it goes on there); else ``(md, "")``. One with no header is held too: the next
    page may repeat its first row as the header it is (``table_html.continue_table``)."""
    head, _, last = md.strip().rpartition("\n\n")
    if last.startswith("<table>") and last.endswith("</table>"):
        return head, last
    return md, ""


def table_going_on(table: str, md: str) -> tuple[str, str]:
    """``table`` (the last block of a page) with the rows of the table that starts the next page's
    ``md`` when that one repeats its header or is its body rows going on under none (``rows_go_on``),
    and the rest of ``md``: a table printed across a page break is one table in the document, kept
    where it starts."""
    first, _, rest = md.strip().partition("\n\n")
    joined = continue_table(table, first)
    body = head_as_rest(table, first) or first  # a row's rest read as a header (``head_as_rest``)
    if joined is None and rows_go_on(table, body):
        joined = append_rows(table, body)
    return (joined, rest) if joined is not None else (table, md)


def carry_table(held: str, text: str) -> tuple[str, str, str]:
    """One page on from a table held from the page before (``held``, "" when none): the held table to
    write after the page before ("" when it goes on still), this page's text to write, and the table
    held over to the next page. A page that is only rows of the held table (a long table over three
    pages or more) keeps it held, so the rows of every page join it."""
    table = ""
    if held:
        table, text = table_going_on(held, text)
        if table != held and not text.strip():
            return "", "", table
    text, held = trailing_table(text)
    return table, text, held


def tables_kept_whole(pages: Sequence[str]) -> list[str]:
    """Each page's Markdown, a table that runs onto the next pages (``table_going_on``) kept whole on the
    page where it starts: what the Markdown file and the viewer show, page by page."""
    out: list[str] = []
    held, at = "", 0  # the table held over, and the page it starts on

    def put(table: str) -> None:
        out[at] = f"{out[at]}\n\n{table}" if out[at] else table

    for text in pages:
        table, text, going = carry_table(held, text)
        if table:
            put(table)
        if held and not table:  # this page was only more of the held table
            out.append(text)
            held = going
            continue
        out.append(text)
        held, at = going, len(out) - 1
    if held:
        put(held)
    return out


def rows_go_on(upper: str, lower: str) -> bool:
    """Whether ``lower``, a table with no header at the top of the next page, is more of ``upper``'s
    body rows (a table printed without its header repeated): plain cells only, as many columns a row
    as ``upper``'s body, and every column holding figures in both or in neither. Another table at the
    top of the next page has heads of its own or other columns."""
    from ocr_app.render.spreadsheet import SheetCell, table_cells
    from ocr_app.structure.word_columns import NUMERIC

    below = table_cells(lower)
    above = [c for c in table_cells(upper) if not c.header]
    if not above or not below or any(c.header or c.rowspan > 1 or c.colspan > 1 for c in below):
        return False

    def rows(cells: list[SheetCell]) -> dict[int, list[SheetCell]]:
        out: dict[int, list[SheetCell]] = {}
        for c in cells:
            out.setdefault(c.row, []).append(c)
        return out

    def width(row: list[SheetCell]) -> int:
        return sum(c.colspan for c in row)

    top, bottom = rows(above), rows(below)
    widths = {width(r) for r in [*top.values(), *bottom.values()]}
    if len(widths) != 1:
        return False

    def figures(cells: list[SheetCell], column: int) -> bool:
        filled = [c.text for c in cells if c.col == column and c.text.strip()]
        return bool(filled) and sum(1 for t in filled if NUMERIC.match(t)) > 0.5 * len(filled)

    return all(figures(above, k) == figures(below, k) for k in range(widths.pop()))


def page_block(number: int, md: str) -> str:
    """One page of the document Markdown: its marker, then its text (streamed writers join with ``PAGE_RULE``)."""
    marker = PAGE_MARKER.format(number=number)
    return f"{marker}\n\n{md.strip()}" if md.strip() else marker


def error_note(page: PageResult) -> str:
    """The Markdown that stands in for a page that could not be converted."""
    message = " ".join((page.error or "unknown error").split())
    return f"> **Page {page.index + 1} could not be converted:** {message}"


def stopped_note(page: PageResult) -> str:
    return (
        f"> **Page {page.index + 1} stopped early ({page.stop_reason.value}):** its text may be incomplete."
    )


def document_page_markdown(page: PageResult) -> str:
    """A page as the document's Markdown file shows it: its Markdown, or the error note, plus a note
    when decoding stopped early (the page is kept, flagged)."""
    md = page.markdown or (error_note(page) if page.error else "")
    if not page.error and page.stop_reason in (StopReason.LENGTH, StopReason.REPETITION):
        md = f"{md}\n\n{stopped_note(page)}" if md else stopped_note(page)
    return md
