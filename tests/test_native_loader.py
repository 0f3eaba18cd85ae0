"""The native DeepSeek-OCR-2 (``native_*`` modules) against transformers' classes, the reference.

Same config attributes, the same state dict from both checkpoint layouts, the same vision features and
logits (fp32, CPU), the same processor outputs (token ids, decoded text, pixel tensors in every resolution
mode), the same pages read through the product engine, a pre-quantised checkpoint loaded natively with
the same logits, and a native load + conversion in a fresh process that imports neither transformers
nor torchvision.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ocr_app.models.deepseek_ocr2.modes import apply_max_side, resolve_mode
from ocr_app.models.deepseek_ocr2.native_weights import NativeLoad

ROOT = Path(__file__).resolve().parents[1]


def _hf_model(path, dtype=torch.float32):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(path, dtype=dtype).eval()


@pytest.fixture(scope="module")
def hf(trained_checkpoint):
    return _hf_model(trained_checkpoint)


@pytest.fixture(scope="module")
def native(trained_checkpoint):
    return NativeLoad(trained_checkpoint, "cpu", torch.float32).result()


@pytest.fixture(scope="module")
def processors(trained_checkpoint):
    from transformers import AutoProcessor

    from ocr_app.models.deepseek_ocr2.native_processor import load_processor

    return AutoProcessor.from_pretrained(trained_checkpoint), load_processor(trained_checkpoint)


@pytest.fixture(scope="module")
def page_images():
    from ocr_app.models.deepseek_ocr2.tiny_pages import render_pages

    return render_pages()


# --- config and weights ----------------------------------------------------------------------------
READ_ATTRS = {
    "": ["image_token_id", "tie_word_embeddings"],
    "text_config": [
        "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "bos_token_id",
        "eos_token_id", "pad_token_id", "moe_intermediate_size", "n_routed_experts", "num_experts",
        "n_shared_experts", "num_experts_per_tok", "routed_scaling_factor", "topk_method", "mlp_layer_types",
        "rope_parameters", "attention_bias", "mlp_bias", "hidden_act",
    ],
    "vision_config.sam_config": [
        "hidden_size", "num_attention_heads", "num_hidden_layers", "mlp_dim", "window_size",
        "global_attn_indexes", "output_channels", "downsample_channels", "image_size", "patch_size", "scale",
        "layer_norm_eps", "use_abs_pos", "use_rel_pos",
    ],
    "vision_config.encoder_config": [
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "rms_norm_eps", "rope_parameters", "max_position_embeddings",
    ],
}  # fmt: skip


def _section(config, path: str):
    for part in filter(None, path.split(".")):
        config = getattr(config, part)
    return config


@pytest.mark.parametrize("source", ["tiny", "hub"])
def test_config_reads_like_transformers(trained_checkpoint, tmp_path, source):
    """Every attribute the project reads, for the tiny checkpoint's config.json and for the full-size
    transformers-format config (derived from the hub's with transformers' conversion; fields left out use
    the defaults)."""
    from transformers import AutoConfig

    from ocr_app.models.deepseek_ocr2.configs import config_dict
    from ocr_app.models.deepseek_ocr2.native_config import read_config

    if source == "hub":
        raw = {"model_type": "deepseek_ocr2", "image_token_id": 128815, **config_dict("full")}
        (tmp_path / "config.json").write_text(json.dumps(raw))
        folder = tmp_path
    else:
        folder = trained_checkpoint
    ours, theirs = read_config(folder), AutoConfig.from_pretrained(folder)
    for path, names in READ_ATTRS.items():
        for name in names:
            want = getattr(_section(theirs, path), name)
            got = getattr(_section(ours, path), name)
            assert (list(got) if isinstance(got, tuple) else got) == (
                list(want) if isinstance(want, tuple) else want
            ), (path, name)
    assert (
        json.loads(ours.to_json_string(use_diff=False))["text_config"]["hidden_size"]
        == ours.text_config.hidden_size
    )


def test_other_model_types_are_refused_with_the_checkpoint_to_use(tmp_path):
    from ocr_app.exceptions import ModelLoadError
    from ocr_app.models.deepseek_ocr2.native_config import read_config

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deepseek_vl_v2"}))
    with pytest.raises(ModelLoadError, match="deepseek-community/DeepSeek-OCR-2"):
        read_config(tmp_path)


def _same_state(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k


def test_state_dict_equals_from_pretrained_in_both_layouts(trained_checkpoint, hf, native, tmp_path):
    """The hub's original names (= what ``save_pretrained`` writes: per-expert tensors, ``sam_model``…)
    and module names (a state dict saved as it is: fused experts) give transformers' state dict."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(trained_checkpoint / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert any(".experts.0.gate_proj." in k for k in keys) and any("sam_model.blocks" in k for k in keys)
    _same_state(native.state_dict(), hf.state_dict())

    module_names = tmp_path / "module-names"
    module_names.mkdir()
    for f in trained_checkpoint.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy(f, module_names / f.name)
    save_file(
        {k: v.contiguous() for k, v in hf.state_dict().items()}, str(module_names / "model.safetensors")
    )
    _same_state(NativeLoad(module_names, "cpu", torch.float32).result().state_dict(), hf.state_dict())


def test_bf16_load_keeps_the_router_in_float32(trained_checkpoint):
    """An fp32 checkpoint read in bf16: cast on the device like from_pretrained, the router stays fp32."""
    ours = NativeLoad(trained_checkpoint, "cpu", torch.bfloat16)
    model = ours.result()
    _same_state(model.state_dict(), _hf_model(trained_checkpoint, torch.bfloat16).state_dict())
    assert model.model.language_model.layers[1].mlp.gate.weight.dtype == torch.float32
    assert ours.timings["cast_tensors"] > 0


def test_missing_tensors_fail_with_their_names(trained_checkpoint, tmp_path):
    from safetensors import safe_open
    from safetensors.torch import save_file

    from ocr_app.exceptions import ModelLoadError

    for f in trained_checkpoint.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy(f, tmp_path / f.name)
    with safe_open(str(trained_checkpoint / "model.safetensors"), "pt") as f:
        kept = {k: f.get_tensor(k) for k in f.keys() if ".experts.3.up_proj" not in k}  # noqa: SIM118
    save_file(kept, str(tmp_path / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"mlp\.experts\.gate_up_proj"):
        NativeLoad(tmp_path, "cpu", torch.float32)


# --- forward ---------------------------------------------------------------------------------------
def _inputs(processors, page_images, mode: str):
    """The first tiny page read in ``mode``, with the grounding prompt (transformers' processor)."""
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES

    hf_proc, _ = processors
    i = next(n for n, p in enumerate(PAGES) if p.mode == mode.split(":")[0])
    spec = resolve_mode(mode, page_images[i])
    return hf_proc(images=page_images[i], text="<image>\n<|grounding|>Convert the document to markdown.",
                   return_tensors="pt", **spec.images_kwargs)  # fmt: skip


@pytest.fixture(scope="module")
def tiled_inputs(processors, page_images):
    """A page with two 768 px tiles (a 768 px view: SAM's position table is resized) and its global view."""
    enc = _inputs(processors, page_images, "default:2")
    assert enc["pixel_values_local"].shape[0] == 2
    return enc


def test_vision_features_and_logits_equal_transformers(hf, native, tiled_inputs):
    enc = tiled_inputs
    pixels = (enc["pixel_values"], enc["pixel_values_local"], enc["num_local_patches"])
    with torch.inference_mode():
        theirs = hf.get_image_features(*pixels)
        [w], [g] = theirs.pooler_output, native.get_image_features(*pixels).pooler_output
        assert (
            g.shape == w.shape and int(enc["input_ids"].eq(native.config.image_token_id).sum()) == g.shape[0]
        )
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
        # the language model on the same features (the vision pass is compared above)
        feats = {"image": theirs}
        want = hf(input_ids=enc["input_ids"], mm_encoder_outputs=feats).logits
        got = native(input_ids=enc["input_ids"], mm_encoder_outputs=feats).logits
        got_from_pixels = native(**enc, logits_to_keep=1).logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(got_from_pixels[:, -1], want[:, -1], rtol=1e-5, atol=1e-4)
    assert got.abs().max() > 1  # trained: far from a zero output


def test_cached_prefill_then_steps_equal_one_forward(native, tiled_inputs):
    """What the graph decoder relies on: the K/V cache of a prefill continues exactly."""
    enc = tiled_inputs
    ids = torch.cat([enc["input_ids"], torch.tensor([[300, 301, 302]])], 1)
    with torch.inference_mode():
        feats = native.get_image_features(
            enc["pixel_values"], enc["pixel_values_local"], enc["num_local_patches"]
        )
        full = native(input_ids=ids, mm_encoder_outputs={"image": feats}).logits
        n = enc["input_ids"].shape[1]
        out = native(
            input_ids=ids[:, :n], mm_encoder_outputs={"image": feats}, use_cache=True, logits_to_keep=1
        )
        steps = [out.logits[:, -1]]
        for t in range(n, ids.shape[1]):
            out = native(input_ids=ids[:, t : t + 1], cache=out.cache, use_cache=True)
            steps.append(out.logits[:, -1])
    assert out.cache.get_seq_length() == ids.shape[1]
    torch.testing.assert_close(torch.stack(steps[:-1], 1), full[:, n - 1 : -1], rtol=1e-5, atol=1e-4)


# --- processor -------------------------------------------------------------------------------------
TEXTS = [
    "<image>\n<|grounding|>Convert the document to markdown.",
    "<|ref|>title<|/ref|><|det|>[[12, 40, 980, 88]]<|/det|>\n# Quarterly report  \n\n",
    "<table><tr><td>1,5 €</td><td></td></tr></table>\t中文 テキスト 😀 \\frac{a}{b} \u00a0end",
    "   leading spaces and <｜end▁of▁sentence｜> inside",
]


def test_tokenizer_ids_and_decoded_text_equal_transformers(processors):
    hf_tok, ours = processors[0].tokenizer, processors[1].tokenizer
    for text in TEXTS:
        for special in (True, False):
            assert ours.encode(text, add_special_tokens=special) == hf_tok.encode(
                text, add_special_tokens=special
            )
        ids = hf_tok.encode(text)
        for skip in (False, True):
            kw = {"skip_special_tokens": skip, "clean_up_tokenization_spaces": False}
            assert ours.decode(ids, **kw) == hf_tok.decode(ids, **kw)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):  # any id sequence, special ids included
        ids = torch.randint(0, len(hf_tok), (40,), generator=g).tolist()
        assert ours.decode(ids) == hf_tok.decode(
            ids, skip_special_tokens=False, clean_up_tokenization_spaces=False
        )
    assert len(ours) == len(hf_tok)
    for name in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "eos_token", "pad_token"):
        assert getattr(ours, name) == getattr(hf_tok, name), name
    for tok in ("<image>", "<td>", "</td>", "<|grounding|>", "no-such-token"):
        assert ours.convert_tokens_to_ids(tok) == hf_tok.convert_tokens_to_ids(tok)


def _page(size: tuple[int, int], seed: int, mode: str = "RGB"):
    """A page with dark text-like strokes (so ``auto`` sees edges) on a light background."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    a = np.full((size[1], size[0], 3), 235, np.uint8)
    for _ in range(60):
        x, y = rng.integers(0, size[0] - 40), rng.integers(0, size[1] - 8)
        a[y : y + 6, x : x + int(rng.integers(8, 40))] = rng.integers(0, 90, 3)
    a += rng.integers(0, 12, a.shape, dtype=np.uint8)
    image = Image.fromarray(a)
    return image.convert(mode) if mode != "RGB" else image


SIZES = [(600, 800), (1024, 1024), (1000, 1400), (1240, 1754), (3000, 900), (700, 2500), (769, 500)]
MODES = ["default", "default:2", "default:4", "global", "small", "auto"]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_processor_outputs_equal_transformers_in_every_mode(processors, size):
    hf_proc, ours = processors
    image = _page(size, seed=size[0])
    for mode in MODES:
        spec = resolve_mode(mode, image)
        img = apply_max_side(spec, image)
        prompt = "<image>\nFree OCR."
        want = hf_proc(images=img, text=prompt, return_tensors="pt", **spec.images_kwargs)
        got = ours(images=img, text=prompt, return_tensors="pt", **spec.images_kwargs)
        assert set(got) == set(want), mode
        for key in want:
            assert got[key].dtype == want[key].dtype and torch.equal(got[key], want[key]), (mode, key)


def test_processor_composites_transparency_like_transformers(processors):
    hf_proc, ours = processors
    image = _page((900, 1300), seed=5, mode="RGBA")
    image.putalpha(128)
    for mode in ("default", "global"):
        spec = resolve_mode(mode, image)
        want = hf_proc(images=image, text="<image>x", return_tensors="pt", **spec.images_kwargs)
        got = ours(images=image, text="<image>x", return_tensors="pt", **spec.images_kwargs)
        assert all(torch.equal(got[k], want[k]) for k in want)


@pytest.mark.parametrize("resample", [3, 2])
def test_resize_takes_torchvisions_path_off_the_cpu_kernel_too(monkeypatch, resample):
    """On a GPU torchvision resizes uint8 pages through float32 (round, clamp); the CPU run here takes
    that path on both sides (torchvision's choice patched) and compares bytes."""
    import torchvision.transforms.v2.functional as tvF
    from torchvision.transforms.v2.functional import _geometry

    from ocr_app.models.deepseek_ocr2.native_processor import resize

    monkeypatch.setattr(_geometry, "_do_native_uint8_resize_on_cpu", lambda mode: False)
    x = torch.randint(0, 256, (1, 3, 301, 217), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    mode = {3: tvF.InterpolationMode.BICUBIC, 2: tvF.InterpolationMode.BILINEAR}[resample]
    for size in ((768, 512), (100, 90), (1024, 737)):
        want = tvF.resize(x, list(size), interpolation=mode, antialias=True)
        got = resize(x, size, resample, uint8_kernel=False)
        assert got.dtype == torch.uint8 and torch.equal(got, want), size


def test_tiling_rule_equals_transformers():
    from transformers.models.deepseek_ocr2.image_processing_deepseek_ocr2 import (
        get_optimal_tiled_canvas as theirs,
    )

    from ocr_app.models.deepseek_ocr2.native_processor import get_optimal_tiled_canvas as ours

    for h in range(300, 5000, 97):
        for w in range(300, 5000, 131):
            for lo, hi in ((2, 6), (2, 4), (2, 2), (1, 9)):
                assert ours((h, w), (768, 768), lo, hi) == theirs((h, w), (768, 768), lo, hi), (h, w, lo, hi)


# --- through the product engine --------------------------------------------------------------------
def _read(
    model: Path, pages: list[Path], modes: list[str], out: Path, **settings
) -> tuple[list[str], object]:
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines

    s = Settings(model=str(model), device="cpu", engine="deepseek", idle_unload_s=0, result_cache_mb=0,
                 cache_enabled=False, **settings)  # fmt: skip
    engines = build_engines(s)
    texts, describe = [], None
    try:
        for path, mode in zip(pages, modes, strict=True):
            [doc] = Converter(engines, s).convert(
                [path], out / mode, ConvertOptions(mode=mode, formats=frozenset({"md"}))
            )
            texts.append(doc.pages[0].raw_text)
        describe = engines.get("deepseek").describe()
    finally:
        engines.unload_all()
    return texts, describe


def test_trained_model_reads_the_same_text_natively_as_through_transformers(trained_checkpoint, tmp_path):
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, write_pages

    # one tiled page here; every page in several precisions: test_tiny_trained (slow), whose graph-decoder
    # variants load natively
    chosen = [next(i for i, p in enumerate(PAGES) if p.mode == "default")]
    paths = write_pages(tmp_path / "pages")
    pages, modes = [paths[i] for i in chosen], [PAGES[i].mode for i in chosen]
    native_texts, info = _read(
        trained_checkpoint, pages, modes, tmp_path / "n", dtype="fp32", decoder="graph"
    )
    hf_texts, hf_info = _read(
        trained_checkpoint, pages, modes, tmp_path / "t", dtype="fp32", decoder="generate"
    )
    assert native_texts == hf_texts == [PAGES[i].transcript() for i in chosen]
    assert info is not None and hf_info is not None


def test_the_loader_setting_picks_the_model_kind(trained_checkpoint):
    from ocr_app.models.deepseek_ocr2.loading import load_model

    cpu = torch.device("cpu")
    native, proc = load_model(str(trained_checkpoint), cpu, torch.float32, decoder="graph")
    assert type(native).__name__ == "DeepseekOcr2Native" and native.ocr_loader == "native"
    assert type(proc).__name__ == "NativeProcessor"
    steps = native.ocr_load_breakdown
    assert {"import_s", "processor_s", "weights_s", "skeleton_s", "read_s", "total_s"} <= set(steps)
    ref, _ = load_model(str(trained_checkpoint), cpu, torch.float32, decoder="graph", loader="transformers")
    assert type(ref).__name__ == "DeepseekOcr2ForConditionalGeneration" and ref.ocr_loader == "transformers"
    gen, _ = load_model(str(trained_checkpoint), cpu, torch.float32)  # CPU + auto = generate: transformers
    assert gen.ocr_loader == "transformers"


# --- a pre-quantised checkpoint --------------------------------------------------------------------
def test_mixed_checkpoint_loads_natively_with_the_same_logits(
    trained_checkpoint, processors, page_images, tmp_path
):
    from ocr_app.models.deepseek_ocr2.loading import load_model
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.checkpoint import load_quantized, save_quantized
    from ocr_app.quant.modules import Int8Linear, QuantExperts
    from ocr_app.quant.presets import get_preset

    model = _hf_model(trained_checkpoint)
    recipe = quantize_model(model, get_preset("mixed"), None, adapter=ADAPTER)  # round to nearest
    qdir = save_quantized(model, recipe, tmp_path / "mixed", trained_checkpoint)
    ref, _ = load_quantized(qdir, "cpu", torch.float32, adapter=ADAPTER)
    ours, proc = load_model(str(qdir), torch.device("cpu"), torch.float32, quant="mixed", decoder="graph")
    assert type(ours).__name__ == "DeepseekOcr2Native" and type(proc).__name__ == "NativeProcessor"
    assert isinstance(ours.model.language_model.layers[1].mlp.experts, QuantExperts)
    assert isinstance(ours.model.vision_tower.sam_encoder.layers[0].mlp.lin1, Int8Linear)
    _same_state(ours.state_dict(), ref.state_dict())
    assert ours.generation_config.eos_token_id == ref.generation_config.eos_token_id
    enc = _inputs(processors, page_images, "global")
    with torch.inference_mode():
        want, got = ref(**enc).logits, ours(**enc).logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


# --- nothing of transformers in the process --------------------------------------------------------
CONVERT = r"""
import json, sys
from pathlib import Path
from ocr_app.convert import Converter, ConvertOptions
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
model, page, out = sys.argv[1:4]
s = Settings(model=model, device="cpu", engine="deepseek", decoder="graph", dtype="fp32", idle_unload_s=0,
             result_cache_mb=0)
engines = build_engines(s)
[doc] = Converter(engines, s).convert([Path(page)], Path(out), ConvertOptions(mode="global", formats=frozenset({"md"})))
info = engines.get("deepseek").describe()
print(json.dumps({"text": doc.pages[0].raw_text, "loader": info["loader"],
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in ("transformers", "torchvision"))}))
"""


def test_a_native_conversion_imports_neither_transformers_nor_torchvision(trained_checkpoint, tmp_path):
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, write_pages

    i = next(i for i, p in enumerate(PAGES) if p.mode == "global")
    page = write_pages(tmp_path / "pages")[i]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", CONVERT, str(trained_checkpoint), str(page), str(tmp_path / "o")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["loader"] == "native"
    assert got["heavy"] == []
    assert got["text"] == PAGES[i].transcript()


def test_a_cached_hub_snapshot_is_found_without_huggingface_hubs_download_code(trained_checkpoint, tmp_path):
    """The hub id's ``main`` snapshot in the HF cache, as huggingface_hub itself finds it."""
    from huggingface_hub import snapshot_download

    from ocr_app.models.deepseek_ocr2.loading import _main_snapshot

    snap = tmp_path / "models--acme--ocr" / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        (snap / name).symlink_to(trained_checkpoint / name)
    (tmp_path / "models--acme--ocr" / "refs").mkdir()
    (tmp_path / "models--acme--ocr" / "refs" / "main").write_text("0123abcd")
    want = Path(snapshot_download("acme/ocr", local_files_only=True, cache_dir=tmp_path))
    assert _main_snapshot("acme/ocr", tmp_path) == want == snap
    assert _main_snapshot("acme/other", tmp_path) is None
    (snap / "model.safetensors").unlink()
    assert _main_snapshot("acme/ocr", tmp_path) is None  # no weights: not a usable snapshot


def test_encoder_attention_with_a_mask_keeps_each_query_head_on_its_own_kv_head():
    """The vision encoder repeats its key/value heads before a masked SDPA (so CUDA can use a fused
    kernel); with two key/value heads a wrong repeat order would pair query heads with the wrong ones."""
    from ocr_app.models.deepseek_ocr2.native_config import EncoderConfig
    from ocr_app.models.deepseek_ocr2.native_vision import EncoderAttention, RotaryEmbedding, image_query_mask

    torch.manual_seed(0)
    cfg = EncoderConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, rope_parameters={"rope_theta": 1e4}
    )
    attn = EncoderAttention(cfg, 0).float()
    for p in attn.parameters():
        torch.nn.init.normal_(p, std=0.2)
    x = torch.randn(2, 12, 64)
    rope = RotaryEmbedding(cfg.head_dim, 1e4)(x, torch.arange(12)[None])
    mask = image_query_mask(12, 8, x.device)
    with torch.no_grad():
        got = attn(x, rope, mask)
        q = attn.q_proj(x).view(2, 12, 4, -1).transpose(1, 2)
        k = attn.k_proj(x).view(2, 12, 2, -1).transpose(1, 2)
        v = attn.v_proj(x).view(2, 12, 2, -1).transpose(1, 2)
        from ocr_app.models.deepseek_ocr2.native_vision import apply_rotary_pos_emb

        q, k = apply_rotary_pos_emb(q, k, *rope)
        # by hand: query head h reads key/value head h // 2, scores masked, softmax, weighted values
        kk, vv = k[:, [0, 0, 1, 1]], v[:, [0, 0, 1, 1]]
        scores = (q @ kk.transpose(-1, -2)) * attn.scaling
        scores = scores.masked_fill(~mask, float("-inf"))
        want = attn.o_proj((scores.softmax(-1) @ vv).transpose(1, 2).reshape(2, 12, -1))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
