"""Heading levels of a scanned document from the whole document's hierarchy, not page by page.

Why: on a scan the page layout decides *which* lines are headings (size, weight, the layout model's
title regions), but a page alone cannot tell *which level* one is: a page holding only "1.2" and
"1.3" section titles makes them its largest headings, and a 1.5× heading is "##" whether the
document also has 1.8× chapter titles or not. The light engine reads a document's first pages before
it lays any of them out (``LightOcrEngine.predict_stream``), records every heading's size relative to
its page's body text and its weight (``HeadingRecord``), and ranks them once for the document:

- **size tiers**: the sized headings' ratios clustered (a tier spans < ``TIER_GAP``; the size measure
  spreads ±5 %), largest first → levels; the first tier is ``#`` only when it is title-sized
  (≥ the layout's ``h1_ratio``), else ``##``, as on the text layer;
- **bold at body size** (or a title region's line at body size): the level below every size tier;
- **numbering depth** (``structure.numbering``, as on the text layer): where headings numbered to
  different depths share a level ("2.1" and "2.1.3" both bold at body size), a deeper number goes
  down a level per part.
"""

from __future__ import annotations

import logging
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from ocr_app.schema import Block
from ocr_app.structure.heading_tiers import LONE_TITLE_LINES, LONE_TITLE_RATIO
from ocr_app.structure.headings import set_strong
from ocr_app.structure.lines import LayoutConfig, TextLine
from ocr_app.structure.numbering import depth_bases, numbered_level

logger = logging.getLogger(__name__)

TIER_GAP = 1.12  # two heading sizes less than this ratio apart are one tier
_HASHES = re.compile(r"^(#{1,6}) ")


@dataclass(frozen=True)
class HeadingRecord:
    """One heading as the page layout found it: its size over its page's body size, its weight."""

    ratio: float
    bold: bool  # set strong: bold, underlined or in small capitals (``headings.set_strong``)
    text: str


@dataclass(frozen=True)
class DocumentLevels:
    """The document's heading hierarchy: size tiers (ratios, largest first) and where they start."""

    tiers: tuple[float, ...] = ()
    first_level: int = 2
    heading_ratio: float = 1.25  # below this a heading is set at body size (bold, or a title region)
    depth_bases: dict[int, int] = field(default_factory=dict)  # ``numbering.depth_bases``
    # Bold headings at body size seen: a plain one (italic, centred) at body size goes a level under them.
    bold_at_body: bool = False
    # Strong headings under the heading size in two ranks (``_body_ranks``): a size they split at (0:
    # none), or capitals over mixed case.
    body_split: float = 0.0
    caps_over: bool = False

    def level(self, record: HeadingRecord) -> int:
        """The level of one heading: its tier's rank, or the level below all tiers at body size (and
        one more for a plain one where the document also sets bold ones there: "Limitations" in italics
        under "Costs and funding" in bold; one more for the lower of two ranks of strong ones)."""
        if record.ratio >= self.heading_ratio and self.tiers:
            nearest = min(range(len(self.tiers)), key=lambda k: abs(record.ratio / self.tiers[k] - 1))
            base = nearest + self.first_level
        else:
            base = len(self.tiers) + self.first_level + (self.bold_at_body and not record.bold)
            if (self.body_split and record.ratio < self.body_split) or (
                self.caps_over and not _capitals(record.text)
            ):
                base += 1
        return numbered_level(min(base, 6), record.text, self.depth_bases)


def heading_records(
    blocks: Sequence[Block], lines: Sequence[TextLine], body: float
) -> list[HeadingRecord | None]:
    """One record per heading block of a page (None where no line lies in it), from the lines whose
    centre lies in its box (the layout's frame: this runs as the page's last pass)."""
    out: list[HeadingRecord | None] = []
    for block in _headings(blocks):
        box = block.box
        inside = [
            ln
            for ln in lines
            if box is not None
            and box[0] <= (ln.box[0] + ln.box[2]) / 2 <= box[2]
            and box[1] <= (ln.box[1] + ln.box[3]) / 2 <= box[3]
        ]
        if not inside or body <= 0:
            out.append(None)
            continue
        # Small capitals by their capitals' size; underlined and small capitals rank with bold, over
        # italics (``headings.set_strong``).
        ratio = statistics.median(max(ln.caps_size, ln.size) for ln in inside) / body
        strong = all(set_strong(ln, body) for ln in inside)
        out.append(HeadingRecord(ratio, strong, _HASHES.sub("", block.text)))
    return out


def _headings(blocks: Sequence[Block]) -> list[Block]:
    return [b for b in blocks if b.label in ("title", "sub_title") and _HASHES.match(b.text)]


def document_levels(
    records: Sequence[HeadingRecord | None], config: LayoutConfig, first_page: int = 0
) -> DocumentLevels:
    """The hierarchy of the headings recorded over the document's pages read so far; ``first_page``:
    how many of ``records`` are the first page's."""
    lone = _lone_title(records[:first_page], records[first_page:], config)
    records = [r for r in records if r is not None]
    sized = sorted((r.ratio for r in records if r.ratio >= config.heading_ratio), reverse=True)
    tiers: list[list[float]] = []
    for ratio in sized:
        if tiers and tiers[-1][0] / ratio < TIER_GAP:
            tiers[-1].append(ratio)
        else:
            tiers.append([ratio])
    # One style of slide title measured 1.23-1.26 × the body, and split across two levels. Where a
    # heading measures under the heading size but within the lowest tier's span, that tier reaches
    # down its whole span, for the later pages too.
    floor = config.heading_ratio
    span = tiers[-1][0] / TIER_GAP if tiers else floor
    if any(span < r.ratio < floor for r in records):
        floor = span
    means = tuple(statistics.median(t) for t in tiers)
    # A lone title is "#" where any other heading stands under it: a size tier below, or bold at body
    # size (a report's "1. METHOD" in bold capitals at 1.2 × the body, under its 1.8 × title).
    first = 1 if means and (means[0] >= config.h1_ratio or (lone and len(records) > len(tiers[0]))) else 2
    split, caps = _body_ranks([r for r in records if r.bold and r.ratio < floor])
    sized_levels = DocumentLevels(means, first, floor, body_split=split, caps_over=caps)
    bases = depth_bases((sized_levels.level(r), r.text) for r in records)
    logger.debug("document heading tiers %s (first level %d), numbering bases %s", means, first, bases)
    bold = any(r.bold and r.ratio < floor for r in records)
    return DocumentLevels(means, first, floor, bases, bold, split, caps)


RANK_RECORDS = 2  # each of two ranks of strong headings under the heading size holds this many


def _body_ranks(strong: Sequence[HeadingRecord]) -> tuple[float, bool]:
    """Two ranks among the strong headings (bold, small capitals, underlined) set under the heading
    size: the size where their sizes part by ``TIER_GAP`` or more (sections bold at 1.14 × the body
    over subsections bold at its size), else capitals over mixed case ("DATA SOURCES" over "Main
    findings", both bold at about the body's size); each rank of at least ``RANK_RECORDS`` headings.
    Why: a report sets both its section and its subsection titles bold under the light engine's
    heading size (1.25 ×), and they came out on one level. (0, False): one rank."""
    sizes = sorted(r.ratio for r in strong)
    for k in range(RANK_RECORDS, len(sizes) - RANK_RECORDS + 1):
        if sizes[k] / sizes[k - 1] >= TIER_GAP:
            return sizes[k], False
    capitals = sum(1 for r in strong if _capitals(r.text))
    return 0.0, capitals >= RANK_RECORDS and len(strong) - capitals >= RANK_RECORDS


def _capitals(text: str) -> bool:
    """Set in capitals: four letters or more, none in lower case."""
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= 4 and not any(c.islower() for c in letters)


def _lone_title(
    first: Sequence[HeadingRecord | None], rest: Sequence[HeadingRecord | None], config: LayoutConfig
) -> bool:
    """Whether the largest heading is a title's, as on the text layer (``heading_tiers._lone_title``): set
    on the first page only, on at most ``LONE_TITLE_LINES`` headings, from ``LONE_TITLE_RATIO`` × the
    body. Why: a report's or a deck's title measures 1.7-1.85 × the body on a scan, under the 1.9 × of
    ``#``, and came out at the sections' level ("##") on 114 of the printed probe's 136 documents."""
    top = max((r.ratio for r in [*first, *rest] if r is not None), default=0.0)
    if top < LONE_TITLE_RATIO:
        return False
    at_top = [r for r in first if r is not None and r.ratio / top > 1 / TIER_GAP]
    return 0 < len(at_top) <= LONE_TITLE_LINES and not any(
        r is not None and r.ratio / top > 1 / TIER_GAP for r in rest
    )


def relevel(blocks: list[Block], records: Sequence[HeadingRecord | None], levels: DocumentLevels) -> None:
    """Each heading block of a page set to its level in the document (``records`` as
    ``heading_records`` made them for these blocks)."""
    heads = _headings(blocks)
    if len(heads) != len(records):
        logger.debug("page headings and records differ (%d vs %d): levels kept", len(heads), len(records))
        return
    for block, record in zip(heads, records, strict=True):
        if record is None:
            continue
        level = levels.level(record)
        block.text = "#" * level + " " + _HASHES.sub("", block.text)
        block.label = "title" if level == 1 else "sub_title"
