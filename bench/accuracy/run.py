"""CPU accuracy benchmark: CER, WER, reading-order errors and seconds/page per engine and page kind.

Usage (from the repository root):

    python -m bench.accuracy.run --pages 30 --report docs/ACCURACY.md

Page kinds: ``born`` (born-digital PDF, read by the text layer), ``clean`` and ``degraded``
(simulated 144-DPI scans, read by the light engine and, with ``--engines deepseek`` and weights on
disk, by DeepSeek-OCR-2). Seconds/page is the engine's own time (rendering/scan simulation excluded).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.accuracy import generate, metrics

logger = logging.getLogger(__name__)

BARS = {("textlayer", "born"): 0.005, ("light", "clean"): 0.03, ("light", "degraded"): 0.08}
SECONDS_BAR = 2.0


@dataclass
class Score:
    engine: str
    kind: str
    cers: list[float] = field(default_factory=list)
    wers: list[float] = field(default_factory=list)
    order_errors: int = 0
    blocks: int = 0
    heading_recall: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)  # process CPU time (all threads)

    def row(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "kind": self.kind,
            "pages": len(self.cers),
            "cer": statistics.fmean(self.cers),
            "cer_max": max(self.cers),
            "wer": statistics.fmean(self.wers),
            "order_errors": self.order_errors,
            "blocks": self.blocks,
            "heading_recall": statistics.fmean(self.heading_recall),
            "s_per_page": statistics.fmean(self.seconds),
            "cpu_s_per_page": statistics.fmean(self.cpu_seconds),
            "bar": BARS.get((self.engine, self.kind)),
        }


@dataclass
class Corpus:
    """Generated pages: the born-digital PDF, scan images, and ground truth per page."""

    pdf: Path
    truths: list[generate.PageTruth]
    renders: list  # PIL images at 144 DPI of the born-digital pages
    scans: dict[str, list]  # kind -> PIL images


def build_corpus(workdir: Path, pages: int, first_seed: int = 0) -> Corpus:
    seeds = list(range(first_seed, first_seed + pages))
    pdf = workdir / "born.pdf"
    truths = generate.make_born_digital(pdf, seeds)
    renders = [generate.render(pdf, i) for i in range(pages)]
    scans = {
        "clean": [
            generate.simulate_scan(im, s, degraded=False) for im, s in zip(renders, seeds, strict=True)
        ],
        "degraded": [
            generate.simulate_scan(im, s, degraded=True) for im, s in zip(renders, seeds, strict=True)
        ],
    }
    return Corpus(pdf, truths, renders, scans)


def score_page(score: Score, truth: generate.PageTruth, markdown: str, seconds: float) -> None:
    plain = metrics.markdown_to_plain(markdown)
    score.cers.append(metrics.cer(truth.plain(), plain))
    score.wers.append(metrics.wer(truth.plain(), plain))
    block_texts = [e.plain() for e in truth.elements]
    score.order_errors += metrics.reading_order_errors(block_texts, plain)
    score.blocks += len(block_texts)
    heads = [(1 if e.kind == "h1" else 2, e.text) for e in truth.elements if e.kind in ("h1", "h2")]
    score.heading_recall.append(metrics.heading_recall(heads, markdown))
    score.seconds.append(seconds)


def run_engine(engine, name: str, kind: str, corpus: Corpus, images: list) -> tuple[Score, list[str]]:
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.structure.pipeline import blocks_to_markdown

    engine.load()
    score = Score(name, kind)
    outputs: list[str] = []
    for i, (truth, image) in enumerate(zip(corpus.truths, images, strict=True)):
        page = PageImage(
            image=image,
            index=i,
            source=corpus.pdf.name,
            dpi=generate.SCAN_DPI,
            pdf_path=corpus.pdf if kind == "born" else None,
            page_count=len(images),
        )
        req = PageRequest(page=page, prompt="<image>\n<|grounding|>Convert the document to markdown.")
        t0, c0 = time.perf_counter(), time.process_time()
        out = engine.predict_batch([req])[0]
        seconds = time.perf_counter() - t0
        score.cpu_seconds.append(time.process_time() - c0)
        if out.blocks is not None:
            md = blocks_to_markdown(out.blocks)
        else:
            from ocr_app.models.deepseek_ocr2.grounding import clean_raw, parse_grounded

            md = blocks_to_markdown(parse_grounded(clean_raw(out.raw_text), *image.size))
        outputs.append(md)
        score_page(score, truth, md, seconds)
    return score, outputs


def make_engines(names: list[str]) -> tuple[dict[str, object], dict[str, str]]:
    """The engines to measure, and why any asked for could not run here."""
    engines: dict[str, object] = {}
    skipped: dict[str, str] = {}
    for name in names:
        if name == "textlayer":
            from ocr_app.engines.textlayer import TextLayerEngine

            engines[name] = TextLayerEngine()
        elif name == "light":
            from ocr_app.engines.light import LightOcrEngine

            engines[name] = LightOcrEngine()
        elif name == "deepseek":
            try:
                from ocr_app.models.deepseek_ocr2.loading import weights_available
                from ocr_app.settings import load_settings
                from ocr_app.stack import build_engines

                settings = load_settings(engine="deepseek")
                if not weights_available(settings.model):
                    skipped[name] = f"no weights for {settings.model} on this machine"
                    continue
                engines[name] = build_engines(settings).get("deepseek")
            except Exception as exc:  # the benchmark reports what it could not run, and goes on
                skipped[name] = str(exc)
        else:
            raise SystemExit(f"unknown engine {name!r}")
    for name, why in skipped.items():
        print(f"{name}: not run ({why})", file=sys.stderr)
    return engines, skipped


def table_markdown(rows: list[dict[str, object]]) -> str:
    head = (
        "| engine on pages | pages | CER | max CER | WER | reading-order errors | headings found | s/page "
        "| CPU s/page | bar (CER) |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bar = r["bar"]
        verdict = "" if bar is None else (f"≤ {bar:.1%} ✅" if r["cer"] <= bar else f"≤ {bar:.1%} ❌")
        lines.append(
            f"| {r['engine']} on {r['kind']} | {r['pages']} | {r['cer']:.2%} | {r['cer_max']:.2%} | "
            f"{r['wer']:.2%} | {r['order_errors']} / {r['blocks']} | {r['heading_recall']:.0%} | "
            f"{r['s_per_page']:.2f} | {r['cpu_s_per_page']:.2f} | {verdict} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=30)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--engines", default="textlayer,light,deepseek")
    ap.add_argument("--out", type=Path, default=None, help="keep pages, outputs and results.json here")
    ap.add_argument("--report", type=Path, default=None, help="write the results table into this file")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        corpus = build_corpus(work, args.pages, args.first_seed)
        print(f"generated {args.pages} pages in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        engines, skipped = make_engines([e.strip() for e in args.engines.split(",") if e.strip()])
        rows: list[dict[str, object]] = []
        dumps: dict[str, list[str]] = {}
        for name, engine in engines.items():
            kinds = ["born"] if name == "textlayer" else ["clean", "degraded"]
            for kind in kinds:
                images = corpus.renders if kind == "born" else corpus.scans[kind]
                score, outs = run_engine(engine, name, kind, corpus, images)
                rows.append(score.row())
                dumps[f"{name}-{kind}"] = outs
                print(table_markdown([score.row()]).splitlines()[-1], file=sys.stderr)
            engine.unload()
        table = table_markdown(rows)
        if skipped:
            table += "\n\n" + "\n".join(f"- {n}: not run ({why})" for n, why in skipped.items())
        print(table)
        if args.out:
            (work / "results.json").write_text(json.dumps({"rows": rows, "outputs": dumps}, indent=1))
            for i, t in enumerate(corpus.truths):
                (work / f"truth-{i:02d}.md").write_text(t.markdown())
        if args.report:
            write_report(args.report, table, args)
    return 0


def write_report(path: Path, table: str, args: argparse.Namespace) -> None:
    """Replace the generated section of the report (between markers), keeping the prose around it."""
    begin, end = "<!-- results:begin -->", "<!-- results:end -->"
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    cmd = f"python -m bench.accuracy.run --pages {args.pages} --engines {args.engines}"
    body = f"{begin}\nDate: {when} · machine: {machine} · command: `{cmd}`\n\n{table}\n{end}"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + body + text[text.index(end) + len(end) :]
    else:
        text = (text + "\n\n" if text else "") + body + "\n"
    path.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
