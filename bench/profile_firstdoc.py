"""Where the first document after a load spends its extra time, named at the Python level.

Why: the H200 trace of ``46add54`` showed the first 16-page document 3.6× the second with the same CUDA
work, and the decoding thread idle for 0.2-0.35 s fifteen times, each gap ending in the first launch of
a Triton kernel. A CUDA trace cannot say what the host did in those gaps; this script can. It runs
fresh processes through the product's ``Converter`` (``bench_product``'s helpers) and, in each:

* counts and times, per phase (load / first document / second document), the host steps Triton takes
  on a kernel's first use: ``compile`` (a binary from the on-disk cache or a real compile), the C
  launcher's build with the system compiler (``runtime.build._build``), and ``_init_handles`` (module
  load + launcher);
* samples every thread's stack every ``--interval`` s during the first document and reports the
  decoding thread's inclusive and leaf time per function;
* times the load, the first, second and third document.

Scenarios (one process each, in order): ``fresh-lazy`` (empty Triton and project caches, launchers left
to the first launch: the behaviour of ``46add54``), ``fresh`` (empty caches, the shipped load), ``later``
(the caches ``fresh`` left: a later process on the same machine); ``fresh-preload`` and ``later-preload``:
the same with a server's ``preload`` after the load (its blank-page warm-up, ``page_warmup``; timed on
its own as ``warm_s``).

usage (H200): python bench/profile_firstdoc.py --work /tmp/bw --variants bf16,mixed --pages 16 --out DIR
CPU smoke:    python bench/profile_firstdoc.py --tiny --work DIR --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import bench_product as bp  # noqa: E402

SCENARIOS = ("fresh-lazy", "fresh", "later", "fresh-preload", "later-preload")


# --- inside one process --------------------------------------------------------------------------------
class HostSteps:
    """Counts and seconds of Triton's first-use host steps, per phase, by wrapping Triton's functions."""

    def __init__(self) -> None:
        self.phase = "load"
        self.stats: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))

    def wrap(self, owner: object, name: str, label: str, only_if=None) -> None:
        fn = getattr(owner, name, None)
        if fn is None:
            return
        steps = self

        def timed(*a, **k):
            if only_if is not None and not only_if(*a, **k):
                return fn(*a, **k)
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                steps.stats[steps.phase][label].append(time.perf_counter() - t0)

        setattr(owner, name, timed)

    def install(self) -> None:
        try:
            import triton.compiler.compiler as tcc
            import triton.runtime.build as tbuild
            import triton.runtime.jit as tjit
        except ImportError:
            return
        self.wrap(tbuild, "_build", "launcher C build")
        self.wrap(tcc.CompiledKernel, "_init_handles", "init handles", only_if=lambda k: k.module is None)
        self.wrap(tcc, "compile", "compile (cache hit or build)")
        if getattr(tjit, "compile", None) is not None:
            tjit.compile = tcc.compile  # jit.py imported the name before the wrap

    def report(self) -> dict:
        return {
            phase: {label: {"n": len(xs), "s": round(sum(xs), 3)} for label, xs in by.items()}
            for phase, by in self.stats.items()
        }


class SlowCalls:
    """Calls of a few torch functions whose host time exceeds ``limit`` s, per phase, with their input
    shapes: a first call that builds something per shape (a cuDNN plan, a cuBLAS heuristic, an SDPA
    backend choice) shows here and not in the same call later."""

    NAMES = ("scaled_dot_product_attention", "conv2d", "linear", "layer_norm", "embedding")

    def __init__(self, steps: HostSteps, limit: float = 0.003) -> None:
        self.steps, self.limit = steps, limit
        self.calls: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
        self.counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def install(self) -> None:
        import torch.nn.functional as F

        for name in self.NAMES:
            fn = getattr(F, name)
            setattr(F, name, self._wrap(name, fn))

    def _wrap(self, name: str, fn):
        slow = self

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                dt = time.perf_counter() - t0
                phase = slow.steps.phase
                slow.counts[phase][name] += 1
                if dt > slow.limit:
                    shapes = ",".join(str(tuple(x.shape)) for x in a[:3] if hasattr(x, "shape"))
                    slow.calls[phase].append((round(dt, 4), name, shapes))

        return timed

    def report(self, top: int = 25) -> dict:
        out = {}
        for phase, calls in self.calls.items():
            by: dict[str, list[float]] = defaultdict(list)
            for dt, name, _ in calls:
                by[name].append(dt)
            out[phase] = {
                "slow_by_op": {n: {"n": len(v), "s": round(sum(v), 3)} for n, v in by.items()},
                "calls_by_op": dict(self.counts[phase]),
                "top": sorted(calls, reverse=True)[:top],
            }
        return out


class Sampler:
    """Every thread's stack every ``interval`` s while running; inclusive and leaf seconds per function
    of the threads whose name starts with ``prefix`` (the decoding thread: ``ocr-decode``)."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.inclusive: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.leaf: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        last = time.perf_counter()
        while not self._stop.wait(self.interval):
            now = time.perf_counter()
            dt, last = now - last, now
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                tname = names.get(ident, "?").split("_")[0]
                seen = set()
                f, leaf = frame, True
                while f is not None:
                    key = f"{Path(f.f_code.co_filename).name}:{f.f_code.co_name}"
                    if leaf:
                        self.leaf[tname][key] += dt
                        leaf = False
                    if key not in seen:
                        self.inclusive[tname][key] += dt
                        seen.add(key)
                    f = f.f_back

    def minus(self, other: Sampler, top: int = 40) -> dict:
        """Inclusive seconds per function of this run over ``other``'s (where this one spent more)."""
        out = {}
        for t, d in self.inclusive.items():
            if not t.startswith(("ocr-decode", "MainThread")):
                continue
            base = other.inclusive.get(t, {})
            diff = {k: v - base.get(k, 0.0) for k, v in d.items()}
            out[t] = [(round(v, 3), k) for k, v in sorted(diff.items(), key=lambda kv: -kv[1])[:top]]
        return out

    def report(self, top: int = 40, all_threads: bool = False) -> dict:
        def best(d):
            return [(round(v, 3), k) for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:top]]

        return {
            t: {"inclusive": best(self.inclusive[t]), "leaf": best(self.leaf[t])}
            for t in self.inclusive
            if all_threads or t.startswith(("ocr-decode", "MainThread", "ocr-", "Thread"))
        }


def child(args: argparse.Namespace) -> None:
    """One scenario in this process: load, three documents, the host steps and the sampled stacks."""
    steps = HostSteps()
    steps.install()
    slow = SlowCalls(steps)
    slow.install()
    if args.scenario.endswith("-nocudnn-sdpa"):  # experiment: SDPA without the cuDNN backend
        import torch

        torch.backends.cuda.enable_cudnn_sdp(False)
    if args.scenario == "fresh-lazy":  # 46add54's load: launchers left to each kernel's first launch
        from ocr_app.models.deepseek_ocr2 import kernel_warmup

        kernel_warmup.load_kernels = lambda *a, **k: {"kernels_loaded": 0, "skipped": "lazy"}
    bp.MODE[0] = args.mode
    ns = argparse.Namespace(device=args.device)
    res: dict = {"scenario": args.scenario, "variant": args.variant, "pages": args.pages}
    t0 = time.perf_counter()
    conv, engines, settings = bp._stack(ns, args.model, args.variant)
    engines.get("deepseek").load()
    cuda = bp._cuda()
    if cuda:
        cuda.synchronize()
    res["load_s"] = round(time.perf_counter() - t0, 2)
    if args.scenario.endswith("-preload"):  # a server's --preload: the load above, then its warm-up
        t1 = time.perf_counter()
        engines.get("deepseek").preload()
        res["warm_s"] = round(time.perf_counter() - t1, 2)
        res["page_warmup"] = engines.describe()["engines"]["deepseek"].get("page_warmup")
    out = Path(args.work) / f"pf_{args.variant}_{args.scenario}"
    samplers = {"first": Sampler(args.interval), "second": Sampler(args.interval)}
    docs = [("first", args.pdf), ("second", args.pdf), ("third", args.pdf)]
    if args.other_pdf:  # a document of another length: batch compositions the first did not meet
        docs += [("other", args.other_pdf), ("other_again", args.other_pdf)]
    for tag, pdf in docs:
        steps.phase = tag
        if tag in samplers:
            samplers[tag].start()
        r = bp._convert(conv, settings, pdf, args.new, out / tag)
        if tag in samplers:
            samplers[tag].stop()
        res[tag] = {k: r[k] for k in ("pages", "wall_s", "tok_s", "errors", "peak_alloc_mib")}
    res["first_over_second"] = round(res["first"]["wall_s"] / res["second"]["wall_s"], 2)
    res["first_over_best"] = round(
        res["first"]["wall_s"] / min(res["second"]["wall_s"], res["third"]["wall_s"]), 2
    )
    if args.other_pdf:
        res["other_over_again"] = round(res["other"]["wall_s"] / res["other_again"]["wall_s"], 2)
    res["host_steps"] = steps.report()
    res["slow_calls"] = slow.report()
    res["stacks_first"] = samplers["first"].report()
    res["stacks_first_minus_second"] = samplers["first"].minus(samplers["second"])
    info = engines.describe()["engines"]["deepseek"]
    res["load_breakdown"] = info.get("load_breakdown")
    res["kernel_warmup"] = {k: v for k, v in (info.get("kernel_warmup") or {}).items() if k != "plan"}
    engines.unload_all()
    Path(args.result).write_text(json.dumps(res, indent=1))


# --- the orchestrator -----------------------------------------------------------------------------------
def run_scenario(args: argparse.Namespace, variant: str, model: str, pdf: str, scenario: str) -> dict:
    cache = Path(args.work) / f"pfcache_{variant}"
    if scenario.startswith("fresh"):
        shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    result = Path(args.work) / f"pf_{variant}_{scenario}.json"
    result.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child", "--scenario", scenario, "--variant", variant, "--model", model,
           "--pdf", pdf, "--pages", str(args.pages), "--new", str(args.new), "--mode", args.mode,
           "--device", args.device, "--work", args.work, "--interval", str(args.interval),
           "--result", str(result), *(["--other-pdf", args.other_pdf] if args.other_pdf else [])]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": bp._pythonpath(), "DEEPSEEK_OCR_CACHE_DIR": str(cache),
           "TRITON_CACHE_DIR": str(cache / "triton"), "PYTHONUNBUFFERED": "1"}  # fmt: skip
    bp.log("$", variant, scenario)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, timeout=args.timeout)
    if proc.returncode != 0 or not result.exists():
        return {"error": f"exit {proc.returncode}", "wall_s": round(time.perf_counter() - t0, 1)}
    return json.loads(result.read_text())


def table(results: dict) -> str:
    rows = ["| variant | scenario | load s | first s | second s | third s | first ÷ best | launcher builds in "
            "load / first doc | their s in the first doc | init handles in first doc (n, s) | other doc ÷ again |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for variant, by in results.items():
        for scenario, r in by.items():
            if "error" in r:
                rows.append(f"| {variant} | {scenario} | {r['error']} |")
                continue
            hs = r["host_steps"]
            build = {p: hs.get(p, {}).get("launcher C build", {"n": 0, "s": 0}) for p in ("load", "first")}
            init = hs.get("first", {}).get("init handles", {"n": 0, "s": 0})
            rows.append(
                f"| {variant} | {scenario} | {r['load_s']} | {r['first']['wall_s']} | {r['second']['wall_s']} | "
                f"{r['third']['wall_s']} | {r['first_over_best']} | {build['load']['n']} / {build['first']['n']} | "
                f"{build['first']['s']} | {init['n']}, {init['s']} | {r.get('other_over_again', '—')} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiny", action="store_true", help="tiny checkpoint on the CPU (smoke run)")
    p.add_argument("--work", default="/tmp/bench_product")
    p.add_argument("--variants", default=None, help="[bf16,mixed] (fp32 with --tiny)")
    p.add_argument("--pages", type=int, default=16)
    p.add_argument("--new", type=int, default=None, help="tokens per page [512] (16 with --tiny)")
    p.add_argument("--mode", default=None, help="[default] (global with --tiny)")
    p.add_argument("--device", default=None)
    p.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"of {SCENARIOS}; a name ending in "
        "-nocudnn-sdpa runs that scenario with the cuDNN SDPA backend off",
    )
    p.add_argument("--other-pages", type=int, default=0, help="then a document of this many pages, twice")
    p.add_argument("--interval", type=float, default=0.005)
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--out", default=None, help="folder for profile_firstdoc.json")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("--scenario", "--variant", "--model", "--pdf", "--result", "--other-pdf"):
        p.add_argument(name, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.device = args.device or ("cpu" if args.tiny else "cuda")
    args.mode = args.mode or ("global" if args.tiny else "default")
    args.new = args.new or (16 if args.tiny else 512)
    if args.child:
        child(args)
        return
    variants = (args.variants or ("fp32" if args.tiny else "bf16,mixed")).split(",")
    pages = [args.pages, *([args.other_pages] if args.other_pages else [])]
    prep_ns = argparse.Namespace(work=args.work, tiny=args.tiny, variants=variants, pages=pages,
                                 first_pages=[], doc_pages=0)  # fmt: skip
    prep = bp.phase_prepare(prep_ns)
    pdf = prep["pdfs"][str(args.pages)]
    args.other_pdf = prep["pdfs"][str(args.other_pages)] if args.other_pages else None
    results: dict = {}
    for variant in variants:
        model = prep["checkpoints"][variant]
        results[variant] = {s: run_scenario(args, variant, model, pdf, s) for s in args.scenarios.split(",")}
    print(table(results), flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "profile_firstdoc.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
