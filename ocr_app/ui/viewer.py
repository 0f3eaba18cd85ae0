"""Results → what the viewer shows: page list, per-page status, combined Markdown, downloads.

Why pure functions over ``DocumentResult``: the page switcher, the status table and the API endpoint
all read the same facts, and tests check them without a browser.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
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
DOWNLOAD_KINDS = ("md", "json", "zip")  # what the download list offers, per document
STATUS_HEADERS = ["File", "Page", "Status", "Engine", "Tokens", "Reason"]
STATUS_LABELS = {"ok": "ok", "length": "token cap hit", "repetition": "repetition", "error": "error"}


@dataclass
class PageEntry:
    """One page as the page switcher shows it (stored in session state, so plain data only)."""

    key: str  # dropdown value, unique over the job
    label: str  # "report.pdf · page 3 · ok"
    source: str
    page_number: int
    markdown: str
    overlay: str | None
    status: str  # ok, length, repetition, error
    reason: str

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
                    label=f"{doc.source} · page {page.index + 1} · {STATUS_LABELS.get(status, status)}",
                    source=doc.source,
                    page_number=page.index + 1,
                    markdown=page.markdown,
                    overlay=str(page.overlay_path) if page.overlay_path else None,
                    status=status,
                    reason=page_reason(page),
                )
            )
    return entries


def status_rows(documents: list[DocumentResult]) -> list[list[Any]]:
    """One row per page, plus one per file that failed as a whole."""
    rows: list[list[Any]] = []
    for doc in documents:
        if doc.error:
            rows.append([doc.source, "", "error", "", 0, doc.error])
        for page in doc.pages:
            status = STATUS_LABELS.get(page.status, page.status)
            rows.append([doc.source, page.index + 1, status, page.engine, page.num_tokens, page_reason(page)])
    return rows


def page_status_markdown(entry: PageEntry | None) -> str:
    if entry is None:
        return ""
    text = f"**{entry.source}, page {entry.page_number}: {STATUS_LABELS.get(entry.status, entry.status)}**"
    return f"{text} — {entry.reason}" if entry.reason else text


def document_markdown(documents: list[DocumentResult]) -> str:
    """All documents as one Markdown text; a failed file appears as a quoted error, not as a gap."""
    parts = []
    many = len(documents) > 1
    for doc in documents:
        if doc.error:
            parts.append(f"> **{doc.source}** could not be converted: {doc.error}")
            continue
        body = "\n\n".join(_page_markdown(p) for p in doc.pages)
        parts.append(f"<!-- {doc.source} -->\n\n{body}" if many else body)
    return "\n\n---\n\n".join(parts)


def _page_markdown(page: PageResult) -> str:
    if page.error:
        return f"> Page {page.index + 1} failed: {page.error}"
    return page.markdown


def download_paths(documents: list[DocumentResult]) -> list[str]:
    """Markdown, JSON and ZIP of every converted document, in that order per document."""
    paths = []
    for doc in documents:
        for kind in DOWNLOAD_KINDS:
            path = doc.outputs.get(kind)
            if path is not None and Path(path).is_file():
                paths.append(str(path))
    return paths


def summary_markdown(documents: list[DocumentResult], cancelled: bool) -> str:
    """The line above the results: what converted, what failed, what was cancelled."""
    pages = sum(len(d.pages) for d in documents)
    flagged = sum(1 for d in documents for p in d.pages if p.status != "ok")
    lines = [f"**Done:** {pages} page(s) from {sum(1 for d in documents if not d.error)} file(s)."]
    if cancelled:
        lines[0] = f"**Cancelled.** {pages} page(s) finished before the cancel are shown."
    if flagged:
        lines.append(f"{flagged} page(s) need attention (see Status).")
    lines.extend(f"**Failed: {d.source}** — {d.error}" for d in documents if d.error)
    return "\n\n".join(lines)
