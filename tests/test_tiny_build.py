"""How the trained tiny model is built: the same bytes on every machine, in seconds, from pinned weights
that are used only while they still read the pages; the cache key; training that misses its margin.

Why it matters: the model was trained on each machine, and float32 Adam with early stopping amplified
the rounding of the CPU's instruction set (AVX2 stopped at 439 steps, AVX-512 at 641, other weights),
so a fidelity test passed on one machine and failed on another.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ocr_app.exceptions import ModelLoadError
from ocr_app.models.deepseek_ocr2 import tiny_train
from ocr_app.models.deepseek_ocr2.tiny_train import PINNED, Recipe

ROOT = Path(__file__).resolve().parents[1]

_STATE_HASH = (
    "import hashlib\n"
    "from ocr_app.models.deepseek_ocr2.realtok import load_tokenizer\n"
    "from ocr_app.models.deepseek_ocr2.tiny import new_model\n"
    "h = hashlib.sha256()\n"
    "for name, t in sorted(new_model(load_tokenizer(), 0).state_dict().items()):\n"
    "    h.update(name.encode()); h.update(t.contiguous().numpy().tobytes())\n"
    "print(h.hexdigest())\n"
)


def test_the_random_weights_are_the_same_bytes_without_simd(build_cache):
    """torch's CPU ``normal_`` gave other weights without AVX2 for the same seed; the frozen vision tower
    the pinned decoder was trained on must be the same everywhere."""
    env = dict(os.environ, DEEPSEEK_OCR_CACHE_DIR=str(build_cache), PYTHONPATH=str(ROOT))
    hashes = {}
    for capability in ("default", "avx2"):
        proc = subprocess.run([sys.executable, "-c", _STATE_HASH], capture_output=True, text=True, cwd=ROOT,
                              env={**env, "ATEN_CPU_CAPABILITY": capability}, timeout=600)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        hashes[capability] = proc.stdout.strip()
    assert hashes["default"] == hashes["avx2"] and len(hashes["default"]) == 64


def test_the_test_suite_model_comes_from_the_pinned_weights(trained_checkpoint):
    info = json.loads((trained_checkpoint / "tiny_model.json").read_text())
    assert info["stats"]["source"] == "pinned"
    assert info["stats"]["min_margin"] >= Recipe().margin - tiny_train.PIN_SLACK
    assert PINNED.stat().st_size < 1_000_000  # the trained tensors only: the rest comes from the seed


def test_the_cache_key_covers_recipe_pinned_weights_and_cpu(monkeypatch, tmp_path):
    base = tiny_train._recipe_hash(Recipe())
    assert tiny_train._recipe_hash(Recipe()) == base  # stable
    assert tiny_train._recipe_hash(Recipe(seed=1)) != base
    assert tiny_train._recipe_hash(Recipe(margin=2.5)) != base
    capability = tiny_train.cpu_capability()
    monkeypatch.setattr(tiny_train, "cpu_capability", lambda: "NOT-" + capability)
    assert tiny_train._recipe_hash(Recipe()) != base  # weights trained here differ per instruction set
    monkeypatch.undo()
    other = tmp_path / "pinned.safetensors"
    data = bytearray(PINNED.read_bytes())
    data[-1] ^= 1
    other.write_bytes(bytes(data))
    monkeypatch.setattr(tiny_train, "PINNED", other)
    assert tiny_train._recipe_hash(Recipe()) != base
    monkeypatch.setattr(tiny_train, "PINNED", tmp_path / "missing.safetensors")
    assert tiny_train._recipe_hash(Recipe()) != base
    assert tiny_train.default_model_dir().name == tiny_train._recipe_hash(Recipe())


@pytest.fixture(scope="module")
def setup(build_cache):
    """A fresh model, its pages' features and used ids (what both pinning and training start from)."""
    old = os.environ.get("DEEPSEEK_OCR_CACHE_DIR")
    os.environ["DEEPSEEK_OCR_CACHE_DIR"] = str(build_cache)
    torch.set_num_threads(1)
    try:
        return tiny_train._setup(Recipe())
    finally:
        os.environ["DEEPSEEK_OCR_CACHE_DIR"] = old or ""
        if old is None:
            del os.environ["DEEPSEEK_OCR_CACHE_DIR"]


def test_pinned_weights_are_used_only_while_they_read_the_pages(setup, caplog):
    s = copy.copy(setup)
    s.model = copy.deepcopy(setup.model)
    assert tiny_train.reading_margin(s) < 0  # random decoder: reads nothing
    assert tiny_train._load_pinned(s, PINNED)
    margin = tiny_train.reading_margin(s)
    assert margin >= Recipe().margin - tiny_train.PIN_SLACK
    # one transcript token's lm_head row lost: teacher-forced, that token no longer wins
    with torch.no_grad():
        s.model.lm_head.weight[setup.used[-1]] = 0
    assert tiny_train.reading_margin(s) < margin - 1
    # other transcripts (other ids) or another architecture: the pinned file is not used at all
    caplog.set_level("WARNING", logger="ocr_app.models.deepseek_ocr2.tiny_train")
    assert not tiny_train._load_pinned(dataclasses.replace(s, used=s.used[:-1]), PINNED)
    assert "pinned tiny weights are for other transcripts or tokenizer ids" in caplog.text
    assert not tiny_train._load_pinned(s, Path("/nonexistent/pinned.safetensors"))


def test_training_that_misses_the_margin_is_a_clear_error(setup):
    s = copy.copy(setup)
    s.model = copy.deepcopy(setup.model)
    with pytest.raises(
        ModelLoadError, match=r"did not learn its pages: margin -?\d+\.\d\d < 3.0 after 2 steps"
    ):
        tiny_train._train_decoder(s, Recipe(max_steps=2))
    assert not any(p.requires_grad for p in s.model.parameters())  # left as it was found: frozen


def test_the_pinned_file_was_made_by_the_current_recipe():
    """Change ``Recipe`` and the pinned weights must be made again (``python -m
    ocr_app.models.deepseek_ocr2.tiny_train``): they record the recipe and the margin they reached."""
    from safetensors import safe_open

    with safe_open(str(PINNED), "pt") as f:
        meta = json.loads(f.metadata()["pinned"])
        assert f.get_tensor("used_ids").numel() == meta["stats"]["used_ids"]
    assert meta["recipe"] == Recipe().__dict__ and meta["stats"]["min_margin"] >= Recipe().margin
