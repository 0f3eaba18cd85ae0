"""Heading rules: whether a row is a heading and at which level.

Without a document style (a scan), the page alone decides: size against the page's body size
(≥ ``h1_ratio`` → ``#``, ≥ ``heading_ratio`` → ``##``), the layout model's title region (``##``),
a bold line a little larger than body (``###``), at body size never a line that ends a sentence.
With a document style (the text layer) headings come from the whole document
(``_styled_heading_level``): the outline, sizes and weights against the body's, section numbers
("2.1", "3 -"), typefaces and bold lines standing alone where the body itself is bold, a chapter
number alone in display type (``_chapter_number``) and, in a text panel over a picture, only a bold
block heading a lighter paragraph (``panel_leads``); never a row of pieces a cell gap apart (column
headers, footers), a line that is mostly a number, a web address, or a caption.

Why a module of its own: the heading decisions are the ones tuned most often (issue 30 item 4);
apart from the section assembly that asks them, they can be tested on a few constructed rows.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ocr_app.schema import Box
from ocr_app.structure.lines import (
    ANY_WEIGHT,
    DocStyle,
    LayoutConfig,
    Row,
    Table,
    TextLine,
    color_heading_like,
    icon,
    in_margin_band,
    is_rtl,
    size_close,
)
from ocr_app.structure.numbering import normal_title, numbered_level, outline_level
from ocr_app.structure.paragraphs import CAPTION, list_marker
from ocr_app.structure.table_html import NOTE_LEAD

# "Table 3:", "Fig. 2.", "Figure S1", "Table A.2", "TABLE IV" (roman, as IEEE sets them), "[표 1]".
# A note under a table or figure ("Source: LSA, 1998", "Notes: ..."): set bold at times, never a heading.
NOTE_LINE = re.compile(rf"^{NOTE_LEAD}", re.I)

NUMBERED_HEADING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,4}\.?|[A-Z]\.|[IVX]{1,4}\.)\s+\S")
# Section numbers that a list item does not use: several levels ("2.1", "2-5", "1.2.3.") or a number
# followed by a dash ("3 - Title", "3- عنوان"); "1." and "a)" stay list markers.
SECTION_NUMBER = re.compile(r"^(?:\d{1,2}(?:[.\-]\d{1,2}){1,4}\.?\s*[-\u2013]?|\d{1,2}\s*[-\u2013])\s*(?=\w)")
_BARE_NUMBER = re.compile(r"^(?:\d{1,3}(?:[.\-]\d{1,3}){0,4}\.?|[IVXivx]{1,4}\.?)$")
# An appendix's section number set a quad before its title, as LaTeX sets "B   Appendix B: ..."
_APPENDIX_NUMBER = re.compile(r"^[A-Z](?:\.\d{1,3}){0,4}\.?$")
_SENTENCE_END = (".", ",", ";", ":")
# A quotation: a line that opens with a quotation mark, or closes one after a sentence's end (a
# magazine's pull quote, set large in italics: text, not a heading).
_QUOTATION = re.compile(r'^\s*["“„«‘]|[.!?…]\s*["”»’]\s*$')
_CALL = re.compile(r"[A-Za-z_]\w*\(")  # a name right against its parenthesis: a call, a signature
# One name in quotes, no sentence: a field's or key's title (Node.js's "packageManager"), not a quote.
_QUOTED_NAME = re.compile(r'^\s*["“][\w@./:-]+["”]\s*$')

# Headings on a scan, where no document style says what they look like (``heading_level``):
SCAN_BLANK = 0.5  # × size: a blank line on a scan, over the paragraph's own line gap
WORDY = 0.6  # a centred line standing alone is a title only with this share of letters
BOLD_ALONE_RATIO = 0.75  # a scan's bold line standing alone is a heading from this × the body size
CENTRED_ALONE_RATIO = 0.55  # ... a centred one from this (small capitals measure by their height)
ITALIC_RATIOS = (0.85, 1.15)  # ... an italic one at about the body's size
ITALIC_TITLE_CHARS = 60  # ... and this short
# ... not a label and its number ("Example 3-9 Creating a mask", a manual's caption set in italics)
_LABELLED = re.compile(r"^[A-Z][a-z]+\s+\d+(?:[.\-]\d+)*\b")
_CODE_SIGNS = frozenset("<>{}=;_")  # ... nor code set in italics ("AS <correlation name>")


def open_quotation(text: str) -> bool:
    """Whether ``text`` opens a quotation it does not close (a pull quote's first lines)."""
    text = text.strip()
    return text[:1] in '"“„«‘' and not (len(text) > 1 and text[-1] in '"”»’')


_ADDRESS = re.compile(
    r"(?:https?://|www\.)\S+|\S+@\S+\.\w+|[\w.-]+\.(?:com|org|net|gov|edu|int)(?:/\S*)?", re.I
)


def bare_label(text: str) -> bool:
    """Whether ``text`` is a section's number alone ("3.1.2", "4.", an appendix's "B.2"), as set a
    quad or more before its title. A letter alone is not: a letterhead's big initial ("M") or a
    roman "I" may stand in a column of its own."""
    label = text.strip()
    return any(c.isdigit() for c in label) and bool(
        _BARE_NUMBER.match(label) or _APPENDIX_NUMBER.match(label)
    )


def cells_apart(row: Row, gap: float) -> bool:
    """Whether the row is made of pieces set a table-cell gap apart (column headers, a footer's
    "Annex ... 209"): several texts side by side, not one heading. A section number in a box of its
    own before the title ("1   Introduction", "Chapter 1.   Title", an appendix's "B.2   Data") is
    part of the heading."""
    if len(row.items) < 2:
        return False
    rtl = is_rtl(row.text)
    items = sorted(row.items, key=lambda i: -i.box[2] if rtl else i.box[0])
    for a, b in itertools.pairwise(items):
        space = a.box[0] - b.box[2] if rtl else b.box[0] - a.box[2]
        label = a.text.strip()
        numbered = (
            _BARE_NUMBER.match(label)
            or _APPENDIX_NUMBER.match(label)
            or (len(label) <= 12 and any(c.isdigit() for c in label))
        )
        if space >= gap and not (a is items[0] and numbered):
            return True
    return False


def _chapter_number(row: Row, style: DocStyle, config: LayoutConfig, page_height: float) -> int:
    """Level of a chapter number set alone in display type ("1" at 40 pt over the chapter title), or
    0. A page number is body-sized or sits in the margin band; this one is neither."""
    if len(row.items) != 1 or row.in_figure or not _BARE_NUMBER.match(row.text.strip()):
        return 0
    if row.size < config.chapter_number_ratio * style.body_size:
        return 0
    if page_height and in_margin_band(row.box, page_height):
        return 0
    return min(style.level_for_size(row.size), 6)


@dataclass(frozen=True)
class RowContext:
    """Where a row stands on its page: what the heading rules need beyond the row itself."""

    short_line: bool = False  # much shorter than its section is wide
    page_height: float = 0.0  # 0: unknown
    isolated: bool = False  # a blank line above and below it, nothing beside it
    leads_text: bool = False  # inside a text panel over a picture, right above a lighter paragraph
    aligned: bool = True  # starts at its section's left edge or is centred in it (not over a column)
    term: bool = False  # a definition list's term (``definition_terms``)
    leads: bool = False  # right above a list or a paragraph of two lines or more (``leading_rows``)
    colored: bool = False  # a short line standing apart in an accent colour (``colored_rows``)
    far_right: bool = False  # starts in the right part of its section (``FAR_RIGHT``)
    tag: bool = False  # in a section of a few words in the right part of the page's text
    centred: bool = False  # centred in its section, in from its left edge


def set_strong(line: Row | TextLine, body: float) -> bool:
    """Set bold, or underlined or in small capitals of the body's size and upright: the marks a
    document gives its titles at body size over italics (as ``_quiet_title_level`` ranks them on the
    text layer; ``ink`` reads them from a scan's pixels). An underlined line in italics is an italic
    title, a level under the upright underlined ones."""
    quiet = line.underlined or line.caps_size >= SMALL_CAPS_BODY * body
    return line.bold or (quiet and not line.italic)


SMALL_CAPS_BODY = 0.9  # × body: small capitals whose capitals are this large mark a title


def heading_level(
    row: Row,
    body: float,
    config: LayoutConfig,
    style: DocStyle | None = None,
    where: RowContext = RowContext(),
) -> int:
    text = row.text
    letters = sum(c.isalpha() for c in text)
    if (
        style is not None
        and letters < 2
        and (chapter := _chapter_number(row, style, config, where.page_height))
    ):
        return chapter
    if len(text) > config.max_heading_chars or letters < 2 or (row.in_figure and not where.leads_text):
        return 0  # long lines, bare numbers (page numbers) and figure labels are not headings
    if NOTE_LINE.match(text):
        return 0  # a table's or figure's source note
    if _QUOTATION.search(text) and row.size >= body and not _QUOTED_NAME.match(text):
        return 0  # a pull quote (or a quoted sentence): text set large
    if style is not None and sum(c.isdigit() for c in text) >= 2 * letters:
        return 0  # mostly a number: an issue number ("No. 1695"), a date, a code
    if style is not None:
        level = _styled_heading_level(row, text, config, style, where)
        if level and style.depth_bases and outline_level(style.outline, text) is None:
            level = numbered_level(level, text, style.depth_bases)
        return level
    # A plain line a size larger (``LayoutConfig.plain_alone_ratio``: a report's section titles in
    # another face, not bold, "Outlook" at 1.18 × on a scan).
    larger = bool(config.plain_alone_ratio) and row.size >= config.plain_alone_ratio * body
    set_apart = where.isolated and (set_strong(row, body) or ((where.centred or larger) and _wordy(text)))
    if any(i.role == "prose" for i in row.items) and not set_apart:
        # The layout model saw a paragraph's line (a scan: ``structure.scan_regions``). Not a bold
        # line standing alone: the model's box over a paragraph reaches up over its section's title.
        return 0
    ratio = row.size / body
    if ratio >= config.h1_ratio:
        return 1
    if ratio >= config.heading_ratio:
        return 2
    # At body size, a line that ends a sentence (or a contents entry's leader dots) is no heading; a
    # bold lead-in ending in a colon ("Steps for using the microscope:") is one.
    if text.rstrip().endswith((".", ",", ";")):
        return 0
    if (
        all(i.role == "title" for i in row.items)
        and (row.bold or not text.rstrip().endswith(":"))
        and (row.bold or ratio >= 1.1 or len(text.split()) <= 8)
    ):
        # A plain lead-in ending in a colon ("Consider this definition:") introduces text; a long
        # line at body size in plain type is a paragraph the model's title box reached into.
        return 2
    if (
        row.bold
        and ratio >= config.bold_heading_ratio
        and len(row.text) <= 80
        and where.aligned
        and not cells_apart(row, config.min_cell_gap_ratio * body)
        and not text[:1].islower()  # "package", "popcon": a table's column names, not a title
    ):
        return 3  # (a bold line over a table's columns, "Year Ended", is its header, not a heading)

    def standing_alone() -> bool:  # a blank line above and below, at its section's edge or centre
        return (
            where.isolated
            and where.aligned
            and not CAPTION.match(text)
            and not cells_apart(row, config.min_cell_gap_ratio * body)
        )

    if (
        set_apart
        and ratio >= (BOLD_ALONE_RATIO if row.bold else CENTRED_ALONE_RATIO)
        and len(text.split()) <= config.max_isolated_heading_words
        and not text[:1].islower()
        and standing_alone()
    ):
        # A scan has no fonts to say what the document's headings look like (``DocStyle``); a short
        # line standing alone at body size, a blank line above and below, bold, centred or a size
        # larger, is one ("SUMMARY" in spaced capitals, a report's section titles, a paper's
        # "I. INTRODUCTION" in small capitals). Beside others, or inside a paragraph's run, a bold
        # line is a label or a table's head; a centred line of figures and signs is an equation.
        return 3
    if (
        row.italic
        and ITALIC_RATIOS[0] <= ratio <= ITALIC_RATIOS[1]
        and len(text) <= ITALIC_TITLE_CHARS
        and text[:1].isupper()
        and not _LABELLED.match(text)
        and not _CODE_SIGNS.intersection(text)
        and standing_alone()
    ):
        # A short line in italics standing alone at body size: the lowest heading of reports and papers
        # ("Limitations", "A. Grading scale"), a level under the bold ones (``scan_levels``).
        return 3
    return 0


def _wordy(text: str) -> bool:
    """Whether most of a line's characters are letters (a title), not figures and signs (an equation)."""
    chars = text.replace(" ", "")
    return sum(c.isalpha() for c in chars) >= WORDY * len(chars)


def lowercase_start(text: str) -> bool:
    """Whether a line opens with a plain lower-case word ("through 2021–22", "teacher hires, by
    control of school"): the middle of a title or caption whose first line was read apart (a running
    head, a caption), not a title. Names set in lower case on purpose keep a capital, a digit, a dot or
    an underscore ("iPhone", "asn1_create_element", "mime.cache"). A word alone on its line is a
    name, not a tail: an API's module heads its page in lower case ("keys", libxslt's reference). So
    is a line that calls a function ("new assert.AssertionError(options)", a signature heading
    Node.js's page at its top): no title's tail writes a name right against its parenthesis."""
    words = text.split(maxsplit=1)
    word = words[0] if len(words) > 1 else ""
    plain = len(word) >= 2 and word.isalpha() and word.islower() and word.isascii()
    return plain and not _CALL.search(text)


def _styled_heading_level(
    row: Row,
    text: str,
    config: LayoutConfig,
    style: DocStyle,
    where: RowContext,
) -> int:
    """Headings from the whole document's style: the bookmark outline, larger sizes (levels from the
    document's distinct heading sizes), short lines set heavier than the body text, and short
    isolated italic lines at body size (run-in section titles of handbooks)."""
    if CAPTION.match(text) or _ADDRESS.fullmatch(text.strip()):
        return 0  # "Table 1:", "[표 1]", "Figure 3-1": captions; web and e-mail addresses
    smallest = min(i.size for i in row.items)
    if style.cover_min_size and (smallest < style.cover_min_size or len(text.split()) < 2):
        return 0  # a cover page: only its title
    if (
        style.contents
        and row.size < config.styled_heading_ratio * style.body_size
        and normal_title(text) in style.contents
        and not (where.isolated and row.weight > style.body_weight)
    ):
        # An entry of a contents list: the heading it names is set larger elsewhere. A bold line
        # standing alone is the heading of a smaller section of that name (npm's "Synopsis" under
        # each subcommand, the contents naming the page's own "Synopsis").
        return 0
    if style.outline and max(row.caps_size, row.size) >= 0.95 * style.body_size:
        # not a smaller running title; a title in small capitals by its capitals' size
        level = outline_level(style.outline, text)
        if level:
            return min(level, 6)
    if cells_apart(row, config.min_cell_gap_ratio * style.body_size) or where.term:
        return 0  # cells side by side; a glossary's term over its definition
    if list_marker(text) and not NUMBERED_HEADING.match(text):
        return 0
    # a title in small capitals by its capitals' size ("1. R" + "ESULTS" at four fifths of it): its
    # letters' mean size fell between the sections' and the subsections', its level with it
    size = max(row.caps_size, row.size)
    ratio = size / style.body_size
    bold_level = min(style.level_for_size(0.0), 6)
    if (
        SECTION_NUMBER.match(text)
        and row.weight >= max(style.body_weight, 600)
        and ratio >= 0.95
        and len(text) <= 80
        and not text.rstrip(":").endswith(_SENTENCE_END)  # "3.2 Requirements:": numbered, a heading
    ):
        # A numbered section title ("2.1 Scope", "3 - ...") set in bold. This matters where the body
        # itself is bold (forms whose labels are bold): neither size nor weight sets it apart there.
        return bold_level if ratio < config.styled_heading_ratio else _size_level(style, size)
    heavier = row.weight >= style.body_weight + config.min_heading_weight_gain
    # Set in the brand colour its document gives its headings (teal, blue), at body size or a little
    # larger and not bold: the colour marks it as the weight marks a bold heading. One such line on a
    # page counts where it is also larger than the body (and not in the margin band, where running
    # heads stand).
    colored = (
        where.colored
        and ratio >= 0.95
        and (
            style.in_color_style(row.color, row.size)
            or (
                ratio >= COLOR_LARGER_RATIO
                and not (where.page_height and in_margin_band(row.box, where.page_height))
            )
        )
    )
    fonts = {i.font for i in row.items}
    styled = len(fonts) == 1 and style.in_heading_style(row.size, row.weight, fonts.pop())
    if (
        text.endswith(":")
        and styled
        and len(text.split()) <= config.max_lead_in_words
        and (heavier or ratio >= config.styled_heading_ratio)
    ):
        # Set like the document's other headings ("Requirements:" in the section titles' size and
        # weight): the style says heading, whatever its last character.
        text = text.rstrip(":").rstrip()
    if text.endswith(":") and ratio < config.heading_ratio:
        # A bold lead-in at body size on its own line ("Steps for Using the Microscope:") heads what
        # follows; one set a little larger ("For more information:" over an address) is a label,
        # unless a list or a paragraph follows it ("Key findings:" over its bullets): a label's
        # value is a few short lines (an address), a heading's section runs on in full lines.
        lead_in = (
            (heavier or colored) and text[:1].isupper() and len(text.split()) <= config.max_lead_in_words
        )
        if lead_in and ratio >= config.styled_heading_ratio and where.leads:
            return _size_level(style, size)
        return bold_level if lead_in and 0.75 <= ratio < config.styled_heading_ratio else 0
    if ratio >= config.styled_heading_ratio and (len(text) <= 120 or row.weight > style.body_weight):
        return _size_level(style, size)
    label = _label(where, ratio, text)
    if heavier and ratio >= 0.75 and len(text) <= 100 and not text.endswith(_SENTENCE_END) and not label:
        return bold_level
    if colored and not label:
        return bold_level
    other_face = bool(style.body_font) and all(i.font and i.font != style.body_font for i in row.items)
    if (
        other_face
        and style.body_weight >= 600
        and row.weight >= style.body_weight
        and ratio >= 0.95
        and len(text) <= 100
        and not text.endswith(_SENTENCE_END)
    ):
        # Where the body itself is bold (a form of bold labels), weight cannot mark a heading; a line
        # set bold in another typeface (the form's title) is one.
        return bold_level
    if (
        where.isolated
        and style.body_weight >= 600
        and row.weight >= style.body_weight
        and ratio >= 0.75
        and len(text.split()) <= config.max_isolated_heading_words
        and not text.endswith(_SENTENCE_END)
    ):
        # Where the body itself is bold, a bold line standing alone (a blank line above and below in
        # its column, nothing beside it) is a heading: a label has its value beside or under it.
        return bold_level
    return _quiet_title_level(row, text, style, where, bold_level)


def _label(where: RowContext, ratio: float, text: str) -> bool:
    """Whether a line (``ratio``: its size over the body's) is a label, not a heading, by where it
    stands. At body size, a line in from its section's edge (and not centred): a panel's or a list's
    label, an admonition's "Note" over its indented text. At any size, one that starts in the right
    part of its section: a button's or a tag's ("COPY" at a code panel's foot); and one smaller than
    the body in a section of a few words in the right part of the page (the buttons read as a column
    of their own; a slide's third panel's head is set no smaller than its text). Right-to-left rows
    keep the older rules: their edges are not read as a left-to-right row's."""
    apart = not where.aligned and (ratio >= 0.95 or where.far_right)
    return (apart or (where.tag and ratio < 0.95)) and not is_rtl(text)


def _size_level(style: DocStyle, size: float) -> int:
    """The level of a heading of ``size``. On a page in smaller print than the document, whose
    heading sizes were scaled down to it, a line in one of the document's own heading sizes keeps at
    least that size's level: "References" in the sections' size over a page of references in small
    print came out a level over the sections ("#")."""
    level = style.level_for_size(size)
    if style.print_scale < 1 and style.heading_sizes:
        own = replace(style, heading_sizes=tuple(h / style.print_scale for h in style.heading_sizes))
        if size >= 0.97 * own.heading_sizes[-1]:
            level = max(level, own.level_for_size(size))
    return min(level, 6)


def _quiet_title_level(row: Row, text: str, style: DocStyle, where: RowContext, bold_level: int) -> int:
    """Titles set at about the body's size and weight, marked by something quieter: their place in the
    document's numbering, italics on a short or lone line, small capitals, an underline, or the
    document's title face. 0: none of these."""
    ratio = row.size / style.body_size
    depth = style.numbered.get(normal_title(text))
    if depth and max(row.caps_size, row.size) / style.body_size >= 0.75:
        return min(bold_level + depth - 1, 6)  # a numbered section title set like the text around it
    name = text[m.end() :] if (m := SECTION_NUMBER.match(text)) else text  # "1.1 Timeline": its name
    titled = name[:1].isupper() and not text.endswith(_SENTENCE_END) and len(text) <= 60
    if row.italic and where.short_line and titled and 0.95 <= ratio <= 1.1:
        return min(bold_level + 1, 6)
    if (
        row.italic
        and where.isolated
        and titled
        and 1.03 <= ratio <= 1.1
        and len(text.split()) <= SMALL_CAPS_WORDS
    ):
        # standing alone, a little larger than the text (a slide's panel head, the panel too narrow
        # for the line to look short against it)
        return min(bold_level + 1, 6)
    if (
        (row.caps_size or row.underlined)
        and where.short_line
        and titled
        and len(text.split()) <= SMALL_CAPS_WORDS
        and max(row.caps_size, row.size) / style.body_size >= SMALL_CAPS_BODY
    ):
        return bold_level  # "Abstract", "References" in small capitals (IEEE's papers); an underlined title
    if (
        all(
            (i.font, i.weight) in style.title_faces or (i.font, ANY_WEIGHT) in style.title_faces
            for i in row.items
        )
        and where.short_line
        and titled
        and len(text.split()) <= SMALL_CAPS_WORDS
        and ratio >= 0.95
    ):
        return bold_level  # set in the document's title face, at body size
    return 0


SMALL_CAPS_WORDS = 8  # a title in small capitals or underlined is a few words; a longer line is emphasis
COLOR_LARGER_RATIO = 1.05  # a coloured line this much larger than the body needs no second of its kind


def colored_rows(units: Sequence[Row | Table], style: DocStyle, typical_gap: float) -> set[int]:
    """ids of the rows that stand apart as a heading set in an accent colour (units sorted top to
    bottom in one column): a run of one to three rows in one accent colour and size
    (``lines.color_heading_like`` for the run as a whole: short, no closing full stop), set off from
    the unit above by more than a line's spacing (or a change of size, or nothing above), whose next
    unit is neither another line of it nor a continuation of its sentence (a lower-case start), and
    neither a web address nor a caption ("Table 3.2 ..." in the figures' colour). A blue link inside a paragraph shares its row with black words or sits at
    the paragraph's line spacing; a coloured paragraph runs on for more than a few words."""
    if style.body_color < 0:
        return set()
    out: set[int] = set()
    k = 0
    while k < len(units):
        first = units[k]
        if not isinstance(first, Row) or first.color < 0:
            k += 1
            continue
        run = [first]
        for unit in units[k + 1 : k + 4]:
            last = run[-1]
            if not (
                isinstance(unit, Row)
                and unit.color == first.color
                and abs(unit.size - first.size) <= 0.05 * first.size
                and unit.box[1] - last.box[3] <= typical_gap + 0.3 * first.size
            ):
                break
            run.append(unit)
        text = " ".join(r.text for r in run)
        before = units[k - 1] if k else None
        after = units[k + len(run)] if k + len(run) < len(units) else None
        apart = (
            not isinstance(before, Row)
            or abs(before.size - first.size) > 0.1 * first.size
            or first.box[1] - before.box[3] > typical_gap + 0.3 * first.size
        )
        continued = isinstance(after, Row) and after.text.lstrip()[:1].islower()
        if (
            len(run) <= 3
            and apart
            and not continued
            and color_heading_like(text, first.color, first.size, style)
            and not _ADDRESS.search(text)
            and not CAPTION.match(text)
        ):
            out.update(id(r) for r in run)
        k += len(run)
    return out


def isolated_rows(
    units: Sequence[Row | Table], config: LayoutConfig, line_gap: float | None = None
) -> set[int]:
    """ids of the single-piece rows with no other unit within a blank line above or below them in
    their own x-range (units sorted top to bottom): lines that stand alone, as headings do. A blank
    line is ``isolation_gap_ratio`` × the row's size between the boxes; given ``line_gap`` (the gap
    between a paragraph's lines, on a scan), half a size more than that: OCR's boxes are padded, and
    their gaps fall short of the spacing by a third of a line or more."""

    def overlaps(a: Box, b: Box) -> bool:
        return min(a[2], b[2]) - max(a[0], b[0]) > 0

    alone: set[int] = set()
    for k, unit in enumerate(units):
        if not isinstance(unit, Row) or len(unit.items) != 1:
            continue
        gap = (
            config.isolation_gap_ratio * unit.size if line_gap is None else line_gap + SCAN_BLANK * unit.size
        )
        above = next((u for u in reversed(units[:k]) if overlaps(u.box, unit.box)), None)
        below = next((u for u in units[k + 1 :] if overlaps(u.box, unit.box)), None)
        if (above is None or unit.box[1] - above.box[3] >= gap) and (
            below is None or below.box[1] - unit.box[3] >= gap
        ):
            alone.add(id(unit))
    return alone


def leading_rows(units: Sequence[Row | Table], width: float) -> set[int]:
    """ids of the rows ending in a colon that head what follows them (units sorted top to bottom, in a
    section ``width`` wide): right above, within two of its lines, a lighter or smaller row that is a
    list item, or the first of two lines of a paragraph at one left edge whose first line runs across
    most of the section (``LEAD_LINE_SHARE``). An address or a contact block under a label is short lines."""
    out: set[int] = set()
    for k, unit in enumerate(units):
        if not isinstance(unit, Row) or not unit.text.rstrip().endswith(":"):
            continue
        after = units[k + 1 : k + 3]
        first = after[0] if after else None
        if not isinstance(first, Row) or first.box[1] - unit.box[3] > 2 * unit.size:
            continue
        if first.weight >= unit.weight and first.size >= unit.size:
            continue  # set alike: the colon line is one of a run of labels, not over its text
        if list_marker(first.text):
            out.add(id(unit))
            continue
        second = after[1] if len(after) > 1 else None
        if (
            isinstance(second, Row)
            and size_close(first.size, second.size)
            and abs(second.box[0] - first.box[0]) <= 0.5 * first.size
            and second.box[1] - first.box[3] <= 0.6 * first.size
            and first.box[2] - first.box[0] >= LEAD_LINE_SHARE * width
        ):
            out.add(id(unit))
    return out


LEAD_LINE_SHARE = 0.75  # a paragraph's first line fills at least three quarters of its column


def panel_leads(units: Sequence[Row | Table], panel: frozenset[int]) -> set[int]:
    """ids of the rows of a text panel over a picture (``panel``: ids of its lines) that head a
    paragraph: a run of rows in one weight and size, right above rows in a lighter weight that start
    at the same left edge and run on for at least two lines. The panel's other lines (taglines,
    labels, a logo's words) stay text."""
    rows = [u for u in units if isinstance(u, Row) and all(id(i) in panel for i in u.items)]
    leads: set[int] = set()
    k = 0
    while k < len(rows):
        run = [rows[k]]
        while k + len(run) < len(rows):
            nxt, last = rows[k + len(run)], run[-1]
            if not (
                nxt.weight == last.weight
                and size_close(nxt.size, last.size)
                and abs(nxt.box[0] - last.box[0]) <= 0.5 * last.size
                and nxt.box[1] - last.box[3] <= 0.6 * last.size
            ):
                break
            run.append(nxt)
        after = rows[k + len(run) : k + len(run) + 2]
        last = run[-1]
        if (
            len(after) == 2
            and all(r.weight < last.weight and abs(r.box[0] - last.box[0]) <= 0.5 * last.size for r in after)
            and after[0].box[1] - last.box[3] <= 2.0 * last.size
            and after[1].box[1] - after[0].box[3] <= 0.6 * after[0].size
        ):
            leads.update(id(r) for r in run)
        k += len(run)
    return leads


MAX_CODE_TITLE_WORDS = 16  # a heading set in code names a flag, a command or a call's signature


def code_titles(rows: Sequence[Row], listings: set[int], title_size: float = math.inf) -> set[int]:
    """ids of the rows (top to bottom) that are headings set in code: a line of ``listings`` all in
    bold or set at least ``title_size`` (a heading's size: rustdoc's "write!" in regular code at 1.125
    times the body, round 36), of a few words with letters (a signature's sixteen at most), no other
    line of code within a line's height above or below it (a listing's panel before it ends farther
    off; a bold one, within a listing's leading), and not a statement's end (";", "{", ","). Why:
    Markdown's ``#### `install-strategy` `` prints as a bold monospaced line over its text (GitHub's
    style, npm's CLI reference: 195 of its 497 headings); read as a listing of one line, the outline
    lost them all. Code itself is not set bold line by line."""
    out: set[int] = set()
    for k, row in enumerate(rows):
        text = row.text.strip()
        if (
            id(row) not in listings
            or not (row.bold or row.size >= title_size)
            or len(text.split()) > MAX_CODE_TITLE_WORDS
            or sum(c.isalpha() for c in text) < 2
            or text.endswith((";", "{", ",", "(", "\\"))
        ):
            continue
        near = (rows[k - 1] if k else None, rows[k + 1] if k + 1 < len(rows) else None)
        if not any(
            r is not None and id(r) in listings and _line_gap(r, row) <= _code_reach(r, row) for r in near
        ):
            out.add(id(row))
    return out


MAX_CODE_TITLE_LINES = 6  # a signature wrapped with its where-clause: a few lines


def wrapped_code_titles(rows: Sequence[Row], listings: set[int]) -> tuple[set[int], set[int]]:
    """(first lines, continuation lines) of the headings set in code that wrap over lines: a run of
    two to six lines of ``listings``, all bold, each within a bold listing's leading of the next, none
    set left of the first, with no other line of code within reach above or below, and not a
    statement's end (";", "{", "(", "\\"). Why: rustdoc wraps a long signature, and an impl's
    where-clause goes on lines of its own ("impl<I> Clone for StepBy<I>" / "where" / "I: Clone,");
    read as a listing, a struct's page lost nearly all of its outline (round 36). Code itself is not
    set bold line by line."""
    heads: set[int] = set()
    tails: set[int] = set()
    k = 0
    while k < len(rows):
        run = _bold_code_run(rows, k, listings)
        if not run:
            k += 1
            continue
        before = rows[k - 1] if k else None
        after = rows[k + len(run)] if k + len(run) < len(rows) else None
        first, last = run[0], run[-1]
        text = " ".join(r.text.strip() for r in run)
        if (
            2 <= len(run) <= MAX_CODE_TITLE_LINES
            and all(r.box[0] >= first.box[0] - 0.25 * first.size for r in run)
            and sum(c.isalpha() for c in text) >= 2
            and not text.endswith((";", "{", "(", "\\"))
            and not _code_near(before, first, listings)
            and not _code_near(after, last, listings)
        ):
            heads.add(id(first))
            tails.update(id(r) for r in run[1:])
        k += len(run)
    return heads, tails


def _bold_code_run(rows: Sequence[Row], k: int, listings: set[int]) -> list[Row]:
    """The lines of bold code from ``rows[k]`` on, each within a bold listing's leading of the one
    before (empty where ``rows[k]`` is no bold line of code). A line of a mark alone goes with them:
    rustdoc's "ⓘ" after a signature that fills its line wraps onto a line of its own."""
    run: list[Row] = []
    for row in rows[k:]:
        mark = bool(run) and all(icon(i.text) for i in row.items)
        if not (mark or (id(row) in listings and row.bold)):
            break
        if run and _line_gap(run[-1], row) > _code_reach(run[-1], row):
            break
        run.append(row)
    return run


def _code_near(near: Row | None, row: Row, listings: set[int]) -> bool:
    """Whether ``near`` is a line of code close enough to ``row`` to make both a listing's lines."""
    return near is not None and id(near) in listings and _line_gap(near, row) <= _code_reach(near, row)


LISTING_LEADING = 0.5  # × size: a listing's lines stand at most this far apart


def _code_reach(near: Row, row: Row) -> float:
    """How close a line of code must stand to ``row`` to make it a listing's line: a line's height, or,
    where that line is bold too, a listing's leading. rustdoc heads a method ("fn clone(&self)") under its
    impl ("impl Clone for Instant"), both bold code a line apart (round 33); bold code set as a listing
    runs at the listing's pitch."""
    return LISTING_LEADING * row.size if near.bold else row.size


def code_title_level(row: Row, style: DocStyle, config: LayoutConfig) -> int:
    """The level of a heading set in code (``code_titles``): by its size where that is a heading size,
    else one under the smallest heading size, as a bold line at body size is (inline code is set
    smaller than the text around it)."""
    if row.size >= config.styled_heading_ratio * style.body_size:
        return _size_level(style, row.size)
    return min(style.level_for_size(0.0), 6)


def _line_gap(a: Row, b: Row) -> float:
    """The blank between two rows, one above the other (either order)."""
    return max(a.box[1] - b.box[3], b.box[1] - a.box[3])
