"""CPU seconds a page of a CPU engine (``auto``: the text layer on born-digital pages), apart from the
accuracy runs: issue 30's speed bars (≤ 0.35 CPU s/page over a set, pages without tables no dearer
than before the learned tables, a page with a table ≤ 1 CPU s more).

Usage (from the repository root):

    python -m bench.accuracy.cpu_pages PDF|DIR ... [--engine auto] [--repeat 3] [--json OUT]

Every PDF is converted in one process, one after another, ``--repeat`` times, after one warm-up
conversion of the first (the layout and table-structure models load on first use; a server pays that
once). CPU time is the process's (``time.process_time``: both cores' work, other processes' not),
summed over the documents and divided by their pages; the spread is min / median / max over the
repeats. Pages are also split by what came out: pages with a table, pages without, each the engine's
own seconds a page (``timings["total"]``, wall time on one thread), the median over the repeats.

To compare commits, run it with ``PYTHONPATH`` set to each commit's worktree, one after the other on
a quiet machine; the script only needs ``Converter``, ``build_engines`` and ``load_settings``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _pdfs(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out += sorted(p.rglob("*.pdf")) if p.is_dir() else [p]
    return out


def measure(pdfs: list[Path], engine: str, repeat: int) -> dict[str, object]:
    """The runs' CPU s/page and the per-page split (see the module's docstring)."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(engine=engine)
    converter = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine=engine, formats=frozenset({"md"}))

    def convert(pdf: Path):
        with tempfile.TemporaryDirectory() as tmp:
            (doc,) = converter.convert([pdf], tmp, options)
        return doc

    convert(pdfs[0])  # the models load: not a page's cost
    runs: list[float] = []
    with_table: list[float] = []
    without: list[float] = []
    pages = 0
    for _ in range(repeat):
        cpu, pages, tab, plain = 0.0, 0, [], []
        for pdf in pdfs:
            start = time.process_time()
            doc = convert(pdf)
            cpu += time.process_time() - start
            pages += len(doc.pages)
            for page in doc.pages:
                seconds = page.timings.get("total")
                if seconds is None:
                    continue
                (tab if any(b.label == "table" for b in page.blocks) else plain).append(seconds)
        runs.append(cpu / max(pages, 1))
        with_table.append(statistics.fmean(tab) if tab else float("nan"))
        without.append(statistics.fmean(plain) if plain else float("nan"))
    return {
        "documents": len(pdfs),
        "pages": pages,
        "cpu_s_per_page": {
            "min": min(runs),
            "median": statistics.median(runs),
            "max": max(runs),
            "runs": runs,
        },
        "pages_with_table_s": statistics.median(with_table),
        "pages_without_table_s": statistics.median(without),
        "pages_with_table": len(tab),
        "pages_without_table": len(plain),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="PDFs or folders of PDFs")
    ap.add_argument("--engine", default="auto", choices=("auto", "textlayer", "light"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="write the result here too")
    args = ap.parse_args(argv)
    pdfs = _pdfs(args.paths)
    if not pdfs:
        print("no PDF found", file=sys.stderr)
        return 2
    result = measure(pdfs, args.engine, max(args.repeat, 1))
    spread = result["cpu_s_per_page"]
    print(
        f"{result['documents']} documents, {result['pages']} pages, {args.engine}: "
        f"CPU s/page {spread['median']:.3f} (min {spread['min']:.3f}, max {spread['max']:.3f}, "
        f"{len(spread['runs'])} runs); engine s/page with a table {result['pages_with_table_s']:.3f} "
        f"({result['pages_with_table']} pages), without {result['pages_without_table_s']:.3f} "
        f"({result['pages_without_table']} pages)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
