"""The output formats: one class per format, registered once; the writer, converter, CLI and UI read
the registry.

Why classes in a registry (the shape of marker's renderers): adding a format is one class here (or in a
plug-in, or a test) plus ``register_format`` — the ``DocumentWriter`` iterates the chosen formats and
knows none of them, ``--format`` accepts every registered name, the ZIP bundles it and the web app offers
it for download when the class says so. Nothing else changes.

A format instance writes one document. Its life: ``arrive`` for each page as soon as it is parsed (any
order; work that needs the page image, which is not kept), ``emit`` for each page in document order
(stream into the document files; host memory stays flat in the page count), then ``finish`` (publish
atomically, return ``{output key: path}``) — or ``abort``.

Light at import (no PIL, no PyMuPDF): front ends import this module to build their options.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import shutil
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from ocr_app.exceptions import ConfigError
from ocr_app.render.atomic import TextSpool, atomic_target
from ocr_app.render.markdown import (
    PAGE_RULE,
    carry_table,
    document_page_markdown,
    page_block,
)

if TYPE_CHECKING:
    from PIL import Image

    from ocr_app.schema import DocumentResult, PageImage, PageResult

logger = logging.getLogger(__name__)

# The built-in vocabulary (typed); ``format_names()`` is the live list, registered formats included.
OutputFormat = Literal["md", "mmd", "json", "overlay", "layout_pdf", "searchable", "xlsx", "zip"]
OUTPUT_FORMATS: tuple[str, ...] = get_args(OutputFormat)

JSON_FORMAT_VERSION = "2.0"  # 2.0: page_count = the source's pages; complete, pages_done (docs: schema)
IMAGES_DIR = "images"
OVERLAYS_DIR = "overlays"
PNG_LEVEL = 1  # overlay PNGs: zlib level 1 is ~2x faster than the default 6 for ~5 % more bytes
LAYOUT_JPEG_QUALITY = 85  # layout PDF pages: a JPEG goes into the PDF as is (no decode, no re-encode)
_STORED_SUFFIXES = {".png", ".jpg", ".jpeg", ".pdf"}  # already compressed: deflating wastes time


@dataclass
class DocumentTarget:
    """Where one document's outputs go, shared by its formats. ``page_files`` are the per-page files
    (figures, overlays) written so far: the ZIP bundles them and the stale-file sweep keeps them."""

    dir: Path
    stem: str
    dpi: int = 144
    page_files: list[Path] = field(default_factory=list)
    # The source PDF (None for an image file) and its password: formats that keep the source's pages
    # (the searchable PDF) copy them from here, unless it was damaged and repaired (``pdf_repaired``).
    pdf_path: Path | None = None
    pdf_password: str | None = field(default=None, repr=False)
    pdf_repaired: bool = False

    def path(self, suffix: str) -> Path:
        return self.dir / f"{self.stem}{suffix}"

    def rel(self, path: Path | None) -> str | None:
        return None if path is None else Path(path).relative_to(self.dir).as_posix()


class DocumentFormat:
    """One output format (subclass it and ``register_format`` the class)."""

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""  # one line for people (CLI help, docs)
    download: ClassVar[bool] = False  # the web app offers this output as a download
    bundle: ClassVar[bool] = False  # built from the other outputs at the end; choosing it chooses all
    uses_figures: ClassVar[bool] = False  # needs the page's figure crops written to images/
    uses_overlay: ClassVar[bool] = False  # needs the page's layout overlay drawn

    def __init__(self, target: DocumentTarget) -> None:
        self.target = target

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        """Files of this format that may lie in a document folder (from this run or an earlier one):
        ``finish`` removes those this run did not write."""
        return []

    def arrive(self, page: PageResult, overlay: Image.Image | None) -> Any:
        """A page was parsed (any order). Whatever is returned is handed to ``emit`` for this page."""
        return None

    def receive(
        self,
        page: PageResult,
        overlay: Image.Image | None,
        image: Image.Image | None,
        source: PageImage | None,
    ) -> Any:
        """What the writer calls for each parsed page: ``arrive``, unless the format also needs the page
        image and where it came from (``source``; None for a page that failed before it was rendered).
        Neither is kept by the writer after this call."""
        return self.arrive(page, overlay)

    def emit(self, page: PageResult, kept: Any) -> None:
        """Stream one page into the document files (document order)."""

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        """Publish; ``outputs`` holds what the formats before this one published (the ZIP reads it)."""
        return {}

    def abort(self) -> None:
        """Drop temp files of a run that cannot finish."""


_REGISTRY: dict[str, type[DocumentFormat]] = {}


def register_format(cls: type[DocumentFormat]) -> type[DocumentFormat]:
    """Add (or replace) the format ``cls.name``; usable as a class decorator."""
    if not cls.name or not cls.name.replace("_", "").isalnum() or cls.name == "all":
        raise ConfigError(
            f"An output format needs a plain name (letters, digits, '_'; not 'all'): {cls.name!r}"
        )
    _REGISTRY[cls.name] = cls
    return cls


def unregister_format(name: str) -> None:
    _REGISTRY.pop(name, None)


def format_names() -> tuple[str, ...]:
    """Every registered format, built-ins first, in registration order."""
    return tuple(_REGISTRY)


def format_class(name: str) -> type[DocumentFormat]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"Unknown output format {name!r}. Choose from {', '.join(_REGISTRY)}.") from None


def check_formats(names: frozenset[str] | set[str]) -> frozenset[str]:
    """``names`` as the formats to write: unknown names are an error; a bundle (ZIP) means all."""
    unknown = set(names) - set(_REGISTRY)
    if unknown:
        raise ConfigError(
            f"Unknown output format(s): {', '.join(sorted(unknown))}. Choose from {', '.join(sorted(_REGISTRY))}."
        )
    if any(_REGISTRY[n].bundle for n in names):
        return frozenset(_REGISTRY)
    return frozenset(names)


# --- the built-in formats --------------------------------------------------------------------------
class PagedTextFormat(DocumentFormat):
    """A text file with one block per page (``<!-- page N -->``, pages split by a rule): subclasses say
    the file suffix and the page's text."""

    suffix: ClassVar[str] = ".txt"

    def __init__(self, target: DocumentTarget) -> None:
        super().__init__(target)
        self._spool: TextSpool | None = None

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return [target.path(cls.suffix)]

    def page_text(self, page: PageResult) -> str:
        raise NotImplementedError

    def emit(self, page: PageResult, kept: Any) -> None:
        self._write_page(page, self.page_text(page))

    def _write_page(self, page: PageResult, text: str) -> None:
        self._spool = self._spool or TextSpool(self.target.path(self.suffix))
        self._spool.write((PAGE_RULE if self._spool.parts else "") + page_block(page.index + 1, text))
        self._spool.parts += 1

    def header(self, doc: DocumentResult) -> str:
        """Text before the first page, known only when the document is done (e.g. "incomplete")."""
        return ""

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        spool = self._spool or TextSpool(self.target.path(self.suffix))
        spool.write("\n" if spool.parts else "")
        head = self.header(doc)
        if not head:
            return {self.name: spool.close()}
        out = TextSpool(self.target.path(self.suffix))  # the header first, then the streamed pages
        try:
            out.write(head)
            spool.close_file()
            with open(spool.tmp, encoding="utf-8") as fh:
                shutil.copyfileobj(fh, out.file, 1 << 20)
        except BaseException:
            out.abort()
            raise
        finally:
            spool.abort()
        return {self.name: out.close()}

    def abort(self) -> None:
        if self._spool is not None:
            self._spool.abort()


@register_format
class MarkdownFormat(PagedTextFormat):
    name = "md"
    help = "Markdown of the document, figures as images/{page}_{idx}.jpg"
    download = True
    uses_figures = True
    suffix = ".md"

    def __init__(self, target: DocumentTarget) -> None:
        super().__init__(target)
        self._held = ""  # the table that ended the last page, until the next page says whether it goes on
        self._waiting: list[PageResult] = []  # pages only more of the held table's rows: written after it

    def page_text(self, page: PageResult) -> str:
        return document_page_markdown(page)

    def emit(self, page: PageResult, kept: Any) -> None:
        """Pages stream as they come, except a table that ends a page: it waits for the next page,
        whose first table goes on from it when it repeats its header (``markdown.carry_table``); a
        page that is only more of its rows waits with it."""
        table, text, going = carry_table(self._held, self.page_text(page))
        if self._held and not table:
            self._held = going
            self._waiting.append(page)
            return
        if table:
            self._write_held(table)
        self._held = going
        self._write_page(page, text)

    def _write_held(self, table: str) -> None:
        if self._spool is not None:
            self._spool.write(f"\n\n{table}")
        self._held = ""
        waiting, self._waiting = self._waiting, []
        for page in waiting:
            self._write_page(page, "")

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        if self._held:
            self._write_held(self._held)
        return super().finish(doc, outputs)

    def header(self, doc: DocumentResult) -> str:
        """A document cut short says so before its first page (a comment for tools, a line for people)."""
        line = doc.incomplete_line()
        if line is None:
            return ""
        done, selected = len(doc.pages), doc.pages_selected or len(doc.pages)
        return (
            f"<!-- ocr-app: complete=false pages_done={done} pages_selected={selected} "
            f"page_count={doc.page_count or selected} -->\n> **{line}.**\n\n"
        )


@register_format
class RawTextFormat(PagedTextFormat):
    name = "mmd"
    help = "the engine's raw text per page (DeepSeek: grounding tags kept)"
    suffix = ".mmd"

    def page_text(self, page: PageResult) -> str:
        return page.raw_text


@functools.cache
def _package_version() -> str:
    """ocr-app's installed version, read once (``importlib.metadata`` parses the METADATA file: ~2 ms a
    document, 16 times for 16 one-page jobs)."""
    try:
        return metadata.version("ocr-app")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@register_format
class JsonFormat(DocumentFormat):
    """``{stem}.json`` (schema: ``render/document.schema.json``): the pages are streamed to a temp file,
    the header (status counts, notes: known only at the end) is written first at ``finish``."""

    name = "json"
    help = "every page's blocks, boxes, status and timings (document.schema.json)"
    download = True
    uses_figures = True

    def __init__(self, target: DocumentTarget) -> None:
        super().__init__(target)
        self._pages: TextSpool | None = None  # the "pages" array

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return [target.path(".json")]

    def emit(self, page: PageResult, kept: Any) -> None:
        self._pages = self._pages or TextSpool(self.target.path(".json"))
        page_dict = page.to_dict()
        page_dict["overlay"] = self.target.rel(page.overlay_path)
        page_dict["figures"] = [self.target.rel(f) for f in page.figures]
        text = json.dumps(page_dict, ensure_ascii=False, indent=2).replace("\n", "\n    ")
        self._pages.write((",\n    " if self._pages.parts else "    ") + text)
        self._pages.parts += 1

    def _header(self, doc: DocumentResult) -> str:
        data = {"version": JSON_FORMAT_VERSION, "generator": f"ocr-app {_package_version()}", **doc.to_dict()}
        del data["pages"]  # streamed; "pages" stays the last key
        head = json.dumps(data, ensure_ascii=False, indent=2)
        return head[: head.rstrip().rfind("}")].rstrip() + ',\n  "pages": ['

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        pages, out = self._pages, TextSpool(self.target.path(".json"))
        try:
            out.write(self._header(doc))
            if pages is not None and pages.parts:
                pages.close_file()
                out.write("\n")
                with open(pages.tmp, encoding="utf-8") as fh:
                    shutil.copyfileobj(fh, out.file, 1 << 20)
                out.write("\n  ]\n}\n")
            else:
                out.write("]\n}\n")
        except BaseException:
            out.abort()
            raise
        finally:
            if pages is not None:
                pages.abort()
        return {"json": out.close()}

    def abort(self) -> None:
        if self._pages is not None:
            self._pages.abort()


@register_format
class OverlayFormat(DocumentFormat):
    """``overlays/page_0001.png``: the page with its boxes, written as soon as the page is parsed."""

    name = "overlay"
    help = "one PNG per page with the detected boxes (overlays/)"
    uses_overlay = True

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return list((target.dir / OVERLAYS_DIR).glob("page_*.png"))

    def arrive(self, page: PageResult, overlay: Image.Image | None) -> Any:
        if overlay is None:
            return None
        path = self.target.dir / OVERLAYS_DIR / f"page_{page.index + 1:04d}.png"
        with atomic_target(path) as tmp:
            overlay.save(tmp, format="PNG", compress_level=PNG_LEVEL)
        page.overlay_path = path
        self.target.page_files.append(path)
        return None

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        if any(p.overlay_path for p in doc.pages):
            return {"overlays": self.target.dir / OVERLAYS_DIR}
        return {}


@register_format
class LayoutPdfFormat(DocumentFormat):
    """``{stem}_layout.pdf``: the overlays as one PDF (a failed page keeps its place as a note page)."""

    name = "layout_pdf"
    help = "the overlays as one PDF, one page per document page"
    uses_overlay = True

    def __init__(self, target: DocumentTarget) -> None:
        super().__init__(target)
        self._builder = None

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return [target.path("_layout.pdf")]

    def _pdf(self):
        if self._builder is None:
            from ocr_app.render.layout_pdf import LayoutPdfBuilder

            self._builder = LayoutPdfBuilder(self.target.path("_layout.pdf"), dpi=self.target.dpi)
        return self._builder

    def arrive(self, page: PageResult, overlay: Image.Image | None) -> Any:
        if overlay is None:
            return None
        buf = io.BytesIO()
        overlay.save(buf, format="JPEG", quality=LAYOUT_JPEG_QUALITY)
        return buf.getvalue(), overlay.size

    def emit(self, page: PageResult, kept: Any) -> None:
        number = page.index + 1
        if kept is not None:
            self._pdf().add_image(*kept)
        elif page.error:
            self._pdf().add_note(f"{page.source}, page {number}: could not be converted.\n\n{page.error}")
        else:
            self._pdf().add_note(f"{page.source}, page {number}: no page image.")

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        return {"layout_pdf": self._pdf().close()}

    def abort(self) -> None:
        if self._builder is not None:
            self._builder.abort()


@register_format
class SearchablePdfFormat(DocumentFormat):
    """``{stem}_searchable.pdf``: each source page as it is with the recognised text laid over it
    invisibly (``render/searchable_pdf.py``); a page that failed keeps its place."""

    name = "searchable"
    help = "the source pages with their recognised text as invisible, searchable text"
    download = True

    def __init__(self, target: DocumentTarget) -> None:
        super().__init__(target)
        self._builder = None

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return [target.path("_searchable.pdf")]

    def _pdf(self):
        if self._builder is None:
            from ocr_app.render.searchable_pdf import SearchablePdfBuilder

            self._builder = SearchablePdfBuilder(self.target.path("_searchable.pdf"))
        return self._builder

    def receive(self, page, overlay, image, source) -> Any:
        """The page's runs, and for a page kept as an image its encoded image (the image is not kept).

        A page of a sound PDF is copied from the source, so a page the text layer read needs no runs;
        an image file's page, and every page of a damaged (repaired) PDF — whose objects may be lost:
        the page is kept as it was rendered — carry the runs of whatever engine read them."""
        from ocr_app.render.pdf_text import page_runs

        size = image.size if image is not None else None
        if self.target.pdf_path is not None and not self.target.pdf_repaired:
            runs = [] if page.error or page.engine == "textlayer" else page_runs(page)
            return runs, size, None, None
        if image is None:
            return [], None, None, None
        from ocr_app.render.searchable_pdf import encode_page_image, image_dpi

        runs = [] if page.error else page_runs(page)
        return runs, size, encode_page_image(image, source), image_dpi(image, source)

    def emit(self, page: PageResult, kept: Any) -> None:
        from ocr_app.render.searchable_pdf import PageCopyError

        runs, size, data, dpi = kept or ([], None, None, None)
        pdf = self._pdf()
        where = f"{page.source}, page {page.index + 1}"
        if data is not None or (self.target.pdf_path is not None and not self.target.pdf_repaired):
            try:
                if data is not None:
                    pdf.add_image_page(data, size, dpi=dpi, runs=runs)
                else:
                    pdf.add_pdf_page(
                        self.target.pdf_path,
                        page.index,
                        password=self.target.pdf_password,
                        runs=runs,
                        image_size=size,
                    )
            except PageCopyError as exc:  # the page keeps its place; the others are written
                logger.warning("%s: not kept in the searchable PDF: %s", where, exc)
                pdf.add_note(f"{where}: could not be kept as it is.\n\n{exc}")
        else:
            pdf.add_note(f"{where}: could not be converted.\n\n{page.error or 'no page image'}")

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        return {"searchable": self._pdf().close()}

    def abort(self) -> None:
        if self._builder is not None:
            self._builder.abort()


@register_format
class SpreadsheetFormat(DocumentFormat):
    """``{stem}_tables.xlsx``: every table of the document as a sheet (``render/spreadsheet.py``); a
    document without a table gets no workbook (an empty one in every output folder would be noise)."""

    name = "xlsx"
    help = (
        "every table as a sheet of one Excel workbook (spans merged, figures as numbers), when there is one"
    )
    download = True

    def __init__(self, target: DocumentTarget) -> None:
        super().__init__(target)
        self._tables: list = []

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return [target.path("_tables.xlsx")]

    def emit(self, page: PageResult, kept: Any) -> None:
        from ocr_app.render.spreadsheet import SheetTable, table_cells

        tables = [b.text for b in page.blocks if b.label == "table" and "<t" in b.text]
        for k, html in enumerate(tables, 1):
            cells = table_cells(html)
            if cells:
                self._tables.append(SheetTable(page.index + 1, k, cells))

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        from ocr_app.render.spreadsheet import write_workbook

        if not self._tables:
            return {}
        path = self.target.path("_tables.xlsx")
        with atomic_target(path) as tmp:
            write_workbook(self._tables, tmp)
        return {"xlsx": path}


@register_format
class ZipFormat(DocumentFormat):
    """``{stem}.zip``: every other output and page file (choosing it chooses every format)."""

    name = "zip"
    help = "all of the above in one archive"
    download = True
    bundle = True

    @classmethod
    def owned(cls, target: DocumentTarget) -> list[Path]:
        return [target.path(".zip")]

    def finish(self, doc: DocumentResult, outputs: dict[str, Path]) -> dict[str, Path]:
        files = [p for p in outputs.values() if p.is_file()]
        files += sorted(f for f in self.target.page_files if f.exists())
        path = self.target.path(".zip")
        with atomic_target(path) as tmp, zipfile.ZipFile(tmp, "w") as zf:
            for f in files:
                method = zipfile.ZIP_STORED if f.suffix.lower() in _STORED_SUFFIXES else zipfile.ZIP_DEFLATED
                zf.write(f, arcname=self.target.rel(f), compress_type=method)
        return {"zip": path}


__all__ = [
    "IMAGES_DIR",
    "JSON_FORMAT_VERSION",
    "OUTPUT_FORMATS",
    "OVERLAYS_DIR",
    "DocumentFormat",
    "DocumentTarget",
    "OutputFormat",
    "PagedTextFormat",
    "check_formats",
    "format_class",
    "format_names",
    "register_format",
    "unregister_format",
]
