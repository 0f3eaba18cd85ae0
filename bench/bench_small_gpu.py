"""Small-GPU budgets on one big GPU: the bf16 hub-format checkpoint under a 4, 6 and 8 GiB process cap.

What a new user does: download the bf16 checkpoint, start with ``--dtype auto --gpu-memory N``. Per budget
(one child process each, so the cap and the peaks are that budget's alone) through the product path
(settings → ``build_engines`` → model manager → ``DeepSeekOcr2Engine`` → ``Converter``):

1. first load: ``auto`` picks the preset from the budget, the float checkpoint streams in and is quantised
   layer by layer (``ocr_app/quant/stream.py``), the result goes to the quantised-weights cache;
2. second load: read back from that cache (twice; the faster counts), with its breakdown (processor,
   key, skeleton, read, to-GPU, assign); and, for the bar, the same entry loaded as a pre-quantised
   checkpoint through the same product path (``--model ENTRY``, twice) and bare (``load_quantized``);
3. a 1-page and a 16-page document (multi-page TIFF, ``default`` mode, A4 pages) converted.

Reported per step: wall time, torch peak allocated, allocated after the step, host peak RSS, OOM events
(OOM-ladder log records and page errors). Bars (issue 14): load peak ≤ final weights + 0.6 GiB; host RSS
≤ 1.5× checkpoint size; cache load ≤ 1.5× the pre-quantised load (like with like: both through the
product path, processor included; the bare ``load_quantized`` time is printed beside it); no OOM. Prints a Markdown table and
writes JSON to ``$OUT`` (or --out).

The checkpoint: the full config (GUIDE §1) with random N(0, 0.02) weights, written by ``save_pretrained``
(so in the hub's key layout: per-expert tensors, ``sam_model.*``, ``qwen2_model.*``), with the real
tokenizer (``models/deepseek_ocr2/realtok.py``). Calibration pages are rendered with
PyMuPDF as in production; where PyMuPDF is missing (the GPU image) the same kind of page is drawn with PIL.

    python bench/bench_small_gpu.py                       # H200: budgets 4, 6, 8 GiB (< 9 min)
    python bench/bench_small_gpu.py --budgets 4,6,8,10    # also the bf16 case
    python bench/bench_small_gpu.py --tiny                # CPU smoke run of the same code (CI)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GIB = 1 << 30
MIB = 1 << 20


def log(*a: object) -> None:
    print(*a, flush=True, file=sys.stderr)


def rss_peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


# --- checkpoint --------------------------------------------------------------------------------------
def write_checkpoint(out: Path, tiny: bool, device: str) -> Path:
    """bf16 (the tiny fp32 one with --tiny) hub-format random checkpoint + real tokenizer + processor."""
    import torch

    from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model
    from ocr_app.models.deepseek_ocr2.realtok import load_tokenizer
    from ocr_app.models.deepseek_ocr2.tiny import build_tiny_checkpoint, save_checkpoint, special_ids

    t0 = time.perf_counter()
    if tiny:
        build_tiny_checkpoint(out)
    else:
        tok = load_tokenizer()
        ids = special_ids(tok)
        text = {"bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "pad_token_id": ids["pad"]}
        model = random_model(
            config_dict("full", text=text, image_token_id=ids["image"]), device, torch.bfloat16
        )
        for key in ("bos", "eos", "pad"):
            setattr(model.generation_config, f"{key}_token_id", ids[key])
        save_checkpoint(model, tok, out)
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
    size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    log(f"checkpoint: {size / GIB:.2f} GiB in {time.perf_counter() - t0:.1f} s at {out}")
    return out


def pil_calibration_pages(n: int, seed: int = 0, dpi: int = 144):
    """Stand-in for ``calibration.render_calibration_pages`` without PyMuPDF: same structure (title,
    paragraphs, a ruled table, a formula, a list) drawn with PIL, with its Markdown."""
    import random

    from PIL import Image, ImageDraw

    from ocr_app.quant.calibration import _WORDS

    rng = random.Random(seed)
    w, h = int(8.27 * dpi), int(11.69 * dpi)
    pages = []
    for i in range(n):
        img = Image.new("RGB", (w, h), "white")
        d = ImageDraw.Draw(img)
        md, y = [f"# {' '.join(rng.choice(_WORDS) for _ in range(4)).capitalize()} {i + 1}"], 80
        d.text((80, y), md[0][2:], fill="black")
        y += 60
        for _ in range(12):
            line = " ".join(rng.choice(_WORDS) for _ in range(12)).capitalize() + "."
            d.text((80, y), line, fill="black")
            md.append(line)
            y += 24
        cells = [[str(rng.randint(1, 9999)) for _ in range(4)] for _ in range(4)]
        for r, row in enumerate(cells):
            for c, v in enumerate(row):
                d.rectangle((80 + c * 200, y + r * 36, 280 + c * 200, y + 36 + r * 36), outline="black")
                d.text((90 + c * 200, y + 10 + r * 36), v, fill="black")
        md.append("<table>" + "".join("<tr>" + "".join(f"<td>{v}</td>" for v in r) + "</tr>" for r in cells)
                  + "</table>")  # fmt: skip
        pages.append((img, "\n\n".join(md)))
    return pages


def make_tiff(path: Path, pages: int, seed: int = 0) -> Path:
    """An A4 multi-page TIFF (144 dpi) of text pages: a document of ``pages`` pages without PyMuPDF."""
    imgs = [img for img, _ in pil_calibration_pages(pages, seed=seed + 100)]
    imgs[0].save(path, save_all=True, append_images=imgs[1:], compression="tiff_deflate")
    return path


# --- one budget (child process) ----------------------------------------------------------------------
INFO_KEYS = ("precision", "dtype", "precision_reason", "quant_source", "quantize_seconds", "load_breakdown")


class OomCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "out of memory" in record.getMessage().lower():
            self.count += 1


def run_budget(args) -> dict:
    """One budget: first load (quantise + store), cached loads, the pre-quantised reference, then a
    1-page and a 16-page conversion; a failure is recorded in the row, not raised."""
    run = BudgetRun(args)
    try:
        run.loads()
        run.prequant_reference()
        run.conversions()
    except Exception as exc:  # a failed budget is a result, not a crash of the whole run
        run.row["error"] = f"{type(exc).__name__}: {exc}"[:500]
        run.row["oom_error"] = "out of memory" in str(exc).lower()
        log(f"[{args.budget} GiB] FAILED: {run.row['error']}")
    finally:
        run.engines.unload_all()
    run.row["oom_events"] = run.oom.count
    return run.row


class BudgetRun:
    """The engines of one budget and the row of figures measured on them."""

    def __init__(self, args) -> None:
        import torch

        from ocr_app.models.deepseek_ocr2.budget import choose_preset
        from ocr_app.settings import Settings
        from ocr_app.stack import build_engines

        try:
            import pymupdf  # noqa: F401
        except ImportError:  # the GPU image: draw the calibration pages with PIL instead
            import ocr_app.quant.calibration as calibration

            calibration.render_calibration_pages = pil_calibration_pages
            log("PyMuPDF missing: calibration pages drawn with PIL")
        self.args = args
        self.cuda = args.device == "cuda"
        self.dev = torch.device(args.device)
        self.oom = OomCounter()
        logging.getLogger("ocr_app").addHandler(self.oom)
        logging.getLogger("ocr_app").setLevel(logging.INFO)
        ckpt, self.cache = Path(args.checkpoint), Path(args.cache_dir)
        ck_bytes = sum(f.stat().st_size for f in ckpt.glob("*.safetensors"))
        # On the GPU: the real auto rule under the real cap. On the CPU (--tiny) there is no budget, so the
        # preset auto would pick on a GPU of this budget is asked for by name: the same streaming code runs.
        dtype = "auto" if self.cuda else choose_preset(int(args.budget * GIB), "cuda")[0]
        self.settings = Settings(model=str(ckpt), device=args.device, dtype=dtype, engine="deepseek",
                                 gpu_memory_gib=args.budget if self.cuda else None, cache_dir=self.cache,
                                 idle_unload_s=0, result_cache_mb=0, cache_enabled=False,
                                 max_new_tokens=args.new)  # fmt: skip
        if args.tiny:  # CPU smoke run: one calibration page instead of the backend's four
            from ocr_app.models.deepseek_ocr2.loading import quant_backend

            quant_backend("mixed").calib_pages = 1
        self.engines = build_engines(self.settings)
        self.top = self.engines.get("deepseek")
        self.row: dict = {"budget_gib": args.budget, "checkpoint_gib": ck_bytes / GIB, "device": args.device}

    def peak_reset(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def mem(self, prefix: str, t0: float) -> None:
        self.row[f"{prefix}_s"] = time.perf_counter() - t0
        if self.cuda:
            import torch

            torch.cuda.synchronize()
            self.row[f"{prefix}_peak_gib"] = torch.cuda.max_memory_allocated() / GIB
            self.row[f"{prefix}_alloc_gib"] = torch.cuda.memory_allocated() / GIB
        self.row[f"{prefix}_rss_gib"] = rss_peak_bytes() / GIB

    def engine_info(self, eng=None) -> dict:
        info = (eng or self.top).describe()
        return {k: info.get(k) for k in INFO_KEYS}

    def timed_loads(self, eng, prefix: str, times: int = 2) -> None:
        """Load ``eng`` ``times`` times (unloading between); the fastest counts, all are kept."""
        row, runs = self.row, []
        for i in range(times):
            if i:
                eng.unload()
            self.peak_reset()
            t0 = time.perf_counter()
            eng.load()
            self.mem(prefix, t0)
            runs.append((row[f"{prefix}_s"], self.engine_info(eng)))
        best_s, best = min(runs, key=lambda r: r[0])
        row[f"{prefix}_s"], row[f"{prefix}_runs_s"] = best_s, [r[0] for r in runs]
        row[f"{prefix}_info"] = best
        log(f"[{self.args.budget} GiB] {prefix}: {row[f'{prefix}_runs_s']} s; {best.get('load_breakdown')}")

    def loads(self) -> None:
        """The first load (quantises and stores), then the fastest of two cached loads."""
        import torch

        row = self.row
        base = torch.cuda.memory_allocated() if self.cuda else 0
        self.peak_reset()
        t0 = time.perf_counter()
        self.top.load()
        self.mem("load1", t0)
        row["first_load"] = self.engine_info()
        row["weights_gib"] = (torch.cuda.memory_allocated() - base) / GIB if self.cuda else None
        log(f"[{self.args.budget} GiB] first load: {row['first_load']} {row['load1_s']:.1f} s")
        self.top.unload()
        self.timed_loads(self.top, "load2")
        row["second_load"] = row.pop("load2_info")

    def prequant_reference(self) -> None:
        """The bar's reference: the stored entry loaded as a pre-quantised checkpoint (engine and bare)."""
        import torch

        from ocr_app.quant.checkpoint import load_quantized
        from ocr_app.stack import build_engines

        store = self.cache / "quantized"
        entries = [p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")] \
            if store.is_dir() else []  # fmt: skip
        if not entries:
            return
        self.top.unload()
        pre = build_engines(self.settings.model_copy(update={"model": str(entries[0])})).get("deepseek")
        try:
            self.timed_loads(pre, "prequant_engine")
        finally:
            pre.unload()
        self.peak_reset()
        steps: dict = {}
        t0 = time.perf_counter()
        model, _ = load_quantized(entries[0], self.dev, getattr(torch, "bfloat16" if self.cuda else "float32"),
                                  timings=steps)  # fmt: skip
        self.mem("prequant", t0)
        self.row["prequant_breakdown"] = steps
        del model
        if self.cuda:
            torch.cuda.empty_cache()
        self.top.load()

    def conversions(self) -> None:
        """A 1-page and a 16-page TIFF through the converter under the budget."""
        from ocr_app.convert import Converter, ConvertOptions

        args, row = self.args, self.row
        conv = Converter(self.engines, self.settings)
        for label, n in ((1, 1), (16, args.tiny_pages if args.tiny else 16)):
            doc = make_tiff(Path(args.work) / f"doc{n}.tiff", n)
            opts = ConvertOptions(mode=args.mode, max_new_tokens=args.new, formats=frozenset({"md", "json"}),
                                  use_cache=False)  # fmt: skip
            self.peak_reset()
            t0 = time.perf_counter()
            [res] = conv.convert([doc], Path(args.work) / f"out{n}", opts)
            self.mem(f"conv{label}", t0)
            row[f"conv{label}_pages"] = len(res.pages)
            errors = [p.error for p in res.pages if p.error] + ([res.error] if res.error else [])
            row[f"conv{label}_errors"] = errors
            row[f"conv{label}_oom_notes"] = sum("out of memory" in " ".join(p.notes or []) for p in res.pages)


# --- report ------------------------------------------------------------------------------------------
def _f(v, fmt="{:.2f}"):
    return "–" if v is None else fmt.format(v)


def bars(r: dict) -> dict:
    out = {}
    if r.get("weights_gib") is not None and r.get("load1_peak_gib") is not None:
        out["load_peak ≤ weights + 0.6"] = r["load1_peak_gib"] <= r["weights_gib"] + 0.6
    if r.get("load1_rss_gib") is not None and r.get("device") == "cuda":  # on the CPU the model is in RSS
        out["rss ≤ 1.5× checkpoint"] = r["load1_rss_gib"] <= 1.5 * r["checkpoint_gib"]
    if r.get("load2_s") is not None and r.get("prequant_engine_s"):
        out["cache load ≤ 1.5× pre-quantised"] = r["load2_s"] <= 1.5 * r["prequant_engine_s"]
    out["no OOM"] = not r.get("oom_events") and not r.get("oom_error") and not r.get("error")
    out["pages converted"] = (
        bool(r.get("conv16_pages")) and not r.get("conv1_errors") and not r.get("conv16_errors")
    )
    return out


BREAKDOWN = (("processor_s", "processor"), ("key_s", "key"), ("skeleton_s", "skeleton"), ("read_s", "read"),
             ("to_device_s", "to-GPU"), ("assign_s", "assign"), ("total_s", "total"))  # fmt: skip


def breakdown(steps: dict | None) -> str:
    """``processor 0.41 · key 0.00 · …`` (seconds) of one load."""
    steps = steps or {}
    return " · ".join(f"{label} {steps[k]:.2f}" for k, label in BREAKDOWN if steps.get(k) is not None) or "–"


def breakdown_table(rows: list[dict]) -> str:
    """Where the second load's time goes: the cache hit against the same entry loaded pre-quantised."""
    lines = ["| budget | load | s (runs) | breakdown s |", "|---|---|---|---|"]
    for r in rows:
        for label, key, steps in (
            ("cache hit (product path)", "load2", (r.get("second_load") or {}).get("load_breakdown")),
            ("pre-quantised (product path)", "prequant_engine", (r.get("prequant_engine_info") or {}).get("load_breakdown")),
            ("pre-quantised (`load_quantized` alone)", "prequant", r.get("prequant_breakdown")),
        ):  # fmt: skip
            runs = r.get(f"{key}_runs_s")
            lines.append(f"| {r['budget_gib']:g} GiB | {label} | {_f(r.get(f'{key}_s'))}"
                         f"{' (' + ', '.join(f'{x:.2f}' for x in runs) + ')' if runs else ''} | {breakdown(steps)} |")  # fmt: skip
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    head = ("| budget | preset (why) | first load: s / peak / after / RSS GiB | second load (cache): s / peak "
            "| pre-quantised load s (product path / bare) | 1 page: s / peak | 16 pages: s / peak | OOM | bars |")  # fmt: skip
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        fl = r.get("first_load") or {}
        sl = r.get("second_load") or {}
        why = f"{fl.get('precision')} ({fl.get('precision_reason')}); {fl.get('quant_source')}"
        b = bars(r)
        lines.append(
            f"| {r['budget_gib']:g} GiB | {why} "
            f"| {_f(r.get('load1_s'), '{:.1f}')} / {_f(r.get('load1_peak_gib'))} / {_f(r.get('weights_gib'))} / "
            f"{_f(r.get('load1_rss_gib'))} "
            f"| {_f(r.get('load2_s'), '{:.1f}')} / {_f(r.get('load2_peak_gib'))} ({sl.get('quant_source')}) "
            f"| {_f(r.get('prequant_engine_s'))} / {_f(r.get('prequant_s'))} "
            f"| {_f(r.get('conv1_s'), '{:.1f}')} / {_f(r.get('conv1_peak_gib'))} "
            f"| {_f(r.get('conv16_s'), '{:.1f}')} / {_f(r.get('conv16_peak_gib'))} "
            f"| {r.get('oom_events', 0)}{' ' + r['error'] if r.get('error') else ''} "
            f"| {', '.join(k + (' ✓' if v else ' ✗') for k, v in b.items())} |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tiny", action="store_true", help="tiny config on the CPU (CI smoke run)")
    p.add_argument("--budgets", default="4,6,8", help="GiB, comma-separated")
    p.add_argument("--new", type=int, default=64, help="new tokens per page (random weights never stop)")
    p.add_argument("--mode", default="default")
    p.add_argument("--tiny-pages", type=int, default=2, help="pages of the 'multi-page' document with --tiny")
    p.add_argument("--out", default=None, help="JSON path (default $OUT/bench_small_gpu.json)")
    p.add_argument("--work", default=None, help="scratch directory (checkpoint, caches, outputs)")
    # child mode
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--budget", type=float, help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--cache-dir", help=argparse.SUPPRESS)
    p.add_argument("--device", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        Path(args.result).write_text(json.dumps(run_budget(args), default=str))
        return 0

    import torch

    device = "cpu" if args.tiny else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        log("no CUDA GPU: use --tiny for the CPU smoke run")
        return 2
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-small-gpu-"))
    t0 = time.perf_counter()
    ckpt = write_checkpoint(work / "ckpt-bf16", args.tiny, device)
    rows = []
    for b in [float(x) for x in args.budgets.split(",") if x.strip()]:
        result = work / f"budget-{b:g}.json"
        cmd = [sys.executable, __file__, "--child", "--budget", str(b), "--checkpoint", str(ckpt),
               "--cache-dir", str(work / f"cache-{b:g}"), "--device", device, "--result", str(result),
               "--new", str(args.new), "--mode", args.mode, "--tiny-pages", str(args.tiny_pages),
               "--work", str(work / f"run-{b:g}")] + (["--tiny"] if args.tiny else [])  # fmt: skip
        (work / f"run-{b:g}").mkdir(parents=True, exist_ok=True)
        log(f"budget {b:g} GiB …")
        proc = subprocess.run(cmd, env=dict(os.environ), timeout=None)
        if result.is_file():
            rows.append(json.loads(result.read_text()))
        else:
            rows.append({"budget_gib": b, "error": f"child exited with {proc.returncode}", "oom_events": 0})
    gpu = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    summary = {"date": time.strftime("%Y-%m-%d"), "gpu": gpu, "torch": torch.__version__,
               "wall_s": time.perf_counter() - t0, "rows": rows}  # fmt: skip
    out = Path(args.out or Path(os.environ.get("OUT", tempfile.gettempdir())) / "bench_small_gpu.json")
    out.write_text(json.dumps(summary, indent=1, default=str))
    print(table(rows))
    print()
    print(breakdown_table(rows))
    print(f"\n{gpu} · torch {torch.__version__} · {summary['wall_s']:.0f} s wall · JSON: {out}")
    return 0 if all(not r.get("error") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
