"""Memory estimate: the formula's terms, checked against the tiny model's real config and the GUIDE's
measured full-size peaks (7.98 GiB at 1 page, 12.8 GiB at 4 pages, 6.33 GiB of bf16 weights)."""

from __future__ import annotations

import pytest

from ocr_app.models.deepseek_ocr2.configs import config_dict
from ocr_app.models.deepseek_ocr2.estimate import (
    dtype_bytes,
    estimate_page_bytes,
    kv_bytes_per_token,
    max_batch_for,
    model_weight_bytes,
    tiles_for,
)

GIB = 1024**3
FULL = config_dict("full")  # GUIDE §1
WEIGHTS = 6.33 * GIB


def test_kv_per_token_formula():
    # 2 · layers · kv_heads · head_dim · bytes = 2 · 12 · 10 · 128 · 2
    assert kv_bytes_per_token(FULL, "bf16") == 61_440
    assert kv_bytes_per_token(FULL, "fp32") == 122_880


def test_tiles_from_vision_tokens():
    assert [tiles_for(n) for n in (257, 545, 1121)] == [0, 2, 6]


@pytest.mark.parametrize(("pages", "measured_gib"), [(1, 7.98), (4, 12.8)])
def test_estimate_matches_measured_peaks_within_5_percent(pages, measured_gib):
    est = estimate_page_bytes(FULL, vision_tokens=1121, prompt_tokens=12, max_new_tokens=256, batch=pages)
    peak = est.peak_with_weights(int(WEIGHTS)) / GIB
    assert peak == pytest.approx(measured_gib, rel=0.05)
    assert est.vision_bytes > est.language_bytes  # the SAM bias term dominates, as measured


def test_terms_scale_as_documented():
    one = estimate_page_bytes(FULL, 1121, 12, 1000)
    two = estimate_page_bytes(FULL, 1121, 12, 1000, batch=2)
    assert two.kv_bytes == 2 * one.kv_bytes
    assert one.kv_bytes == (1121 + 12 + 1000) * 61_440
    glob = estimate_page_bytes(FULL, 257, 12, 1000)
    assert glob.tiles_per_page == 0 and glob.vision_bytes < one.vision_bytes
    d = one.to_dict()
    assert d["total_bytes"] == max(d["vision_bytes"] + d["features_bytes"], d["language_bytes"])


def test_max_batch_for_fits_the_budget():
    free = 12 * GIB
    n = max_batch_for(free, FULL, 1121, 12, 2048, safety=1.0)
    assert n >= 1
    assert estimate_page_bytes(FULL, 1121, 12, 2048, batch=n).total_bytes <= free
    assert estimate_page_bytes(FULL, 1121, 12, 2048, batch=n + 1).total_bytes > free
    assert max_batch_for(10 * 1024**2, FULL, 1121, 12, 2048) == 0


def test_dtype_names_and_errors():
    import torch

    assert dtype_bytes(torch.bfloat16) == 2 and dtype_bytes("fp32") == 4 and dtype_bytes("int8") == 1
    with pytest.raises(ValueError, match="unknown dtype"):
        dtype_bytes("fp12")
    with pytest.raises(ValueError):
        estimate_page_bytes(FULL, 257, 12, 10, batch=0)


def test_reads_a_real_config_and_counts_weights(tiny_checkpoint):
    from transformers import AutoConfig, AutoModelForImageTextToText

    cfg = AutoConfig.from_pretrained(tiny_checkpoint)
    tc = cfg.text_config
    head_dim = tc.hidden_size // tc.num_attention_heads
    assert kv_bytes_per_token(cfg, "fp32") == 2 * tc.num_hidden_layers * tc.num_key_value_heads * head_dim * 4
    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint)
    n = sum(p.numel() for p in model.parameters())
    assert model_weight_bytes(model) >= n * 4  # fp32 parameters, plus buffers


def test_sliced_sam_attention_bounds_the_vision_term():
    """With the sliced SAM attention only one bias slice exists: the vision term stops growing with tiles
    × pages at the rate of the full bias, and the budget is respected."""
    budget = 256 * 1024**2
    full = estimate_page_bytes(FULL, 1121, 12, 256, batch=4)
    sliced = estimate_page_bytes(FULL, 1121, 12, 256, batch=4, attn_slice_bytes=budget)
    assert sliced.vision_bytes < full.vision_bytes / 3
    one = estimate_page_bytes(FULL, 1121, 12, 256, attn_slice_bytes=budget)
    # 4 pages add only activations and per-axis terms, not 4 × the bias
    assert sliced.vision_bytes - one.vision_bytes < 3 * (full.vision_bytes / 4)
    assert max_batch_for(8 * GIB, FULL, 1121, 12, 2048, attn_slice_bytes=budget) > max_batch_for(
        8 * GIB, FULL, 1121, 12, 2048
    )


@pytest.mark.parametrize(("pages", "measured_gib"), [(1, 7.09), (4, 7.863)])
def test_sliced_estimate_matches_measured_peaks(pages, measured_gib):
    """H200, bf16, sliced SAM attention at 256 MiB (bench_runtime.py, docs/PERFORMANCE.md)."""
    est = estimate_page_bytes(FULL, 1121, 13, 16, batch=pages, attn_slice_bytes=256 * 1024**2)
    peak = est.peak_with_weights(int(6.337 * GIB)) / GIB
    assert peak == pytest.approx(measured_gib, rel=0.05)
    assert peak >= measured_gib * 0.99  # errs on the safe side for batch sizing
