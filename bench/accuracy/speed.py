"""Seconds per page of the light engine on N pinned cores, apart from the accuracy run.

Why separate: run.py needs PyMuPDF to make pages; timing needs only the engine and the images, so
it can run on any quiet machine (pinned with ``taskset``) while the accuracy run stays on the dev box.

    python -m bench.accuracy.speed export DIR --pages 20          # scans as JPEG files + truth
    taskset -c 0,1 python -m bench.accuracy.speed time DIR --threads 2 --out results.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def export(directory: Path, pages: int, first_seed: int) -> None:
    import tempfile

    from bench.accuracy.run import build_corpus

    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(Path(tmp), pages, first_seed)
        for kind, images in corpus.scans.items():
            for i, im in enumerate(images):
                im.convert("L").save(directory / f"{kind}-{i:02d}.jpg", "JPEG", quality=92)
    print(f"wrote {pages * 2} scans to {directory}")


def time_pages(directory: Path, threads: int | None, repeat: int, out: Path | None) -> None:
    from PIL import Image

    from ocr_app.engines.layout import blocks_to_markdown
    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.schema import PageImage, PageRequest

    files = sorted(directory.glob("*.jpg"))
    engine = LightOcrEngine(threads=threads)
    t0 = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - t0
    rows = []
    outputs = {}
    for f in files:
        image = Image.open(f).convert("RGB")
        req = PageRequest(page=PageImage(image=image, index=0, source=f.name, dpi=144), prompt="")
        best = None
        for _ in range(repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            res = engine.predict_batch([req])[0]
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            best = (wall, cpu, res) if best is None or wall < best[0] else best
        wall, cpu, res = best
        rows.append(
            {"file": f.name, "wall": wall, "cpu": cpu, **{f"t_{k}": v for k, v in res.timings.items()}}
        )
        outputs[f.name] = blocks_to_markdown(res.blocks)
        print(f"{f.name}: {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr)
    walls = [r["wall"] for r in rows]
    summary = {
        "pages": len(rows),
        "threads": threads,
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "load_s": load_s,
        "wall_mean": statistics.fmean(walls),
        "wall_median": statistics.median(walls),
        "wall_max": max(walls),
        "cpu_mean": statistics.fmean(r["cpu"] for r in rows),
        "ocr_mean": statistics.fmean(r["t_ocr"] for r in rows),
        "layout_mean": statistics.fmean(r["t_layout"] for r in rows),
    }
    print(json.dumps(summary, indent=1))
    if out:
        out.write_text(json.dumps({"summary": summary, "rows": rows, "outputs": outputs}, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir", type=Path)
    e.add_argument("--pages", type=int, default=20)
    e.add_argument("--first-seed", type=int, default=0)
    t = sub.add_parser("time")
    t.add_argument("dir", type=Path)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--repeat", type=int, default=1)
    t.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.dir, args.pages, args.first_seed)
    else:
        time_pages(args.dir, args.threads, args.repeat, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
