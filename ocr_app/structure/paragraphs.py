"""Paragraph rules: lines of one paragraph joined (line-end hyphens mended from the document's
vocabulary), list markers, code listings, and when a line continues the open paragraph (a hanging
indent, a wrapped line that starts with an en dash).

Why a module of its own: the section assembly (``passes.blocks``) decides per row what it starts or
continues; these are the text rules it asks, and the engines join table-cell lines with the same
``join_lines``. Pure functions over strings and rows.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_app.schema import Box
from ocr_app.structure.lines import Row, size_close

GLYPH_BULLETS = "•●○◦▪▫■□‣⁃·"  # marks that are only ever a list's: no dashes ("–" is a nil figure)
BULLETS = "-–—*" + GLYPH_BULLETS
_BULLET_RE = re.compile(rf"^\s*[{re.escape(BULLETS)}]\s+(?P<body>\S.*)$")
_NUMBER_RE = re.compile(r"^\s*(?P<marker>(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)])\s+(?P<body>\S.*)$")
_EXTRA_BULLETS = re.compile(r"^(?:[•●○◦▪▫■□‣⁃]\s*)+")


# A table's significance note ("* p < 0.05", "** p < 0.01 (two-tailed)") or a starred note ("* Source: …")
# is a note whose asterisks are its marks, not a bulleted item.
_STAR_NOTE = re.compile(r"^\s*(?P<stars>\*{1,3})\s*(?:[pP]\s*[<>≤≥=]|(?:Notes?|Sources?)\b)")


def star_note(text: str) -> str | None:
    """``text`` with its leading asterisks escaped for Markdown when it is a starred note, else None."""
    m = _STAR_NOTE.match(text)
    if m is None:
        return None
    return "\\*" * len(m.group("stars")) + text[m.end("stars") :]


def list_marker(text: str) -> tuple[str, str] | None:
    """``(markdown_marker, body)`` when the text starts a list item."""
    if _STAR_NOTE.match(text):
        return None
    m = _BULLET_RE.match(text)
    if m:
        # Two glyphs drawn on one spot (a check box in two symbol fonts) make one marker.
        return "-", _EXTRA_BULLETS.sub("", m.group("body")) or m.group("body")
    m = _NUMBER_RE.match(text)
    if m:
        return m.group("marker"), m.group("body")
    return None


_TAIL_WORD = re.compile(r"([\w-]*?)(\w+)[-\u00ad\u2010]$")
_HEAD_WORD = re.compile(r"^(\w+)")
# Chinese and Japanese set no spaces between words: a line wrapped inside a sentence joins without one
# (Korean spaces its words, so Hangul is not in here).
_NO_SPACE_SCRIPT = re.compile(
    r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
)
# First halves of English compounds that are words in their own right and not syllables a word is
# broken at ("self-" + "organising", "well-" + "known"): their hyphen is kept.
COMPOUND_HEADS = frozenset(
    [
        "self",
        "well",
        "non",
        "anti",
        "semi",
        "quasi",
        "pseudo",
        "multi",
        "cross",
        "ill",
        "half",
        "all",
        "over",
        "under",
        "long",
        "short",
        "high",
        "low",
        "full",
        "ever",
        "never",
        "free",
        "open",
    ]
)


def join_lines(a: str, b: str, vocabulary: frozenset[str] = frozenset()) -> str:
    """Join two lines of one paragraph; a word split by a line-end hyphen is mended.

    The rule, in order: a soft hyphen always goes ("docu\u00ad" + "ment"). A continuation that starts
    in upper case or with a digit keeps the hyphen, without a space ("non-" + "English", "COVID-" +
    "19"). A lower-case continuation is a word broken at the line end — "docu-" + "ment" → "document",
    "Ger-" + "stein" → "Gerstein" — unless the hyphenated form is more plausible: the document uses the
    joined word unbroken (join), or it uses the hyphenated compound, the first half is itself part of a
    compound ("state-of-the-" + "art") or is a word compounds are made with ("self-", "well-":
    ``COMPOUND_HEADS``) (keep). A range broken after its en dash ("22–" + "30") joins without a space.
    Lines of Chinese or Japanese join without a space.
    """
    if not a:
        return b
    if a.endswith("\u00ad") and b[:1].isalpha():
        return a[:-1] + b
    m = _tail_word(a)
    h = _HEAD_WORD.match(b)
    if m and h and b[:1].islower() and m.group(2)[-1:].isalpha():
        left, right = m.group(2), h.group(1)
        joined = (left + right).lower()
        hyphenated = f"{left}-{right}".lower()
        if joined in vocabulary:
            return a[:-1] + b
        if hyphenated in vocabulary or m.group(1) or left.lower() in COMPOUND_HEADS:
            return a + b  # a known compound, or part of one
        return a[:-1] + b
    if a.endswith(("-", "\u2010")) and len(a) > 1 and a[-2].isalnum() and b[:1].isalnum():
        return a + b  # "COVID-" + "19", "non-" + "English": a real hyphen, no space
    if a.endswith("\u2013") and len(a) > 1 and a[-2].isdigit() and b[:1].isdigit():
        return a + b  # a range broken after its dash: "pp. 22–" + "30"
    if _NO_SPACE_SCRIPT.match(a[-1]) and _NO_SPACE_SCRIPT.match(b[0]):
        return a + b
    return f"{a} {b}"


_LINE_END_HYPHENS = ("-", "\u00ad", "\u2010")
_RUN_CHAR = re.compile(r"[\w-]")
TAIL_WINDOW = 256  # characters: where ``_tail_word`` starts looking, unless a word runs on past it


def _tail_word(a: str) -> re.Match[str] | None:
    """``_TAIL_WORD.search(a)``, looked for only at the end of ``a``.

    Why: ``a`` is the paragraph joined so far, and a search from its start costs time in its length
    for every line joined (an index page's 140-line columns: tenths of a CPU s). A match ends the text with a
    hyphen after a run of word characters and hyphens, so it starts inside that run: the search starts
    ``TAIL_WINDOW`` characters from the end, or at the start where the run reaches further back."""
    end = a[:-1] if a.endswith("\n") else a  # ``$`` also matches before a final newline
    if not end.endswith(_LINE_END_HYPHENS):
        return None
    pos = max(len(a) - TAIL_WINDOW, 0)
    if pos and _RUN_CHAR.match(a[pos - 1]):
        pos = 0
    return _TAIL_WORD.search(a, pos)


_WORDS = re.compile(r"\w+(?:-\w+)*")


def vocabulary_of(texts: Sequence[str]) -> set[str]:
    """Lower-case words (and hyphenated compounds) that occur unbroken: not at a line-end hyphen."""
    words: set[str] = set()
    for text in texts:
        body = text[:-1] if text.endswith(("-", "\u00ad")) else text
        tokens = _WORDS.findall(body.lower())
        if text.endswith(("-", "\u00ad")) and tokens:
            tokens.pop()  # the broken half of a word
        for tok in tokens:
            words.add(tok)
            if "-" in tok:
                words.update(tok.split("-"))
    return words


@dataclass
class Pending:
    kind: str  # "heading", "text", "list"
    level: int = 0
    parts: list[str] = field(default_factory=list)  # paragraph text, or one entry per list item
    boxes: list[Box] = field(default_factory=list)
    last: Row | None = None
    left: float = 0.0  # left edge of the block (text start for list items)
    size: float = 0.0
    indents: list[float] = field(default_factory=list)  # list: marker x of each open nesting level
    text_x: float | None = None  # text: where the first line's text starts after an entry label piece


# A blank line or two inside a listing keeps it one code block: a blank line in a listing set at 1.85
# times its type's size (Node.js's docs) leaves a gap of 2.6 sizes; a panel ends farther off.
CODE_GAP_LINES = 3.0
MAX_BLANK_LINES = 2  # blank lines kept where a listing's lines stand farther apart than its spacing
# A line that is one web or mail address: set in a typewriter face it is still part of the sentence
# around it (LaTeX's \url, many style sheets), not a listing; inside a listing it stays code.
URL_LINE = re.compile(
    r"^[(<\[]?(?:(?:https?|ftp)://|www\.|doi:|mailto:)\S+$|^[(<\[]?[\w.+-]+@[\w-]+(?:\.[\w-]+)+[)>\].,;:]?$",
    re.I,
)


def code_block(lines: Sequence[str], boxes: Sequence[Box]) -> str:
    """Lines of code → a fenced Markdown block, line breaks kept, blank lines kept where lines stand
    farther apart than the listing's own spacing, and indentation rebuilt from the lines' left edges
    in characters (monospaced: every glyph is one character wide); leading spaces a line has in the
    PDF count too."""
    widths = [(b[2] - b[0]) / len(t) for t, b in zip(lines, boxes, strict=True) if len(t) >= 4]
    char = statistics.median(widths) if widths else max((b[3] - b[1]) * 0.5 for b in boxes)
    left = min(b[0] for b in boxes)
    body = [" " * max(0, round((b[0] - left) / char)) + t for t, b in zip(lines, boxes, strict=True)]
    steps = [b[1] - a[1] for a, b in itertools.pairwise(boxes)]
    pitch = min((d for d in steps if d > 0.5 * (boxes[0][3] - boxes[0][1])), default=0.0)
    if pitch:
        # The blank lines a listing holds, by how far its lines stand apart against its spacing.
        spaced = body[:1]
        for step, line in zip(steps, body[1:], strict=True):
            spaced += [""] * min(MAX_BLANK_LINES, max(0, round(step / pitch) - 1)) + [line]
        body = spaced
    longest = max((len(m) for m in re.findall(r"`+", "\n".join(body))), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n" + "\n".join(body) + f"\n{fence}"


def hanging(cur: Pending, right: float, size: float) -> bool:
    """Whether the paragraph's last line ran to the column's right edge without ending a sentence:
    the indented line after it continues it (a hanging indent: a reference entry, a glossary item),
    it does not start a new paragraph (issue 30)."""
    last = cur.parts[-1].rstrip() if cur.parts else ""
    full = cur.last is not None and cur.last.box[2] >= right - 2 * size
    return full and bool(last) and not last.endswith((".", "!", "?", ":"))


def dash_continues(cur: Pending | None, text: str, big_gap: bool) -> bool:
    """A line starting with an en or em dash inside a running paragraph whose last line does not end
    a sentence is that paragraph's next line ("51" / "– 99 staff"), not a bullet (issue 30)."""
    return (
        cur is not None
        and cur.kind == "text"
        and not big_gap
        and text[:1] in "–—"
        and bool(cur.parts)
        and not cur.parts[-1].rstrip().endswith((".", "!", "?", ":", ";"))
    )


WRAP_CHARS = 30  # a narrow newspaper column still holds ~30 characters a line


def wrapped_marker(cur: Pending | None, row: Row, right: float, big_gap: bool) -> bool:
    """Whether a line that starts like a list item ("B. Jones", "12. The", "a) and", "• Services") is
    the open paragraph's or list item's next line: the line above ran to the column's right edge
    without ending a sentence, and this one starts where that block's wrapped lines start, not at a
    marker indent of its own (issue 30 item 5).

    A marker set further right than the paragraph's lines, or at one of the open list's marker
    indents (a sibling, right-aligned "9." / "10." included), still starts an item; so does any marker
    after a line that ends a sentence, a colon, stops short of the right edge or is too short to be a
    line of running text.
    """
    if cur is None or big_gap or cur.last is None or not cur.parts or not size_close(cur.size, row.size):
        return False
    size = row.size
    # A line of running text (≥ WRAP_CHARS characters): a short item that is the widest line of a
    # narrow list is full only because nothing on its section is wider.
    if len(cur.last.text.strip()) < WRAP_CHARS or not hanging(cur, right, size):
        return False
    x = row.box[0]
    if cur.kind == "text":
        return x <= min(b[0] for b in cur.boxes) + 0.5 * size
    if cur.kind == "list":
        at_marker = any(abs(x - indent) <= 0.5 * size for indent in cur.indents)
        return not at_marker and x >= cur.left - 0.25 * size
    return False


# An entry's label set apart from its text: "[12]", "(3)", "12.", "12" (a reference list, footnotes).
# A caption's label: "Table 1:", "Figure 3-1", "[표 1]", "Exhibit 2a.", "Listing 8-15:" (a code listing's,
# as books on programming set it), and appendix or series labels
# ("Table A-1.", "Table ES-3", "Figure SA3."), and a label run into its text by a dash ("Table 1—Command
# line options", as Texinfo and some journals set it).
CAPTION = re.compile(
    r"^\[?(?:table|figure|fig\.|chart|scheme|exhibit|graph|diagram|listing|표|그림|図|表)\s*"
    r"(?:(?-i:[A-Z]{1,3})?[.\-]?\d[\d.\-]*[a-z]?|(?-i:[IVXLC]{1,6}))\]?(?:[.:\s—–]|$)",
    re.I,
)
MAX_CODE_TERM_WORDS = 3  # a term in code before its description on its row: a name or two, an option
_ENTRY_LABEL = re.compile(r"^(?:\[\w{1,5}\]|\(\d{1,3}\)|\d{1,3}\.?)$")
_BRACKET_LABEL = re.compile(r"^\[\w{1,5}\]$")


def label_text_x(row: Row) -> float | None:
    """Where the text of an entry starts when the row opens with a label piece set apart from it
    ("[3]" or "Figure 2." then a tab), or with a bracketed label in the same run ("[12] A. Smith"): the x its
    wrapped lines hang at (issue 30 item 5)."""
    items = sorted(row.items, key=lambda i: i.box[0])
    first = items[0]
    tokens = first.text.split()
    if len(tokens) >= 2 and len(first.words) == len(tokens) and _BRACKET_LABEL.match(tokens[0]):
        # "[12] Author" drawn as one run: the label's brackets say where the entry's text starts.
        return first.words[1][0]
    label = first.text.strip()
    # A term set in code before its description ("browse   browse the dependency graph …", a definition
    # list set as a two-column table) hangs its description's lines as well.
    if len(items) < 2:
        return None
    term = first.mono and not items[1].mono and len(label.split()) <= MAX_CODE_TERM_WORDS
    if not (_ENTRY_LABEL.match(label) or CAPTION.fullmatch(label) or term):
        return None  # a caption's label piece ("Figure SA3." then its title) hangs its lines too
    if items[1].box[0] - items[0].box[2] < 0.3 * row.size:
        return None
    return items[1].box[0]


def hangs_under_label(cur: Pending | None, row: Row, big_gap: bool) -> bool:
    """Whether the row starts where the open entry's text starts after its label (a hanging indent
    set by the label's tab), so it continues the entry whether or not the line above ran full."""
    return (
        cur is not None
        and cur.kind == "text"
        and cur.text_x is not None
        and not big_gap
        and abs(row.box[0] - cur.text_x) <= 0.5 * row.size
    )


def next_entry(cur: Pending | None, row: Row) -> bool:
    """Whether the row is the next entry of a labelled list: its own label piece at the open entry's
    left edge and its text at the same tab ("[1] …" / "[2] …", one line each), not a wrapped line."""
    if cur is None or cur.kind != "text" or cur.text_x is None:
        return False
    x = label_text_x(row)
    return (
        x is not None
        and abs(x - cur.text_x) <= 0.5 * row.size
        and abs(row.box[0] - cur.left) <= 0.5 * row.size
    )


_SECTION_ID = re.compile(r"^(\d{1,3}(?:\.\d{1,3}){1,4})\.?\s+\S")


def next_numbered(cur: Pending | None, row: Row) -> bool:
    """Whether the row opens the entry numbered next after the open paragraph's, at its left edge or
    further out ("6.2.1. Multiple profiling dumps" / "6.2.2. Limiting the range" / "6.3. Options"): a
    contents list without page numbers, one entry a line, whose lines ran together as one paragraph
    when the longest entry set the column's edge. A wrapped line of prose does not start on the
    number that follows its own first line's."""
    if cur is None or cur.kind != "text" or not cur.parts or row.box[0] > cur.left + 0.5 * row.size:
        return False
    above, below = _SECTION_ID.match(cur.parts[0]), _SECTION_ID.match(row.text.strip())
    if above is None or below is None:
        return False
    a, b = above.group(1).split("."), below.group(1).split(".")
    k = len(b) - 1  # the level ``b`` counts on: ``a``'s own, or one of its parents'
    return len(b) <= len(a) and a[:k] == b[:k] and int(b[k]) == int(a[k]) + 1


_KEYED = re.compile(r"^[^\s:]{1,40}:\s+\S")  # "ctxt: the XPath Parser context", "Author(s): Daniel …"


def next_keyed(cur: Pending | None, row: Row, right: float) -> bool:
    """Whether the row opens the next of a run of keyed lines: the open paragraph opens on a key and a
    colon, the row does too at its left edge, and the row's first word would have fitted at the end of
    the line above (it was broken on purpose). gtk-doc sets a function's parameters as a table whose
    name cells hug their names, which prints as "ctxt: the XPath Parser context" over "nargs: the
    number of arguments"; one line each, they ran together as one paragraph (round 36)."""
    if cur is None or cur.kind != "text" or cur.last is None or not cur.parts:
        return False
    return (
        bool(_KEYED.match(cur.parts[0]) and _KEYED.match(row.text.strip()))
        and abs(row.box[0] - cur.left) <= 0.5 * row.size
        and word_fits_above(cur.last, row, right)
    )


MAX_HANG_RATIO = 4.0  # a hanging indent (or a first-line indent) is at most this × size
_SENTENCE_END = (".", "!", "?", ":")


def ends_sentence(text: str) -> bool:
    """Whether a line ends a sentence (a closing quote or bracket after the stop counts too)."""
    return text.rstrip().rstrip("\"'”’)]»").endswith(_SENTENCE_END)


def one_line_entry(cur: Pending) -> bool:
    """Whether the open paragraph is one line that ends a sentence ("Baker, T. (2009). … Press."):
    in a section set with hanging indents, a whole entry; a line of prose ending in a full stop is
    one of several of its paragraph (a colon may end a line inside a sentence)."""
    return len(cur.boxes) == 1 and cur.last is not None and cur.last.text.rstrip().endswith((".", "!", "?"))


def word_fits_above(above: Row, row: Row, right: float) -> bool:
    """Whether the first word of ``row`` would have fitted at the end of the line above, inside the
    column's right edge ``right``: the line was broken on purpose (a paragraph or an entry ends
    there), not wrapped. Ragged-right text wraps short of the edge; this is the test that holds for
    it (the word widths from the engine when it knows them, else about half an em a character)."""
    first = min(row.items, key=lambda i: i.box[0])
    tokens = first.text.split()
    if not tokens:
        return True
    if len(first.words) == len(tokens):
        width = first.words[0][1] - first.words[0][0]
    else:
        width = 0.5 * first.size * len(tokens[0])
    return above.box[2] + 0.25 * row.size + width <= right


def hanging_indent(
    rows: Sequence[Row], left: float, right: float, min_ratio: float
) -> tuple[float, float] | None:
    """Where the wrapped lines of a section set with hanging indents start (a reference list, a
    bibliography, a glossary: each entry's first line flush left, its other lines indented) and the
    top of the first entry that wraps, or None when the section's indented lines start paragraphs
    (a first-line indent) or there are none. Paragraphs above that entry (the column's prose above its
    "References") are set as prose.

    The page tells the two apart by the line above each indented line: before a wrapped line it ends
    in no full stop and the indented line's first word would not have fitted on it (the entry goes
    on), before a first-line indent it ended the paragraph above. The section is set with hanging
    indents when most of its indented lines follow a line that wrapped, and at least two do (issue 30
    item 5).
    """
    wraps: list[float] = []
    first: int | None = None  # the row that opens the first entry that wraps
    starts = 0
    for k, (above, row) in enumerate(itertools.pairwise(rows)):
        size = row.size
        indent = row.box[0] - left
        if not min_ratio * size <= indent <= MAX_HANG_RATIO * size or not size_close(above.size, size):
            continue
        if not ends_sentence(above.text) and not word_fits_above(above, row, right):
            wraps.append(row.box[0])
            first = k if first is None else first
        else:
            starts += 1
    if len(wraps) < 2 or len(wraps) <= starts or first is None:
        return None
    # Entries of one line may come before it: flush-left lines in the entries' size and weight, set
    # as close as its lines are (a heading or a paragraph's blank line above ends the list).
    entry = rows[first]
    while first > 0:
        above = rows[first - 1]
        apart = rows[first].box[1] - above.box[3]
        alike = abs(above.size - entry.size) <= 0.05 * entry.size and above.bold == entry.bold
        if not alike or apart > above.size or above.box[0] - left >= 0.5 * above.size:
            break
        first -= 1
    return statistics.median(wraps), rows[first].box[1]
