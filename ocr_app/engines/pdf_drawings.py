"""What a page draws that marks its text: list markers drawn as shapes, underlines and horizontal
rules; and the page's drawings, read once for all the rules that look at them.

Why: a list marker drawn as a disc has no glyph, an underlined line may be a heading, and a rule
across the page parts a header from the body; PyMuPDF hands every path to Python as a dict, so the
drawings are read once a page (``page_drawings``) and passed to each rule.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ocr_app.engines.paint import invisible
from ocr_app.structure.cell_lines import BULLET
from ocr_app.structure.lines import Rule, TextLine, channels
from ocr_app.structure.rule_frames import joined

if TYPE_CHECKING:
    import pymupdf


logger = logging.getLogger(__name__)

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


def drawn_paths(page: pymupdf.Page, paths: Paths) -> list[dict]:
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
        for path in drawn_paths(page, paths):
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
        for path in drawn_paths(page, paths):
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
        for path in drawn_paths(page, paths):
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
