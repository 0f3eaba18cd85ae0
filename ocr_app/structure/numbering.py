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
from collections.abc import Iterable

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
