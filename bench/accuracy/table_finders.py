"""Library table finders on a set's born-digital PDFs, scored by TEDS against the ground truth's tables.

Why: "library first" (issue 25) — before writing more table detection by hand, measure what the
maintained libraries find on the same pages: PyMuPDF's ``find_tables(strategy="text")`` (already a
dependency), pdfplumber's text strategy, camelot's stream mode (``pip install camelot-py``; not a
dependency of ocr-app) and ocr-app's own text layer. img2table was not measured: its wheel pulls
opencv-contrib-python, which clashes with the opencv-python-headless the light engine uses. Only tables are compared
(TEDS over all of a document's tables; documents without a ground-truth table are skipped), and
*false tables* counts tables found in documents whose ground truth has none (a chart's labels).

    python -m bench.accuracy.table_finders --set DIR [--finders ocr-app,pymupdf-text,pdfplumber-text,camelot-stream]
"""

from __future__ import annotations

import argparse
import html
import time
from collections.abc import Callable
from pathlib import Path

from bench.accuracy.score import pairs
from bench.accuracy.scores import tables_tree, teds

Finder = Callable[[Path], list[list[list[str]]]]


def _html(tables: list[list[list[str]]]) -> str:
    out = []
    for t in tables:
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(c or '')}</td>" for c in r) + "</tr>" for r in t)
        out.append(f"<table>{rows}</table>")
    return "\n\n".join(out)


def _pymupdf_text(pdf: Path) -> list[list[list[str]]]:
    import pymupdf

    out = []
    with pymupdf.open(pdf) as doc:
        for page in doc:
            for t in page.find_tables(strategy="text").tables:
                out.append([[c or "" for c in r] for r in t.extract()])
    return out


def _pdfplumber_text(pdf: Path) -> list[list[list[str]]]:
    import pdfplumber

    out = []
    with pdfplumber.open(pdf) as doc:
        for page in doc.pages:
            settings = {"vertical_strategy": "text", "horizontal_strategy": "text"}
            out.extend([[c or "" for c in r] for r in t] for t in page.extract_tables(settings))
    return out


def _camelot_stream(pdf: Path) -> list[list[list[str]]]:
    import camelot

    tables = camelot.read_pdf(str(pdf), pages="all", flavor="stream")
    return [[[str(c) for c in row] for row in t.df.values.tolist()] for t in tables]


def _ocr_app(pdf: Path) -> str:
    from bench.accuracy.peers import make_tool

    global _OCR_APP
    if "_OCR_APP" not in globals():
        _OCR_APP = make_tool("textlayer")
    return _OCR_APP(pdf)


FINDERS: dict[str, Callable[[Path], str]] = {
    "ocr-app": _ocr_app,
    "pymupdf-text": lambda p: _html(_pymupdf_text(p)),
    "pdfplumber-text": lambda p: _html(_pdfplumber_text(p)),
    "camelot-stream": lambda p: _html(_camelot_stream(p)),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, required=True)
    ap.add_argument("--finders", default=",".join(FINDERS))
    args = ap.parse_args(argv)
    docs = pairs(args.set / "pdf", args.set / "gt")
    print(
        f"| finder ({args.set.name}) | TEDS (docs with tables) | tables found / truth | false tables | CPU s/page |"
    )
    print("|---|---|---|---|---|")
    for name in [f.strip() for f in args.finders.split(",") if f.strip()]:
        finder = FINDERS[name]
        scores, found, truth, false, cpu, pages = [], 0, 0, 0, 0.0, 0
        for pdf, gt in docs.values():
            gt_md = gt.read_text(encoding="utf-8")
            t0 = time.process_time()
            out = finder(pdf)
            cpu += time.process_time() - t0
            import pymupdf

            with pymupdf.open(pdf) as d:
                pages += d.page_count
            got, want = tables_tree(out), tables_tree(gt_md)
            n_got = len(got.children) if got else 0
            if want is None:
                false += n_got
                continue
            found += n_got
            truth += len(want.children)
            scores.append(teds(gt_md, out) or 0.0)
        mean = sum(scores) / len(scores) if scores else float("nan")
        print(
            f"| {name} | {mean:.3f} ({len(scores)}) | {found} / {truth} | {false} | {cpu / max(pages, 1):.3f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
