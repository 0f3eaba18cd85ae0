"""A PDF page's text as lines: PyMuPDF's spans with their fonts, weights and sizes, mended where
text extraction gets them wrong.

Why: the document rooms (``structure``) read ``TextLine``s in display pixels. A span's font, flags
and size are what tell a heading, code, a superscript or a list marker, so they are read here, once;
and glyphs no reader sees (invisible, clipped, stroked over) or set apart by tracking must go before
anything reads the lines.
"""

from __future__ import annotations

import collections
import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ocr_app.engines.letter_spacing import drop_tracking_spaces
from ocr_app.engines.overprint import drop_overprints
from ocr_app.engines.rtl_order import is_rtl_span, logical_order
from ocr_app.schema import valid_unicode
from ocr_app.structure.cell_lines import BULLET
from ocr_app.structure.justified import join_justified
from ocr_app.structure.lines import TextLine

if TYPE_CHECKING:
    import pymupdf


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
MONO_FONTS = re.compile(
    r"mono|nimbusmon|courier|consol|menlo|inconsolata|cmtt|sfmono|lucidaconsole|code", re.I
)
MAX_CODE_SHARE = 0.6  # a page with more monospaced text than this is typewritten, not code
SCRIPT_SIZE = 0.85  # a superscript/subscript is set at most this × the line's main size
SCRIPT_SHIFT = 0.12  # ... with its baseline at least this × the main size above/below the main one
TALL_LINE = 1.8  # a line box taller than this × its type size comes from a font's box, not its glyphs
_ITALIC_FLAG = 2


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
TYPE3_FONT = re.compile(r"^Type3\b")  # PyMuPDF names a Type3 font "Type3 (7 0 R)": no weight known


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
            mono = all(mono_span(s) for s, _ in words)
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
    known = [(s, t) for s, t in styled if not TYPE3_FONT.match(s["font"])]
    if len(known) == len(styled) or not known:
        return styled  # no Type3 span (nearly every line), or nothing but
    if any(s["flags"] & _ITALIC_FLAG or "italic" in s["font"].lower() for s, _ in known):
        return styled
    letters = sum(len(t.strip()) for _, t in known)
    return known if 4 * letters >= sum(len(t.strip()) for _, t in styled) else styled


def mono_span(span: dict) -> bool:
    """Whether a span is set in a typewriter face: by its font's fixed-pitch flag or its name."""
    return bool(span["flags"] & _MONO_FLAG or MONO_FONTS.search(span["font"]))


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
