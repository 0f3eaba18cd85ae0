"""Broken structure is bad input: exit 2 and one line naming the file and the cause, never a traceback.

Issue 31: a cycle in a PDF's page tree (``FzErrorFormat: cycle in page tree``) and ``/Count
2147483647`` (``Invalid number of pages``) were "Internal error" with tracebacks and exit 1; a 100,000 x 1
PNG failed with an empty reason (``light OCR failed: ``). The files are made here and converted by the
real CLI in a child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def _two_pages(path: Path) -> Path:
    doc = pymupdf.open()
    for text in ("One", "Two"):
        doc.new_page().insert_text((72, 72), text, fontsize=14)
    doc.save(path)
    doc.close()
    return path


def cycle_pdf(path: Path) -> Path:
    """The root Pages node lists itself as its second kid."""
    doc = pymupdf.open(_two_pages(path.with_name("base.pdf")))
    pages = int(doc.xref_get_key(doc.pdf_catalog(), "Pages")[1].split()[0])
    first_kid = doc.xref_get_key(pages, "Kids")[1].strip("[]").split(" 0 R")[0].strip()
    doc.xref_set_key(pages, "Kids", f"[{first_kid} 0 R {pages} 0 R]")
    doc.xref_set_key(pages, "Count", "3")
    doc.save(path)
    doc.close()
    return path


def huge_count_pdf(path: Path) -> Path:
    raw = _two_pages(path.with_name("base.pdf")).read_bytes()
    assert raw.count(b"/Count 2") == 1
    path.write_bytes(raw.replace(b"/Count 2", b"/Count 2147483647"))
    return path


def thin_png(path: Path) -> Path:
    Image.new("RGB", (100_000, 1), "white").save(path)
    return path


CASES = {
    "cycle.pdf": (
        cycle_pdf,
        "cycle.pdf is damaged: its page tree is broken (cycle in page tree); no page can be read",
    ),
    "count.pdf": (
        huge_count_pdf,
        "count.pdf is damaged: its page tree is broken (Invalid number of pages); no page can be read",
    ),
    "thin.png": (
        thin_png,
        "thin.png is 100000 x 1 pixels, an aspect ratio of 100000:1; a page whose one side is more than 1000 "
        "times the other holds no readable text",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_broken_structure_is_exit_2_with_one_line(tmp_path, name):
    make, line = CASES[name]
    src = make(tmp_path / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPSEEK_OCR_")}
    env.update(PYTHONPATH=str(ROOT), DEEPSEEK_OCR_RESULT_CACHE_MB="0")
    proc = subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", "convert", "-q", "--engine", "auto", "-o", "out", "--", src.name],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines() == [f"✗ {name}: {line}"], proc.stderr[-3000:]


def test_an_engine_failure_never_has_an_empty_reason():
    """RapidOCR raises ``ResizeImgError()`` with no message: the page error names the exception."""
    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.exceptions import EngineError
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.settings import Settings

    engine = LightOcrEngine(Settings(engine="light"))
    page = PageImage(image=Image.new("RGB", (60_000, 4), "white"), index=0, source="w.png")
    with pytest.raises(EngineError) as info:
        engine.predict_batch([PageRequest(page=page, prompt="")])
    assert str(info.value) == "light OCR failed: ResizeImgError"
