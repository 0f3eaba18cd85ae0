"""Text no UTF-8 file can hold never costs a document its outputs.

docling's ``skipped_1page.pdf`` (a public test file, copied to ``tests/data/public/fonts``) sets Korean in a
bold face whose Unicode map gives one glyph half a surrogate pair. PyMuPDF hands that half to Python, and
the first UTF-8 write failed: "Writing the outputs failed: UnicodeEncodeError … surrogates not allowed",
every format of the document lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ocr_app.render.atomic import TextSpool, atomic_write_text
from ocr_app.schema import REPLACEMENT, valid_unicode

ROOT = Path(__file__).resolve().parents[1]
PDF = ROOT / "tests" / "data" / "public" / "fonts" / "skipped_1page.pdf"


def test_valid_unicode_joins_pairs_and_replaces_lone_halves():
    assert valid_unicode("plain ünïcode 한국어") == "plain ünïcode 한국어"
    assert valid_unicode("\ud83d\ude00 ok") == "\U0001f600 ok"  # a pair split in two: its character
    assert valid_unicode("a\udb62b\udc00") == f"a{REPLACEMENT}b{REPLACEMENT}"  # halves alone: U+FFFD
    assert valid_unicode("a\udb62b").encode("utf-8")  # writable


def test_the_writers_write_a_lone_surrogate_as_a_replacement_character(tmp_path):
    atomic_write_text(tmp_path / "a.md", "x\udb62y")
    assert (tmp_path / "a.md").read_text(encoding="utf-8") == f"x{REPLACEMENT}y"
    spool = TextSpool(tmp_path / "b.md")
    spool.write("first\n")
    spool.write("second \udc80 half\n")
    spool.close()
    assert (tmp_path / "b.md").read_text(encoding="utf-8") == f"first\nsecond {REPLACEMENT} half\n"


def test_a_pdf_whose_font_maps_a_glyph_to_half_a_surrogate_converts_whole(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DEEPSEEK_OCR_RESULT_CACHE_MB": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", "convert", "-q", "--engine", "textlayer", "-o", "out",
         "--format", "md,json,zip", "--", str(PDF)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "out" / "skipped_1page"
    md = (out / "skipped_1page.md").read_text(encoding="utf-8")
    assert md.count(REPLACEMENT) == 1  # the one broken glyph, marked where it stood
    line = next(x for x in md.splitlines() if REPLACEMENT in x)
    assert "방지" in line  # the Korean words around it are kept
    data = json.loads((out / "skipped_1page.json").read_text(encoding="utf-8"))
    assert [p["status"] for p in data["pages"]] == ["ok", "ok", "ok"]
    assert "\\ud" not in (out / "skipped_1page.json").read_text(encoding="utf-8").lower()
    assert (out / "skipped_1page.zip").stat().st_size > 0
