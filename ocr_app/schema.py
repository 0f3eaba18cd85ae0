"""Typed objects that flow through ingest → engines → parse → render.

Why dataclasses and not dicts: every stage and both front ends (UI, CLI) agree on one shape, and
``to_dict`` gives the JSON schema in one place.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

Box = tuple[float, float, float, float]


def union_box(boxes: Sequence[Box]) -> Box:
    """The smallest box holding every one of ``boxes`` (at least one)."""
    if len(boxes) == 1:  # most rows are one line: no four passes (0.7 M calls on the public sets)
        b = boxes[0]
        return (b[0], b[1], b[2], b[3])
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def valid_unicode(text: str) -> str:
    """``text`` as characters UTF-8 can hold: a surrogate pair becomes its character, a lone half U+FFFD.

    Why: a PDF font's broken Unicode map gives PyMuPDF half a surrogate pair for a glyph (docling's
    ``skipped_1page.pdf``, a Korean bold face); Python keeps it in a ``str`` and the first UTF-8 write
    fails, taking the whole document's outputs with it."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class StopReason(str, enum.Enum):
    """Why decoding of a page stopped."""

    END = "end"  # end-of-sentence token
    LENGTH = "length"  # hit max_new_tokens / context limit: kept and flagged, never dropped
    REPETITION = "repetition"  # the no-repeat guard found a loop it could not break
    NONE = "none"  # engine that does not decode tokens (text layer, light OCR)
    ERROR = "error"


@dataclass
class PageImage:
    """One page, rendered, plus where it came from."""

    image: Image.Image  # RGB
    index: int  # 0-based page index inside its source document
    source: str  # display name of the source file
    dpi: int | None = None  # render DPI for PDF pages, None for images
    downscaled: bool = False  # a PDF page rendered below the DPI asked for (too large for the budget)
    pdf_path: Path | None = None  # set for PDF pages, so the text-layer engine can read them
    page_count: int = 1  # pages in the source document (for "page 3 of 12")
    # Unlocks an encrypted ``pdf_path`` for engines that re-open it; kept out of repr so it is never logged.
    password: str | None = field(default=None, repr=False)
    # The image file whose stored bytes are exactly this page (a JPEG read upright as stored): outputs
    # that keep the page as it is (the searchable PDF) embed those bytes instead of re-encoding pixels.
    image_file: Path | None = None

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size


@dataclass
class PageRequest:
    """What an engine is asked to do with one page."""

    page: PageImage
    # A preset name, custom text or a full prompt: the engine that takes prompts resolves it (the DeepSeek
    # wing: ``models.deepseek_ocr2.prompts.resolve_prompt``); engines without prompts ignore it.
    prompt: str = "markdown"
    mode: str = "default"  # resolution mode name (see models.deepseek_ocr2.modes)
    max_new_tokens: int | None = None
    use_cache: bool = True  # cross-page vision cache
    locate_text: str | None = None  # the text to find, for the "locate" preset
    # A ``threading.Event`` set when the conversion that asked for the page no longer wants it (a
    # cancelled job): an engine that waits on a shared batch stops waiting and drops the page.
    cancel: Any = field(default=None, repr=False, compare=False)

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


@dataclass
class Block:
    """One detected block: label, boxes in original-page pixels, content."""

    label: str
    text: str
    boxes: list[Box] = field(default_factory=list)  # pixels, (x1, y1, x2, y2)

    @property
    def box(self) -> Box | None:
        """The union of all boxes, or None when the block has no box."""
        if not self.boxes:
            return None
        xs1, ys1, xs2, ys2 = zip(*self.boxes, strict=True)
        return (min(xs1), min(ys1), max(xs2), max(ys2))


@dataclass(frozen=True)
class OcrLine:
    """One recognised text line and where its ink lies, in page pixels.

    Why apart from blocks: a block's box holds a whole paragraph; the searchable PDF lays each line's
    text over the line itself, so a search or a selection lands on the words. ``turns``: quarter turns
    (counter-clockwise) the page was turned to read the line upright (0 for upright text)."""

    text: str
    box: Box
    turns: int = 0


@dataclass
class EngineOutput:
    """What an engine returns for one page request."""

    engine: str  # the engine kind: "deepseek", "light", "textlayer", "remote", ... (ocr_app.choices)
    raw_text: str = ""  # model text with grounding tags kept (empty for engines that give blocks)
    blocks: list[Block] | None = None  # engines that produce blocks directly fill this
    stop_reason: StopReason = StopReason.NONE
    num_tokens: int = 0
    vision_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds: prefill, decode, total...
    notes: list[str] = field(default_factory=list)  # e.g. OOM retries, cache hits, routing reason
    # The engine's own trust in its text, 0..1 (light: RapidOCR line scores); None when it has none.
    confidence: float | None = None
    # An engine's own reason to distrust the page (text layer: the garbage heuristic), or None.
    suspect: str | None = None
    # What the engine actually honoured: engines that ignore prompt/mode leave these None.
    used_prompt: str | None = None
    used_mode: str | None = None
    tiling: dict[str, Any] | None = None  # set when a huge page was read as tiles (engines.tiling)
    # The recognised lines with their own boxes (the light engine); None when the engine gives blocks only.
    lines: list[OcrLine] | None = None


# Page status words, most severe first: a page has the first that applies. ``ok`` means none did.
PAGE_STATUSES = ("error", "length", "repetition", "empty", "low_confidence", "repaired", "ok")


@dataclass
class PageResult:
    """A page after parse and render: what the UI shows and the JSON stores."""

    index: int
    source: str
    width: int
    height: int
    engine: str = ""
    engine_reason: str = ""
    blocks: list[Block] = field(default_factory=list)
    raw_text: str = ""
    markdown: str = ""
    stop_reason: StopReason = StopReason.NONE
    num_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # set when the page failed; the other pages still convert
    error_kind: str | None = None  # "input" (the user's file) or "internal" (engine/runtime)
    overlay_path: Path | None = None
    figures: list[Path] = field(default_factory=list)
    # Why the page's text may not be trusted: "empty" or "low_confidence" (set by the converter).
    quality: str | None = None
    quality_reason: str = ""  # words a user can act on, e.g. "no text found; the page image is blank"
    confidence: float | None = None  # the engine's own confidence, 0..1, None when it has none
    source_repaired: bool = False  # the source file was damaged and repaired: content may be missing
    used_prompt: str | None = None  # the prompt the engine honoured; None: the engine takes no prompt
    used_mode: str | None = None  # the resolution mode the engine honoured; None: it has no modes
    tiling: dict[str, Any] | None = None  # grid, tile size, overlap when the page was read as tiles
    # The engine's recognised lines (``EngineOutput.lines``) until the writer has laid them into the
    # searchable PDF; then dropped (not in the JSON), so a long document does not keep them all.
    lines: list[OcrLine] | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def status(self) -> str:
        """One word a reader can trust (see ``PAGE_STATUSES``, most severe first).

        Why one word: the UI page list, the status table, the CLI summary, the JSON and the exit code
        all count the same thing.
        """
        if self.error:
            return "error"
        if self.stop_reason in (StopReason.LENGTH, StopReason.REPETITION):
            return self.stop_reason.value
        if self.quality in ("empty", "low_confidence"):
            return self.quality
        if self.source_repaired:
            return "repaired"
        return "ok"

    def to_dict(self) -> dict[str, Any]:
        blocks = []
        for b in self.blocks:
            norm = [
                [round(v / d * 1000) for v, d in zip(bx, (self.width, self.height) * 2, strict=True)]
                for bx in b.boxes
            ]
            blocks.append(
                {
                    "label": b.label,
                    "text": b.text,
                    "boxes": [[round(v, 1) for v in bx] for bx in b.boxes],
                    "boxes_norm1000": norm,
                }
            )
        return {
            "index": self.index,
            "page_number": self.index + 1,
            "width": self.width,
            "height": self.height,
            "engine": self.engine,
            "engine_reason": self.engine_reason,
            "prompt": self.used_prompt,
            "mode": self.used_mode,
            "status": self.status,
            "status_reason": self.quality_reason,
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            "source_repaired": self.source_repaired,
            "stop_reason": self.stop_reason.value,
            "num_tokens": self.num_tokens,
            "timings": dict(self.timings),
            "notes": list(self.notes),
            "error": self.error,
            "error_kind": self.error_kind,
            "markdown": self.markdown,
            "blocks": blocks,
            "tiling": self.tiling,
        }


@dataclass
class DocumentResult:
    """One input file after conversion."""

    source: str
    pages: list[PageResult] = field(default_factory=list)
    error: str | None = None  # the whole file failed (bad input); pages is then empty
    error_kind: str | None = None  # "input" or "internal"
    # the OcrError subclass behind ``error`` ("EncryptedDocumentError"...): front ends word their own advice
    # from it (the app points at its password box); not written to the JSON
    error_type: str | None = None
    notes: list[str] = field(default_factory=list)  # e.g. "file is a PNG named .pdf", "PDF was repaired"
    outputs: dict[str, Path] = field(default_factory=dict)  # "md", "mmd", "json", "zip", "layout_pdf"
    settings: dict[str, Any] = field(default_factory=dict)
    source_repaired: bool = False  # the file was damaged and repaired on opening (pages may be lost)
    page_count: int = 0  # pages in the source document (0: not known, e.g. the file could not be opened)
    pages_selected: int = 0  # pages the run was asked for (a page range selects fewer); 0: not known
    # Why the run stopped before every selected page had a result ("cancelled (SIGTERM)", a write error,
    # an engine failure), or None. A document cut short is published with ``complete: false``.
    incomplete_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(p.ok for p in self.pages)

    @property
    def complete(self) -> bool:
        """Every selected page has a result (an error page counts: it says what went wrong)."""
        if self.pages_selected:
            return len(self.pages) >= self.pages_selected
        return self.incomplete_reason is None

    def incomplete_line(self) -> str | None:
        """One line for people when the document is incomplete (Markdown header, CLI and UI summary)."""
        if self.complete:
            return None
        selected = self.pages_selected or len(self.pages)
        why = f" ({self.incomplete_reason})" if self.incomplete_reason else ""
        return f"INCOMPLETE: {len(self.pages)} of {selected} pages converted{why}"

    def status_counts(self) -> dict[str, int]:
        """Pages per status, in ``PAGE_STATUSES`` order, statuses with no page left out."""
        return status_counts(self.pages)

    def headline(self) -> str:
        """``18 pages: 1 repaired, 17 empty (repaired source)``; an incomplete document says so first."""
        line = status_headline(self.pages, repaired_source=self.source_repaired)
        missing = self.incomplete_line()
        return f"{missing} · {line}" if missing else line

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "error": self.error,
            "error_kind": self.error_kind,
            "settings": dict(self.settings),
            "notes": list(self.notes),
            "source_repaired": self.source_repaired,
            "status_counts": self.status_counts(),
            "complete": self.complete,
            "incomplete_reason": None if self.complete else (self.incomplete_reason or "pages missing"),
            "page_count": self.page_count or len(self.pages),
            "pages_selected": self.pages_selected or len(self.pages),
            "pages_done": len(self.pages),
            "pages": [p.to_dict() for p in self.pages],
        }


def status_counts(pages: Iterable[PageResult]) -> dict[str, int]:
    """Pages per status word, most severe first; statuses no page has are left out."""
    counts = dict.fromkeys(PAGE_STATUSES, 0)
    for page in pages:
        counts[page.status] += 1
    return {k: v for k, v in counts.items() if v}


def status_headline(pages: Sequence[PageResult], *, repaired_source: bool = False) -> str:
    """The one headline the CLI and the UI show, e.g. ``18 pages: 1 repaired, 17 empty (repaired source)``."""
    counts = status_counts(pages)
    n = len(pages)
    parts = [f"{count} {word.replace('_', ' ')}" for word, count in counts.items()]
    line = f"{n} page{'' if n == 1 else 's'}" + (f": {', '.join(parts)}" if parts else "")
    return f"{line} (repaired source)" if repaired_source else line


__all__ = [
    "PAGE_STATUSES",
    "Block",
    "Box",
    "DocumentResult",
    "EngineOutput",
    "OcrLine",
    "PageImage",
    "PageRequest",
    "PageResult",
    "StopReason",
    "asdict",
    "status_counts",
    "status_headline",
]
