"""Host memory against page count: peak RSS of one conversion of a generated N-page PDF.

Why peak RSS of the whole run: the bar (issue 15) is "RSS growth <= 300 MB from page 10 to page 2,000",
and the whole-document outputs written at the end (layout PDF, JSON, ZIP) are where memory used to grow.
``run_one`` converts in THIS process through the CLI entry point or the ``Converter`` and reports
``ru_maxrss``; ``main`` runs each size in a fresh subprocess and prints the growth.

    python bench/memory_pages.py --pages 10 2000 --engine textlayer       # CLI, all outputs
    python bench/memory_pages.py --pages 10 2000 --via converter
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE_PT = (200.0, 260.0)  # small pages at a low DPI: the test is about page COUNT, not page size


def make_long_pdf(path: Path, pages: int) -> Path:
    """A born-digital PDF of ``pages`` small pages, each with a heading and a few lines."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page(width=PAGE_PT[0], height=PAGE_PT[1])
        page.insert_text((20, 30), f"Chapter {i + 1}", fontsize=14, fontname="hebo")
        for j in range(6):
            page.insert_text((20, 60 + 18 * j), f"Line {j + 1} of page {i + 1}: words words.", fontsize=9)
    doc.save(path, garbage=1, deflate=True)
    doc.close()
    return path


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def run_one(pdf: Path, out: Path, engine: str, via: str, dpi: int) -> dict:
    """Convert ``pdf`` here and return the peak RSS in MB and the seconds it took."""
    start = time.perf_counter()
    if via == "cli":
        from ocr_app.cli import main

        args = ["convert", str(pdf), "-o", str(out), "--engine", engine, "--dpi", str(dpi), "-q"]
        try:
            main(args, standalone_mode=False)
        except SystemExit as exc:  # the CLI exits with its code; 0 expected here
            if exc.code not in (0, None):
                raise RuntimeError(f"ocr-app convert exited {exc.code}") from exc
    else:
        from ocr_app.convert import Converter, ConvertOptions
        from ocr_app.settings import Settings
        from ocr_app.stack import build_engines

        settings = Settings(engine=engine, idle_unload_s=0, cache_enabled=False)
        engines = build_engines(settings)
        (doc,) = Converter(engines, settings).convert([pdf], out, ConvertOptions(engine=engine, dpi=dpi))
        engines.unload_all()
        if doc.error or len(doc.pages) == 0:
            raise RuntimeError(f"conversion failed: {doc.error}")
    return {"peak_rss_mb": round(_rss_mb(), 1), "seconds": round(time.perf_counter() - start, 2)}


def measure(pages: list[int], engine: str = "textlayer", via: str = "cli", dpi: int = 36) -> dict[int, dict]:
    """Peak RSS per page count, each in a fresh subprocess (same interpreter, same PYTHONPATH)."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="ocr-mem-") as tmp:
        for n in pages:
            pdf = make_long_pdf(Path(tmp) / f"long{n}.pdf", n)
            cmd = [sys.executable, __file__, "--child", str(pdf), "--out", str(Path(tmp) / f"out{n}")]
            cmd += ["--engine", engine, "--via", via, "--dpi", str(dpi)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"{n} pages: child failed:\n{proc.stderr[-3000:]}")
            results[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, nargs="+", default=[10, 2000])
    parser.add_argument("--engine", default="textlayer")
    parser.add_argument("--via", choices=["cli", "converter"], default="cli")
    parser.add_argument("--dpi", type=int, default=36)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.out, args.engine, args.via, args.dpi)))
        return
    results = measure(args.pages, args.engine, args.via, args.dpi)
    for n, r in results.items():
        print(f"{n:>6} pages: peak RSS {r['peak_rss_mb']:8.1f} MB  {r['seconds']:7.2f} s")
    first, last = min(results), max(results)
    print(f"growth {first} → {last} pages: {results[last]['peak_rss_mb'] - results[first]['peak_rss_mb']:.1f} MB")


if __name__ == "__main__":
    main()
