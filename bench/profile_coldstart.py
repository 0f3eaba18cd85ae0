"""Where a cold ``ocr-app convert`` spends its wall time: an import tree and a whole-process stack profile.

Why: the cold-start breakdown of ``convert -v`` says *how long* imports, weight load and the first page
took, not *what* inside them; a fix needs the latter (which import pulls what, which call of the load
reads or waits). This runs the real CLI in fresh processes, twice per checkpoint:

* ``-X importtime``: the cumulative import time of every module, the top entries printed;
* a stack sampler (every ``--interval`` s, all threads, whole stacks, each sample weighted by the wall
  time since the previous one): inclusive seconds per function of the main thread, and the folded
  stacks (flame-graph input) written to ``--out``.

usage (GPU):  python bench/profile_coldstart.py --model DIR --pdf one_page.pdf --dtype bf16 --out DIR
CPU smoke:    python bench/profile_coldstart.py --model TINY --pdf one_page.pdf --device cpu --dtype fp32 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def convert_argv(args: argparse.Namespace, out: Path) -> list[str]:
    return ["convert", args.pdf, "-o", str(out), "--model", args.model, "--device", args.device,
            "--dtype", args.dtype, "--engine", "deepseek", "--mode", args.mode,
            "--max-new-tokens", str(args.new), "--no-cache", "-q", "-v", *args.extra]  # fmt: skip


# --- import tree ------------------------------------------------------------------------------------
def import_tree(stderr: str, top: int = 40) -> dict:
    """``-X importtime`` lines → the slowest modules by cumulative time (seconds), with their depth."""
    rows = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            rows.append((int(m[2]) / 1e6, int(m[1]) / 1e6, (len(m[3]) - 1) // 2, m[4]))
    by_top: dict[str, float] = defaultdict(float)
    for cum, _self, depth, name in rows:
        if depth == 0:
            by_top[name.split(".")[0]] += cum
    return {
        "modules": len(rows),
        "self_total_s": round(sum(r[1] for r in rows), 3),
        "top_level_by_package_s": {
            k: round(v, 3) for k, v in sorted(by_top.items(), key=lambda kv: -kv[1])[:15]
        },
        "slowest": [(round(c, 3), d, n) for c, _s, d, n in sorted(rows, key=lambda r: -r[0])[:top]],
    }


# --- stack sampler (runs inside the profiled process) -------------------------------------------------
class StackSampler(threading.Thread):
    """Every ``interval`` s, the whole stack of every other thread; each sample weighs the wall time
    since the previous one, so a call that holds the GIL for long still gets its time."""

    def __init__(self, interval: float) -> None:
        super().__init__(daemon=True, name="stack-sampler")
        self.interval = interval
        self.folded: dict[tuple[str, str], float] = defaultdict(float)
        self.stop = threading.Event()

    def run(self) -> None:
        last = time.perf_counter()
        while not self.stop.wait(self.interval):
            now = time.perf_counter()
            dt, last = now - last, now
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == self.ident:
                    continue
                parts = []
                while frame is not None:
                    code = frame.f_code
                    parts.append(f"{Path(code.co_filename).name}:{code.co_name}")
                    frame = frame.f_back
                self.folded[(names.get(ident, str(ident)), ";".join(reversed(parts)))] += dt

    def dump(self, path: str) -> None:
        """Stop sampling (the dict must not change while it is written), then write folded stacks."""
        self.stop.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join()
        with open(path, "w") as f:
            for (thread, stack), secs in self.folded.items():
                f.write(f"{thread};{stack} {secs:.6f}\n")


def child(argv: list[str], folded_path: str, interval: float) -> None:
    """Run the CLI here with the sampler on; dump the stacks when the CLI ends the process."""
    import runpy

    sampler = StackSampler(interval)
    sampler.start()
    real_exit = os._exit

    def dump_then_exit(code: int) -> None:
        sampler.dump(folded_path)
        real_exit(code)

    os._exit = dump_then_exit
    sys.argv = ["ocr_app.cli", *argv]
    try:
        runpy.run_module("ocr_app.cli", run_name="__main__", alter_sys=True)
    finally:
        sampler.dump(folded_path)


def inclusive(folded_path: Path, thread: str = "MainThread", top: int = 60) -> list[tuple[float, str]]:
    """Inclusive seconds per function (counted once per stack) for ``thread``."""
    incl: dict[str, float] = defaultdict(float)
    for line in folded_path.read_text().splitlines():
        stack, _, secs = line.rpartition(" ")
        frames = stack.split(";")
        if frames[0] != thread:
            continue
        for fn in set(frames[1:]):
            incl[fn] += float(secs)
    return [(round(s, 3), fn) for fn, s in sorted(incl.items(), key=lambda kv: -kv[1])[:top]]


def threads_total(folded_path: Path) -> dict[str, float]:
    tot: dict[str, float] = defaultdict(float)
    for line in folded_path.read_text().splitlines():
        stack, _, secs = line.rpartition(" ")
        tot[stack.split(";")[0]] += float(secs)
    return {k: round(v, 3) for k, v in tot.items()}


def cold_line(stderr: str) -> str:
    return next((ln for ln in stderr.splitlines() if ln.startswith("cold start:")), "")


def profile(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res: dict = {"label": args.label, "dtype": args.dtype}
    work = Path(args.work)
    # 1. import tree of the whole run (lazy imports inside the load included)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "ocr_app.cli", *convert_argv(args, work / "o1")],
                          env=_env(), capture_output=True, text=True, timeout=args.timeout)  # fmt: skip
    res["importtime_run"] = {"wall_s": round(time.perf_counter() - t0, 2), "exit": proc.returncode,
                             "cold": cold_line(proc.stderr), "tree": import_tree(proc.stderr)}  # fmt: skip
    (out / f"importtime_{args.label}.txt").write_text(proc.stderr)
    # 2. stack samples of the whole run
    folded = out / f"stacks_{args.label}.folded"
    t0 = time.perf_counter()
    cmd = [sys.executable, __file__, "--child", str(folded), "--interval", str(args.interval), "--",
           *convert_argv(args, work / "o2")]  # fmt: skip
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=args.timeout)
    res["sampled_run"] = {"wall_s": round(time.perf_counter() - t0, 2), "exit": proc.returncode,
                          "cold": cold_line(proc.stderr)}  # fmt: skip
    if proc.returncode != 0:
        res["sampled_run"]["stderr"] = proc.stderr[-2000:]
    if folded.exists():
        res["sampled_run"]["threads_s"] = threads_total(folded)
        res["sampled_run"]["main_inclusive"] = inclusive(folded)
    return res


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        folded, interval = argv[1], float(argv[3])
        child(argv[argv.index("--") + 1 :], folded, interval)
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--pdf", required=True)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--device", default="cuda")
    p.add_argument("--mode", default="default")
    p.add_argument("--new", type=int, default=32)
    p.add_argument("--label", default=None)
    p.add_argument("--work", default="/tmp/profile_coldstart")
    p.add_argument("--out", required=True, help="folder for the JSON, import log and folded stacks")
    p.add_argument("--interval", type=float, default=0.005)
    p.add_argument("--timeout", type=int, default=300)
    p.add_argument("--extra", action="append", default=[], help="more convert arguments")
    args = p.parse_args(argv)
    args.label = args.label or args.dtype
    res = profile(args)
    Path(args.out, f"coldprof_{args.label}.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items()}, indent=1)[:6000])


if __name__ == "__main__":
    main()
