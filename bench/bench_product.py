"""Product-path benchmark: what a user gets from ``ocr-app convert`` and the app, on one GPU.

Everything goes through ``Converter`` → router → result cache (off) → ``ModelManager`` → OOM recovery →
``DeepSeekOcr2Engine`` → the graph decoder, on a full-size random-weight checkpoint written to disk with
``save_pretrained`` and read back by the real loader (no download on the GPU box). Measured, per
precision variant (``bf16`` and the pre-quantised ``mixed``):

* cold start: ``python -m ocr_app.cli convert`` of a 1-page PDF in a fresh process (wall clock, and the
  ``-v`` breakdown: start-up, imports, weight load and the kernel warm-up inside it, graph capture,
  first page), for the machine's first process (empty caches) and the ones after it;
* warm: s/page and tok/s for 1, 16 and 64-page PDFs (one process, after one warm-up request);
* memory: allocated after each of ``--soak`` sequential requests (mostly 1 page, every 10th 16 pages),
  the memory-context warnings they raised, and allocated after unload against before the first load;
* under a memory budget (``--budget``, e.g. mixed at 4 GiB, bf16 at 8 GiB): a fresh process capped with
  ``torch.cuda.set_per_process_memory_fraction`` and ``DEEPSEEK_OCR_GPU_MEMORY_GIB`` set, converting the
  16-page PDF: wall, OOM events, pages read at a lower resolution;
* transformers ``generate`` at 1 page (``decoder=generate``), for the ratio;
* the first document on a fresh machine (``--first-pages``): a process with empty Triton and project
  caches, the load timed alone (it includes the kernel warm-up), then the document and the same
  document again, with the Triton binaries compiled at load, in the first document and after it;
* a ``--doc-pages`` CLI document (256 pages × ``--doc-new`` tokens) with ``--format md,json`` and with every
  format, interleaved ``--doc-runs`` times (the faster of each counts).

The cold start's first run finds empty Triton and project caches (as on a fresh machine); the table shows
the runs after it as min / median / max.

Random weights rarely emit EOS, and a page that stopped early would make variants incomparable, so the
checkpoint's ``generation_config.eos_token_id`` is set to ``vocab_size`` (an id no logit can pick):
every page decodes exactly ``--new`` tokens (or ``--soak-new`` / ``--generate-new``), the same way for
every variant; the table reports the tokens actually decoded.

usage (H200, < 9 min):   python bench/bench_product.py --work /tmp/bench_product
CPU smoke run (CI):      python bench/bench_product.py --tiny --work DIR
Each phase runs in its own process (cold start and the memory cap need one); ``--out`` writes JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIB = 1024**2
GIB = 1024**3
MODE = ["default"]  # resolution mode of every conversion (``--mode``)


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


# --- inputs ------------------------------------------------------------------------------------------
def make_pdf(path: Path, pages: int) -> Path:
    """Text-dense A4 pages (PyMuPDF), distinct text per page (no cache could serve one from another)."""
    import pymupdf

    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page(width=595, height=842)
        lines = [
            f"Page {p + 1}, line {n}: the quick brown fox {n * 7 % 97} jumps {p * 31 + n}" for n in range(60)
        ]
        page.insert_textbox(pymupdf.Rect(40, 40, 555, 802), "\n".join(lines), fontsize=9)
    doc.save(path)
    return path


def unreachable_eos(model_dir: Path) -> None:
    """Point the checkpoint's EOS at ``vocab_size`` so every page decodes the full token budget."""
    gen_path = model_dir / "generation_config.json"
    cfg = json.loads((model_dir / "config.json").read_text())
    vocab = int(cfg.get("text_config", cfg)["vocab_size"])
    gen = json.loads(gen_path.read_text()) if gen_path.exists() else {}
    gen["eos_token_id"] = vocab
    gen_path.write_text(json.dumps(gen, indent=2))


def phase_prepare(args: argparse.Namespace) -> dict:
    """Checkpoints (tiny or full bf16 + mixed) and the PDFs."""
    import torch

    from ocr_app.models.deepseek_ocr2.tiny import build_tiny_checkpoint

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tiny = work / "tiny"
    if not (tiny / "config.json").exists():
        build_tiny_checkpoint(tiny)
    out: dict = {"checkpoints": {}}
    t0 = time.perf_counter()
    if args.tiny:
        unreachable_eos(tiny)
        out["checkpoints"]["fp32"] = str(tiny)
    else:
        from transformers import AutoConfig

        from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model

        full = work / "full"
        if not (full / "config.json").exists():
            tc = AutoConfig.from_pretrained(tiny)
            t = tc.text_config
            ids = dict(bos_token_id=t.bos_token_id, eos_token_id=t.eos_token_id, pad_token_id=t.pad_token_id)
            cfg = config_dict("full", text=ids, image_token_id=tc.image_token_id)
            model = random_model(cfg, "cuda", torch.bfloat16)
            model.save_pretrained(full, safe_serialization=True)
            del model
            gc.collect()
            torch.cuda.empty_cache()
            for f in tiny.iterdir():  # tokenizer and processor of the tiny checkpoint
                if (
                    f.is_file()
                    and not f.name.endswith((".safetensors", ".bin"))
                    and f.name
                    not in (
                        "config.json",
                        "generation_config.json",
                    )
                ):
                    shutil.copy(f, full / f.name)
            unreachable_eos(full)
        out["checkpoints"]["bf16"] = str(full)
        out["build_full_s"] = round(time.perf_counter() - t0, 1)
        if "mixed" in args.variants:
            mixed = work / "mixed"
            t1 = time.perf_counter()
            if not (mixed / "config.json").exists():
                from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
                from ocr_app.quant.pipeline import quantize_checkpoint

                # round-to-nearest: random weights
                quantize_checkpoint(full, mixed, "mixed", 0, "cuda", adapter=ADAPTER)
                unreachable_eos(mixed)
            out["checkpoints"]["mixed"] = str(mixed)
            out["quantize_s"] = round(time.perf_counter() - t1, 1)
    sizes = sorted({1, 16, *args.pages, *args.first_pages, *([args.doc_pages] if args.doc_pages else [])})
    out["pdfs"] = {str(n): str(make_pdf(work / f"doc{n}.pdf", n)) for n in sizes}
    return out


# --- measuring through Converter ----------------------------------------------------------------------
class Counter(logging.Handler):
    """Counts log records whose message contains ``needle``."""

    def __init__(self, needle: str) -> None:
        super().__init__(logging.WARNING)
        self.needle, self.count = needle, 0

    def emit(self, record: logging.LogRecord) -> None:
        if self.needle in record.getMessage():
            self.count += 1


def _stack(args: argparse.Namespace, model: str, dtype: str, decoder: str = "graph", **extra):
    from ocr_app.convert import Converter
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(
        model=model, device=args.device, dtype=dtype, engine="deepseek", idle_unload_s=0, cache_enabled=False,
        decoder=decoder, **extra,
    )  # fmt: skip
    engines = build_engines(settings)
    return Converter(engines, settings), engines, settings


def _convert(conv, settings, pdf: str, new: int, out: Path) -> dict:
    from ocr_app.convert import ConvertOptions

    cuda = _cuda()
    opts = ConvertOptions.from_settings(
        settings, mode=MODE[0], formats=frozenset({"json"}), max_new_tokens=new, use_cache=False
    )
    if cuda:
        cuda.synchronize()
        cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    [doc] = conv.convert([Path(pdf)], out, opts)
    if cuda:
        cuda.synchronize()
    dt = time.perf_counter() - t0
    if doc.error:
        raise RuntimeError(doc.error)
    toks = sum(p.num_tokens for p in doc.pages)
    n = len(doc.pages)
    return {
        "pages": n,
        "wall_s": round(dt, 3),
        "s_per_page": round(dt / max(n, 1), 4),
        "tokens": toks,
        "tok_s": round(toks / dt, 1),
        "stops": sorted({str(p.stop_reason) for p in doc.pages}),
        "errors": sum(1 for p in doc.pages if p.error),
        "lowered": sum(1 for p in doc.pages for note in p.notes if "ran at mode" in note),
        "oom_notes": sum(1 for p in doc.pages if any("out of memory" in note for note in p.notes)),
        "peak_alloc_mib": round(cuda.max_memory_allocated() / MIB) if cuda else None,
    }


def _cuda():
    import torch

    return torch.cuda if torch.cuda.is_available() and torch.cuda.is_initialized() else None


def _allocated() -> int | None:
    import torch

    return torch.cuda.memory_allocated() if torch.cuda.is_available() else None


def phase_warm(args: argparse.Namespace) -> dict:
    """Warm timings at 1/16/64 pages, the soak, unload; then generate at 1 page (bf16/fp32 only)."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.init()
    pdfs = json.loads(args.pdfs)
    before = _allocated()
    warn = Counter("of GPU memory")
    logging.getLogger("ocr_app.runtime.memory").addHandler(warn)
    conv, engines, settings = _stack(args, args.model, args.variant)
    work = Path(args.work) / f"out_{args.variant}"
    res: dict = {"variant": args.variant, "allocated_before_load_mib": _mib(before)}
    t0 = time.perf_counter()
    _convert(conv, settings, pdfs["1"], args.soak_new, work / "warmup")
    res["first_request_s"] = round(time.perf_counter() - t0, 2)
    # warm = the shapes a run needs already seen: the largest document once at the full token budget
    # captures every (batch, length) graph and compiles every Triton specialisation the timed runs use
    t0 = time.perf_counter()
    _convert(conv, settings, pdfs[str(max(args.pages))], args.new, work / "warmup_all")
    res["warmup_largest_s"] = round(time.perf_counter() - t0, 2)
    for n in args.pages:
        res[f"warm_{n}p"] = r = _convert(conv, settings, pdfs[str(n)], args.new, work / f"p{n}")
        log(args.variant, f"{n} pages", json.dumps(r))
    allocs = []
    for i in range(args.soak):
        pdf = pdfs["16"] if i % 10 == 9 else pdfs["1"]
        _convert(conv, settings, pdf, args.soak_new, work / f"soak{i % 3}")
        allocs.append(_mib(_allocated()))
    res["soak"] = {"requests": args.soak, "allocated_mib": allocs, "warnings": warn.count}
    if args.park_cycles:
        res["park"] = park_wake(conv, settings, engines, pdfs["1"], args.new, work, args.park_cycles)
        log(args.variant, "park/wake", json.dumps(res["park"]["summary"]))
    info = engines.describe()["engines"]["deepseek"]
    res["decoder"] = info.get("decoder")
    engines.unload_all()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    res["allocated_after_unload_mib"] = _mib(_allocated())
    if args.variant in ("bf16", "fp32") and args.generate_new > 0:
        gconv, gengines, gsettings = _stack(args, args.model, args.variant, decoder="generate")
        _convert(gconv, gsettings, pdfs["1"], 4, work / "gen_warmup")
        res["generate_1p"] = _convert(gconv, gsettings, pdfs["1"], args.generate_new, work / "gen")
        gengines.unload_all()
    return res


def _manager(engine):
    """The ``ModelManager`` under the runtime wrappers of an engine the registry hands out."""
    from ocr_app.runtime.manager import ModelManager

    for _ in range(10):
        if isinstance(engine, ModelManager):
            return engine
        engine = getattr(engine, "engine", None) or getattr(engine, "_engine", None)
    raise RuntimeError("no ModelManager under the deepseek engine")


def _rss_mib() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def park_wake(conv, settings, engines, pdf: str, new: int, work: Path, cycles: int) -> dict:
    """Issue 32 item 2: warm 1-page requests, then ``cycles`` times: the manager's real idle unload (its
    watcher, a 50 ms timeout), the GPU memory and host RSS while parked, and the next 1-page request
    (a wake). Bar: request after an idle unload ≤ 1.5 s more than a warm request."""
    from ocr_app.runtime.manager import IDLE_UNLOADED

    warm = [_convert(conv, settings, pdf, new, work / f"pw{i}")["wall_s"] for i in range(3)]
    mgr = _manager(engines.get("deepseek"))
    runs = []
    for i in range(cycles):
        rss_before = _rss_mib()
        mgr.set_idle_unload(0.05)
        deadline = time.monotonic() + 60
        while mgr.status().state != IDLE_UNLOADED and time.monotonic() < deadline:
            time.sleep(0.01)  # a benchmark waiting for the watcher
        mgr.set_idle_unload(0)
        info = mgr.describe()
        cuda = _cuda()
        if cuda:
            cuda.synchronize()
        run = {"state": mgr.status().state, "allocated_parked_mib": _mib(_allocated()),
               "reserved_parked_mib": _mib(cuda.memory_reserved()) if cuda else None,
               "parked_gib": info.get("parked_gib"), "rss_before_mib": rss_before, "rss_parked_mib": _rss_mib()}  # fmt: skip
        r = _convert(conv, settings, pdf, new, work / f"wake{i}")
        run["request_s"] = r["wall_s"]
        run["wake"] = mgr.describe().get("last_wake")
        run["over_warm_s"] = round(r["wall_s"] - min(warm), 3)
        runs.append(run)
    again = [_convert(conv, settings, pdf, new, work / f"pa{i}")["wall_s"] for i in range(2)]
    over = [r["over_warm_s"] for r in runs]
    return {"warm_s": warm, "after_wake_warm_s": again, "runs": runs,
            "summary": {"warm_min_s": min(warm), "over_warm_s": over, "max_over_warm_s": max(over),
                        "allocated_parked_mib": [r["allocated_parked_mib"] for r in runs],
                        "parked_gib": runs[0]["parked_gib"]}}  # fmt: skip


def phase_budget(args: argparse.Namespace) -> dict:
    """The 16-page PDF in a process capped to ``--budget-gib`` (emulates a smaller card)."""
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, args.budget_gib * GIB / total))
    pdfs = json.loads(args.pdfs)
    ooms = Counter("out of memory")
    logging.getLogger("ocr_app.runtime.oom").addHandler(ooms)
    conv, engines, settings = _stack(args, args.model, args.variant, gpu_memory_gib=args.budget_gib)
    res: dict = {"variant": args.variant, "budget_gib": args.budget_gib}
    try:
        _convert(conv, settings, pdfs["1"], 8, Path(args.work) / "budget_warmup")
        res["doc16"] = _convert(
            conv, settings, pdfs["16"], args.new, Path(args.work) / f"budget_{args.variant}"
        )
    except Exception as exc:  # report, do not hide: the table shows the failure
        res["error"] = f"{type(exc).__name__}: {exc}"[:300]
    res["oom_events"] = ooms.count
    res["decoder"] = engines.describe()["engines"]["deepseek"].get("decoder")
    engines.unload_all()
    return res


def phase_firstdoc(args: argparse.Namespace) -> dict:
    """A fresh machine's first document (``--first-pages`` pages), then the same document again.

    The orchestrator gives this process empty Triton and project caches (``TRITON_CACHE_DIR``,
    ``DEEPSEEK_OCR_CACHE_DIR``), as on a machine that never ran the program. The load is timed on its
    own (what it compiles or captures up front belongs to the cold start); the first document is then
    compared with the steady state of the same process (min of ``--steady-runs`` repeats)."""
    pdfs = json.loads(args.pdfs)
    n = args.first_pages[-1]  # this process's page count (the last --first-pages given)
    conv, engines, settings = _stack(args, args.model, args.variant)
    work = Path(args.work) / f"first_{args.variant}_{n}"
    res: dict = {"variant": args.variant, "pages": n}
    t0 = time.perf_counter()
    engines.get("deepseek").load()
    cuda = _cuda()
    if cuda:
        cuda.synchronize()
    res["load_s"] = round(time.perf_counter() - t0, 2)
    at_load = triton_kernels()
    res["first"] = _convert(conv, settings, pdfs[str(n)], args.new, work / "first")
    after_first = triton_kernels()
    res["steady"] = [
        _convert(conv, settings, pdfs[str(n)], args.new, work / f"s{i}") for i in range(args.steady_runs)
    ]
    res["triton_compiled"] = {
        "at_load": sum(at_load.values()),
        "first_document": _diff(after_first, at_load),
        "steady": _diff(triton_kernels(), after_first),
    }
    best = min(r["wall_s"] for r in res["steady"])
    res["first_over_steady"] = round(res["first"]["wall_s"] / best, 3)
    info = engines.describe()["engines"]["deepseek"]
    res["describe"] = info.get("load_breakdown")
    res["kernel_warmup"] = info.get("kernel_warmup")  # seconds, launches, binaries compiled at load
    log(
        args.variant,
        f"first {n}-page document",
        json.dumps({k: res[k] for k in ("load_s", "first_over_steady")}),
    )
    engines.unload_all()
    return res


def triton_kernels() -> dict[str, int]:
    """Compiled specialisations per kernel name in ``TRITON_CACHE_DIR`` (one ``<name>.json`` each)."""
    root = os.environ.get("TRITON_CACHE_DIR")
    counts: dict[str, int] = {}
    for meta in Path(root).glob("*/*.json") if root else ():
        if not meta.name.startswith("__grp__"):
            counts[meta.stem] = counts.get(meta.stem, 0) + 1
    return counts


def _diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v > before.get(k, 0)}


def _mib(n: int | None) -> int | None:
    return None if n is None else round(n / MIB)


# --- orchestration -----------------------------------------------------------------------------------
def _pythonpath() -> str:
    """The project first, then whatever the caller had (carried wheels on the GPU box)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def run_phase(
    args: argparse.Namespace,
    phase: str,
    extra: list[str],
    env: dict | None = None,
    *,
    script: str = __file__,
    common: Callable[[argparse.Namespace], list[str]] | None = None,
) -> dict:
    """Run ``phase`` of ``script`` (this bench, or another built on its phases) in a fresh process with
    ``common(args)`` (default: this bench's ``common_argv``) and ``extra``; its JSON result, or an error."""
    tag = "_".join(x.lstrip("-") for x in extra[:2]) or "all"
    result = Path(args.work) / f"result_{phase}_{tag}.json"
    argv = (common or common_argv)(args)
    cmd = [sys.executable, script, "--phase", phase, "--result", str(result), *argv, *extra]
    log("$", " ".join(cmd[1:]))
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, env={**os.environ, "PYTHONPATH": _pythonpath(), **(env or {})}, timeout=args.timeout
    )
    if proc.returncode != 0:
        return {
            "error": f"phase {phase} exited with {proc.returncode}",
            "wall_s": round(time.perf_counter() - t0, 1),
        }
    return json.loads(result.read_text())


def cold_start(
    args: argparse.Namespace, model: str, dtype: str, pdf: str, *, new: int | None = None,
    formats: str | None = None, env: dict | None = None, tag: str = "",
) -> dict:  # fmt: skip
    """``ocr-app convert -v`` of ``pdf`` in a fresh process; wall clock includes Python start-up.
    ``formats``: the ``--format`` value (None: the CLI's default, every format)."""
    out = Path(args.work) / f"cold_{dtype}{tag}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", pdf, "-o", str(out), "--model", model,
           "--device", args.device, "--dtype", dtype, "--engine", "deepseek", "--mode", args.mode,
           "--max-new-tokens", str(new or args.soak_new), "--no-cache", "-q", "-v"]  # fmt: skip
    if formats:
        cmd += ["--format", formats]
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "DEEPSEEK_OCR_DECODER": "graph", **(env or {})}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - t0
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("cold start:")), "")
    parts = {
        k.strip(): float(v)
        for k, v in re.findall(r"([a-z ()-]+?) ([\d.]+) s", line.removeprefix("cold start:"))
    }
    res = {"wall_s": round(wall, 2), "exit": proc.returncode, "breakdown": parts}
    if proc.returncode != 0:
        res["stderr"] = proc.stderr[-1500:]
    return res


def common_argv(args: argparse.Namespace) -> list[str]:
    out = ["--work", args.work, "--device", args.device, "--mode", args.mode, "--new", str(args.new), "--soak", str(args.soak),
           "--soak-new", str(args.soak_new), "--generate-new", str(args.generate_new),
           "--pages", ",".join(map(str, args.pages)), "--variants", ",".join(args.variants),
           "--first-pages", ",".join(map(str, args.first_pages)), "--doc-pages", str(args.doc_pages),
           "--steady-runs", str(args.steady_runs), "--park-cycles", str(args.park_cycles)]  # fmt: skip
    return out + (["--tiny"] if args.tiny else [])


def orchestrate(args: argparse.Namespace) -> dict:
    t_start = time.perf_counter()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    prep = run_phase(args, "prepare", [])
    if "error" in prep:
        raise SystemExit(f"prepare failed: {prep['error']}")
    pdfs = json.dumps(prep["pdfs"])
    results: dict = {"prepare": prep, "variants": {}, "args": vars(args)}
    for variant in args.variants:
        model = prep["checkpoints"][variant]
        # the first process on a machine also fills Triton's and Python's on-disk caches (once per
        # install); the ones after it are what a user waits for on every later run
        # the first run finds empty Triton and project caches (this variant's own, as on a fresh machine);
        # the runs after it reuse what it compiled, as every later run on that machine does
        fresh = Path(args.work) / f"fresh_cold_{variant}"
        shutil.rmtree(fresh, ignore_errors=True)
        cache_env = {
            "TRITON_CACHE_DIR": str(fresh / "triton"),
            "DEEPSEEK_OCR_CACHE_DIR": str(fresh / "cache"),
        }
        r: dict = {}
        if args.cold_runs > 0:  # 0: no cold start (a run of the warm phases only)
            runs = [
                cold_start(args, model, variant, prep["pdfs"]["1"], env=cache_env)
                for _ in range(args.cold_runs)
            ]
            later = runs[1:] or runs
            r = {"cold": sorted(later, key=lambda c: c["wall_s"])[len(later) // 2], "cold_first": runs[0],
                 "cold_runs": later, "cold_spread": spread([c["wall_s"] for c in later])}  # fmt: skip
            log(variant, "cold start", json.dumps(runs))
        results["variants"][variant] = r
        for n in args.first_pages:
            fresh = Path(args.work) / f"fresh_{variant}_{n}"
            shutil.rmtree(fresh, ignore_errors=True)
            env = {"TRITON_CACHE_DIR": str(fresh / "triton"), "DEEPSEEK_OCR_CACHE_DIR": str(fresh / "cache")}
            extra = ["--variant", variant, "--model", model, "--pdfs", pdfs, "--first-pages", str(n)]
            r[f"first_{n}p"] = run_phase(args, "firstdoc", extra, env=env)
        if args.doc_pages and variant in args.doc_variants:
            pdf = prep["pdfs"][str(args.doc_pages)]
            # interleaved repeats, the faster of each counts: the first CLI run of a process tree may
            # still compile kernels the shapes of this document need (it did on the H200: 7.2 s of
            # "graph capture" in the first of two runs, 2.2 s in the second)
            runs: dict[str, list[dict]] = {"md_json": [], "default": []}
            for _ in range(max(1, args.doc_runs)):
                for label, fmt in (("md_json", "md,json"), ("default", None)):
                    runs[label].append(
                        cold_start(
                            args, model, variant, pdf, new=args.doc_new, formats=fmt, tag=f"_doc_{label}"
                        )
                    )
            r["doc_formats"] = {label: min(rs, key=lambda c: c["wall_s"]) for label, rs in runs.items()}
            r["doc_formats_runs"] = runs
            log(variant, f"{args.doc_pages}-page document by format", json.dumps(r["doc_formats"]))
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=2))
        if args.cold_only:
            continue
        r["warm"] = run_phase(args, "warm", ["--variant", variant, "--model", model, "--pdfs", pdfs])
        budget = args.budgets.get(variant)
        if budget and not args.tiny:
            r["budget"] = run_phase(
                args,
                "budget",
                ["--variant", variant, "--model", model, "--pdfs", pdfs, "--budget-gib", str(budget)],
            )
        results["variants"][variant] = r
        if args.out:  # what is measured so far survives a run cut short by a time limit
            Path(args.out).write_text(json.dumps(results, indent=2))
    results["total_s"] = round(time.perf_counter() - t_start, 1)
    return results


def spread(xs: list[float]) -> dict:
    """min / median / max of ``xs`` (the spread over runs the docs show)."""
    ys = sorted(xs)
    return {"min": ys[0], "median": ys[len(ys) // 2], "max": ys[-1], "n": len(ys)} if ys else {}


def _f(x, fmt: str = "{:.2f}") -> str:
    return "—" if x is None else fmt.format(x)


def table(results: dict) -> str:
    """The issue's table: one column per variant."""
    vs = list(results["variants"])
    rows: list[tuple[str, list[str]]] = []

    def row(name: str, get) -> None:
        cells = []
        for v in vs:
            try:
                cells.append(get(results["variants"][v]))
            except (KeyError, TypeError, IndexError, ZeroDivisionError, ValueError):
                cells.append("—")
        rows.append((name, cells))

    row("cold start: `ocr-app convert` 1 page, wall s (median)", lambda r: _f(r["cold"]["wall_s"]))
    row("  min / median / max over the runs after the first (n)",
        lambda r: "{} / {} / {} ({})".format(*(_f(r["cold_spread"][k]) for k in ("min", "median", "max")), r["cold_spread"]["n"]))  # fmt: skip
    row(
        "  the machine's first process (empty on-disk caches), wall s",
        lambda r: _f(r["cold_first"]["wall_s"]),
    )
    parts = ("imports", "weight load", "kernel warm-up (in the load)", "graph capture",
             "first page done (since process start)")  # fmt: skip
    row(
        "  breakdown (import / load / of it kernel warm-up / capture / first page) s",
        lambda r: " / ".join(_f(r["cold"]["breakdown"].get(k)) for k in parts),
    )
    row(
        "  the same for the machine's first process",
        lambda r: " / ".join(_f(r["cold_first"]["breakdown"].get(k)) for k in parts),
    )
    for n in results["args"]["first_pages"]:
        row(f"fresh machine: load s / first {n}-page document s / steady s / first ÷ steady",
            lambda r, n=n: "{} / {} / {} / {}".format(_f(r[f"first_{n}p"]["load_s"]), _f(r[f"first_{n}p"]["first"]["wall_s"]),
                _f(min(x["wall_s"] for x in r[f"first_{n}p"]["steady"])), _f(r[f"first_{n}p"]["first_over_steady"], "{:.2f}×")))  # fmt: skip
    for n in results["args"]["first_pages"]:
        row(f"  first {n}-page run: Triton binaries compiled at load / in the first document / after it",
            lambda r, n=n: "{} / {} / {}".format(r[f"first_{n}p"]["triton_compiled"]["at_load"],
                sum(r[f"first_{n}p"]["triton_compiled"]["first_document"].values()),
                sum(r[f"first_{n}p"]["triton_compiled"]["steady"].values())))  # fmt: skip
        row(f"  first {n}-page run: kernel warm-up s / launches / binaries / failed",
            lambda r, n=n: "{} / {} / {} / {}".format(*(r[f"first_{n}p"]["kernel_warmup"].get(k, "—")
                for k in ("seconds", "launches", "variants", "failed"))))  # fmt: skip
    if results["args"]["doc_pages"]:
        d = results["args"]["doc_pages"]
        row(f"CLI {d} pages × {results['args']['doc_new']} tokens: wall s md,json / default formats / ratio",
            lambda r: "{} / {} / {}".format(_f(r["doc_formats"]["md_json"]["wall_s"]), _f(r["doc_formats"]["default"]["wall_s"]),
                _f(r["doc_formats"]["default"]["wall_s"] / r["doc_formats"]["md_json"]["wall_s"], "{:.2f}×")))  # fmt: skip
    pages = results["args"]["pages"]
    for n in pages:
        row(f"warm {n} page(s) × {results['args']['new']} tokens: s (s/page)",
            lambda r, n=n: f"{_f(r['warm'][f'warm_{n}p']['wall_s'])} ({_f(r['warm'][f'warm_{n}p']['s_per_page'], '{:.3f}')})")  # fmt: skip
        row(f"warm {n} page(s): tok/s (tokens)",
            lambda r, n=n: f"{_f(r['warm'][f'warm_{n}p']['tok_s'], '{:.0f}')} ({r['warm'][f'warm_{n}p']['tokens']})")  # fmt: skip
    row("first request in the warm process (load + capture), s", lambda r: _f(r["warm"]["first_request_s"]))
    row(
        "allocated MiB after request 1 / max / last of the soak",
        lambda r: "{} / {} / {}".format(
            r["warm"]["soak"]["allocated_mib"][0],
            max(r["warm"]["soak"]["allocated_mib"]),
            r["warm"]["soak"]["allocated_mib"][-1],
        ),
    )
    row(
        "growth over the soak (max − first), MiB",
        lambda r: str(max(r["warm"]["soak"]["allocated_mib"]) - r["warm"]["soak"]["allocated_mib"][0]),
    )
    row("memory-context warnings in the soak", lambda r: str(r["warm"]["soak"]["warnings"]))
    row(
        "allocated after unload − before load, MiB",
        lambda r: str(r["warm"]["allocated_after_unload_mib"] - r["warm"]["allocated_before_load_mib"]),
    )
    row("idle park → next 1-page request: s over warm (max of cycles; bar ≤ 1.5) / allocated MiB parked / parked GiB in host RAM",
        lambda r: "{} ({}) / {} / {}".format(_f(r["warm"]["park"]["summary"]["max_over_warm_s"]),
            ", ".join(_f(x) for x in r["warm"]["park"]["summary"]["over_warm_s"]),
            r["warm"]["park"]["summary"]["allocated_parked_mib"], r["warm"]["park"]["summary"]["parked_gib"]))  # fmt: skip
    row("decoder kept (slots × length, MiB, graphs)",
        lambda r: f"{r['warm']['decoder']['slots']} × {r['warm']['decoder']['max_len']}, {r['warm']['decoder']['held_mib']}, {len(r['warm']['decoder']['graphs'])}")  # fmt: skip
    row("under budget: GiB", lambda r: _f(r["budget"]["budget_gib"], "{:.1f}"))
    row("  16 pages: wall s / OOM events / pages at a lower mode / errors",
        lambda r: f"{_f(r['budget']['doc16']['wall_s'])} / {r['budget']['oom_events']} / {r['budget']['doc16']['lowered']} / {r['budget']['doc16']['errors']}")  # fmt: skip
    row("  peak allocated MiB", lambda r: str(r["budget"]["doc16"]["peak_alloc_mib"]))
    row("generate (transformers) 1 page: tok/s (tokens)",
        lambda r: f"{_f(r['warm']['generate_1p']['tok_s'], '{:.1f}')} ({r['warm']['generate_1p']['tokens']})")  # fmt: skip
    row("product 1 page tok/s ÷ generate tok/s",
        lambda r: _f(r["warm"][f"warm_{pages[0]}p"]["tok_s"] / r["warm"]["generate_1p"]["tok_s"], "{:.1f}×"))  # fmt: skip
    head = "| what | " + " | ".join(vs) + " |\n|---|" + "---|" * len(vs) + "\n"
    body = "\n".join(f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows)
    note = (
        f"\n\nEOS unreachable (generation_config.eos_token_id = vocab_size): every page decodes its full "
        f"token budget. Total bench time {results['total_s']} s."
    )
    return head + body + note


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="tiny checkpoint on the CPU (smoke run)")
    p.add_argument("--work", default="/tmp/bench_product", help="checkpoints, PDFs and outputs go here")
    p.add_argument("--device", default=None, help="default: cuda (cpu with --tiny)")
    p.add_argument("--mode", default=None, help="resolution mode [default] (global with --tiny)")
    p.add_argument("--new", type=int, default=None, help="tokens per page of the timed runs [512]")
    p.add_argument("--pages", default=None, help="page counts of the timed runs [1,16,64]")
    p.add_argument("--soak", type=int, default=None, help="sequential requests of the memory soak [100]")
    p.add_argument("--soak-new", type=int, default=None, help="tokens per page in the soak [32]")
    p.add_argument("--generate-new", type=int, default=None, help="tokens of the generate baseline [128]")
    p.add_argument("--variants", default=None, help="precisions [bf16,mixed] (fp32 with --tiny)")
    p.add_argument("--budget", default="bf16=8,mixed=4", help="GiB budget per variant (empty: skip)")
    p.add_argument("--timeout", type=int, default=540, help="seconds per phase")
    p.add_argument("--out", default=None, help="write all results as JSON here")
    p.add_argument("--cold-runs", type=int, default=2, help="cold starts per variant (first: empty caches)")
    p.add_argument("--cold-only", action="store_true", help="measure the cold start only")
    p.add_argument(
        "--first-pages",
        default=None,
        help="first-document phase: page counts, each in a process with empty caches [16,64]; empty: skip",
    )
    p.add_argument("--steady-runs", type=int, default=2, help="repeats after the first document")
    p.add_argument("--park-cycles", type=int, default=0, help="idle park/wake cycles in the warm phase")
    p.add_argument(
        "--doc-pages",
        type=int,
        default=None,
        help="pages of the CLI document converted with --format md,json and with the default formats [256; 0: skip]",
    )
    p.add_argument("--doc-new", type=int, default=256, help="tokens per page of that document")
    p.add_argument("--doc-runs", type=int, default=2, help="interleaved runs per format (the faster counts)")
    p.add_argument("--doc-variants", default="bf16", help="variants that convert that document")
    # internal: one phase in this process
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    p.add_argument("--variant", default=None, help=argparse.SUPPRESS)
    p.add_argument("--model", default=None, help=argparse.SUPPRESS)
    p.add_argument("--pdfs", default=None, help=argparse.SUPPRESS)
    p.add_argument("--budget-gib", type=float, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    tiny = a.tiny
    a.device = a.device or ("cpu" if tiny else "cuda")
    a.mode = a.mode or ("global" if tiny else "default")
    MODE[0] = a.mode
    a.new = a.new or (8 if tiny else 512)
    a.pages = [int(x) for x in (a.pages or ("1,2" if tiny else "1,16,64")).split(",") if x.strip()]
    a.soak = a.soak if a.soak is not None else (4 if tiny else 100)
    a.soak_new = a.soak_new or (4 if tiny else 32)
    a.generate_new = a.generate_new if a.generate_new is not None else (8 if tiny else 128)
    a.variants = [
        v.strip() for v in (a.variants or ("fp32" if tiny else "bf16,mixed")).split(",") if v.strip()
    ]
    a.budgets = {k: float(v) for k, v in (kv.split("=") for kv in a.budget.split(",") if "=" in kv)}
    fp = a.first_pages if a.first_pages is not None else ("2" if tiny else "16,64")
    a.first_pages = [int(x) for x in fp.split(",") if x.strip()]
    a.doc_pages = a.doc_pages if a.doc_pages is not None else (3 if tiny else 256)
    a.doc_new = min(a.doc_new, 4) if tiny else a.doc_new
    a.doc_variants = [v.strip() for v in a.doc_variants.split(",") if v.strip()]
    if tiny and a.doc_variants == ["bf16"]:
        a.doc_variants = ["fp32"]
    return a


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.phase:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        fn = {
            "prepare": phase_prepare,
            "warm": phase_warm,
            "budget": phase_budget,
            "firstdoc": phase_firstdoc,
        }[args.phase]
        Path(args.result).write_text(json.dumps(fn(args)))
        return
    results = orchestrate(args)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
