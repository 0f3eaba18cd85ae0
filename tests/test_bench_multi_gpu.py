"""The multi-GPU benchmark runs its own code on the CPU (two engines on "cpu"), so it cannot rot
between GPU sessions: same registry, device pool, converter and checks as on two H200s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_bench_multi_gpu_tiny_smoke(tmp_path, tiny_checkpoint):
    out = tmp_path / "mg.json"
    cmd = [sys.executable, "bench/bench_multi_gpu.py", "--tiny", "--pages", "2", "--new-tokens", "3",
           "--checkpoint", str(tiny_checkpoint), "--out", str(out)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(out.read_text())
    one, two = data["one_gpu"], data["two_gpus"]
    for r in (one, two):
        assert r["pages"] == 2 and r["failed_pages"] == 0 and r["all_pages_fixed_tokens"]
        assert r["tokens"] == 6
    assert one["pages_per_device"] == {"cpu": 2}
    assert set(two["pages_per_device"]) == {"cpu#0", "cpu#1"} and sum(two["pages_per_device"].values()) == 2
    assert data["ratio"] == round(two["pages_per_s"] / one["pages_per_s"], 3)
    assert "2 GPUs / 1 GPU throughput:" in res.stdout
