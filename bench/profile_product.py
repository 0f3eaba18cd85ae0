"""Where the product path spends its time: a timeline of one warm conversion through ``Converter``.

Why: the decoder bench decodes 16 pages × 512 tokens in ~1.7 s, the product path took 9.2 s. This
script wraps the product's own functions (no copies of them) with timers that note the thread, runs
warm conversions of the benchmark's PDFs, and prints per thread where the time went (render,
preprocess, vision pass, page finishing on the converter's thread; prefill, decode chunks, collect and
idle on the decoder's thread), the mean pages in flight per decode step, and the converter thread's
top functions (cProfile).

usage (H200):  python bench/profile_product.py --work /tmp/bench_product --pages 16,64 --variants bf16
CPU smoke:     python bench/profile_product.py --tiny --work DIR
Pass ``--env K=V`` (repeatable) to compare settings in one run: each setting runs in its own process.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import bench_product as bp  # noqa: E402

EVENTS: list[tuple[str, str, float, float, int]] = []  # thread, label, t0, t1, extra
ENGINES: list = []  # the DeepSeek engine instance(s) seen by preprocess


def _wrap(owner, name: str, label: str, extra=None) -> None:
    fn = getattr(owner, name)

    def timed(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            x = extra(*a, **k) if extra else 0
            EVENTS.append((threading.current_thread().name, label, t0, time.perf_counter(), x))

    setattr(owner, name, timed)


def instrument() -> None:
    from ocr_app.convert import Converter
    from ocr_app.ingest.pdf import PdfDocument
    from ocr_app.models.deepseek_ocr2.decoding.decoder import PageDecoder
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine

    _wrap(PdfDocument, "_render", "render")
    _wrap(DeepSeekOcr2Engine, "preprocess", "preprocess", lambda self, r: (ENGINES.append(self), 0)[1])
    _wrap(DeepSeekOcr2Engine, "attach_features", "vision", lambda self, pages: len(pages))
    _wrap(Converter, "_finish_page", "finish_page")
    _wrap(PageDecoder, "admit", "prefill", lambda self, reqs: len(reqs))
    _wrap(PageDecoder, "run_chunk", "decode_chunk", lambda self, *a, **k: len(self.busy_slots))
    _wrap(PageDecoder, "collect", "collect")
    _wrap(PageDecoder, "compact", "compact")


def summarise(t_start: float, t_end: float) -> dict:
    wall = t_end - t_start
    per: dict = defaultdict(lambda: defaultdict(lambda: [0, 0.0, 0]))
    chunks = []
    for th, label, t0, t1, x in EVENTS:
        if t0 < t_start or t1 > t_end + 1e-3:
            continue
        row = per[th][label]
        row[0] += 1
        row[1] += t1 - t0
        row[2] += x
        if label == "decode_chunk":
            chunks.append((t0, t1, x))
    out: dict = {"wall_s": round(wall, 3), "threads": {}}
    for th, labels in per.items():
        busy = sum(v[1] for v in labels.values())
        out["threads"][th] = {
            lab: {"n": v[0], "s": round(v[1], 3), "items": v[2]} for lab, v in sorted(labels.items())
        }
        out["threads"][th]["_unaccounted_s"] = round(wall - busy, 3)
    if chunks:
        steps_w = sum((t1 - t0) * x for t0, t1, x in chunks)
        out["mean_busy_slots_per_chunk_time"] = round(steps_w / sum(t1 - t0 for t0, t1, _ in chunks), 2)
        out["first_chunk_at_s"] = round(chunks[0][0] - t_start, 3)
        out["chunks"] = len(chunks)
        out["chunk_ms_by_busy"] = {}
        by: dict = defaultdict(list)
        for t0, t1, x in chunks:
            by[x].append(t1 - t0)
        for x in sorted(by):
            out["chunk_ms_by_busy"][x] = round(1000 * sorted(by[x])[len(by[x]) // 2], 2)
    prefills = [(t0 - t_start, x) for th, lab, t0, t1, x in EVENTS if lab == "prefill" and t0 >= t_start]
    out["admissions"] = [(round(t, 2), n) for t, n in prefills][:80]
    return out


def experiments() -> dict:
    """Variants the profiler can switch on without a product setting (``--env`` of this script):
    ``PROFILE_FEED_STREAM=default`` preprocesses the next pages on the thread's default stream instead of
    the scheduler's high-priority feed stream, ``PROFILE_SWITCH_INTERVAL=S`` sets Python's GIL switch interval."""
    done = {}
    if os.environ.get("PROFILE_FEED_STREAM") == "default":
        from ocr_app.models.deepseek_ocr2.decoding import adapter

        adapter._feed_stream = lambda sched: None
        done["feed_stream"] = "default"
    if os.environ.get("PROFILE_SWITCH_INTERVAL"):
        sys.setswitchinterval(float(os.environ["PROFILE_SWITCH_INTERVAL"]))
        done["switch_interval"] = sys.getswitchinterval()
    return done


class Sampler(threading.Thread):
    """Poor man's py-spy: every ``interval`` s, where each thread is (innermost frames of this project,
    torch or transformers). Tells where a thread waits, which a timeline of whole calls cannot."""

    def __init__(self, interval: float = 0.002) -> None:
        super().__init__(daemon=True)
        self.interval, self.stop, self.counts = interval, threading.Event(), defaultdict(int)

    def run(self) -> None:
        names = {}
        while not self.stop.wait(self.interval):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == self.ident:
                    continue
                stack = []
                while frame is not None and len(stack) < 3:
                    f = frame.f_code.co_filename
                    if "ocr_app" in f or "torch" in f or "transformers" in f:
                        stack.append(f"{Path(f).name}:{frame.f_lineno}:{frame.f_code.co_name}")
                    frame = frame.f_back
                self.counts[(names.get(ident, str(ident)), " < ".join(stack))] += 1

    def top(self, n: int = 12) -> dict:
        out: dict = defaultdict(list)
        for (th, where), c in sorted(self.counts.items(), key=lambda kv: -kv[1]):
            if len(out[th]) < n:
                out[th].append((c, where))
        return dict(out)


def phase_profile(args: argparse.Namespace) -> dict:
    import torch

    instrument()
    applied = experiments()
    pdfs = json.loads(args.pdfs)
    conv, engines, settings = bp._stack(args, args.model, args.variant)
    work = Path(args.work) / f"prof_{args.variant}"
    bp._convert(conv, settings, pdfs["1"], 8, work / "w1")
    bp._convert(conv, settings, pdfs["16"], 64, work / "w16")  # captures the batch sizes used below
    res: dict = {"variant": args.variant, "env": args.env, "experiments": applied}
    for n in args.pages:
        EVENTS.clear()
        prof = cProfile.Profile() if n == args.pages[0] else None
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        sampler = Sampler() if args.sample and n == args.pages[-1] else None
        if sampler:
            sampler.start()
        r = bp._convert(conv, settings, pdfs[str(n)], args.new, work / f"p{n}")
        if sampler:
            sampler.stop.set()
            sampler.join()
        if prof:
            prof.disable()
        t1 = time.perf_counter()
        res[f"{n}p"] = {"convert": r, "timeline": summarise(t0, t1)}
        if sampler:
            res[f"{n}p"]["samples"] = sampler.top()
        if prof:
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
            res[f"{n}p"]["cprofile_tottime"] = s.getvalue()[-6000:]
        bp.log(args.variant, n, json.dumps(res[f"{n}p"]["timeline"])[:3000])
    if args.vision and torch.cuda.is_available():
        res["vision"] = vision_alone(ENGINES[-1], pdfs["16"], args.mode)
        bp.log(args.variant, "vision", json.dumps(res["vision"])[:3000])
    engines.unload_all()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return res


def vision_alone(engine, pdf: str, mode: str) -> dict:
    """Preprocess and vision pass of default-mode pages with nothing else on the GPU: seconds per
    batch of 1/4/8 pages, and the top CUDA kernels of the 4-page batch (torch.profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from ocr_app.ingest import open_document
    from ocr_app.schema import PageRequest

    with open_document(Path(pdf), dpi=144) as src:
        reqs = [PageRequest(page=src.render(i), prompt="<image>\nFree OCR.", mode=mode) for i in range(8)]
    out: dict = {}

    def run(n: int) -> tuple[float, float]:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        pages = [engine.preprocess(r) for r in reqs[:n]]
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        engine.attach_features(pages)
        torch.cuda.synchronize()
        return t1 - t0, time.perf_counter() - t1

    with torch.inference_mode():
        for n in (1, 4, 8):
            run(n)
            best = min(run(n) for _ in range(3))
            out[f"{n}p"] = {"preprocess_s": round(best[0], 4), "vision_s": round(best[1], 4)}
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            run(4)
    out["top_kernels_4p"] = prof.key_averages().table(sort_by="cuda_time_total", row_limit=18)[-5000:]
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--work", default="/tmp/bench_product")
    p.add_argument("--device", default=None)
    p.add_argument("--mode", default=None)
    p.add_argument("--new", type=int, default=None)
    p.add_argument("--pages", default="16,64")
    p.add_argument("--variants", default=None)
    p.add_argument(
        "--env",
        action="append",
        default=[],
        help="K=V: one more run with this environment setting (repeatable)",
    )
    p.add_argument("--out", default=None)
    p.add_argument("--vision", action="store_true", help="also time the vision pass alone (GPU)")
    p.add_argument("--sample", action="store_true", help="sample thread stacks in the largest run")
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    p.add_argument("--variant", default=None, help=argparse.SUPPRESS)
    p.add_argument("--model", default=None, help=argparse.SUPPRESS)
    p.add_argument("--pdfs", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.device = args.device or ("cpu" if args.tiny else "cuda")
    args.mode = args.mode or ("global" if args.tiny else "default")
    bp.MODE[0] = args.mode
    args.new = args.new or (8 if args.tiny else 512)
    args.pages = [int(x) for x in args.pages.split(",")]
    args.variants = (args.variants or ("fp32" if args.tiny else "bf16")).split(",")
    # what phase_prepare reads
    args.soak = 0
    args.soak_new = args.generate_new = 8
    args.first_pages, args.doc_pages = [], 0  # no first-document or long-document PDFs here
    if args.phase == "profile":
        Path(args.result).write_text(json.dumps(phase_profile(args)))
        return
    prep = bp.phase_prepare(args)
    results: dict = {"prepare": prep, "runs": []}
    for variant in args.variants:
        for k, env in enumerate([[]] + [[e] for e in args.env]):  # the base run, then one per --env
            result = Path(args.work) / f"prof_{variant}_{k}.json"
            cmd = [sys.executable, __file__, "--phase", "profile", "--result", str(result), "--work", args.work,
                   "--device", args.device, "--mode", args.mode, "--new", str(args.new),
                   "--pages", ",".join(map(str, args.pages)), "--variant", variant,
                   "--model", prep["checkpoints"][variant], "--pdfs", json.dumps(prep["pdfs"])]  # fmt: skip
            cmd += [f"--env={e}" for e in env] + (["--tiny"] if args.tiny else [])
            cmd += ["--vision"] if args.vision and k == 0 else []
            cmd += ["--sample"] if args.sample else []
            extra = dict(e.split("=", 1) for e in env)
            pp = os.pathsep.join(x for x in (str(ROOT), os.environ.get("PYTHONPATH", "")) if x)
            proc = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": pp, **extra}, timeout=540)
            results["runs"].append(
                json.loads(result.read_text()) if proc.returncode == 0 else {"error": proc.returncode}
            )
    text = json.dumps(results, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text[-20000:])


if __name__ == "__main__":
    main()
