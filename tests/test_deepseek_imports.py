"""What the DeepSeek load imports (issue 26, cold start): transformers' model machinery without
``scipy.optimize`` (its object-detection losses pull it in; no OCR path uses it). Fresh interpreters,
so what an earlier test imported does not count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("scipy")  # without scipy installed there is nothing to keep out
pytest.importorskip("transformers")

LOAD = r"""
import json, sys
import torch
from ocr_app.models.deepseek_ocr2.loading import load_model
model, processor = load_model(sys.argv[1], torch.device("cpu"), torch.float32, vision_fused=False)
import transformers.utils as tu
print(json.dumps({"scipy": sorted(m for m in sys.modules if m.split(".")[0] == "scipy"),
                  "model": type(model).__name__, "scipy_check": tu.is_scipy_available()}))
"""

PLAIN = r"""
import json, sys
import transformers.modeling_utils
print(json.dumps({"optimize": "scipy.optimize" in sys.modules}))
"""


def _run(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_deepseek_load_does_not_import_scipy(tiny_checkpoint):
    got = _run(LOAD, str(tiny_checkpoint))
    assert got["model"] == "DeepseekOcr2ForConditionalGeneration"
    assert got["scipy"] == []  # not even the package
    assert got["scipy_check"] is True  # transformers' check is put back: only the losses' import skipped it


def test_without_it_transformers_imports_scipy_optimize():
    """The reference: plain ``transformers.modeling_utils`` loads ``scipy.optimize`` (what was saved)."""
    assert _run(PLAIN)["optimize"] is True
