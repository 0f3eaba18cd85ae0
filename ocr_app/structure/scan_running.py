"""Running headers, footers and page numbers of a scanned document, from its pages' edge blocks.

Why: the text layer finds a document's running lines before it lays any page out
(``docprofile.build_profile``); a scan's words exist only once a page is read. The light engine reads a
few pages before it hands any on (``LightOcrEngine.predict_stream``, for the heading levels); the
outermost block at the top or bottom edge of those pages says which texts run from page to page ("Survey
2024 Final report", "Page # of #", a bare page number). Such blocks, there and on later pages, become
``page_header`` / ``page_footer`` blocks: kept in the JSON, left out of the Markdown, as on the text layer.
A page alone is judged by its shape (``page_furniture.margin_rows``) before this.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from ocr_app.schema import Block
from ocr_app.structure.lines import EDGE_BAND
from ocr_app.structure.page_furniture import running_key

# Running lines are set small, in the text's type: a heading repeated at the top of slides ("Results"
# on three in a row) is the slides' own title, and stays.
CONTENT = frozenset({"text"})
MIN_PAGES = 2  # a text must stand at the same edge on at least this many pages
MIN_SHARE = 0.5  # and on this share of the pages looked at


def edge_blocks(blocks: Sequence[Block], height: float) -> list[tuple[str, Block]]:
    """The page's outermost content block at the top and at the bottom, where it lies in the edge band."""
    content = [b for b in blocks if b.label in CONTENT and b.boxes]
    if not content or height <= 0:
        return []
    out: list[tuple[str, Block]] = []
    top = min(content, key=lambda b: b.boxes[0][1])
    if max(box[3] for box in top.boxes) <= EDGE_BAND * height:
        out.append(("top", top))
    # A slide's only text block may be its footer (the rest are titles and lists): it is the outermost
    # at both edges, and is judged at the one it stands in.
    bottom = max(content, key=lambda b: b.boxes[-1][3])
    low = min(box[1] for box in bottom.boxes) >= (1 - EDGE_BAND) * height
    if low and (not out or bottom is not top):
        out.append(("bottom", bottom))
    return out


def _key(block: Block) -> str:
    return running_key(block.text)


def running_keys(pages: Sequence[tuple[Sequence[Block], float]]) -> frozenset[tuple[str, str]]:
    """(edge, text key) of the edge texts that run on ``MIN_PAGES`` or more of ``pages`` (each its blocks
    and its height in the blocks' pixels), and on ``MIN_SHARE`` of them."""
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for blocks, height in pages:
        counts.update({(edge, _key(b)) for edge, b in edge_blocks(blocks, height)})
    need = max(MIN_PAGES, MIN_SHARE * len(pages))
    return frozenset(k for k, n in counts.items() if n >= need)


def mark_running(blocks: list[Block], height: float, keys: frozenset[tuple[str, str]]) -> None:
    """Relabel the page's edge blocks whose text runs (``running_keys``) as page header or footer."""
    for edge, block in edge_blocks(blocks, height):
        if (edge, _key(block)) in keys:
            block.label = "page_header" if edge == "top" else "page_footer"
