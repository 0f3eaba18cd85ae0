"""Whether a page's text layer is worth reading instead of OCR, and why.

Why: born-digital pages carry exact text, but some text layers are no use. ``has_usable_text`` (the
router calls it) says a page is NOT usable when it has fewer than ``min_chars`` characters and shows
more than that, when more than ``MAX_GARBAGE_RATIO`` of its characters are replacement / private-use /
control characters, or fewer than half are letters or digits (fonts without a Unicode map give such
text), or when most of its text is invisible (PDF render mode 3) and an image covers most of the page:
that is somebody else's OCR layer over a scan, of unknown quality and without layout, so we OCR the
page ourselves. The policy ``always`` in the router overrides this and uses any text that is there.
The router asks this of every page, in the server's own process, so it reads as little as it can.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.exceptions import CorruptFileError, EncryptedDocumentError, InputError
from ocr_app.structure.lines import TextLine

if TYPE_CHECKING:
    import pymupdf


logger = logging.getLogger(__name__)

MIN_CHARS = 20
MAX_GARBAGE_RATIO = 0.1
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
    # Nothing on the page but its text: no picture, annotation or form field, and no drawing that could
    # be lettering (``_bare``). Only asked of pages with less than ``MIN_CHARS`` characters.
    bare: bool = False

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


PROFILE_MAX_CONTENT = 16 * 2**20  # inflated content bytes of a page the document profile reads


def too_heavy(page: pymupdf.Page) -> bool:
    """A page whose content inflates past ``PROFILE_MAX_CONTENT`` (reading its text takes seconds; a
    decompression bomb takes minutes): the document profile samples the other pages."""
    from ocr_app.ingest.pdf_guard import content_bytes

    return content_bytes(page, PROFILE_MAX_CONTENT) > PROFILE_MAX_CONTENT


def open_pdf(pdf_path: Path | str, password: str | None = None) -> pymupdf.Document:
    """Open a PDF for reading its text; ``password`` unlocks an encrypted one (never logged)."""
    from ocr_app.ingest.pdf import import_pymupdf

    pymupdf = import_pymupdf()

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


def page_at(doc: pymupdf.Document, index: int, name: str) -> pymupdf.Page:
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
    if report.chars < MIN_CHARS and covered == 0.0:
        report.bare = _bare(page)
    return report


BARE_PATHS = 50  # a page drawing more lines and boxes than this may hold lettering in them (a pixel font)
# ... and a page drawing more content than this is not looked through for them: 50 of them and 20
# characters take a few KiB, while a page of millions of paths (63 MiB) must not be walked here, where
# no time limit holds (its render runs in a child process that has one).
BARE_BYTES = 64 * 2**10


def _bare(page: pymupdf.Page) -> bool:
    """Whether a page without pictures shows nothing that OCR could read and its text layer lacks: no
    annotation (links aside) or form field, whose text is drawn but not in the page's text, and at most
    ``BARE_PATHS`` straight lines and rectangles drawn (outlined type is drawn in curves, a pixel font
    in many small squares).

    Why: a page with a few words or none went to OCR, which on such a page can only find what the text
    layer holds. A blank page cost the light engine 1.2 CPU s (two detections, the second looking for
    lines the first missed) and a title slide 0.7-1.0, against 0.03 for the text layer; on a GPU it
    cost a model call that may invent text for a blank page."""
    from ocr_app.ingest.pdf_guard import content_bytes

    if page.first_annot is not None or page.first_widget is not None:
        return False
    try:
        if content_bytes(page, BARE_BYTES) > BARE_BYTES:
            return False
        paths = page.get_cdrawings()
    except Exception as exc:  # drawings that cannot be read: let OCR look at the page
        logger.debug("drawings unreadable: %s", exc)
        return False
    items = [item[0] for path in paths for item in path.get("items", ())]
    return len(items) <= BARE_PATHS and all(kind in ("l", "re", "qu") for kind in items)


def judge(
    report: TextLayerReport, *, min_chars: int = MIN_CHARS, downscaled: bool = False
) -> tuple[bool, str]:
    """The usability decision for one page's report, with a reason for the UI/JSON.

    ``downscaled``: the page was rendered below the DPI asked for, because it is too large for the
    render budget (a 14,400 pt poster fits 60 MP at 38 DPI, where 11 pt text is 6 px high). OCR cannot
    read it there, so any real text layer beats it — a short one, or an invisible OCR layer.
    """
    # A page that shows nothing but its few characters (``bare``; all of them visible) is read from its
    # text layer: OCR could find nothing more there.
    plain = report.bare and report.visible_chars == report.chars
    if report.chars == 0:
        if plain:
            return True, "a blank page: no text, picture or drawing that OCR could read"
        return False, "no embedded text"
    low_chars = report.chars < min_chars
    if low_chars and not downscaled and not plain:
        return False, f"only {report.chars} characters of embedded text"
    if report.garbage_ratio > MAX_GARBAGE_RATIO:
        return False, f"embedded text is garbage ({report.garbage_ratio:.0%} unmapped characters)"
    if report.alnum_chars < 0.5 * max(report.content_chars, 1):
        return (
            False,
            f"embedded text is mostly symbols ({report.alnum_chars} of {report.chars} are letters/digits)",
        )
    scanned = report.invisible_ratio > 0.5 and report.image_coverage > 0.5
    if scanned and not downscaled:
        return False, "only an invisible OCR layer over a scanned image"
    if downscaled and (low_chars or scanned):
        return (
            True,
            f"{report.chars:,} chars of embedded text; the page is too large to OCR at the DPI asked for",
        )
    if low_chars and not downscaled:
        return (
            True,
            f"{report.chars:,} chars of embedded text and nothing else on the page that OCR could read",
        )
    return True, f"{report.chars:,} chars of embedded text"


def inspect_report(pdf_path: Path | str, index: int, *, password: str | None = None) -> TextLayerReport:
    """The text-layer report of page ``index`` of a PDF."""
    with open_pdf(pdf_path, password) as doc:
        return inspect_page(page_at(doc, index, Path(pdf_path).name))


def has_usable_text(
    pdf_path: Path | str, index: int, *, min_chars: int = MIN_CHARS, password: str | None = None
) -> tuple[bool, str]:
    """Whether page ``index`` of the PDF has a text layer worth using instead of OCR, and why."""
    return judge(inspect_report(pdf_path, index, password=password), min_chars=min_chars)


def distrust_reason(page: pymupdf.Page, lines: list[TextLine]) -> str | None:
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
