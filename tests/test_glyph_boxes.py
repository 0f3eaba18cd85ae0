"""The product reads glyph boxes the way its benchmarks measured them, whatever imported PyMuPDF first.

Why: pymupdf4llm switches PyMuPDF's ascender/descender quad corrections off process-wide when it is
imported, and PyMuPDF 2 imports it on ``import pymupdf``. The benches and most tests imported PyMuPDF
that way; ``ocr-app convert`` imports it without the add-ons (``ingest.pdf.import_pymupdf``) and so
read every page with the corrections on. ICDAR 2013's us-015 showed it: TEDS 0.999 in the bench,
0.69 from the CLI (its symbol-font bullets left their rows). Each check runs in a fresh process, as
a user's does, so no other test's import decides the state.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_the_products_import_turns_the_corrections_off_without_the_add_on():
    proc = _python(
        "import sys\n"
        "from ocr_app.ingest.pdf import import_pymupdf\n"
        "p = import_pymupdf()\n"
        "print('pymupdf4llm' in sys.modules, p.TOOLS.unset_quad_corrections())\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]


def test_a_pdf_imported_first_elsewhere_gets_the_same_boxes():
    """A library user who imported PyMuPDF 2 (and with it pymupdf4llm) before ocr-app, or one on a
    PyMuPDF without the add-on: both end with the corrections off once ocr-app opens a PDF."""
    proc = _python(
        "import pymupdf\n"
        "pymupdf.TOOLS.unset_quad_corrections(False)\n"
        "from ocr_app.ingest.pdf import import_pymupdf\n"
        "print(import_pymupdf().TOOLS.unset_quad_corrections())\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True"]


def test_the_cli_keeps_us015s_bullets_in_their_ruled_rows(tmp_path):
    """The CLI, in a process of its own, reads us-015's first table (its second page) as the bench does:
    each bulleted list in the row of its key (with the corrections on, the key "Clarity or relevance"
    spanned three rows and the head one column too many)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", str(DATA / "us-015.pdf"), "-o", str(tmp_path),
           "--pages", "2", "--engine", "auto", "--format", "md", "-q"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    md = next(tmp_path.rglob("*.md")).read_text()
    assert "<th>Item Property</th><th>Reason for Change or Deletion</th>" in md
    assert "<td>Clarity or relevance</td><td>• Reported as not relevant" in md
