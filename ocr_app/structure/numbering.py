"""Section numbers of headings and the levels they imply (issue 25: heading levels from the document's
own hierarchy).

Why: where a document sets sections and subsections in one size and weight ("2.1 Scope" and
"2.1.3 Limits", both bold at body size), only their numbers tell the levels apart. The text layer's
document profile records, for each level that its style rules give, the smallest numbering depth set
at that level when several are; a heading numbered deeper goes down as many levels as its number
has more parts. Chapter words ("Chapter 3", "Appendix B"), letters ("A.", "B.2") and Roman numerals
("IV.") count as one part.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator

logger = logging.getLogger(__name__)

# A letter or a Roman numeral counts only with a dot after it ("A.", "B.2", "IV.") or after a chapter
# word ("Appendix B"): "A Survey of ..." is no section number.
_NUMBERED = re.compile(
    r"^(?:(?:chapter|section|part|appendix|annex)\s+(?P<named>\d{1,2}|[A-Z]|[IVX]{1,4})"
    r"|(?P<first>\d{1,2}|[A-Z](?=\.)|[IVX]{1,4}(?=\.)))"
    r"(?P<rest>(?:\.\d{1,2}){0,5})\.?(?:\s+|\s*[-\u2013:]\s*)(?=\w)",
    re.I,
)
MAX_TITLE_CHARS = 100
_WORD_HYPHEN = re.compile(r"(?<=\w)[-\u00ad\u2010\u2011](?=\w)")


def normal_title(text: str) -> str:
    """A title as the document's bookmarks, its numbered titles and its lines are matched: lower case,
    punctuation and underscores as spaces, a hyphen inside a word dropped. Why: bookmarks are typed
    apart from the text: "2.13. Nonregular files" marks the line "2.13. Non-regular files", and
    "asn1_parser2tree" a title whose underscore is a drawn rule."""
    return " ".join(re.sub(r"[\W_]", " ", _WORD_HYPHEN.sub("", text.lower())).split())


def outline_level(outline: dict[str, int], text: str) -> int | None:
    """The level the document's bookmarks give the title ``text``, or None. A title matches with its
    section number or without it: texinfo's manuals bookmark "1 Introduction" but "ASN.1 syntax" for
    the line "2.1 ASN.1 syntax"."""
    if not outline:
        return None
    level = outline.get(normal_title(text))
    if level is None and (m := _NUMBERED.match(text.strip())) is not None and len(text) <= MAX_TITLE_CHARS:
        level = outline.get(normal_title(text.strip()[m.end() :]))
    return level


def numbering_depth(text: str) -> int:
    """How many parts the heading's section number has ("1" → 1, "1.2.3" → 3, "Chapter 4" → 1,
    "B.2" → 2), or 0 when it has none."""
    m = _NUMBERED.match(text.strip())
    if m is None or len(text) > MAX_TITLE_CHARS:
        return 0
    first = m.group("first") or m.group("named")
    if first.isalpha() and not first.isupper():
        return 0  # "a. item": a list marker, not a section number
    return 1 + m.group("rest").count(".")


def depth_bases(headings: Iterable[tuple[int, str]]) -> dict[int, int]:
    """``level → smallest numbering depth`` for the levels (as the style rules give them) at which
    headings of two or more numbering depths are set; ``headings`` are (level, text) pairs."""
    depths: dict[int, set[int]] = {}
    for level, text in headings:
        d = numbering_depth(text)
        if d:
            depths.setdefault(level, set()).add(d)
    bases = {level: min(ds) for level, ds in depths.items() if len(ds) >= 2}
    logger.debug("numbering depths by level: %s → bases %s", depths, bases)
    return bases


def numbered_level(level: int, text: str, bases: dict[int, int]) -> int:
    """``level`` moved down by how much deeper the heading is numbered than the level's base."""
    base = bases.get(level)
    depth = numbering_depth(text)
    if not base or not depth:
        return level
    return min(max(level + depth - base, 1), 6)


MAX_TITLE_WORDS = 10  # a numbered section title is a few words
TitleLine = tuple[str, tuple[float, int, str], bool]  # text, (size, weight, font), short on its page


def section_parts(text: str) -> tuple[int, ...]:
    """The numbers of a section number made of digits ("2.1 Scope" → (2, 1), "3. Costs" → (3,)); ()
    when the line starts with none (or with a letter, a Roman numeral or a chapter word)."""
    m = _NUMBERED.match(text.strip())
    if m is None or not (m.group("first") or "").isdigit():
        return ()
    return (int(m.group("first")), *(int(p) for p in m.group("rest").split(".") if p))


ROMAN, LETTER = 1000, 2000  # a Roman numeral's and a letter's part, apart from digits' (I. → 1001)
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}


def _roman(numeral: str) -> int:
    total = 0
    for k, ch in enumerate(numeral):
        value = _ROMAN_VALUES[ch]
        later = _ROMAN_VALUES[numeral[k + 1]] if k + 1 < len(numeral) else 0
        total += -value if value < later else value
    return total


def _outline_parts(texts: Iterable[str]) -> Iterator[tuple[int, ...]]:
    """Each line's section number as parts (``section_parts``), with Roman numerals and letters too:
    "III." is (1003,), a letter after it is a subsection of it ("B." → (1003, 2002)), as IEEE's papers
    number them; () for a line without one. A lone "I", "V" or "X" is Roman where it starts or goes on
    the Roman sequence, else a letter."""
    roman = 0
    for text in texts:
        m = _NUMBERED.match(text.strip())
        first = m.group("first") if m else None
        if m is None or first is None or m.group("rest"):
            yield section_parts(text)
            continue
        if first.isdigit():
            yield (int(first),)
            continue
        if not first.isupper():
            yield ()
            continue
        if set(first) <= set(_ROMAN_VALUES) and (len(first) > 1 or _roman(first) in (1, roman + 1)):
            roman = _roman(first)
            yield (ROMAN + roman,)
        elif len(first) == 1 and roman:
            yield (ROMAN + roman, LETTER + ord(first) - ord("A") + 1)
        else:
            yield ()


def _alike(a: tuple[float, int, str], b: tuple[float, int, str]) -> bool:
    """Set alike: one weight and face, sizes within a tenth (small capitals vary with the letters)."""
    return a[1:] == b[1:] and abs(a[0] - b[0]) <= 0.1 * max(a[0], b[0])


def numbered_titles(lines: Iterable[TitleLine]) -> dict[str, int]:
    """``normalised text → numbering depth`` of the lines that head numbered sections, from the
    document's lines in reading order: short lines on their own ("1. Recommendations", "1.1 Costs",
    "III. Results", "B. Training") that start with a section number and end in no full stop.

    Why: a document may set its section titles in the body's size and weight, marked only by an
    underline, small capitals or another typeface (round 10 of issue 30), and then only their numbers
    tell them from the text. A numbered line heads a section when the next numbered line after it is
    its first subsection ("1." then "1.1"), or when it continues the sequence of such sections in their
    style with text after it ("4. Conclusion" after "3."); a subsection heads one under an accepted
    section. A numbered list ("1. Publish …", "2. Train …") has no subsections under its items, its
    items follow each other line by line, and its numbers start again at 1, so it stays a list. Needs
    two sections with subsections; else nothing."""
    lines = list(lines)
    cands = [
        (parts, text, style, k)
        for k, ((text, style, short), parts) in enumerate(
            zip(lines, _outline_parts(t for t, _, _ in lines), strict=True)
        )
        if short
        and parts
        and len(parts) <= 3
        and len(text.split()) <= MAX_TITLE_WORDS
        and not text.rstrip().endswith((".", ",", ";", ":"))
        and (m := _NUMBERED.match(text.strip())) is not None
        and text.strip()[m.end() :][:1].isupper()
    ]
    accepted: list[tuple[tuple[int, ...], str, tuple[float, int, str]]] = []
    parents = 0
    for k, (parts, text, style, at) in enumerate(cands):
        nxt = cands[k + 1][0] if k + 1 < len(cands) else ()
        alone = k + 1 == len(cands) or cands[k + 1][3] > at + 1  # text between it and the next
        opens = len(nxt) == len(parts) + 1 and nxt[:-1] == parts and nxt[-1] % ROMAN == 1
        under = [a for a in accepted if len(a[0]) == len(parts) - 1]
        if len(parts) > 1 and not (under and under[-1][0] == parts[:-1]):
            continue  # a subsection whose section was not taken
        same_depth = [a for a in accepted if len(a[0]) == len(parts) and a[0][:-1] == parts[:-1]]
        follows = (
            alone
            and bool(same_depth)
            and same_depth[-1][0][-1] + 1 == parts[-1]
            and _alike(same_depth[-1][2], style)
        )
        first_under = len(parts) > 1 and parts[-1] % ROMAN == 1  # a taken section's first subsection
        if opens or follows or first_under:
            accepted.append((parts, text, style))
            parents += opens
    if parents < 2:
        return {}
    # Sections before the first that opens a subsection ("I. Introduction", "II. Related work" before
    # "III. Method" and its "A."): the sequence taken back to its start, in the sections' style.
    first = min((k for k, c in enumerate(cands) if c[0] == accepted[0][0]), default=0)
    want, style = accepted[0][0], accepted[0][2]
    for parts, text, cstyle, _ in reversed(cands[:first]):
        if (
            len(parts) == len(want)
            and parts[:-1] == want[:-1]
            and parts[-1] + 1 == want[-1]
            and _alike(cstyle, style)
        ):
            accepted.insert(0, (parts, text, cstyle))
            want = parts
    out = {normal_title(text): len(parts) for parts, text, _ in accepted}
    logger.debug("numbered section titles: %d", len(out))
    return out
