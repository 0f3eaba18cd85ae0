"""docs/ARCHITECTURE.md's claim for quantisation, proved: one layer kind's recipe is changed in one place —
here, registered from the test — and the load-then-quantise path, the streaming load behind the engine,
the pre-quantised checkpoint written to the cache and the cache key all follow. The kinds are the
DeepSeek-OCR-2 wing's (``models/deepseek_ocr2/quant_recipes.py``); ``ocr_app.quant`` holds the registry
and names no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER, LAYER_KINDS
from ocr_app.quant import recipes
from ocr_app.quant.modules import Int8Linear, QuantExperts, QuantLinear
from ocr_app.quant.presets import get_preset

DECODER = "model.language_model.layers."


def attention_in_float(job: recipes.LayerJob) -> None:
    """A plausible change: leave attention in the float dtype (the most precision-sensitive part)."""


@pytest.fixture
def float_attention():
    recipes.register_recipe("attention", attention_in_float, version="test")
    yield
    recipes.restore_builtin("attention")


def _kinds(model) -> dict[str, type]:
    layer = model.model.language_model.layers[1]  # a sparse layer
    return {
        "attention": type(layer.self_attn.q_proj),
        "shared_experts": type(layer.mlp.shared_experts.gate_proj),
        "routed_experts": type(layer.mlp.experts),
        "dense_mlp": type(model.model.language_model.layers[0].mlp.gate_proj),
        "vision": type(model.model.vision_tower.sam_encoder.layers[0].attn.qkv),
    }


BUILTIN_INT8 = {
    "attention": QuantLinear,
    "shared_experts": QuantLinear,
    "routed_experts": QuantExperts,
    "dense_mlp": QuantLinear,
    "vision": Int8Linear,
}


def test_the_kinds_and_their_builtin_recipes(tiny_checkpoint):
    from transformers import AutoModelForImageTextToText

    from ocr_app.quant.apply import quantize_model

    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    recipe = quantize_model(model, get_preset("int8"), adapter=ADAPTER)
    assert _kinds(model) == BUILTIN_INT8
    assert set(recipes.recipe_signature(ADAPTER.kinds)) == set(LAYER_KINDS) == set(BUILTIN_INT8)
    with pytest.raises(Exception, match="Unknown layer kind"):
        recipes.register_recipe("lm_head", attention_in_float)
    assert any(".self_attn.q_proj" in name for name in recipe["modules"])


def test_a_layer_kind_recipe_is_one_registration(float_attention, tiny_checkpoint, tmp_path):
    from PIL import Image
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.checkpoint import RECIPE_FILE
    from ocr_app.quant.store import SUBDIR, QuantStore
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.settings import Settings

    expected = {**BUILTIN_INT8, "attention": torch.nn.Linear}
    # load, then quantise
    model = AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()
    recipe = quantize_model(model, get_preset("int8"), adapter=ADAPTER)
    assert _kinds(model) == expected
    assert not [n for n in recipe["modules"] if n.startswith(DECODER) and ".self_attn." in n]
    assert recipe["modules"]["model.language_model.layers.1.mlp.experts"]["bits"] == 8  # others untouched

    # the engine: streamed at load, stored in the quantised-weights cache, then read back from it
    store = QuantStore(tmp_path / "c" / SUBDIR)
    key = store.key(tiny_checkpoint, "int8", 0, ADAPTER)
    settings = Settings(model=str(tiny_checkpoint), device="cpu", dtype="int8", engine="deepseek",
                        idle_unload_s=0, cache_dir=tmp_path / "c", max_new_tokens=3)  # fmt: skip
    page = PageImage(image=Image.new("RGB", (640, 480), "white"), index=0, source="p.png")
    for source in ("quantised now", "cache"):
        eng = DeepSeekOcr2Engine(settings)
        try:
            [out] = eng.predict_batch([PageRequest(page=page, prompt="free", mode="global")])
            assert eng.describe()["quant_source"] == source
            assert _kinds(eng.model) == expected, source
        finally:
            eng.unload()
        assert out.num_tokens == 3 and out.used_prompt == "<image>\nFree OCR."
    [entry] = store.entries()
    stored = json.loads((Path(entry["path"]) / RECIPE_FILE).read_text())
    assert stored["streamed"] and not [
        n for n in stored["modules"] if n.startswith(DECODER) and ".self_attn." in n
    ]
    # the cache key names the recipe: weights quantised by the built-in one are never served for it
    recipes.restore_builtin("attention")
    assert store.key(tiny_checkpoint, "int8", 0, ADAPTER) != key
