"""The GPU check script runs the same code on the CPU, so it cannot rot between GPU sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
