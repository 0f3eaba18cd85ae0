"""Pages with known content: born-digital PDFs and simulated scans, plus their ground truth.

Why our own typesetter: the ground truth must be exact (which words, in which reading order, which
block is a heading, list or table), so we place every line ourselves with PyMuPDF and record what we
placed. Content is deterministic per seed: the same command gives the same pages.

Each page mixes headings (two levels), paragraphs, bullet and numbered lists, a ruled table and
two-column sections, in one body size per page from 9 pt (small) to 16 pt (large).
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pymupdf
    from PIL import Image

PAGE_W, PAGE_H = 595.0, 842.0  # A4 in points
MARGIN = 56.0
GUTTER = 26.0
SCAN_DPI = 144
BODY_SIZES = (9.0, 10.0, 11.0, 12.0, 14.0, 16.0)

_WORDS = [
    "report",
    "analysis",
    "market",
    "growth",
    "quarter",
    "revenue",
    "customer",
    "product",
    "service",
    "quality",
    "system",
    "design",
    "energy",
    "water",
    "river",
    "mountain",
    "village",
    "garden",
    "library",
    "museum",
    "station",
    "harbor",
    "bridge",
    "window",
    "science",
    "history",
    "language",
    "culture",
    "music",
    "theater",
    "painting",
    "journal",
    "chapter",
    "section",
    "summary",
    "method",
    "result",
    "figure",
    "measure",
    "sample",
    "average",
    "increase",
    "decrease",
    "forecast",
    "budget",
    "policy",
    "council",
    "student",
    "teacher",
    "lesson",
    "school",
    "morning",
    "evening",
    "winter",
    "summer",
    "autumn",
    "spring",
    "weather",
    "forest",
    "network",
    "server",
    "client",
    "request",
    "memory",
    "storage",
    "engine",
    "machine",
    "printer",
    "scanner",
    "document",
    "paper",
    "simple",
    "careful",
    "modern",
    "ancient",
    "bright",
    "quiet",
    "rapid",
    "gentle",
    "strong",
    "narrow",
    "public",
    "private",
    "local",
    "national",
    "central",
    "northern",
    "southern",
    "eastern",
    "western",
    "annual",
    "monthly",
    "weekly",
    "daily",
    "total",
    "final",
    "improve",
    "develop",
    "explain",
    "compare",
    "protect",
    "deliver",
    "collect",
    "prepare",
    "observe",
    "support",
    "announce",
]
_NAMES = [
    "Berlin",
    "Lisbon",
    "Oslo",
    "Nairobi",
    "Toronto",
    "Kyoto",
    "Madrid",
    "Vienna",
    "Dublin",
    "Prague",
    "Quito",
    "Lagos",
]


@dataclass
class Element:
    """One block of ground truth: kind in h1, h2, p, ul, ol, table; text or items or rows."""

    kind: str
    text: str = ""
    items: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def markdown(self) -> str:
        if self.kind == "h1":
            return f"# {self.text}"
        if self.kind == "h2":
            return f"## {self.text}"
        if self.kind == "ul":
            return "\n".join(f"- {i}" for i in self.items)
        if self.kind == "ol":
            return "\n".join(f"{n}. {i}" for n, i in enumerate(self.items, 1))
        if self.kind == "table":
            head, *body = self.rows
            lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])
        return self.text

    def plain(self) -> str:
        """The words of the block, in reading order, without Markdown syntax."""
        if self.kind in ("ul", "ol"):
            return " ".join(self.items)
        if self.kind == "table":
            return " ".join(c for r in self.rows for c in r)
        return self.text


@dataclass
class PageTruth:
    """What a page holds, in reading order."""

    elements: list[Element]
    body_size: float
    two_columns: bool

    def markdown(self) -> str:
        return "\n\n".join(e.markdown() for e in self.elements)

    def plain(self) -> str:
        return " ".join(e.plain() for e in self.elements)


class _Content:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def words(self, n: int) -> list[str]:
        out = []
        for _ in range(n):
            r = self.rng.random()
            if r < 0.05:
                out.append(str(self.rng.randint(2, 2030)))
            elif r < 0.09:
                out.append(self.rng.choice(_NAMES))
            else:
                out.append(self.rng.choice(_WORDS))
        return out

    def sentence(self, lo: int = 6, hi: int = 14) -> str:
        w = self.words(self.rng.randint(lo, hi))
        w[0] = w[0].capitalize()
        if len(w) > 6 and self.rng.random() < 0.4:
            w[len(w) // 2] += ","
        return " ".join(w) + self.rng.choice(".....?!")

    def paragraph(self, sentences: tuple[int, int] = (2, 5)) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(*sentences)))

    def title(self, lo: int = 2, hi: int = 5) -> str:
        return " ".join(w.capitalize() for w in self.words(self.rng.randint(lo, hi)))

    def table(self) -> list[list[str]]:
        ncols = self.rng.randint(3, 4)
        head = [w.capitalize() for w in self.rng.sample(_WORDS, ncols)]
        rows = [head]
        for _ in range(self.rng.randint(3, 5)):
            row = [self.rng.choice(_WORDS).capitalize()]
            row += [f"{self.rng.uniform(1, 999):.1f}" for _ in range(ncols - 1)]
            rows.append(row)
        return rows


def page_plan(seed: int) -> tuple[float, list[tuple[str, object]]]:
    """A random page: body size and a list of (kind, payload); 'cols' holds two element lists."""
    rng = random.Random(seed)
    c = _Content(rng)
    size = BODY_SIZES[seed % len(BODY_SIZES)]
    plan: list[tuple[str, object]] = [("h1", c.title())]
    variant = seed % 4
    for k in range(8):
        roll = (k + variant) % 6
        if roll == 0:
            plan.append(("p", c.paragraph()))
        elif roll == 1:
            plan.append(("h2", c.title()))
            plan.append(("p", c.paragraph((1, 3))))
        elif roll == 2:
            kind = "ul" if rng.random() < 0.5 else "ol"
            plan.append((kind, [c.sentence(3, 12).rstrip(".?!") for _ in range(rng.randint(2, 4))]))
        elif roll == 3:
            if seed % 3 != 2:
                plan.append(("table", c.table()))
            else:
                plan.append(("p", c.paragraph()))
        elif roll == 4:
            left = [Element("h2", c.title(2, 3)), Element("p", c.paragraph((3, 5)))]
            right = [Element("p", c.paragraph((2, 4))), Element("p", c.paragraph((1, 3)))]
            plan.append(("cols", (left, right)))
        else:
            plan.append(("p", c.paragraph((1, 3))))
    return size, plan


class _Typesetter:
    """Places lines on a page and records each block that fit completely."""

    def __init__(self, page: pymupdf.Page, size: float, serif: bool) -> None:
        self.page = page
        self.size = size
        self.font = "tiro" if serif else "helv"
        self.bold = "tibo" if serif else "hebo"
        self.leading = 1.3

    def _width(self, text: str, font: str, size: float) -> float:
        import pymupdf

        return pymupdf.get_text_length(text, fontname=font, fontsize=size)

    def wrap(self, text: str, width: float, font: str, size: float) -> list[str]:
        lines: list[str] = []
        cur = ""
        for word in text.split():
            cand = f"{cur} {word}" if cur else word
            if cur and self._width(cand, font, size) > width:
                lines.append(cur)
                cur = word
            else:
                cur = cand
        if cur:
            lines.append(cur)
        return lines

    def height(self, el: Element, width: float) -> float:
        return self.place(el, 0, 0, width, dry=True)

    def place(self, el: Element, x: float, y: float, width: float, *, dry: bool = False) -> float:
        """Draw ``el`` with its top at ``y``; return the height used (including space after)."""
        s = self.size
        if el.kind in ("h1", "h2"):
            hs = s * (2.2 if el.kind == "h1" else 1.5)
            lines = self.wrap(el.text, width, self.bold, hs)
            h = 0.0
            for ln in lines:
                if not dry:
                    self.page.insert_text((x, y + h + hs), ln, fontname=self.bold, fontsize=hs)
                h += hs * 1.2
            return h + s * 0.8
        if el.kind == "p":
            h = 0.0
            for ln in self.wrap(el.text, width, self.font, s):
                if not dry:
                    self.page.insert_text((x, y + h + s), ln, fontname=self.font, fontsize=s)
                h += s * self.leading
            return h + s * 0.8
        if el.kind in ("ul", "ol"):
            h = 0.0
            indent = s * 1.6
            for n, item in enumerate(el.items, 1):
                marker = "•" if el.kind == "ul" else f"{n}."
                for k, ln in enumerate(self.wrap(item, width - indent, self.font, s)):
                    if not dry:
                        if k == 0:
                            self.page.insert_text((x, y + h + s), marker, fontname=self.font, fontsize=s)
                        self.page.insert_text((x + indent, y + h + s), ln, fontname=self.font, fontsize=s)
                    h += s * self.leading
                h += s * 0.25
            return h + s * 0.6
        if el.kind == "table":
            import pymupdf

            ncols = len(el.rows[0])
            cw = min(width / ncols, s * 10)
            rh = s * 1.9
            for r, row in enumerate(el.rows):
                for cidx, cell in enumerate(row):
                    rect = pymupdf.Rect(x + cidx * cw, y + r * rh, x + (cidx + 1) * cw, y + (r + 1) * rh)
                    if not dry:
                        self.page.draw_rect(rect, color=(0, 0, 0), width=0.6)
                        font = self.bold if r == 0 else self.font
                        self.page.insert_text(
                            (rect.x0 + s * 0.5, rect.y1 - s * 0.6), cell, fontname=font, fontsize=s
                        )
            return len(el.rows) * rh + s * 1.2
        raise ValueError(el.kind)


def render_page(doc: pymupdf.Document, seed: int) -> PageTruth:
    """Append one page to ``doc``; return its ground truth (only blocks that fit are kept)."""
    size, plan = page_plan(seed)
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    ts = _Typesetter(page, size, serif=seed % 5 == 3)
    width = PAGE_W - 2 * MARGIN
    bottom = PAGE_H - MARGIN
    y = MARGIN
    placed: list[Element] = []
    two_cols = False
    for kind, payload in plan:
        if kind == "cols":
            left, right = payload  # type: ignore[misc]
            cw = (width - GUTTER) / 2
            hl = sum(ts.height(e, cw) for e in left)
            hr = sum(ts.height(e, cw) for e in right)
            if y + max(hl, hr) > bottom:
                continue
            yl = yr = y
            for e in left:
                yl += ts.place(e, MARGIN, yl, cw)
            for e in right:
                yr += ts.place(e, MARGIN + cw + GUTTER, yr, cw)
            placed.extend(left)
            placed.extend(right)
            y = max(yl, yr) + size  # typesetters leave extra space after a column section
            two_cols = True
            continue
        if kind in ("h1", "h2", "p"):
            el = Element(kind, text=payload)  # type: ignore[arg-type]
        elif kind in ("ul", "ol"):
            el = Element(kind, items=payload)  # type: ignore[arg-type]
        else:
            el = Element(kind, rows=payload)  # type: ignore[arg-type]
        h = ts.height(el, width)
        if y + h > bottom:
            continue
        y += ts.place(el, MARGIN, y, width)
        placed.append(el)
    # Headings left dangling at the end of the page have no content after them: fine for OCR.
    return PageTruth(placed, size, two_cols)


def make_born_digital(path: Path, seeds: list[int]) -> list[PageTruth]:
    """One PDF with one generated page per seed."""
    import pymupdf

    doc = pymupdf.open()
    truths = [render_page(doc, s) for s in seeds]
    doc.save(path)
    doc.close()
    return truths


def render(pdf_path: Path, index: int, dpi: int = SCAN_DPI) -> Image.Image:
    """Rasterise one PDF page (RGB)."""
    import pymupdf
    from PIL import Image

    with pymupdf.open(pdf_path) as doc:
        pix = doc[index].get_pixmap(dpi=dpi)
        return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def simulate_scan(image: Image.Image, seed: int, *, degraded: bool) -> Image.Image:
    """A scanner's output: grey, slightly rotated, noisy, blurred, JPEG-compressed.

    clean: ±0.4° rotation, noise σ=3, JPEG q=90. degraded: ±1.2° rotation, blur radius 0.8, noise
    σ=12, JPEG q=50.
    """
    import numpy as np
    from PIL import Image, ImageFilter

    rng = np.random.default_rng(seed)
    angle = float(rng.uniform(-1.2, 1.2) if degraded else rng.uniform(-0.4, 0.4))
    grey = image.convert("L").rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=255)
    if degraded:
        grey = grey.filter(ImageFilter.GaussianBlur(0.8))
    arr = np.asarray(grey, dtype=np.float32)
    arr = arr + rng.normal(0, 12.0 if degraded else 3.0, arr.shape)
    grey = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    buf = io.BytesIO()
    grey.save(buf, "JPEG", quality=50 if degraded else 90)
    buf.seek(0)
    return Image.open(buf).convert("RGB")


def make_scan_pdf(path: Path, images: list[Image.Image], dpi: int = SCAN_DPI) -> Path:
    """An image-only PDF (what a scanner writes): no text layer."""
    import pymupdf

    doc = pymupdf.open()
    for img in images:
        w, h = img.size
        page = doc.new_page(width=w * 72 / dpi, height=h * 72 / dpi)
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=95)
        page.insert_image(page.rect, stream=buf.getvalue())
    doc.save(path)
    doc.close()
    return path
