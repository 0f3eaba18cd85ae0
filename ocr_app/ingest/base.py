"""The document object every ingest path returns.

Why pages are rendered on demand: a 2000-page PDF at 144 DPI is ~6 GB of RGB pixels, so a document
only keeps its file open and turns one page into a ``PageImage`` when asked. Not thread-safe: use one
document from one thread at a time.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ocr_app.exceptions import PageRangeError

if TYPE_CHECKING:
    from types import TracebackType

    from ocr_app.schema import PageImage

logger = logging.getLogger(__name__)


class SourceDocument(abc.ABC):
    """An opened PDF or image file whose pages render one at a time. Use as a context manager."""

    kind: Literal["pdf", "image"]

    def __init__(self, name: str, path: Path | None, page_count: int) -> None:
        self.name = name  # display name used in PageImage.source and in every error message
        self.path = path  # the file on disk the user gave, None when opened from bytes
        self.page_count = page_count
        self.notes: list[str] = []  # things the user may want to know (mislabelled, repaired...)
        self.repaired = False  # the file was damaged and repaired on opening: pages may be blank or lost
        self._closed = False

    @abc.abstractmethod
    def _render(self, index: int) -> PageImage:
        """Render one valid, 0-based page."""

    def _release(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Free file handles and temporary files."""

    def render(self, index: int) -> PageImage:
        """Page ``index`` (0-based) as an RGB ``PageImage``."""
        if self._closed:
            raise ValueError(f"{self.name} is closed")
        if not 0 <= index < self.page_count:
            pages = "page" if self.page_count == 1 else "pages"
            raise PageRangeError(
                f"{self.name}: page {index + 1} does not exist: the document has {self.page_count} {pages}"
            )
        return self._render(index)

    def pages(self, indices: Iterable[int] | None = None) -> Iterator[PageImage]:
        """Render the given pages (default all) lazily, one at a time, in the order given."""
        for index in range(self.page_count) if indices is None else indices:
            yield self.render(index)

    def close(self) -> None:
        """Release the file; idempotent."""
        if not self._closed:
            self._closed = True
            self._release()

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return self.page_count

    def __enter__(self) -> SourceDocument:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self.page_count} pages>"
