"""Quantising the real model classes (tiny checkpoint, random weights: fidelity on TRAINED weights is bench/fidelity_tiny.py): AWQ on rendered pages, pre-quantised round trip,
presets, the ``quantize`` command, and a PDF converted end to end with the ``mixed`` preset."""

from __future__ import annotations

import json

import pytest
import torch

from ocr_app.exceptions import ConfigError, ModelLoadError, WeightsNotFoundError
from ocr_app.models.deepseek_ocr2.precision import auto_preset_name
from ocr_app.models.deepseek_ocr2.quant_fidelity import layer_kind_errors
from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
from ocr_app.quant.awq import MIN_EXPERT_TOKENS, expert_inputs, scales_from_stats, search_scales
from ocr_app.quant.checkpoint import RECIPE_FILE, is_quantized_checkpoint, load_quantized, save_quantized
from ocr_app.quant.fidelity import logit_agreement
from ocr_app.quant.modules import Int8Linear, QuantExperts, QuantLinear
from ocr_app.quant.presets import get_preset


def _load_float(path):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def processor(random_checkpoint):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(random_checkpoint)


@pytest.fixture(scope="module")
def calib_batches(processor):
    from ocr_app.quant.calibration import render_calibration_pages

    pages = render_calibration_pages(1, seed=0)
    return ADAPTER.calibration_batches(processor, pages, max_text_tokens=128, max_patches=2)


@pytest.fixture(scope="module")
def calibration(random_checkpoint, calib_batches):
    from ocr_app.quant.calibration import collect_activations

    return collect_activations(_load_float(random_checkpoint), calib_batches, ADAPTER)


@pytest.fixture(scope="module")
def eval_batch(processor):
    from ocr_app.quant.calibration import render_calibration_pages

    pages = render_calibration_pages(1, seed=7)
    return ADAPTER.calibration_batches(processor, pages, max_text_tokens=48, max_patches=2)[0]


@pytest.fixture(scope="module")
def mixed(random_checkpoint, calibration, tmp_path_factory):
    """(in-memory mixed model, recipe, saved directory)."""
    from ocr_app.quant.apply import quantize_model

    model = _load_float(random_checkpoint)
    recipe = quantize_model(model, get_preset("mixed"), calibration, adapter=ADAPTER)
    out = save_quantized(model, recipe, tmp_path_factory.mktemp("tiny-mixed"), random_checkpoint)
    return model, recipe, out


def _logits(model, batch):
    with torch.inference_mode():
        return model(**batch).logits


def test_calibration_pages_are_rendered_documents(calib_batches, calibration):
    from ocr_app.quant.calibration import render_calibration_pages

    [(img, md)] = render_calibration_pages(1, seed=3)
    assert img.size[0] > 1000 and img.getextrema()[0][0] < 50  # a 144-dpi A4 page with dark text
    assert md.startswith("# ") and "<table>" in md
    assert calibration.pages == 1 and len(calibration.layers) == 3
    layer = calibration.layers[1]
    assert layer["attn_in"].shape == layer["mlp_in"].shape and layer["attn_in"].shape[0] == calibration.tokens
    assert layer["topk"].shape == (calibration.tokens, 2) and calibration.layers[0].get("topk") is None
    # the sequence is image + prompt + page text: more tokens than the vision tokens alone
    assert calibration.tokens > int((calib_batches[0]["input_ids"] == 3).sum())


def test_awq_beats_rtn_for_every_layer_kind_with_outliers(random_checkpoint, calibration):
    errors = layer_kind_errors(_load_float(random_checkpoint), calibration)
    kinds = {"dense.qkv", "dense.o_proj", "dense.gate_up", "dense.down", "sparse.qkv", "sparse.o_proj",
             "shared.gate_up", "shared.down", "expert.gate_up", "expert.down"}  # fmt: skip
    assert set(errors) == kinds
    for kind, e in errors.items():
        assert e["awq"] < e["rtn"], (kind, e)


def test_scales_are_powers_of_two_and_alpha_zero_is_rtn():
    torch.manual_seed(0)
    x = torch.randn(256, 64)
    x[:, 3] *= 40
    s = scales_from_stats(x.abs().mean(0), 0.5)
    assert torch.equal(torch.exp2(torch.round(torch.log2(s))), s)
    assert torch.equal(scales_from_stats(x.abs().mean(0), 0.0), torch.ones(64))
    r = search_scales(x, [torch.randn(32, 64)], 4, 64)
    assert r.err_awq <= r.err_rtn and r.alpha > 0  # an outlier channel makes a non-zero α pay off


def test_experts_with_few_tokens_use_pooled_inputs():
    x = torch.randn(100, 8)
    idx = torch.zeros(100, 2, dtype=torch.long)
    idx[:, 1] = 1
    idx[: MIN_EXPERT_TOKENS - 1, 0] = 2  # expert 2 gets 15 tokens: pooled
    rows, pooled = expert_inputs(x, idx, 1)
    assert not pooled and rows.shape[0] == 100
    rows, pooled = expert_inputs(x, idx, 2)
    assert pooled and rows.shape[0] == 100  # the layer's pooled input (sample of up to 512 rows)
    rows, pooled = expert_inputs(x, idx, 5)
    assert pooled


def test_mixed_plan_and_fidelity(random_checkpoint, mixed, eval_batch):
    model, recipe, _ = mixed
    lm = model.model.language_model
    assert isinstance(lm.layers[1].mlp.experts, QuantExperts) and lm.layers[1].mlp.experts.bits == 4
    assert isinstance(lm.layers[0].mlp.down_proj, QuantLinear) and lm.layers[0].mlp.down_proj.bits == 4
    assert isinstance(lm.layers[2].self_attn.o_proj, QuantLinear)
    assert isinstance(lm.layers[1].mlp.shared_experts.up_proj, QuantLinear)
    assert isinstance(model.model.vision_tower.sam_encoder.layers[0].attn.qkv, Int8Linear)
    assert isinstance(model.model.vision_tower.vision_encoder.layers[0].mlp.gate_proj, Int8Linear)
    # bf16/float parts that decide tokens and boxes stay float
    for kept in (model.lm_head, model.model.multi_modal_projector):
        assert type(kept) is torch.nn.Linear
    assert lm.layers[1].mlp.gate.weight.dtype == torch.float32
    assert recipe["awq"] and recipe["calibration"]["pages"] == 1
    assert len([m for m in recipe["modules"].values() if m["kind"] == "experts"]) == 2
    agree = logit_agreement(_logits(_load_float(random_checkpoint), eval_batch), _logits(model, eval_batch))
    assert agree["cosine_mean"] > 0.98 and agree["top1_agreement"] > 0.8, agree


def test_prequantised_round_trip_is_identical(mixed, eval_batch):
    model, recipe, out = mixed
    assert is_quantized_checkpoint(out) and (out / "tokenizer.json").is_file()
    assert json.loads((out / RECIPE_FILE).read_text())["preset"] == "mixed"
    loaded, loaded_recipe = load_quantized(out, "cpu", torch.float32)
    assert loaded_recipe["modules"] == recipe["modules"]
    assert torch.equal(_logits(model, eval_batch), _logits(loaded, eval_batch))
    # no float copy of quantised weights exists in the loaded model
    names = {n for n, _ in loaded.named_parameters()} | {n for n, _ in loaded.named_buffers()}
    assert not any(n.endswith(("experts.gate_up_proj", "experts.down_proj")) for n in names)
    assert loaded.model.language_model.layers[1].mlp.experts.gate_up_qweight.dtype == torch.uint8


def test_int8_preset_round_trip(random_checkpoint, tmp_path, eval_batch):
    from ocr_app.quant.apply import quantize_model

    model = _load_float(random_checkpoint)
    recipe = quantize_model(model, get_preset("int8"), None, adapter=ADAPTER)
    assert not recipe["awq"] and model.model.language_model.layers[1].mlp.experts.bits == 8
    out = save_quantized(model, recipe, tmp_path / "q8", random_checkpoint)
    loaded, _ = load_quantized(out, "cpu", torch.float32)
    assert torch.equal(_logits(model, eval_batch), _logits(loaded, eval_batch))
    agree = logit_agreement(_logits(_load_float(random_checkpoint), eval_batch), _logits(loaded, eval_batch))
    assert agree["cosine_mean"] > 0.999, agree


def test_bad_checkpoints_give_clear_errors(tmp_path, mixed):
    with pytest.raises(WeightsNotFoundError, match="not a quantised checkpoint"):
        load_quantized(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / RECIPE_FILE).write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ModelLoadError, match="not an ocr-app quantisation recipe"):
        load_quantized(bad)
    _, recipe, out = mixed
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in out.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    recipe = dict(recipe, modules=dict(recipe["modules"]))
    name = next(n for n, m in recipe["modules"].items() if m["kind"] == "wq")
    recipe["modules"][name] = dict(
        recipe["modules"][name], out_features=recipe["modules"][name]["out_features"] * 2
    )
    (broken / RECIPE_FILE).write_text(json.dumps(recipe))
    with pytest.raises(ModelLoadError, match="does not match its recipe"):
        load_quantized(broken)


def test_presets_and_auto_rule():
    gib = 1 << 30
    assert auto_preset_name("cpu") == "fp32"
    assert auto_preset_name("cuda", 40 * gib) == "bf16"
    assert auto_preset_name("cuda", 7 * gib) == "int8"
    assert auto_preset_name("cuda", 4 * gib) == "mixed"
    assert auto_preset_name("cuda", 12 * gib, bf16_supported=False) == "fp16"
    assert auto_preset_name("cuda", 4 * gib, bf16_supported=False) == "mixed"
    assert get_preset("bfloat16").name == "bf16" and get_preset("FP16").fp16_guard
    p = get_preset("mixed", bf16_supported=False)
    assert p.float_dtype == "float16" and p.fp16_guard and p.decoder_bits == 4
    with pytest.raises(ConfigError, match="unknown dtype preset 'int4'"):
        get_preset("int4")


def test_fp16_guard_clamps_overflow(random_checkpoint):
    from ocr_app.quant.apply import FP16_LIMIT, guard_fp16

    model = _load_float(random_checkpoint).half()
    layer = model.model.language_model.layers[0]
    handles = guard_fp16(model, [u.prefix for u in ADAPTER.units(model)])
    assert len(handles) >= 3 + 2 + 2  # decoder, vision encoder and SAM layers
    out = layer.mlp.register_forward_hook(lambda m, a, o: o * 1e4)  # force an overflow inside the layer
    x = torch.full((1, 4, 64), 30.0, dtype=torch.float16)
    pos = torch.arange(4)[None]
    emb = model.model.language_model.rotary_emb(x, pos)
    with torch.no_grad():
        y = layer(x, position_embeddings=emb, position_ids=pos)
    out.remove()
    y = y[0] if isinstance(y, tuple) else y
    assert torch.isfinite(y).all() and float(y.detach().abs().max()) <= FP16_LIMIT


def test_quantize_command_writes_a_loadable_checkpoint(random_checkpoint, tmp_path):
    from click.testing import CliRunner

    from ocr_app.models.deepseek_ocr2.quantize_command import quantize_command

    out = tmp_path / "q"
    args = ["--model", str(random_checkpoint), "--out", str(out), "--preset", "int8", "--device", "cpu"]
    res = CliRunner().invoke(quantize_command, args)
    assert res.exit_code == 0, res.output
    assert "Wrote int8 checkpoint" in res.output and is_quantized_checkpoint(out)
    recipe = json.loads((out / RECIPE_FILE).read_text())
    assert recipe["preset"] == "int8" and not recipe["awq"]
    loaded, _ = load_quantized(out)
    assert loaded.model.language_model.layers[2].mlp.experts.bits == 8
    again = CliRunner().invoke(quantize_command, ["--model", str(random_checkpoint), "--out", str(out)])
    assert again.exit_code == 2 and "not empty" in again.output


def test_pdf_converts_end_to_end_with_mixed_preset(mixed, tmp_path):
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines
    from tests.factories import make_pdf

    _, _, qdir = mixed
    settings = Settings(
        model=str(qdir), device="cpu", engine="deepseek", dtype="mixed", idle_unload_s=0, cache_enabled=False
    )
    engines = build_engines(settings)
    pdf = make_pdf(tmp_path / "doc.pdf", ["Quarterly report"])
    try:
        opts = ConvertOptions(mode="global", max_new_tokens=6, formats=frozenset({"md", "json"}))
        [doc] = Converter(engines, settings).convert([pdf], tmp_path / "out", opts)
        eng = engines.get("deepseek")
        while not hasattr(eng, "model"):  # unwrap the result-cache / runtime wrappers
            eng = eng.engine
        model = eng.model
        assert isinstance(model.model.language_model.layers[1].mlp.experts, QuantExperts)
    finally:
        engines.unload_all()
    assert doc.error is None and len(doc.pages) == 1
    assert all(p.error is None for p in doc.pages)
    assert doc.outputs["md"].is_file() and json.loads(doc.outputs["json"].read_text())["pages"]


def test_on_the_fly_backend_quantises_a_float_checkpoint(random_checkpoint):
    from ocr_app.quant.pipeline import PresetBackend

    backend = PresetBackend("mixed", ADAPTER, calib_pages=0)  # round-to-nearest: AWQ is covered above
    assert backend.compute_dtype(torch.device("cpu")) == torch.float32
    model = backend.load_model(random_checkpoint, torch.device("cpu"), torch.float32)
    assert isinstance(model.model.language_model.layers[2].mlp.experts, QuantExperts)
    assert isinstance(model.model.vision_tower.sam_encoder.layers[1].mlp.lin1, Int8Linear)
