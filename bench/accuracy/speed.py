"""Seconds per page of the light engine on N pinned cores, apart from the accuracy run.

Why separate: run.py needs PyMuPDF to make pages; timing needs only the engine and the images, so
it can run on any quiet machine (pinned with ``taskset``) while the accuracy run stays on the dev box.

    python -m bench.accuracy.speed export DIR --pages 20          # generated scans as JPEG files
    python -m bench.accuracy.speed export-pdf DIR PDF...          # real dense pages as scans + text
    taskset -c 0,1 python -m bench.accuracy.speed time DIR --threads 2 --repeat 3 --out results.json

``export-pdf`` renders the pages of real PDFs (docling's test set: ``fetch_docling.sh``) that hold at
least ``--min-chars`` characters of Latin text to 144-DPI grey JPEGs (scans: no text layer) and
keeps each page's text layer beside it as the reference; ``time`` then prints each page's normalised
edit distance (NED) to it, so a speed-up that loses words shows. Wall and CPU time are each the
minimum over ``--repeat`` runs: on a shared machine the minimum is the figure least disturbed by other
processes. ``--threads 1`` gives the single-thread CPU cost per page (``process_time``), which
other processes disturb much less than wall time.
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


def latin_share(text: str) -> float:
    """Share of letters that are ASCII Latin: pages in scripts outside the light engine's models (docling's
    Korean and Arabic pages) measure the script, not the speed, and are left out of ``export-pdf``."""
    letters = [c for c in text if c.isalpha()]
    return sum(c.isascii() for c in letters) / len(letters) if letters else 0.0


def word_error(reference: str, markdown: str) -> float:
    """Words missing or extra against the reference, in any order, over the reference's word count.

    Why beside NED: NED also counts reading order, and on these pages a one-line change of the
    layout (a table kept or not) moves it more than a misread word; this counts the words alone.
    """
    import collections
    import re

    from bench.accuracy.structure import plain_text

    ref = collections.Counter(re.findall(r"\w+", reference.lower()))
    hyp = collections.Counter(re.findall(r"\w+", plain_text(markdown).lower()))
    total = sum(ref.values())
    if not total:
        return 0.0 if not hyp else 1.0
    return (total + sum(hyp.values()) - 2 * sum((ref & hyp).values())) / total


def export_pdf(directory: Path, pdfs: list[Path], min_chars: int, dpi: int) -> list[str]:
    """Render the dense Latin pages of ``pdfs`` as grey JPEG scans, each with its text layer as ``.txt``."""
    import pymupdf

    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for pdf in sorted(pdfs):
        with pymupdf.open(pdf) as doc:
            for number, page in enumerate(doc, 1):
                text = page.get_text()
                if len(text.strip()) < min_chars or latin_share(text) < 0.9:
                    continue
                name = f"{pdf.stem}-p{number:02d}"
                pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
                pix.save(str(directory / f"{name}.jpg"), jpg_quality=92)
                (directory / f"{name}.txt").write_text(text, encoding="utf-8")
                names.append(name)
    print(f"wrote {len(names)} page scans to {directory}")
    return names


def time_pages(
    directory: Path,
    threads: int | None,
    repeat: int,
    out: Path | None,
    engine_args: dict[str, object] | None = None,
) -> dict[str, object]:
    from PIL import Image

    from bench.accuracy.structure import ned
    from ocr_app.engines.light import LightOcrEngine
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.structure.pipeline import blocks_to_markdown

    files = sorted(directory.glob("*.jpg"))
    if not files:
        raise SystemExit(f"no *.jpg page scans in {directory} (make them with export or export-pdf)")
    engine = LightOcrEngine(threads=threads, **(engine_args or {}))
    t0 = time.perf_counter()
    engine.load()
    load_s = time.perf_counter() - t0
    requests = []
    for f in files:
        image = Image.open(f).convert("RGB")
        requests.append(PageRequest(page=PageImage(image=image, index=0, source=f.name, dpi=144), prompt=""))
    # The first page also builds the onnxruntime sessions (lazily, on first use): one warm-up read.
    engine.predict_batch(requests[:1])
    walls: dict[str, float] = {}
    cpus: dict[str, float] = {}
    results = {}
    for _ in range(repeat):  # repeats as whole passes: a burst of load on the machine hits one pass
        for f, req in zip(files, requests, strict=True):
            w0, c0 = time.perf_counter(), time.process_time()
            res = engine.predict_batch([req])[0]
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            walls[f.name] = min(walls.get(f.name, wall), wall)
            cpus[f.name] = min(cpus.get(f.name, cpu), cpu)
            results[f.name] = res
    rows = []
    outputs = {}
    for f in files:
        res = results[f.name]
        md = blocks_to_markdown(res.blocks)
        reference = f.with_suffix(".txt")
        truth = reference.read_text(encoding="utf-8") if reference.exists() else None
        score = ned(truth, md) if truth is not None else None
        words = word_error(truth, md) if truth is not None else None
        rows.append(
            {
                "file": f.name,
                "wall": walls[f.name],
                "cpu": cpus[f.name],
                "ned": score,
                "word_error": words,
                **{f"t_{k}": v for k, v in res.timings.items()},
            }
        )
        outputs[f.name] = md
        ned_s = (
            f", NED {score:.3f}, word error {words:.3f}" if score is not None and words is not None else ""
        )
        print(f"{f.name}: {walls[f.name]:.2f} s wall, {cpus[f.name]:.2f} s CPU{ned_s}", file=sys.stderr)
    wall_list = [r["wall"] for r in rows]
    neds = [r["ned"] for r in rows if r["ned"] is not None]
    word_errors = [r["word_error"] for r in rows if r["word_error"] is not None]
    summary = {
        "pages": len(rows),
        "threads": threads,
        "engine_args": engine_args or {},
        "repeat": repeat,
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "load_s": load_s,
        "wall_mean": statistics.fmean(wall_list),
        "wall_median": statistics.median(wall_list),
        "wall_max": max(wall_list),
        "cpu_mean": statistics.fmean(r["cpu"] for r in rows),
        "ocr_mean": statistics.fmean(r["t_ocr"] for r in rows),
        "layout_mean": statistics.fmean(r["t_layout"] for r in rows),
        "ned_mean": statistics.fmean(neds) if neds else None,
        "word_error_mean": statistics.fmean(word_errors) if word_errors else None,
    }
    print(json.dumps(summary, indent=1))
    print(
        f"s/page: {summary['wall_mean']:.2f} wall, {summary['cpu_mean']:.2f} CPU "
        f"({len(rows)} pages, threads={threads}, min of {repeat})"
    )
    if out:
        out.write_text(json.dumps({"summary": summary, "rows": rows, "outputs": outputs}, indent=1))
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("dir", type=Path)
    e.add_argument("--pages", type=int, default=20)
    e.add_argument("--first-seed", type=int, default=0)
    x = sub.add_parser("export-pdf", help="real pages of PDFs as scans, each with its text layer")
    x.add_argument("dir", type=Path)
    x.add_argument("pdfs", type=Path, nargs="+", help="PDF files or folders of PDFs")
    x.add_argument("--min-chars", type=int, default=1400, help="dense pages only (text-layer characters)")
    x.add_argument("--dpi", type=int, default=144)
    t = sub.add_parser("time")
    t.add_argument("dir", type=Path)
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--repeat", type=int, default=1)
    t.add_argument("--out", type=Path, default=None)
    t.add_argument(
        "--engine-args",
        type=json.loads,
        default=None,
        help="LightOcrEngine options, e.g. '{\"det_max_side\": 960}'",
    )
    args = ap.parse_args(argv)
    if args.cmd == "export":
        export(args.dir, args.pages, args.first_seed)
    elif args.cmd == "export-pdf":
        pdfs = [q for p in args.pdfs for q in (sorted(p.glob("*.pdf")) if p.is_dir() else [p])]
        export_pdf(args.dir, pdfs, args.min_chars, args.dpi)
    else:
        time_pages(args.dir, args.threads, args.repeat, args.out, args.engine_args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
