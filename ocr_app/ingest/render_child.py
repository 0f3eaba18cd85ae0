"""Render one PDF page in this (child) process: ``python -m ocr_app.ingest.render_child`` < job JSON.

Why a process of its own: a heavy page is interpreted by MuPDF without releasing the GIL, so the parent
cannot stop it in-process; it can kill this child after the time limit (``ingest/pdf_guard.py``). The
job (path, 0-based index, zoom, password) comes on stdin, so a password never shows in a process list;
the page goes to stdout as ``"{width} {height} {stride}\\n"`` and its RGB samples.
"""

from __future__ import annotations

import json
import logging
import sys

logger = logging.getLogger(__name__)


def main() -> int:
    from ocr_app.ingest.pdf import import_pymupdf

    pymupdf = import_pymupdf()
    job = json.loads(sys.stdin.buffer.read())
    with pymupdf.open(job["path"], filetype="pdf") as doc:
        if doc.needs_pass and not doc.authenticate(job.get("password") or ""):
            print("the password does not open the PDF", file=sys.stderr)
            return 1
        zoom = float(job["zoom"])
        page = doc.load_page(int(job["index"]))
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csRGB, alpha=False)
        out = sys.stdout.buffer
        out.write(f"{pix.width} {pix.height} {pix.stride}\n".encode())
        out.write(pix.samples)
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
