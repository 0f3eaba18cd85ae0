"""Recognise a file's format from its first bytes.

Why content and not the extension: uploads and scans are often misnamed (a PNG saved as ``.pdf``, a
HTML error page saved as ``.pdf``). We trust the bytes, warn about the name, and when the bytes are
nothing we support, say what they look like so the user knows what went wrong.

Why our own table and not ``filetype`` or ``puremagic`` (measured by ``bench/eval_libraries.py``,
2026-11-30): on the formats we open, ours answers every test head right in ~4 µs per call;
``filetype`` (~63 µs) and ``puremagic`` (~2 ms) both miss a PDF whose ``%PDF-`` header follows a
few junk bytes (PDF readers accept it within the first 1024 bytes, so must we), and neither maps to the
decoder that opens the file. Their wider catalogues would only improve the wording of "not supported"
messages, which ``describe_content`` already gives for the cases users hit.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

# format name -> the Pillow format that must decode it ("pdf" is handled by PyMuPDF)
IMAGE_FORMATS = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP", "bmp": "BMP", "tiff": "TIFF", "gif": "GIF"}

# extension -> format it promises; used only to warn about mislabelled files
EXTENSION_FORMATS = {
    ".pdf": "pdf",
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".jpe": "jpeg",
    ".jfif": "jpeg",
    ".webp": "webp",
    ".bmp": "bmp",
    ".dib": "bmp",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".gif": "gif",
}

HEAD_BYTES = 1024  # PDF readers accept the %PDF- header anywhere in the first 1024 bytes


def sniff_format(head: bytes) -> str | None:
    """``"pdf"``, an ``IMAGE_FORMATS`` key, or None when the bytes are none of them."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return "tiff"
    if head[:2] == b"BM" and len(head) >= 26:
        return "bmp"
    if b"%PDF-" in head[:HEAD_BYTES]:
        return "pdf"
    return None


def describe_content(head: bytes) -> str:
    """A short guess at what unsupported bytes are, for error messages ("a ZIP archive", "plain text")."""
    lowered = head[:HEAD_BYTES].lstrip().lower()
    signatures = [
        (b"PK\x03\x04", "a ZIP archive (or a DOCX/XLSX/PPTX/EPUB file)"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"7z\xbc\xaf", "a 7-Zip archive"),
        (b"Rar!", "a RAR archive"),
        (b"\xd0\xcf\x11\xe0", "an old Microsoft Office document"),
        (b"\x00\x00\x00\x0cjP  ", "a JPEG 2000 image"),
        (b"\xff\x4f\xff\x51", "a JPEG 2000 codestream"),
        (b"%!PS", "a PostScript file"),
        (b"{\\rtf", "an RTF document"),
    ]
    for magic, what in signatures:
        if head.startswith(magic):
            return what
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"heic", b"heix", b"mif1", b"msf1", b"hevc"):
            return "a HEIC/HEIF image"
        if brand in (b"avif", b"avis"):
            return "an AVIF image"
        return "an MP4/QuickTime media file"
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "an HTML page"
    if lowered.startswith(b"<svg") or (lowered.startswith(b"<?xml") and b"<svg" in lowered):
        return "an SVG drawing"
    if lowered.startswith(b"<?xml"):
        return "an XML file"
    if _looks_like_text(head):
        return "plain text"
    return "unrecognised binary data"


def _looks_like_text(head: bytes) -> bool:
    chunk = head[:HEAD_BYTES]
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(chunk) - 3:  # only a character cut at the end of the chunk is forgiven
            return False
        text = chunk[: exc.start].decode("utf-8")
    printable = sum(ch.isprintable() or ch in "\r\n\t\f" for ch in text)
    return bool(text) and printable / len(text) > 0.95
