"""Results → what the viewer shows: page list, per-page status, combined Markdown, downloads.

Why pure functions over ``DocumentResult``: the page switcher, the status table and the API endpoint
all read the same facts, and tests check them without a browser.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ocr_app.schema import DocumentResult, PageResult, StopReason

logger = logging.getLogger(__name__)

# KaTeX delimiters for gr.Markdown: DeepSeek-OCR-2 writes display math as \[ \] and inline as \( \).
LATEX_DELIMITERS: list[dict[str, str | bool]] = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "\\[", "right": "\\]", "display": True},
    {"left": "\\(", "right": "\\)", "display": False},
    {"left": "$", "right": "$", "display": False},
]
STATUS_HEADERS = ["File", "Page", "Status", "Engine", "Tokens", "Tokens/s", "Reason"]
STATUS_LABELS = {
    "ok": "ok",
    "length": "token cap hit",
    "repetition": "repetition",
    "error": "error",
    "empty": "empty",
    "low_confidence": "low confidence",
    "repaired": "repaired source",
}
NO_VALUE = "—"  # engines that do not decode tokens (text layer, light OCR) have no token figures


def status_label(status: str) -> str:
    """Words for a page status; a status this version does not know is shown as it is."""
    return STATUS_LABELS.get(status, status.replace("_", " "))


@dataclass
class PageEntry:
    """One page as the page switcher shows it (stored in session state, so plain data only)."""

    key: str  # dropdown value, unique over the job
    label: str  # "report.pdf · page 3 · ok"
    source: str
    page_number: int
    markdown: str
    overlay: str | None
    status: str  # ok, length, repetition, error, empty, low_confidence, repaired, ...
    reason: str
    width: int = 0
    height: int = 0
    blocks: list[dict[str, Any]] = field(default_factory=list)  # label, text, boxes (page pixels)
    figures: list[str] = field(default_factory=list)
    error: str | None = None

    def html(self) -> str:
        """The page in the reading viewer (image with boxes beside its Markdown)."""
        from ocr_app.schema import Block
        from ocr_app.ui.page_html import page_html

        blocks = [Block(b["label"], b["text"], [tuple(x) for x in b["boxes"]]) for b in self.blocks]
        return page_html(
            key=self.key,
            title=f"{self.source}, page {self.page_number}",
            image_path=self.overlay,
            width=self.width,
            height=self.height,
            markdown=self.markdown,
            blocks=blocks,
            figures=self.figures,
            error=self.error,
            blank=self.status == "empty",
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def page_reason(page: PageResult) -> str:
    """Why a page has its status, in words a user can act on."""
    if page.error:
        return page.error
    if page.stop_reason == StopReason.LENGTH:
        return f"token cap hit after {page.num_tokens} tokens: text kept but may be cut off"
    if page.stop_reason == StopReason.REPETITION:
        return "the model repeated itself; the repetition guard stopped it, the text before is kept"
    return page.engine_reason


def page_entries(documents: list[DocumentResult]) -> list[PageEntry]:
    entries = []
    for d_index, doc in enumerate(documents):
        for page in doc.pages:
            status = page.status
            entries.append(
                PageEntry(
                    key=f"{d_index}:{page.index}",
                    label=f"{doc.source} · page {page.index + 1} · {status_label(status)}",
                    source=doc.source,
                    page_number=page.index + 1,
                    markdown=page.markdown,
                    overlay=str(page.overlay_path) if page.overlay_path else None,
                    status=status,
                    reason=page_reason(page),
                    width=page.width,
                    height=page.height,
                    blocks=[{"label": b.label, "text": b.text, "boxes": list(b.boxes)} for b in page.blocks],
                    figures=[str(f) for f in page.figures],
                    error=page.error,
                )
            )
    return entries


def status_rows(documents: list[DocumentResult]) -> list[list[Any]]:
    """One row per page, plus one per file that failed as a whole."""
    rows: list[list[Any]] = []
    for doc in documents:
        if doc.error:
            rows.append([doc.source, "", "error", "", NO_VALUE, NO_VALUE, doc.error])
        for page in doc.pages:
            tokens, speed = token_figures(page)
            rows.append(
                [
                    doc.source,
                    page.index + 1,
                    status_label(page.status),
                    page.engine,
                    tokens,
                    speed,
                    page_reason(page),
                ]
            )
    return rows


def token_figures(page: PageResult) -> tuple[str, str]:
    """(tokens, tokens/s) as table text; "—" for engines that decode no tokens."""
    if page.stop_reason in (StopReason.NONE, StopReason.ERROR) and not page.num_tokens:
        return NO_VALUE, NO_VALUE
    decode = float(page.timings.get("decode") or 0.0)
    speed = f"{page.num_tokens / decode:.1f}" if decode > 0 and page.num_tokens else NO_VALUE
    return str(page.num_tokens), speed


def page_status_markdown(entry: PageEntry | None) -> str:
    if entry is None:
        return ""
    text = f"**{entry.source}, page {entry.page_number}: {status_label(entry.status)}**"
    return f"{text} — {entry.reason}" if entry.reason else text


def document_markdown(documents: list[DocumentResult]) -> str:
    """All documents as one Markdown text; a failed file appears as a quoted error, not as a gap."""
    parts = []
    many = len(documents) > 1
    for doc in documents:
        if doc.error:
            parts.append(f"> **{doc.source}** could not be converted: {doc.error}")
            continue
        body = "\n\n".join(_pages_markdown(doc.pages))
        parts.append(f"<!-- {doc.source} -->\n\n{body}" if many else body)
    return "\n\n---\n\n".join(parts)


def _pages_markdown(pages: list[PageResult]) -> list[str]:
    """Each page's Markdown, a table that runs onto the next page (its header repeated) kept whole
    where it starts, as in the Markdown file (``render.markdown.tables_kept_whole``)."""
    from ocr_app.render.markdown import tables_kept_whole

    return tables_kept_whole([_page_markdown(page) for page in pages])


def _page_markdown(page: PageResult) -> str:
    if page.error:
        return f"> Page {page.index + 1} failed: {page.error}"
    return page.markdown


def download_kinds() -> tuple[str, ...]:
    """The outputs the download list offers, per document: the formats that ask for it (``download``
    in ``render/formats.py``; built in: Markdown, JSON, searchable PDF, the tables workbook, ZIP), in
    registry order."""
    from ocr_app.render.formats import format_class, format_names

    return tuple(n for n in format_names() if format_class(n).download)


def download_paths(documents: list[DocumentResult]) -> list[str]:
    """The downloadable outputs (``download_kinds``) of every converted document, in that order."""
    kinds = download_kinds()
    paths = []
    for doc in documents:
        for kind in kinds:
            path = doc.outputs.get(kind)
            if path is not None and Path(path).is_file():
                paths.append(str(path))
    return paths


def status_counts(documents: list[DocumentResult]) -> str:
    """ "14 ok, 2 empty": pages per status, ok first, then in order of appearance."""
    counts: dict[str, int] = {"ok": 0}
    for doc in documents:
        for page in doc.pages:
            counts[page.status] = counts.get(page.status, 0) + 1
    return ", ".join(f"{n} {status_label(s)}" for s, n in counts.items() if n)


def engine_counts(documents: list[DocumentResult]) -> str:
    """ "textlayer 3 pages, light 1 page": which engine read how many pages (failed pages left out)."""
    counts: dict[str, int] = {}
    for doc in documents:
        for page in doc.pages:
            if page.engine and not page.error:
                counts[page.engine] = counts.get(page.engine, 0) + 1
    return ", ".join(f"{name} {n} page{'' if n == 1 else 's'}" for name, n in counts.items())


def summary_markdown(documents: list[DocumentResult], cancelled: bool) -> str:
    """The line above the results: pages per status, what failed, what was cancelled, which document
    is incomplete (cut short by a cancel: its finished pages only)."""
    pages = sum(len(d.pages) for d in documents)
    flagged = sum(1 for d in documents for p in d.pages if p.status != "ok")
    counts = status_counts(documents)
    tail = f": {counts}." if counts else "."
    lines = [f"**Done:** {pages} page(s) from {sum(1 for d in documents if not d.error)} file(s){tail}"]
    if cancelled:
        lines[0] = f"**Cancelled.** {pages} page(s) finished before the cancel are shown{tail}"
    elif not pages and any(d.error for d in documents):
        lines[0] = "**Nothing was converted.**"
    read_by = engine_counts(documents)
    if read_by:
        lines[0] += f" Read by: {read_by}."
    if flagged:
        lines.append(f"{flagged} page(s) need attention (see Status).")
    lines.extend(
        f"**{d.source}** — {d.incomplete_line()}" for d in documents if not d.error and not d.complete
    )
    lines.extend(f"**Failed: {d.source}** — {d.error}" for d in documents if d.error)
    return "\n\n".join(lines)


def progress_markdown(message: str, fraction: float) -> str:
    """The job's one progress line and bar. Why the app draws it: gradio's progress overlay showed the same
    words a second time over a faded copy of this line."""
    pct = round(100 * max(0.0, min(1.0, fraction)))
    return f'{message} · {pct} %\n\n<progress value="{pct}" max="100"></progress>'


def error_markdown(message: str) -> str:
    """A refused job (no file, bad page range...): said where the progress line was, never as a pill over it."""
    return f"**Not started:** {message}"
