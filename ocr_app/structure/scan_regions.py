"""The layout model's regions applied to a scan's OCR lines: which lines are titles, prose or figure text.

Why a pass of its own: the geometric layout (``structure.pipeline`` and its passes) only sees boxes and sizes, and on a
scan it has no fonts. The region model adds what geometry cannot tell: a bold section title at body
size is a ``title`` region, the short last lines of two paragraphs side by side are ``text`` regions
(prose, not the cells of a table), and a chart's axis labels lie in a ``figure`` region.

Each decision also needs the page's own evidence, because the model (CDLA, trained on Chinese
documents) is not always right: a ``figure`` counts only when it holds ink that is not text (bars,
curves, a photo), since the model also calls borderless tables figures; a ``text`` region makes its
lines prose only when they fill the region's width, as a paragraph's lines do.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ocr_app.schema import Block, Box
from ocr_app.structure.lines import TextLine, group_rows
from ocr_app.structure.paragraphs import GLYPH_BULLETS
from ocr_app.structure.pipeline import DEFAULT_PASSES, PageLayout, PagePass, insert_pass
from ocr_app.structure.regions import Region, detect_regions, overlap

if TYPE_CHECKING:
    from PIL import Image

    from ocr_app.structure.regions import LayoutModel

logger = logging.getLogger(__name__)

INSIDE = 0.5  # a line belongs to a region when this share of its box lies inside it
TITLE_SCORE = 0.6  # title regions below this score are not trusted (a code line scored 0.58)
FIGURE_SCORE = 0.45
GRAPHIC_INK = 0.01  # a figure holds non-text ink over at least this share of its area
PROSE_ROWS = 3  # a text region is prose when it has this many rows...
PROSE_FILL = 0.6  # ...and this share of them reach 75 % of its width
PROSE_WORDS = 5  # ...and its rows hold this many words on average (a paragraph's lines, not labels)
INK_LEVEL = 128
RULE_PX = 6  # a straight run of ink thinner than this is a rule, not part of a picture
SHEET_LINES = 8  # a figure holding this many lines with no picture among them is a photographed sheet


@dataclass(frozen=True)
class Figure:
    """A figure region confirmed by its graphic ink; ``index`` is what its lines carry as ``figure``."""

    box: Box
    index: int
    score: float


def graphic_ink(grey: Any, box: Box, text_boxes: Sequence[Box]) -> float:
    """Share of ``box`` covered by ink that lies in no text box and is no thin straight rule (bars,
    curves, a photo's pixels). Why the rules go: a table's rules (a booktabs table's three, a ruled
    grid) would otherwise make every table the model calls a figure a figure."""
    mask = _graphic_mask(grey, box, text_boxes)
    return float(mask.mean()) if mask.size else 0.0


def _crop(grey: Any, box: Box) -> Any:
    """The pixels of ``grey`` inside ``box`` (clipped to the image; empty when nothing is left)."""
    import numpy as np

    x0, y0 = max(int(box[0]), 0), max(int(box[1]), 0)
    x1, y1 = min(int(np.ceil(box[2])), grey.shape[1]), min(int(np.ceil(box[3])), grey.shape[0])
    return grey[y0 : max(y1, y0), x0 : max(x1, x0)]


def _graphic_mask(grey: Any, box: Box, text_boxes: Sequence[Box]) -> Any:
    """``graphic_ink``'s pixels: 1 where ``box`` holds ink outside the text boxes and the rules."""
    import cv2
    import numpy as np

    ink = _crop(grey, box) < INK_LEVEL
    if not ink.size:
        return np.zeros((0, 0), np.uint8)
    x0, y0 = max(int(box[0]), 0), max(int(box[1]), 0)
    h, w = ink.shape
    for b in text_boxes:
        bx0, by0 = max(int(b[0]) - 2 - x0, 0), max(int(b[1]) - 2 - y0, 0)
        bx1, by1 = min(int(np.ceil(b[2])) + 2 - x0, w), min(int(np.ceil(b[3])) + 2 - y0, h)
        if bx1 > bx0 and by1 > by0:
            ink[by0:by1, bx0:bx1] = False
    mask = ink.astype(np.uint8)
    for long, thick in (((25, 1), (1, RULE_PX)), ((1, 25), (RULE_PX, 1))):
        lines = cv2.morphologyEx(mask, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, long))
        solid = cv2.morphologyEx(lines, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, thick))
        mask[(lines > 0) & (solid == 0)] = 0  # long and thin: a rule (thick runs are bars: kept)
    return mask


def confirmed_figures(grey: Any, regions: Sequence[Region], lines: Sequence[TextLine]) -> list[Figure]:
    """Figure regions that hold a picture, not only text (numbered from 1, best score first)."""
    boxes = [ln.box for ln in lines]
    figures: list[Figure] = []
    for r in regions:
        if r.label != "figure" or r.score < FIGURE_SCORE:
            continue
        if any(overlap(r.box, f.box) > 0.5 or overlap(f.box, r.box) > 0.5 for f in figures):
            continue  # a second, overlapping box for the same figure
        share = graphic_ink(grey, r.box, boxes)
        if share < GRAPHIC_INK:
            logger.debug("figure region %s has %.3f graphic ink: text only, not a figure", r.box, share)
        elif _sheet(grey, r.box, lines):
            logger.debug("figure region %s is a sheet of text on a darker ground, not a figure", r.box)
        elif _filled_bands(grey, r.box, lines):
            logger.debug("figure region %s is text under filled bands (a table's head), not a figure", r.box)
        else:
            figures.append(Figure(r.box, len(figures) + 1, r.score))
    return figures


def _sheet(grey: Any, box: Box, lines: Sequence[TextLine]) -> bool:
    """Whether a figure region is a page of text whose ink lies only around it: a sheet photographed
    or scanned on a darker ground, which the model boxes as one picture. Why the lines' own box: a
    chart's bars and curves lie among its labels, while a sheet's ground lies outside its text."""
    inside = [ln.box for ln in lines if overlap(ln.box, box) >= INSIDE]
    if len(inside) < SHEET_LINES:
        return False
    hull = (
        min(b[0] for b in inside),
        min(b[1] for b in inside),
        max(b[2] for b in inside),
        max(b[3] for b in inside),
    )
    return graphic_ink(grey, hull, inside) < GRAPHIC_INK


BAND_FILL = 0.8  # a pixel row this full of ink across a region is a filled band (a table head's fill)
BAND_ROWS = 0.5  # ... the bands fill at most this share of its height (a photo fills it all)


def _filled_bands(grey: Any, box: Box, lines: Sequence[TextLine]) -> bool:
    """Whether a figure region is lines of text under bands filled across its width: a table whose
    head row (or a group's row) is set on a dark fill, which the model boxes as a picture. Why it is
    no figure: beside the bands it holds less picture ink than a figure must (``GRAPHIC_INK``), where
    a chart's bars, a diagram's shapes and a photo's pixels lie; a photo that fills whole rows fills
    the region's height, not a few rows of it."""
    inside = [ln.box for ln in lines if overlap(ln.box, box) >= INSIDE]
    if len(inside) < SHEET_LINES:
        return False
    mask = _graphic_mask(grey, box, inside)
    if not mask.size:
        return False
    bands = _closed(
        (_crop(grey, box) < INK_LEVEL).mean(axis=1) >= BAND_FILL, max(b[3] - b[1] for b in inside)
    )
    if not bands.any() or bands.mean() > BAND_ROWS:
        return False
    return float(mask[~bands].sum()) < GRAPHIC_INK * mask.size  # no picture beside the bands


def _closed(rows: Any, gap: float) -> Any:
    """``rows`` with runs of False no longer than ``gap`` between two True rows set True: a band's rows
    that its own white lettering keeps below ``BAND_FILL``."""
    import numpy as np

    out = rows.copy()
    on = np.flatnonzero(rows)
    for a, b in itertools.pairwise(on):
        if 1 < b - a <= gap + 1:
            out[a:b] = True
    return out


def _prose_regions(regions: Sequence[Region], lines: Sequence[TextLine]) -> list[Region]:
    """Text regions whose rows fill their width, as a paragraph's lines do (table cells do not)."""
    prose = []
    for r in regions:
        if r.label != "text":
            continue
        inside = [ln for ln in lines if overlap(ln.box, r.box) >= INSIDE]
        rows = group_rows(inside)
        if len(rows) < PROSE_ROWS:
            continue
        width = max(r.box[2] - r.box[0], 1.0)
        # One line filling the width: a row of cells a gap apart is no paragraph line. And sentences:
        # a table's column of labels ("Annual Library", "Science") fills a narrow region too.
        full = sum(1 for row in rows if max(i.box[2] - i.box[0] for i in row.items) >= 0.75 * width)
        words = sum(len(row.text.split()) for row in rows) / len(rows)
        if full >= PROSE_FILL * len(rows) and words >= PROSE_WORDS:
            prose.append(r)
    return prose


def figure_regions(
    image: Image.Image, lines: Sequence[TextLine], *, model: LayoutModel | None = None
) -> list[Figure]:
    """A second opinion for born-digital pages: the figures (charts, diagrams, photos) on the rendered
    page, so the text layer can mark their labels (``mark_figures``) and never build a table of a
    chart's axis labels. ``lines`` are the page's text lines in the image's pixels; runs the layout
    model once (about 0.10 CPU s on one thread, 0.16 on two)."""
    import numpy as np

    grey = np.asarray(image.convert("L"))
    return confirmed_figures(grey, detect_regions(image, model=model), lines)


def mark_figures(lines: Sequence[TextLine], figures: Sequence[Figure]) -> list[TextLine]:
    """The lines inside a figure marked as its labels (``in_figure``, ``figure``): ``layout`` reads
    them as one item, never as a table or a heading. Lines already marked keep their marks."""
    first = max((ln.figure for ln in lines), default=0)  # numbers after the engine's own figures
    out: list[TextLine] = []
    for ln in lines:
        inside = (f for f in figures if overlap(ln.box, f.box) >= INSIDE)
        figure = None if ln.in_figure else next(inside, None)
        if figure is None:
            out.append(ln)
        else:
            out.append(replace(ln, in_figure=True, figure=first + figure.index, role="figure"))
    return out


def _title_lines(regions: Sequence[Region], lines: Sequence[TextLine]) -> set[int]:
    """ids of the lines that title regions hold: a title's first row, and the rows after it set in
    the same weight and size (a title broken over lines). A title region that reaches into the text
    below (the model's box is loose) gives the title role to the title only. A row that starts with a
    bullet is a list's, whatever the box: the model boxed a slide's four bullets as a title."""
    titled: set[int] = set()
    for r in regions:
        if r.label != "title" or r.score < TITLE_SCORE:
            continue
        rows = group_rows([ln for ln in lines if overlap(ln.box, r.box) >= INSIDE])
        if not rows:
            continue
        first = rows[0]
        for row in rows:
            if row is not first and (row.bold != first.bold or not 0.85 <= row.size / first.size <= 1.18):
                break
            if row.text.lstrip()[:1] in GLYPH_BULLETS:
                break
            titled.update(id(i) for i in row.items)
    return titled


def annotate(
    lines: Sequence[TextLine], regions: Sequence[Region], grey: Any
) -> tuple[list[TextLine], list[Figure]]:
    """The lines with their ``role`` (and ``in_figure``/``figure``) set from the regions, and the
    confirmed figures."""
    figures = confirmed_figures(grey, regions, lines)
    titled = _title_lines(regions, lines)
    prose = _prose_regions(regions, lines)
    out: list[TextLine] = []
    for ln in lines:
        figure = next((f for f in figures if overlap(ln.box, f.box) >= INSIDE), None)
        if figure is not None:
            out.append(replace(ln, in_figure=True, figure=figure.index, role="figure"))
        elif id(ln) in titled:
            out.append(replace(ln, role="title"))
        elif any(overlap(ln.box, r.box) >= INSIDE for r in prose):
            out.append(replace(ln, role="prose"))
        else:
            out.append(ln)
    return out, figures


def place_figures(blocks: list[Block], figures: Sequence[Figure]) -> list[Block]:
    """Each figure as one ``image`` block (the Markdown crops it, as DeepSeek-OCR-2's figures are),
    where its labels were read, holding their text; a figure without text goes before the first block
    below its top edge."""
    out = list(blocks)
    for fig in figures:
        members = [k for k, b in enumerate(out) if b.box is not None and overlap(b.box, fig.box) >= 0.9]
        members = [k for k in members if out[k].label in ("text", "title", "sub_title", "list")]
        text = "\n".join(out[k].text for k in members if out[k].text)
        block = Block("image", text, [fig.box])
        if members:
            first = members[0]
            out = [b for k, b in enumerate(out) if k not in members[1:]]
            out[first] = block
        else:
            at = next(
                (k for k, b in enumerate(out) if b.box is not None and b.box[1] >= fig.box[1]), len(out)
            )
            out.insert(at, block)
    return out


def region_passes(
    regions: Sequence[Region], grey: Any, passes: Sequence[tuple[str, PagePass]] = DEFAULT_PASSES
) -> tuple[tuple[str, PagePass], ...]:
    """The page pipeline with the layout model's opinion plugged in: ``regions`` (roles and figure
    labels, ``annotate``) right before ``figures``, and ``figure_blocks`` (``place_figures``) last.

    A figure over a table the engine found from its rulings (``given_tables``) is that table: the
    model also calls ruled tables figures, and their rules are graphic ink."""
    figures: list[Figure] = []

    def mark(page: PageLayout) -> None:
        page.regions = [(r.label, r.box) for r in regions]
        page.lines, found = annotate(page.lines, regions, grey)
        ruled = [t[0] for t in page.given_tables]
        figures[:] = [f for f in found if not any(overlap(f.box, b) >= 0.5 for b in ruled)]

    def place(page: PageLayout) -> None:
        page.blocks = place_figures(page.blocks, figures)

    return (*insert_pass(passes, "regions", mark, before="figures"), ("figure_blocks", place))
