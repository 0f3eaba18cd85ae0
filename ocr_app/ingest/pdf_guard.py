"""What one PDF page may cost before MuPDF interprets it: inflated content size and render time.

Why count before rendering: a content stream of 1 MB can inflate to 1 GiB of whitespace; MuPDF then
spent 32 s and 634 MB on the page (306 MB still held after the request) and could not be stopped: its
interpreter runs without releasing the GIL, so no Python thread or signal can abort it. Counting the
decoded bytes through the stream's whole filter chain in 1 MiB steps (``pdf_filters``; the output is
discarded) costs ≈ 1 ms per MiB and stops at the limit, so a bomb is refused in well under a second
with no memory held.

Why a child process for heavy pages: under the size limit a page can still take long to interpret
(millions of tiny paths). Pages whose content inflates beyond ``isolate_render_bytes`` are rendered by
``python -m ocr_app.ingest.render_child``, killed after ``max_render_s``; the operating system gets
their memory back when the child ends. Ordinary pages (kilobytes of content) render in-process as before.

Why forms are followed to any depth and multiplied: a form XObject is drawn each time a ``Do`` names
it, so a few kilobytes of forms nested ten deep, each drawing the next thirty times, make MuPDF interpret
billions of operators (the "billion laughs" of PDF). Each distinct stream is inflated once for the size
limit; the cost of drawing the page counts every form as often as the ``Do`` operators above it may draw
it (an upper bound), and a page whose drawing cost passes ``isolate_render_bytes`` renders in the child,
under the time limit, however small its streams are.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from typing import TYPE_CHECKING, NamedTuple

from ocr_app.exceptions import CorruptFileError, LimitExceededError
from ocr_app.ingest.pdf_filters import decode_chain

if TYPE_CHECKING:
    from pathlib import Path

    import pymupdf
    from PIL import Image

logger = logging.getLogger(__name__)

_FILTER_NAME = re.compile(r"/(\w+)")
_REFERENCE = re.compile(r"(\d+)\s+0\s+R")
_MAX_FORM_DEPTH = 32  # deeper nesting (or a cycle) is treated as unbounded drawing cost
_UNBOUNDED = 1 << 62


class ContentCost(NamedTuple):
    """What a page's content costs MuPDF: ``stored`` inflated bytes of its distinct streams (content
    streams and every form XObject it reaches, each once; counted up to just past the cap) and ``drawn``,
    the bytes interpreted to draw the page with each form counted as often as it may be drawn, plus what
    its inline images decode to (``inline_images``: readers that walk the page, such as the text
    layer's, decode them too)."""

    stored: int
    drawn: int
    inline_images: tuple[tuple[int, int, int], ...] = ()  # (width, height, decoded bytes) of each BI … ID


def decoded_size(doc: pymupdf.Document, xref: int, budget: int) -> int:
    """Bytes the stream ``xref`` inflates to, counted up to just past ``budget`` (then it stops)."""
    return _inflate(doc, xref, budget)[0]


def _inflate(
    doc: pymupdf.Document, xref: int, budget: int, inline: list[tuple[int, int, int]] | None = None
) -> tuple[int, int]:
    """Bytes the stream ``xref`` decodes to (counted up to just past ``budget``) and how many ``Do``
    operators (XObject draws) they hold; the inline images it declares are added to ``inline``.

    Every filter chain is decoded here in bounded steps (``pdf_filters``), never by MuPDF: a second
    Flate pass or an ASCII85 stage in front of one was a 1 GiB bomb the first-stage count missed."""
    kind, value = doc.xref_get_key(xref, "Filter")
    names = _FILTER_NAME.findall(value) if kind in ("name", "array") else []
    raw = doc.xref_stream_raw(xref) or b""
    count, draws, tail = 0, 0, b""
    for out in decode_chain(raw, names):
        count += len(out)
        draws += out.count(b"Do")
        if inline is not None and b"ID" in tail + out:
            window = tail + out
            inline.extend(_inline_images(window, after=len(tail)))
            tail = window[-_INLINE_HEAD:]
        if count > budget:
            break
    return count, draws


_INLINE_HEAD = 4096  # an inline image's dictionary (BI … ID) is far shorter
_INLINE = re.compile(rb"\bBI\s(.{0,%d}?)\sID[\s]" % _INLINE_HEAD, re.S)
_INLINE_W = re.compile(rb"/(?:W|Width)\s+(\d{1,9})\b")
_INLINE_H = re.compile(rb"/(?:H|Height)\s+(\d{1,9})\b")


def _inline_images(data: bytes, after: int) -> list[tuple[int, int, int]]:
    """(width, height, RGB bytes) of each inline image whose dictionary ends past offset ``after``.

    Why: ``BI /W 18000 /H 18000 … ID`` in a 1.2 KB content stream made MuPDF allocate the declared
    image (465 MB, 6 s); its data may be a few bytes."""
    found = []
    for match in _INLINE.finditer(data):
        if match.end() <= after:
            continue
        head = match.group(1)
        width, height = _INLINE_W.search(head), _INLINE_H.search(head)
        if width and height:
            w, h = int(width.group(1)), int(height.group(1))
            found.append((w, h, w * h * (4 if b"CMYK" in head else 3)))
    return found


def _forms_used(doc: pymupdf.Document, xref: int) -> list[int]:
    """The form XObjects named in the resources of the form ``xref``."""
    kind, value = doc.xref_get_key(xref, "Resources/XObject")
    if kind == "xref":
        value = doc.xref_object(int(value.split()[0]), compressed=True)
    elif kind != "dict":
        return []
    return [
        r for r in (int(m) for m in _REFERENCE.findall(value)) if doc.xref_get_key(r, "Subtype")[1] == "/Form"
    ]


def content_cost(page: pymupdf.Page, cap: int) -> ContentCost:
    """``ContentCost`` of the page (call with ``MUPDF_LOCK`` held); inflating stops once ``cap`` bytes
    of distinct streams are counted."""
    doc = page.parent
    try:
        contents = [x for x in page.get_contents() if x > 0]
        forms = [x[0] for x in page.get_xobjects() if x[0] > 0]
    except (RuntimeError, ValueError):  # a damaged page: MuPDF renders what it can, as before
        return ContentCost(0, 0)
    stored = 0
    inline: list[tuple[int, int, int]] = []
    drawing: dict[int, int] = {}  # form xref -> bytes one drawing of it costs (_UNBOUNDED while on the stack)

    def measure(xref: int) -> tuple[int, int]:
        nonlocal stored
        if stored > cap:
            return 0, 0
        try:
            size, draws = _inflate(doc, xref, cap - stored, inline)
        except (RuntimeError, ValueError) as exc:  # a stream MuPDF cannot read inflates to nothing
            logger.debug("page %d: stream %d not counted: %s", page.number + 1, xref, exc)
            return 0, 0
        stored += size
        return size, draws

    def form_cost(xref: int, depth: int) -> int:
        if xref in drawing:
            return drawing[xref]
        drawing[xref] = _UNBOUNDED  # a form that draws itself (directly or not) never ends
        if depth > _MAX_FORM_DEPTH:
            return _UNBOUNDED
        size, draws = measure(xref)
        try:
            used = _forms_used(doc, xref)
        except (RuntimeError, ValueError):
            used = []
        heaviest = max((form_cost(child, depth + 1) for child in used), default=0)
        drawing[xref] = min(size + draws * heaviest, _UNBOUNDED)
        return drawing[xref]

    size, draws = 0, 0
    for xref in dict.fromkeys(contents):
        one, many = measure(xref)
        size, draws = size + one, draws + many
    heaviest = max((form_cost(xref, 1) for xref in dict.fromkeys(forms)), default=0)
    pictures = sum(size for *_, size in inline)  # decoding an inline image is drawing cost too
    return ContentCost(stored, min(size + draws * heaviest + pictures, _UNBOUNDED), tuple(inline))


def content_bytes(page: pymupdf.Page, cap: int) -> int:
    """Bytes MuPDF interprets to draw the page (``ContentCost.drawn``), for callers that walk what the
    page draws (call with ``MUPDF_LOCK`` held)."""
    return content_cost(page, cap).drawn


def check_content(page: pymupdf.Page, name: str, index: int, cap: int, env_name: str) -> int:
    """The page's drawing cost (``ContentCost.drawn``), or ``LimitExceededError`` naming the page when
    its distinct streams inflate past ``cap``."""
    cost = content_cost(page, cap)
    if cost.stored > cap:
        raise LimitExceededError(
            f"{name}: page {index + 1}'s content inflates to more than {cap / 2**20:.0f} MiB "
            f"(a decompression bomb?); it was not rendered (set {env_name} to raise the limit)"
        )
    _refuse_images(name, index, cap, env_name, [(w, h, b) for w, h, b in cost.inline_images])
    return cost.drawn


def check_images(page: pymupdf.Page, name: str, index: int, cap: int, env_name: str) -> None:
    """``LimitExceededError`` when the images the page draws would decode to more than ``cap`` bytes.

    Why by declared size: an image's ``/Width`` and ``/Height`` are what MuPDF allocates for it, however
    few bytes its stream holds (a 2.5 KB PDF declared an 18,000² image: 19 s and 593 MB to render). Each
    distinct image counts as the RGB page it becomes (3 bytes a pixel, 4 for CMYK) plus its soft mask;
    call with ``MUPDF_LOCK`` held."""
    doc = page.parent
    try:
        images = page.get_images(full=True)
    except (RuntimeError, ValueError):  # a damaged page: rendering says what is wrong with it
        return
    declared, seen = [], set()
    for xref, smask, width, height, _bpc, colorspace, *_ in images:
        if xref in seen or width <= 0 or height <= 0:
            continue
        seen.add(xref)
        declared.append((width, height, width * height * (4 if "CMYK" in str(colorspace) else 3)))
        if smask > 0 and smask not in seen:
            seen.add(smask)
            declared.append((0, 0, _declared_pixels(doc, smask)))
    _refuse_images(name, index, cap, env_name, declared)


def _refuse_images(
    name: str, index: int, cap: int, env_name: str, images: list[tuple[int, int, int]]
) -> None:
    total = sum(size for *_, size in images)
    if total > cap:
        width, height, _ = max(images, key=lambda image: image[0] * image[1])
        raise LimitExceededError(
            f"{name}: page {index + 1}'s images decode to {total / 2**20:.0f} MiB (the largest is "
            f"{width} x {height} pixels); the limit is {cap / 2**20:.0f} MiB per page, so it was "
            f"not rendered (set {env_name} to raise it)"
        )


def _declared_pixels(doc: pymupdf.Document, xref: int) -> int:
    try:
        width, height = (doc.xref_get_key(xref, key)[1] for key in ("Width", "Height"))
        return max(int(width), 0) * max(int(height), 0)
    except (RuntimeError, ValueError):
        return 0


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


__all__ = [
    "ContentCost",
    "check_content",
    "check_images",
    "content_bytes",
    "content_cost",
    "decoded_size",
    "render_isolated",
]
