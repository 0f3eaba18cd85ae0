"""What an idle server's process holds after the CPU engines read pages with tables and are unloaded.

An idle server unloads its engines and trims its heap (``runtime.memory.trim_host_heap``). This reads
the first page of six ICDAR 2013 documents through the text layer and one of them, rendered as a
144-DPI scan, through the light engine (the layout and table models load on the way), then unloads
both engines and trims. It prints the process's resident memory at each step.

Usage (from the repository root; ``PYTHONPATH`` picks the code measured, as for ``cpu_pages``):

    python -m bench.accuracy.unload_memory [--pdfs DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "public" / "icdar2013"


def measure(pdfs: list[Path]) -> dict[str, float]:
    import pymupdf
    from PIL import Image

    from bench.memory_pages import _current_rss_mb
    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.engines.textlayer import TextLayerEngine
    from ocr_app.runtime.memory import trim_host_heap
    from ocr_app.schema import PageImage, PageRequest

    def settled() -> float:
        gc.collect()
        trim_host_heap()
        return _current_rss_mb()

    text, light = TextLayerEngine(), LightOcrEngine()
    text.load()
    light.load()
    out = {"loaded_mb": settled()}
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            pix = doc[0].get_pixmap(dpi=144)
        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        page = PageImage(image=image, index=0, source=pdf.name, dpi=144, pdf_path=pdf)
        text.predict_batch([PageRequest(page=page, prompt="")])
    scan = PageImage(image=image, index=0, source="scan.png")
    light.predict_batch([PageRequest(page=scan, prompt="")])
    out["read_mb"] = settled()
    text.unload()
    light.unload()
    out["unloaded_mb"] = settled()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdfs", type=Path, default=DATA, help="a folder of PDFs (the first six are read)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    pdfs = sorted(args.pdfs.glob("*.pdf"))[:6]
    if not pdfs:
        print(f"no PDFs in {args.pdfs}", file=sys.stderr)
        return 2
    out = measure(pdfs)
    print(
        f"engines loaded {out['loaded_mb']:.0f} MB; after {len(pdfs)} born-digital pages and a scan "
        f"{out['read_mb']:.0f} MB; unloaded, heap trimmed {out['unloaded_mb']:.0f} MB"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
