"""Eight small pages with known content and the grounding transcript a DeepSeek-OCR-2 would write for them.

Why: the trained tiny model (``tiny_train``) learns to reproduce these transcripts token for token, so
tests can assert exact Markdown, JSON blocks and boxes through the public paths. Pages are drawn with
PyMuPDF (real PDF pages, rasterised at 144 DPI like the converter does), and every box in a transcript
is the rectangle the block was drawn in, on the model's 0–999 grid. The set covers what the model
writes: title, sub_title, text, a table with ``<td>`` cells (and its caption), an equation, a figure
with its caption, a two-column page, a page in ``global`` and a page in ``default`` (tiled) mode.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from PIL import Image

logger = logging.getLogger(__name__)

DPI = 144
GRID = 999
PROMPT = "markdown"  # the preset every page is transcribed with (``<|grounding|>Convert the document…``)


@dataclass(frozen=True)
class TinyBlock:
    """One block: its label, the rectangle it is drawn in (PDF points) and what the model writes for it.

    ``drawn`` is the text put on the page (cells separated by ``|`` and rows by ``/`` for tables);
    ``content`` is the block's text in the transcript.
    """

    label: str
    rect: tuple[float, float, float, float]
    drawn: str
    content: str


@dataclass(frozen=True)
class TinyPage:
    """A page: size in points, the resolution mode it is read in, and its blocks in reading order."""

    name: str
    size: tuple[float, float]
    mode: str
    blocks: tuple[TinyBlock, ...]

    @property
    def pixel_size(self) -> tuple[int, int]:
        return round(self.size[0] * DPI / 72), round(self.size[1] * DPI / 72)

    def grid_box(self, block: TinyBlock) -> list[int]:
        """The block's rectangle on the 0–999 grid of this page."""
        w, h = self.size
        x0, y0, x1, y1 = block.rect
        return [round(x0 / w * GRID), round(y0 / h * GRID), round(x1 / w * GRID), round(y1 / h * GRID)]

    def transcript(self) -> str:
        """The grounded output for this page (without the end-of-sentence token)."""
        parts = []
        for b in self.blocks:
            box = ", ".join(str(v) for v in self.grid_box(b))
            parts.append(f"<|ref|>{b.label}<|/ref|><|det|>[[{box}]]<|/det|>\n{b.content}")
        return "\n\n".join(parts)


def _table_html(rows: list[list[str]]) -> str:
    return (
        "<table>" + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</table>"
    )


_TABLE = [["Item", "Qty", "Price"], ["Apples", "12", "3.5"], ["Pears", "7", "2.25"]]
# A row of empty cells repeats ``</td><td>``: with a 7-gram guard only ``</td>`` gets banned there, so
# the page reads right only if the guard exempts the real ``</td>`` id.
_TABLE2 = [
    ["City", "Jan", "Feb", "Mar", "Apr"],
    ["Oslo", "61", "55", "40", "44"],
    ["Quito", "", "", "", ""],
    ["Lisbon", "42", "38", "35", "29"],
]

PAGES: tuple[TinyPage, ...] = (
    TinyPage(
        "title-text",
        (360, 260),
        "global",
        (
            TinyBlock("title", (30, 24, 330, 52), "Quarterly Report", "# Quarterly Report"),
            TinyBlock(
                "text",
                (30, 70, 330, 130),
                "Revenue grew in every region this quarter.",
                "Revenue grew in every region this quarter.",
            ),
            TinyBlock("text", (30, 150, 330, 200), "The board meets in May.", "The board meets in May."),
        ),
    ),
    TinyPage(
        "sections",
        (360, 300),
        "global",
        (
            TinyBlock("sub_title", (30, 24, 250, 46), "1. Methods", "## 1. Methods"),
            TinyBlock("text", (30, 60, 330, 120), "We counted birds at dawn.", "We counted birds at dawn."),
            TinyBlock("sub_title", (30, 140, 250, 162), "2. Results", "## 2. Results"),
            TinyBlock("text", (30, 176, 330, 236), "Most birds were sparrows.", "Most birds were sparrows."),
        ),
    ),
    TinyPage(
        "table",
        (360, 260),
        "global",
        (
            TinyBlock("table_caption", (40, 24, 320, 44), "Table 1: Fruit sales.", "Table 1: Fruit sales."),
            TinyBlock(
                "table", (40, 54, 320, 144), "/".join("|".join(r) for r in _TABLE), _table_html(_TABLE)
            ),
        ),
    ),
    TinyPage(
        "equation",
        (360, 240),
        "global",
        (
            TinyBlock(
                "text", (30, 30, 330, 60), "Energy and mass are linked:", "Energy and mass are linked:"
            ),
            TinyBlock("equation", (110, 90, 250, 130), "E = mc2", "\\[\nE = m c^{2}\n\\]"),
        ),
    ),
    TinyPage(
        "figure",
        (320, 320),
        "global",
        (
            TinyBlock("image", (60, 30, 260, 220), "", ""),
            TinyBlock(
                "image_caption",
                (40, 236, 280, 260),
                "Figure 1: Sales by region.",
                "Figure 1: Sales by region.",
            ),
        ),
    ),
    TinyPage(
        "two-columns",
        (420, 280),
        "global",
        (
            TinyBlock("sub_title", (24, 24, 200, 46), "Left side", "## Left side"),
            TinyBlock("text", (24, 60, 200, 150), "Rivers run to the sea.", "Rivers run to the sea."),
            TinyBlock("sub_title", (220, 24, 396, 46), "Right side", "## Right side"),
            TinyBlock("text", (220, 60, 396, 150), "Winds blow from the west.", "Winds blow from the west."),
        ),
    ),
    TinyPage(
        "rain-table",
        (300, 300),
        "global",
        (
            TinyBlock("sub_title", (30, 20, 270, 42), "Rainfall", "## Rainfall"),
            TinyBlock(
                "table", (30, 60, 270, 180), "/".join("|".join(r) for r in _TABLE2), _table_html(_TABLE2)
            ),
            TinyBlock("text", (30, 200, 270, 240), "Values in millimetres.", "Values in millimetres."),
        ),
    ),
    TinyPage(
        "wide-default",
        (600, 300),
        "default",
        (
            TinyBlock("title", (40, 24, 560, 56), "Annual Summary", "# Annual Summary"),
            TinyBlock(
                "text",
                (40, 80, 560, 140),
                "Sales rose while costs fell for the third year.",
                "Sales rose while costs fell for the third year.",
            ),
            TinyBlock(
                "text", (40, 160, 560, 220), "See the annex for details.", "See the annex for details."
            ),
        ),
    ),
)


def _draw_block(page, block: TinyBlock) -> None:
    import pymupdf

    rect = pymupdf.Rect(*block.rect)
    if block.label == "image":  # a simple chart: frame and three bars
        page.draw_rect(rect, color=(0, 0, 0), width=1)
        bar_w = rect.width / 7
        for k, frac in enumerate((0.4, 0.8, 0.6)):
            x0 = rect.x0 + bar_w * (1 + 2 * k)
            page.draw_rect(
                pymupdf.Rect(x0, rect.y1 - rect.height * frac, x0 + bar_w, rect.y1 - 2),
                color=None,
                fill=(0.2, 0.3 + 0.2 * k, 0.7),
            )
        return
    if block.label == "table":
        rows = [r.split("|") for r in block.drawn.split("/")]
        rh, cw = rect.height / len(rows), rect.width / len(rows[0])
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                cell_rect = pymupdf.Rect(
                    rect.x0 + c * cw, rect.y0 + r * rh, rect.x0 + (c + 1) * cw, rect.y0 + (r + 1) * rh
                )
                page.draw_rect(cell_rect, color=(0, 0, 0), width=0.7)
                page.insert_text(
                    (cell_rect.x0 + 5, cell_rect.y1 - rh * 0.3), cell, fontname="hebo" if r == 0 else "helv"
                )
        return
    heading = block.label in ("title", "sub_title")
    size = {"title": 16, "sub_title": 12, "equation": 16}.get(block.label, 11)
    font = "tiit" if block.label == "equation" else ("hebo" if heading else "helv")
    left = page.insert_textbox(rect, block.drawn, fontsize=size, fontname=font)
    if left < 0:
        raise ValueError(f"text does not fit its box: {block.drawn!r}")


def render_pages(pages: tuple[TinyPage, ...] = PAGES) -> list[Image.Image]:
    """Draw each page as a PDF page with PyMuPDF and rasterise it at 144 DPI (RGB)."""
    import pymupdf
    from PIL import Image

    images = []
    doc = pymupdf.open()
    try:
        for spec in pages:
            page = doc.new_page(width=spec.size[0], height=spec.size[1])
            for block in spec.blocks:
                _draw_block(page, block)
            pix = page.get_pixmap(dpi=DPI, alpha=False)
            images.append(Image.frombytes("RGB", (pix.width, pix.height), pix.samples))
    finally:
        doc.close()
    return images


def write_pages(folder: Path, pages: tuple[TinyPage, ...] = PAGES) -> list[Path]:
    """Write the pages as PNG files ``NN-name.png`` (lossless: the model sees the same pixels)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, (spec, image) in enumerate(zip(pages, render_pages(pages), strict=True), 1):
        path = folder / f"{n:02d}-{spec.name}.png"
        image.save(path)
        paths.append(path)
    return paths


__all__ = ["PAGES", "PROMPT", "TinyBlock", "TinyPage", "render_pages", "write_pages"]
