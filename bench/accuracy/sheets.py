"""Pages photographed on a darker ground: the light engine's reading of a plain scan against its reading
of the same page shrunk and laid on a dark, noisy ground, off centre (issue 30, round 43).

Why: a phone's photo of a page, or a flatbed scan with its lid open, shows the paper on a dark ground,
and the layout model then boxes the whole sheet, or a table on a dark head fill, as a picture. The
plain scan is the reference, so any page with its own truth (the printed probe set) serves.

Usage (from the repository root; ``PYTHONPATH`` picks the code measured, as for ``cpu_pages``):

    python -m bench.accuracy.sheets PDF... [--json OUT]

Each PDF's first page is read twice; the table has one row per page, the means, and the tables and
figures (``image`` blocks) of all pages, plain and on the ground.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

DPI = 144
SHRINK = 0.86


def on_ground(image: Any, seed: int) -> Any:
    """``image`` shrunk to 86 % and laid on a dark ground (a grey of 40-110 with noise), shifted up to
    20 px from the centre; ``seed`` picks the grey and the shift."""
    import numpy as np
    from PIL import Image

    w, h = image.size
    rng = np.random.default_rng(seed)
    ground = np.clip(int(rng.integers(40, 110)) + rng.normal(0, 6, (h, w, 3)), 0, 255).astype(np.uint8)
    small = image.resize((int(w * SHRINK), int(h * SHRINK)))
    out = Image.fromarray(ground)
    dx, dy = int(rng.integers(-20, 20)), int(rng.integers(-20, 20))
    out.paste(small, ((w - small.width) // 2 + dx, (h - small.height) // 2 + dy))
    return out


def scan(pdf: Path) -> Any:
    """The PDF's first page as pixels at 144 DPI (a scan without a text layer)."""
    import pymupdf
    from PIL import Image

    with pymupdf.open(pdf) as doc:
        pix = doc[0].get_pixmap(dpi=DPI)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def measure(pdfs: list[Path]) -> list[dict[str, Any]]:
    from bench.accuracy import scores
    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.structure.pipeline import blocks_to_markdown

    engine = LightOcrEngine()
    engine.load()

    def read(image: Any) -> tuple[str, list[str]]:
        page = PageImage(image=image, index=0, source="scan.png", dpi=DPI)
        out = engine.predict_batch([PageRequest(page=page, prompt="")])[0]
        return blocks_to_markdown(out.blocks), [b.label for b in out.blocks]

    rows = []
    for k, pdf in enumerate(pdfs):
        image = scan(pdf)
        plain, plain_labels = read(image)
        ground, ground_labels = read(on_ground(image, k))
        rows.append(
            {
                "pdf": pdf.name,
                "nid": scores.nid(plain, ground),
                "teds": scores.teds(plain, ground),
                "tables": [plain_labels.count("table"), ground_labels.count("table")],
                "figures": [plain_labels.count("image"), ground_labels.count("image")],
            }
        )
        print(f"  {pdf.name}: {rows[-1]}", file=sys.stderr)
    engine.unload()
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| page | NID, plain vs ground | TEDS | tables (plain, ground) | figures (plain, ground) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        teds = "–" if r["teds"] is None else f"{r['teds']:.3f}"
        lines.append(f"| {r['pdf']} | {r['nid']:.3f} | {teds} | {r['tables']} | {r['figures']} |")
    teds_all = [r["teds"] for r in rows if r["teds"] is not None]
    tables = [sum(r["tables"][k] for r in rows) for k in (0, 1)]
    figures = [sum(r["figures"][k] for r in rows) for k in (0, 1)]
    lines.append(
        f"| **mean of {len(rows)}** | **{statistics.fmean(r['nid'] for r in rows):.3f}** | "
        f"**{statistics.fmean(teds_all) if teds_all else float('nan'):.3f}** | all: {tables} | all: {figures} |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", type=Path, nargs="+", help="PDFs whose first page is read")
    parser.add_argument("--json", type=Path, help="write the rows here too")
    args = parser.parse_args(argv)
    rows = measure(args.pdfs)
    print(markdown_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
