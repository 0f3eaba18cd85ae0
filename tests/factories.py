"""Real test documents built on the fly with PyMuPDF and Pillow.

Why generated and not checked in: every test states the content it needs in one line, files stay out of
git, and the PDFs/images are real ones (the same libraries users' files come from), not byte stubs.

Conventions that tests may rely on:
- ``make_pdf``: lines starting with ``"# "`` are headings, set in bold at 1.6x the body size; body text
  is Helvetica. Page size is in PDF points (1/72 inch).
- ``make_image``: white background (fully transparent black for RGBA/LA), black text near the top left and a RED
  square (``MARKER_SIZE`` px) in the top-left corner, so rotation tests can find where that corner went.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

MARKER_SIZE = 40
MARKER_RGB = (255, 0, 0)

_FORMATS = {
    ".png": "PNG",
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".webp": "WEBP",
    ".bmp": "BMP",
    ".tif": "TIFF",
    ".tiff": "TIFF",
    ".gif": "GIF",
}


def make_pdf(
    path: str | Path,
    pages: list[str],
    *,
    page_size: tuple[float, float] = (595, 842),
    fontsize: float = 11,
    password: str | None = None,
) -> Path:
    """Write a PDF with one page per string and return its path.

    ``password`` encrypts it with AES-256 (user password = owner password prefix, so only the user
    password is needed to open it). Text that does not fit a page raises ValueError instead of being
    cut silently.
    """
    import pymupdf

    path = Path(path)
    width, height = page_size
    margin = 50
    doc = pymupdf.open()
    for page_text in pages:
        page = doc.new_page(width=width, height=height)
        y = margin
        for line in page_text.splitlines():
            heading = line.startswith("# ")
            text = line[2:] if heading else line
            size = fontsize * 1.6 if heading else fontsize
            if not text.strip():
                y += size
                continue
            rect = pymupdf.Rect(margin, y, width - margin, height - margin)
            left = page.insert_textbox(rect, text, fontsize=size, fontname="hebo" if heading else "helv")
            if left < 0:
                raise ValueError(f"text does not fit the page: {text[:40]!r}")
            y += rect.height - left + size * 0.4
    kwargs: dict[str, object] = {}
    if password is not None:
        kwargs = {
            "encryption": pymupdf.PDF_ENCRYPT_AES_256,
            "user_pw": password,
            "owner_pw": password + "-owner",
        }
    doc.save(path, **kwargs)
    doc.close()
    return path


def make_image(
    path: str | Path,
    text: str = "Hello",
    size: tuple[int, int] = (800, 600),
    mode: str = "RGB",
    fmt: str | None = None,
    exif_orientation: int | None = None,
    frames: int = 1,
) -> Path:
    """Write an image file and return its path.

    The format comes from the extension unless ``fmt`` (a Pillow format name such as "PNG") is given,
    which is how tests build mislabelled files (a PNG named ``.pdf``). ``mode`` is RGB, RGBA, LA, P,
    CMYK, L or I;16. ``frames > 1`` writes a multi-frame file (TIFF, GIF or WebP); frame ``i`` says
    ``f"{text} {i + 1}"``. ``exif_orientation`` (1-8) writes the EXIF Orientation tag (JPEG, PNG, WebP).
    """
    from PIL import Image

    path = Path(path)
    fmt = fmt or _FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"no image format for {path.name}; pass fmt=")
    images = [_draw(text if frames == 1 else f"{text} {i + 1}", size, mode) for i in range(frames)]
    kwargs: dict[str, object] = {}
    if frames > 1:
        kwargs = {"save_all": True, "append_images": images[1:]}
    if exif_orientation is not None:
        if fmt not in ("JPEG", "PNG", "WEBP"):
            raise ValueError(f"EXIF orientation is not supported for {fmt} here")
        exif = Image.Exif()
        exif[0x0112] = exif_orientation
        kwargs["exif"] = exif.tobytes()
    images[0].save(path, format=fmt, **kwargs)
    return path


def _draw(text: str, size: tuple[int, int], mode: str) -> Image.Image:
    """One picture: text plus the red corner marker, converted to ``mode``."""
    from PIL import Image, ImageDraw, ImageFont

    transparent = mode in ("RGBA", "LA")
    # transparent pixels are black underneath, as in many real files: dropping alpha would show black
    img = Image.new("RGBA", size, (0, 0, 0, 0) if transparent else (255, 255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, MARKER_SIZE - 1, MARKER_SIZE - 1), fill=(*MARKER_RGB, 255))
    font = ImageFont.load_default(size=max(12, size[1] // 12))
    draw.text((MARKER_SIZE + 10, MARKER_SIZE + 10), text, fill=(0, 0, 0, 255), font=font)
    if transparent:
        return img.convert(mode)
    if mode == "I;16":
        return img.convert("L").convert("I").point(lambda v: v * 257).convert("I;16")
    return img.convert("RGB").convert(mode)


def pdf_page_request(pdf: Path, index: int = 0, dpi: int = 72, prompt: str = "<image>\nFree OCR."):
    """A page request for page ``index`` of a real PDF, rendered as the converter renders it (its
    ``pdf_path`` set, so text-layer engines read the file)."""
    from bench.accuracy import generate
    from ocr_app.schema import PageImage, PageRequest

    image = generate.render(pdf, index, dpi)
    page = PageImage(image=image, index=index, source=pdf.name, dpi=dpi, pdf_path=pdf)
    return PageRequest(page=page, prompt=prompt)


def count_calls(
    monkeypatch, owner: Any, name: str, key=lambda *args, **kwargs: args[0].number
) -> collections.Counter:
    """Patch ``owner.name`` (a module's function or a class's method) to count its calls; each call
    counts under ``key`` of its arguments (by default the first's page number), none where that is
    None. Returns the counter, which fills as the calls come."""
    calls: collections.Counter = collections.Counter()
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        at = key(*args, **kwargs)
        if at is not None:
            calls[at] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def assert_in_order(text: str, parts: list[str]) -> None:
    """Every one of ``parts`` occurs in ``text``, in this order (first occurrences)."""
    positions = [text.index(s) for s in parts]
    assert positions == sorted(positions), text


def pages_markdown(engine, pdf: Path) -> list[str]:
    """The Markdown of every page of ``pdf`` as ``engine`` (a text-layer engine) reads it, page by page."""
    import pymupdf

    from ocr_app.structure.pipeline import blocks_to_markdown

    with pymupdf.open(pdf) as doc:
        count = doc.page_count
    return [
        blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, k, 72, prompt="")])[0].blocks)
        for k in range(count)
    ]


def saved_markdown(engine, doc, tmp_path: Path, name: str = "page") -> str:
    """Save the PyMuPDF ``doc`` as ``tmp_path/name.pdf`` and read its first page's Markdown."""
    pdf = tmp_path / f"{name}.pdf"
    doc.save(pdf)
    return pages_markdown(engine, pdf)[0]


def page_markdown(engine, pdf: Path, index: int = 0) -> str:
    """The Markdown of page ``index`` of ``pdf`` as ``engine`` reads it at 144 DPI."""
    from ocr_app.structure.pipeline import blocks_to_markdown

    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, index, 144, prompt="")])[0].blocks)


def table_rows(md: str) -> list[list[str]]:
    """The first table's rows in ``md``, each a list of its cells' texts (a spanning cell once)."""
    import re

    table = md[md.index("<table>") : md.index("</table>")]
    return [
        re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)
    ]


def heading_texts(md: str) -> list[str]:
    """The texts of the Markdown headings in ``md``, in order, without their ``#`` marks."""
    return [ln.lstrip("#").strip() for ln in md.splitlines() if ln.startswith("#")]


SURVEY_TEXT = (
    "the survey of regional households shows that income grew faster than prices in most areas while "
    "rents in the larger towns rose by a third over the period and the share of families who own their "
    "home fell for the fifth year in a row according to the figures"
)


def body_paragraph(
    page,
    x: float,
    y: float,
    width: float,
    seed: int,
    count: int,
    font: str,
    size: float = 10,
    color=(0, 0, 0),
) -> float:
    """``count`` lines of body text (``SURVEY_TEXT`` from word ``seed % 9``, black unless ``color``)
    filling ``width`` from ``y`` (the last one shorter, ending a sentence); the y of the next line."""
    import itertools

    import pymupdf

    words = SURVEY_TEXT.split()
    cycle = itertools.cycle(words[seed % 9 :] + words[: seed % 9])
    for j in range(count):
        line = ""
        while True:
            word = next(cycle)
            if pymupdf.get_text_length(f"{line} {word}", fontname=font, fontsize=size) > width:
                break
            line = f"{line} {word}".strip()
        if j == 0:
            line = line.capitalize()
        if j == count - 1:
            line = line.rsplit(" ", 3)[0] + "."
        page.insert_text((x, y), line, fontsize=size, fontname=font, color=color)
        y += 1.3 * size
    return y
