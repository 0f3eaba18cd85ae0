"""The vision-pass benchmark's own paths on the CPU (``--tiny``: tiny widths, small views, the fused
kernels in Triton's interpreter): both variants time the SAM and Qwen2 encoders, their features agree,
the profile lists ops, and the fresh-process first-call check runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_bench_vision_smoke_on_cpu(tmp_path):
    pytest.importorskip("triton", reason="triton is not installed: the fused kernels cannot run here")
    out = tmp_path / "v.json"
    cmd = [sys.executable, "bench/bench_vision.py", "--tiny", "--pages", "1", "--iters", "1", "--warmup", "0",
           "--profile-pages", "1", "--top", "5", "--cold", "--out", str(out)]  # fmt: skip
    res = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                         text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    r = json.loads(out.read_text())
    assert set(r["variants"]) == {"unfused", "fused"}
    for v in r["variants"].values():
        row = v["pages"]["1"]
        assert row["ms"] > 0 and row["sam_ms"] > 0 and row["qwen2_ms"] > 0
        assert row["sam_ms"] + row["qwen2_ms"] <= row["ms"] * 1.05
        assert v["first_call_s"] > 0 and len(v["top_kernels"]) == 5
    diff = r["diff"]["fused_vs_unfused_1"]
    assert diff["ref_max_abs"] > 0.1 and diff["max_abs"] < 1e-4  # fp32: the same features up to rounding
    for run in ("empty_cache", "warm_cache"):
        assert r["cold"][run]["first_s"] > 0, r["cold"]
    assert "| fused | 1 |" in res.stdout and "top kernels, fused:" in res.stdout
