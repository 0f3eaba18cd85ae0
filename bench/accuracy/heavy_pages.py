"""Heavy pages: what one page of many drawings, links, lines or labels costs `auto` on the CPU.

Figures printed as vectors and dense lists are where a rule that weighs everything against everything
shows: each page here is made with PyMuPDF, its drawing in one content stream as a plotting library
writes it, and converted alone, after one warm-up conversion (the models load once):

- ``heatmap80`` / ``heatmap160``: a vector heat map, one fill a cell (80 × 80, 160 × 160 cells);
- ``outlines6k``: a figure whose labels are outlined glyphs, 6,000 small closed paths;
- ``markers8k``: a scatter plot of 8,000 markers, each a path of its own;
- ``links3k``: an index page whose 60 lines carry 3,000 links;
- ``index840``: six columns of 140 lines of 4.5 pt text;
- ``labels1k`` / ``labels2k``: a plot's 1,000 / 2,000 value labels in 5 pt, strewn over it;
- ``histogram2k``: 2,000 thin bars.

Usage (from the repository root; ``PYTHONPATH`` picks the code measured, as for ``cpu_pages``):

    python -m bench.accuracy.heavy_pages [--pages heatmap80,labels2k] [--repeat 1] [--json OUT]

Each page's CPU seconds (``time.process_time``, the process's, both cores) are printed: min / median /
max over the repeats.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

TEXT = "The survey covered every plot of the site in the spring and the autumn of the year. " * 5


def _page(doc):
    import pymupdf

    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(50, 20, 545, 110), TEXT, fontsize=9)
    return page


def heatmap(n: int) -> Callable:
    def make(doc) -> None:
        import pymupdf

        rng, page = random.Random(n), _page(doc)
        shape, step = page.new_shape(), 480 / n
        for i in range(n):
            for j in range(n):
                shape.draw_rect(
                    pymupdf.Rect(40 + i * step, 120 + j * step, 40 + (i + 1) * step, 120 + (j + 1) * step)
                )
                shape.finish(color=None, fill=(rng.random(), 0.5, 0.5))
        shape.commit()

    return make


def outlines(doc) -> None:
    page = _page(doc)
    shape = page.new_shape()
    for k in range(6000):
        x, y = 60 + (k % 120) * 4, 140 + (k // 120) * 12
        shape.draw_bezier((x, y), (x + 1, y - 3), (x + 2, y - 3), (x + 3, y))
        shape.draw_line((x + 3, y), (x, y))
        shape.finish(color=None, fill=(0, 0, 0), closePath=True)
    shape.commit()


def markers(doc) -> None:
    rng, page = random.Random(8), _page(doc)
    shape = page.new_shape()
    for _ in range(8000):
        shape.draw_circle((60 + rng.random() * 480, 130 + rng.random() * 600), 1.2)
        shape.finish(color=None, fill=(0.8, 0.3, 0.2))
    shape.commit()


def links(doc) -> None:
    """The links are written as one annotations array: ``Page.insert_link`` walks the page's
    annotations anew for each link it adds (3,000 took it a minute)."""
    page = doc.new_page(width=595, height=842)
    for k in range(60):
        page.insert_text(
            (50, 130 + k * 11), f"Entry {k}: see section {k % 9}.{k % 7} on page {k * 3}", fontsize=8
        )
    annots = []
    for k in range(3000):
        x, y = 50 + (k % 30) * 15, 125 + (k // 30) % 60 * 11  # top-down; PDF space runs up from the foot
        xref = doc.get_new_xref()
        doc.update_object(
            xref,
            f"<</Type/Annot/Subtype/Link/Rect[{x} {842 - y - 7} {x + 10} {842 - y}]/Border[0 0 0]"
            f"/A<</S/URI/URI(https://example.org/{k})>>>>",
        )
        annots.append(f"{xref} 0 R")
    doc.xref_set_key(page.xref, "Annots", "[" + " ".join(annots) + "]")


def index(doc) -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "field", "market", "bridge", "winter"]
    page = doc.new_page(width=595, height=842)
    for c in range(6):
        for r in range(140):
            text = f"{rng.choice(words)} {rng.choice(words)}, {rng.randint(1, 400)}"
            page.insert_text((20 + c * 95, 20 + r * 5.8), text, fontsize=4.5)


def labels(n: int) -> Callable:
    def make(doc) -> None:
        import pymupdf

        rng, page = random.Random(4), _page(doc)
        writer = pymupdf.TextWriter(page.rect)
        for _ in range(n):
            writer.append(
                (40 + rng.random() * 500, 130 + rng.random() * 680), str(rng.randint(1, 999)), fontsize=5
            )
        writer.write_text(page)

    return make


def histogram(doc) -> None:
    import pymupdf

    page = _page(doc)
    shape = page.new_shape()
    for k in range(2000):
        h = 150 + 140 * math.sin(k / 90)
        shape.draw_rect(pymupdf.Rect(50 + k * 0.24, 500 - h, 50 + (k + 1) * 0.24, 500))
        shape.finish(color=None, fill=(0.3, 0.6, 0.3))
    shape.commit()
    page.insert_text((50, 520), "Histogram of 2,000 bins", fontsize=9)


PAGES: dict[str, Callable] = {
    "heatmap80": heatmap(80),
    "heatmap160": heatmap(160),
    "outlines6k": outlines,
    "markers8k": markers,
    "links3k": links,
    "index840": index,
    "labels1k": labels(1000),
    "labels2k": labels(2000),
    "histogram2k": histogram,
}


def build(names: list[str], out: Path) -> dict[str, Path]:
    """Each named page as a one-page PDF in ``out``."""
    import pymupdf

    paths = {}
    for name in names:
        doc = pymupdf.open()
        PAGES[name](doc)
        paths[name] = out / f"{name}.pdf"
        doc.save(paths[name])
    return paths


def measure(paths: dict[str, Path], repeat: int) -> dict[str, list[float]]:
    """CPU seconds of each page's conversion (``auto``), ``repeat`` times, after a warm-up."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(engine="auto")
    converter = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine="auto", formats=frozenset({"md"}))

    def convert(pdf: Path) -> float:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.process_time()
            converter.convert([pdf], tmp, options)
            return time.process_time() - start

    convert(next(iter(paths.values())))
    return {name: [convert(pdf) for _ in range(repeat)] for name, pdf in paths.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default=",".join(PAGES), help="comma-separated: " + ", ".join(PAGES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    names = [n for n in args.pages.split(",") if n]
    unknown = [n for n in names if n not in PAGES]
    if unknown:
        print(f"unknown pages: {', '.join(unknown)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        result = measure(build(names, Path(tmp)), max(args.repeat, 1))
    for name, runs in result.items():
        print(f"{name:12s} CPU s {min(runs):7.2f} / {statistics.median(runs):7.2f} / {max(runs):7.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
