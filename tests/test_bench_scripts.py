"""The GPU check script runs the same code on the CPU, so it cannot rot between GPU sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each benchmark script end to end on the CPU: minutes

ROOT = Path(__file__).parents[1]


def test_gpu_engine_check_smoke_on_cpu(tmp_path, tiny_checkpoint):
    out = tmp_path / "check.json"
    cmd = [sys.executable, "bench/gpu_engine_check.py", "--device", "cpu", "--presets", "fp32,mixed",
           "--pages", "3", "--checkpoint", f"fp32={tiny_checkpoint}", "--checkpoint", f"mixed={tiny_checkpoint}",
           "--out", str(out)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    results = {r["preset"]: r for r in json.loads(out.read_text())}
    for preset in ("fp32", "mixed"):
        r = results[preset]
        assert "error" not in r, r
        assert r["same_text"] == [True, True, True] and not r["fell_back"]
        assert r["tokens"] == r["tokens_generate"]
    # the trained model reads its pages exactly in fp32, ending at EOS
    assert results["fp32"]["exact"] == [True, True, True] and results["fp32"]["stop"] == ["end"] * 3


def test_bench_product_smoke_on_cpu(tmp_path):
    """The product benchmark end to end on the tiny checkpoint: every phase runs through the real CLI
    and Converter, pages decode their full token budget (EOS unreachable), and the table is printed."""
    out = tmp_path / "product.json"
    cmd = [sys.executable, "bench/bench_product.py", "--tiny", "--work", str(tmp_path / "w"), "--soak", "3",
           "--cold-runs", "1", "--steady-runs", "1", "--doc-runs", "1", "--out", str(out)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    r = json.loads(out.read_text())["variants"]["fp32"]
    assert r["cold"]["exit"] == 0 and r["cold_first"] == r["cold"]  # one cold run: it is also the first
    assert {"imports", "weight load", "first page done (since process start)"} <= set(r["cold"]["breakdown"])
    warm = r["warm"]
    assert "error" not in warm, warm
    assert [warm["warm_1p"]["tokens"], warm["warm_2p"]["tokens"]] == [8, 16]  # 8 new tokens per page
    assert warm["generate_1p"]["tokens"] == 8
    assert len(warm["soak"]["allocated_mib"]) == 3 and warm["soak"]["warnings"] == 0
    assert warm["decoder"]["slots"] >= 1 and warm["decoder"]["held_mib"] > 0
    assert "| what | fp32 |" in res.stdout and "warm 2 page(s)" in res.stdout
    # the fresh-machine first document (its own process, empty caches) against the same document again
    first = r["first_2p"]
    assert "error" not in first, first
    assert first["first"]["pages"] == 2 and first["first"]["tokens"] == 16
    assert [s["tokens"] for s in first["steady"]] == [16]
    assert first["first_over_steady"] == round(first["first"]["wall_s"] / first["steady"][0]["wall_s"], 3)
    assert set(first["triton_compiled"]) == {"at_load", "first_document", "steady"}
    assert first["kernel_warmup"] == {"skipped": "not a CUDA device (no Triton kernels run)"}  # a no-op here
    assert "Triton binaries compiled at load / in the first document" in res.stdout
    # the CLI document with md,json and with every format: both ran, the faster of the repeats kept
    docs = r["doc_formats"]
    assert docs["md_json"]["exit"] == 0 and docs["default"]["exit"] == 0
    assert all(len(v) == 1 for v in r["doc_formats_runs"].values())
    assert r["cold_spread"]["n"] == 1 and r["cold_spread"]["min"] == r["cold"]["wall_s"]
    assert "first 2-page document" in res.stdout and "md,json / default formats" in res.stdout


def test_bench_decode_smoke_on_cpu(tmp_path):
    """The decode benchmark's own paths on the CPU (tiny widths, full vocabulary): our decoder runs
    through the scheduler as the engine drives it, every page decodes its full budget, and its tokens
    equal ``generate``'s with the same guard."""
    cmd = [sys.executable, "bench/bench_decode.py", "--tiny", "--pages", "2", "--gen-pages", "", "--new", "8",
           "--check", "8", "--profile", "", "--torch-pages", ""]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT), OUT=str(tmp_path))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stdout + res.stderr, (res.stdout + res.stderr)[-3000:]
    r = json.loads((tmp_path / "bench_decode.json").read_text())["bf16"]
    ours = r["ours"]["2"]
    assert ours["pages"] == 2 and ours["new_tokens"] == 8 and ours["decode_tok_s"] > 0
    assert r["check_bf16"]["tokens"] == 8
    assert r["check_bf16"]["torch_eager_vs_generate_first_diff"] is None  # identical to generate


def test_profile_product_smoke_on_cpu(tmp_path):
    """The product-path profiler on the tiny checkpoint: a timeline per thread of a real conversion (the
    converter's thread renders and preprocesses, the decoder's thread runs vision, prefill and decode
    chunks) and the stack sampler."""
    out = tmp_path / "prof.json"
    cmd = [sys.executable, "bench/profile_product.py", "--tiny", "--work", str(tmp_path / "w"), "--pages", "2",
           "--sample", "--out", str(out)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    [base] = json.loads(out.read_text())["runs"]
    assert base["experiments"] == {}
    run = base["2p"]
    assert run["convert"]["pages"] == 2 and run["convert"]["tokens"] == 16
    threads = run["timeline"]["threads"]
    assert threads["MainThread"]["render"]["n"] == 2 and threads["MainThread"]["preprocess"]["n"] == 2
    assert threads["ocr-decode"]["vision"]["items"] == 2 and threads["ocr-decode"]["decode_chunk"]["n"] >= 1
    assert "ocr-decode" in run["samples"]


def test_profile_coldstart_smoke_on_cpu(tmp_path, tiny_checkpoint):
    """The cold-start profiler runs the real CLI twice: an import tree that has torch in it, and stack
    samples whose main thread spent its time inside ``cli.convert``."""
    from factories import make_pdf

    pdf = make_pdf(tmp_path / "one.pdf", ["# Cold start\nOne page of text for the profiler."])
    out = tmp_path / "prof"
    cmd = [sys.executable, "bench/profile_coldstart.py", "--model", str(tiny_checkpoint), "--pdf", str(pdf),
           "--device", "cpu", "--dtype", "fp32", "--mode", "global", "--new", "4", "--out", str(out),
           "--work", str(tmp_path / "w"), "--interval", "0.01"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    r = json.loads((out / "coldprof_fp32.json").read_text())
    assert r["importtime_run"]["exit"] == 0 and r["sampled_run"]["exit"] == 0
    assert "torch" in r["importtime_run"]["tree"]["top_level_by_package_s"]
    assert r["importtime_run"]["cold"].startswith("cold start:")
    top = dict((f, s) for s, f in r["sampled_run"]["main_inclusive"])
    assert top["cli.py:convert"] > 0.5 * r["sampled_run"]["threads_s"]["MainThread"]
    assert (out / "stacks_fp32.folded").stat().st_size > 0


@pytest.mark.parametrize("path", ["runner", "api"])
def test_bench_concurrency_smoke_on_cpu(tmp_path, path):
    """The concurrency benchmark end to end on the tiny checkpoint, through the gradio-free job runner
    (what runs on the GPU image) and through the app's API: every scenario runs, every page decodes its
    full budget, the long job's pages all come back, the table says which path was used."""
    if path == "api":
        pytest.importorskip("gradio_client")
    out = tmp_path / "conc.json"
    cmd = [sys.executable, "bench/bench_concurrency.py", "--tiny", "--work", str(tmp_path / "w"), "--long", "6",
           "--late-after", "0.2", "--path", path, "--out", str(out),
           *(["--prompt-client"] if path == "api" else [])]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    m = json.loads(out.read_text())["main"]
    assert "error" not in m, m
    assert m["path"] == path and m["jobs_at_once"] == 16  # the graph decoder serves several jobs
    assert (m["one_doc"]["pages"], m["one_doc"]["tokens"]) == (4, 24)  # 6 tokens per page, EOS unreachable
    assert (m["clients_x_pages"]["clients"], m["clients_x_pages"]["pages"]) == (2, 4)
    assert (m["single_pages"]["clients"], m["single_pages"]["pages"]) == (4, 4)
    for r in (m["one_doc"], m["clients_x_pages"], m["single_pages"]):
        assert r["page_errors"] == 0 and r["client_errors"] == []
    for key, cap in (("late", 16), ("late_uncapped", 0)):  # the shipped small-request batch, then off
        late = m[key]
        assert late["small_request_batch"] == cap
        assert late["short"] == {"pages": 1, "tokens": 6, "errors": 0} and late["long"]["pages"] == 6
        assert late["ratio_vs_idle"] == round(late["short_latency_s"] / m["idle_1p"]["wall_s"], 3)
    assert f"path: {path}" in res.stdout and "1 page into a 6-page job (small-request batch 16)" in res.stdout
    if path == "api":  # each job's requests as its client saw them, in their order, the wall at its result
        for key in ("one_doc", "clients_x_pages", "single_pages", "idle_1p"):
            marks = m[key]["timeline"]["client"]
            order = ["sent", "upload_sent", "upload_back", "queue/join_sent", "queue/join_back", "got"]
            assert [k for k in marks if k in order] == order, marks
            assert (
                marks["got"] <= m[key]["wall_s"] + 0.001 and marks["got"] >= m[key]["timeline"]["last_end_s"]
            )
