"""The DeepSeek-OCR-2 engine end to end through the real loader, on random weights with the real tokenizer.

Why random: these tests check engine mechanics (batching, caps, caches, stop reasons) on arbitrary pages,
where the trained tiny model (tests/test_tiny_trained.py) has no known output.
"""

from __future__ import annotations

import gc
import json
import shutil
import weakref
from pathlib import Path

import pytest
import torch

from ocr_app.exceptions import ConfigError, EngineUnavailableError, ModelLoadError, WeightsNotFoundError
from ocr_app.models.deepseek_ocr2 import loading
from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine, bounded_max_new_tokens
from ocr_app.models.deepseek_ocr2.grounding import clean_raw, parse_grounded
from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
from ocr_app.schema import PageImage, PageRequest, StopReason
from ocr_app.settings import load_settings

MAX_NEW = 8


def make_page(size, index=0, text="Hello", mode="RGB"):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).text((20, 20), f"{text} {index}", fill="black")
    return PageImage(image=img.convert(mode), index=index, source="test.png")


def request(size, index=0, prompt="markdown", mode="small", **kw):
    """Mode "small" (one 768 px view) keeps the tiny vision encoder cheap where the mode does not matter."""
    return PageRequest(page=make_page(size, index), prompt=resolve_prompt(prompt), mode=mode, **kw)


def settings_for(checkpoint, **kw):
    kw.setdefault("max_new_tokens", MAX_NEW)
    kw.setdefault("dtype", "auto")
    return load_settings(model=str(checkpoint), device="cpu", **kw)


@pytest.fixture(scope="module")
def engine(random_checkpoint):
    eng = DeepSeekOcr2Engine(settings_for(random_checkpoint))
    eng.load()
    yield eng
    eng.unload()


def decode_ids(engine, req):
    """Token ids the engine's own decoder produces for one request (the plug-in path others replace)."""
    with torch.inference_mode():
        pages = [engine.preprocess(req)]
        engine.attach_features(pages)
        return engine._decode(engine.collate(pages))[0]


# --- loading ------------------------------------------------------------------------------------
def test_load_uses_real_classes_on_cpu_fp32(engine):
    assert engine.is_loaded
    assert type(engine.model).__name__ == "DeepseekOcr2ForConditionalGeneration"
    assert type(engine.processor).__name__ == "DeepseekOcr2Processor"
    assert engine.device == torch.device("cpu") and engine.dtype == torch.float32
    tok = engine.processor.tokenizer
    assert engine._exempt_ids == [tok.convert_tokens_to_ids("<td>"), tok.convert_tokens_to_ids("</td>")]
    info = engine.describe()
    assert info["loaded"] is True and info["dtype"] == "float32" and info["device"] == "cpu"


def test_resolve_device_and_dtype():
    cpu = torch.device("cpu")
    assert loading.resolve_device("auto") == (torch.device("cuda") if torch.cuda.is_available() else cpu)
    assert loading.resolve_device("CPU") == cpu
    assert loading.resolve_dtype("auto", cpu) == torch.float32
    assert loading.resolve_dtype("bf16", cpu) == torch.bfloat16
    assert loading.resolve_dtype("fp16", cpu) == torch.float16
    assert loading.resolve_dtype("fp32", cpu) == torch.float32
    with pytest.raises(ConfigError, match="Unknown device"):
        loading.resolve_device("banana")
    with pytest.raises(ConfigError, match="Unknown dtype"):
        loading.resolve_dtype("fp8", cpu)
    if not torch.cuda.is_available():
        with pytest.raises(EngineUnavailableError, match="no CUDA GPU"):
            loading.resolve_device("cuda:0")


@pytest.mark.parametrize("preset", ["int8", "mixed"])
def test_quant_presets_need_a_backend(preset, random_checkpoint, monkeypatch):
    """Where no quantization package registers itself, the preset names fail with a clear error."""
    monkeypatch.setattr(loading, "_QUANT_BACKENDS", {})
    monkeypatch.setattr(loading, "_default_quant_backend", lambda name: None)
    with pytest.raises(EngineUnavailableError, match="quantization backend"):
        loading.resolve_dtype(preset, torch.device("cpu"))
    with pytest.raises(EngineUnavailableError, match="quantization backend"):
        DeepSeekOcr2Engine(settings_for(random_checkpoint, dtype=preset)).load()


def test_a_registered_quant_backend_is_used(random_checkpoint, monkeypatch):
    from transformers import AutoModelForImageTextToText

    calls = []

    class Bf16Backend:  # a real backend in miniature: loads the checkpoint itself, in bf16
        def compute_dtype(self, device):
            return torch.bfloat16

        def load_model(self, model_dir, device, dtype):
            calls.append((model_dir, device, dtype))
            return AutoModelForImageTextToText.from_pretrained(model_dir, dtype=dtype).to(device)

    monkeypatch.setattr(loading, "_QUANT_BACKENDS", {})
    loading.register_quant_backend("mixed", Bf16Backend())
    eng = DeepSeekOcr2Engine(settings_for(random_checkpoint, dtype="mixed"))
    eng.load()
    try:
        assert calls == [(random_checkpoint, torch.device("cpu"), torch.bfloat16)]
        assert next(eng.model.parameters()).dtype == torch.bfloat16
        out = eng.predict_batch([request((300, 200), max_new_tokens=3)])[0]
        assert out.num_tokens == 3
    finally:
        eng.unload()
    with pytest.raises(ConfigError):
        loading.register_quant_backend("int4", Bf16Backend())


def test_missing_local_directory_says_how_to_download(tmp_path):
    missing = tmp_path / "DeepSeek-OCR-2"
    eng = DeepSeekOcr2Engine(settings_for(missing))
    with pytest.raises(WeightsNotFoundError) as err:
        eng.load()
    msg = str(err.value)
    assert f"'{missing}' does not exist" in msg
    assert f"hf download deepseek-community/DeepSeek-OCR-2 --local-dir {missing}" in msg
    assert f"--model {missing}" in msg and f"DEEPSEEK_OCR_MODEL={missing}" in msg
    assert not eng.is_loaded


def test_directory_without_weights_is_reported(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(WeightsNotFoundError, match=r"no DeepSeek-OCR-2 checkpoint"):
        loading.resolve_model_dir(str(tmp_path))


def test_bogus_hub_id_offline_says_how_to_download(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    eng = DeepSeekOcr2Engine(load_settings(model="nobody-xyz/not-a-model", device="cpu"))
    with pytest.raises(WeightsNotFoundError) as err:
        eng.load()
    msg = str(err.value)
    assert "not in the Hugging Face cache and the hub is offline" in msg
    assert "hf download nobody-xyz/not-a-model --local-dir DIR" in msg
    assert "--model DIR" in msg and "DEEPSEEK_OCR_MODEL=DIR" in msg


def _fake_hf_cache(cache: Path, repo: str, checkpoint: Path) -> Path:
    """The real hub cache layout: models--org--name/{refs/main, snapshots/<commit>/files}."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    snap = root / "snapshots" / commit
    shutil.copytree(checkpoint, snap)
    return snap


def test_weights_status_without_network(random_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert loading.weights_status(str(random_checkpoint)).startswith(f"local directory {random_checkpoint} (")
    assert "does not exist" in loading.weights_status(str(tmp_path / "nope"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "has no checkpoint" in loading.weights_status(str(empty))
    cache = tmp_path / "hf"
    assert loading.weights_status("org/tiny", cache_dir=cache).startswith(
        "not downloaded (hf download org/tiny"
    )
    assert not loading.weights_available("org/tiny", cache_dir=cache)
    snap = _fake_hf_cache(cache, "org/tiny", random_checkpoint)
    assert loading.weights_status("org/tiny", cache_dir=cache) == f"in HF cache at {snap}"
    assert loading.weights_available("org/tiny", cache_dir=cache)
    assert loading.resolve_model_dir("org/tiny", cache_dir=cache) == snap
    assert loading.weights_available(str(random_checkpoint))


def test_wrong_architecture_is_a_model_load_error(random_checkpoint, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(random_checkpoint, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["model_type"] = "not_a_model_type"
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="Could not load"):
        loading.load_model(str(bad), torch.device("cpu"), torch.float32)


# --- prediction ---------------------------------------------------------------------------------
def test_batch_of_two_sizes_equals_one_by_one(engine):
    """Left padding must not change results: a tiled A4 page (545 vision tokens) next to a small one (145)."""
    reqs = [request((1190, 1684), 0, "markdown", mode="default:2"), request((500, 300), 1, "free")]
    batched = engine.predict_batch(reqs)
    single = [engine.predict_batch([r])[0] for r in reqs]
    assert [o.vision_tokens for o in batched] == [545, 145]
    assert [o.raw_text for o in batched] == [o.raw_text for o in single]
    assert [o.num_tokens for o in batched] == [MAX_NEW, MAX_NEW]
    assert batched[0].raw_text != batched[1].raw_text
    for o in batched:
        assert o.engine == "deepseek"
        assert set(o.timings) == {"preprocess", "vision", "prefill", "decode", "total"}
        assert all(v >= 0 for v in o.timings.values())
        assert o.timings["total"] >= o.timings["prefill"] + o.timings["decode"]


def test_raw_text_is_the_decoded_ids_with_special_tokens_kept(engine):
    req = request((400, 300), 3, max_new_tokens=6)
    ids, stop = decode_ids(engine, req)
    out = engine.predict_batch([req])[0]
    tok = engine.processor.tokenizer
    decoded = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    assert out.raw_text == clean_raw(decoded)  # the wing cleans EOS/BOS/pad and outer blank space
    assert out.blocks == parse_grounded(decoded, 400, 300)  # and returns blocks, not tags to parse
    assert out.num_tokens == len(ids) == 6 and stop is out.stop_reason is StopReason.LENGTH
    assert tok.eos_token not in out.raw_text


def test_length_stop_when_cap_is_hit(engine):
    out = engine.predict_batch([request((300, 300), max_new_tokens=3)])[0]
    assert out.stop_reason is StopReason.LENGTH and out.num_tokens == 3
    assert "token cap (3)" in " ".join(out.notes)


def test_end_stop_when_eos_is_generated(engine):
    """Make the 3rd new token id the EOS id: decoding must stop there with END, text = first tokens."""
    req = request((640, 480), 4, max_new_tokens=MAX_NEW)
    ids, _ = decode_ids(engine, req)
    k = next(i for i in range(1, len(ids)) if ids[i] not in ids[:i])
    gen_cfg = engine.model.generation_config
    saved = gen_cfg.eos_token_id
    gen_cfg.eos_token_id = ids[k]
    try:
        out = engine.predict_batch([req])[0]
    finally:
        gen_cfg.eos_token_id = saved
    tok = engine.processor.tokenizer
    assert out.stop_reason is StopReason.END
    assert out.num_tokens == k
    assert out.raw_text == clean_raw(
        tok.decode(ids[:k], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    )


def test_repetition_stop_without_guard_and_length_with_it(engine, monkeypatch):
    """The tiny model loops when unguarded; the stop reason says so. With the guard it does not loop."""
    req = request((300, 200), 1, "free", max_new_tokens=32)
    monkeypatch.setattr(engine.settings, "no_repeat_ngram_size", 0)
    a = engine.predict_batch([req])[0]
    monkeypatch.setattr(engine.settings, "no_repeat_ngram_size", 3)
    monkeypatch.setattr(engine.settings, "no_repeat_window", 24)
    b = engine.predict_batch([req])[0]
    assert a.stop_reason is StopReason.REPETITION and "repetition loop" in " ".join(a.notes)
    assert b.stop_reason is StopReason.LENGTH
    assert a.raw_text != b.raw_text and a.num_tokens == b.num_tokens == 32


def test_max_new_tokens_is_bounded_by_the_context(random_checkpoint, tmp_path):
    small_ctx = tmp_path / "ctx"
    shutil.copytree(random_checkpoint, small_ctx)
    cfg = json.loads((small_ctx / "config.json").read_text())
    cfg["text_config"]["max_position_embeddings"] = 156  # 145 vision + 5 prompt text tokens + 6 free
    (small_ctx / "config.json").write_text(json.dumps(cfg))
    eng = DeepSeekOcr2Engine(settings_for(small_ctx, max_new_tokens=32))
    try:
        out = eng.predict_batch([request((300, 200), prompt="free")])[0]
        prompt_len = len(eng.preprocess(request((300, 200), prompt="free")).input_ids)
        room = 156 - prompt_len
        assert room == 6
        assert out.num_tokens == room and out.stop_reason is StopReason.LENGTH
        assert f"bounded by the context: {room} (asked 32)" in " ".join(out.notes)
        with pytest.raises(ConfigError, match="context"):
            eng.predict_batch([request((1190, 1684), mode="global")])  # 257 vision tokens > 156
    finally:
        eng.unload()


def test_bounded_max_new_tokens():
    assert bounded_max_new_tokens(8192, 1130, 8192) == 8192 - 1130
    assert bounded_max_new_tokens(100, 1130, 8192) == 100
    with pytest.raises(ConfigError):
        bounded_max_new_tokens(10, 8192, 8192)
    with pytest.raises(ConfigError, match="at least 1"):
        bounded_max_new_tokens(0, 100, 8192)


def test_empty_batch_does_not_load(random_checkpoint):
    eng = DeepSeekOcr2Engine(settings_for(random_checkpoint))
    assert eng.predict_batch([]) == []
    assert not eng.is_loaded


def test_prompt_with_two_image_tokens_and_unknown_mode_are_config_errors(engine):
    # the request carries the user's text; the engine adds one <image> to text without it, but two
    # images in one prompt cannot match the one page
    bad = PageRequest(page=make_page((200, 200)), prompt="<image>\n<image>\nFree OCR.")
    with pytest.raises(ConfigError, match="<image>"):
        engine.predict_batch([bad])
    with pytest.raises(ConfigError, match="Unknown resolution mode"):
        engine.predict_batch([request((200, 200), mode="gundam")])


def test_auto_mode_and_non_rgb_pages(engine):
    req = PageRequest(page=make_page((600, 400), mode="L"), prompt=resolve_prompt("free"), mode="auto")
    out = engine.predict_batch([req])[0]
    assert out.vision_tokens == 257
    assert any("auto: small page" in n for n in out.notes)


class DictCache:
    """The smallest object that satisfies the engine's VisionCache protocol."""

    def __init__(self):
        self.data, self.gets, self.puts = {}, 0, 0

    def get(self, key):
        self.gets += 1
        return self.data.get(key)

    def put(self, key, value):
        self.puts += 1
        self.data[key] = value


def test_vision_cache_gives_identical_results_and_skips_the_encoder(engine, monkeypatch):
    reqs = [request((700, 500), 0), request((500, 700), 1)]
    reference = engine.predict_batch(reqs)  # no cache configured on this engine
    cache = DictCache()
    monkeypatch.setattr(engine, "vision_cache", cache)
    encoded = []
    real_encode = engine.encode_images
    monkeypatch.setattr(
        engine, "encode_images", lambda b: encoded.append(len(b["pixel_values"])) or real_encode(b)
    )
    first = engine.predict_batch(reqs)
    second = engine.predict_batch(reqs)
    assert encoded == [2]  # both pages encoded once, in one batch; the second run never reached the encoder
    assert cache.puts == 2 and len(cache.data) == 2 and cache.gets == 4
    assert [o.raw_text for o in first] == [o.raw_text for o in second] == [o.raw_text for o in reference]
    assert all("vision features from cache" in o.notes for o in second)
    assert not any("vision features from cache" in o.notes for o in first)
    # use_cache=False bypasses the cache
    no_cache = engine.predict_batch([request((700, 500), 0, use_cache=False)])[0]
    assert cache.gets == 4 and no_cache.raw_text == reference[0].raw_text


def test_cache_keys_follow_page_content(engine):
    """The vision-cache key follows the page image, the mode's processor arguments and the model."""
    from ocr_app.models.deepseek_ocr2.engine import image_cache_key
    from ocr_app.models.deepseek_ocr2.modes import resolve_mode

    a, b, c = (request((400, 300), n).page.image.convert("RGB") for n in (0, 0, 1))  # c: other text
    spec = resolve_mode("default", a)
    other = resolve_mode("global", a)
    assert image_cache_key(a, spec, "m") == image_cache_key(b, spec, "m")
    assert image_cache_key(a, spec, "m") != image_cache_key(c, spec, "m")
    assert image_cache_key(a, spec, "m") != image_cache_key(a, other, "m")
    assert image_cache_key(a, spec, "m") != image_cache_key(a, spec, "other-model")


def test_predict_stream_yields_every_index(random_checkpoint):
    eng = DeepSeekOcr2Engine(settings_for(random_checkpoint, max_new_tokens=2), batch_size=2)
    try:
        reqs = [request((300 + 50 * i, 200), i) for i in range(3)]
        seen = [i for i, out in eng.predict_stream(reqs) if out.num_tokens == 2]
        assert seen == [0, 1, 2]
    finally:
        eng.unload()


def test_unload_frees_the_model_and_reload_works(random_checkpoint):
    eng = DeepSeekOcr2Engine(settings_for(random_checkpoint, max_new_tokens=2))
    eng.predict_batch([request((300, 200))])  # loads lazily
    ref = weakref.ref(eng.model)
    assert eng.is_loaded
    eng.unload()
    gc.collect()
    assert eng.model is None and eng.processor is None and not eng.is_loaded
    assert ref() is None, "something still holds the model"
    eng.unload()  # idempotent
    assert eng.predict_batch([request((300, 200))])[0].num_tokens == 2
    eng.unload()


def test_one_engines_unload_leaves_the_other_engines_objects_frozen(random_checkpoint):
    """Two engines in one process (one per GPU in production): the gc freeze is shared and counted, so
    the first unload frees its own model (cycles included) and keeps the other's objects frozen."""
    from ocr_app import gc_freeze

    base = gc_freeze.holders()  # the module's engine fixture may hold one
    first, second = (DeepSeekOcr2Engine(settings_for(random_checkpoint)) for _ in range(2))
    first.load()
    second.load()
    try:
        assert gc_freeze.holders() == base + 2
        gone = weakref.ref(first.model)
        first.unload()
        first.unload()  # idempotent: releases its share once
        assert gc_freeze.holders() == base + 1 and gone() is None
        assert gc.get_freeze_count() > 0
        kept = second.model
        assert not any(o is kept for o in gc.get_objects())  # still out of the collector's sight
    finally:
        second.unload()
    assert gc_freeze.holders() == base
    if base == 0:
        assert gc.get_freeze_count() == 0


def test_preprocessing_moves_to_the_gpu_only_where_asked(engine):
    """On a CUDA model the image processor gets ``device=`` (GPU preprocessing); never on the CPU, and
    not when the setting is off."""
    import torch

    assert engine._preprocess_kwargs() == {}  # CPU model
    saved = engine.device, engine.settings
    try:
        engine.device = torch.device("cuda", 0)
        assert engine._preprocess_kwargs() == {"device": torch.device("cuda", 0)}
        engine.settings = engine.settings.model_copy(update={"preprocess_on_gpu": False})
        assert engine._preprocess_kwargs() == {}
    finally:
        engine.device, engine.settings = saved
