"""PDF pages through PyMuPDF.

Why cap pixels by lowering the DPI instead of failing: a poster or engineering drawing page at 144 DPI
can be hundreds of megapixels, yet its text is large, so rendering it at the largest DPI that fits
``render_pixels`` (``IngestLimits``) still reads well. The DPI actually used is recorded on every page,
and a page rendered below the DPI asked for is marked ``downscaled``: where it has a text layer, that
is read instead of OCR at the lower resolution (``engines/router.py``).
"""

from __future__ import annotations

import logging
import math
import re
import sys
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.exceptions import (
    CorruptFileError,
    EmptyInputError,
    EncryptedDocumentError,
    LimitExceededError,
)
from ocr_app.ingest.base import SourceDocument
from ocr_app.ingest.limits import (
    ENV_MAX_PAGE_STREAM,
    ENV_MAX_PAGES,
    ENV_MAX_PIXELS,
    ENV_MAX_RENDER_S,
    ENV_RENDER_PIXELS,
    IngestLimits,
    too_thin,
)
from ocr_app.ingest.pdf_guard import check_content, check_images, render_isolated
from ocr_app.schema import PageImage

if TYPE_CHECKING:
    import pymupdf

logger = logging.getLogger(__name__)

# MuPDF keeps one process-wide context; PyMuPDF calls from two threads at once can crash the process.
# Anything in ocr_app that calls PyMuPDF while other threads may render (e.g. the text-layer engine)
# should hold this lock.
MUPDF_LOCK = threading.RLock()


# Optional add-ons PyMuPDF 2 imports on ``import pymupdf`` when installed (both are dependencies of
# PyMuPDF 2): the ONNX layout analyser (~1.2 s) and pymupdf4llm (~0.15 s, onnxruntime). ocr-app calls
# neither (no ``Page.get_layout``, no ``pymupdf`` Markdown shortcuts).
_SKIPPED_ADDONS = ("pymupdf.layout", "pymupdf4llm")
_IMPORT_LOCK = threading.Lock()
_IMPORTED = threading.Event()  # pymupdf finished loading (through here or any other import)


def import_pymupdf():
    """``import pymupdf`` without the optional add-ons PyMuPDF 2 imports on its own.

    Why: together they cost most of a born-digital conversion's time. They are skipped only while
    ``pymupdf`` itself loads: an explicit ``import pymupdf.layout`` or ``import pymupdf4llm`` later
    still works (``tests/test_light_path.py``).
    """
    if _IMPORTED.is_set():
        return sys.modules["pymupdf"]
    # Files converted side by side open their PDFs from several threads: one import, the others wait
    # for it (``sys.modules`` holds the module half-initialised while it loads).
    with _IMPORT_LOCK:
        if not _IMPORTED.is_set():
            skipped = [name for name in _SKIPPED_ADDONS if name not in sys.modules]
            for name in skipped:
                sys.modules[name] = None  # type: ignore[assignment]  # makes that import fail: pymupdf skips it
            try:
                import pymupdf  # noqa: F401
            finally:
                for name in skipped:
                    if name in sys.modules and sys.modules[name] is None:
                        del sys.modules[name]
            _quiet(sys.modules["pymupdf"])
            _glyph_boxes(sys.modules["pymupdf"])
            _IMPORTED.set()
    return sys.modules["pymupdf"]


_MUPDF_LOG = logging.getLogger("ocr_app.ingest.mupdf")


def _quiet(pymupdf) -> None:
    """Send PyMuPDF's messages to the log (``-vv`` shows them) instead of stdout (once, at import).

    Why: PyMuPDF writes MuPDF's errors ("MuPDF error: format error: …", one per damaged object) to
    stdout, which broke ``--json-summary`` on a damaged PDF. What they mean reaches the user as the
    page's "repaired" status and note; the details stay in the debug log.
    """
    pymupdf.set_messages(pylogging_logger=_MUPDF_LOG, pylogging_level=logging.DEBUG)


def _glyph_boxes(pymupdf) -> None:
    """Glyph boxes as the font program reports them, without PyMuPDF's ascender/descender corrections
    (``TOOLS.unset_quad_corrections``, process-wide).

    Why: pymupdf4llm turns the corrections off when it is imported, and PyMuPDF 2 imports it with
    ``import pymupdf`` wherever it is installed. Every benchmark and most tests imported PyMuPDF that
    way, so the text layer's rules were measured without the corrections, while the product's own
    import (above, which skips the add-ons) left them on: ``ocr-app convert`` read ICDAR 2013's us-015
    at TEDS 0.69 where the bench reported 0.999 (a symbol-font bullet's box grew to its font's whole
    height and left its row). Set here, the product, the benches and the tests read the same boxes
    whatever the import order and whichever PyMuPDF release is installed.
    """
    pymupdf.TOOLS.unset_quad_corrections(True)


def fit_dpi(width_pt: float, height_pt: float, dpi: int, max_pixels: int) -> int:
    """The largest DPI <= ``dpi`` at which a page of this size in points stays within ``max_pixels``.

    Returns 0 when not even 1 DPI fits.
    """

    def pixels(d: int) -> int:
        return math.ceil(width_pt * d / 72) * math.ceil(height_pt * d / 72)

    if pixels(dpi) <= max_pixels:
        return dpi
    fitted = min(dpi, int(72 * math.sqrt(max_pixels / (width_pt * height_pt))))
    while fitted > 0 and pixels(fitted) > max_pixels:
        fitted -= 1
    return fitted


class PdfDocument(SourceDocument):
    """A PDF opened with PyMuPDF; ``pdf_path`` is the file on disk (a private temp copy for bytes)."""

    kind = "pdf"

    def __init__(
        self,
        pdf_path: Path,
        *,
        name: str,
        path: Path | None,
        password: str | None,
        dpi: int,
        limits: IngestLimits,
        owns_file: bool = False,
    ) -> None:
        pymupdf = import_pymupdf()

        self.pdf_path = pdf_path
        # a temp copy of bytes input is deleted on close, or at garbage collection / exit at the latest
        self._delete_file = weakref.finalize(self, _unlink, pdf_path) if owns_file else None
        self.dpi = dpi
        self.limits = limits
        self._password: str | None = None  # handed to pages, for engines that re-open the file
        with MUPDF_LOCK:
            try:
                doc = pymupdf.open(pdf_path, filetype="pdf")
            except (RuntimeError, ValueError) as exc:  # FileDataError is a RuntimeError
                self._delete_temp()
                raise CorruptFileError(f"{name} is damaged or truncated and cannot be read as a PDF") from exc
            try:
                if doc.needs_pass:
                    _unlock(doc, name, password)
                    self._password = password
                page_count = _walk_page_tree(doc, name, limits.max_pages)
                repaired = bool(doc.is_repaired)
            except BaseException:
                doc.close()
                self._delete_temp()
                raise
        self._doc: pymupdf.Document = doc
        super().__init__(name, path, page_count)
        try:
            self._check(repaired)
        except BaseException:
            self._release()
            raise

    def _check(self, repaired: bool) -> None:
        if self.page_count == 0:
            # minimal hand-written PDFs often lack an xref and count as "repaired": still just empty
            extra = (
                " (its structure was damaged and repaired, so pages may have been lost)" if repaired else ""
            )
            raise EmptyInputError(f"{self.name} has no pages{extra}")
        if self.page_count > self.limits.max_pages:
            raise LimitExceededError(
                f"{self.name} has {self.page_count} pages; the limit is {self.limits.max_pages} "
                f"(set {ENV_MAX_PAGES} to raise it)"
            )
        if repaired:
            self.repaired = True
            note = f"{self.name} was damaged and has been repaired; some pages may be incomplete"
            logger.warning(note)
            self.notes.append(note)

    def _render(self, index: int) -> PageImage:
        import pymupdf
        from PIL import Image

        with MUPDF_LOCK:
            try:
                page = self._doc.load_page(index)
                rect = page.rect  # points, after the page's /Rotate
                if rect.width <= 0 or rect.height <= 0:
                    raise CorruptFileError(
                        f"{self.name}: page {index + 1} has no area and cannot be rendered"
                    )
                thin = too_thin(rect.width, rect.height)
                if thin:
                    raise LimitExceededError(
                        f"{self.name}: page {index + 1} is {rect.width:.0f} x {rect.height:.0f} pt, {thin}"
                    )
                budget = self.limits.pdf_pixels
                env = ENV_RENDER_PIXELS if budget == self.limits.render_pixels else ENV_MAX_PIXELS
                dpi = fit_dpi(rect.width, rect.height, self.dpi, budget)
                if dpi < 1:
                    raise LimitExceededError(
                        f"{self.name}: page {index + 1} ({rect.width:.0f} x {rect.height:.0f} pt) does not "
                        f"fit in {budget} pixels even at 1 DPI (set {env} to raise it)"
                    )
                if dpi < self.dpi:
                    logger.info(
                        "%s: page %d is %.0f x %.0f pt; rendered at %d DPI instead of %d to stay within "
                        "%d pixels (%s)",
                        self.name, index + 1, rect.width, rect.height, dpi, self.dpi,
                        budget, env,
                    )  # fmt: skip
                zoom = dpi / 72
                size = check_content(
                    page, self.name, index, self.limits.max_page_stream_bytes, ENV_MAX_PAGE_STREAM
                )
                check_images(page, self.name, index, self.limits.max_page_stream_bytes, ENV_MAX_PAGE_STREAM)
                image = None
                if size <= self.limits.isolate_render_bytes:
                    pix = page.get_pixmap(
                        matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False
                    )
                    image = Image.frombytes(
                        "RGB", (pix.width, pix.height), pix.samples, "raw", "RGB", pix.stride
                    )
            except (CorruptFileError, LimitExceededError):
                raise
            except (RuntimeError, ValueError) as exc:
                raise CorruptFileError(
                    f"{self.name}: page {index + 1} is damaged and cannot be rendered"
                ) from exc
        if image is None:  # heavy content: a child process renders it, stopped after max_render_s
            logger.info("%s: page %d draws %.0f MiB of content or more; rendering it in a child process",
                        self.name, index + 1, min(size, 2**50) / 2**20)  # fmt: skip
            image = render_isolated(
                self.pdf_path, index, zoom, self._password, self.limits.max_render_s, self.name,
                ENV_MAX_RENDER_S,
            )  # fmt: skip
        return PageImage(
            image=image,
            index=index,
            source=self.name,
            dpi=dpi,
            downscaled=dpi < self.dpi,
            pdf_path=self.pdf_path,
            page_count=self.page_count,
            password=self._password,
        )

    def _release(self) -> None:
        with MUPDF_LOCK:
            self._doc.close()
        self._delete_temp()

    def _delete_temp(self) -> None:
        if self._delete_file is not None:
            self._delete_file()


_BROKEN_TREE = ("cycle in page tree", "number of pages", "page tree")


def _walk_page_tree(doc: pymupdf.Document, name: str, max_pages: int) -> int:
    """The page count, after looking every page up once (at most ``max_pages`` + 1 of them).

    Why at open: a cycle in the page tree or a ``/Count`` of 2,147,483,647 made MuPDF fail on every page
    (or on counting them) deep inside the engines, as an internal error with a traceback. A broken tree
    is the file's fault: one line naming the file and the cause, exit 2. A single page MuPDF cannot
    find stays that page's error, as before. Looking pages up costs ~15 µs each (2,000 in 33 ms)."""
    try:
        count = doc.page_count
        for index in range(min(count, max_pages + 1)):
            try:
                doc.page_xref(index)
            except RuntimeError as exc:
                if any(words in str(exc) for words in _BROKEN_TREE):
                    raise
    except RuntimeError as exc:
        reason = re.sub(r"^code=\d+:\s*", "", str(exc)).strip() or type(exc).__name__
        raise CorruptFileError(
            f"{name} is damaged: its page tree is broken ({reason}); no page can be read"
        ) from exc
    return count


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:  # never fail a close over a temp file; say where it was left
        logger.warning("could not delete temporary file %s: %s", path, exc)


def _unlock(doc: pymupdf.Document, name: str, password: str | None) -> None:
    """Authenticate an encrypted PDF or raise EncryptedDocumentError saying what the user must do."""
    if not doc.needs_pass:
        return
    if not password:
        raise EncryptedDocumentError(f"{name} is encrypted; pass its password (--password in the CLI)")
    if not doc.authenticate(password):
        raise EncryptedDocumentError(f"the password given for {name} is wrong")
