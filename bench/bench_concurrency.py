"""Concurrency benchmark: many people's pages through one decoder (issue 27, items 1, 2 and 7).

One process holds the engine stack (full-size random-weight checkpoint as ``bench_product.py`` builds
it, every page decodes exactly ``--new`` tokens, warm, result cache and vision cache off) and the
app's job runner. Two paths, the first one available is used and reported:

* ``api``: the real app (``ui.app.build_app`` + ``ui.launch``) on a loopback port, one
  ``gradio_client.Client`` per client calling ``/convert`` (needs gradio, which the GPU image lacks),
  each in a process of its own as a user's browser is (``api_client.py``; until round 5 they were
  threads of the server's process and took its GIL); each client connects (fetches the app's config)
  before the clock starts, as a user's open tab has;
* ``runner``: the same job runner without gradio — the app's per-engine slots (``ui.slots.JobSlots``,
  ``ui.jobs.wait_turn``) and its conversion stream (``ui.jobs.stream_conversion``) — from threads.

Measured (one warm process):

* one 16-page document alone, then 4 clients × a 4-page document at once and 16 clients × 1 page at
  once: wall until the last client has its result; ratios against the 16-page document (bar ≤ 1.25);
* a 1-page request on the idle engine, then the same request ``--late-after`` s (3) into a
  ``--long``-page (256) job: its latency against the idle one (bar ≤ 2) and the long job's pages
  finished meanwhile (it keeps progressing) — with the shipped ``decode_small_request_batch`` (the long
  job is not refilled beyond that batch while the small request decodes) and again with it off;
* peak allocated GPU memory of each scenario over the warm baseline, and per concurrent user;
* in a fresh process capped to ``--budget-gib`` (4) with the ``mixed`` checkpoint: 4 users × 4 pages
  at once, counting out-of-memory events (bar: 0) and failed pages.

usage (H200, < 10 min):  python bench/bench_concurrency.py --work /tmp/bench_conc --out conc.json
CPU smoke run (CI):      python bench/bench_concurrency.py --tiny --work DIR [--path runner]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_product as bp  # noqa: E402  (the checkpoint, PDFs and EOS rule are that bench's)

MIB = 1024**2
GIB = 1024**3
IDLE_REPEATS = 5  # 1-page requests through the app, and through Converter, taking turns


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


def gradio_available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("gradio", "gradio_client"))


# --- the stack and the two ways to send a job --------------------------------------------------------
def make_settings(args: argparse.Namespace, model: str, dtype: str, **extra):
    from ocr_app.settings import load_settings

    return load_settings(
        model=model, device=args.device, dtype=dtype, engine="deepseek", decoder="graph", idle_unload_s=0,
        cache_enabled=False, result_cache_mb=0, mode=args.mode, max_new_tokens=args.new, dpi=72 if args.tiny else 144,
        port=0, **extra,
    )  # fmt: skip


class Runner:
    """The app's job runner without gradio: per-engine slots, then the conversion stream."""

    path = "runner"
    formats = "json"  # what each job writes (the runner: the JSON the result needs; the app: its defaults)

    def __init__(self, settings, work: Path) -> None:
        from ocr_app.convert import Converter
        from ocr_app.stack import build_engines
        from ocr_app.ui.slots import JobSlots

        self.settings = settings
        self.engines = build_engines(settings)
        self.converter = Converter(self.engines, settings)
        jobs = self.engines.get("deepseek").capabilities().max_concurrent_jobs
        self.slots = JobSlots({"deepseek": jobs})
        self.work = work
        self._n = 0
        self._lock = threading.Lock()
        self.pages_done = count_pages(self.converter)

    def connect(self) -> Any:
        """What a client holds before it sends a job (the app: a connected ``gradio_client``)."""
        return None

    def disconnect(self, conn: Any) -> None:
        """Let go of what ``connect`` gave."""

    def convert(self, pdf: str, conn: Any = None) -> dict:
        from ocr_app.convert import ConvertOptions
        from ocr_app.ui.jobs import JobOutcome, stream_conversion, wait_turn

        with self._lock:
            self._n += 1
            out = self.work / f"job{self._n}"
        cancel = threading.Event()
        options = ConvertOptions.from_settings(self.settings, formats=frozenset({"json"}), use_cache=False)
        ticket = _admitted(wait_turn(self.slots, "deepseek", cancel, 1.0))
        try:
            outcome = next(
                i
                for i in stream_conversion(self.converter, [pdf], out, options, cancel)
                if isinstance(i, JobOutcome)
            )
        finally:
            self.slots.leave(ticket)
        return _summary(outcome.documents[0].to_dict())

    def direct(self, pdf: str, formats: frozenset[str] | None) -> float:
        """Seconds of the same conversion through ``Converter`` alone, in this process (``formats``:
        None = the app's default formats): what the app's own cost is measured against."""
        from ocr_app.convert import ConvertOptions

        with self._lock:
            self._n += 1
            out = self.work / f"direct{self._n}"
        kw = {"formats": formats} if formats else {}
        options = ConvertOptions.from_settings(self.settings, use_cache=False, **kw)
        t0 = time.perf_counter()
        [doc] = self.converter.convert([Path(pdf)], out, options)
        dt = time.perf_counter() - t0
        if doc.error:
            raise RuntimeError(doc.error)
        return round(dt, 3)

    def served(self) -> int:
        """Pages finished so far, by every job of this process."""
        return self.pages_done[0]

    def close(self) -> None:
        self.engines.unload_all()


class Api(Runner):
    """The real app on a loopback port; one gradio_client per client."""

    path = "api"
    formats = "default_formats"

    def __init__(self, settings, work: Path, prompt: bool = False) -> None:
        from ocr_app.convert import Converter
        from ocr_app.stack import build_engines
        from ocr_app.ui.app import build_app
        from ocr_app.ui.launch import launch
        from ocr_app.ui.temp_dirs import use_process_temp

        settings = settings.model_copy(update={"port": _free_port()})
        self.settings = settings
        self.engines = build_engines(settings)
        self.converter = Converter(self.engines, settings)
        # as ``ocr-app ui`` does: the outputs inside gradio's folder, served in place (until round 5 the
        # bench wrote them elsewhere, and gradio copied and hashed every download of every result)
        self.temp = use_process_temp(work / "app")
        self.prompt = prompt  # clients take each server message as it comes (``api_client.serve``)
        self.demo = build_app(self.converter, settings, work_dir=self.temp.work_dir)
        self.url = launch(self.demo, settings, prevent_thread_lock=True, quiet=True).local_url
        self.work, self._n, self._lock = work, 0, threading.Lock()
        self.slots = self.demo.ocr_app.slots
        self.pages_done = count_pages(self.converter)
        stamp_results_sent(self.demo._queue)

    def connect(self) -> Any:
        """A connected client (it fetched the app's config), as a user's open browser tab is before they
        press Convert: its set-up is the client's, not the job's. In a process of its own, as a browser
        is (``api_client``): client threads in this process took the server's GIL."""
        from api_client import ClientProcess

        return ClientProcess(self.url, prompt=self.prompt)

    def disconnect(self, conn: Any) -> None:
        conn.close()

    def convert(self, pdf: str, conn: Any = None) -> dict:
        own = conn is None
        conn = self.connect() if own else conn
        try:
            doc = conn.convert(pdf)
            CLIENT_MARKS.append(conn.marks)
            return _summary(doc)
        finally:
            if own:
                conn.close()

    def close(self) -> None:
        self.demo.close()
        self.engines.unload_all()
        self.demo.ocr_app_dirs.close()
        self.temp.remove()


def count_pages(converter) -> list[int]:
    """Instrumentation: a counter of the pages ``converter`` finished (its per-page step, wrapped), and
    a timeline of when conversions start and end and when each page is finished (``TIMELINE``)."""
    done = [0]
    lock = threading.Lock()
    finish = converter._finish_page
    convert = converter.convert

    def counted(*a, **kw):
        finish(*a, **kw)
        with lock:
            done[0] += 1
            TIMELINE.append(("page", time.perf_counter()))

    def timed(*a, **kw):
        with lock:
            TIMELINE.append(("start", time.perf_counter()))
        try:
            return convert(*a, **kw)
        finally:
            with lock:
                TIMELINE.append(("end", time.perf_counter()))

    converter._finish_page = counted
    converter.convert = timed
    return done


TIMELINE: list[tuple[str, float]] = []  # (what, perf_counter) of every conversion start/end and page
CLIENT_MARKS: list[dict[str, float]] = []  # each api job's request marks, from its client (perf_counter)


def stamp_results_sent(queue) -> None:
    """Instrumentation: when gradio's queue hands each job's result to its event stream (``sent``)."""
    send = queue.send_message

    def stamped(event, message):
        send(event, message)
        if getattr(message, "msg", None) == "process_completed":
            TIMELINE.append(("sent", time.perf_counter()))

    queue.send_message = stamped


def timeline_since(t0: float) -> dict:
    """When, after ``t0``, the last conversion started, the first and last page was finished and the
    last conversion ended (s): where a scenario's wall time goes (admission, decode, finishing)."""
    marks: dict[str, list[float]] = {}
    for what, t in list(TIMELINE):
        if t >= t0:
            marks.setdefault(what, []).append(round(t - t0, 3))
    out = {
        "last_start_s": max(marks.get("start", [0.0])),
        "first_page_s": min(marks.get("page", [0.0])),
        "last_page_s": max(marks.get("page", [0.0])),
        "last_end_s": max(marks.get("end", [0.0])),
    }
    if "sent" in marks:  # the app: when the last result left for its client
        out["last_sent_s"] = max(marks["sent"])
    client: dict[str, float] = {}  # the app: the last client's upload, queue join and result, since t0
    for job in list(CLIENT_MARKS):
        if job.get("got", 0.0) >= t0:  # (a client may send a hair before t0 is read: its offsets < 0)
            for what, t in job.items():
                client[what] = max(client.get(what, -1.0), round(t - t0, 3))
    if client:
        out["client"] = dict(sorted(client.items(), key=lambda kv: kv[1]))
    return out


def _admitted(turn):
    """Run ``wait_turn`` to its end (the app shows each ``Waiting``; a benchmark client only waits)."""
    while True:
        try:
            next(turn)
        except StopIteration as done:
            return done.value


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _summary(doc: dict) -> dict:
    pages = doc.get("pages") or []
    return {
        "pages": len(pages),
        "tokens": sum(int(p.get("num_tokens") or 0) for p in pages),
        "errors": sum(1 for p in pages if p.get("error")) + (1 if doc.get("error") else 0),
    }


# --- scenarios ---------------------------------------------------------------------------------------
def _peak_reset() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _peak_mib() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize()
    return round(torch.cuda.max_memory_allocated() / MIB, 1)


def together(runner: Runner, pdfs: list[str]) -> dict:
    """Every pdf from its own client thread at once: wall until the last result, peak memory.

    The wall ends when the last client has its result, not when its client process has exited (until
    round 9 it did: a ``gradio_client`` process's exit, ~0.1 s, counted in every app figure, while a
    user's tab stays open after its result)."""
    results: list[dict | None] = [None] * len(pdfs)
    ends: list[float] = []
    errors: list[str] = []
    start = threading.Barrier(len(pdfs) + 1)

    def client(i: int) -> None:
        conn = None
        try:
            conn = runner.connect()
        finally:
            start.wait()
        try:
            results[i] = runner.convert(pdfs[i], conn)
            ends.append(time.perf_counter())
        except Exception as exc:  # reported in the table, not hidden
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
        finally:
            if conn is not None:
                runner.disconnect(conn)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(pdfs))]
    for t in threads:
        t.start()
    _peak_reset()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = (max(ends) if len(ends) == len(pdfs) else time.perf_counter()) - t0
    done = [r for r in results if r]
    return {
        "clients": len(pdfs),
        "wall_s": round(wall, 3),
        "timeline": timeline_since(t0),
        "pages": sum(r["pages"] for r in done),
        "tokens": sum(r["tokens"] for r in done),
        "page_errors": sum(r["errors"] for r in done),
        "client_errors": errors,
        "peak_allocated_mib": _peak_mib(),
    }


def late_request(runner: Runner, long_pdf: str, short_pdf: str, after_s: float) -> dict:
    """A 1-page request ``after_s`` into a long job: its latency, and the long job's pages meanwhile."""
    long_result: dict = {}
    long_conn = runner.connect()
    long_job = threading.Thread(target=lambda: long_result.update(runner.convert(long_pdf, long_conn)))
    t_long = time.perf_counter()
    long_job.start()
    time.sleep(after_s)  # a benchmark: the wall clock is what is measured
    served_before = runner.served()
    conn = runner.connect()
    t0 = time.perf_counter()
    short = runner.convert(short_pdf, conn)
    latency = time.perf_counter() - t0
    served_during = runner.served() - served_before - short["pages"]
    long_job.join()
    runner.disconnect(conn)
    runner.disconnect(long_conn)
    return {
        "short_latency_s": round(latency, 3),
        "short": short,
        "long_pages_done_meanwhile": served_during,
        "long_wall_s": round(time.perf_counter() - t_long, 3),
        "long": long_result,
    }


def phase_main(args: argparse.Namespace) -> dict:
    pdfs = json.loads(args.pdfs)
    use_api = args.path == "api" or (args.path == "auto" and gradio_available())
    work = Path(args.work) / "runs"
    settings = make_settings(args, args.model, args.variant)
    runner = Api(settings, work, prompt=args.prompt_client) if use_api else Runner(settings, work)
    res: dict = {"path": runner.path, "variant": args.variant, "new_tokens": args.new}
    if use_api:
        res["client"] = (
            "browser-like (messages as they come, one TLS set-up)"
            if args.prompt_client
            else "gradio_client's 50 ms poll"
        )
    try:
        res["jobs_at_once"] = runner.slots.limit("deepseek")
        runner.convert(pdfs["1"])  # load, capture, compile
        runner.convert(pdfs[str(args.doc)])  # the shapes of the largest batch
        _peak_reset()
        base = _peak_mib()
        res["one_doc"] = one = _sampled(args, res, "one_doc", lambda: together(runner, [pdfs[str(args.doc)]]))
        res["clients_x_pages"] = four = together(runner, [pdfs[str(args.doc // args.clients)]] * args.clients)
        res["single_pages"] = many = together(runner, [pdfs["1"]] * args.doc)
        if args.repeat:  # the same again: what the first run paid for batch compositions it met first
            res["clients_x_pages_again"] = together(
                runner, [pdfs[str(args.doc // args.clients)]] * args.clients
            )
            res["single_pages_again"] = together(runner, [pdfs["1"]] * args.doc)
        for key in ("clients_x_pages", "single_pages", "clients_x_pages_again", "single_pages_again"):
            if key in res:
                res[key]["ratio_vs_one_doc"] = round(res[key]["wall_s"] / one["wall_s"], 3)
        # one page is ~1 s and varies by ±10 % run to run: the app and Converter take turns, 5 times each,
        # and the medians are compared (the 16-page runs: twice each, the faster)
        idle_runs, direct_runs = [], {}
        for _ in range(IDLE_REPEATS):
            idle_runs.append(_sampled(args, res, "idle_1p", lambda: together(runner, [pdfs["1"]])))
            for name, fmts in (("default_formats", None), ("json", frozenset({"json"}))):
                direct_runs.setdefault(f"1p_{name}", []).append(runner.direct(pdfs["1"], fmts))
        res["idle_1p"] = idle = sorted(idle_runs, key=lambda r: r["wall_s"])[len(idle_runs) // 2]
        idle["runs_s"] = sorted(r["wall_s"] for r in idle_runs)
        res["direct_runs"] = {k: sorted(v) for k, v in direct_runs.items()}
        res["direct"] = direct = {k: sorted(v)[len(v) // 2] for k, v in direct_runs.items()}
        for name, fmts in (("default_formats", None), ("json", frozenset({"json"}))):
            direct[f"{args.doc}p_{name}"] = min(runner.direct(pdfs[str(args.doc)], fmts) for _ in range(2))
        for key, n in (("one_doc", args.doc), ("idle_1p", 1)):
            res[key]["over_converter_same_formats"] = round(
                res[key]["wall_s"] / direct[f"{n}p_{runner.formats}"], 3
            )
            res[key]["over_converter_json"] = round(res[key]["wall_s"] / direct[f"{n}p_json"], 3)
        sched = _scheduler(runner)
        for key, cap in (("late", sched.small_request_batch), ("late_uncapped", 0)):
            shipped, sched.small_request_batch = sched.small_request_batch, cap
            res[key] = late = late_request(runner, pdfs[str(args.long)], pdfs["1"], args.late_after)
            sched.small_request_batch = shipped
            late["small_request_batch"] = cap
            late["ratio_vs_idle"] = round(late["short_latency_s"] / idle["wall_s"], 3)
        res["memory"] = _memory(base, {"1": idle, str(args.clients): four, str(args.doc): many})
    except Exception as exc:  # the table shows what failed
        res["error"] = f"{type(exc).__name__}: {exc}"[:400]
    finally:
        runner.close()
    return res


def _sampled(args: argparse.Namespace, res: dict, key: str, fn):
    """``fn()``, with every thread's stack sampled meanwhile when ``--sample`` is given (the app's own
    threads beside the decoder's: where a job through the app spends what ``Converter`` does not)."""
    if not args.sample:
        return fn()
    from bench.profile_firstdoc import Sampler

    sampler = Sampler()
    sampler.start()
    try:
        return fn()
    finally:
        sampler.stop()
        res.setdefault("stacks", {})[key] = sampler.report(top=30, all_threads=True)


def _scheduler(runner: Runner):
    """The DeepSeek engine's decode scheduler under the runtime wrappers (built by the warm-up)."""
    engine = runner.engines.get("deepseek")
    for _ in range(10):
        if getattr(engine, "_decoder", None) is not None:
            return engine._decoder
        engine = getattr(engine, "_engine", None) or getattr(engine, "engine", None)
    raise RuntimeError("no decode scheduler found under the deepseek engine")


def _memory(base: float | None, by_users: dict[str, dict]) -> dict:
    if base is None:
        return {"note": "no GPU: not measured"}
    out: dict = {"baseline_mib": base}
    for users, r in by_users.items():
        peak = r.get("peak_allocated_mib")
        out[f"{users}_users_peak_over_baseline_mib"] = None if peak is None else round(peak - base, 1)
    one = out.get("1_users_peak_over_baseline_mib")
    for users in by_users:
        extra = out.get(f"{users}_users_peak_over_baseline_mib")
        if users != "1" and extra is not None and one is not None:
            out[f"per_user_mib_at_{users}"] = round((extra - one) / (int(users) - 1), 1)
    return out


def phase_budget(args: argparse.Namespace) -> dict:
    """4 users × 4 pages at once in a process capped to ``--budget-gib`` (the ``mixed`` checkpoint)."""
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, args.budget_gib * GIB / total))
    pdfs = json.loads(args.pdfs)
    ooms = bp.Counter("out of memory")
    logging.getLogger("ocr_app.runtime.oom").addHandler(ooms)
    settings = make_settings(args, args.model, args.variant, gpu_memory_gib=args.budget_gib)
    runner = Runner(settings, Path(args.work) / "budget")
    res: dict = {"variant": args.variant, "budget_gib": args.budget_gib}
    try:
        runner.convert(pdfs["1"])
        res["four_users"] = together(runner, [pdfs["4"]] * 4)
    except Exception as exc:
        res["error"] = f"{type(exc).__name__}: {exc}"[:400]
    res["oom_events"] = ooms.count
    res["decoder"] = runner.engines.describe()["engines"]["deepseek"].get("decoder")
    runner.close()
    return res


# --- orchestration ------------------------------------------------------------------------------------
def run_phase(args: argparse.Namespace, phase: str, extra: list[str]) -> dict:
    return bp.run_phase(args, phase, extra, script=__file__, common=common_argv)


def common_argv(args: argparse.Namespace) -> list[str]:
    out = ["--work", args.work, "--device", args.device, "--mode", args.mode, "--new", str(args.new),
           "--doc", str(args.doc), "--clients", str(args.clients), "--long", str(args.long),
           "--late-after", str(args.late_after), "--path", args.path,
           *(["--prompt-client"] if args.prompt_client else []),
           *(["--repeat"] if args.repeat else []), *(["--sample"] if args.sample else [])]  # fmt: skip
    return out + (["--tiny"] if args.tiny else [])


def phase_prepare(args: argparse.Namespace) -> dict:
    """The checkpoints and PDFs, built by ``bench_product``'s own step (in its own process)."""
    sizes = sorted({1, 4, args.doc, args.doc // args.clients, args.long})
    prep = argparse.Namespace(
        tiny=args.tiny, work=args.work, variants=["mixed"] if args.budget_gib else [], pages=sizes,
        first_pages=[], doc_pages=0,
    )  # fmt: skip
    return bp.phase_prepare(prep)


def orchestrate(args: argparse.Namespace) -> dict:
    Path(args.work).mkdir(parents=True, exist_ok=True)
    prepared = run_phase(args, "prepare", ["--budget-gib", str(args.budget_gib)])
    if "error" in prepared:
        raise SystemExit(f"prepare failed: {prepared['error']}")
    pdfs = json.dumps(prepared["pdfs"])
    ckpts = prepared["checkpoints"]
    main_variant = "fp32" if args.tiny else "bf16"
    out: dict = {"gradio_available": gradio_available()}
    out["main"] = run_phase(
        args, "main", ["--variant", main_variant, "--model", ckpts[main_variant], "--pdfs", pdfs]
    )
    if args.tiny or not args.budget_gib or "mixed" not in ckpts:
        out["budget"] = {"skipped": "no GPU" if args.tiny else "no budget asked"}
    else:
        extra = [
            "--variant",
            "mixed",
            "--model",
            ckpts["mixed"],
            "--pdfs",
            pdfs,
            "--budget-gib",
            str(args.budget_gib),
        ]
        out["budget"] = run_phase(args, "budget", extra)
    return out


def table(results: dict) -> str:
    m, b = results.get("main", {}), results.get("budget", {})
    if "error" in m:
        return f"main phase failed: {m['error']}"

    def row(what: str, value: object, bar: str = "") -> str:
        return f"| {what} | {value} | {bar} |"

    lines = [f"path: {m.get('path')} (gradio importable: {results.get('gradio_available')}; client: "
             f"{m.get('client', '-')}); jobs at once: "
             f"{m.get('jobs_at_once')}; {m.get('new_tokens')} tokens per page", "",
             "| what | measured | bar |", "|---|---|---|"]  # fmt: skip
    one, four, many = m["one_doc"], m["clients_x_pages"], m["single_pages"]
    lines.append(row(f"one {one['pages']}-page document", f"{one['wall_s']} s"))
    if "over_converter_same_formats" in one:
        for key in ("one_doc", "idle_1p"):
            r = m[key]
            lines.append(row(f"  {r['pages']} page(s): this path ÷ Converter, same formats / ÷ Converter, json",
                             f"{r['over_converter_same_formats']}× / {r['over_converter_json']}×", "≤ 1.10×"))  # fmt: skip
    for key in ("clients_x_pages_again", "single_pages_again"):
        if key in m:
            lines.append(row(f"  again: {key.removesuffix('_again')}", f"{m[key]['wall_s']} s ({m[key]['ratio_vs_one_doc']}×)"))  # fmt: skip
    lines.append(row(f"{four['clients']} clients × {four['pages'] // max(1, four['clients'])} pages",
                     f"{four['wall_s']} s ({four['ratio_vs_one_doc']}×)", "≤ 1.25×"))  # fmt: skip
    lines.append(
        row(
            f"{many['clients']} clients × 1 page",
            f"{many['wall_s']} s ({many['ratio_vs_one_doc']}×)",
            "≤ 1.25×",
        )
    )
    idle_runs = m["idle_1p"].get("runs_s") or [m["idle_1p"]["wall_s"]]
    lines.append(
        row("1 page, idle (median; min-max)", f"{m['idle_1p']['wall_s']} s ({idle_runs[0]}-{idle_runs[-1]})")
    )
    for key in ("one_doc", "clients_x_pages", "single_pages", "idle_1p"):
        tl = m[key].get("timeline")
        if tl:
            lines.append(row(f"  timeline of {key}: last job started / first, last page done / last job ended / last result sent, s",
                             f"{tl['last_start_s']} / {tl['first_page_s']}, {tl['last_page_s']} / {tl['last_end_s']}"
                             f" / {tl.get('last_sent_s', '-')} (wall {m[key]['wall_s']})"))  # fmt: skip
            if tl.get("client"):
                lines.append(row(f"  the last client of {key}: its requests sent / answered, s",
                                 ", ".join(f"{k} {v}" for k, v in tl["client"].items())))  # fmt: skip
    for key in ("late", "late_uncapped"):
        late = m[key]
        lines.append(row(f"1 page into a {late['long'].get('pages')}-page job (small-request batch "
                         f"{late['small_request_batch'] or 'off'})",
                         f"{late['short_latency_s']} s ({late['ratio_vs_idle']}×); long job: "
                         f"{late['long_pages_done_meanwhile']} pages meanwhile, {late['long_wall_s']} s",
                         "≤ 2×"))  # fmt: skip
    mem = m.get("memory", {})
    lines.append(row("peak memory over warm baseline (MiB), per user", json.dumps(mem)))
    errors = sum(r.get("page_errors", 0) for r in (one, four, many)) + sum(
        len(r["client_errors"]) for r in (one, four, many)
    )
    lines.append(row("failed pages / client errors", errors, "0"))
    if "four_users" in b:
        fu = b["four_users"]
        lines.append(row(f"4 users × 4 pages, {b['budget_gib']} GiB {b['variant']}",
                         f"{fu['wall_s']} s, OOM events {b['oom_events']}, failed pages {fu['page_errors']}", "0 OOM"))  # fmt: skip
    else:
        lines.append(row("budget run", json.dumps(b)))
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="tiny checkpoint on the CPU (smoke run)")
    p.add_argument("--work", default="/tmp/bench_concurrency", help="checkpoints, PDFs and outputs")
    p.add_argument("--device", default=None, help="default: cuda (cpu with --tiny)")
    p.add_argument("--mode", default=None, help="resolution mode [default] (global with --tiny)")
    p.add_argument("--new", type=int, default=None, help="tokens per page [512] (6 with --tiny)")
    p.add_argument("--doc", type=int, default=None, help="pages of the one-document run [16] (4 with --tiny)")
    p.add_argument("--clients", type=int, default=None, help="clients splitting that document [4] (2)")
    p.add_argument("--long", type=int, default=None, help="pages of the long job [256] (12 with --tiny)")
    p.add_argument("--late-after", type=float, default=None, help="s into the long job [3] (0.5 --tiny)")
    p.add_argument("--budget-gib", type=float, default=4.0, help="budget of the 4-user run (0: skip)")
    p.add_argument("--sample", action="store_true", help="sample stacks of the one-document and 1-page runs")
    p.add_argument("--repeat", action="store_true", help="run the two concurrent scenarios twice")
    p.add_argument("--path", choices=("auto", "api", "runner"), default="auto", help="how clients send jobs")
    p.add_argument(
        "--prompt-client",
        action="store_true",
        help="api path: clients as a browser is: each server message taken as it comes (gradio_client "
        "polls every 50 ms), one TLS set-up (gradio_client builds one per request, ~20 ms each)",
    )
    p.add_argument("--timeout", type=int, default=560, help="seconds per phase")
    p.add_argument("--out", default=None, help="write all results as JSON here")
    p.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    p.add_argument("--result", default=None, help=argparse.SUPPRESS)
    p.add_argument("--variant", default=None, help=argparse.SUPPRESS)
    p.add_argument("--model", default=None, help=argparse.SUPPRESS)
    p.add_argument("--pdfs", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.device = a.device or ("cpu" if a.tiny else "cuda")
    a.mode = a.mode or ("global" if a.tiny else "default")
    bp.MODE[0] = a.mode
    a.new = a.new or (6 if a.tiny else 512)
    a.doc = a.doc or (4 if a.tiny else 16)
    a.clients = a.clients or (2 if a.tiny else 4)
    a.long = a.long or (12 if a.tiny else 256)
    a.late_after = a.late_after if a.late_after is not None else (0.5 if a.tiny else 3.0)
    return a


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.phase:
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        fn = {"prepare": phase_prepare, "main": phase_main, "budget": phase_budget}[args.phase]
        Path(args.result).write_text(json.dumps(fn(args)))
        return
    results = orchestrate(args)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
