"""Ingest: page ranges, PDFs and images to RGB pages, and one specific error per kind of bad input.

Every document here is a real file made by PyMuPDF or Pillow (tests/factories.py).
"""

from __future__ import annotations

import io
import logging
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from PIL import Image

from ocr_app.exceptions import (
    ConfigError,
    CorruptFileError,
    EmptyInputError,
    EncryptedDocumentError,
    InputError,
    LimitExceededError,
    PageRangeError,
    UnsupportedFormatError,
)
from ocr_app.ingest import (
    SUPPORTED_EXTENSIONS,
    IngestLimits,
    iter_input_files,
    open_document,
    parse_page_range,
    to_rgb,
)
from ocr_app.ingest.pdf import fit_dpi
from ocr_app.ingest.sniff import describe_content, sniff_format
from ocr_app.settings import Settings, load_settings
from tests.factories import MARKER_SIZE, make_image, make_pdf

W, H = 800, 600  # make_image default size
MID = MARKER_SIZE // 2  # a pixel inside the red corner marker


def near(pixel: tuple[int, ...], expected: tuple[int, ...], tol: int = 40) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(pixel, expected, strict=True))


# --- page ranges ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "count", "expected"),
    [
        (None, 4, [0, 1, 2, 3]),
        ("", 3, [0, 1, 2]),
        (" ALL ", 2, [0, 1]),
        ("3", 5, [2]),
        ("1-3,7,10-", 12, [0, 1, 2, 6, 9, 10, 11]),
        ("-3", 12, [0, 1, 2]),
        ("2-2", 3, [1]),
        ("3,1,3,2-3", 5, [0, 1, 2]),
        (" 1 - 2 , 4 ", 5, [0, 1, 3]),
        ("5-", 5, [4]),
        ("-1", 1, [0]),
    ],
)
def test_page_range_valid(spec: str | None, count: int, expected: list[int]) -> None:
    assert parse_page_range(spec, count) == expected


@pytest.mark.parametrize(
    ("spec", "count", "message"),
    [
        ("14", 12, "page 14 does not exist: the document has 12 pages"),
        ("2", 1, "page 2 does not exist: the document has 1 page"),
        ("1-20", 12, "page 20 does not exist"),
        ("13-", 12, "page 13 does not exist"),
        ("-13", 12, "page 13 does not exist"),
        ("3-1", 12, "3-1 is reversed"),
        ("x", 12, '"x" is not a page number'),
        ("1-x", 12, '"x" in "1-x" is not a page number'),
        ("1 3", 12, '"1 3" is not a page number'),
        ("²", 12, "is not a page number"),
        ("0", 12, "page 0 does not exist: pages are numbered from 1"),
        ("1,,2", 12, "empty part"),
        ("1,", 12, "empty part"),
        ("1-2-3", 12, '"1-2-3" is not a page range'),
        ("-", 12, "is not a page range"),
    ],
)
def test_page_range_errors_name_the_bad_part(spec: str, count: int, message: str) -> None:
    with pytest.raises(PageRangeError) as info:
        parse_page_range(spec, count)
    assert message in str(info.value)
    assert f'"{spec}"' in str(info.value)  # the whole range is quoted so the user sees the context


# --- images --------------------------------------------------------------------------------------
GREY_RED = 76  # red (255, 0, 0) in 8-bit luminance

IMAGE_CASES = [
    ("png", "RGB"),
    ("png", "RGBA"),
    ("png", "LA"),
    ("png", "P"),
    ("png", "L"),
    ("png", "I;16"),
    ("jpg", "RGB"),
    ("jpeg", "L"),
    ("jpg", "CMYK"),
    ("webp", "RGB"),
    ("webp", "RGBA"),
    ("bmp", "RGB"),
    ("bmp", "P"),
    ("tiff", "RGB"),
    ("tif", "CMYK"),
    ("tiff", "RGBA"),
    ("tiff", "I;16"),
    ("gif", "P"),
]


@pytest.mark.parametrize(("ext", "mode"), IMAGE_CASES)
def test_every_image_format_and_mode_becomes_rgb_on_white(tmp_path: Path, ext: str, mode: str) -> None:
    path = make_image(tmp_path / f"scan.{ext}", mode=mode)
    with open_document(path) as doc:
        assert (doc.kind, doc.page_count, doc.name, doc.path) == ("image", 1, f"scan.{ext}", path)
        page = doc.render(0)
    assert page.image.mode == "RGB"
    assert page.size == (W, H)
    assert (page.index, page.source, page.dpi, page.pdf_path, page.page_count) == (
        0,
        f"scan.{ext}",
        None,
        None,
        1,
    )
    grey = mode in ("L", "LA", "I;16")
    marker = (GREY_RED,) * 3 if grey else (255, 0, 0)
    assert near(page.image.getpixel((MID, MID)), marker), page.image.getpixel((MID, MID))
    # the bottom-right area is background: white paper, also where the file is transparent black
    assert near(page.image.getpixel((W - 10, H - 10)), (255, 255, 255), tol=8)
    # and the text is still there: some dark pixels in the text area
    text_area = page.image.crop((MARKER_SIZE, MARKER_SIZE, W // 2, H // 3)).convert("L")
    assert min(text_area.getdata()) < 80


def test_partial_alpha_is_composited_on_white(tmp_path: Path) -> None:
    img = Image.new("RGBA", (10, 10), (0, 0, 0, 128))  # half-transparent black
    img.save(tmp_path / "half.png")
    pixel = open_document(tmp_path / "half.png").render(0).image.getpixel((5, 5))
    assert all(125 <= v <= 129 for v in pixel), pixel  # 255 * (1 - 128/255) = 127


def test_palette_transparency_is_white(tmp_path: Path) -> None:
    img = Image.new("P", (20, 10), 0)
    img.putpalette([0, 0, 0, 0, 0, 255] + [0] * 762)  # index 0 black, index 1 blue
    img.paste(1, (10, 0, 20, 10))
    img.save(tmp_path / "pal.png", transparency=0)
    image = open_document(tmp_path / "pal.png").render(0).image
    assert image.getpixel((2, 2)) == (255, 255, 255)
    assert image.getpixel((15, 5)) == (0, 0, 255)


@pytest.mark.parametrize(
    ("orientation", "size", "marker_at"),
    [
        (1, (W, H), (MID, MID)),
        (3, (W, H), (W - MID, H - MID)),  # rotated 180
        (6, (H, W), (H - MID, MID)),  # rotate 90 clockwise to display: top-left goes top-right
        (8, (H, W), (MID, W - MID)),  # rotate 90 counter-clockwise: top-left goes bottom-left
    ],
)
def test_exif_orientation_is_applied(
    tmp_path: Path, orientation: int, size: tuple[int, int], marker_at: tuple[int, int]
) -> None:
    path = make_image(tmp_path / "photo.jpg", exif_orientation=orientation)
    image = open_document(path).render(0).image
    assert image.size == size
    assert near(image.getpixel(marker_at), (255, 0, 0))
    if orientation != 1:
        assert near(image.getpixel((MID, MID)), (255, 255, 255))  # the marker left the top-left corner


@pytest.mark.parametrize(("name", "mode"), [("scans.tiff", "RGB"), ("scans.gif", "P")])
def test_multi_frame_tiff_and_gif_are_one_page_per_frame(tmp_path: Path, name: str, mode: str) -> None:
    path = make_image(tmp_path / name, text="Page", mode=mode, frames=3)
    assert Image.open(path).n_frames == 3
    with open_document(path) as doc:
        assert doc.notes == []
        assert doc.page_count == 3
        pages = list(doc.pages())
        assert [p.index for p in pages] == [0, 1, 2]
        assert all(p.page_count == 3 and p.image.mode == "RGB" for p in pages)
        assert pages[0].image.tobytes() != pages[2].image.tobytes()  # frame 3 says "Page 3"
        assert doc.render(1).image.tobytes() == pages[1].image.tobytes()  # any order, same result
        with pytest.raises(PageRangeError, match="page 4 does not exist: the document has 3 pages"):
            doc.render(3)


def test_animated_webp_reads_the_first_frame_and_says_so(tmp_path: Path, caplog) -> None:
    path = make_image(tmp_path / "anim.webp", frames=3)
    assert Image.open(path).n_frames == 3
    with caplog.at_level("WARNING", logger="ocr_app.ingest.image"), open_document(path) as doc:
        assert doc.page_count == 1
        assert doc.notes == ["anim.webp is an animation of 3 frames; only the first frame was read"]
    assert doc.notes[0] in caplog.text  # on the terminal too (warnings are shown by default)


def test_bilevel_group4_tiff(tmp_path: Path) -> None:
    img = Image.new("1", (64, 32), 1)
    img.paste(0, (0, 0, 16, 16))
    img.save(tmp_path / "fax.tiff", compression="group4")
    image = open_document(tmp_path / "fax.tiff").render(0).image
    assert (image.mode, image.getpixel((4, 4)), image.getpixel((40, 20))) == (
        "RGB",
        (0, 0, 0),
        (255, 255, 255),
    )


@pytest.mark.parametrize("mode", ["I", "F"])
def test_to_rgb_scales_high_depth_grey(mode: str) -> None:
    import numpy as np

    values = np.array([[0, 1000, 65535]], dtype=np.int32 if mode == "I" else np.float32)
    rgb = to_rgb(Image.fromarray(values, mode=mode))
    assert rgb.mode == "RGB"
    assert [rgb.getpixel((x, 0))[0] for x in range(3)] == [0, 4, 255]  # scaled, not clipped to 255


# --- PDFs ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("page_size", "dpi"), [((595, 842), 144), ((612, 792), 72), ((612, 792), 100)])
def test_pdf_render_size_is_points_times_dpi(tmp_path: Path, page_size: tuple[int, int], dpi: int) -> None:
    path = make_pdf(tmp_path / "doc.pdf", ["# Title\nFirst page text", "Second page"], page_size=page_size)
    with open_document(path, dpi=dpi) as doc:
        assert (doc.kind, doc.page_count, doc.path) == ("pdf", 2, path)
        page = doc.render(1)
    assert page.size == (page_size[0] * dpi // 72, page_size[1] * dpi // 72)
    assert (page.index, page.dpi, page.pdf_path, page.source, page.page_count) == (1, dpi, path, "doc.pdf", 2)
    assert page.image.mode == "RGB"
    assert min(page.image.convert("L").getdata()) < 80  # the text was drawn
    assert page.image.getpixel((2, 2)) == (255, 255, 255)  # white paper, no alpha


def test_pdf_default_dpi_is_144(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "doc.pdf", ["text"])
    assert open_document(path).render(0).dpi == 144


def test_rotated_pdf_page_renders_upright_size(tmp_path: Path) -> None:
    import pymupdf

    path = make_pdf(tmp_path / "doc.pdf", ["landscape"])
    with pymupdf.open(path) as doc:
        doc[0].set_rotation(90)
        doc.save(tmp_path / "rotated.pdf")
    assert open_document(tmp_path / "rotated.pdf", dpi=72).render(0).size == (842, 595)


def test_huge_pdf_page_renders_at_the_largest_dpi_that_fits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = make_pdf(tmp_path / "poster.pdf", ["# Poster"])
    limits = IngestLimits(max_pixels_per_page=1_000_000)
    with caplog.at_level(logging.INFO, logger="ocr_app.ingest"):
        page = open_document(path, limits=limits).render(0)
    assert page.dpi == 101 and page.downscaled  # 72 * sqrt(1e6 / (595 * 842)) = 101.7
    assert page.image.width * page.image.height <= 1_000_000
    assert page.size == (835, 1182)  # 595 and 842 pt at 101 DPI
    assert "rendered at 101 DPI instead of 144" in caplog.text


def test_pdf_page_that_fits_at_no_dpi_is_a_limit_error(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "doc.pdf", ["x"])
    doc = open_document(path, limits=IngestLimits(max_pixels_per_page=50))
    with pytest.raises(LimitExceededError, match=r"doc.pdf: page 1 .*DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE"):
        doc.render(0)


def test_fit_dpi_never_exceeds_the_limit() -> None:
    for width, height, limit in [(595, 842, 1_000_000), (14400, 14400, 60_000_000), (100, 7000, 12345)]:
        dpi = fit_dpi(width, height, 144, limit)
        assert 0 < dpi < 144
        assert -(-width * dpi // 72) * -(-height * dpi // 72) <= limit
        assert -(-width * (dpi + 1) // 72) * -(-height * (dpi + 1) // 72) > limit  # and it is the largest
    assert fit_dpi(595, 842, 144, 10**9) == 144


def test_pdf_from_bytes_uses_a_private_temp_file_deleted_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    data = make_pdf(tmp_path / "doc.pdf", ["one", "two"]).read_bytes()
    with open_document(data, name="upload.pdf") as doc:
        page = doc.render(0)
        assert doc.path is None and doc.name == "upload.pdf" and page.source == "upload.pdf"
        assert page.pdf_path is not None and page.pdf_path.parent == tmp_path / "tmp"
        assert page.pdf_path.read_bytes() == data
    assert not page.pdf_path.exists()
    assert open_document(data).name == "document"
    # a bytes PDF that fails to open leaves no temp file behind
    locked = make_pdf(tmp_path / "locked.pdf", ["secret"], password="pw").read_bytes()
    with pytest.raises(EncryptedDocumentError):
        open_document(locked, name="locked.pdf")
    assert list((tmp_path / "tmp").iterdir()) == []


def test_render_after_close_and_outside_the_document(tmp_path: Path) -> None:
    doc = open_document(make_pdf(tmp_path / "doc.pdf", ["one"]))
    with pytest.raises(PageRangeError, match=r"doc\.pdf: page 2 does not exist: the document has 1 page"):
        doc.render(1)
    doc.close()
    doc.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        doc.render(0)


# --- encrypted PDFs ------------------------------------------------------------------------------
def test_encrypted_pdf_needs_its_password(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "locked.pdf", ["# Secret\nbody"], password="s3cret")
    for password in (None, ""):
        with pytest.raises(EncryptedDocumentError) as info:
            open_document(path, password=password)
        assert str(info.value) == "locked.pdf is encrypted; pass its password (--password in the CLI)"
    with pytest.raises(EncryptedDocumentError, match=r"the password given for locked\.pdf is wrong"):
        open_document(path, password="nope")
    with open_document(path, password="s3cret") as doc:
        assert doc.render(0).size == (1190, 1684)


def test_permissions_only_pdf_opens_without_a_password(tmp_path: Path) -> None:
    import pymupdf

    path = make_pdf(tmp_path / "plain.pdf", ["text"])
    with pymupdf.open(path) as doc:
        doc.save(tmp_path / "owner.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="")
    with open_document(tmp_path / "owner.pdf") as doc:
        assert min(doc.render(0).image.convert("L").getdata()) < 80


# --- bad input: one specific error each, naming the file -----------------------------------------
def _zero_page_pdf() -> bytes:
    """A valid PDF (correct xref) whose page tree is empty; PyMuPDF refuses to save one itself."""
    objects = [b"<</Type/Catalog/Pages 2 0 R>>", b"<</Type/Pages/Kids[]/Count 0>>"]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares a huge size in a few bytes (a decompression bomb)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )


def test_empty_files(tmp_path: Path) -> None:
    for name in ("empty.pdf", "empty.png"):
        (tmp_path / name).write_bytes(b"")
        with pytest.raises(EmptyInputError, match=rf"^{name} is empty \(0 bytes\)$"):
            open_document(tmp_path / name)
    with pytest.raises(EmptyInputError, match=r"upload\.pdf is empty"):
        open_document(b"", name="upload.pdf")


def test_zero_page_pdf(tmp_path: Path) -> None:
    (tmp_path / "nopages.pdf").write_bytes(_zero_page_pdf())
    with pytest.raises(EmptyInputError, match=r"^nopages\.pdf has no pages$"):
        open_document(tmp_path / "nopages.pdf")
    # the same without an xref table: MuPDF repairs it, it is still an empty document
    no_xref = (
        b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
    )
    (tmp_path / "bare.pdf").write_bytes(no_xref + b"trailer<</Root 1 0 R>>\n%%EOF\n")
    with pytest.raises(EmptyInputError, match=r"^bare\.pdf has no pages \(its structure was damaged"):
        open_document(tmp_path / "bare.pdf")


def test_corrupt_and_truncated_pdfs(tmp_path: Path) -> None:
    (tmp_path / "garbage.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 200)
    with pytest.raises(CorruptFileError, match=r"garbage\.pdf is damaged or truncated"):
        open_document(tmp_path / "garbage.pdf")
    data = make_pdf(tmp_path / "full.pdf", [f"page {i}" for i in range(5)]).read_bytes()
    (tmp_path / "cut.pdf").write_bytes(data[: len(data) // 5])
    with pytest.raises(CorruptFileError, match=r"cut\.pdf"):
        open_document(tmp_path / "cut.pdf")


def test_repairable_pdf_opens_with_a_note(tmp_path: Path) -> None:
    data = make_pdf(tmp_path / "full.pdf", [f"page {i}" for i in range(5)]).read_bytes()
    (tmp_path / "cut.pdf").write_bytes(data[: int(len(data) * 0.9)])  # lost only the xref table
    with open_document(tmp_path / "cut.pdf") as doc:
        assert doc.page_count == 5
        assert any("repaired" in note for note in doc.notes)
        assert doc.render(0).size == (1190, 1684)


@pytest.mark.parametrize(
    ("ext", "label"), [("png", "PNG"), ("jpg", "JPEG"), ("webp", "WebP"), ("tiff", "TIFF")]
)
def test_truncated_and_corrupt_images(tmp_path: Path, ext: str, label: str) -> None:
    data = make_image(tmp_path / f"full.{ext}").read_bytes()
    (tmp_path / f"cut.{ext}").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError, match=rf"cut\.{ext}"):
        open_document(tmp_path / f"cut.{ext}")
    (tmp_path / f"bad.{ext}").write_bytes(data[:16] + b"\x00" * 16 + b"junk" * 50)
    with pytest.raises(
        CorruptFileError, match=rf"bad\.{ext} (looks like an? {label} image but cannot be|is dam)"
    ):
        open_document(tmp_path / f"bad.{ext}")


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"Dear user,\nthis is a plain text file.\n", "plain text"),
        (b"<!DOCTYPE html><html><body>404 Not Found</body></html>", "an HTML page"),
        (b"PK\x03\x04" + b"\x00" * 40, "a ZIP archive (or a DOCX/XLSX/PPTX/EPUB file)"),
        (b"\x00\x00\x00\x18ftypheic" + b"\x00" * 40, "a HEIC/HEIF image"),
        (bytes(range(256)) * 2, "unrecognised binary data"),
    ],
)
def test_unsupported_content_named_pdf_says_what_it_is(tmp_path: Path, content: bytes, what: str) -> None:
    (tmp_path / "report.pdf").write_bytes(content)
    with pytest.raises(UnsupportedFormatError) as info:
        open_document(tmp_path / "report.pdf")
    assert str(info.value) == (
        f"report.pdf is not a PDF or a supported image (PNG, JPEG, WebP, BMP, TIFF, GIF): it looks like {what}"
    )
    assert describe_content(content) == what


def test_mislabelled_files_are_read_by_content(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    png_as_pdf = make_image(tmp_path / "scan.pdf", fmt="PNG")
    with caplog.at_level(logging.WARNING, logger="ocr_app.ingest"):
        doc = open_document(png_as_pdf)
    assert doc.kind == "image" and doc.render(0).size == (W, H)
    assert "scan.pdf is named like a PDF file but its content is PNG" in caplog.text
    assert doc.notes and "content is PNG" in doc.notes[0]

    pdf_as_png = tmp_path / "page.png"
    pdf_as_png.write_bytes(make_pdf(tmp_path / "real.pdf", ["text"]).read_bytes())
    with open_document(pdf_as_png) as doc:
        assert doc.kind == "pdf" and doc.render(0).pdf_path == pdf_as_png

    jpeg_as_tiff = make_image(tmp_path / "photo.tiff", fmt="JPEG")
    assert open_document(jpeg_as_tiff).render(0).size == (W, H)
    # an unknown or missing extension is not "mislabelled"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ocr_app.ingest"):
        assert open_document(make_image(tmp_path / "scan.dat", fmt="PNG")).notes == []
        assert open_document((tmp_path / "real.pdf").read_bytes()).kind == "pdf"
    assert caplog.text == ""


def test_missing_path_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.pdf: no such file"):
        open_document(tmp_path / "nope.pdf")
    with pytest.raises(InputError, match="is a folder"):
        open_document(tmp_path)


def test_bad_dpi_is_a_config_error(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "doc.pdf", ["x"])
    for dpi in (0, 20, 1200):
        with pytest.raises(ConfigError, match="dpi must be between 36 and 600"):
            open_document(path, dpi=dpi)


# --- limits --------------------------------------------------------------------------------------
def test_file_size_limit(tmp_path: Path) -> None:
    path = make_pdf(tmp_path / "doc.pdf", ["x"])
    size = path.stat().st_size
    with pytest.raises(LimitExceededError) as info:
        open_document(path, limits=IngestLimits(max_file_bytes=size - 1))
    message = str(info.value)
    assert (
        message.startswith("doc.pdf is 0.0 MiB; the limit is 0.0 MiB")
        and "DEEPSEEK_OCR_MAX_FILE_MB" in message
    )
    assert open_document(path, limits=IngestLimits(max_file_bytes=size)).page_count == 1


def test_image_pixel_limit(tmp_path: Path) -> None:
    path = make_image(tmp_path / "big.png")
    with pytest.raises(LimitExceededError) as info:
        open_document(path, limits=IngestLimits(max_pixels_per_page=W * H - 1))
    assert str(info.value) == (
        f"big.png is 800 x 600 = 480000 pixels; the limit is {W * H - 1} pixels per page "
        "(set DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE to raise it)"
    )
    assert open_document(path, limits=IngestLimits(max_pixels_per_page=W * H)).render(0).size == (W, H)


def test_decompression_bomb_is_a_limit_error(tmp_path: Path) -> None:
    """Over the default 300 MP limit: refused by our check, which names the numbers and the setting (it
    was Pillow's 179 MP bound before ours could apply); far over it, Pillow's bound says the same."""
    (tmp_path / "bomb.png").write_bytes(_png_header(20000, 20000))
    with pytest.raises(LimitExceededError) as info:
        open_document(tmp_path / "bomb.png")
    assert str(info.value) == (
        "bomb.png is 20000 x 20000 = 400000000 pixels; the limit is 300000000 pixels per page "
        "(set DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE to raise it)"
    )
    with pytest.raises(LimitExceededError) as info:
        open_document(_png_header(40000, 40000), name="huge.png")
    assert str(info.value) == (
        "huge.png is 1600000000 pixels, too large to decode safely; the limit is 300000000 pixels per "
        "page (set DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE to change it)"
    )
    with pytest.raises(LimitExceededError, match=r"10000 x 10000 = 100000000 pixels; the limit is 60000000"):
        open_document(
            _png_header(10000, 10000), name="big.png", limits=IngestLimits(max_pixels_per_page=60_000_000)
        )


def test_page_count_limit(tmp_path: Path) -> None:
    limits = IngestLimits(max_pages=2)
    pdf = make_pdf(tmp_path / "three.pdf", ["1", "2", "3"])
    tiff = make_image(tmp_path / "three.tiff", frames=3)
    for path in (pdf, tiff):
        with pytest.raises(LimitExceededError) as info:
            open_document(path, limits=limits)
        assert (
            str(info.value)
            == f"{path.name} has 3 pages; the limit is 2 (set DEEPSEEK_OCR_MAX_PAGES to raise it)"
        )
    assert open_document(pdf, limits=IngestLimits(max_pages=3)).page_count == 3


def test_limits_from_settings_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("DEEPSEEK_OCR_MAX_PAGES", "DEEPSEEK_OCR_MAX_FILE_MB", "DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE"):
        monkeypatch.delenv(env, raising=False)
    assert IngestLimits.from_settings(Settings(_env_file=None)) == IngestLimits()  # same defaults
    limits = IngestLimits.from_settings(load_settings(max_pages=5, max_file_mb=1.5, max_pixels_per_page=1000))
    assert limits == IngestLimits(max_pixels_per_page=1000, max_pages=5, max_file_bytes=1_572_864)
    monkeypatch.setenv("DEEPSEEK_OCR_MAX_PAGES", "7")
    monkeypatch.setenv("DEEPSEEK_OCR_MAX_FILE_MB", "2")
    monkeypatch.setenv("DEEPSEEK_OCR_MAX_PIXELS_PER_PAGE", "1234")
    assert IngestLimits.from_settings(Settings(_env_file=None)) == IngestLimits(1234, 7, 2 * 2**20)
    with pytest.raises(ConfigError, match="max_pages must be at least 1"):
        IngestLimits(max_pages=0)


def test_limit_messages_name_real_settings() -> None:
    from ocr_app.ingest import limits

    for env in (limits.ENV_MAX_PAGES, limits.ENV_MAX_FILE_MB, limits.ENV_MAX_PIXELS):
        assert env.removeprefix("DEEPSEEK_OCR_").lower() in Settings.model_fields


# --- input files ---------------------------------------------------------------------------------
def test_iter_input_files_walks_folders_in_natural_order(tmp_path: Path) -> None:
    root = tmp_path / "in"
    for rel in [
        "b/scan10.png",
        "b/scan2.png",
        "a.pdf",
        "UPPER.PDF",
        "notes.txt",
        ".hidden.pdf",
        ".git/x.pdf",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x")
    other = tmp_path / "named.txt"
    other.write_bytes(b"x")
    files = iter_input_files([root, str(other), root / "a.pdf"])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "in/a.pdf",
        "in/b/scan2.png",
        "in/b/scan10.png",
        "in/UPPER.PDF",
        "named.txt",  # named explicitly: kept whatever its extension, so it gets its own error later
    ]
    assert iter_input_files([]) == []


def test_iter_input_files_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.pdf does not exist"):
        iter_input_files([tmp_path / "missing.pdf"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("no documents")
    with pytest.raises(EmptyInputError, match=r"no PDF or image files found in .*empty \(looked for .*\.pdf"):
        iter_input_files([tmp_path / "empty"])


def test_supported_extensions() -> None:
    assert {".pdf", ".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".gif"} <= SUPPORTED_EXTENSIONS
    assert all(e.startswith(".") and e == e.lower() for e in SUPPORTED_EXTENSIONS)


def test_sniff_format_by_magic_bytes(tmp_path: Path) -> None:
    for ext, fmt in [
        ("png", "png"),
        ("jpg", "jpeg"),
        ("webp", "webp"),
        ("bmp", "bmp"),
        ("tiff", "tiff"),
        ("gif", "gif"),
    ]:
        assert sniff_format(make_image(tmp_path / f"x.{ext}").read_bytes()[:1024]) == fmt
    assert sniff_format(make_pdf(tmp_path / "x.pdf", ["x"]).read_bytes()[:1024]) == "pdf"
    assert sniff_format(b"\n\n junk before the header %PDF-1.4") == "pdf"
    assert sniff_format(b"hello") is None


def test_importing_ingest_is_light() -> None:
    code = "import sys, ocr_app.ingest; print(sorted({'PIL', 'pymupdf', 'fitz', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_image_from_bytes(tmp_path: Path) -> None:
    data = make_image(tmp_path / "x.webp").read_bytes()
    with open_document(data, name="phone.webp") as doc:
        page = doc.render(0)
    assert (doc.path, page.source, page.size) == (None, "phone.webp", (W, H))
    buffer = io.BytesIO()
    Image.new("RGB", (5, 5)).save(buffer, "BMP")
    assert open_document(buffer.getvalue()).render(0).image.getpixel((0, 0)) == (0, 0, 0)
