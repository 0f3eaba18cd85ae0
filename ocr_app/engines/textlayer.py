"""The PDF text layer as an engine: exact text, positions and font sizes, no OCR.

Why: born-digital PDFs already carry their text. Reading it is exact and takes milliseconds, where
OCR takes seconds and makes mistakes. PyMuPDF gives every line with its box and font size; the shared
document rooms (``structure``) turn them into the same blocks the OCR engines produce.

The engine runs a page's steps in order; each step is a room of its own: whether the text layer is
worth reading (``text_usability``, which the router asks), its lines from the spans
(``pdf_spans``), what the page draws around its text (``pdf_drawings``), the tables it draws
(``page_tables``), its figures (``page_figures``), then the learned tables in the layout model's
regions (``structure.learned_tables``) and the document rooms.
"""

from __future__ import annotations

import collections
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.choices import engine_kind
from ocr_app.engine_api import Capabilities, Engine
from ocr_app.engines import raster_tables
from ocr_app.engines.page_figures import mark_figure_text, panel_rects
from ocr_app.engines.page_tables import (
    Grid,
    RuledGrid,
    TableGrid,
    bold_header,
    bold_labels,
    centre_in,
    form_pairs,
    lines_without,
    outside_prose,
    piece_of,
    read_drawn_grids,
    ruled_tables,
    tables_apart,
    weak_boxes,
)
from ocr_app.engines.pdf_drawings import horizontal_rules, mark_drawn_bullets, mark_underlined, page_drawings
from ocr_app.engines.pdf_spans import MONO_FONTS, page_turns, place_lines, read_lines
from ocr_app.engines.text_usability import (
    TextLayerReport,
    distrust_reason,
    inspect_page,
    open_pdf,
    page_at,
    too_heavy,
)
from ocr_app.exceptions import EngineUnavailableError, InputError
from ocr_app.schema import Block, Box, EngineOutput, PageRequest, StopReason
from ocr_app.structure.docprofile import DocumentProfile, build_profile
from ocr_app.structure.lines import LayoutConfig, Rule, TextLine, body_size, is_rtl, rotate_box, unrotate_box
from ocr_app.structure.page_furniture import margin_rows, over_text
from ocr_app.structure.paragraphs import join_lines
from ocr_app.structure.passes.tables import detect_tables
from ocr_app.structure.pipeline import build_blocks
from ocr_app.structure.regions import overlap
from ocr_app.structure.rule_frames import rule_frames
from ocr_app.structure.table_gate import worth_looking
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_model import available as learned_tables_available

if TYPE_CHECKING:
    import pymupdf
    from PIL import Image

    from ocr_app.settings import Settings
    from ocr_app.structure.regions import Region

logger = logging.getLogger(__name__)
TEXT_LABELS = ("text", "reference", "title")  # layout-model boxes of text (the tables pass's veto)
TABLE_ROWS = 3  # a drawn grid of this many rows is a table: its lines are no running header or footer
PROFILE_CACHE = 4  # documents whose profile is kept (a batch converts a few files at a time)
# Vector content beyond which figures and ruled tables are not looked for: PyMuPDF hands every path to
# Python as a dict (≈ 1 µs and ≈ 1 KB each), so a page of 4 million tiny rectangles (63 MiB of content,
# rendered in a child process under a time limit) held the text layer for minutes and gigabytes, while its
# text reads in 1.5 s. Real pages, tables and charts included, draw well under 1 MiB.
_VECTOR_SCAN_BYTES = 4 * 2**20


def split_running(
    lines: list[TextLine],
    profile: DocumentProfile,
    height: float,
    rules: Sequence[Rule] = (),
    grids: Sequence[tuple[Box, int]] = (),
) -> tuple[list[Block], list[TextLine]]:
    """Running headers/footers/page numbers → ``page_header``/``page_footer`` blocks (kept out of the
    Markdown body, kept in the JSON); the other lines. ``rules``: the page's horizontal rules, which
    set a running line apart on a page of its own (``page_furniture.margin_rows``).

    ``grids``: the tables the page's rulings draw, (box, rows). A table cut by a page break puts its
    last row in the footer's band ("9" alone at the foot, taken for a page number) and its next row
    where the headers stand (Node.js's API reference); a browser repeats a long table's header row at
    the top of every page, and a mark ("✓", "*") stands in the same column at the top or foot of
    page after page (rustc's platform list): all of them are the table's. A line in a drawn table of
    ``TABLE_ROWS`` rows or more is never page furniture; in a smaller grid (a running header set in a
    ruled box) it is one by its words alone (repeated on other pages), not by where it stands."""
    running: list[Block] = []
    rest: list[TextLine] = []
    margin = margin_rows(lines, height, rules, alone=profile.pages <= 1)
    for ln in lines:
        held = [rows for box, rows in grids if centre_in(ln.box, box)]
        edge = profile.repeated(ln, height) if held else profile.is_running(ln, height)
        if any(rows >= TABLE_ROWS for rows in held) and not (edge and over_text(ln, lines)):
            # (a running line printed over a cell's words, as a browser prints a fixed "Skip to
            # content" link on every page, is still one)
            rest.append(ln)
            continue
        if edge is None and id(ln) in margin and not held:
            edge = "top" if ln.box[1] < height / 2 else "bottom"
        if edge is None:
            rest.append(ln)
        else:
            running.append(Block("page_header" if edge == "top" else "page_footer", ln.text, [ln.box]))
    return running, rest


class PageRegions:
    """The layout model's regions of one page image, asked once and only when a pass needs them (the
    learned tables, the pictures that may show a table): ≈ 0.10 CPU s a call."""

    def __init__(self, image: Image.Image | None, cache_dir: Path | None = None) -> None:
        self.image = image
        self._cache_dir = cache_dir  # where the model's rewritten graph is kept (``structure.regions``)
        self._regions: list[Region] | None = None

    def regions(self) -> list[Region]:
        if self._regions is None:
            from ocr_app.structure.regions import default_model

            self._regions = default_model(cache_dir=self._cache_dir).detect(self.image)
        return self._regions


class TextLayerEngine(Engine):
    """Reads PDF pages' embedded text. Pages without ``pdf_path`` are an input error."""

    name = "textlayer"

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        layout: LayoutConfig | None = None,
        pictures: Callable[[], raster_tables.RegionReader] | None = None,
    ) -> None:
        """``pictures``: builds the recogniser that reads tables pasted as pictures
        (``engines.raster_tables``; the stack hands in the light engine's); None: pictures stay pictures."""
        # Settings are accepted for a uniform constructor (registry); only the cache folder applies here.
        self._cache_dir = settings.cache_dir if settings is not None else None
        self._layout = layout or LayoutConfig()
        self._loaded = False
        # Tables from the layout and table-structure models, when the ``tables`` extra is installed.
        self._learned = learned_tables_available()
        # Pictures of tables read by the light engine's recogniser, when the ``light`` extra is installed.
        self._pictures = pictures
        self._rasters = pictures is not None and raster_tables.available()
        # The last PDF read stays open: re-opening it for every page cost more than reading the page
        # (MuPDF rebuilds the page tree on each open). Keyed by path and file identity, under MUPDF_LOCK.
        self._open_key: tuple[str, int, int, int] | None = None
        self._open_doc: pymupdf.Document | None = None
        self._profiles: collections.OrderedDict[tuple[str, int, int], DocumentProfile] = (
            collections.OrderedDict()
        )
        # The lines the profile read of each sampled page (``read_lines``), until that page is read: of
        # the newest profile's document only (a 120-page sample of 3,800 lines held 5.5 MB; a document
        # whose reads went with the next profile reads its pages again, to the same lines).
        self._reads: dict[tuple[str, int, int], dict[int, list[TextLine]]] = {}
        self._profiles_lock = threading.Lock()

    @staticmethod
    def _file_key(pdf_path: Path | str) -> tuple[str, int, int]:
        st = os.stat(pdf_path)
        return (str(Path(pdf_path).resolve()), st.st_mtime_ns, st.st_size)

    def profile(self, pdf_path: Path | str, doc: pymupdf.Document) -> DocumentProfile:
        """The document profile of ``pdf_path`` (built on its first page, kept for a few files)."""
        key = self._file_key(pdf_path)
        with self._profiles_lock:
            if key in self._profiles:
                self._profiles.move_to_end(key)
                return self._profiles[key]
        reads: dict[int, list[TextLine]] = {}

        def extract(page: pymupdf.Page, scale: float) -> list[TextLine]:
            reads[page.number] = read_lines(page)
            return place_lines(reads[page.number], page, scale)

        profile = build_profile(doc, extract, skip=too_heavy)
        with self._profiles_lock:
            self._profiles[key] = profile
            self._reads = {key: reads}
            while len(self._profiles) > PROFILE_CACHE:
                self._profiles.popitem(last=False)
        return profile

    def _page_read(self, pdf_path: Path | str, page: pymupdf.Page) -> list[TextLine]:
        """The page's ``read_lines``: the profile's read where it read the page (taken, so each read
        serves once), else read now."""
        with self._profiles_lock:
            read = self._reads.get(self._file_key(pdf_path), {}).pop(page.number, None)
        return read if read is not None else read_lines(page)

    def load(self) -> None:
        from ocr_app.ingest.pdf import import_pymupdf

        import_pymupdf()  # fail early and clearly if PyMuPDF is missing

        self._loaded = True

    def unload(self) -> None:
        from ocr_app.ingest.pdf import MUPDF_LOCK

        with MUPDF_LOCK:
            self._close_doc()
        self._loaded = False
        if self._pictures is not None:
            raster_tables.release()  # the picture reader's models go with the engine
        # ... and so do the layout and table models' sessions (the next page builds them again)
        from ocr_app.structure import regions, table_model

        regions.release(threads=1)
        table_model.release()
        with self._profiles_lock:
            self._profiles.clear()
            self._reads.clear()

    def _close_doc(self) -> None:
        if self._open_doc is not None:
            self._open_doc.close()
        self._open_doc, self._open_key = None, None

    def _doc(self, pdf_path: Path, password: str | None) -> pymupdf.Document:
        """The open document for ``pdf_path`` (call with MUPDF_LOCK held)."""
        try:
            st = Path(pdf_path).stat()
            key = (str(pdf_path), st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            key = None
        if key is None or key != self._open_key or self._open_doc is None or self._open_doc.is_closed:
            self._close_doc()
            doc = open_pdf(pdf_path, password)
            if key is None:
                return doc
            self._open_doc, self._open_key = doc, key
        return self._open_doc

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def capabilities(self) -> Capabilities:
        """The engine kind's facts (``ocr_app.choices``): no prompt, no mode, no precision; one
        conversion per core at once (reading a text layer is short CPU work, so several jobs side by
        side keep a short one from waiting behind a long one)."""
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        return replace(engine_kind(self.name).capabilities, max_concurrent_jobs=max(1, cores))

    def report(self, pdf_path: Path | str, index: int, *, password: str | None = None) -> TextLayerReport:
        """``inspect_report`` through this engine's open document (the router asks once per page)."""
        from ocr_app.ingest.pdf import MUPDF_LOCK

        with MUPDF_LOCK:
            doc = self._doc(Path(pdf_path), password)
            try:
                return inspect_page(page_at(doc, index, Path(pdf_path).name))
            finally:
                if doc is not self._open_doc:
                    doc.close()

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        self.load()
        return [self._predict(r) for r in requests]

    def _predict(self, request: PageRequest) -> EngineOutput:
        import pymupdf

        from ocr_app.ingest.pdf import MUPDF_LOCK
        from ocr_app.ingest.pdf_guard import content_bytes

        page_img = request.page
        notes: list[str] = []
        if page_img.pdf_path is None:
            raise InputError(f"{page_img.source}: the text-layer engine reads PDF pages only")
        start = time.perf_counter()
        with MUPDF_LOCK:
            doc = self._doc(Path(page_img.pdf_path), page_img.password)
            page = page_at(doc, page_img.index, page_img.source)
            width_px, _ = page_img.size
            scale = width_px / page.rect.width if page.rect.width else (page_img.dpi or 72) / 72
            profile = self.profile(page_img.pdf_path, doc)
            body_font = profile.style.body_font
            lines = place_lines(
                self._page_read(page_img.pdf_path, page),
                page,
                scale,
                typescript=not body_font or bool(MONO_FONTS.search(body_font)),
            )
            vectors = content_bytes(page, _VECTOR_SCAN_BYTES) <= _VECTOR_SCAN_BYTES
            paths = page_drawings(page) if vectors else None
            rules = horizontal_rules(page, scale, paths=paths) if vectors else []
            to_display = page.rotation_matrix * pymupdf.Matrix(scale, scale)
            drawn_grids = read_drawn_grids(page, paths=paths) if vectors else []
            grid_boxes = [
                (tuple(pymupdf.Rect(t.bbox) * to_display), t.row_count)
                for t in drawn_grids
                if t.row_count >= 2 and t.col_count >= 2
            ]
            running, lines = split_running(lines, profile, page.rect.height * scale, rules, grid_boxes)
            panels = panel_rects(page, profile.style.body_size, paths=paths) if vectors else []
            grounds = [tuple(r * to_display) for r in panels]
            if vectors:
                mark_drawn_bullets(page, lines, scale, profile.style.body_color, paths=paths)
                mark_underlined(page, lines, scale, paths=paths)
                mark_figure_text(page, lines, scale, profile.style.body_size, panels, paths=paths)
            else:
                notes.append(
                    f"page {page_img.index + 1} draws more than {_VECTOR_SCAN_BYTES >> 20} MiB of vector "
                    "content: its text was read, figures and ruled tables were not looked for"
                )
            turns = page_turns(lines)
            every_line = lines
            frames: list[Box] = []
            tables, forms, lines = (
                ruled_tables(page, lines, scale, frames, drawn_grids, paths=paths)
                if turns == 0 and vectors
                else ([], [], lines)
            )
            drawn = bool(tables or forms)  # a ruled grid or form: the layout model is asked
            disp_w, disp_h = page.rect.width * scale, page.rect.height * scale
            suspect = distrust_reason(page, lines) if lines else None
            # Pictures that may hold a table (no text-layer word over them): read through the light
            # engine's path below, outside the PDF lock.
            found = (
                raster_tables.pictures(page, every_line, scale, page_img.image)
                if turns == 0 and self._rasters
                else []
            )
            if doc is not self._open_doc:
                doc.close()
        style = profile.style_at(scale)
        table_regions, text_regions = None, []
        layout = PageRegions(page_img.image, self._cache_dir)
        if turns == 0 and self._learned and every_line and page_img.image is not None:
            tables, forms, lines, table_regions, text_regions = self._learned_tables(
                layout, every_line, tables, forms, lines, drawn, frames, rules
            )
        if found:
            tables, lines = self._raster_tables(found, tables, lines, notes, layout)
        if turns:
            # Text running sideways or upside down: lay it out in its own upright frame, then map
            # every box back to the page as displayed.
            lines = [replace(ln, box=rotate_box(ln.box, turns, disp_w, disp_h)) for ln in lines]
            upright_w = disp_h if turns % 2 else disp_w
            upright_h = disp_w if turns % 2 else disp_h
            blocks = build_blocks(
                lines, page_width=upright_w, page_height=upright_h, config=self._layout, style=style
            )
            for block in blocks:
                block.boxes = [unrotate_box(b, turns, disp_w, disp_h) for b in block.boxes]
        else:
            blocks = build_blocks(
                lines,
                page_width=width_px,
                page_height=disp_h,
                config=self._layout,
                tables=tables,
                forms=forms,
                style=style,
                table_regions=table_regions,
                text_regions=text_regions,
                containers=grounds,
            )
        blocks = [b for b in running if b.label == "page_header"] + blocks
        blocks += [b for b in running if b.label == "page_footer"]
        total = time.perf_counter() - start
        logger.debug(
            "textlayer: %s p%d: %d lines → %d blocks",
            page_img.source,
            page_img.index,
            len(lines),
            len(blocks),
        )
        return EngineOutput(
            engine=self.name,
            blocks=blocks,
            stop_reason=StopReason.NONE,
            timings={"total": total},
            suspect=suspect,
            notes=notes
            + ([f"text runs turned: read after turning it {90 * turns}° counter-clockwise"] if turns else []),
        )

    def _learned_tables(
        self,
        layout: PageRegions,
        every_line: list[TextLine],
        ruled: list[RuledGrid],
        forms: Grid,
        rest: list[TextLine],
        drawn: bool,
        frames: Sequence[Box] = (),
        cuts: Sequence[Rule] = (),
    ) -> tuple[list[TableGrid], Grid, list[TextLine], list[Box] | None, list[Box]]:
        """Tables read by the structure model (``structure.learned_tables``), cells from the text
        layer's words: first in the ruled grids' boxes (certain regions), then in the layout model's
        table regions. On ICDAR 2013's true regions the model reads both kinds better than the rules
        (docs/ACCURACY.md); a ruled grid the model cannot read as a grid keeps the rules' reading.
        Asked only on pages that may hold a table (rulings, fills, rows of pieces a cell gap apart).
        ``frames``: the boxes of the grids the rulings draw (``ruled_tables``), where a region's table ends;
        ``cuts``: the page's horizontal rules, which no row of a table runs across.
        Without the ``tables`` extra, or when the models cannot load: today's rules alone."""
        from ocr_app.structure import learned_tables as lt
        from ocr_app.structure import table_bounds, table_slots, table_verdict

        image = layout.image
        body = body_size(every_line)
        framed = rule_frames(cuts, every_line, body)
        if not worth_looking(every_line, body, drawn=drawn or bool(framed)):
            return ruled, forms, rest, None, []
        if is_rtl(" ".join(ln.text for ln in every_line)):
            # Right-to-left pages keep the rules' tables, which read a row from its right (the
            # structure model's cells were not checked on such pages: docling's Persian form lost its
            # text to one).
            return ruled, forms, rest, None, []
        out: list[TableGrid] = []
        try:
            seen = layout.regions()
            detected = [r for r in seen if r.label == "table"]
            texts = [r.box for r in seen if r.label in TEXT_LABELS and r.score >= lt.MIN_VETO_SCORE]
            regions = [
                table_bounds.cut_at_frames(r.box, frames) for r in detected if r.score >= lt.MIN_REGION_SCORE
            ]
            # Tables drawn by horizontal rules alone, where the model boxes no table and no grid is ruled.
            regions += [
                f
                for f in framed
                if not any(
                    overlap(f, b) > 0.3 or overlap(b, f) > 0.5 for b in [*(r.box for r in detected), *frames]
                )
            ]
            # Grids of words the layout model does not call a table, even weakly, are text.
            vetted = [r.box for r in detected if r.score >= lt.MIN_VETO_SCORE]
            # A ruled grid taken for a form (sparse, label/value pairs) is read by the structure model
            # too: its words go back to the pool, and it stays a form unless the model reads a table
            # that is no label/value pairs beside empty boxes (``form_pairs``); see below.
            kept_forms: Grid = []
            grids = [*ruled, *(RuledGrid(f[0], [], 0) for f in forms)]
            free = {id(ln) for ln in rest}
            in_grid = [
                ln for ln in every_line if id(ln) not in free and any(centre_in(ln.box, t[0]) for t in grids)
            ]
            pool = [*rest, *in_grid]
            in_regions = functools.partial(lt.tables_in_regions, image, body=body, join=join_lines, cuts=cuts)
            for box, rows, head, exact in grids:
                if not rows and any(piece_of(box, r) for r in regions):
                    # A form inside a table the model boxes, at most half its size: fills behind a
                    # cell's wrapped lines that PyMuPDF took for a grid; its lines are the table's.
                    continue
                # Tables set one under the other share their rulings, and PyMuPDF returns one grid:
                # the layout model's tables inside it say where one ends.
                parts = [r for r in regions if overlap(r, box) > 0.7]
                if len(parts) >= 2:
                    found, pool = in_regions(parts, pool)
                    if found:
                        out += [(t.box, t.rows, t.header_rows or bold_header(t)) for t in found]
                        continue
                snapped = table_bounds.snap(box, pool)
                table = (
                    lt.read_table(image, snapped[0], snapped[1], body=body, join=join_lines, cuts=cuts)
                    if snapped
                    else None
                )
                # A form becomes a table when the model reads one that is no label/value pairs beside
                # empty boxes, and not two columns of bold labels beside plain answers (issue 16).
                if not rows and (
                    table is None
                    or form_pairs(table.read_rows)
                    or (table_slots.shape(table.read_rows)[1] < 3 and bold_labels(box, every_line))
                ):
                    # A form the model cannot read as a table either (label/value pairs beside
                    # empty boxes): it stays a form, one line of text a row.
                    kept_forms += [f for f in forms if f[0] == box]
                    pool = lines_without(pool, [ln for ln in pool if centre_in(ln.box, box)])
                    continue
                if table is not None and exact and table_verdict.drawn_cells_win(table.read_rows, rows):
                    logger.debug("ruled grid at %s read from its rulings", box)
                    table = None
                taken = table.lines if table else [ln for ln in pool if centre_in(ln.box, box)]
                out.append((box, table.rows, table.header_rows or head) if table else (box, rows, head))
                pool = lines_without(pool, taken)
            read = [t[0] for t in [*out, *kept_forms]]
            regions = [r for r in regions if not any(overlap(r, t) > 0.5 for t in read)]
            regions = tables_apart(regions, frames, pool)
            weak = weak_boxes(detected, read)
            prose: list[Box] = []  # boxes of running text in columns: they vouch for no grid of words
            rules = self._word_grid(image.width, body)
            found, pool = in_regions(regions, pool, rules=rules, weak=weak, prose=prose)
            vetted = outside_prose(vetted, prose)
        except EngineUnavailableError as exc:
            logger.warning("textlayer: tables from rules only: %s", exc)
            self._learned = False
            return ruled, forms, rest, None, []
        out += [(t.box, t.rows, t.header_rows or bold_header(t)) for t in found]
        return out, kept_forms, pool, vetted, texts

    def _raster_tables(
        self,
        found: list[raster_tables.Picture],
        tables: list[TableGrid],
        lines: list[TextLine],
        notes: list[str],
        layout: PageRegions,
    ) -> tuple[list[TableGrid], list[TextLine]]:
        """Pictures of tables on the page (``engines.raster_tables``): each grid a table at the
        picture's place, other words the picture's labels. Which pictures show a table is read from the
        page's layout regions (one model call a page, shared with the tables above). Without the
        recogniser: as before."""
        try:
            more, loose = raster_tables.read(
                found, self._pictures, rules=self._word_grid, join=join_lines, learned=self._learned,
                page_regions=layout.regions() if layout.image is not None else None,
            )  # fmt: skip
        except EngineUnavailableError as exc:
            logger.warning("textlayer: pictures not read: %s", exc)
            self._rasters = False
            return tables, lines
        if more:
            notes.append(f"{len(more)} table(s) read from pictures by OCR")
        return [*tables, *more], [*lines, *loose]

    def _word_grid(self, width: float, body: float):
        """The word-position finder (``passes.tables.detect_tables``) over one region's lines: its largest
        table and header rows, or None."""

        def read(held: list[TextLine]) -> tuple[list[list[Cell]], int, list[TextLine]] | None:
            found, _ = detect_tables(held, width, self._layout, body)
            if not found:
                return None
            best = max(found, key=lambda t: len(t.items))
            if len(best.items) < 0.6 * len(held):
                return None  # a small table beside other lines: not a reading of the region
            rows = [[c if isinstance(c, Cell) else Cell(c) for c in row] for row in best.rows]
            return rows, best.header_rows, list(best.items)

        return read

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "loaded": self.is_loaded, "device": "cpu"}
