"""The page-range grammar users type in the CLI and the UI.

Grammar (1-based, comma-separated parts, spaces ignored):
- ``all``, empty or None: every page.
- ``7``: page 7.
- ``1-3``: pages 1, 2 and 3.
- ``10-``: page 10 to the last page.
- ``-3``: pages 1 to 3 (an open start means "from the first page").

Why strict: a page number past the end is an error, not silently dropped, because a typo such as
``1-30`` for ``1-3`` would otherwise convert a different set of pages than the user meant. Use an open
end (``10-``) to mean "to the last page whatever the length".
"""

from __future__ import annotations

import logging
import re

from ocr_app.exceptions import PageRangeError

logger = logging.getLogger(__name__)


def parse_page_range(spec: str | None, page_count: int) -> list[int]:
    """Sorted unique 0-based page indices selected by ``spec`` in a document of ``page_count`` pages."""
    if spec is None or spec.strip().lower() in ("", "all"):
        return list(range(page_count))
    selected: set[int] = set()
    for raw_part in spec.split(","):
        part = re.sub(r"\s*-\s*", "-", raw_part.strip())
        if not part:
            raise PageRangeError(f'page range "{spec}" has an empty part between commas')
        first, last = _parse_part(part, page_count, spec)
        selected.update(range(first - 1, last))
    return sorted(selected)


_NO_LIMIT = 10**9


def clip_page_range(spec: str | None, page_count: int) -> tuple[list[int], str | None]:
    """Like ``parse_page_range``, but pages past the end of this document are left out, not an error.

    Why: one range applied to a batch (``1-2`` over a PDF and a one-page PNG) should convert what each
    file has. Returns the indices and a note saying what was left out (None when nothing was). A
    malformed range, or one that selects no page of this document at all, is still a ``PageRangeError``.
    """
    try:
        return parse_page_range(spec, page_count), None
    except PageRangeError:
        if spec is None:
            raise
    selected: set[int] = set()
    for raw_part in spec.split(","):
        part = re.sub(r"\s*-\s*", "-", raw_part.strip())
        if not part:
            raise PageRangeError(f'page range "{spec}" has an empty part between commas')
        first, last = _parse_part(part, _NO_LIMIT, spec)  # syntax checked; an open end reads _NO_LIMIT
        selected.update(range(first - 1, min(last, page_count)))
    if not selected:
        pages = "page" if page_count == 1 else "pages"
        raise PageRangeError(
            f'page range "{spec}" selects no page of this document: it has {page_count} {pages}'
        )
    pages = "page" if page_count == 1 else "pages"
    return sorted(
        selected
    ), f'page range "{spec}": the document has {page_count} {pages}; converted those that exist'


def _parse_part(part: str, page_count: int, spec: str) -> tuple[int, int]:
    """First and last 1-based page of one part, checked against the document."""
    if "-" not in part:
        page = _number(part, part, spec)
        _check_exists(page, page_count, spec)
        return page, page
    pieces = part.split("-")
    if len(pieces) != 2 or pieces == ["", ""]:
        raise PageRangeError(f'page range "{spec}": "{part}" is not a page range (use e.g. 1-3, 10- or -3)')
    start_text, end_text = pieces
    start = _number(start_text, part, spec) if start_text else 1
    end = _number(end_text, part, spec) if end_text else page_count
    if start_text and end_text and start > end:
        raise PageRangeError(f'page range "{spec}": {part} is reversed (did you mean {end}-{start}?)')
    _check_exists(start, page_count, spec)
    _check_exists(end, page_count, spec)
    return start, end


def _number(text: str, part: str, spec: str) -> int:
    if not (text.isascii() and text.isdigit()):
        what = f'"{text}"' if text == part else f'"{text}" in "{part}"'
        raise PageRangeError(f'page range "{spec}": {what} is not a page number')
    return int(text)


def _check_exists(page: int, page_count: int, spec: str) -> None:
    if page < 1:
        raise PageRangeError(f'page range "{spec}": page {page} does not exist: pages are numbered from 1')
    if page > page_count:
        pages = "page" if page_count == 1 else "pages"
        raise PageRangeError(
            f'page range "{spec}": page {page} does not exist: the document has {page_count} {pages}'
        )
