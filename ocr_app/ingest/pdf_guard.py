"""What one PDF page may cost before MuPDF interprets it: inflated content size and render time.

Why count before rendering: a content stream of 1 MB can inflate to 1 GiB of whitespace; MuPDF then
spent 32 s and 634 MB on the page (306 MB still held after the request) and could not be stopped: its
interpreter runs without releasing the GIL, so no Python thread or signal can abort it. Counting the
inflated bytes with ``zlib`` in 1 MiB steps (the output is discarded) costs ≈ 1 ms per MiB and stops at
the limit, so a bomb is refused in well under a second with no memory held.

Why a child process for heavy pages: under the size limit a page can still take long to interpret
(millions of tiny paths). Pages whose content inflates beyond ``isolate_render_bytes`` are rendered by
``python -m ocr_app.ingest.render_child``, killed after ``max_render_s``; the operating system gets
their memory back when the child ends. Ordinary pages (kilobytes of content) render in-process as before.

Form XObjects the page uses directly are counted with its content streams; forms nested inside forms are
not (the render time limit still covers heavy pages that the size count finds).
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import zlib
from typing import TYPE_CHECKING

from ocr_app.exceptions import CorruptFileError, LimitExceededError

if TYPE_CHECKING:
    from pathlib import Path

    import pymupdf
    from PIL import Image

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20
_FILTER_NAME = re.compile(r"/(\w+)")


def decoded_size(doc: pymupdf.Document, xref: int, budget: int) -> int:
    """Bytes the stream ``xref`` inflates to, counted up to just past ``budget`` (then it stops).

    Flate streams (nearly all content streams) are inflated here in bounded steps; a stream without a
    filter is its own size; other filter chains (LZW, ASCII85…) are decoded by MuPDF."""
    kind, value = doc.xref_get_key(xref, "Filter")
    names = _FILTER_NAME.findall(value) if kind in ("name", "array") else []
    raw = doc.xref_stream_raw(xref) or b""
    if not names:
        return len(raw)
    if names[0] not in ("FlateDecode", "Fl"):
        return len(doc.xref_stream(xref) or b"")
    inflater = zlib.decompressobj()
    count, data = 0, raw
    try:
        while count <= budget:
            out = inflater.decompress(data, _CHUNK)
            if not out:
                break
            count += len(out)
            data = inflater.unconsumed_tail
    except zlib.error:  # a damaged stream: MuPDF stops where inflating stops, so does the count
        pass
    return count


def content_bytes(page: pymupdf.Page, cap: int) -> int:
    """Inflated bytes of the page's content streams and the form XObjects it uses, counted up to just
    past ``cap`` (call with ``MUPDF_LOCK`` held)."""
    doc = page.parent
    try:
        xrefs = list(page.get_contents()) + [x[0] for x in page.get_xobjects()]
    except (RuntimeError, ValueError):  # a damaged page: MuPDF renders what it can, as before
        return 0
    total = 0
    for xref in dict.fromkeys(x for x in xrefs if x > 0):
        try:
            total += decoded_size(doc, xref, cap - total)
        except (RuntimeError, ValueError) as exc:  # a stream MuPDF cannot read inflates to nothing
            logger.debug("page %d: stream %d not counted: %s", page.number + 1, xref, exc)
        if total > cap:
            break
    return total


def check_content(page: pymupdf.Page, name: str, index: int, cap: int, env_name: str) -> int:
    """``content_bytes`` of the page, or ``LimitExceededError`` naming the page when it passes ``cap``."""
    size = content_bytes(page, cap)
    if size > cap:
        raise LimitExceededError(
            f"{name}: page {index + 1}'s content inflates to more than {cap / 2**20:.0f} MiB "
            f"(a decompression bomb?); it was not rendered (set {env_name} to raise the limit)"
        )
    return size


def render_isolated(
    pdf_path: Path, index: int, zoom: float, password: str | None, timeout_s: float, name: str, env_name: str
) -> Image.Image:
    """Render one page in a child process (``render_child``), killed after ``timeout_s``."""
    from PIL import Image as PILImage

    job = json.dumps({"path": str(pdf_path), "index": index, "zoom": zoom, "password": password})
    cmd = [sys.executable, "-m", "ocr_app.ingest.render_child"]
    try:
        proc = subprocess.run(cmd, input=job.encode(), capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise LimitExceededError(
            f"{name}: page {index + 1} took longer than {timeout_s:g} s to render and was stopped "
            f"(set {env_name} to allow longer)"
        ) from None
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        raise CorruptFileError(f"{name}: page {index + 1} is damaged and cannot be rendered ({why[0]})")
    head, _, samples = proc.stdout.partition(b"\n")
    width, height, stride = (int(v) for v in head.split())
    return PILImage.frombytes("RGB", (width, height), samples, "raw", "RGB", stride)


__all__ = ["check_content", "content_bytes", "decoded_size", "render_isolated"]
