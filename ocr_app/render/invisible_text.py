"""Invisible text over a PDF page: each run set in text render mode 3 (neither filled nor stroked) at its
box, its font size fitted to the box's length (or its height, then stretched along the line to its length),
in a font that holds its script.

Why these fonts (all inside PyMuPDF, so nothing is downloaded and the app's browser fonts — WOFF2
subsets MuPDF cannot load — are not needed):
- Latin-1 text: Helvetica, a standard font no PDF has to embed;
- Chinese, Japanese, Korean: MuPDF's CJK fonts by reference (``china-s``, ``japan``, ``korea``: UTF-16
  CMaps, nothing embedded; their Droid Sans Fallback metrics size the run);
- Arabic and Hebrew: Noto Naskh Arabic / Noto Serif Hebrew, embedded, written right to left in logical
  order (PyMuPDF shapes Arabic: the text comes back in Arabic presentation forms, which Unicode's NFKC
  folds to the letters typed);
- anything else (Latin beyond Latin-1, Greek, Cyrillic, typographic quotes and dashes; other scripts):
  MuPDF's Noto font for the run's script, embedded once per written batch of pages.
A run is placed on its baseline: the box's middle lies 0.3 font sizes above it (a line's ink runs from
about 0.72 above the baseline to 0.21 below; 0.3 put the words of a 200-DPI scan read by the light
engine within 2.6 pt of their true place, 0.25 within 2.7), so a viewer's highlight lands on the ink.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ocr_app.render.pdf_text import TextRun

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

INVISIBLE = 3  # PDF text render mode: neither fill nor stroke
MIDDLE_EM = 0.3  # a line's middle above its baseline, in font sizes (CJK: 0.38, their glyphs sit higher)
MAX_HEIGHT_RATIO = 1.6  # a line's own box: never set larger than this times its height (a short misread)
MIN_FONT_SIZE = 0.5


@dataclass(frozen=True)
class RunFont:
    """How one run is set: the page's font name, whether the font is embedded from ``buffer``, whether
    it runs right to left, and where a line's middle sits above the baseline (font sizes)."""

    name: str
    font: Any  # pymupdf.Font: measures the run
    embed: bool
    rtl: bool = False
    middle_em: float = MIDDLE_EM
    advances: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def width_em(self, text: str) -> float:
        """``text``'s advance at size 1, from each character's advance, cached (``Font.text_length``
        asks MuPDF character by character on every call: 1 ms a line)."""
        total = 0.0
        for ch in text:
            advance = self.advances.get(ch)
            if advance is None:
                advance = self.advances[ch] = self.font.text_length(ch, fontsize=1)
            total += advance
        return total


def _script(ch: str) -> str:
    code = ord(ch)
    if 0x0590 <= code <= 0x05FF or 0xFB1D <= code <= 0xFB4F:
        return "hebrew"
    if 0x0600 <= code <= 0x06FF or 0x0750 <= code <= 0x077F or 0xFB50 <= code <= 0xFEFF:
        return "arabic"
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return "hangul"
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF:
        return "kana"
    if (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x3000 <= code <= 0x303F
        or 0xF900 <= code <= 0xFAFF
    ):
        return "han"
    if code < 0x100:
        return "latin1"
    return "other"


class FontBook:
    """The fonts of one PDF document (fonts are embedded per document; a new book after each flush)."""

    def __init__(self) -> None:
        self._fonts: dict[str, RunFont] = {}
        self._on_page: dict[int, set[str]] = {}

    def for_text(self, text: str) -> RunFont:
        scripts = {_script(ch) for ch in text if not ch.isspace()}
        if "arabic" in scripts:
            return self._noto("arabic", rtl=True)
        if "hebrew" in scripts:
            return self._noto("hebrew", rtl=True)
        if "hangul" in scripts:
            return self._cjk("korea")
        if "kana" in scripts:
            return self._cjk("japan")
        if "han" in scripts:
            return self._cjk("china-s")
        if scripts <= {"latin1"}:
            return self._base("helv")
        return self._noto(_dominant_script(text))

    def _base(self, name: str) -> RunFont:
        import pymupdf

        if name not in self._fonts:
            self._fonts[name] = RunFont(name, pymupdf.Font(name), embed=False)
        return self._fonts[name]

    def _cjk(self, name: str) -> RunFont:
        import pymupdf

        if name not in self._fonts:
            self._fonts[name] = RunFont(name, pymupdf.Font(name), embed=False, middle_em=0.38)
        return self._fonts[name]

    def _noto(self, script: str, *, rtl: bool = False) -> RunFont:
        import pymupdf

        key = f"noto-{script}"
        if key not in self._fonts:
            code = getattr(pymupdf.mupdf, f"UCDN_SCRIPT_{script.upper()}", None)
            font = pymupdf.Font(script=code) if code is not None else None
            if font is None or not font.buffer:
                font = pymupdf.Font(script=pymupdf.mupdf.UCDN_SCRIPT_LATIN)
            self._fonts[key] = RunFont(f"ocr{len(self._fonts)}", font, embed=True, rtl=rtl)
        return self._fonts[key]

    def use(self, page: pymupdf.Page, font: RunFont) -> None:
        """Make ``font`` known to ``page`` (embedding it once per document)."""
        if not font.embed or font.rtl:  # a TextWriter embeds its own fonts
            return
        seen = self._on_page.setdefault(page.number, set())
        if font.name not in seen:
            page.insert_font(fontname=font.name, fontbuffer=font.font.buffer)
            seen.add(font.name)


def _dominant_script(text: str) -> str:
    """The Unicode script most letters of ``text`` belong to beyond Latin-1 (``latin`` when none)."""
    counts: dict[str, int] = {}
    for ch in text:
        if ord(ch) < 0x100 or not ch.isalpha():
            continue
        name = unicodedata.name(ch, "").split(" ")[0]
        counts[name] = counts.get(name, 0) + 1
    script = max(counts, key=counts.__getitem__) if counts else "LATIN"
    return script.lower() if script in ("GREEK", "CYRILLIC", "LATIN") else _MUPDF_SCRIPT.get(script, "latin")


# Unicode character-name prefixes → the UCDN script name MuPDF keys its Noto fonts by.
_MUPDF_SCRIPT = {
    "DEVANAGARI": "devanagari",
    "BENGALI": "bengali",
    "TAMIL": "tamil",
    "TELUGU": "telugu",
    "GUJARATI": "gujarati",
    "GURMUKHI": "gurmukhi",
    "KANNADA": "kannada",
    "MALAYALAM": "malayalam",
    "THAI": "thai",
    "LAO": "lao",
    "KHMER": "khmer",
    "GEORGIAN": "georgian",
    "ARMENIAN": "armenian",
    "ETHIOPIC": "ethiopic",
    "SINHALA": "sinhala",
    "MYANMAR": "myanmar",
    "TIBETAN": "tibetan",
}


@dataclass(frozen=True)
class PageFrame:
    """How page-image pixels map onto a PDF page: ``scale`` (points per pixel, x and y), and the page's
    derotation (display → the unrotated space PyMuPDF draws in) and ``/Rotate`` in degrees."""

    scale_x: float
    scale_y: float
    derotation: Any  # pymupdf.Matrix
    rotation: int = 0


def frame_of(page: pymupdf.Page, image_size: tuple[int, int]) -> PageFrame:
    """The frame of ``page`` shown as an image of ``image_size`` pixels (``page.rect``: after rotation)."""
    w, h = image_size
    rect = page.rect
    return PageFrame(rect.width / max(w, 1), rect.height / max(h, 1), page.derotation_matrix, page.rotation)


def draw_runs(page: pymupdf.Page, runs: Iterable[TextRun], frame: PageFrame, fonts: FontBook) -> int:
    """Set every run on ``page`` as invisible text; returns how many were set (a run PyMuPDF refuses is
    skipped with a debug line: the page keeps its other runs). Left-to-right runs go through one Shape
    per page (a Shape per ``insert_text`` cost 1.2 ms a line), committed before a right-to-left run so
    the page's text keeps the runs' order."""
    import pymupdf

    set_runs = 0
    shape = None
    for run in runs:
        text = " ".join(run.text.split())
        if not text:
            continue
        font = fonts.for_text(text)
        placed = _place(run, text, font, frame)
        if placed is None:
            continue
        point, size, rotate, morph = placed
        try:
            if font.rtl:
                if shape is not None:
                    shape.commit()
                    shape = None
                _write_rtl(page, point, text, font, size, rotate, morph)
            else:
                fonts.use(page, font)
                shape = shape or page.new_shape()
                shape.insert_text(
                    point, text, fontsize=size, fontname=font.name, render_mode=INVISIBLE, rotate=rotate,
                    morph=morph,
                )  # fmt: skip
            set_runs += 1
        except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:  # the others are still set
            logger.debug("page %d: run %r not set: %s", page.number + 1, text[:40], exc)
    if shape is not None:
        shape.commit()
    return set_runs


def _write_rtl(
    page: pymupdf.Page, point: Any, text: str, font: RunFont, size: float, rotate: int, morph: Any
) -> None:
    """Right-to-left text goes through a TextWriter (PyMuPDF's ``insert_text`` would store Arabic in
    visual order, so it would be found and copied backwards); a TextWriter takes no turn per run."""
    import pymupdf

    if rotate:
        raise ValueError("right-to-left text turned sideways is not set")
    writer = pymupdf.TextWriter(page.rect)
    writer.append(point, text, font=font.font, fontsize=size, right_to_left=1)
    writer.write_text(page, render_mode=INVISIBLE, morph=morph)


def _place(run: TextRun, text: str, font: RunFont, frame: PageFrame) -> tuple[Any, float, int, Any] | None:
    """(start point in the page's unrotated space, font size, PyMuPDF ``rotate``, horizontal stretch as a
    ``morph``) of a run, or None when its box is empty.

    The size fills the box's length; in a share of a block's box (wider than its text: a title, a
    paragraph's last line) it is at most what the box's height holds, and the run is then stretched along
    its line to the box's length. The run's direction on the page as
    displayed: quarter turns ``run.turns`` counter-clockwise made it upright, so it runs ``90 * turns``
    degrees clockwise."""
    import pymupdf

    x0, y0, x1, y1 = (
        run.box[0] * frame.scale_x,
        run.box[1] * frame.scale_y,
        run.box[2] * frame.scale_x,
        run.box[3] * frame.scale_y,
    )
    clockwise = (90 * run.turns) % 360
    along, across = (x1 - x0, y1 - y0) if clockwise in (0, 180) else (y1 - y0, x1 - x0)
    width_em = font.width_em(text)
    if along <= 0 or across <= 0 or width_em <= 0:
        return None
    size = along / width_em
    if not run.own_line:  # a share of a block's box: the glyphs stand within it
        size = min(size, across / max(font.font.ascender - font.font.descender, 1.0))
    size = max(MIN_FONT_SIZE, min(size, MAX_HEIGHT_RATIO * across))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    shift = font.middle_em * size  # baseline below the middle, "below" as the glyphs stand
    start = {
        0: (x0, cy + shift),
        90: (cx - shift, y0),
        180: (x1, cy - shift),
        270: (cx + shift, y1),
    }[clockwise]
    point = pymupdf.Point(*start) * frame.derotation
    unrotated = (clockwise - frame.rotation) % 360  # clockwise, in the page's unrotated space
    stretch = along / (width_em * size)
    morph = None
    if stretch > 1.01:
        ux, uy = {0: (1, 0), 90: (0, 1), 180: (-1, 0), 270: (0, -1)}[unrotated]
        k = stretch - 1
        morph = (point, pymupdf.Matrix(1 + k * ux * ux, k * ux * uy, k * ux * uy, 1 + k * uy * uy, 0, 0))
    return point, size, (360 - unrotated) % 360, morph  # PyMuPDF turns text counter-clockwise


__all__ = ["FontBook", "PageFrame", "RunFont", "draw_runs", "frame_of"]
