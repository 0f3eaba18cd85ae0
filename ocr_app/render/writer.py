"""The document writer the converter calls: one folder per input with every output format.

Why a stateful writer with ``add_page``/``finish``: pages arrive one by one (and may fail one by one);
figures and the overlay PNG are written as soon as a page is parsed, so page images never pile up in
memory, and the whole-document files (Markdown, raw text, JSON, layout PDF, ZIP) are written once at the
end. Every file is written atomically.

Layout of ``out_dir/stem/``::

    {stem}.md  {stem}.mmd  {stem}.json  {stem}_layout.pdf  {stem}.zip
    images/{page}_{idx}.jpg      (page 0-based, like the official script)
    overlays/page_0001.png       (page 1-based, as users count)
"""

from __future__ import annotations

import json
import logging
import re
import zipfile
from collections.abc import Iterable
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ConfigError
from ocr_app.render.atomic import atomic_target, atomic_write_text
from ocr_app.render.formats import OUTPUT_FORMATS
from ocr_app.render.layout_pdf import write_layout_pdf
from ocr_app.render.markdown import document_markdown, page_markdown
from ocr_app.render.overlay import draw_overlay
from ocr_app.schema import DocumentResult, PageResult, StopReason

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

FORMATS = frozenset(OUTPUT_FORMATS)
JSON_FORMAT_VERSION = "1.0"
IMAGES_DIR = "images"
OVERLAYS_DIR = "overlays"
_UNSAFE_STEM_RE = re.compile(r"[\\/\x00-\x1f]+")
_STORED_SUFFIXES = {".png", ".jpg", ".jpeg", ".pdf"}  # already compressed: deflating wastes time


@lru_cache(maxsize=1)
def document_schema() -> dict[str, Any]:
    """The JSON Schema of ``{stem}.json`` (shipped as ``ocr_app/render/document.schema.json``)."""
    text = resources.files("ocr_app.render").joinpath("document.schema.json").read_text("utf-8")
    return json.loads(text)


def _package_version() -> str:
    try:
        return metadata.version("ocr-app")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def safe_stem(stem: str) -> str:
    """A folder/file stem with no path separators or control characters."""
    cleaned = _UNSAFE_STEM_RE.sub("_", stem).strip()
    if cleaned in ("", ".", ".."):
        raise ConfigError(f"Output name {stem!r} is not usable as a file name.")
    return cleaned


def _error_note(page: PageResult) -> str:
    message = " ".join((page.error or "unknown error").split())
    return f"> **Page {page.index + 1} could not be converted:** {message}"


def _stopped_note(page: PageResult) -> str:
    return (
        f"> **Page {page.index + 1} stopped early ({page.stop_reason.value}):** its text may be incomplete."
    )


class DocumentWriter:
    """Writes one document's outputs into ``out_dir/stem/``.

    ``formats`` picks the files; ``"zip"`` implies all of them (the ZIP is "all of it"). Overlay PNGs
    are also drawn when only the layout PDF is wanted, and removed again after the PDF is built.
    """

    def __init__(self, out_dir: Path, stem: str, formats: Iterable[str] = FORMATS, dpi: int = 144) -> None:
        requested = frozenset(formats)
        unknown = requested - FORMATS
        if unknown:
            raise ConfigError(
                f"Unknown output format(s): {', '.join(sorted(unknown))}. Choose from {', '.join(sorted(FORMATS))}."
            )
        self.formats = FORMATS if "zip" in requested else requested
        self.stem = safe_stem(stem)
        self.dir = Path(out_dir) / self.stem
        self.dpi = dpi
        self._files: list[Path] = []  # figures and overlays written by this writer, for the ZIP

    @property
    def images_dir(self) -> Path:
        return self.dir / IMAGES_DIR

    @property
    def overlays_dir(self) -> Path:
        return self.dir / OVERLAYS_DIR

    def _wants_figures(self) -> bool:
        return bool(self.formats & {"md", "json"})

    def _wants_overlays(self) -> bool:
        return bool(self.formats & {"overlay", "layout_pdf"})

    def add_page(self, page: PageResult, image: Image.Image | None) -> None:
        """Fill ``page.markdown``, ``page.figures`` and ``page.overlay_path`` and write those files.

        A failed page (``page.error`` set) gets a Markdown note and no overlay. The image is not kept.
        """
        if page.error:
            page.markdown = _error_note(page)
            page.figures = []
            page.overlay_path = None
            return
        if image is not None and (page.width, page.height) != image.size:
            if page.width or page.height:
                logger.warning(
                    "page %d: result size %dx%d differs from image size %dx%d; using the image size",
                    page.index + 1,
                    page.width,
                    page.height,
                    *image.size,
                )
            page.width, page.height = image.size
        images_dir = self.images_dir if self._wants_figures() else None
        page.markdown, page.figures = page_markdown(page.blocks, image, page.index, images_dir, IMAGES_DIR)
        self._files.extend(page.figures)
        page.overlay_path = None
        if image is not None and self._wants_overlays():
            path = self.overlays_dir / f"page_{page.index + 1:04d}.png"
            with atomic_target(path) as tmp:
                draw_overlay(image, page.blocks).save(tmp, format="PNG")
            page.overlay_path = path
            self._files.append(path)

    def _document_markdown(self, doc: DocumentResult) -> str:
        pages = []
        for page in doc.pages:
            md = page.markdown or (_error_note(page) if page.error else "")
            if not page.error and page.stop_reason in (StopReason.LENGTH, StopReason.REPETITION):
                md = f"{md}\n\n{_stopped_note(page)}" if md else _stopped_note(page)
            pages.append(md)
        return document_markdown(pages, [p.index + 1 for p in doc.pages])

    def _document_raw(self, doc: DocumentResult) -> str:
        """Raw model text with its tags, pages joined with the same markers as the Markdown."""
        return document_markdown([p.raw_text for p in doc.pages], [p.index + 1 for p in doc.pages])

    def _rel(self, path: Path | None) -> str | None:
        return None if path is None else Path(path).relative_to(self.dir).as_posix()

    def _document_json(self, doc: DocumentResult) -> str:
        data = doc.to_dict()
        data = {"version": JSON_FORMAT_VERSION, "generator": f"ocr-app {_package_version()}", **data}
        for page_dict, page in zip(data["pages"], doc.pages, strict=True):
            page_dict["overlay"] = self._rel(page.overlay_path)
            page_dict["figures"] = [self._rel(f) for f in page.figures]
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"

    def _layout_items(self, doc: DocumentResult) -> list[Path | str]:
        items: list[Path | str] = []
        for page in doc.pages:
            if page.overlay_path is not None and Path(page.overlay_path).exists():
                items.append(Path(page.overlay_path))
            elif page.error:
                items.append(f"{doc.source}, page {page.index + 1}: could not be converted.\n\n{page.error}")
            else:
                items.append(f"{doc.source}, page {page.index + 1}: no page image.")
        return items

    def _write_zip(self, path: Path, files: list[Path]) -> None:
        with atomic_target(path) as tmp, zipfile.ZipFile(tmp, "w") as zf:
            for f in files:
                method = zipfile.ZIP_STORED if f.suffix.lower() in _STORED_SUFFIXES else zipfile.ZIP_DEFLATED
                zf.write(f, arcname=self._rel(f), compress_type=method)

    def finish(self, doc: DocumentResult) -> dict[str, Path]:
        """Write the whole-document files; return and store (``doc.outputs``) their paths plus ``dir``."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for page in doc.pages:
            if page.error and not page.markdown:
                page.markdown = _error_note(page)
        outputs: dict[str, Path] = {}
        if "md" in self.formats:
            outputs["md"] = atomic_write_text(self.dir / f"{self.stem}.md", self._document_markdown(doc))
        if "mmd" in self.formats:
            outputs["mmd"] = atomic_write_text(self.dir / f"{self.stem}.mmd", self._document_raw(doc))
        if "layout_pdf" in self.formats:
            outputs["layout_pdf"] = write_layout_pdf(
                self._layout_items(doc), self.dir / f"{self.stem}_layout.pdf", dpi=self.dpi
            )
        if "overlay" not in self.formats:
            for page in doc.pages:  # drawn only to build the PDF
                if page.overlay_path is not None:
                    Path(page.overlay_path).unlink(missing_ok=True)
                    page.overlay_path = None
            self._files = [f for f in self._files if f.exists()]
            if self.overlays_dir.is_dir() and not any(self.overlays_dir.iterdir()):
                self.overlays_dir.rmdir()
        elif any(p.overlay_path for p in doc.pages):
            outputs["overlays"] = self.overlays_dir
        if "json" in self.formats:
            outputs["json"] = atomic_write_text(self.dir / f"{self.stem}.json", self._document_json(doc))
        if "zip" in self.formats:
            files = [p for k, p in outputs.items() if k != "overlays"] + [
                f for f in self._files if f.exists()
            ]
            zip_path = self.dir / f"{self.stem}.zip"
            self._write_zip(zip_path, files)
            outputs["zip"] = zip_path
        outputs["dir"] = self.dir
        doc.outputs = dict(outputs)
        logger.info("wrote %s (%s)", self.dir, ", ".join(k for k in outputs if k != "dir"))
        return outputs
