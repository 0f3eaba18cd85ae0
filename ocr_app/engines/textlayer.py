"""The PDF text layer as an engine: exact text, positions and font sizes, no OCR.

Why: born-digital PDFs already carry their text. Reading it is exact and takes milliseconds, where
OCR takes seconds and makes mistakes. PyMuPDF gives every line with its box and font size; the shared
layout logic (``engines.layout``) turns them into the same blocks the OCR engines produce.

``has_usable_text`` decides whether a page's text layer is worth using (the router calls it). A page
is NOT usable when it has fewer than ``min_chars`` characters, when more than
``MAX_GARBAGE_RATIO`` of its characters are replacement / private-use / control characters, or fewer
than half are letters or digits (fonts without a Unicode map give such text), or when most of its text is
invisible (PDF render mode 3) and an image covers most of the page: that is somebody else's OCR layer
over a scan, of unknown quality and without layout, so we OCR the page ourselves. The policy
``always`` in the router overrides this and uses any text that is there.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.engines.base import Engine
from ocr_app.engines.layout import LayoutConfig, TextLine, build_blocks
from ocr_app.exceptions import CorruptFileError, EncryptedDocumentError, InputError
from ocr_app.schema import EngineOutput, PageRequest, StopReason

if TYPE_CHECKING:
    import pymupdf

    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

MIN_CHARS = 20
MAX_GARBAGE_RATIO = 0.1
_BOLD_FLAG = 16
# Runs of one repeated punctuation mark (dot leaders, rules): layout, not evidence of garbage. A page
# of nothing but "·····" (what unmapped glyphs extract as) has no content left and fails the check.
_LEADERS = re.compile(r"([.·\-_…•=*])(?:\s*\1){2,}")


@dataclass
class TextLayerReport:
    """What a page's text layer holds, for the usability decision."""

    chars: int = 0  # non-whitespace characters, visible or not
    visible_chars: int = 0
    garbage_chars: int = 0
    alnum_chars: int = 0  # letters and digits of any script
    content_chars: int = 0  # non-space characters outside leader runs (". . . ." in a table of contents)
    image_coverage: float = 0.0  # fraction of the page area covered by images (capped at 1)

    @property
    def garbage_ratio(self) -> float:
        return self.garbage_chars / self.chars if self.chars else 0.0

    @property
    def invisible_ratio(self) -> float:
        return 1 - self.visible_chars / self.chars if self.chars else 0.0


def _is_garbage(ch: str) -> bool:
    if ch == "\ufffd":
        return True
    cat = unicodedata.category(ch)
    # Cc/Cf/Cs/Co/Cn: control, format, surrogate, private use, unassigned — unmapped glyphs land here.
    return cat.startswith("C")


def _open(pdf_path: Path | str, password: str | None = None) -> pymupdf.Document:
    """Open a PDF for reading its text; ``password`` unlocks an encrypted one (never logged)."""
    import pymupdf

    try:
        doc = pymupdf.open(str(pdf_path))
    except (FileNotFoundError, pymupdf.FileNotFoundError) as exc:
        raise InputError(f"{pdf_path}: file not found") from exc
    except (pymupdf.FileDataError, RuntimeError) as exc:
        raise CorruptFileError(f"{Path(pdf_path).name}: cannot be read as a PDF ({exc})") from exc
    if doc.needs_pass and not (password and doc.authenticate(password)):
        doc.close()
        why = "the password given is wrong" if password else "pass its password (--password in the CLI)"
        raise EncryptedDocumentError(f"{Path(pdf_path).name}: the PDF is encrypted; {why}")
    return doc


def _page(doc: pymupdf.Document, index: int, name: str) -> pymupdf.Page:
    if not 0 <= index < doc.page_count:
        raise InputError(f"{name}: page {index + 1} does not exist (the PDF has {doc.page_count} pages)")
    return doc[index]


def inspect_page(page: pymupdf.Page) -> TextLayerReport:
    """Count visible, invisible and garbage characters and the image coverage of one page."""
    report = TextLayerReport()
    texts: list[str] = []
    for span in page.get_texttrace():
        text = "".join(chr(c[0]) for c in span["chars"] if c[0] >= 0)
        n = sum(1 for ch in text if not ch.isspace())
        report.chars += n
        if span["type"] != 3 and span.get("opacity", 1.0) > 0:
            report.visible_chars += n
        report.garbage_chars += sum(1 for ch in text if not ch.isspace() and _is_garbage(ch))
        report.alnum_chars += sum(1 for ch in text if ch.isalnum())
        texts.append(text)
    content = _LEADERS.sub("", " ".join(texts))
    report.content_chars = sum(1 for ch in content if not ch.isspace())
    area = abs(page.rect) or 1.0
    covered = 0.0
    for info in page.get_image_info():
        bbox = page.rect & info["bbox"]
        covered += abs(bbox) if not bbox.is_empty else 0.0
    report.image_coverage = min(covered / area, 1.0)
    return report


def judge(report: TextLayerReport, *, min_chars: int = MIN_CHARS) -> tuple[bool, str]:
    """The usability decision for one page's report, with a reason for the UI/JSON."""
    if report.chars == 0:
        return False, "no embedded text"
    if report.chars < min_chars:
        return False, f"only {report.chars} characters of embedded text"
    if report.garbage_ratio > MAX_GARBAGE_RATIO:
        return False, f"embedded text is garbage ({report.garbage_ratio:.0%} unmapped characters)"
    if report.alnum_chars < 0.5 * max(report.content_chars, 1):
        return (
            False,
            f"embedded text is mostly symbols ({report.alnum_chars} of {report.chars} are letters/digits)",
        )
    if report.invisible_ratio > 0.5 and report.image_coverage > 0.5:
        return False, "only an invisible OCR layer over a scanned image"
    return True, f"{report.chars:,} chars of embedded text"


def inspect_report(pdf_path: Path | str, index: int, *, password: str | None = None) -> TextLayerReport:
    """The text-layer report of page ``index`` of a PDF."""
    with _open(pdf_path, password) as doc:
        return inspect_page(_page(doc, index, Path(pdf_path).name))


def has_usable_text(
    pdf_path: Path | str, index: int, *, min_chars: int = MIN_CHARS, password: str | None = None
) -> tuple[bool, str]:
    """Whether page ``index`` of the PDF has a text layer worth using instead of OCR, and why."""
    return judge(inspect_report(pdf_path, index, password=password), min_chars=min_chars)


def extract_lines(page: pymupdf.Page, scale: float) -> list[TextLine]:
    """PyMuPDF lines → ``TextLine`` in display pixels (rotation applied, points × ``scale``)."""
    import pymupdf

    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    flags = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
    lines: list[TextLine] = []
    data = page.get_text("dict", flags=flags)
    for block in data["blocks"]:
        for line in block.get("lines", []):
            spans = [s for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            text = "".join(s["text"] for s in line["spans"]).strip()
            text = " ".join(text.split())
            weights = [len(s["text"].strip()) for s in spans]
            size = sum(s["size"] * w for s, w in zip(spans, weights, strict=True)) / sum(weights)
            bold = all(s["flags"] & _BOLD_FLAG or "bold" in s["font"].lower() for s in spans)
            rect = pymupdf.Rect(line["bbox"]) * matrix
            lines.append(TextLine(text, (rect.x0, rect.y0, rect.x1, rect.y1), size * scale, bold))
    return lines


def _has_rulings(page: pymupdf.Page, minimum: int = 6) -> bool:
    """Whether the page draws enough lines/rectangles to hold a ruled table (cheap gate)."""
    count = 0
    for path in page.get_cdrawings():
        count += sum(1 for item in path.get("items", ()) if item[0] in ("l", "re"))
        if count >= minimum:
            return True
    return False


def ruled_tables(
    page: pymupdf.Page, lines: list[TextLine], scale: float
) -> tuple[list[tuple[tuple[float, float, float, float], list[list[str]]]], list[TextLine]]:
    """Tables drawn with rulings, found by PyMuPDF's ``find_tables``; cell text from our own lines.

    Why: a ruled table whose cells wrap onto several lines defeats the geometric detection in
    ``layout`` (a wrapped row has fewer cells). PyMuPDF finds the cell grid from the rulings; we fill
    each cell with the text lines whose centre lies in it (``extract()`` loses spaces here). Only
    pages that draw rulings are searched: ``find_tables`` costs ~0.3 s a page.
    """
    import pymupdf

    if not _has_rulings(page):
        return [], lines
    try:
        found = page.find_tables(strategy="lines").tables
    except Exception as exc:  # a table finder failure must not lose the page's text
        logger.warning("find_tables failed (%s); using the geometric table detection", exc)
        return [], lines
    matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
    tables = []
    used: set[int] = set()
    for table in found:
        if table.row_count < 2 or table.col_count < 2:
            continue
        rows: list[list[str]] = []
        for row in table.rows:
            cells: list[str] = []
            for cell in row.cells:
                if cell is None:
                    cells.append("")
                    continue
                r = pymupdf.Rect(cell) * matrix
                inside = [
                    ln
                    for ln in lines
                    if r.x0 <= (ln.box[0] + ln.box[2]) / 2 <= r.x1
                    and r.y0 <= (ln.box[1] + ln.box[3]) / 2 <= r.y1
                ]
                used.update(id(ln) for ln in inside)
                inside.sort(key=lambda ln: (ln.box[1], ln.box[0]))
                cells.append(" ".join(ln.text for ln in inside))
            rows.append(cells)
        if any(any(c for c in row) for row in rows):
            box = pymupdf.Rect(table.bbox) * matrix
            tables.append(((box.x0, box.y0, box.x1, box.y1), rows))
    return tables, [ln for ln in lines if id(ln) not in used]


def _suspect(page: pymupdf.Page, lines: list[TextLine]) -> str | None:
    """Why the text read from a page should not be trusted (garbage, somebody's hidden OCR layer), or None.

    Short text is fine here; the cheap check on the extracted lines runs first, the full report (which
    looks for invisible text over images) only on pages that have images.
    """
    quick = TextLayerReport()
    text = " ".join(ln.text for ln in lines)
    quick.chars = quick.visible_chars = sum(1 for ch in text if not ch.isspace())
    quick.garbage_chars = sum(1 for ch in text if not ch.isspace() and _is_garbage(ch))
    quick.alnum_chars = sum(1 for ch in text if ch.isalnum())
    quick.content_chars = sum(1 for ch in _LEADERS.sub("", text) if not ch.isspace())
    report = inspect_page(page) if page.get_images() else quick
    usable, why = judge(report, min_chars=1)
    return None if usable else f"text layer: {why}"


class TextLayerEngine(Engine):
    """Reads PDF pages' embedded text. Pages without ``pdf_path`` are an input error."""

    name = "textlayer"

    def __init__(self, settings: Settings | None = None, *, layout: LayoutConfig | None = None) -> None:
        # Settings are accepted for a uniform constructor (registry); nothing in them applies here.
        self._layout = layout or LayoutConfig()
        self._loaded = False
        # The last PDF read stays open: re-opening it for every page cost more than reading the page
        # (MuPDF rebuilds the page tree on each open). Keyed by path and file identity, under MUPDF_LOCK.
        self._open_key: tuple[str, int, int, int] | None = None
        self._open_doc: pymupdf.Document | None = None

    def load(self) -> None:
        import pymupdf  # noqa: F401  (fail early and clearly if PyMuPDF is missing)

        self._loaded = True

    def unload(self) -> None:
        from ocr_app.ingest.pdf import MUPDF_LOCK

        with MUPDF_LOCK:
            self._close_doc()
        self._loaded = False

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
            doc = _open(pdf_path, password)
            if key is None:
                return doc
            self._open_doc, self._open_key = doc, key
        return self._open_doc

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def report(self, pdf_path: Path | str, index: int, *, password: str | None = None) -> TextLayerReport:
        """``inspect_report`` through this engine's open document (the router asks once per page)."""
        from ocr_app.ingest.pdf import MUPDF_LOCK

        with MUPDF_LOCK:
            doc = self._doc(Path(pdf_path), password)
            try:
                return inspect_page(_page(doc, index, Path(pdf_path).name))
            finally:
                if doc is not self._open_doc:
                    doc.close()

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        self.load()
        return [self._predict(r) for r in requests]

    def _predict(self, request: PageRequest) -> EngineOutput:
        from ocr_app.ingest.pdf import MUPDF_LOCK

        page_img = request.page
        if page_img.pdf_path is None:
            raise InputError(f"{page_img.source}: the text-layer engine reads PDF pages only")
        start = time.perf_counter()
        with MUPDF_LOCK:
            doc = self._doc(Path(page_img.pdf_path), page_img.password)
            page = _page(doc, page_img.index, page_img.source)
            width_px, _ = page_img.size
            scale = width_px / page.rect.width if page.rect.width else (page_img.dpi or 72) / 72
            lines = extract_lines(page, scale)
            tables, lines = ruled_tables(page, lines, scale)
            suspect = _suspect(page, lines) if lines else None
            if doc is not self._open_doc:
                doc.close()
        blocks = build_blocks(lines, page_width=width_px, config=self._layout, tables=tables)
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
        )

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "loaded": self.is_loaded, "device": "cpu"}
