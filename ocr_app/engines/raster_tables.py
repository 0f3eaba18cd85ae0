"""Tables pasted as pictures into born-digital pages, read through the light engine's path.

Why: a screenshot or a scan of a table placed on a born-digital page has no text-layer words, so the
text layer reads nothing there, while the light engine (RapidOCR's words, the structure model's grid)
reads such a table almost perfectly (issue 30). Here a picture on a text-layer page that is big enough
to hold a table, holds no text-layer word, looks like a document (mostly one background colour, or a
few flat tones as in a striped table; a photo or a gradient does not) and that the layout model calls a table (a chart is a figure to it, even
when its labels fill a grid) is rendered at its own resolution, read by the light engine's
recogniser, and its words are put in the structure model's cells (``structure.learned_tables``, the
word-position rules when that model is not installed). A full grid becomes a table at the picture's place;
words that make none (a chart's labels, a map's legend, a program window) stay in the picture, as
before: docling's ground truth leaves a picture's text out, and emitting it cost NID there
(docs/ACCURACY.md, "Raster tables on born-digital pages"; ``keep_text`` emits them as figure labels).

Cost: pages without pictures run nothing new (the gate is ``page.get_images()``, which the text
layer already asks). The recogniser is built once per process, on the first such picture, from the
rapidocr wheel (offline; the composition root hands the text layer the light engine's loader, as
engine adapters do not import each other); without the ``light`` extra pictures stay as before.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from ocr_app.exceptions import EngineError, EngineUnavailableError
from ocr_app.structure.lines import TextLine, body_size
from ocr_app.structure.table_html import NOTE_LEAD, Cell

if TYPE_CHECKING:
    import pymupdf
    from PIL import Image

    from ocr_app.schema import Box
    from ocr_app.structure.regions import Region

logger = logging.getLogger(__name__)

MIN_WIDTH_PT = 90.0  # a picture narrower than this (a logo, an icon) holds no table
MIN_HEIGHT_PT = 30.0  # ... or lower than this: two rows of 10 pt text with their padding
MAX_PAGE_SHARE = 0.9  # a picture covering the page is a scan's background, the router's business
MIN_PAPER_SHARE = 0.45  # this share of the picture in its most common colour: a document, not a photo
FLAT_TONES, MIN_FLAT_SHARE = 3, 0.7  # ... or this share in its three most common (stripes, shading)
PHOTO_MARGIN = 0.15  # a picture this far under both shares in the page image is a photo at any resolution
MAX_ZOOM = 4.0  # render a picture at most at 288 DPI (its own pixels when fewer)
MAX_SIDE_PX = 2400  # ... and at most this long a side
MIN_WORD_SHARE = 0.6  # the table must hold this share of the picture's lines (else: a figure with a grid)
MIN_FULL_ROWS = 3  # rows with two or more filled cells a picture's table needs
MIN_FILL = 0.7  # ... and this share of its cells filled
MIN_TABLE_SCORE = 0.5  # the layout model's confidence that the picture shows a table
MIN_TABLE_COVER = 0.5  # ... over at least this share of the picture (a chart is a "figure" to it)
FIGURE_BASE = 1000  # figure numbers of pictures' labels, apart from the text layer's figures


@dataclass
class Picture:
    """A picture to read: its box on the page as displayed, the picture rendered, and the zoom from
    the displayed page's pixels to the rendering's."""

    box: Box
    image: Image.Image
    zoom: float


def available() -> bool:
    """Whether the light engine's recogniser is installed (``pip install 'ocr-app[light]'``)."""
    from importlib.util import find_spec

    try:
        return find_spec("rapidocr") is not None
    except (ImportError, ValueError):
        return False


class RegionReader(Protocol):
    """What reads a picture's text lines (the light engine's ``read_region``), handed in by the
    composition root: engine adapters do not import each other."""

    def read_region(self, image: Any) -> list[TextLine]: ...


_reader: RegionReader | None = None  # built on first use (tests reset it to see that it is not)
_lock = threading.Lock()
_read_lock = threading.Lock()


def reader(load: Callable[[], RegionReader]) -> RegionReader:
    """The process's picture reader: ``load()`` called once, lazily, under a lock
    (``EngineUnavailableError`` without the ``light`` extra)."""
    global _reader
    with _lock:
        if _reader is None:
            _reader = load()
        return _reader


def release() -> None:
    """Drop the picture reader (its onnxruntime sessions), when the text layer is unloaded."""
    global _reader
    with _lock:
        _reader = None


def _paper_share(image: Image.Image, tones: int = 1) -> float:
    """The share of the picture's pixels within a few grey levels of its ``tones`` most common ones."""
    import numpy as np

    grey = np.asarray(image.convert("L").reduce(2) if min(image.size) >= 8 else image.convert("L"))
    hist = np.bincount(grey.ravel(), minlength=256)
    held = 0
    for _ in range(tones):
        peak = int(hist.argmax())
        held += int(hist[max(0, peak - 6) : peak + 7].sum())
        hist[max(0, peak - 6) : peak + 7] = 0
    return held / max(grey.size, 1)


def _document_like(image: Image.Image) -> bool:
    """Mostly paper (``MIN_PAPER_SHARE`` in one tone), or mostly a few flat tones (a striped or shaded
    table: white and two tints of blue): a document, not a photo or a gradient."""
    return _paper_share(image) >= MIN_PAPER_SHARE or _paper_share(image, FLAT_TONES) >= MIN_FLAT_SHARE


def _photo(image: Image.Image) -> bool:
    """Far from a document in both tests of ``_document_like`` (by ``PHOTO_MARGIN``): a photo even at the
    picture's own resolution, where the shares of a document's paper rise as its text sharpens (by at
    most 0.11 over the 131 pictures of the tuning and probe sets)."""
    return (
        _paper_share(image) < MIN_PAPER_SHARE - PHOTO_MARGIN
        and _paper_share(image, FLAT_TONES) < MIN_FLAT_SHARE - PHOTO_MARGIN
    )


def pictures(
    page: pymupdf.Page, lines: Sequence[TextLine], scale: float, seen: Image.Image | None = None
) -> list[Picture]:
    """The pictures of an upright page that may hold a table: big enough, no text-layer line over
    them, mostly one background colour. Call with the PDF lock held (it renders).

    ``seen``: the page as rendered already, ``scale`` pixels a point. A picture that is plainly a photo
    there is not rendered again at its own resolution: decoding a camera's 12 MP JPEG for that cost
    0.15-0.6 CPU s, the page's whole reading 0.03."""
    import pymupdf
    from PIL import Image

    if page.rotation or not page.get_images():
        return []
    area = abs(page.rect) or 1.0
    out: list[Picture] = []
    try:
        infos = page.get_image_info()
    except Exception as exc:  # a picture we cannot place is left as it was
        logger.debug("image info unavailable: %s", exc)
        return []
    for info in infos:
        r = pymupdf.Rect(info["bbox"]) & page.rect
        if r.is_empty or r.width < MIN_WIDTH_PT or r.height < MIN_HEIGHT_PT or abs(r) > MAX_PAGE_SHARE * area:
            continue
        box = (r.x0 * scale, r.y0 * scale, r.x1 * scale, r.y1 * scale)
        if any(_touches(ln.box, box) for ln in lines):
            continue  # text over or inside the picture: the text layer reads it
        if any(_same(box, p.box) for p in out):
            continue
        if seen is not None and _photo(seen.crop(tuple(round(v) for v in box))):
            continue
        native = max(info.get("width", 0) / r.width, info.get("height", 0) / r.height)
        zoom_pt = min(max(scale, native), MAX_ZOOM, MAX_SIDE_PX / max(r.width, r.height))
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom_pt, zoom_pt), clip=r, alpha=False)
        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        if not _document_like(image):
            continue  # a photo or a gradient: no table in it
        out.append(Picture(box, image, zoom_pt / scale))
    return out


def _touches(line: Box, box: Box) -> bool:
    w = min(line[2], box[2]) - max(line[0], box[0])
    h = min(line[3], box[3]) - max(line[1], box[1])
    return w > 0 and h > 0 and w * h >= 0.3 * max((line[2] - line[0]) * (line[3] - line[1]), 1e-6)


def _same(a: Box, b: Box) -> bool:
    return all(abs(x - y) < 2 for x, y in zip(a, b, strict=True))


TableGrid = tuple[tuple[float, float, float, float], list[list[Cell]], int]
Rules = Callable[[list[TextLine]], "tuple[list[list[Cell]], int, list[TextLine]] | None"]


def read(
    found: Sequence[Picture],
    load: Callable[[], RegionReader],
    *,
    rules: Callable[[float, float], Rules],
    join: Callable[[str, str], str] | None = None,
    learned: bool = True,
    first_figure: int = FIGURE_BASE,
    keep_text: bool = False,
    regions: Callable[[Image.Image], Sequence[Region]] | None = None,
    page_regions: Sequence[Region] | None = None,
) -> tuple[list[TableGrid], list[TextLine]]:
    """Each picture read: the tables (boxes in the page's displayed pixels) and the lines of pictures
    that hold no table (marked as the picture's figure labels). ``rules(width, body)``: the word-position
    finder for a picture ``width`` pixels wide, its text ``body`` pixels high; ``load`` builds the
    recogniser (``reader``); ``learned``: the structure model may be asked; ``regions``: the layout
    model over one picture (``structure.regions.detect_regions`` when None), asked before anything is
    read, so only a picture it calls a table is read (with ``keep_text``, every picture is);
    ``page_regions``: the layout model's regions of the whole page, when the page was looked at
    already: a picture is then judged by them (``covered_by_table``), with no call of its own.
    Raises ``EngineUnavailableError`` when the recogniser or the layout model cannot load."""
    from ocr_app.structure import learned_tables as lt

    tables: list[TableGrid] = []
    loose: list[TextLine] = []
    engine = None
    for k, pic in enumerate(found):
        verdict = (
            page_verdict(pic.box, page_regions)
            if page_regions is not None
            else shows_table(pic.image, regions)
        )
        if not keep_text and verdict is False:
            continue  # a chart or a diagram: its words in a grid are still no table (ICDAR's eu-020/021)
        engine = engine or reader(load)  # built on the first picture worth reading
        try:
            with _read_lock:  # one picture at a time: the recogniser's sessions are shared
                held = engine.read_region(pic.image)
        except EngineError as exc:  # an unreadable picture stays a picture; the page's text stands
            logger.warning("picture at %s not read: %s", tuple(round(v) for v in pic.box), exc)
            continue
        if not held:
            continue
        body = body_size(held)
        table = None
        whole = (0.0, 0.0, float(pic.image.width), float(pic.image.height))
        if learned:
            try:
                got, _ = lt.tables_in_regions(
                    pic.image, [whole], held, body=body, join=join, rules=rules(pic.image.width, body)
                )
                table = max(got, key=lambda t: len(t.lines), default=None)
            except EngineUnavailableError as exc:
                logger.warning("picture tables from word positions only: %s", exc)
                learned = False
        if table is None and not learned:
            other = rules(pic.image.width, body)(held)
            if other is not None:
                table = lt.LearnedTable(whole, other[0], other[1], other[2])
        if table is not None and len(table.lines) >= MIN_WORD_SHARE * len(held) and full_grid(table.rows):
            rows, note = notes_below(table.rows)
            header = table.header_rows or _bold_header(table.lines, len(rows))
            tables.append((pic.box, rows, header))
            # The note under the table, inside the picture ("Source: …"), is text after the table; so
            # are a caption over it and notes under it that the table reader left out (``_trim_prose``).
            top = min(ln.box[1] for ln in table.lines)
            bottom = max(ln.box[3] for ln in table.lines)
            taken = {id(ln) for ln in table.lines}
            loose += [
                replace(_on_page(ln, pic, 0), in_figure=False, figure=0)
                for ln in held
                if (note and " ".join(ln.text.split()) in note)
                or (id(ln) not in taken and (ln.box[1] >= bottom or ln.box[3] <= top))
            ]
            continue
        if keep_text:
            loose += [_on_page(ln, pic, first_figure + k) for ln in held]
    return tables, loose


def shows_table(image: Image.Image, regions: Callable[[Image.Image], Sequence[Region]] | None = None) -> bool:
    """Whether the layout model calls the picture a table: a table region of score ``MIN_TABLE_SCORE``
    over ``MIN_TABLE_COVER`` of it.

    Why the model and not the grid test alone: a bar chart's axis labels beside its legend entries, or
    a pie chart's percentages beside its legend, fill a grid of three rows and two columns (ICDAR 2013's
    eu-020 and eu-021: three charts read as tables, regions precision 0.935 -> 0.917); the layout model
    sees the bars and slices and says "figure" (0.87-0.97), and "table" (0.81-0.98) for ruled and
    borderless tables alike. A picture it does not call a table stays a picture, as before."""
    if regions is None:
        from ocr_app.structure.regions import detect_regions as regions
    area = float(image.width * image.height) or 1.0
    return any(
        r.label == "table"
        and r.score >= MIN_TABLE_SCORE
        and (r.box[2] - r.box[0]) * (r.box[3] - r.box[1]) >= MIN_TABLE_COVER * area
        for r in regions(image)
    )


def page_verdict(box: Box, regions: Sequence[Region]) -> bool | None:
    """What the page's layout regions say of the picture at ``box``: True, a table (``covered_by_table``);
    False, a figure (a figure region of score ``MIN_TABLE_SCORE`` holding ``MIN_TABLE_COVER`` of it) or
    no region over it at all (a logo, an ornament); None, neither: the words decide (``full_grid``).

    Why not "no table region: no table": over a wide, low picture of a striped table (five times as wide
    as high, set inside a page's text) the page's model says "reference" or "text", and on the picture
    alone "figure" or "table" by turns as it is padded; its words fill a grid all the same. What the model
    is sure of, it says as a figure: ICDAR's charts, whose words fill a grid too, are figures at 0.94-0.97
    on their pages, so they stay pictures."""
    from ocr_app.structure.regions import overlap

    if covered_by_table(box, regions):
        return True
    held = [r for r in regions if overlap(box, r.box) >= MIN_TABLE_COVER]
    if not held or any(r.label == "figure" and r.score >= MIN_TABLE_SCORE for r in held):
        return False
    return None


def covered_by_table(box: Box, regions: Sequence[Region]) -> bool:
    """Whether the page's layout regions call the picture at ``box`` a table: a table region of score
    ``MIN_TABLE_SCORE`` holding ``MIN_TABLE_COVER`` of the picture (``shows_table``'s test, on the
    regions the page already has: one layout call a page instead of one a picture)."""
    from ocr_app.structure.regions import overlap

    return any(
        r.label == "table" and r.score >= MIN_TABLE_SCORE and overlap(box, r.box) >= MIN_TABLE_COVER
        for r in regions
    )


# A note under a table: its source, a note, a footnote mark ("Source: national accounts", "Note: …", "* p < 0.05").
_NOTE = re.compile(rf"^\s*(?:{NOTE_LEAD}|[*†‡§¹²³])", re.IGNORECASE)


def notes_below(rows: list[list[Cell]]) -> tuple[list[list[Cell]], str]:
    """The table's rows without the notes under it, and the notes' text ("" when none): a last row
    whose one text is its first cell (or a cell across the table) that reads as a source or a note.

    Why: a picture of a table often holds its source line under the grid; the structure model reads it
    as a last row spanning the table, and a spreadsheet gets "Source: …" as data. A row is kept when
    without it the rest would be no table (``full_grid``)."""
    notes: list[str] = []
    while len(rows) > 1:
        texts = [c.text.strip() for c in rows[-1]]
        if not texts[0] or any(texts[1:]) or not _NOTE.match(texts[0]) or not full_grid(rows[:-1]):
            break
        notes.insert(0, " ".join(texts[0].split()))
        rows = rows[:-1]
    return rows, " ".join(notes)


def full_grid(rows: Sequence[Sequence[Cell]]) -> bool:
    """Whether a picture's reading is a table: at least ``MIN_FULL_ROWS`` rows with two or more filled
    cells and ``MIN_FILL`` of all cells filled.

    Why stricter than on the text layer: a screenshot of a program's window (a tree beside a list)
    and a map with a legend both read as a grid of a few cells, with most of the tree's rows empty
    beside it or two rows of labels; a table someone pasted as a picture fills its grid."""
    cells = [c for row in rows for c in row]
    filled = sum(1 for c in cells if c.text.strip())
    full_rows = sum(1 for row in rows if sum(1 for c in row if c.text.strip()) >= 2)
    return full_rows >= MIN_FULL_ROWS and filled >= MIN_FILL * max(len(cells), 1)


def _bold_header(lines: list[TextLine], n_rows: int) -> int:
    """A first row set bold (the ink's stroke) where the rest is not: the header."""
    from ocr_app.structure.lines import group_rows

    rows = group_rows(lines)
    if len(rows) >= 2 and all(ln.bold for ln in rows[0].items) and not any(ln.bold for ln in rows[1].items):
        return 1 if n_rows > 1 else 0
    return 0


def _on_page(ln: TextLine, pic: Picture, figure: int) -> TextLine:
    """A picture's line in the page's displayed pixels, marked as that picture's label."""
    z = pic.zoom
    x0, y0 = pic.box[0], pic.box[1]
    b = ln.box
    return replace(
        ln,
        box=(x0 + b[0] / z, y0 + b[1] / z, x0 + b[2] / z, y0 + b[3] / z),
        size=ln.size / z,
        words=tuple((x0 + a / z, x0 + c / z) for a, c in ln.words),
        in_figure=True,
        figure=figure,
    )
