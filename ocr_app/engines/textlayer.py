"""The PDF text layer as an engine: exact text, positions and font sizes, no OCR.

Why: born-digital PDFs already carry their text. Reading it is exact and takes milliseconds, where
OCR takes seconds and makes mistakes. PyMuPDF gives every line with its box and font size; the shared
layout logic (``engines.layout``) turns them into the same blocks the OCR engines produce.

``has_usable_text`` decides whether a page's text layer is worth using (the router calls it). A page
is NOT usable when it has fewer than ``min_chars`` characters, when more than
``MAX_GARBAGE_RATIO`` of its characters are replacement / private-use / control characters, or fewer
than half are letters or digits (fonts without a Unicode map give such text), or when most of its text is
invisible (PDF render mode 3) and an image covers most of the page: that is somebody else's OCR layer
over a scan, of unknown quality and without layout, so we OCR the page ourselves. The policy
``always`` in the router overrides this and uses any text that is there.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import logging
import os
import re
import statistics
import threading
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ocr_app.choices import engine_kind
from ocr_app.engine_api import Capabilities, Engine
from ocr_app.engines import raster_tables
from ocr_app.engines.drawing_clusters import cluster_drawings, holding_text
from ocr_app.engines.letter_spacing import drop_tracking_spaces
from ocr_app.engines.overprint import drop_overprints
from ocr_app.engines.paint import invisible, shown_drawings
from ocr_app.engines.rtl_order import is_rtl_span, logical_order
from ocr_app.exceptions import CorruptFileError, EncryptedDocumentError, EngineUnavailableError, InputError
from ocr_app.schema import Block, Box, EngineOutput, PageRequest, StopReason, valid_unicode
from ocr_app.structure.cell_lines import BULLET, set_apart, set_between, wrapped
from ocr_app.structure.docprofile import DocumentProfile, Rule, build_profile, margin_rows, over_text
from ocr_app.structure.headings import NOTE_LINE, NUMBERED_HEADING
from ocr_app.structure.justified import join_justified
from ocr_app.structure.lines import (
    LayoutConfig,
    Row,
    TextLine,
    body_size,
    channels,
    group_rows,
    is_rtl,
    rotate_box,
    stacked_runs,
    unrotate_box,
)
from ocr_app.structure.paragraphs import CAPTION, join_lines
from ocr_app.structure.passes.tables import detect_tables
from ocr_app.structure.pipeline import build_blocks
from ocr_app.structure.regions import overlap
from ocr_app.structure.rule_frames import joined, rule_frames
from ocr_app.structure.stacked_frames import split_at_frames
from ocr_app.structure.table_gate import worth_looking
from ocr_app.structure.table_html import Cell, header_rows, join_cell_lines
from ocr_app.structure.table_model import available as learned_tables_available

if TYPE_CHECKING:
    import pymupdf
    from PIL import Image

    from ocr_app.settings import Settings
    from ocr_app.structure.learned_tables import LearnedTable
    from ocr_app.structure.regions import Region

logger = logging.getLogger(__name__)

MIN_CHARS = 20
TEXT_LABELS = ("text", "reference", "title")  # layout-model boxes of text (the tables pass's veto)
TABLE_ROWS = 3  # a drawn grid of this many rows is a table: its lines are no running header or footer
MIN_TABLE_FILL = 0.4  # a ruled grid with fewer filled cells is a form, not a table
PROFILE_CACHE = 4  # documents whose profile is kept (a batch converts a few files at a time)
MANY_PATHS = 2_000  # drawings past which only their clusters that hold a word go to the table finder
MAX_GARBAGE_RATIO = 0.1
# Vector content beyond which figures and ruled tables are not looked for: PyMuPDF hands every path to
# Python as a dict (≈ 1 µs and ≈ 1 KB each), so a page of 4 million tiny rectangles (63 MiB of content,
# rendered in a child process under a time limit) held the text layer for minutes and gigabytes, while its
# text reads in 1.5 s. Real pages, tables and charts included, draw well under 1 MiB.
_VECTOR_SCAN_BYTES = 4 * 2**20
_BOLD_FLAG = 16
# ``char_flags`` of a span (PyMuPDF ≥ 1.25, with TEXT_COLLECT_STYLES): glyphs both filled and stroked are
# "fake bold", a regular face thickened by an outline (Word's bold for fonts without a bold cut, many
# scanned-and-retyped forms); stroked alone is outlined display type, not bold.
_GLYPHS_FILLED = 16
_GLYPHS_STROKED = 32
# MuPDF's style collection also cuts spans where styles change, which moved right-to-left glyph order on
# docling's test pages: so the lines are read as before, and only pages whose content sets that render
# mode ("2 Tr") are read a second time for where the stroked spans lie (``_stroked_boxes``).
_FILL_AND_STROKE = re.compile(rb"(?<![\d.])2\s+Tr\b")
_MONO_FLAG = 8
_MONO_FONTS = re.compile(
    r"mono|nimbusmon|courier|consol|menlo|inconsolata|cmtt|sfmono|lucidaconsole|code", re.I
)
MAX_CODE_SHARE = 0.6  # a page with more monospaced text than this is typewritten, not code
SCRIPT_SIZE = 0.85  # a superscript/subscript is set at most this × the line's main size
SCRIPT_SHIFT = 0.12  # ... with its baseline at least this × the main size above/below the main one
TALL_LINE = 1.8  # a line box taller than this × its type size comes from a font's box, not its glyphs
_ITALIC_FLAG = 2
# Runs of one repeated punctuation mark (dot leaders, rules): layout, not evidence of garbage. A page
# of nothing but "·····" (what unmapped glyphs extract as) has no content left and fails the check.
_LEADERS = re.compile(r"([.·\-_…•=*])(?:\s*\1){2,}")


@dataclass
class TextLayerReport:
    """What a page's text layer holds, for the usability decision."""

    chars: int = 0  # non-whitespace characters, visible or not
    visible_chars: int = 0
    garbage_chars: int = 0
    alnum_chars: int = 0  # letters and digits of any script
    content_chars: int = 0  # non-space characters outside leader runs (". . . ." in a table of contents)
    image_coverage: float = 0.0  # fraction of the page area covered by images (capped at 1)
    # Nothing on the page but its text: no picture, annotation or form field, and no drawing that could
    # be lettering (``_bare``). Only asked of pages with less than ``MIN_CHARS`` characters.
    bare: bool = False

    @property
    def garbage_ratio(self) -> float:
        return self.garbage_chars / self.chars if self.chars else 0.0

    @property
    def invisible_ratio(self) -> float:
        return 1 - self.visible_chars / self.chars if self.chars else 0.0


def _is_garbage(ch: str) -> bool:
    if ch == "\ufffd":
        return True
    cat = unicodedata.category(ch)
    # Cc/Cf/Cs/Co/Cn: control, format, surrogate, private use, unassigned — unmapped glyphs land here.
    return cat.startswith("C")


PROFILE_MAX_CONTENT = 16 * 2**20  # inflated content bytes of a page the document profile reads


def _heavy(page: pymupdf.Page) -> bool:
    """A page whose content inflates past ``PROFILE_MAX_CONTENT`` (reading its text takes seconds; a
    decompression bomb takes minutes): the document profile samples the other pages."""
    from ocr_app.ingest.pdf_guard import content_bytes

    return content_bytes(page, PROFILE_MAX_CONTENT) > PROFILE_MAX_CONTENT


def _open(pdf_path: Path | str, password: str | None = None) -> pymupdf.Document:
    """Open a PDF for reading its text; ``password`` unlocks an encrypted one (never logged)."""
    from ocr_app.ingest.pdf import import_pymupdf

    pymupdf = import_pymupdf()

    try:
        doc = pymupdf.open(str(pdf_path))
    except (FileNotFoundError, pymupdf.FileNotFoundError) as exc:
        raise InputError(f"{pdf_path}: file not found") from exc
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise CorruptFileError(f"{Path(pdf_path).name}: cannot be read as a PDF ({exc})") from exc
    if doc.needs_pass and not (password and doc.authenticate(password)):
        doc.close()
        why = "the password given is wrong" if password else "pass its password (--password in the CLI)"
        raise EncryptedDocumentError(f"{Path(pdf_path).name}: the PDF is encrypted; {why}")
    return doc


def _page(doc: pymupdf.Document, index: int, name: str) -> pymupdf.Page:
    if not 0 <= index < doc.page_count:
        raise InputError(f"{name}: page {index + 1} does not exist (the PDF has {doc.page_count} pages)")
    return doc[index]


def inspect_page(page: pymupdf.Page) -> TextLayerReport:
    """Count visible, invisible and garbage characters and the image coverage of one page."""
    report = TextLayerReport()
    texts: list[str] = []
    for span in page.get_texttrace():
        text = "".join(chr(c[0]) for c in span["chars"] if c[0] >= 0)
        n = sum(1 for ch in text if not ch.isspace())
        report.chars += n
        if span["type"] != 3 and span.get("opacity", 1.0) > 0:
            report.visible_chars += n
        report.garbage_chars += sum(1 for ch in text if not ch.isspace() and _is_garbage(ch))
        report.alnum_chars += sum(1 for ch in text if ch.isalnum())
        texts.append(text)
    content = _LEADERS.sub("", " ".join(texts))
    report.content_chars = sum(1 for ch in content if not ch.isspace())
    area = abs(page.rect) or 1.0
    covered = 0.0
    for info in page.get_image_info():
        bbox = page.rect & info["bbox"]
        covered += abs(bbox) if not bbox.is_empty else 0.0
    report.image_coverage = min(covered / area, 1.0)
    if report.chars < MIN_CHARS and covered == 0.0:
        report.bare = _bare(page)
    return report


BARE_PATHS = 50  # a page drawing more lines and boxes than this may hold lettering in them (a pixel font)
# ... and a page drawing more content than this is not looked through for them: 50 of them and 20
# characters take a few KiB, while a page of millions of paths (63 MiB) must not be walked here, where
# no time limit holds (its render runs in a child process that has one).
BARE_BYTES = 64 * 2**10


def _bare(page: pymupdf.Page) -> bool:
    """Whether a page without pictures shows nothing that OCR could read and its text layer lacks: no
    annotation (links aside) or form field, whose text is drawn but not in the page's text, and at most
    ``BARE_PATHS`` straight lines and rectangles drawn (outlined type is drawn in curves, a pixel font
    in many small squares).

    Why: a page with a few words or none went to OCR, which on such a page can only find what the text
    layer holds. A blank page cost the light engine 1.2 CPU s (two detections, the second looking for
    lines the first missed) and a title slide 0.7-1.0, against 0.03 for the text layer; on a GPU it
    cost a model call that may invent text for a blank page."""
    from ocr_app.ingest.pdf_guard import content_bytes

    if page.first_annot is not None or page.first_widget is not None:
        return False
    try:
        if content_bytes(page, BARE_BYTES) > BARE_BYTES:
            return False
        paths = page.get_cdrawings()
    except Exception as exc:  # drawings that cannot be read: let OCR look at the page
        logger.debug("drawings unreadable: %s", exc)
        return False
    items = [item[0] for path in paths for item in path.get("items", ())]
    return len(items) <= BARE_PATHS and all(kind in ("l", "re", "qu") for kind in items)


def judge(
    report: TextLayerReport, *, min_chars: int = MIN_CHARS, downscaled: bool = False
) -> tuple[bool, str]:
    """The usability decision for one page's report, with a reason for the UI/JSON.

    ``downscaled``: the page was rendered below the DPI asked for, because it is too large for the
    render budget (a 14,400 pt poster fits 60 MP at 38 DPI, where 11 pt text is 6 px high). OCR cannot
    read it there, so any real text layer beats it — a short one, or an invisible OCR layer.
    """
    # A page that shows nothing but its few characters (``bare``; all of them visible) is read from its
    # text layer: OCR could find nothing more there.
    plain = report.bare and report.visible_chars == report.chars
    if report.chars == 0:
        if plain:
            return True, "a blank page: no text, picture or drawing that OCR could read"
        return False, "no embedded text"
    low_chars = report.chars < min_chars
    if low_chars and not downscaled and not plain:
        return False, f"only {report.chars} characters of embedded text"
    if report.garbage_ratio > MAX_GARBAGE_RATIO:
        return False, f"embedded text is garbage ({report.garbage_ratio:.0%} unmapped characters)"
    if report.alnum_chars < 0.5 * max(report.content_chars, 1):
        return (
            False,
            f"embedded text is mostly symbols ({report.alnum_chars} of {report.chars} are letters/digits)",
        )
    scanned = report.invisible_ratio > 0.5 and report.image_coverage > 0.5
    if scanned and not downscaled:
        return False, "only an invisible OCR layer over a scanned image"
    if downscaled and (low_chars or scanned):
        return (
            True,
            f"{report.chars:,} chars of embedded text; the page is too large to OCR at the DPI asked for",
        )
    if low_chars and not downscaled:
        return (
            True,
            f"{report.chars:,} chars of embedded text and nothing else on the page that OCR could read",
        )
    return True, f"{report.chars:,} chars of embedded text"


def inspect_report(pdf_path: Path | str, index: int, *, password: str | None = None) -> TextLayerReport:
    """The text-layer report of page ``index`` of a PDF."""
    with _open(pdf_path, password) as doc:
        return inspect_page(_page(doc, index, Path(pdf_path).name))


def has_usable_text(
    pdf_path: Path | str, index: int, *, min_chars: int = MIN_CHARS, password: str | None = None
) -> tuple[bool, str]:
    """Whether page ``index`` of the PDF has a text layer worth using instead of OCR, and why."""
    return judge(inspect_report(pdf_path, index, password=password), min_chars=min_chars)


_WEIGHT_WORDS = (
    ("thin", 100),
    ("hairline", 100),
    ("extralight", 200),
    ("ultralight", 200),
    ("light", 300),
    ("medium", 500),
    ("semibold", 600),
    ("demibold", 600),
    ("demi", 600),
    ("extrabold", 800),
    ("ultrabold", 800),
    ("heavy", 800),
    ("black", 900),
    ("bold", 700),
    ("bd", 700),
    ("bx", 700),  # TeX: cmbx, SFBX
)
_SYMBOL_FONTS = re.compile(r"wingding|dingbat|zapf|webding", re.I)  # every glyph is a picture
# Fonts of Greek letters and operators only (Symbol, MT Extra, TeX's math fonts): they have no bold or
# italic cut, so a "β" set in one inside a bold caption says nothing about the caption's weight.
_MATH_FONTS = re.compile(
    r"^(?:symbol|mt-?extra|cmsy|cmmi|cmex|msam|msbm|euclid ?symbol|mathematicalpi)", re.I
)
_TYPE3_FONT = re.compile(r"^Type3\b")  # PyMuPDF names a Type3 font "Type3 (7 0 R)": no weight known


def _stroked_bold(span: dict) -> bool:
    """A span drawn filled and outlined: a regular face made bold by its stroke (see ``_GLYPHS_STROKED``)."""
    both = _GLYPHS_FILLED | _GLYPHS_STROKED
    return span.get("char_flags", 0) & both == both


def _stroked_boxes(page: pymupdf.Page) -> list[tuple[float, float, float, float]]:
    """The boxes (points) of the page's spans drawn filled and stroked; none unless its content sets
    that render mode, or where PyMuPDF cannot tell (older than 1.25)."""
    import pymupdf

    collect = getattr(pymupdf, "TEXT_COLLECT_STYLES", 0)
    if not collect or not _FILL_AND_STROKE.search(page.read_contents()):
        return []
    data = page.get_text("dict", flags=pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES | collect)
    return [
        tuple(span["bbox"])
        for block in data["blocks"]
        for line in block.get("lines", [])
        for span in line["spans"]
        if _stroked_bold(span)
    ]


def _in_stroked(span: dict, boxes: list[tuple[float, float, float, float]]) -> bool:
    """Whether the middle of ``span``'s box lies in one of ``boxes`` (``_stroked_boxes``)."""
    if not boxes:
        return False
    x0, y0, x1, y1 = span["bbox"]
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return any(b[0] <= cx <= b[2] and b[1] <= cy <= b[3] for b in boxes)


SMALL_MARK_RATIO = 0.85  # punctuation this much smaller than the line's words is a mark beside them


def _size_weights(words: list[tuple[dict, str]]) -> list[int]:
    """Each piece's weight in its line's size: its characters, but none for a piece of punctuation
    alone set clearly smaller than the line's words (the Reference's grey "[*]" anchor before each of
    its headings pulled an ``<h3>`` at 14 pt under the heading ratio)."""
    weights = [len(t.strip()) for _, t in words]
    worded = [s["size"] for s, t in words if any(c.isalnum() for c in t)]
    if not worded:
        return weights
    small = SMALL_MARK_RATIO * max(worded)
    out = [
        0 if s["size"] < small and not any(c.isalnum() for c in t) else w
        for (s, t), w in zip(words, weights, strict=True)
    ]
    return out if any(out) else weights


def font_weight(font: str, flags: int) -> int:
    """A CSS-like weight from the font name ("KoPubDotumMedium" → 500) and PyMuPDF's bold flag."""
    name = font.split("+")[-1].lower().replace("-", "").replace("_", "")
    style = name[len(name) // 3 :]  # the style part follows the family name ("helveticabold")
    weight = 400
    for word, w in _WEIGHT_WORDS:
        if word in style:
            weight = w
            break
    if flags & _BOLD_FLAG:
        weight = max(weight, 700)
    return weight


_STYLE_WORDS = re.compile(
    r"(?:[-_,]?(?:bold|italic|oblique|regular|roman|book|medium|light|thin|black|heavy|semi|demi|extra|ultra|"
    r"condensed|cond|narrow|mt|ps|std|pro|lt|com|it|bd|bx))+$"
)


def font_family(font: str) -> str:
    """A font's family without subset prefix and style ("ABCDEF+BNazaninBold" → "bnazanin")."""
    name = font.split("+")[-1].lower().replace(" ", "")
    family = _STYLE_WORDS.sub("", name)
    return family or name


_ALEFS = "\u0627\u0623\u0625\u0622"
_LAM = "\u0644"
# A gap between two glyphs of at least this × font size, and this much wider than the span's usual
# gap between glyphs (letter-spaced text), is a word space. MuPDF puts spaces at ~0.16 em itself;
# words set with 0.12–0.16 em between them (tight justified lines) would run together.
SPACE_GAP = 0.12
_NO_SPACE_BEFORE = ".,;:!?)]}%"  # dot leaders and closing punctuation: never a word space before them


def _chars_text(span: dict) -> str:
    """A span's text from its glyphs, mending two things text extraction gets wrong.

    - Arabic lam-alef ligatures that the font's Unicode map splits as a zero-width alef *before*
      the lam ("اإل" for "الإ"): the pair is put back in logical order.
    - Words set without space glyphs (each word positioned on its own): a gap of at least
      ``SPACE_GAP`` × the font size between two glyphs becomes a space.
    """
    chars = span.get("chars")
    if not chars:
        return span.get("text", "")
    size = span.get("size", 10.0) or 10.0
    gaps = sorted(
        b["bbox"][0] - a["bbox"][2]
        for a, b in itertools.pairwise(chars)
        if not a["c"].isspace() and not b["c"].isspace() and b["bbox"][0] >= a["bbox"][0]
    )
    tracking = max(gaps[len(gaps) // 2], 0.0) if gaps else 0.0  # letter-spacing of the span
    space_gap = max(SPACE_GAP * size, tracking + 0.1 * size)
    out: list[str] = []
    prev = None
    k = 0
    while k < len(chars):
        ch = chars[k]
        c = ch["c"]
        box = ch["bbox"]
        if c in _ALEFS and box[2] - box[0] < 0.05 * size and k + 1 < len(chars) and chars[k + 1]["c"] == _LAM:
            out.append(_LAM + c)
            prev = chars[k + 1]
            k += 2
            continue
        if prev is not None and not c.isspace() and not prev["c"].isspace() and out:
            pb = prev["bbox"]
            ltr = box[0] >= pb[0]
            gap = box[0] - pb[2] if ltr else pb[0] - box[2]
            if gap >= space_gap and ltr and c not in _NO_SPACE_BEFORE and prev["c"] not in "([{":
                out.append(" ")
        out.append(c)
        prev = ch
        k += 1
    return "".join(out)


def _span_text(span: dict, first: bool) -> str:
    """A span's text with symbol-font glyphs and control characters resolved.

    Why: Wingdings/Dingbats check boxes and bullets, and fonts that map their bullet to a control
    character (U+0002, U+0084), are list markers when they start a line and noise anywhere else.
    """
    text = _chars_text(span)
    symbol = bool(_SYMBOL_FONTS.search(span.get("font", "")))
    out: list[str] = []
    for ch in text:
        cat = unicodedata.category(ch)
        odd = cat in ("Cc", "Co", "Cn") and ch not in "\t\n"
        if odd or (symbol and not ch.isspace() and ch not in BULLET):
            if first and not "".join(out).strip():
                out.append(BULLET)
            continue
        out.append(" " if ch == "\t" else ch)
    return "".join(out)


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" and ch not in "\t\n\r"


def _marker_spans(texts: list[str]) -> int:
    """How many spans at the start of a line are one marker glyph: at most one visible character
    with a control character ("r" + U+0001 from a check-box font that claims to be a text font),
    followed by the item's text. 0 when the line does not start so."""
    visible = 0
    control = False
    for k, text in enumerate(texts[:3]):
        visible += sum(1 for ch in text if not ch.isspace() and not _is_control(ch))
        control = control or any(_is_control(ch) for ch in text)
        if visible > 1:
            return 0
        rest = "".join(texts[k + 1 :])
        if control and sum(1 for ch in rest if ch.isalnum()) >= 2:
            return k + 1
    return 0


def _turns(direction: tuple[float, float], rotation: pymupdf.Matrix) -> int:
    """Quarter turns (counter-clockwise) that make a line with writing ``direction`` (PDF space)
    read left to right on the displayed page: 0 upright, 1 running down, 2 upside down, 3 up."""
    dx, dy = direction
    x = rotation.a * dx + rotation.c * dy
    y = rotation.b * dx + rotation.d * dy
    if abs(x) >= abs(y):
        return 0 if x >= 0 else 2
    return 1 if y > 0 else 3


def page_turns(lines: Sequence[TextLine]) -> int:
    """The page's reading orientation: the turns of most of its characters."""
    weight = collections.Counter()
    for ln in lines:
        weight[ln.turns] += len(ln.text)
    return weight.most_common(1)[0][0] if weight else 0


def extract_lines(page: pymupdf.Page, scale: float, *, typescript: bool = True) -> list[TextLine]:
    """PyMuPDF lines → ``TextLine`` in display pixels (rotation applied, points × ``scale``).
    ``typescript``: whether a page set mostly in a monospaced font may be a typescript (``_typewritten``);
    False where the document's body font is proportional: a manual's page of listings is code."""
    return place_lines(read_lines(page), page, scale, typescript=typescript)


def place_lines(
    read: Sequence[TextLine], page: pymupdf.Page, scale: float, *, typescript: bool = True
) -> list[TextLine]:
    """``read_lines``'s lines in display pixels: each a new line (the read ones stay as they are, so one
    read serves the document's profile at 1 pt and the page at its pixels), then typescripts and
    justified lines mended (``extract_lines``).

    Why the read is kept in points and placed here: the profile reads the pages of a short document
    too, and reading a page is most of a plain page's cost (0.04 CPU s); the numbers come out as
    before because every coordinate goes through the same product with the same matrix."""
    import pymupdf

    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    a, e = matrix.a, matrix.e
    lines = [
        replace(
            ln,
            box=tuple(pymupdf.Rect(ln.box) * matrix),
            size=ln.size * scale,
            caps_size=ln.caps_size * scale,
            ink=tuple(v * a + e for v in ln.ink),
            words=tuple((x0 * a + e, x1 * a + e) for x0, x1 in ln.words),
        )
        for ln in read
    ]
    return join_justified(_typewritten(lines) if typescript else lines)


def read_lines(page: pymupdf.Page) -> list[TextLine]:
    """The page's text lines as PyMuPDF gives them, in page points before the page's rotation
    (``box``: the type band; ``ink``, ``words``: x-ranges where the line is upright on the displayed
    page); ``place_lines`` puts them on the displayed page."""
    import pymupdf

    rotation = page.rotation_matrix
    rotated = page.rotation != 0
    # Ligature glyphs ("ﬁ", "ﬂ") come out as their letters: a reader searches "figure", not "ﬁgure".
    flags = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
    stroked = _stroked_boxes(page)  # fake bold: regular glyphs filled and outlined
    lines: list[TextLine] = []
    data = page.get_text("rawdict", flags=flags)
    drop_hidden(page, data["blocks"])
    drop_overprints(data["blocks"])  # a shadow or a fake bold's second print: one word, not two
    for block in data["blocks"]:
        for line in block.get("lines", []):
            texts: list[str] = []
            spans = line["spans"]
            for span in spans:  # right-to-left glyphs in the order they are read, not written
                chars = span.get("chars")
                if chars and is_rtl_span(chars):
                    span["chars"] = logical_order(chars, span.get("size", 10.0) or 10.0)
            drop_tracking_spaces(spans)
            short_start = bool(spans) and len(spans[0].get("chars", ())) <= 3
            marker = _marker_spans([_chars_text(span) for span in spans]) if short_start else 0
            for k, span in enumerate(line["spans"]):
                if k < marker:
                    texts.append(BULLET + " " if k == 0 else "")
                    continue
                texts.append(_span_text(span, first=not "".join(texts).strip()))
            kept = [(s, t) for s, t in zip(line["spans"], texts, strict=True) if t.strip()]
            if not kept:
                continue
            text = " ".join("".join(_mark_scripts(line, texts)).split())
            words = [(s, t) for s, t in kept if t.strip() != BULLET] or kept
            weights = _size_weights(words)
            size = sum(s["size"] * w for (s, _), w in zip(words, weights, strict=True)) / sum(weights)
            caps = small_caps_size([(s["size"], t) for s, t in words])
            # Weight and slant are the words': a math font's, or a leading anchor's, say nothing of
            # the line's; nor, mostly, does a Type3 font's (``_past_type3``).
            styled = [(s, t) for s, t in words if not _MATH_FONTS.match(s["font"].split("+")[-1])] or words
            styled = _past_type3(styled)
            styled = _past_anchor(styled)
            bold = all(
                s["flags"] & _BOLD_FLAG or "bold" in s["font"].lower() or _in_stroked(s, stroked)
                for s, _ in styled
            )
            weight = min(
                max(font_weight(s["font"], s["flags"]), 700 if _in_stroked(s, stroked) else 0)
                for s, _ in styled
            )
            italic = all(s["flags"] & _ITALIC_FLAG or "italic" in s["font"].lower() for s, _ in styled)
            box = _type_band(line)
            turns = _turns(line.get("dir", (1.0, 0.0)), rotation)
            mono = all(_mono_span(s) for s, _ in words)
            if mono:  # code: its indentation and inner spacing are content
                text = "".join(_mark_scripts(line, texts)).rstrip()
            main = max(words, key=lambda w: len(w[1].strip()))[0]
            inks: collections.Counter[int] = collections.Counter()
            for sp, t in words:
                inks[int(sp.get("color", -1))] += len(t.strip())
            glyphs = [
                c["bbox"]
                for sp, t in kept
                if t.strip() != BULLET
                for c in sp.get("chars", ())
                if not c["c"].isspace()
            ]
            upright = not rotated and turns == 0
            ink = (min(g[0] for g in glyphs), max(g[2] for g in glyphs)) if glyphs and upright else ()
            text = valid_unicode(text)  # half a surrogate pair from a broken font map: U+FFFD
            boxes = _word_ranges(text, glyphs) if upright else ()
            lines.append(
                TextLine(
                    text,
                    box,
                    size,
                    bold,
                    weight,
                    italic,
                    turns=turns,
                    font=font_family(main["font"]),
                    ink=ink,
                    mono=mono,
                    words=boxes,
                    color=inks.most_common(1)[0][0],
                    caps_size=caps,
                )
            )
    return lines


def _past_type3(styled: list[tuple[dict, str]]) -> list[tuple[dict, str]]:
    """The words that set a line's weight: without its Type3 spans where the others are upright and
    hold a quarter of its letters or more. Why: a Type3 font carries no weight, and Chromium draws
    mdBook's inline code in one, so "Handling Multiple Conditions with `else if`" was a regular line;
    "The `target_feature` attribute" is a bold title too. An option's term, "`--color`" beside its
    italic placeholder "when", and a title's line mostly in code, "`thumbv8m.main-none-eabi` and",
    keep their Type3 spans (the term stays a term; the title's two lines keep one weight)."""
    known = [(s, t) for s, t in styled if not _TYPE3_FONT.match(s["font"])]
    if len(known) == len(styled) or not known:
        return styled  # no Type3 span (nearly every line), or nothing but
    if any(s["flags"] & _ITALIC_FLAG or "italic" in s["font"].lower() for s, _ in known):
        return styled
    letters = sum(len(t.strip()) for _, t in known)
    return known if 4 * letters >= sum(len(t.strip()) for _, t in styled) else styled


def _mono_span(span: dict) -> bool:
    """Whether a span is set in a typewriter face: by its font's fixed-pitch flag or its name."""
    return bool(span["flags"] & _MONO_FLAG or _MONO_FONTS.search(span["font"]))


def _past_anchor(spans: list[tuple[dict, str]]) -> list[tuple[dict, str]]:
    """The spans after a leading anchor mark: a first span with no letter or digit, set smaller and
    in another colour than the next one (the Rust Reference's grey "[*]" link before each bold rule
    title, which made the title's line regular). A mark in the words' own colour ("+" before a
    command-line option's name) or trailing punctuation stays."""
    if len(spans) < 2 or any(c.isalnum() for c in spans[0][1]):
        return spans
    mark, word = spans[0][0], spans[1][0]
    smaller = mark.get("size", 0) <= 0.9 * word.get("size", 0)
    return spans[1:] if smaller and mark.get("color") != word.get("color") else spans


def _type_band(line: dict) -> tuple[float, float, float, float]:
    """A horizontal line's box, its height cut to its type's ascent and descent where the box is
    far taller than the type.

    Why: a symbol font's bullet can report its font's whole box, two or three times the type size
    tall and centred above the baseline; such a marker then shares no row with the words it leads
    and a cell's list reads as a column of marks beside a column of text."""
    x0, y0, x1, y1 = line["bbox"]
    spans = line["spans"]
    dx, dy = line.get("dir", (1.0, 0.0))
    if not spans or dx <= 0 or abs(dy) > 1e-3:
        return x0, y0, x1, y1
    if y1 - y0 <= TALL_LINE * max(s["size"] for s in spans):
        return x0, y0, x1, y1
    top = min(s["origin"][1] - s.get("ascender", 0.8) * s["size"] for s in spans)
    bottom = max(s["origin"][1] - s.get("descender", -0.2) * s["size"] for s in spans)
    if not y0 <= top < bottom <= y1:
        return x0, y0, x1, y1
    return x0, top, x1, bottom


def drop_hidden(page: pymupdf.Page, blocks: list[dict]) -> None:
    """Remove, in place, the spans no reader of the page sees: invisible glyphs (render mode 3 or no
    opacity; PyMuPDF's ``alpha`` 0) that lie on no image, on a page whose text is mostly visible.

    Why: an OCR layer is invisible text over a scan's image and stays; but a born-digital page can carry
    hidden marks too (a producer's 100 pt "zy" beside the header, a hidden watermark), which were read
    as words, joined to the page number and made it a heading. A page whose text is all invisible and
    over no image (text drawn as outlines with a hidden text layer for search) keeps it: it is the
    only text there is."""
    spans = [s for b in blocks for ln in b.get("lines", []) for s in ln["spans"]]

    def count(span: dict) -> int:
        return sum(1 for c in span.get("chars", ()) if not c["c"].isspace())

    hidden = sum(count(s) for s in spans if s.get("alpha", 255) == 0)
    if not hidden or hidden >= sum(count(s) for s in spans) - hidden:
        return
    images = [tuple(info["bbox"]) for info in page.get_image_info()]

    def seen(span: dict) -> bool:
        if span.get("alpha", 255) != 0:
            return True
        x0, y0, x1, y1 = span["bbox"]
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        return any(b[0] <= cx <= b[2] and b[1] <= cy <= b[3] for b in images)

    for block in blocks:
        for line in block.get("lines", []):
            line["spans"] = [s for s in line["spans"] if seen(s)]


SMALL_CAPS_RATIO = (0.55, 0.85)  # a small capital's size against the capitals'


def small_caps_size(spans: Sequence[tuple[float, str]]) -> float:
    """The capitals' size when a line's spans are set in small capitals, else 0: words that start
    with a capital at one size and go on in letters of one case at a size 0.55-0.85 of it ("A" +
    "bstract", "I. I" + "NTRODUCTION"), as browsers, word processors and LaTeX fake small capitals.
    At least three small letters, and no other sizes: a footnote mark or a subscript is no style."""
    lettered = [(size, text) for size, text in spans if any(c.isalpha() for c in text)]
    if len(lettered) < 2:
        return 0.0
    big = max(size for size, _ in lettered)
    small = [
        text for size, text in lettered if SMALL_CAPS_RATIO[0] * big <= size <= SMALL_CAPS_RATIO[1] * big
    ]
    capitals = [text for size, text in lettered if size > SMALL_CAPS_RATIO[1] * big]
    if len(small) + len(capitals) < len(lettered) or sum(c.isalpha() for t in small for c in t) < 3:
        return 0.0
    one_case = all(
        all(c.islower() for c in t if c.isalpha()) or all(c.isupper() for c in t if c.isalpha())
        for t in small
    )
    starts = all(c.isupper() for t in capitals for c in t if c.isalpha())
    return big if small and capitals and one_case and starts else 0.0


_TAGS = re.compile(r"</?su[pb]>")
DOT_SIZE = (0.15, 0.6)  # a drawn list marker's side, as a share of its line's height
DOT_GAP = 2.5  # × the line's height: how far left of its line a drawn list marker may stand
INK_MATCH = 0.1  # a marker is drawn in its text's colour (a chart legend's keys are in the series')
TEXT_INK_SHARE = 0.2  # of a page's letters: an ink this common is a text ink, not a series colour
MAX_DOTS = 400  # a page drawing more marker-like shapes than this is a chart or a map


def _marker_ink(path: dict, items: Sequence) -> tuple[float, float, float] | None:
    """The colour of a path that may be a list's marker: a filled disc or square, or a ring (a circle
    stroked, not filled: a list inside a list, as browsers print it); None for any other path."""
    curves = bool(items) and all(it[0] == "c" for it in items)
    if path.get("type") == "f" and (curves or (len(items) == 1 and items[0][0] == "re")):
        return tuple(path["fill"][:3])
    if path.get("type") == "s" and curves and path.get("color"):
        return tuple(path["color"][:3])
    return None


def _in_column(ring: pymupdf.Rect, rings: list[pymupdf.Rect]) -> bool:
    """Whether another ring of its size stands straight above or below ``ring``: the markers of a list
    of two items or more. A ring alone is a chemical formula's charge or a drawing's node as often."""
    return any(
        r is not ring
        and abs(r.x0 - ring.x0) <= 0.5 * ring.width
        and abs(r.height - ring.height) <= 0.2 * ring.height
        and abs(r.y0 - ring.y0) > ring.height
        for r in rings
    )


Paths = list[dict] | None
# A page's ``get_cdrawings()``, read once by its pass and handed to every rule that looks at its
# drawings (ten of them did read it again: ≈ 8 reads a page); None: the rule reads it itself.


def page_drawings(page: pymupdf.Page) -> Paths:
    """The page's drawings, read once for all its rules; None where they cannot be read: each rule then
    reads them itself and meets the error where it always did (most fall back, a few give up)."""
    try:
        return page.get_cdrawings()
    except Exception as exc:
        logger.debug("drawings unavailable: %s", exc)
        return None


def _drawings(page: pymupdf.Page, paths: Paths) -> list[dict]:
    """``paths`` where the page's pass read them, else the page's own (the rules read them only)."""
    return page.get_cdrawings() if paths is None else paths


def mark_drawn_bullets(
    page: pymupdf.Page, lines: list[TextLine], scale: float, body_ink: int = -1, *, paths: Paths = None
) -> None:
    """Lines led by a list marker drawn as a shape (a small filled disc or square, or a ring with
    another over or under it, left of the line, on its first text row) start with a bullet, as if
    the marker were a glyph.

    Why: browsers printing a page to PDF (and some report tools) draw an HTML list's markers as
    little filled circles, not as text; the items' lines then had no marker and ran together into
    one paragraph. A shape counts when it is about square, ``DOT_SIZE`` of the line's height, its
    middle within the line's height, drawn in the line's own colour or in one of the page's text
    colours: its commonest, one holding ``TEXT_INK_SHARE`` of its letters, or ``body_ink``, the
    document's body text colour (a chart legend's keys are in their series' colours; an item whose
    words are mostly links or typed names, as Node.js's "• message <string> | <Error>", is mostly in
    theirs, and on a page of contents in link blue the black names hold a quarter of the letters or
    none), and the nearest line to
    its right starts within ``DOT_GAP`` line heights. Such a line is an item, set in code or not: a
    list of command names (npm's "• preinstall") was read as a listing."""
    import pymupdf

    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    dots = []
    try:
        for path in _drawings(page, paths):
            items = path.get("items", ())
            ink = _marker_ink(path, items)
            if ink is None or invisible(path):
                continue
            r = pymupdf.Rect(path["rect"]) * matrix
            if r.height > 0 and 0.7 <= r.width / r.height <= 1.4:
                dots.append((r, ink, path.get("type") == "s"))
    except Exception as exc:  # markers are a refinement; the text must not be lost over them
        logger.debug("drawings unavailable: %s", exc)
        return
    if len(dots) > MAX_DOTS:
        return  # a scatter plot or a map: its dots are no list's markers, and pairing them would cost
    rings = [r for r, _, ring in dots if ring]
    inks: collections.Counter[int] = collections.Counter()
    for ln in lines:
        inks[ln.color] += len(ln.text)
    text_inks = [c for c, n in inks.most_common() if c >= 0 and n >= TEXT_INK_SHARE * inks.total()]
    text_inks += [c for c, _ in inks.most_common(1) if c >= 0 and c not in text_inks]
    text_inks += [body_ink] if body_ink >= 0 and body_ink not in text_inks else []

    def inked(color: int, fill: tuple[float, float, float]) -> bool:
        return max(abs(a - b) for a, b in zip(channels(color), fill, strict=True)) <= INK_MATCH

    for dot, fill, ring in dots:
        mid = (dot.y0 + dot.y1) / 2
        beside = [
            ln
            for ln in lines
            if ln.turns == 0
            and (ln.color < 0 or inked(ln.color, fill) or any(inked(c, fill) for c in text_inks))
            and ln.box[1] <= mid <= ln.box[3]
            and DOT_SIZE[0] * (h := ln.box[3] - ln.box[1]) <= dot.height <= DOT_SIZE[1] * h
            and 0 <= ln.box[0] - dot.x1 <= DOT_GAP * h
        ]
        if not beside or (ring and not _in_column(dot, rings)):
            continue
        ln = min(beside, key=lambda ln: ln.box[0])
        if ln.text.startswith(BULLET):
            continue
        ln.text = f"{BULLET} {ln.text}"
        ln.box = (dot.x0, ln.box[1], ln.box[2], ln.box[3])
        ln.mono = False  # a list's item that names code ("• prepare"), not a listing's line


def _word_ranges(
    text: str, glyphs: list[tuple[float, float, float, float]]
) -> tuple[tuple[float, float], ...]:
    """The x-ranges of the words of ``text`` in points, glyph by glyph (glyphs in reading order, a list
    marker's excluded); () when the glyphs and the text's characters do not pair up one to one
    (a dropped symbol glyph, a resolved control character)."""
    tokens = text.split()
    if tokens[:1] == [BULLET]:
        tokens = tokens[1:]
    counts = [len(_TAGS.sub("", t)) for t in tokens]
    if not tokens or sum(counts) != len(glyphs) or not all(counts):
        return ()
    out: list[tuple[float, float]] = []
    k = 0
    for n in counts:
        run = glyphs[k : k + n]
        k += n
        out.append((min(g[0] for g in run), max(g[2] for g in run)))
    if text.split()[:1] == [BULLET]:
        out.insert(0, (out[0][0], out[0][0]))  # the marker: no glyph of its own here
    return tuple(out)


_CODE_LINE = re.compile(r"[;{}=]|/\*|\*/|//|^\s*#\s*(?:include|define|if|import)\b|\w\(.*\)")
CODE_LINE_SHARE = 0.5  # of a page's monospaced lines, this many that read as code make it a listing


def _typewritten(lines: list[TextLine]) -> list[TextLine]:
    """A page set mostly in a monospaced font (a typescript, a text file printed to PDF) is prose, not
    one long listing: its lines lose the code mark, so headings, lists and paragraphs still form. Not
    where most of those lines read as code (semicolons, braces, calls, comments): a manual's page that
    is one example under a sentence is a listing (Texinfo's one-page nodes). The lines that lose the
    mark keep ``typed``: the document's profile takes no body size from them (``docprofile``)."""
    total = sum(len(ln.text) for ln in lines)
    mono = [ln for ln in lines if ln.mono]
    if not total or sum(len(ln.text) for ln in mono) <= MAX_CODE_SHARE * total:
        return lines
    if sum(1 for ln in mono if _CODE_LINE.search(ln.text)) < CODE_LINE_SHARE * len(mono):
        for ln in mono:
            ln.typed = True
        for ln in lines:
            ln.mono = False
    return lines


def _mark_scripts(line: dict, texts: list[str]) -> list[str]:
    """Span texts with superscripts and subscripts wrapped in ``<sup>``/``<sub>`` (as DeepSeek-OCR-2
    writes them), so "a²" does not read "a2" and a footnote mark stays a mark.

    A span is raised or lowered when it is set smaller than the line's main text and its baseline
    sits above (superscript) or below (subscript) the main baseline. Only for horizontal lines.
    """
    spans = line["spans"]
    dx, dy = line.get("dir", (1.0, 0.0))
    if len(spans) < 2 or abs(dy) > 0.01 or dx <= 0:
        return texts
    main = max(spans, key=lambda sp: len(sp.get("chars") or sp.get("text") or ""))
    size, base = main["size"], main["origin"][1]
    out: list[str] = []
    for span, text in zip(spans, texts, strict=True):
        core = text.strip()
        if not core or span["size"] > SCRIPT_SIZE * size or span is main:
            out.append(text)
            continue
        shift = span["origin"][1] - base
        tag = "sup" if shift < -SCRIPT_SHIFT * size else "sub" if shift > SCRIPT_SHIFT * size else None
        if tag is None:
            out.append(text)
            continue
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
        out.append(f"{lead}<{tag}>{core}</{tag}>{trail}")
    return out


def _has_rulings(page: pymupdf.Page, minimum: int = 6, *, paths: Paths = None) -> bool:
    """Whether the page draws enough lines/rectangles to hold a ruled table, and anything that may
    rule a column (cheap gate: ``find_tables`` costs up to 0.4 CPU s a page, most of it reading the
    page's characters).

    Why the column: a page whose drawings are level strokes alone (rules under heads, above
    footnotes, under links; a table ruled across only, which the word rules and the layout model
    read) gives PyMuPDF's finder no upright edge, so no grid of two columns. It takes an edge as
    upright wherever its ends stand at two heights, so a line that is not exactly level counts, and
    so do a closed path's closing line, a rectangle, a quad, a curve (the box of a shape may frame
    text) and any fill (``paint.shown_drawings`` hands a fill its clip cuts to the finder as a
    rectangle). 23 of ICDAR 2013's pages asked the finder for nothing this way."""
    count, column = 0, False
    for path in _drawings(page, paths):
        items = path.get("items", ())
        count += sum(1 for item in items if item[0] in ("l", "re"))
        column = column or _rules_column(path, items)
        if count >= minimum and column:
            return True
    return False


def _rules_column(path: dict, items: Sequence[tuple]) -> bool:
    """Whether a path may give the table finder an upright edge (``_has_rulings``)."""
    if path.get("fill") is not None or "f" in (path.get("type") or ""):
        return True
    if any(item[0] != "l" or item[1][1] != item[2][1] for item in items):
        return True
    return bool(path.get("closePath") and items and items[-1][2][1] != items[0][1][1])


def _lines_in(r: pymupdf.Rect, lines: list[TextLine]) -> list[TextLine]:
    return [
        ln
        for ln in lines
        if r.x0 <= (ln.box[0] + ln.box[2]) / 2 <= r.x1 and r.y0 <= (ln.box[1] + ln.box[3]) / 2 <= r.y1
    ]


Grid = list[tuple[tuple[float, float, float, float], list[list[str]]]]
# A found table: box (display pixels), rows of cells, leading header rows (0 when unknown).
TableGrid = tuple[tuple[float, float, float, float], list[list[Cell]], int]


class RuledGrid(NamedTuple):
    """A table read from its rulings (a ``TableGrid`` with one more fact). ``exact``: the rulings
    part every row and column the words show, so the grid's cells and spans are the table's: no grid
    row holds two or more cells of several text rows each, no cell holds pieces set a column gap
    apart (a shaded bar read as one cell across the table), and every grid column starts a filled
    cell (no slivers between rulings that do not line up)."""

    box: tuple[float, float, float, float]
    rows: list[list[Cell]]
    header_rows: int
    exact: bool = False


MAX_MERGED_SHARE = 0.3  # more merged cells than this share: boxes of a diagram, not a table
MAX_CELL_WORDS = 80  # a "cell" with more words is a framed text box
HEADER_WEIGHT = 600  # a row set at least this heavy all through (semibold, bold) is a header row


def _find_tables(page: pymupdf.Page) -> list:
    """``page.find_tables`` on the rulings alone, and only on the paint a reader sees
    (``paint.shown_drawings``: a listing's line backgrounds on its panel ruled no table), less the
    grounds of inline code (``_code_grounds``).

    Why ``use_layout=False``: once ``pymupdf.layout`` is imported (pymupdf4llm does it; the
    ``pymupdf-layout`` package it pulls in makes that possible), PyMuPDF gates the ruled grids by the
    layout model's own table boxes, and then returned a shrunken grid for a plain ruled table. The
    same page would give other tables depending on what is installed and what the process imported
    before; without the gate it gives one result. Older PyMuPDF (< 1.27) has no such option.
    """
    grounds = _code_grounds(page, shown := shown_drawings(page))
    shown = [p for k, p in enumerate(shown) if k not in grounds]
    if len(shown) > MANY_PATHS:
        # A figure of thousands of paths (a heat map, a plot's markers, outlined glyphs) costs the
        # finder seconds for no table: only the drawings' clusters that hold a word go to it. Below
        # this count the other clusters still nudge a table's edges (20 of the sets' 2,776 pages
        # read their grids a point or two apart without them); no page of the sets draws more than 898.
        shown = holding_text(shown, [w[:4] for w in page.get_text("words")])
        if not shown:
            return []
    try:
        return page.find_tables(strategy="lines", use_layout=False, paths=shown).tables
    except TypeError:  # PyMuPDF before the layout gate
        return page.find_tables(strategy="lines", paths=shown).tables


def _code_grounds(page: pymupdf.Page, paths: list[dict]) -> set[int]:
    """Indexes into ``paths`` of the grey grounds under inline code: a fill at most
    ``CODE_GROUND_HEIGHT`` times the type's size tall whose text is one run of monospaced words (no
    gap of a type size in it; a row's shading holds its cells apart). Its width says nothing: an
    inline box a line break cuts runs on to the line's end, and the browser draws it so.

    Why: the table finder rules a grid with every fill's edges. A code value that wraps in its cell
    (Node.js's "'iso-8859-" over "2'") has a ground on each line, and their edges cut the cell's row in
    two: the table came out with every such row split and its neighbour cell spanning both."""
    import numpy as np

    if not any(_MONO_FONTS.search(f[3]) or f[2] == "Type3" for f in page.get_fonts()):
        return set()  # no typewriter face on the page (most pages): no code, and no text to read
    spans = [
        s
        for block in page.get_text("dict", flags=0)["blocks"]
        for line in block.get("lines", ())
        for s in line["spans"]
        if s["text"].strip()
    ]
    mono = np.array([_mono_span(s) or _fixed_pitch(s) for s in spans], dtype=bool)
    if not mono.any():
        return set()
    box = np.array([s["bbox"] for s in spans], dtype=float).reshape(-1, 4)
    cx, cy = (box[:, 0] + box[:, 2]) / 2, (box[:, 1] + box[:, 3]) / 2
    size = np.array([s["size"] for s in spans], dtype=float)
    tallest = CODE_GROUND_HEIGHT * float(size[mono].max())
    out: set[int] = set()
    for k, path in enumerate(paths):
        r = path.get("rect")
        if path.get("type") != "f" or r is None or r.height > tallest:
            continue
        at = np.flatnonzero((cx >= r.x0) & (cx <= r.x1) & (cy >= r.y0) & (cy <= r.y1))
        if not at.size or not mono[at].all() or r.height > CODE_GROUND_HEIGHT * size[at].max():
            continue
        order = at[np.argsort(box[at, 0])]
        if np.all(box[order[1:], 0] - box[order[:-1], 2] <= size[at].max()):
            out.add(k)  # one run of code words: no cells side by side
    return out


CODE_GROUND_HEIGHT = 1.6
FIXED_PITCH = 0.6  # × the size: a typewriter face's advance (Courier, Liberation Mono, Source Code Pro)


def _fixed_pitch(span: dict) -> bool:
    """Whether a Type3 span (no font flags: Chromium draws mdBook's inline code so) advances a
    typewriter's ``FIXED_PITCH`` em a character, within 4 %."""
    text = span["text"]
    if not _TYPE3_FONT.match(span["font"]) or not text:
        return False
    advance = (span["bbox"][2] - span["bbox"][0]) / len(text)
    return abs(advance - FIXED_PITCH * span["size"]) <= 0.04 * FIXED_PITCH * span["size"]


def _drawn_grids(page: pymupdf.Page, *, paths: Paths = None) -> list:
    """The grids ``_find_tables`` finds on a page that draws rulings; none where it fails (a table
    finder's failure, or drawings that cannot be read, must not lose the page's text: the rules then
    look for tables in the words)."""
    try:
        return _find_tables(page) if _has_rulings(page, paths=paths) else []
    except Exception as exc:
        logger.warning("ruled tables not looked for (%s); using the geometric table detection", exc)
        return []


def _edges(values: list[float], tol: float = 1.0) -> list[float]:
    """Distinct coordinates (values closer than ``tol`` are one)."""
    out: list[float] = []
    for v in sorted(values):
        if not out or v - out[-1] > tol:
            out.append(v)
    return out


def _spans(x0: float, x1: float, edges: list[float], tol: float = 1.0) -> int:
    return max(1, sum(1 for e in edges if x0 - tol <= e < x1 - tol))


def _fills(page: pymupdf.Page, paths: Paths = None) -> list[tuple[float, float, float, float]]:
    """Rectangles filled with a colour other than white (row shading), in page coordinates."""
    rects = []
    try:
        for path in _drawings(page, paths):
            fill = path.get("fill")
            if fill and any(c < 0.97 for c in fill[:3]) and path.get("rect") is not None:
                rects.append(tuple(path["rect"]))
    except Exception as exc:  # shading is a hint only
        logger.debug("fills unavailable: %s", exc)
    return rects


def _shaded(box: tuple[float, float, float, float], fills: list[tuple[float, float, float, float]]) -> bool:
    x0, y0, x1, y1 = box
    area = max((x1 - x0) * (y1 - y0), 1e-6)
    covered = 0.0
    for f in fills:
        w, h = min(x1, f[2]) - max(x0, f[0]), min(y1, f[3]) - max(y0, f[1])
        if w > 0 and h > 0:
            covered += w * h
    return covered >= 0.8 * area


def ruled_tables(
    page: pymupdf.Page,
    lines: list[TextLine],
    scale: float,
    frames: list[Box] | None = None,
    found: list | None = None,
    *,
    paths: Paths = None,
) -> tuple[list[RuledGrid], Grid, list[TextLine]]:
    """Tables drawn with rulings, found by PyMuPDF's ``find_tables``; cell text from our own lines.
    Returns the tables, the forms (sparse grids: one text line per grid row) and the other lines.

    Why: a ruled table whose cells wrap onto several lines defeats the geometric detection in
    ``layout`` (a wrapped row has fewer cells). PyMuPDF finds the cell grid from the rulings; we fill
    each cell with the text lines whose centre lies in it (``extract()`` loses spaces here; each line
    goes to one cell, a cell's rows read in their script's direction), keep a wrapped cell's lines
    together, give merged cells their ``colspan``/``rowspan`` (from the cell boxes against the grid's
    column and row edges) and mark bold or shaded leading rows as the header. A right-to-left table
    starts at its right column. Frames around prose (``_frames_text``), diagrams and text boxes
    (``_drawing_not_table``) are left to the text; grids of bold labels beside plain answers
    (``_labels_and_values``) and sparse grids are forms; a grid of painted cells that is a piece of a
    table shaded row by row (``_shading_piece``) is left to the word grid. Only pages that draw
    rulings are searched: ``find_tables`` costs ~0.3 s a page. ``frames`` gets every grid's box.
    ``found``: the grids ``_drawn_grids`` returned, where asked already (``split_running`` needs them).
    """
    import pymupdf

    found = _drawn_grids(page, paths=paths) if found is None else found
    if not found:
        return [], [], lines
    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    tables: list[RuledGrid] = []
    forms: Grid = []
    used: set[int] = set()
    fills: list[tuple[float, float, float, float]] | None = None
    for table in found:
        if table.row_count < 2 or table.col_count < 2:
            continue
        if frames is not None:  # every grid found, read here or not: where a drawn table ends
            frames.append(tuple(pymupdf.Rect(table.bbox) * matrix))
        col_edges = _edges([c[0] for c in table.cells if c is not None])
        row_edges = _edges([r.bbox[1] for r in table.rows])
        paths = _drawings(page, paths)
        if _shading_piece(table, paths, lines, matrix):
            logger.debug("grid of fills at %s skipped: a piece of a table shaded row by row", table.bbox)
            continue
        rows: list[list[Cell]] = []
        heavy: list[bool | None] = []  # row → all its lines bold (None: empty row)
        col_heavy: dict[int, set[bool]] = collections.defaultdict(set)  # column → bold / not bold lines
        taken: set[int] = set()  # cells of a grid with spans overlap: each line goes to one cell
        col_filled = [False] * table.col_count
        stacked = False  # a grid row with two or more cells of several text rows: rows not ruled apart
        apart = False  # a cell holding pieces set a column gap apart: columns not ruled apart
        for at, row in enumerate(table.rows):
            cells: list[Cell] = []
            weights: list[bool] = []
            texts: list[tuple[list[Row], float, float]] = []  # each cell's text rows and edges
            for k, cell in enumerate(row.cells):
                if cell is None:
                    # A slot covered by a merged cell (to its left or above) has no cell of its own;
                    # an uncovered one is an empty cell.
                    if not _covered(table, row, k, col_edges):
                        cells.append(Cell(""))
                    continue
                inside = [ln for ln in _lines_in(pymupdf.Rect(cell) * matrix, lines) if id(ln) not in taken]
                taken.update(id(ln) for ln in inside)
                weights += [ln.bold or ln.weight >= HEADER_WEIGHT for ln in inside]
                col_heavy[k].update(
                    (ln.weight or (700 if ln.bold else 400)) >= HEADER_WEIGHT for ln in inside
                )
                # Row by row, each row in its script's direction (pieces of a right-to-left line read
                # from the right); a wrapped cell's rows joined, a new item or stacked value kept apart.
                text_rows = group_rows(inside)
                x0, _, x1, _ = pymupdf.Rect(cell) * matrix
                texts.append((text_rows, x0, x1))
                # A list item's mark set a tab before its words is no second column.
                apart |= set_apart(text_rows)
                text = join_cell_lines([r.text for r in text_rows], join=join_lines)
                if text and k < len(col_filled):
                    col_filled[k] = True
                cells.append(
                    Cell(text, _spans(cell[0], cell[2], col_edges), _spans(cell[1], cell[3], row_edges))
                )
            rows.append(cells)
            heavy.append(all(weights) if weights else None)
            head = at == 0 and table.row_count >= 3  # a header row, ruled off from rows ruled apart
            tall = sum(len(r) >= 2 and not wrapped(r, a, b, head) for r, a, b in texts)
            stacked |= tall >= 2 and not set_between(texts)
        cells_total = sum(len(row) for row in rows)
        filled = sum(1 for row in rows for c in row if c.text)
        box = pymupdf.Rect(table.bbox) * matrix
        if _frames_text(rows, filled):
            continue  # its lines stay text: the layout reads them as paragraphs, columns, headings
        pairs = not all(col_filled) and all(sum(1 for c in row if c.text) <= 2 for row in rows)
        if filled < MIN_TABLE_FILL * cells_total or pairs or _labels_and_values(col_heavy, rows):
            # A form laid out on a grid (labels and answers in scattered boxes, label/value pairs
            # beside empty boxes, bold labels beside plain answers), not a table: each grid row
            # becomes one line of text, its cells in reading order ("label value").
            forms.append(((box.x0, box.y0, box.x1, box.y1), _form_lines(rows)))
            used.update(taken)
            continue
        if _drawing_not_table(rows):
            logger.debug("ruled grid at %s skipped: a diagram or a text box, not a table", box)
            continue
        used.update(taken)
        if any(any(c.text for c in row) for row in rows):
            if is_rtl(" ".join(c.text for row in rows for c in row)):
                rows = [row[::-1] for row in rows]  # a right-to-left table starts at its right column
            if fills is None:
                fills = _fills(page, paths)
            shaded = [_shaded(tuple(r.bbox), fills) for r in table.rows]
            rows, head = _without_slivers(rows, header_rows(heavy, shaded))
            tables.append(
                RuledGrid(
                    (box.x0, box.y0, box.x1, box.y1), rows, head, _exact(rows, col_filled, stacked or apart)
                )
            )
    return tables, forms, [ln for ln in lines if id(ln) not in used]


def _without_slivers(rows: list[list[Cell]], head: int) -> tuple[list[list[Cell]], int]:
    """The grid's rows with each sliver joined to the row under it, and the header rows left: a
    sliver is a row whose own cells are all empty, every other cell spanning down, and whose empty
    places the next row's cells fill one for one. Why: a stray edge across one cell (a browser's
    "Skip to content" link printed over a table's repeated header on each page) cuts the row in two;
    the other cells then span both, and the header read as two rows, one empty."""
    out = [list(row) for row in rows]
    k = 0
    while k + 1 < len(out):
        own = [c for c in out[k] if c.rowspan == 1]
        spanning = any(c.rowspan > 1 for c in out[k])
        below = out[k + 1]
        if (
            not spanning
            or not own
            or any(c.text for c in own)
            or [c.colspan for c in own] != [c.colspan for c in below]
        ):
            k += 1
            continue
        fill = iter(below)
        out[k] = [
            next(fill) if c.rowspan == 1 else dataclasses.replace(c, rowspan=c.rowspan - 1) for c in out[k]
        ]
        del out[k + 1]
        head -= k + 1 < head  # both were header rows: one is left
    return out, head


def _form_lines(rows: list[list[Cell]]) -> list[list[str]]:
    """A form's grid rows as lines of text, each its cells in reading order ("label value")."""
    rtl = is_rtl(" ".join(c.text for row in rows for c in row))
    text_rows = [
        [" ".join(c.text.replace("\n", " ") for c in (reversed(row) if rtl else row) if c.text)]
        for row in rows
    ]
    return [r for r in text_rows if r[0]]


def _exact(rows: list[list[Cell]], col_filled: list[bool], mixed: bool) -> bool:
    """``RuledGrid.exact``: no cells mixing rows or columns (``mixed``), and every grid column and
    every grid row starts a filled cell (rulings that do not line up cut slivers of empty cells)."""
    return not mixed and all(col_filled) and all(any(c.text for c in row) for row in rows)


RULE_THICKNESS = 2.0  # points: a filled rectangle this thin is a drawn rule, not a ground


def _shading_piece(table, paths: list[dict], lines: list[TextLine], matrix: pymupdf.Matrix) -> bool:
    """Whether a grid PyMuPDF found from the edges of filled cells alone (no stroke, no rule drawn
    as a thin rectangle) is a piece of a larger table: a row of words just above or below it sits in
    its columns. Why: a table shaded row by row (or only its header and some rows), with each cell's
    background painted apart as HTML and word processors print them, gives one grid per run of
    shaded rows; the unshaded rows between are left out, and the table came out in pieces. Left to
    the word grid and the layout model, it is read whole."""
    import pymupdf

    bbox = pymupdf.Rect(table.bbox)
    for p in paths:
        r = pymupdf.Rect(p["rect"])
        if not r.intersects(bbox):
            continue
        if p.get("type") != "f" or min(r.width, r.height) <= RULE_THICKNESS:
            return False  # a stroked line or a thin rule: the grid is ruled
    box = bbox * matrix
    cols = sorted({(round(c[0], 1), round(c[2], 1)) for c in table.cells if c is not None})
    cols = [(pymupdf.Rect(a, bbox.y0, b, bbox.y1) * matrix) for a, b in cols]
    height = box.height / max(table.row_count, 1)
    tol = 0.25 * height

    def in_columns(row: Row) -> bool:
        """Every piece of the row inside one of the grid's columns, two or more columns filled."""
        homes = [
            {k for k, c in enumerate(cols) if c.x0 - tol <= it.box[0] and it.box[2] <= c.x1 + tol}
            for it in row.items
        ]
        return len(row.items) >= 2 and all(homes) and len(set().union(*homes)) >= 2

    near = [
        ln
        for ln in lines
        if box.x0 - tol <= ln.box[0]
        and ln.box[2] <= box.x1 + tol
        and (0 <= box.y0 - ln.box[3] <= 1.5 * height or 0 <= ln.box[1] - box.y1 <= 1.5 * height)
    ]
    return any(in_columns(row) for row in group_rows(near))


def _centre(b: tuple[float, float, float, float], region: tuple[float, float, float, float]) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


PIECE_SHARE = 0.5  # a grid at most this share of a table region's area, inside it, is a piece of that table


def _piece_of(box: Box, region: Box) -> bool:
    """Whether a grid lies inside a table region and covers at most ``PIECE_SHARE`` of it."""
    area = max((box[2] - box[0]) * (box[3] - box[1]), 1e-6)
    return overlap(box, region) >= 0.9 and area <= PIECE_SHARE * (region[2] - region[0]) * (
        region[3] - region[1]
    )


def _tables_apart(regions: list[Box], frames: Sequence[Box], lines: Sequence[TextLine]) -> list[Box]:
    """The layout model's table boxes, each box over several framed tables with headings between them
    cut into one region per table (``structure.stacked_frames``)."""
    parts = [split_at_frames(r, frames, lines) for r in regions]
    return _distinct([box for p in parts for box in p]) if any(len(p) > 1 for p in parts) else regions


def _distinct(regions: list[Box]) -> list[Box]:
    """Regions without those that mostly cover an earlier one: two of the layout model's boxes over one
    stack of framed tables give the same parts (``split_at_frames``)."""
    out: list[Box] = []
    for r in regions:
        if not any(overlap(r, k) > 0.8 and overlap(k, r) > 0.8 for k in out):
            out.append(r)
    return out


def _weak_boxes(detected: Sequence[Region], read: Sequence[Box]) -> list[Box]:
    """The layout model's table boxes too weak to be read alone and not read already: they may still
    say that a box inside them is part of a wider table (``table_bounds.widen_nested``)."""
    from ocr_app.structure import learned_tables as lt

    return [
        r.box
        for r in detected
        if lt.MIN_VETO_SCORE <= r.score < lt.MIN_REGION_SCORE
        and not any(overlap(r.box, t) > 0.5 for t in read)
    ]


def _outside(boxes: list[Box], prose: Sequence[Box]) -> list[Box]:
    """The layout model's table boxes that are not mostly columns of running text: such a box (the GNU
    FDL set in seven narrow columns) vouches for no grid of words either."""
    return [b for b in boxes if not any(overlap(b, p) > 0.5 for p in prose)]


def _without(lines: list[TextLine], taken: Sequence[TextLine]) -> list[TextLine]:
    gone = {id(ln) for ln in taken}
    return [ln for ln in lines if id(ln) not in gone]


def _bold_labels(box: tuple[float, float, float, float], lines: list[TextLine]) -> bool:
    """A form of bold labels left of plain answers (``_labels_and_values``): it stays lines of text."""
    inside = [ln for ln in lines if _centre(ln.box, box)]
    bold = [ln for ln in inside if ln.bold or ln.weight >= HEADER_WEIGHT]
    plain = [ln for ln in inside if ln not in bold]
    return bool(bold and plain) and max(ln.box[2] for ln in bold) <= min(ln.box[0] for ln in plain) + 1


def _pairs(rows: list[list[Cell]]) -> bool:
    """Rows of at most two filled cells beside a column left empty: label/value pairs of a form."""
    width = max((sum(c.colspan for c in row) for row in rows), default=0)
    filled_cols: set[int] = set()
    for row in rows:
        k = 0
        for c in row:
            if c.text:
                filled_cols.update(range(k, k + c.colspan))
            k += c.colspan
    return len(filled_cols) < width and all(sum(1 for c in row if c.text) <= 2 for row in rows)


def _bold_header(table: LearnedTable) -> int:
    """Leading rows of a learned table set bold (or heavier) where the body is not: its header.

    Counted in the table's rows, by their words: a row is bold when most of its words are set in bold
    lines of the table and in no plain one (a small plain "restated" under a year stays in the heads).
    Counting text lines instead took a head set in the middle of two header rows ("Region" beside
    "2025" over "Q1") for a row of its own, and the first body row into the header."""
    bold = {w for ln in table.lines if ln.bold or ln.weight >= HEADER_WEIGHT for w in ln.text.split()}
    plain = {w for ln in table.lines if not (ln.bold or ln.weight >= HEADER_WEIGHT) for w in ln.text.split()}
    heavy: list[bool | None] = []
    for row in table.rows:
        words = [w for c in row for w in c.text.split()]
        strong = sum(1 for w in words if w in bold and w not in plain)
        heavy.append(2 * strong > len(words) if words else None)
    n = header_rows(heavy, [False] * len(heavy))
    return n if n < len(table.rows) else 0


def _drawing_not_table(rows: list[list[Cell]]) -> bool:
    """A ruled grid that is no table: a diagram drawn with boxes (most cells merged across the grid's
    lines) or a framed text box (a cell of prose, with no column heads over it). Its lines are then
    read as ordinary text."""
    cells = [c for row in rows for c in row]
    merged = sum(1 for c in cells if c.colspan > 1 or c.rowspan > 1)
    if merged > MAX_MERGED_SHARE * len(cells):
        return True
    return not _column_heads(rows) and any(len(c.text.split()) > MAX_CELL_WORDS for c in cells)


def _column_heads(rows: list[list[Cell]]) -> bool:
    """Whether a grid's first row is three or more short column heads: a table's, whatever paragraph
    its cells hold (npm's flags, each described at length)."""
    head = [c.text for c in rows[0]] if rows else []
    return len(head) >= 3 and all(t and len(t.split()) <= HEAD_CELL_WORDS for t in head)


def _covered(table, row, k: int, col_edges: list[float]) -> bool:
    """Whether slot ``k`` of ``row`` lies inside a merged cell of the table (it then has no cell)."""
    starts = [r.cells[k][0] for r in table.rows if k < len(r.cells) and r.cells[k] is not None]
    if not starts and k >= len(col_edges):
        return True
    cx, cy = (min(starts) if starts else col_edges[k]) + 0.5, (row.bbox[1] + row.bbox[3]) / 2
    return any(
        c is not None and c[0] <= cx <= c[2] and c[1] <= cy <= c[3] for r in table.rows for c in r.cells
    )


PROSE_CELL_WORDS = 40  # a grid cell holding this many words is a paragraph


def _labels_and_values(heavy: dict[int, set[bool]], rows: list[list[Cell]]) -> bool:
    """Whether a grid is a form of bold labels beside plain answers: two columns hold text, one only
    bold lines, the other only regular ones, and no header row (a bold line over the answers).
    Such a grid reads as "label value" lines, like the other forms."""
    columns = [col for col, kinds in heavy.items() if kinds]
    if len(columns) != 2 or sum(1 for row in rows if any(c.text for c in row)) < 3:
        return False
    if sorted(tuple(heavy[c]) for c in columns) != [(False,), (True,)]:
        return False
    # A form's labels are words ("Name", "Date of birth"); a column of bold figures (versions, years,
    # item numbers) keys the rows of a table, here one whose header row a page break left on the page
    # before (Node.js's Node-API version matrix).
    bold = next(c for c in columns if heavy[c] == {True})
    keys = [row[bold].text for row in rows if bold < len(row) and row[bold].text]
    return sum(1 for text in keys if sum(ch.isalpha() for ch in text) >= 2) * 2 > len(keys)


HEAD_CELL_WORDS = 3  # a column head is a few words


def _frames_text(rows: list[list[Cell]], filled: int) -> bool:
    """Whether a ruled grid is a frame drawn around text rather than a table or a form: at most two
    filled cells (a boxed title beside a logo), or at most three rows of which one holds a paragraph
    (a back cover's boxed columns of prose), or every filled cell a list's item (browsers draw a
    bullet as a disc, and an item in code on its shaded ground made a grid of it); never a grid under
    a row of three or more short heads (npm's flag table, two tall rows on a page before the break).
    Why: a table of one or two cells of prose loses the text's paragraphs, headings and reading
    order."""
    if filled <= 2:
        return True
    if all(c.text.startswith(BULLET) for row in rows for c in row if c.text):
        return True  # a list's drawn marks beside its items' shaded code ("• preinstall"): no grid
    if _column_heads(rows):
        return False  # a row of column heads over the prose: a table's piece a page break cut short
    texted = [row for row in rows if any(c.text for c in row)]
    return len(texted) <= 3 and any(len(c.text.split()) >= PROSE_CELL_WORDS for row in texted for c in row)


def _suspect(page: pymupdf.Page, lines: list[TextLine]) -> str | None:
    """Why the text read from a page should not be trusted (garbage, somebody's hidden OCR layer), or None.

    Short text is fine here; the cheap check on the extracted lines runs first, the full report (which
    looks for invisible text over images) only on pages that have images.
    """
    quick = TextLayerReport()
    text = " ".join(ln.text for ln in lines)
    quick.chars = quick.visible_chars = sum(1 for ch in text if not ch.isspace())
    quick.garbage_chars = sum(1 for ch in text if not ch.isspace() and _is_garbage(ch))
    quick.alnum_chars = sum(1 for ch in text if ch.isalnum())
    quick.content_chars = sum(1 for ch in _LEADERS.sub("", text) if not ch.isspace())
    report = inspect_page(page) if page.get_images() else quick
    usable, why = judge(report, min_chars=1)
    return None if usable else f"text layer: {why}"


def figure_regions(
    page: pymupdf.Page,
    body_pt: float,
    panels: Sequence[pymupdf.Rect] = (),
    words: Sequence[pymupdf.Point] = (),
    *,
    paths: Paths = None,
) -> list[pymupdf.Rect]:
    """Pictures and drawings big enough to be figures (page coordinates, unrotated).

    Full-page backgrounds are not figures. A drawing cluster must be at least three body lines tall,
    so a heading on a shaded bar or above a rule is never inside one. A cluster that is one of the
    ``panels`` (``panel_rects``: a filled shape with nothing else drawn inside) is text on a ground,
    and one of filled rectangles with text on them is a table's shading (``_Shapes.shaded_cells``; ``words``:
    the centres of the text lines). Paint that does not show (``paint.invisible``) is not looked at.
    """
    import pymupdf

    area = abs(page.rect) or 1.0
    regions: list[pymupdf.Rect] = []
    try:
        for info in page.get_image_info():
            r = pymupdf.Rect(info["bbox"]) & page.rect
            if not r.is_empty and 0.002 * area <= abs(r) <= 0.7 * area:
                regions.append(r)
        shown = [{**p, "rect": pymupdf.Rect(p["rect"])} for p in _drawings(page, paths) if not invisible(p)]
        shapes = _Shapes(shown, words)
        for r in cluster_drawings(page, shown):
            big = 0.02 * area <= abs(r) <= 0.5 * area and r.height >= 4 * body_pt and r.width >= 4 * body_pt
            if big and not any(_same_rect(r, p) for p in panels) and not shapes.shaded_cells(r):
                regions.append(r)
    except Exception as exc:  # figure detection is a refinement; the text must not be lost over it
        logger.debug("figure regions unavailable: %s", exc)
    return regions


CELL_SHARE = 0.5  # of a cluster's filled rectangles, at least this share holding text: shaded cells


class _Shapes:
    """A page's visible paths as arrays, for ``shaded_cells`` (pages of ICDAR 2013 draw thousands of
    paths; testing them one by one as PyMuPDF objects cost up to 0.6 CPU s a page)."""

    def __init__(self, paths: list[dict], words: Sequence[pymupdf.Point]) -> None:
        import numpy as np

        self.boxes = np.array([tuple(p["rect"]) for p in paths], dtype=float).reshape(-1, 4)
        self.filled = np.array(
            [p.get("type") == "f" and all(it[0] == "re" for it in p["items"]) for p in paths], dtype=bool
        )
        self.words = np.array([(w.x, w.y) for w in words], dtype=float).reshape(-1, 2)

    def shaded_cells(self, region: pymupdf.Rect) -> bool:
        """Whether a drawing cluster is a table's shading: only filled rectangles (no strokes, no
        curves) and at least half of them with text set on them (cells on fills, a striped or dark
        header). A chart's bars are filled rectangles too, but its labels stand beside them, and it
        draws axes."""
        b = self.boxes
        inside = (
            (b[:, 0] >= region.x0) & (b[:, 1] >= region.y0) & (b[:, 2] <= region.x1) & (b[:, 3] <= region.y1)
        )
        if not inside.any() or not self.filled[inside].all():
            return False
        cells, w = b[inside], self.words
        on = (
            (w[None, :, 0] >= cells[:, None, 0])
            & (w[None, :, 0] <= cells[:, None, 2])
            & (w[None, :, 1] >= cells[:, None, 1])
            & (w[None, :, 1] <= cells[:, None, 3])
        )
        return int(on.any(axis=1).sum()) >= CELL_SHARE * len(cells)


def panel_rects(page: pymupdf.Page, body_pt: float, *, paths: Paths = None) -> list[pymupdf.Rect]:
    """Filled shapes with nothing else drawn inside them, at least four body lines tall and wide:
    panels of a slide, shaded sidebars, call-out boxes (page coordinates, unrotated).

    Why: the text on such a shape is text set on a coloured ground, read like any other text (a
    panel's title, its bullets with their wrapped lines), not the labels of a diagram; a chart or a
    diagram draws its axes, bars, arrows or boxes inside its frame. A rounded rectangle counts (its
    corners are curves of the same path); a ground under other grounds or one that reaches the page's
    edge (a slide's or a spread's background) does not.
    """
    import numpy as np
    import pymupdf

    try:
        paths = _drawings(page, paths)
    except Exception as exc:  # panels are a refinement; the text must not be lost over them
        logger.debug("drawings unavailable: %s", exc)
        return []
    boxes = np.array([p["rect"] for p in paths if p.get("rect") is not None], dtype=float).reshape(-1, 4)
    big = 4 * body_pt
    area = page.rect  # asked once: PyMuPDF bounds the page anew each time (25,600 cells of a heat map: 0.3 s)
    panels: list[pymupdf.Rect] = []
    for path in paths:
        if not path.get("fill") or path.get("rect") is None:
            continue
        r = pymupdf.Rect(path["rect"])
        # A ground that reaches the page's edge is the page's (or a spread's) background: a panel
        # stands inside the margins.
        inside = r.x0 > area.x0 and r.y0 > area.y0 and r.x1 < area.x1 and r.y1 < area.y1
        if r.width < big or r.height < big or not inside:
            continue
        # Another shape inside (a bar, a gridline, a nested box): a drawing, not a plain ground. A
        # shape that holds this one (a background, the panel's own outline) does not count.
        x0, y0, x1, y1 = boxes.T
        into = (x0 < r.x1 - 1) & (x1 > r.x0 + 1) & (y0 < r.y1 - 1) & (y1 > r.y0 + 1)
        holds = (x0 <= r.x0) & (y0 <= r.y0) & (x1 >= r.x1) & (y1 >= r.y1)
        if not (into & ~holds).any():
            panels.append(r)
    return panels


def _same_rect(a: pymupdf.Rect, b: pymupdf.Rect, tol: float = 1.0) -> bool:
    return all(abs(u - v) <= tol for u, v in zip(a, b, strict=True))


def mark_figure_text(
    page: pymupdf.Page,
    lines: list[TextLine],
    scale: float,
    body_pt: float,
    panels: Sequence[pymupdf.Rect] = (),
    *,
    paths: Paths = None,
) -> None:
    """Flag lines whose centre lies inside a figure region (their text stays, as text).

    A region holding fewer than three lines (a boxed heading), mostly sentences (a text box, a
    sidebar) or mostly list items (a list whose items are code on grey grounds, its markers drawn) is
    not a figure: diagram labels are short, and stand alone.
    """
    import pymupdf

    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    back = ~matrix
    centres = [pymupdf.Point((ln.box[0] + ln.box[2]) / 2, (ln.box[1] + ln.box[3]) / 2) * back for ln in lines]
    regions = figure_regions(page, body_pt, panels, centres, paths=paths)
    if not regions:
        return
    for number, region in enumerate(regions, start=1):
        r = region * matrix
        inside = [
            ln
            for ln in lines
            if r.x0 <= (ln.box[0] + ln.box[2]) / 2 <= r.x1 and r.y0 <= (ln.box[1] + ln.box[3]) / 2 <= r.y1
        ]
        sentences = sum(1 for ln in inside if len(ln.text.split()) >= 6)
        figure = (
            len(inside) >= 3
            and sentences <= 0.5 * len(inside)
            and not (stacked_text(inside) and _bare_ground(page, region, body_pt, paths))
            and not (_word_grid(inside) and _rules_only(page, region, paths))
            and not _listing(inside)
            and sum(1 for ln in inside if ln.text.startswith(BULLET)) <= 0.5 * len(inside)
        )
        labels = _axis_labels(r, lines, inside, body_pt * scale) if figure or not inside else []
        # A chart whose labels all stand outside its drawn area shows itself by its ticks.
        if figure or sum(1 for ln in labels if all(_LABEL_TOKEN.match(w) for w in ln.text.split())) >= 3:
            for ln in inside + labels:
                if not ln.in_figure:  # overlapping regions: the first one keeps its lines
                    ln.in_figure, ln.figure = True, number


AXIS_REACH = 1.5  # × the body size: how far outside a chart's drawn area its labels stand
AXIS_PASSES = 2  # ticks beside the area, then the axis title beyond them
_LABEL_TOKEN = re.compile(r"^[\d.,%≥≤<>+\-–—/()$€£]+$")


def _axis_labels(
    area: pymupdf.Rect, lines: list[TextLine], inside: list[TextLine], body: float
) -> list[TextLine]:
    """Short lines within reach of a chart's drawn area, no larger than its own labels: its ticks
    ("0 0-4 5-14 ... ≥65", "140"), then its axis titles ("Age Group", "Year", one set upright). A
    chart's area is what it draws; its labels are set around it, and came out as text, a bold axis
    title as a heading. A line that reads as a sentence, a note, a caption or a numbered title stays
    out."""
    size = (statistics.median(ln.size for ln in inside) if inside else body) * 1.1
    box = [area.x0, area.y0, area.x1, area.y1]
    taken = {id(ln) for ln in inside}
    out: list[TextLine] = []
    reach = AXIS_REACH * body
    for _ in range(AXIS_PASSES):
        found = [
            ln
            for ln in lines
            if id(ln) not in taken
            and not ln.in_figure
            and ln.size <= size
            and box[0] - reach < ln.box[2]
            and ln.box[0] < box[2] + reach
            and box[1] - reach < ln.box[3]
            and ln.box[1] < box[3] + reach
            and (_label_like(ln.text) or _upright(ln))
        ]
        if not found:
            break
        out += found
        taken.update(id(ln) for ln in found)
        box = [
            min(box[0], *(ln.box[0] for ln in found)),
            min(box[1], *(ln.box[1] for ln in found)),
            max(box[2], *(ln.box[2] for ln in found)),
            max(box[3], *(ln.box[3] for ln in found)),
        ]
    return out


def _upright(ln: TextLine) -> bool:
    """Whether a line of words runs up or down the page (a chart's vertical axis title; a bullet's
    glyph box is as narrow, and no label)."""
    words = sum(c.isalnum() for c in ln.text)
    return words >= 2 and ln.box[3] - ln.box[1] > 2 * (ln.box[2] - ln.box[0])


def _label_like(text: str) -> bool:
    """A chart's label: a few words or a row of figures, no sentence, note, caption or numbered title."""
    words = text.split()
    if not any(c.isalnum() for c in text):
        return False  # a list's bullet beside its item, a mark: no label of a chart
    if text.rstrip().endswith((".", ":")) or CAPTION.match(text) or NOTE_LINE.match(text):
        return False
    if NUMBERED_HEADING.match(text):
        return False
    return len(words) <= 3 or sum(1 for w in words if _LABEL_TOKEN.match(w)) >= 0.8 * len(words)


def stacked_text(lines: Sequence[TextLine]) -> bool:
    """Whether a region's lines are set one under another as text is (a sidebar's head over a list
    wrapped in a narrow column): each line right under the one above it (less than
    ``STACK_GAP`` of a line's height between, or overlapping by as little) and starting within ``STACK_INDENT`` sizes of it, for
    ``STACK_SHARE`` of the lines, with ``STACK_WORDS`` words a line on average. A diagram's labels
    stand apart, side by side or one word each (an axis's ticks)."""
    rows = sorted(lines, key=lambda ln: ln.box[1])
    words = sum(len(ln.text.split()) for ln in rows)
    stacked = sum(
        1
        for a, b in itertools.pairwise(rows)
        if -STACK_GAP * (a.box[3] - a.box[1]) <= b.box[1] - a.box[3] <= STACK_GAP * (a.box[3] - a.box[1])
        and abs(b.box[0] - a.box[0]) <= STACK_INDENT * a.size
    )
    return words >= STACK_WORDS * len(rows) and stacked + 1 >= STACK_SHARE * len(rows)


def _listing(lines: Sequence[TextLine]) -> bool:
    """Whether a region's lines are a listing on its panel: all in a monospaced face, half of them or
    more starting at its left edge (the rest indented), or its rows set one right under another
    (``_dense``). Why: a code panel drawn with a rounded border (GitHub's style, npm's docs) is no plain
    ground, and its lines of a few words each were read as a diagram's labels, loose text. A diagram's
    labels stand apart, not at one edge. An API's synopsis sets its rows in columns (type, name,
    arguments) with the arguments' lines under the first one's, so few of its pieces start at the edge;
    its rows still follow at the listing's line pitch (libxslt's reference)."""
    if not lines or not all(ln.mono for ln in lines):
        return False
    left = min(ln.box[0] for ln in lines)
    at_edge = sum(1 for ln in lines if ln.box[0] - left <= 0.5 * ln.size)
    return at_edge >= 0.5 * len(lines) or _dense(group_rows(lines))


LISTING_ROWS = 3  # a listing told by its line pitch alone has at least this many rows


def _dense(rows: Sequence[Row]) -> bool:
    """Whether ``rows`` (top to bottom) follow one right under another, as the lines of one block of
    text do (``stacked_runs``)."""
    return len(rows) >= LISTING_ROWS and len(stacked_runs(rows)) == 1


def _bare_ground(page: pymupdf.Page, region: pymupdf.Rect, body_pt: float, paths: Paths = None) -> bool:
    """Whether all that is drawn in ``region`` is a filled ground under it and small marks (a list's bullets,
    at most ``MARK_SIZE`` body sizes): a shaded box of text. A chart draws its curves, bars and axes
    across it. Drawings that cannot be read count as a chart."""
    import pymupdf

    try:
        paths = _drawings(page, paths)
    except Exception:  # a broken content stream: the region stays a figure
        return False
    area = region.width * region.height
    for path in paths:
        r = pymupdf.Rect(path.get("rect") or (0, 0, 0, 0)) & region
        if r.is_empty:
            continue
        small = r.width <= MARK_SIZE * body_pt and r.height <= MARK_SIZE * body_pt
        ground = "f" in (path.get("type") or "") and r.width * r.height >= GROUND_SHARE * area
        if not small and not ground:
            return False
    return True


def _word_grid(lines: Sequence[TextLine]) -> bool:
    """Two rows or more of three words or more side by side: cells, not a diagram's labels (an
    axis's ticks stand in one row or one column)."""
    return sum(1 for row in group_rows(lines) if len(row.items) >= 3) >= 2


def _rules_only(page: pymupdf.Page, region: pymupdf.Rect, paths: Paths = None) -> bool:
    """Whether all that is drawn in ``region`` is rules (strokes or rectangles at most
    ``RULE_THICKNESS`` thick, straight across or down): a table's frame and the rules under its
    heads, open where a column broke it. A chart draws bars, curves or marks."""
    import pymupdf

    try:
        paths = _drawings(page, paths)
    except Exception:  # a broken content stream: the region stays a figure
        return False
    seen = False
    for path in paths:
        r = pymupdf.Rect(path.get("rect") or (0, 0, 0, 0))
        if (r & region).is_empty or invisible(path):
            continue
        if min(r.width, r.height) > RULE_THICKNESS:
            return False
        seen = True
    return seen


MARK_SIZE = 1.0
GROUND_SHARE = 0.8
STACK_GAP = 0.6
STACK_INDENT = 2.0
STACK_SHARE = 0.8
STACK_WORDS = 2.5


UNDERLINE_WORDS = 12  # only short lines are looked at: a title, not a paragraph with a link in it
UNDERLINE_COVER = 0.9  # the stroke runs under this share of the line's ink at least
UNDERLINE_THICK = 0.15  # × the line's size: a stroke at most this thick (a shaded band is no underline)


def mark_underlined(page: pymupdf.Page, lines: list[TextLine], scale: float, *, paths: Paths = None) -> None:
    """Short lines underlined from end to end by a drawn stroke (a thin filled rectangle or a line
    under the baseline, no longer than the line by more than its size on either side: not a table's
    rule), and not links: ``underlined``, a title's style where no size or weight marks it (round 10
    of issue 30). Drawings that cannot be read leave every line as it is."""
    import pymupdf

    short = [k for k, ln in enumerate(lines) if len(ln.text.split()) <= UNDERLINE_WORDS and ln.turns == 0]
    if not short or page.rotation:
        return
    strokes: list[tuple[float, float, float, float]] = []
    try:
        for path in _drawings(page, paths):
            for item in path.get("items", ()):
                if item[0] == "re":
                    r = pymupdf.Rect(item[1])
                elif item[0] == "l":
                    r = pymupdf.Rect(pymupdf.Point(item[1]), pymupdf.Point(item[2])).normalize()
                    r.y1 = max(r.y1, r.y0 + (path.get("width") or 0.5))
                else:
                    continue
                if r.height <= 2 and r.width >= 4:
                    strokes.append((r.x0 * scale, r.y0 * scale, r.x1 * scale, r.y1 * scale))
        # Links only where a stroke may underline: PyMuPDF walks a page's annotations anew for each
        # link, so a page of 3,000 links cost 4.5 CPU s to list them.
        links = [pymupdf.Rect(link["from"]) * scale for link in page.get_links()] if strokes else []
    except Exception as exc:  # a hint only
        logger.debug("drawings unavailable: %s", exc)
        return
    if not strokes:
        return
    for k in short:
        ln = lines[k]
        x0, x1 = ln.ink or (ln.box[0], ln.box[2])
        size = ln.size
        if any(pymupdf.Rect(ln.box).intersects(link) for link in links):
            continue
        under = [
            s
            for s in strokes
            if s[3] - s[1] <= UNDERLINE_THICK * size
            and ln.box[3] - 0.4 * size <= s[1] <= ln.box[3] + 0.25 * size
            and s[0] >= x0 - size
            and s[2] <= x1 + size
        ]
        covered = sum(max(0.0, min(s[2], x1) - max(s[0], x0)) for s in under)
        if x1 > x0 and covered >= UNDERLINE_COVER * (x1 - x0):
            lines[k] = replace(ln, underlined=True)


def horizontal_rules(page: pymupdf.Page, scale: float, *, paths: Paths = None) -> list[Rule]:
    """The page's horizontal rules (stroked lines and hairline rectangles at least an inch long, or
    pieces that join end to end into one) as (x0, y, x1) in pixels at ``scale`` on the page as
    displayed: what sets a running header or footer apart from the text, and a table's rows apart.
    Why pieces: word processors and HTML print a table's rules cell by cell. Only level pieces of
    paths drawn square (no slanted stroke) join: a line chart's series is many short strokes too."""
    import pymupdf

    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    upright = page.rotation % 180 == 0  # the page's x runs across the page as displayed
    ends: list[tuple[pymupdf.Point, pymupdf.Point, bool]] = []  # (end, end, from a path drawn square)
    try:
        for path in _drawings(page, paths):
            items = path.get("items", ())
            square: bool | None = None
            for item in items:
                if item[0] == "l":
                    pairs: tuple = ((item[1], item[2]),)
                elif item[0] == "re":
                    x0, y0, x1, y1 = item[1]
                    if min(max(0, x1 - x0), max(0, y1 - y0)) > 3:
                        continue
                    mid_y, mid_x = (y0 + y1) / 2, (x0 + x1) / 2
                    pairs = (((x0, mid_y), (x1, mid_y)), ((mid_x, y0), (mid_x, y1)))
                else:
                    continue
                for a, b in pairs:
                    if not _may_rule(a, b, upright):
                        continue
                    if square is None:
                        square = all(_square(it) for it in items)
                    ends.append((pymupdf.Point(a), pymupdf.Point(b), square))
    except Exception as exc:  # rules are a hint only
        logger.debug("drawings unavailable: %s", exc)
    pieces: list[Rule] = []
    for a, b, square in ends:
        a, b = a * matrix, b * matrix
        length = abs(a.x - b.x)
        if abs(a.y - b.y) <= scale and (
            length >= 72 * scale
            or (square and abs(a.y - b.y) <= LEVEL * scale and length >= MIN_PIECE * scale)
        ):
            pieces.append((min(a.x, b.x), (a.y + b.y) / 2, max(a.x, b.x)))
    return [r for r in joined(pieces) if r[2] - r[0] >= 72 * scale]


LEVEL = 0.05  # points: a rule's piece is drawn level to this
MIN_PIECE = 4.0  # points: the shortest piece of a rule drawn cell by cell
_SLACK = 0.01  # points: more than PyMuPDF's single-precision transform can move a piece's ends


def _may_rule(a: Sequence[float], b: Sequence[float], upright: bool) -> bool:
    """Whether a piece, in page points, may pass ``horizontal_rules``' test on the page as displayed:
    at most a point off level and ``MIN_PIECE`` long, with ``_SLACK`` to spare. Why: most of a page's
    strokes are a chart's, a glyph's or a table's upright rules, and making PyMuPDF points of all of
    them and carrying them to the display cost more than the rest of the rules' search."""
    across, down = abs(a[0] - b[0]), abs(a[1] - b[1])
    if not upright:
        across, down = down, across
    return down <= 1 + _SLACK and across >= MIN_PIECE - _SLACK


def _square(item: tuple) -> bool:
    """Whether a path item is a rectangle or a level or upright stroke (no slant, no curve)."""
    if item[0] == "re":
        return True
    if item[0] != "l":
        return False
    (x0, y0), (x1, y1) = item[1], item[2]
    return abs(x0 - x1) <= LEVEL or abs(y0 - y1) <= LEVEL


def split_running(
    lines: list[TextLine],
    profile: DocumentProfile,
    height: float,
    rules: Sequence[Rule] = (),
    grids: Sequence[tuple[Box, int]] = (),
) -> tuple[list[Block], list[TextLine]]:
    """Running headers/footers/page numbers → ``page_header``/``page_footer`` blocks (kept out of the
    Markdown body, kept in the JSON); the other lines. ``rules``: the page's horizontal rules, which
    set a running line apart on a page of its own (``docprofile.margin_rows``).

    ``grids``: the tables the page's rulings draw, (box, rows). A table cut by a page break puts its
    last row in the footer's band ("9" alone at the foot, taken for a page number) and its next row
    where the headers stand (Node.js's API reference); a browser repeats a long table's header row at
    the top of every page, and a mark ("✓", "*") stands in the same column at the top or foot of
    page after page (rustc's platform list): all of them are the table's. A line in a drawn table of
    ``TABLE_ROWS`` rows or more is never page furniture; in a smaller grid (a running header set in a
    ruled box) it is one by its words alone (repeated on other pages), not by where it stands."""
    running: list[Block] = []
    rest: list[TextLine] = []
    margin = margin_rows(lines, height, rules, alone=profile.pages <= 1)
    for ln in lines:
        held = [rows for box, rows in grids if _centre(ln.box, box)]
        edge = profile.repeated(ln, height) if held else profile.is_running(ln, height)
        if any(rows >= TABLE_ROWS for rows in held) and not (edge and over_text(ln, lines)):
            # (a running line printed over a cell's words, as a browser prints a fixed "Skip to
            # content" link on every page, is still one)
            rest.append(ln)
            continue
        if edge is None and id(ln) in margin and not held:
            edge = "top" if ln.box[1] < height / 2 else "bottom"
        if edge is None:
            rest.append(ln)
        else:
            running.append(Block("page_header" if edge == "top" else "page_footer", ln.text, [ln.box]))
    return running, rest


class PageRegions:
    """The layout model's regions of one page image, asked once and only when a pass needs them (the
    learned tables, the pictures that may show a table): ≈ 0.10 CPU s a call."""

    def __init__(self, image: Image.Image | None, cache_dir: Path | None = None) -> None:
        self.image = image
        self._cache_dir = cache_dir  # where the model's rewritten graph is kept (``structure.regions``)
        self._regions: list[Region] | None = None

    def regions(self) -> list[Region]:
        if self._regions is None:
            from ocr_app.structure.regions import default_model

            self._regions = default_model(cache_dir=self._cache_dir).detect(self.image)
        return self._regions


class TextLayerEngine(Engine):
    """Reads PDF pages' embedded text. Pages without ``pdf_path`` are an input error."""

    name = "textlayer"

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        layout: LayoutConfig | None = None,
        pictures: Callable[[], raster_tables.RegionReader] | None = None,
    ) -> None:
        """``pictures``: builds the recogniser that reads tables pasted as pictures
        (``engines.raster_tables``; the stack hands in the light engine's); None: pictures stay pictures."""
        # Settings are accepted for a uniform constructor (registry); only the cache folder applies here.
        self._cache_dir = settings.cache_dir if settings is not None else None
        self._layout = layout or LayoutConfig()
        self._loaded = False
        # Tables from the layout and table-structure models, when the ``tables`` extra is installed.
        self._learned = learned_tables_available()
        # Pictures of tables read by the light engine's recogniser, when the ``light`` extra is installed.
        self._pictures = pictures
        self._rasters = pictures is not None and raster_tables.available()
        # The last PDF read stays open: re-opening it for every page cost more than reading the page
        # (MuPDF rebuilds the page tree on each open). Keyed by path and file identity, under MUPDF_LOCK.
        self._open_key: tuple[str, int, int, int] | None = None
        self._open_doc: pymupdf.Document | None = None
        self._profiles: collections.OrderedDict[tuple[str, int, int], DocumentProfile] = (
            collections.OrderedDict()
        )
        # The lines the profile read of each sampled page (``read_lines``), until that page is read: of
        # the newest profile's document only (a 120-page sample of 3,800 lines held 5.5 MB; a document
        # whose reads went with the next profile reads its pages again, to the same lines).
        self._reads: dict[tuple[str, int, int], dict[int, list[TextLine]]] = {}
        self._profiles_lock = threading.Lock()

    @staticmethod
    def _file_key(pdf_path: Path | str) -> tuple[str, int, int]:
        st = os.stat(pdf_path)
        return (str(Path(pdf_path).resolve()), st.st_mtime_ns, st.st_size)

    def profile(self, pdf_path: Path | str, doc: pymupdf.Document) -> DocumentProfile:
        """The document profile of ``pdf_path`` (built on its first page, kept for a few files)."""
        key = self._file_key(pdf_path)
        with self._profiles_lock:
            if key in self._profiles:
                self._profiles.move_to_end(key)
                return self._profiles[key]
        reads: dict[int, list[TextLine]] = {}

        def extract(page: pymupdf.Page, scale: float) -> list[TextLine]:
            reads[page.number] = read_lines(page)
            return place_lines(reads[page.number], page, scale)

        profile = build_profile(doc, extract, skip=_heavy)
        with self._profiles_lock:
            self._profiles[key] = profile
            self._reads = {key: reads}
            while len(self._profiles) > PROFILE_CACHE:
                self._profiles.popitem(last=False)
        return profile

    def _page_read(self, pdf_path: Path | str, page: pymupdf.Page) -> list[TextLine]:
        """The page's ``read_lines``: the profile's read where it read the page (taken, so each read
        serves once), else read now."""
        with self._profiles_lock:
            read = self._reads.get(self._file_key(pdf_path), {}).pop(page.number, None)
        return read if read is not None else read_lines(page)

    def load(self) -> None:
        from ocr_app.ingest.pdf import import_pymupdf

        import_pymupdf()  # fail early and clearly if PyMuPDF is missing

        self._loaded = True

    def unload(self) -> None:
        from ocr_app.ingest.pdf import MUPDF_LOCK

        with MUPDF_LOCK:
            self._close_doc()
        self._loaded = False
        if self._pictures is not None:
            raster_tables.release()  # the picture reader's models go with the engine
        with self._profiles_lock:
            self._profiles.clear()
            self._reads.clear()

    def _close_doc(self) -> None:
        if self._open_doc is not None:
            self._open_doc.close()
        self._open_doc, self._open_key = None, None

    def _doc(self, pdf_path: Path, password: str | None) -> pymupdf.Document:
        """The open document for ``pdf_path`` (call with MUPDF_LOCK held)."""
        try:
            st = Path(pdf_path).stat()
            key = (str(pdf_path), st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            key = None
        if key is None or key != self._open_key or self._open_doc is None or self._open_doc.is_closed:
            self._close_doc()
            doc = _open(pdf_path, password)
            if key is None:
                return doc
            self._open_doc, self._open_key = doc, key
        return self._open_doc

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def capabilities(self) -> Capabilities:
        """The engine kind's facts (``ocr_app.choices``): no prompt, no mode, no precision; one
        conversion per core at once (reading a text layer is short CPU work, so several jobs side by
        side keep a short one from waiting behind a long one)."""
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        return replace(engine_kind(self.name).capabilities, max_concurrent_jobs=max(1, cores))

    def report(self, pdf_path: Path | str, index: int, *, password: str | None = None) -> TextLayerReport:
        """``inspect_report`` through this engine's open document (the router asks once per page)."""
        from ocr_app.ingest.pdf import MUPDF_LOCK

        with MUPDF_LOCK:
            doc = self._doc(Path(pdf_path), password)
            try:
                return inspect_page(_page(doc, index, Path(pdf_path).name))
            finally:
                if doc is not self._open_doc:
                    doc.close()

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        self.load()
        return [self._predict(r) for r in requests]

    def _predict(self, request: PageRequest) -> EngineOutput:
        import pymupdf

        from ocr_app.ingest.pdf import MUPDF_LOCK
        from ocr_app.ingest.pdf_guard import content_bytes

        page_img = request.page
        notes: list[str] = []
        if page_img.pdf_path is None:
            raise InputError(f"{page_img.source}: the text-layer engine reads PDF pages only")
        start = time.perf_counter()
        with MUPDF_LOCK:
            doc = self._doc(Path(page_img.pdf_path), page_img.password)
            page = _page(doc, page_img.index, page_img.source)
            width_px, _ = page_img.size
            scale = width_px / page.rect.width if page.rect.width else (page_img.dpi or 72) / 72
            profile = self.profile(page_img.pdf_path, doc)
            body_font = profile.style.body_font
            lines = place_lines(
                self._page_read(page_img.pdf_path, page),
                page,
                scale,
                typescript=not body_font or bool(_MONO_FONTS.search(body_font)),
            )
            vectors = content_bytes(page, _VECTOR_SCAN_BYTES) <= _VECTOR_SCAN_BYTES
            paths = page_drawings(page) if vectors else None
            rules = horizontal_rules(page, scale, paths=paths) if vectors else []
            to_display = page.rotation_matrix * pymupdf.Matrix(scale, scale)
            drawn_grids = _drawn_grids(page, paths=paths) if vectors else []
            grid_boxes = [
                (tuple(pymupdf.Rect(t.bbox) * to_display), t.row_count)
                for t in drawn_grids
                if t.row_count >= 2 and t.col_count >= 2
            ]
            running, lines = split_running(lines, profile, page.rect.height * scale, rules, grid_boxes)
            panels = panel_rects(page, profile.style.body_size, paths=paths) if vectors else []
            grounds = [tuple(r * to_display) for r in panels]
            if vectors:
                mark_drawn_bullets(page, lines, scale, profile.style.body_color, paths=paths)
                mark_underlined(page, lines, scale, paths=paths)
                mark_figure_text(page, lines, scale, profile.style.body_size, panels, paths=paths)
            else:
                notes.append(
                    f"page {page_img.index + 1} draws more than {_VECTOR_SCAN_BYTES >> 20} MiB of vector "
                    "content: its text was read, figures and ruled tables were not looked for"
                )
            turns = page_turns(lines)
            every_line = lines
            frames: list[Box] = []
            tables, forms, lines = (
                ruled_tables(page, lines, scale, frames, drawn_grids, paths=paths)
                if turns == 0 and vectors
                else ([], [], lines)
            )
            drawn = bool(tables or forms)  # a ruled grid or form: the layout model is asked
            disp_w, disp_h = page.rect.width * scale, page.rect.height * scale
            suspect = _suspect(page, lines) if lines else None
            # Pictures that may hold a table (no text-layer word over them): read through the light
            # engine's path below, outside the PDF lock.
            found = (
                raster_tables.pictures(page, every_line, scale, page_img.image)
                if turns == 0 and self._rasters
                else []
            )
            if doc is not self._open_doc:
                doc.close()
        style = profile.style_at(scale)
        table_regions, text_regions = None, []
        layout = PageRegions(page_img.image, self._cache_dir)
        if turns == 0 and self._learned and every_line and page_img.image is not None:
            tables, forms, lines, table_regions, text_regions = self._learned_tables(
                layout, every_line, tables, forms, lines, drawn, frames, rules
            )
        if found:
            tables, lines = self._raster_tables(found, tables, lines, notes, layout)
        if turns:
            # Text running sideways or upside down: lay it out in its own upright frame, then map
            # every box back to the page as displayed.
            lines = [replace(ln, box=rotate_box(ln.box, turns, disp_w, disp_h)) for ln in lines]
            upright_w = disp_h if turns % 2 else disp_w
            upright_h = disp_w if turns % 2 else disp_h
            blocks = build_blocks(
                lines, page_width=upright_w, page_height=upright_h, config=self._layout, style=style
            )
            for block in blocks:
                block.boxes = [unrotate_box(b, turns, disp_w, disp_h) for b in block.boxes]
        else:
            blocks = build_blocks(
                lines,
                page_width=width_px,
                page_height=disp_h,
                config=self._layout,
                tables=tables,
                forms=forms,
                style=style,
                table_regions=table_regions,
                text_regions=text_regions,
                containers=grounds,
            )
        blocks = [b for b in running if b.label == "page_header"] + blocks
        blocks += [b for b in running if b.label == "page_footer"]
        total = time.perf_counter() - start
        logger.debug(
            "textlayer: %s p%d: %d lines → %d blocks",
            page_img.source,
            page_img.index,
            len(lines),
            len(blocks),
        )
        return EngineOutput(
            engine=self.name,
            blocks=blocks,
            stop_reason=StopReason.NONE,
            timings={"total": total},
            suspect=suspect,
            notes=notes
            + ([f"text runs turned: read after turning it {90 * turns}° counter-clockwise"] if turns else []),
        )

    def _learned_tables(
        self,
        layout: PageRegions,
        every_line: list[TextLine],
        ruled: list[RuledGrid],
        forms: Grid,
        rest: list[TextLine],
        drawn: bool,
        frames: Sequence[Box] = (),
        cuts: Sequence[Rule] = (),
    ) -> tuple[list[TableGrid], Grid, list[TextLine], list[Box] | None, list[Box]]:
        """Tables read by the structure model (``structure.learned_tables``), cells from the text
        layer's words: first in the ruled grids' boxes (certain regions), then in the layout model's
        table regions. On ICDAR 2013's true regions the model reads both kinds better than the rules
        (docs/ACCURACY.md); a ruled grid the model cannot read as a grid keeps the rules' reading.
        Asked only on pages that may hold a table (rulings, fills, rows of pieces a cell gap apart).
        ``frames``: the boxes of the grids the rulings draw (``ruled_tables``), where a region's table ends;
        ``cuts``: the page's horizontal rules, which no row of a table runs across.
        Without the ``tables`` extra, or when the models cannot load: today's rules alone."""
        from ocr_app.structure import learned_tables as lt
        from ocr_app.structure import table_bounds, table_slots, table_verdict

        image = layout.image
        body = body_size(every_line)
        framed = rule_frames(cuts, every_line, body)
        if not worth_looking(every_line, body, drawn=drawn or bool(framed)):
            return ruled, forms, rest, None, []
        if is_rtl(" ".join(ln.text for ln in every_line)):
            # Right-to-left pages keep the rules' tables, which read a row from its right (the
            # structure model's cells were not checked on such pages: docling's Persian form lost its
            # text to one).
            return ruled, forms, rest, None, []
        out: list[TableGrid] = []
        try:
            seen = layout.regions()
            detected = [r for r in seen if r.label == "table"]
            texts = [r.box for r in seen if r.label in TEXT_LABELS and r.score >= lt.MIN_VETO_SCORE]
            regions = [
                table_bounds.cut_at_frames(r.box, frames) for r in detected if r.score >= lt.MIN_REGION_SCORE
            ]
            # Tables drawn by horizontal rules alone, where the model boxes no table and no grid is ruled.
            regions += [
                f
                for f in framed
                if not any(
                    overlap(f, b) > 0.3 or overlap(b, f) > 0.5 for b in [*(r.box for r in detected), *frames]
                )
            ]
            # Grids of words the layout model does not call a table, even weakly, are text.
            vetted = [r.box for r in detected if r.score >= lt.MIN_VETO_SCORE]
            # A ruled grid taken for a form (sparse, label/value pairs) is read by the structure model
            # too: its words go back to the pool, and it stays a form unless the model reads a table
            # that is no label/value pairs beside empty boxes (``_pairs``); see below.
            kept_forms: Grid = []
            grids = [*ruled, *(RuledGrid(f[0], [], 0) for f in forms)]
            free = {id(ln) for ln in rest}
            in_grid = [
                ln for ln in every_line if id(ln) not in free and any(_centre(ln.box, t[0]) for t in grids)
            ]
            pool = [*rest, *in_grid]
            in_regions = functools.partial(lt.tables_in_regions, image, body=body, join=join_lines, cuts=cuts)
            for box, rows, head, exact in grids:
                if not rows and any(_piece_of(box, r) for r in regions):
                    # A form inside a table the model boxes, at most half its size: fills behind a
                    # cell's wrapped lines that PyMuPDF took for a grid; its lines are the table's.
                    continue
                # Tables set one under the other share their rulings, and PyMuPDF returns one grid:
                # the layout model's tables inside it say where one ends.
                parts = [r for r in regions if overlap(r, box) > 0.7]
                if len(parts) >= 2:
                    found, pool = in_regions(parts, pool)
                    if found:
                        out += [(t.box, t.rows, t.header_rows or _bold_header(t)) for t in found]
                        continue
                snapped = table_bounds.snap(box, pool)
                table = (
                    lt.read_table(image, snapped[0], snapped[1], body=body, join=join_lines, cuts=cuts)
                    if snapped
                    else None
                )
                # A form becomes a table when the model reads one that is no label/value pairs beside
                # empty boxes, and not two columns of bold labels beside plain answers (issue 16).
                if not rows and (
                    table is None
                    or _pairs(table.read_rows)
                    or (table_slots.shape(table.read_rows)[1] < 3 and _bold_labels(box, every_line))
                ):
                    # A form the model cannot read as a table either (label/value pairs beside
                    # empty boxes): it stays a form, one line of text a row.
                    kept_forms += [f for f in forms if f[0] == box]
                    pool = _without(pool, [ln for ln in pool if _centre(ln.box, box)])
                    continue
                if table is not None and exact and table_verdict.drawn_cells_win(table.read_rows, rows):
                    logger.debug("ruled grid at %s read from its rulings", box)
                    table = None
                taken = table.lines if table else [ln for ln in pool if _centre(ln.box, box)]
                out.append((box, table.rows, table.header_rows or head) if table else (box, rows, head))
                pool = _without(pool, taken)
            read = [t[0] for t in [*out, *kept_forms]]
            regions = [r for r in regions if not any(overlap(r, t) > 0.5 for t in read)]
            regions = _tables_apart(regions, frames, pool)
            weak = _weak_boxes(detected, read)
            prose: list[Box] = []  # boxes of running text in columns: they vouch for no grid of words
            rules = self._word_grid(image.width, body)
            found, pool = in_regions(regions, pool, rules=rules, weak=weak, prose=prose)
            vetted = _outside(vetted, prose)
        except EngineUnavailableError as exc:
            logger.warning("textlayer: tables from rules only: %s", exc)
            self._learned = False
            return ruled, forms, rest, None, []
        out += [(t.box, t.rows, t.header_rows or _bold_header(t)) for t in found]
        return out, kept_forms, pool, vetted, texts

    def _raster_tables(
        self,
        found: list[raster_tables.Picture],
        tables: list[TableGrid],
        lines: list[TextLine],
        notes: list[str],
        layout: PageRegions,
    ) -> tuple[list[TableGrid], list[TextLine]]:
        """Pictures of tables on the page (``engines.raster_tables``): each grid a table at the
        picture's place, other words the picture's labels. Which pictures show a table is read from the
        page's layout regions (one model call a page, shared with the tables above). Without the
        recogniser: as before."""
        try:
            more, loose = raster_tables.read(
                found, self._pictures, rules=self._word_grid, join=join_lines, learned=self._learned,
                page_regions=layout.regions() if layout.image is not None else None,
            )  # fmt: skip
        except EngineUnavailableError as exc:
            logger.warning("textlayer: pictures not read: %s", exc)
            self._rasters = False
            return tables, lines
        if more:
            notes.append(f"{len(more)} table(s) read from pictures by OCR")
        return [*tables, *more], [*lines, *loose]

    def _word_grid(self, width: float, body: float):
        """The word-position finder (``passes.tables.detect_tables``) over one region's lines: its largest
        table and header rows, or None."""

        def read(held: list[TextLine]) -> tuple[list[list[Cell]], int, list[TextLine]] | None:
            found, _ = detect_tables(held, width, self._layout, body)
            if not found:
                return None
            best = max(found, key=lambda t: len(t.items))
            if len(best.items) < 0.6 * len(held):
                return None  # a small table beside other lines: not a reading of the region
            rows = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in best.rows]
            return rows, best.header_rows, list(best.items)

        return read

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "loaded": self.is_loaded, "device": "cpu"}
