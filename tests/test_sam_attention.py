"""The sliced SAM attention gives the same vision features as transformers' layer, at any budget."""

from __future__ import annotations

import pytest
import torch

from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model
from ocr_app.models.deepseek_ocr2.sam_attention import attn_slice_bytes, bound_sam_attention


@pytest.fixture(scope="module")
def tiny_model():
    model = random_model(config_dict("tiny"), torch.device("cpu"), torch.float32, seed=0)
    with torch.no_grad():  # non-zero relative-position tables, so the bias matters
        for m in model.modules():
            if hasattr(m, "rel_pos_h"):
                m.rel_pos_h.normal_(0, 0.5)
                m.rel_pos_w.normal_(0, 0.5)
    return model


@pytest.mark.parametrize("side", [768, 1024])
def test_sliced_attention_equals_transformers_layer(tiny_model, side):
    tower = tiny_model.model.vision_tower
    x = torch.randn(3, 3, side, side, generator=torch.Generator().manual_seed(side))
    with torch.inference_mode():
        bound_sam_attention(tiny_model, 0)
        ref = tower(x).last_hidden_state
        n = bound_sam_attention(tiny_model, 1)
        assert n == 2 and attn_slice_bytes(tiny_model) == 1 << 20
        global_attn = tower.sam_encoder.layers[1].attn
        tokens = (side // 16) ** 2
        for budget in (1 << 30, 3 * tokens * tokens * 4, 1):  # one slice, 3 pairs per slice, 1 pair per slice
            global_attn._ocr_app_budget_bytes = budget
            out = tower(x).last_hidden_state
            assert torch.equal(out, ref), budget
        bound_sam_attention(tiny_model, 0)
        assert attn_slice_bytes(tiny_model) is None
        assert torch.equal(tower(x).last_hidden_state, ref)


def test_rel_tables_are_built_once_per_size(tiny_model, monkeypatch):
    attn = tiny_model.model.vision_tower.sam_encoder.layers[1].attn
    bound_sam_attention(tiny_model, 256)
    calls = []
    original = attn.get_rel_pos
    monkeypatch.setattr(attn, "get_rel_pos", lambda *a: calls.append(a[:2]) or original(*a))
    x = torch.randn(2, 3, 768, 768)
    y = torch.randn(1, 3, 1024, 1024)
    with torch.inference_mode():
        for _ in range(2):  # a page alternates its tiles (768 px) and its global view (1024 px)
            tiny_model.model.vision_tower(x)
            tiny_model.model.vision_tower(y)
    # height and width tables, once per size (one kept entry was rebuilt at every switch of size)
    assert calls == [(48, 48), (48, 48), (64, 64), (64, 64)]


def test_loader_applies_the_setting(tiny_checkpoint):
    from ocr_app.models.deepseek_ocr2.loading import load_model

    model, _ = load_model(str(tiny_checkpoint), torch.device("cpu"), torch.float32, vision_attn_mb=64)
    assert attn_slice_bytes(model) == 64 << 20
    model, _ = load_model(str(tiny_checkpoint), torch.device("cpu"), torch.float32, vision_attn_mb=0)
    assert attn_slice_bytes(model) is None


@pytest.mark.parametrize("side", [768, 1024])
def test_bias_folded_into_the_dot_product_matches_transformers_layer(tiny_model, side):
    """The CUDA path (relative-position bias folded into q·k, no tokens² bias) gives transformers'
    features up to float rounding; forced on here so the CPU runs the same code."""
    tower = tiny_model.model.vision_tower
    x = torch.randn(2, 3, side, side, generator=torch.Generator().manual_seed(side + 1))
    attns = [m for m in tiny_model.modules() if hasattr(m, "rel_pos_h")]
    with torch.inference_mode():
        bound_sam_attention(tiny_model, 0)
        ref = tower(x).last_hidden_state
        bound_sam_attention(tiny_model, 256)
        for m in attns:
            m._ocr_app_augmented = True
        try:
            out = tower(x).last_hidden_state
        finally:
            for m in attns:
                del m._ocr_app_augmented
            bound_sam_attention(tiny_model, 0)
    assert not torch.equal(out, torch.zeros_like(out))
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


def test_native_tower_is_bounded_the_same_way(tiny_model):
    """``bound_sam_attention`` finds the native SAM attention layers too (by class name) and the native
    tower, sliced at any budget, gives transformers' features."""
    from ocr_app.models.deepseek_ocr2.native_config import VisionConfig
    from ocr_app.models.deepseek_ocr2.native_vision import VisionTower

    tower = tiny_model.model.vision_tower
    native = VisionTower(VisionConfig(config_dict("tiny")["vision_config"])).eval()
    native.load_state_dict(tower.state_dict())
    holder = torch.nn.Module()
    holder.tower = native
    x = torch.randn(2, 3, 768, 768, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        bound_sam_attention(tiny_model, 0)
        ref = tower(x).last_hidden_state
        assert bound_sam_attention(holder, 1) == 2 and attn_slice_bytes(holder) == 1 << 20
        sliced = native(x)
        bound_sam_attention(holder, 0)
        assert attn_slice_bytes(holder) is None
        plain = native(x)
    torch.testing.assert_close(sliced, ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(plain, ref, rtol=1e-5, atol=1e-5)
