"""Typed objects that flow through ingest → engines → parse → render.

Why dataclasses and not dicts: every stage and both front ends (UI, CLI) agree on one shape, and
``to_dict`` gives the JSON schema in one place.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

Box = tuple[float, float, float, float]


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
    pdf_path: Path | None = None  # set for PDF pages, so the text-layer engine can read them
    page_count: int = 1  # pages in the source document (for "page 3 of 12")

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size


@dataclass
class PageRequest:
    """What an engine is asked to do with one page."""

    page: PageImage
    prompt: str  # the full prompt, including the leading "<image>\n"
    mode: str = "default"  # resolution mode name (see engines.deepseek.modes)
    max_new_tokens: int | None = None
    use_cache: bool = True  # cross-page vision cache


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


@dataclass
class EngineOutput:
    """What an engine returns for one page request."""

    engine: str  # "deepseek-ocr2", "light", "textlayer", "remote", ...
    raw_text: str = ""  # model text with grounding tags kept (empty for engines that give blocks)
    blocks: list[Block] | None = None  # engines that produce blocks directly fill this
    stop_reason: StopReason = StopReason.NONE
    num_tokens: int = 0
    vision_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds: prefill, decode, total...
    notes: list[str] = field(default_factory=list)  # e.g. OOM retries, cache hits, routing reason
    tiling: dict[str, Any] | None = None  # set when a huge page was read as tiles (engines.tiling)


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
    tiling: dict[str, Any] | None = None  # grid, tile size, overlap when the page was read as tiles

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def status(self) -> str:
        """One word for the UI: ok, length, repetition or error."""
        if self.error:
            return "error"
        if self.stop_reason in (StopReason.LENGTH, StopReason.REPETITION):
            return self.stop_reason.value
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
            "status": self.status,
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
    notes: list[str] = field(default_factory=list)  # e.g. "file is a PNG named .pdf", "PDF was repaired"
    outputs: dict[str, Path] = field(default_factory=dict)  # "md", "mmd", "json", "zip", "layout_pdf"
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and all(p.ok for p in self.pages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "error": self.error,
            "error_kind": self.error_kind,
            "settings": dict(self.settings),
            "notes": list(self.notes),
            "page_count": len(self.pages),
            "pages": [p.to_dict() for p in self.pages],
        }


__all__ = [
    "Block",
    "Box",
    "DocumentResult",
    "EngineOutput",
    "PageImage",
    "PageRequest",
    "PageResult",
    "StopReason",
    "asdict",
]
