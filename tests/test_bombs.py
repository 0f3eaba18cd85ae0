"""Pixel and compression bombs are refused before anything is decoded, whatever their wrapping.

Issue 31: an 879 KB PNG declaring 17,000 x 17,000 RGB pixels cost 5.1 GB and 192 s in the CLI; a PDF of
a few hundred kB declaring an 18,000² image rendered for 19 s and 593 MB; a content stream behind
``[/FlateDecode /FlateDecode]`` inflated to 1 GiB from 2.4 KB (43.6 s) and ``[/ASCII85Decode
/FlateDecode]`` ended in a traceback at 958 MB. The files are built here, small and real (valid
deflate streams made of one repeated full-flush block, so a GiB of zeros costs under a second to make),
and converted by the real CLI (or the library) in a child process whose own peak memory the kernel
reports (``os.wait4`` through a small launcher, or ``VmHWM``: counts that start at that process's exec,
not the test worker's).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from ocr_app.ingest import open_document
from ocr_app.ingest.limits import IngestLimits
from ocr_app.ingest.pdf_filters import decode_chain

GIB = 1 << 30


def deflate_zeros(total: int, block: int) -> bytes:
    """A zlib stream of ``total`` zero bytes (``total`` a multiple of ``block``): one block compressed
    with a full flush repeats byte for byte, so only three blocks are compressed."""
    assert total % block == 0 and total // block >= 3
    zero = bytes(block)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(zero) + c.flush(zlib.Z_FULL_FLUSH)
    middle = c.compress(zero) + c.flush(zlib.Z_FULL_FLUSH)
    last = c.compress(zero) + c.flush()
    adler = 1
    for _ in range(total // block):
        adler = zlib.adler32(zero, adler)
    return b"\x78\xda" + first + middle * (total // block - 2) + last + struct.pack(">I", adler)


def png_bomb(path: Path, width: int, height: int) -> Path:
    """A valid black RGB PNG of ``width`` x ``height``: every row is filter byte 0 and zeros."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = 1 + 3 * width
    rows_per_block = next(n for n in range(1000, 0, -1) if height % n == 0)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = deflate_zeros(row * height, row * rows_per_block)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return path


def _add_stream(doc: pymupdf.Document, raw: bytes, filters: list[str], head: str = "") -> int:
    xref = doc.get_new_xref()
    doc.update_object(xref, f"<<{head}>>")
    doc.update_stream(xref, raw, compress=False)
    if filters:
        doc.xref_set_key(xref, "Filter", "[" + " ".join("/" + f for f in filters) + "]")
    return xref


def image_bomb_pdf(path: Path, side: int) -> Path:
    """Page 1 draws a grey ``side``² image of zeros (Flate); page 2 is text."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Cover page", fontsize=14)
    head = f"/Type/XObject/Subtype/Image/Width {side}/Height {side}/ColorSpace/DeviceGray/BitsPerComponent 8"
    image = _add_stream(doc, deflate_zeros(side * side, side * 1000), ["FlateDecode"], head)
    kind, resources = doc.xref_get_key(page.xref, "Resources")
    where = (int(resources.split()[0]), "XObject") if kind == "xref" else (page.xref, "Resources/XObject")
    doc.xref_set_key(*where, f"<</Im0 {image} 0 R>>")
    content = page.get_contents()[0]
    doc.update_stream(content, doc.xref_stream(content) + b"\nq 612 0 0 792 0 0 cm /Im0 Do Q\n")
    doc.new_page().insert_text((72, 72), "Second page", fontsize=14)
    doc.save(path)
    doc.close()
    return path


def inline_bomb_pdf(path: Path, side: int) -> Path:
    """Page 1's content draws an inline grey ``side``² image (``BI … ID … EI``) whose data holds 1000
    rows (MuPDF pads the rest: the image is still allocated whole); page 2 is text."""
    doc = pymupdf.open()
    page = doc.new_page()
    data = zlib.compress(bytes(side * 1000), 9)
    content = (
        b"q 612 0 0 792 0 0 cm BI /W %d /H %d /CS /G /BPC 8 /F /Fl ID " % (side, side) + data + b" EI Q\n"
    )
    doc.xref_set_key(page.xref, "Contents", f"{_add_stream(doc, content, [])} 0 R")
    doc.new_page().insert_text((72, 72), "Second page", fontsize=14)
    doc.save(path)
    doc.close()
    return path


CHAINS: dict[str, tuple[list[str], object]] = {
    # name -> (the /Filter array, how the 1 GiB of zeros is wrapped, outermost last)
    "Flate Flate": (["FlateDecode", "FlateDecode"], lambda z: zlib.compress(z, 9)),
    "ASCII85 Flate": (["ASCII85Decode", "FlateDecode"], lambda z: base64.a85encode(z, adobe=True)[2:]),
    "ASCIIHex Flate Flate": (
        ["ASCIIHexDecode", "FlateDecode", "FlateDecode"],
        lambda z: binascii.hexlify(zlib.compress(z, 9)) + b">",
    ),
    "Flate RunLength": (["FlateDecode", "RunLengthDecode"], None),  # RunLength of zeros, then Flate
}


def chain_bomb_pdf(path: Path) -> Path:
    """Page 1 text; pages 2.. one content stream each that decodes to 1 GiB behind a filter chain
    (``CHAINS``, in order); the last page text."""
    zeros = deflate_zeros(GIB, 1 << 24)
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "First page", fontsize=14)
    for filters, wrap in CHAINS.values():
        page = doc.new_page()
        if wrap is None:  # 1 GiB as runs of 128 zeros: 2 bytes a run, then deflated
            runs = b"\x81\x00" * (GIB // 128)
            raw = zlib.compress(runs, 9)
        else:
            raw = wrap(zeros)
        xref = _add_stream(doc, raw, filters)
        doc.xref_set_key(page.xref, "Contents", f"{xref} 0 R")
    doc.new_page().insert_text((72, 72), "Last page", fontsize=14)
    doc.save(path)
    doc.close()
    return path


# Runs one command and writes the kernel's peak RSS of that command (``os.wait4``) to argv[1]. Why a
# launcher: a child started straight from the test worker (vfork + exec) is charged with the worker's own
# peak RSS (exec folds the old address space's high-water mark into the process's count, and after vfork
# that space is the worker's: 2.4 GB under xdist, after other tests); a small interpreter in between is.
_LAUNCHER = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def _cli(
    args: list[str], cwd: Path, timeout: float = 300
) -> tuple[subprocess.CompletedProcess, float, float]:
    """The real CLI in a child; its exit, output, seconds and peak RSS in MiB (the kernel's count for
    that process alone, through ``_LAUNCHER``)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    peak = cwd / ".cli_peak_kb"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, str(peak), sys.executable, "-m", "ocr_app.cli", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - start
    return proc, seconds, int(peak.read_text()) / 1024


def _peak_rss_child(code: str, cwd: Path) -> dict:
    """Run ``code`` in a fresh interpreter that prints JSON; add its own peak RSS (MiB, ``VmHWM``: this
    address space's high-water mark, whatever the worker that started it holds) and seconds."""
    wrapper = (
        "import json, resource, time\nt = time.monotonic()\n" + code + "\n"
        "out['s'] = time.monotonic() - t\n"
        "out['peak_mb'] = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')][0]"
        " / 1024\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_CONVERT = (
    "from ocr_app.convert import Converter, ConvertOptions\n"
    "from ocr_app.settings import Settings\n"
    "from ocr_app.stack import build_engines\n"
    "import pymupdf\n"
    "s = Settings(engine='textlayer', result_cache_mb=0)\n"
    "engines = build_engines(s)\n"
    "conv = Converter(engines, s)\n"
    # the baseline after a plain text page: what any conversion loads (modules, the text layer's passes)
    # is not the bombs' memory
    "w = pymupdf.open()\n"
    "w.new_page().insert_text((72, 72), 'A page of text converted before the bombs.')\n"
    "w.save('warm.pdf')\n"
    "conv.convert(['warm.pdf'], 'warm', ConvertOptions(formats=frozenset({{'md'}})))\n"
    "base = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')][0] / 1024\n"
    "[d] = conv.convert([{pdf!r}], 'out', ConvertOptions(formats=frozenset({{'md'}})))\n"
    "out = {{'base_mb': base, 'pages': [[p.status, p.error] for p in d.pages]}}\n"
)


def test_an_image_declaring_17000_squared_pixels_is_refused_by_its_header(tmp_path):
    """The issue's PNG, for real (a valid 17,000² black PNG of ~1 MB): exit 2, one line naming the file,
    its size and the setting, in seconds and without decoding (peak RSS of the whole CLI process)."""
    png = png_bomb(tmp_path / "bomb.png", 17000, 17000)
    assert png.stat().st_size < 2 * 2**20
    proc, seconds, peak_mb = _cli(
        ["convert", "-q", "--engine", "light", "-o", "out", "--", "bomb.png"], tmp_path
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if "bomb.png" in line and "17000" in line]
    assert lines and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "17000 x 17000 pixels, 827 MiB once decoded; the limit is 400 MiB per page" in lines[0]
    assert "DEEPSEEK_OCR_MAX_PAGE_STREAM_MB" in lines[0]
    print(f"17000² PNG refused: {seconds:.1f} s, CLI peak RSS {peak_mb:.0f} MiB")
    assert seconds < 60 and peak_mb < 700, (seconds, peak_mb)  # was 192 s and 5.1 GB


@pytest.mark.parametrize("make", [image_bomb_pdf, inline_bomb_pdf], ids=["xobject", "inline"])
def test_a_pdf_image_declaring_18000_squared_pixels_is_refused_before_rendering(tmp_path, make):
    """As an image XObject (a PDF of ~300 kB) or an inline image (1.2 KB; the text layer's document
    profile decoded it: 454 MB), refused by the declared size; the text page converts."""
    pdf = make(tmp_path / "img.pdf", 18000)
    assert pdf.stat().st_size < 2 * 2**20
    out = _peak_rss_child(_CONVERT.format(pdf=str(pdf)), tmp_path)
    (s0, e0), (s1, e1) = out["pages"]
    assert (s0, s1, e1) == ("error", "ok", None)
    assert e0 == (
        "img.pdf: page 1's images decode to 927 MiB (the largest is 18000 x 18000 pixels); the limit is 400 "
        "MiB per page, so it was not rendered (set DEEPSEEK_OCR_MAX_PAGE_STREAM_MB to raise it)"
    )
    print(f"18000² image in a PDF refused: {out['s']:.1f} s, peak {out['peak_mb']:.0f} MiB "
          f"(after loading {out['base_mb']:.0f} MiB)")  # fmt: skip
    assert out["peak_mb"] - out["base_mb"] < 100 and out["s"] < 20, out  # was 19 s and 593 MB


def test_compression_bombs_behind_any_filter_chain_are_refused_in_one_line(tmp_path):
    """1 GiB of content behind each chain of ``CHAINS``: every bomb page is refused with the same one
    line, the text pages convert, and the process grows by less than 100 MiB."""
    pdf = chain_bomb_pdf(tmp_path / "chains.pdf")
    assert pdf.stat().st_size < 8 * 2**20
    out = _peak_rss_child(_CONVERT.format(pdf=str(pdf)), tmp_path)
    statuses = [status for status, _ in out["pages"]]
    assert statuses == ["ok"] + ["error"] * len(CHAINS) + ["ok"], out["pages"]
    for n, (_, error) in enumerate(out["pages"][1:-1], start=2):
        assert error == (
            f"chains.pdf: page {n}'s content inflates to more than 400 MiB (a decompression bomb?); it was "
            "not rendered (set DEEPSEEK_OCR_MAX_PAGE_STREAM_MB to raise the limit)"
        ), (list(CHAINS)[n - 2], error)
    print(f"{len(CHAINS)} filter-chain bombs of 1 GiB refused: {out['s']:.1f} s, peak {out['peak_mb']:.0f} "
          f"MiB (after loading {out['base_mb']:.0f} MiB)")  # fmt: skip
    assert out["peak_mb"] - out["base_mb"] < 100 and out["s"] < 30, out  # was 43.6 s / 958 MB + traceback


@pytest.mark.parametrize(
    "filters, encode",
    [
        (["FlateDecode", "FlateDecode"], lambda d: zlib.compress(zlib.compress(d))),
        (["ASCII85Decode", "FlateDecode"], lambda d: base64.a85encode(zlib.compress(d), adobe=True)[2:]),
        (["ASCIIHexDecode"], lambda d: binascii.hexlify(d) + b">"),
        (["A85"], lambda d: base64.a85encode(d, adobe=True, wrapcol=64)[2:]),
        (["RunLengthDecode"], None),
        (["LZWDecode"], None),
        (["ASCIIHexDecode", "LZWDecode"], None),
    ],
    ids=["Fl-Fl", "A85-Fl", "AHx", "A85-wrapped", "RL", "LZW", "AHx-LZW"],
)
def test_each_filter_decodes_as_mupdf_does(tmp_path, filters, encode):
    """The counting decoders against MuPDF's own on the same stream (LZW made by Pillow's TIFF writer,
    RunLength by MuPDF-independent runs): equal bytes, so the count is the size MuPDF would inflate."""
    import io
    import os as _os

    data = _os.urandom(3000) + b"BT (Do) Tj ET " * 5000 + bytes(range(256)) * 40 + bytes(360)  # 83,600
    if "LZWDecode" in filters:
        buf = io.BytesIO()
        Image.frombytes("L", (len(data), 1), data).save(buf, "TIFF", compression="tiff_lzw")
        tiff = Image.open(io.BytesIO(buf.getvalue()))
        lzw = buf.getvalue()[tiff.tag_v2[273][0] :][: tiff.tag_v2[279][0]]
        raw = lzw if filters == ["LZWDecode"] else binascii.hexlify(lzw) + b">"
    elif filters == ["RunLengthDecode"]:
        runs = bytearray()
        for i in range(0, len(data), 100):  # literal runs of 100, then one repeated run per 100 bytes
            runs += bytes([99]) + data[i : i + 100] + bytes([257 - 77, data[i]])
        raw = bytes(runs) + b"\x80"
        data = b"".join(data[i : i + 100] + bytes([data[i]]) * 77 for i in range(0, len(data), 100))
    else:
        raw = encode(data)
    doc = pymupdf.open()
    doc.new_page()
    xref = _add_stream(doc, raw, filters)
    assert doc.xref_stream(xref) == data
    assert b"".join(decode_chain(raw, filters)) == data


def test_a_jpeg_over_the_page_budget_is_decoded_at_a_smaller_scale(tmp_path):
    """A JPEG whose RGB page would pass the budget (lowered to 8 MiB here) is decoded by libjpeg at 1/2
    scale, marked downscaled and noted; a PNG of the same size is refused without decoding."""
    Image.new("RGB", (2400, 1600), "white").save(tmp_path / "big.jpg", quality=80)
    Image.new("RGB", (2400, 1600), "white").save(tmp_path / "big.png")
    limits = IngestLimits(max_page_stream_bytes=8 * 2**20)
    with open_document(tmp_path / "big.jpg", limits=limits) as doc:
        page = doc.render(0)
        assert page.size == (1200, 800) and page.downscaled
        assert doc.notes == ["big.jpg is 2400 x 1600 pixels, over the page budget: it was decoded at 1/2 "
                             "scale (1200 x 800)"]  # fmt: skip
    from ocr_app.exceptions import LimitExceededError

    with pytest.raises(LimitExceededError, match=r"^big.png is 2400 x 1600 pixels, 11 MiB once decoded; the"):
        open_document(tmp_path / "big.png", limits=limits)
    with open_document(tmp_path / "big.png") as doc:  # the default budget: read at full size
        assert doc.render(0).size == (2400, 1600)


def test_trimming_the_heap_gives_freed_memory_back(tmp_path):
    """What the app does once its last running job has ended (``trim_host_heap``, glibc's
    ``malloc_trim``): 300 MB of 1 KB blocks freed behind one block still held stay resident (glibc
    cannot shrink its heap past a live block); trimmed, they go back. In a child process, whose RSS is
    its own."""
    code = (
        "from ocr_app.runtime.memory import trim_host_heap\n"
        "def rss():\n"
        "    return int(next(x for x in open('/proc/self/status') if x.startswith('VmRSS')).split()[1]) // 1024\n"
        "base = rss()\n"
        "blocks = [bytearray(1024) for _ in range(300_000)]\n"
        "pin = bytearray(1024)\n"
        "del blocks\n"
        "out = {'base': base, 'freed': rss()}\n"
        "trim_host_heap()\n"
        "out['trimmed'] = rss()\n"
    )
    out = _peak_rss_child(code, tmp_path)
    assert out["freed"] - out["base"] > 200, out  # freed, yet still resident
    assert out["trimmed"] - out["base"] < 50, out
