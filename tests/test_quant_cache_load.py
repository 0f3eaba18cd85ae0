"""The quantised-weights cache on the load path (issue 14, second load ≤ 1.5× a pre-quantised load): the
source key is hashed once per file version (a sidecar memo, then one ``stat``), any change to a source
file is a miss, and a hit is read by the very loader of a pre-quantised checkpoint, with each step timed.
Everything goes through the engine's real load on the tiny checkpoint."""

from __future__ import annotations

import os
import shutil

import pytest
import torch

import ocr_app.quant.checkpoint as checkpoint
import ocr_app.quant.store as store_mod
from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER

STEPS = ("processor_s", "weights_s", "key_s", "skeleton_s", "read_s", "to_device_s", "assign_s", "total_s")


@pytest.fixture
def source(tiny_checkpoint, tmp_path):
    """A private copy of the tiny checkpoint (its files get rewritten here)."""
    return shutil.copytree(tiny_checkpoint, tmp_path / "src")


@pytest.fixture
def hashed(monkeypatch) -> list[str]:
    """Names of the files whose bytes were hashed for a key (the expensive part of a key)."""
    calls: list[str] = []
    real = store_mod.hash_file

    def counting(path):
        calls.append(path.name)
        return real(path)

    monkeypatch.setattr(store_mod, "hash_file", counting)
    return calls


def _engine(model_dir, cache):
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.settings import Settings

    return DeepSeekOcr2Engine(Settings(model=str(model_dir), device="cpu", dtype="int8", engine="deepseek",
                                       idle_unload_s=0, cache_dir=cache))  # fmt: skip


def _load(eng) -> dict:
    eng.unload()
    eng.load()
    return eng.describe()


def _rewrite_norm(path, delta: float) -> None:
    """Change one source tensor in place: same file size, a new inode-less rewrite."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(path))
    state["model.norm.weight"] = state["model.norm.weight"] + delta
    save_file(state, str(path), metadata={"format": "pt"})


def test_key_hashes_each_file_version_once_and_follows_changes(source, tmp_path, hashed):
    eng = _engine(source, tmp_path / "cache")
    try:
        assert _load(eng)["quant_source"] == "quantised now"
        assert sorted(hashed) == ["config.json", "model.safetensors"]
        hashed.clear()
        info = _load(eng)
        assert info["quant_source"] == "cache" and hashed == []  # one stat per file, no bytes read
        # a same-size change with the modification time put back: still a new version (ctime, inode)
        weights = source / "model.safetensors"
        before = weights.stat()
        _rewrite_norm(weights, 1.0)
        os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = weights.stat()
        assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        assert _load(eng)["quant_source"] == "quantised now"  # a miss: quantised again
        assert hashed == ["model.safetensors"]  # only the changed file was read again
        hashed.clear()
        assert _load(eng)["quant_source"] == "cache" and hashed == []
        entries = store_mod.QuantStore(tmp_path / "cache" / "quantized").entries()
        assert len(entries) == 2  # one per source version
    finally:
        eng.unload()


def test_cache_hit_is_the_pre_quantised_load_with_its_steps_timed(source, tmp_path, hashed, monkeypatch):
    eng = _engine(source, tmp_path / "cache")
    try:
        first = _load(eng)
        assert first["quant_source"] == "quantised now"
        calls: list[str] = []
        real = checkpoint.load_quantized

        def spy(path, *a, **k):
            calls.append(str(path))
            return real(path, *a, **k)

        monkeypatch.setattr(checkpoint, "load_quantized", spy)
        info = _load(eng)
        cached_state = {k: v.clone() for k, v in eng.model.state_dict().items()}
        [entry] = store_mod.QuantStore(tmp_path / "cache" / "quantized").entries()
        assert info["quant_source"] == "cache" and calls == [entry["path"]]
        steps = info["load_breakdown"]
        assert set(STEPS) <= set(steps) and all(steps[k] >= 0 for k in STEPS)
        assert steps["processor_s"] + steps["weights_s"] <= steps["total_s"]
        inner = ("key_s", "skeleton_s", "read_s", "to_device_s", "assign_s")
        assert sum(steps[k] for k in inner) <= steps["weights_s"]
        # the entry loaded as a pre-quantised checkpoint (``--model ENTRY``): same loader, same model
        pre = _engine(entry["path"], tmp_path / "other-cache")
        try:
            info = _load(pre)
            assert info["quant_source"] == "pre-quantised checkpoint" and calls[-1] == entry["path"]
            pre_steps = info["load_breakdown"]
            assert "key_s" not in pre_steps and set(STEPS) - {"key_s"} <= set(pre_steps)
            pre_state = pre.model.state_dict()
            assert pre_state.keys() == cached_state.keys()
            assert all(torch.equal(pre_state[k], cached_state[k]) for k in pre_state)
        finally:
            pre.unload()
    finally:
        eng.unload()


def test_empty_model_skips_init_but_builds_the_same_buffers(tiny_checkpoint):
    """The skeleton a quantised load fills: weights on meta, rotary tables as a normal build makes them."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, DeepseekOcr2ForConditionalGeneration

    config = AutoConfig.from_pretrained(tiny_checkpoint)
    with init_empty_weights(include_buffers=False):
        ref = DeepseekOcr2ForConditionalGeneration(config)
    model = checkpoint.empty_model(config)
    assert all(p.is_meta for p in model.parameters())
    ours, theirs = dict(model.named_buffers()), dict(ref.named_buffers())
    assert ours.keys() == theirs.keys() and ours
    assert all(torch.equal(ours[k], theirs[k]) and ours[k].dtype == theirs[k].dtype for k in ours)


def test_hf_local_dir_download_record_gives_the_key_without_hashing(source, tmp_path, hashed):
    """``hf download --local-dir`` (what the download instructions say) records each file's SHA-256: the
    weights are not read for the key, until a write after the download makes the record stale."""
    import hashlib
    import time

    from huggingface_hub._local_folder import write_download_metadata  # what `hf download` calls

    weights = source / "model.safetensors"
    sha = hashlib.sha256(weights.read_bytes()).hexdigest()
    write_download_metadata(source, "model.safetensors", "0" * 40, sha)
    store = store_mod.QuantStore(tmp_path / "quantized")
    key = store.key(source, "int8", 4, ADAPTER)
    assert hashed == ["config.json"]  # config.json has no record here: hashed (once)
    assert store.source_fingerprint(source)["model.safetensors"] == f"sha256:{sha}"
    # the same SHA-256 a Hugging Face cache snapshot names its blob by: both layouts share one key
    snap = tmp_path / "snapshot"
    (snap / "blobs").mkdir(parents=True)
    shutil.copy(weights, snap / "blobs" / sha)
    (snap / "rev").mkdir()
    (snap / "rev" / "model.safetensors").symlink_to(snap / "blobs" / sha)
    shutil.copy(source / "config.json", snap / "rev" / "config.json")
    assert store.key(snap / "rev", "int8", 4, ADAPTER) == key
    hashed.clear()
    time.sleep(0.05)
    before = weights.stat()
    _rewrite_norm(weights, 1.0)  # written after the download, mtime put back: the ctime still tells
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert store.key(source, "int8", 4, ADAPTER) != key and hashed == ["model.safetensors"]
