"""Host memory against page count: peak RSS of one conversion of a generated N-page PDF.

Why peak RSS of the whole run: the bar (issue 15) is "RSS growth <= 300 MB from page 10 to page 2,000",
and the whole-document outputs written at the end (layout PDF, JSON, ZIP) are where memory used to grow.
``run_one`` converts in THIS process through the CLI entry point or the ``Converter`` and reports
``ru_maxrss``; ``main`` runs each size in a fresh subprocess and prints the growth.

    python bench/memory_pages.py --pages 10 2000 --engine textlayer       # CLI, all outputs
    python bench/memory_pages.py --pages 10 2000 --via converter
    python bench/memory_pages.py --child 2000 --out /tmp/o --via writer   # searchable PDF, image pages
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
A4_PT = (595.0, 842.0)


def make_long_pdf(path: Path, pages: int, page_pt: tuple[float, float] = PAGE_PT) -> Path:
    """A born-digital PDF of ``pages`` pages (small by default), each with a heading and a few lines."""
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page(width=page_pt[0], height=page_pt[1])
        page.insert_text((20, 30), f"Chapter {i + 1}", fontsize=14, fontname="hebo")
        lines = [f"Line {j + 1} of page {i + 1}: words words." for j in range(6)]
        page.insert_text((20, 60), lines, fontsize=9, lineheight=2)  # one call: 2x faster to build
    doc.save(path, garbage=1, deflate=True)
    doc.close()
    return path


def _rss_mb() -> float:
    """Peak RSS of this process so far, MB: the address space's high-water mark (``VmHWM``).

    Not ``getrusage().ru_maxrss``: Linux keeps that across ``execve``, so a child started by a big
    process (a test runner holding models) reports its parent's size as its own peak."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # not Linux: KiB there too


def _current_rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_one(pdf: Path, out: Path, engine: str, via: str, dpi: int) -> dict:
    """Convert ``pdf`` here; return the peak RSS (MB), the seconds it took and, for ``via="converter"``,
    the RSS when the 10th page was done (so growth from page 10 to the end is one process's numbers)."""
    start = time.perf_counter()
    at_page_10: list[float] = []
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

        def progress(event) -> None:
            if event.stage == "page_done" and event.done == 10:
                at_page_10.append(_current_rss_mb())

        settings = Settings(engine=engine, idle_unload_s=0, cache_enabled=False)
        engines = build_engines(settings)
        options = ConvertOptions(engine=engine, dpi=dpi)
        (doc,) = Converter(engines, settings).convert([pdf], out, options, progress=progress)
        engines.unload_all()
        if doc.error or len(doc.pages) == 0:
            raise RuntimeError(f"conversion failed: {doc.error}")
    result = {"peak_rss_mb": round(_rss_mb(), 1), "seconds": round(time.perf_counter() - start, 2)}
    if at_page_10:
        result["rss_at_page_10_mb"] = round(at_page_10[0], 1)
    return result


def run_writer(pages: int, out: Path) -> dict:
    """The searchable PDF alone, written by the background writer for ``pages`` image pages that each
    carry six recognised lines (what the light engine hands over), in THIS process; returns the peak
    RSS, the RSS when the 10th page was handed over and the seconds it took.

    Why not through an OCR engine: 2,000 pages through the light engine take an hour on 2 cores; the
    text layer's pages are copied without text laid over them. The writer and the PDF are the real ones."""
    from PIL import Image, ImageDraw

    from ocr_app.render.writer import DocumentWriter
    from ocr_app.schema import Block, DocumentResult, OcrLine, PageImage, PageResult

    start = time.perf_counter()
    size = (400, 520)  # PAGE_PT at 144 DPI
    writer = DocumentWriter(out, "scans", {"searchable"}, order=list(range(pages)))
    results, at_page_10 = [], 0.0
    image = Image.new("RGB", size, "white")  # one scan for every page: drawing text costs more than writing
    draw = ImageDraw.Draw(image)
    for j in range(6):
        draw.rectangle((40, 60 + 40 * j, 320, 74 + 40 * j), fill="black")
    for i in range(pages):
        lines = []
        for j in range(6):
            y = 60 + 40 * j
            text = f"Line {j + 1} of page {i + 1}: words words."
            lines.append(OcrLine(text, (40.0, float(y), 320.0, float(y + 14))))
        block = Block("text", "\n".join(ln.text for ln in lines), [(40.0, 60.0, 320.0, 274.0)])
        page = PageResult(i, "scans", *size, engine="light", blocks=[block], lines=lines)
        writer.add_page(page, image, source=PageImage(image, i, "scans"))
        results.append(page)
        if i == 9:
            at_page_10 = _current_rss_mb()
    writer.finish(DocumentResult("scans", pages=results, page_count=pages, pages_selected=pages))
    return {
        "peak_rss_mb": round(_rss_mb(), 1),
        "rss_at_page_10_mb": round(at_page_10, 1),
        "seconds": round(time.perf_counter() - start, 2),
    }


def measure(
    pages: list[int], engine: str = "textlayer", via: str = "cli", dpi: int = 36, a4: bool = False
) -> dict[int, dict]:
    """Peak RSS per page count, each in a fresh subprocess (same interpreter, same PYTHONPATH)."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="ocr-mem-") as tmp:
        for n in pages:
            pdf = make_long_pdf(Path(tmp) / f"long{n}.pdf", n, A4_PT if a4 else PAGE_PT)
            cmd = [sys.executable, __file__, "--child", str(pdf), "--out", str(Path(tmp) / f"out{n}")]
            cmd += ["--engine", engine, "--via", via, "--dpi", str(dpi)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"{n} pages: child failed:\n{proc.stderr[-3000:]}")
            results[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, nargs="+", default=[10, 2000])
    parser.add_argument("--engine", default="textlayer")
    parser.add_argument("--via", choices=["cli", "converter", "writer"], default="cli")
    parser.add_argument("--dpi", type=int, default=36)
    parser.add_argument("--a4", action="store_true", help="A4 pages instead of small ones")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.via == "writer":  # --child N: the number of pages
        print(json.dumps(run_writer(int(str(args.child)), args.out)))
        return
    if args.child:
        print(json.dumps(run_one(args.child, args.out, args.engine, args.via, args.dpi)))
        return
    results = measure(args.pages, args.engine, args.via, args.dpi, args.a4)
    for n, r in results.items():
        extra = f"  (RSS at page 10: {r['rss_at_page_10_mb']:.1f} MB)" if "rss_at_page_10_mb" in r else ""
        print(f"{n:>6} pages: peak RSS {r['peak_rss_mb']:8.1f} MB  {r['seconds']:7.2f} s{extra}")
    first, last = min(results), max(results)
    print(
        f"growth {first} → {last} pages: {results[last]['peak_rss_mb'] - results[first]['peak_rss_mb']:.1f} MB"
    )


if __name__ == "__main__":
    main()
