"""Image files (PNG, JPEG, WebP, BMP, TIFF, GIF) as documents.

Why each TIFF and GIF frame is a page: multi-page TIFF is how scanners store documents, and a
multi-frame GIF handed to a document reader is pages far more often than a cartoon (reading every
frame loses nothing; reading one silently lost the rest). Extra frames of WebP/PNG animations and
MPO camera previews are not pages: the first frame is read and a note says so.
Why alpha goes on white: transparent regions of scans and screenshots are paper, and black would
hide black text.
Why pages are judged by their header before decoding: an 879 KB PNG declaring 17,000 × 17,000 pixels
decodes to 867 MB and cost 5.1 GB and 192 s downstream. Each page's declared size as the RGB page it
becomes must fit the per-page byte budget PDF pages already have (``max_page_stream_bytes``); a JPEG
over it is decoded at 1/2, 1/4 or 1/8 scale by libjpeg (Pillow's ``draft``) and marked downscaled,
any other format is refused in one line without a pixel decoded.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.exceptions import CorruptFileError, LimitExceededError
from ocr_app.ingest.base import SourceDocument
from ocr_app.ingest.limits import ENV_MAX_PAGE_STREAM, ENV_MAX_PAGES, ENV_MAX_PIXELS, IngestLimits, too_thin
from ocr_app.ingest.sniff import IMAGE_FORMATS
from ocr_app.schema import PageImage

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

_PAGED_FORMATS = frozenset({"tiff", "gif"})  # formats whose frames are document pages
_RGB_BYTES = 3  # every page becomes 8-bit RGB (``to_rgb``)
_DRAFT_SCALES = (2, 4, 8)  # what libjpeg can decode at directly


def to_rgb(image: Image.Image) -> Image.Image:
    """Any Pillow mode to 8-bit RGB: alpha composited on white, 16/32-bit grey scaled, CMYK converted."""
    from PIL import Image

    mode = image.mode
    if mode == "RGB":
        return image
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I", "F"):
        return _high_depth_to_rgb(image)
    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or (mode == "P" and "transparency" in image.info)
    if mode == "L" and "transparency" in image.info:
        has_alpha = True
    if has_alpha:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")


def _high_depth_to_rgb(image: Image.Image) -> Image.Image:
    """Scale 16-bit (and 32-bit int / float) grey to 0-255 instead of clipping everything to white."""
    import numpy as np
    from PIL import Image

    values = np.asarray(image).astype(np.float64)
    if image.mode.startswith("I;16"):
        scaled = values / 257.0
    else:
        low, high = float(values.min(initial=0.0)), float(values.max(initial=0.0))
        if image.mode == "I" and low >= 0 and high <= 255:
            scaled = values
        elif image.mode == "I" and low >= 0 and high <= 65535:
            scaled = values / 257.0
        else:  # arbitrary range (float images): stretch to the full 0-255 range
            scaled = (values - low) / (high - low) * 255.0 if high > low else np.zeros_like(values)
    grey = Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8), mode="L")
    return grey.convert("RGB")


class ImageDocument(SourceDocument):
    """An image file; one page, or one page per frame for multi-frame TIFF and GIF."""

    kind = "image"

    def __init__(
        self,
        source: Path | bytes,
        *,
        fmt: str,
        name: str,
        path: Path | None,
        limits: IngestLimits,
    ) -> None:
        from PIL import Image, UnidentifiedImageError

        self.format = fmt
        self.limits = limits
        label = _format_label(fmt)
        stream = io.BytesIO(source) if isinstance(source, bytes) else source
        _allow_pillow_pixels(limits.max_pixels_per_page)
        try:
            with warnings.catch_warnings():  # our own pixel limit below is the one users configure
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                image = Image.open(stream, formats=[IMAGE_FORMATS[fmt]])
        except Image.DecompressionBombError as exc:
            raise _bomb_error(name, exc, limits) from exc
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
            raise CorruptFileError(f"{name} looks like {label} but cannot be decoded: it is damaged") from exc
        self._image = image
        self._draft: dict[int, int] = {}  # page -> the JPEG scale it is decoded at (1/n)
        self._drafted = False  # draft() is set once, before the (single-frame) JPEG is first decoded
        try:
            frames = getattr(image, "n_frames", 1) if fmt in _PAGED_FORMATS else 1
            super().__init__(name, path, frames)
            self._check_limits()
            self._load(0)  # decode the first page now, so a truncated file fails at open, not mid-run
        except BaseException:
            image.close()
            raise
        if getattr(image, "n_frames", 1) > 1 and fmt not in _PAGED_FORMATS:
            note = f"{name} is an animation of {image.n_frames} frames; only the first frame was read"
            logger.warning(note)
            self.notes.append(note)

    def _check_limits(self) -> None:
        if self.page_count > self.limits.max_pages:
            raise LimitExceededError(
                f"{self.name} has {self.page_count} pages; the limit is {self.limits.max_pages} "
                f"(set {ENV_MAX_PAGES} to raise it)"
            )
        for index in range(self.page_count):
            self._seek(index)
            width, height = self._image.size
            if width * height > self.limits.max_pixels_per_page:
                where = f"page {index + 1} of {self.name}" if self.page_count > 1 else self.name
                raise LimitExceededError(
                    f"{where} is {width} x {height} = {width * height} pixels; the limit is "
                    f"{self.limits.max_pixels_per_page} pixels per page (set {ENV_MAX_PIXELS} to raise it)"
                )
            if width < 1 or height < 1:
                raise CorruptFileError(f"{self.name} has an empty ({width} x {height}) image")
            thin = too_thin(width, height)
            if thin:
                where = f"page {index + 1} of {self.name}" if self.page_count > 1 else self.name
                raise LimitExceededError(f"{where} is {width} x {height} pixels, {thin}")
            self._check_bytes(index, width, height)

    def _check_bytes(self, index: int, width: int, height: int) -> None:
        """The page's RGB bytes must fit the page budget: decided on the header, before any decoding."""
        cap = self.limits.max_page_stream_bytes
        if width * height * _RGB_BYTES <= cap:
            return
        if self.format == "jpeg":
            for scale in _DRAFT_SCALES:
                if -(-width // scale) * -(-height // scale) * _RGB_BYTES <= cap:
                    self._draft[index] = scale
                    return
        where = f"page {index + 1} of {self.name}" if self.page_count > 1 else self.name
        raise LimitExceededError(
            f"{where} is {width} x {height} pixels, {width * height * _RGB_BYTES / 2**20:.0f} MiB once "
            f"decoded; the limit is {cap / 2**20:.0f} MiB per page, so it was not decoded (set "
            f"{ENV_MAX_PAGE_STREAM} to raise it)"
        )

    def _seek(self, index: int) -> None:
        if self.page_count > 1 or index:
            from PIL import Image

            try:
                self._image.seek(index)
            except Image.DecompressionBombError as exc:
                raise _bomb_error(f"page {index + 1} of {self.name}", exc, self.limits) from exc
            except (EOFError, OSError, ValueError) as exc:
                raise CorruptFileError(
                    f"{self.name}: page {index + 1} is damaged and cannot be read"
                ) from exc

    def _load(self, index: int) -> Image.Image:
        self._seek(index)
        scale = self._draft.get(index)
        if scale and not self._drafted:
            self._drafted = True
            width, height = self._image.size
            self._image.draft("RGB", (-(-width // scale), -(-height // scale)))
            note = (
                f"{self.name} is {width} x {height} pixels, over the page budget: it was decoded at 1/{scale} "
                f"scale ({self._image.size[0]} x {self._image.size[1]})"
            )
            if note not in self.notes:
                logger.info(note)
                self.notes.append(note)
        try:
            self._image.load()
        except (OSError, SyntaxError, ValueError, EOFError) as exc:
            where = f"{self.name}: page {index + 1}" if self.page_count > 1 else self.name
            raise CorruptFileError(f"{where} is damaged or truncated and cannot be decoded") from exc
        return self._image

    def _render(self, index: int) -> PageImage:
        from PIL import ImageOps

        frame = self._load(index)
        upright = ImageOps.exif_transpose(frame)
        return PageImage(
            image=to_rgb(upright),
            index=index,
            source=self.name,
            dpi=None,
            page_count=self.page_count,
            downscaled=index in self._draft,
            image_file=None if index in self._draft else self._stored_as_shown(frame),
        )

    def _stored_as_shown(self, frame: Image.Image) -> Path | None:
        """The file, when its stored bytes are this page as shown: a JPEG (RGB or grey) stored upright, which
        an output can embed as it is instead of re-encoding its pixels."""
        if self.format != "jpeg" or self.path is None or frame.mode not in ("RGB", "L"):
            return None
        return self.path if frame.getexif().get(0x0112, 1) == 1 else None

    def _release(self) -> None:
        self._image.close()


def _allow_pillow_pixels(limit: int) -> None:
    """Raise Pillow's decompression-bomb bound to ours, so that ours is the one that decides.

    Why: Pillow refuses images over 2 × ``Image.MAX_IMAGE_PIXELS`` (179 MP by default) before our check
    runs, whatever the setting said: a 300 MP limit would have been 179 MP in fact. Process-wide, and
    only ever raised: the bound then stays twice the largest limit any document was opened with.
    """
    from PIL import Image

    if Image.MAX_IMAGE_PIXELS is not None and limit > Image.MAX_IMAGE_PIXELS:
        Image.MAX_IMAGE_PIXELS = limit


def _bomb_error(where: str, exc: Exception, limits: IngestLimits) -> LimitExceededError:
    """Pillow's bound (twice ours) fired before our check could: say so in the user's terms."""
    found = re.search(r"\((\d+) pixels\)", str(exc))
    size = f"{int(found.group(1))} pixels, " if found else ""
    return LimitExceededError(
        f"{where} is {size}too large to decode safely; the limit is {limits.max_pixels_per_page} pixels "
        f"per page (set {ENV_MAX_PIXELS} to change it)"
    )


def _format_label(fmt: str) -> str:
    return {
        "jpeg": "a JPEG",
        "png": "a PNG",
        "webp": "a WebP",
        "bmp": "a BMP",
        "tiff": "a TIFF",
        "gif": "a GIF",
    }[fmt] + " image"
