"""Streaming quantisation at load on the tiny checkpoint (the code path the GPU runs): checkpoint reading
under transformers' key conversion, layer-by-layer order and what exists at each step, AWQ fidelity
against the load-then-quantise path, the quantised-weights cache, the memory budget and the auto rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from ocr_app.quant.modules import Int8Linear, QuantExperts, QuantLinear
from ocr_app.quant.presets import get_preset

GIB = 1 << 30


def _load_float(path):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32).eval()


def _logits(model, batches):
    with torch.inference_mode():
        return torch.cat([model(**b).logits[0] for b in batches])


@pytest.fixture(scope="module")
def processor(tiny_checkpoint):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_checkpoint)


@pytest.fixture(scope="module")
def calib_batches(processor):
    from ocr_app.quant.calibration import calibration_batches, render_calibration_pages

    return calibration_batches(
        processor, render_calibration_pages(1, seed=0), max_text_tokens=96, max_patches=2
    )


@pytest.fixture(scope="module")
def eval_batches(processor):
    from ocr_app.quant.calibration import calibration_batches, render_calibration_pages

    return calibration_batches(
        processor, render_calibration_pages(1, seed=7), max_text_tokens=48, max_patches=2
    )


@pytest.fixture(scope="module")
def streamed(tiny_checkpoint, calib_batches):
    """The mixed model streamed with AWQ, with a snapshot of the model after every unit."""
    from ocr_app.quant.stream import stream_quantize

    steps: list[dict] = []
    progress: list[tuple[int, int, str]] = []

    def observe(label, model):
        tensors = list(model.named_parameters()) + list(model.named_buffers())
        steps.append({
            "label": label,
            "meta": {n for n, t in tensors if t.is_meta},
            "bytes": sum(t.numel() * t.element_size() for _, t in tensors if not t.is_meta),
            "float_linear": {n for n, m in model.named_modules()
                             if type(m) is torch.nn.Linear and not m.weight.is_meta},
        })  # fmt: skip

    model, recipe, report = stream_quantize(
        tiny_checkpoint, get_preset("mixed"), torch.device("cpu"), torch.float32,
        calib_batches=calib_batches, progress=lambda *a: progress.append(a), observer=observe,
        offload_experts=True,  # as on a GPU: routed experts stay on the CPU, visit the device in turn
    )  # fmt: skip
    return model, recipe, report, steps, progress


def test_reader_maps_hub_keys_to_module_names(tiny_checkpoint):
    from ocr_app.quant.stream import CheckpointReader, build_skeleton

    skeleton = build_skeleton(tiny_checkpoint, torch.float32)
    reader = CheckpointReader(tiny_checkpoint, skeleton)
    assert set(reader.targets) == set(skeleton.state_dict())
    ref = _load_float(tiny_checkpoint).state_dict()
    # per-expert hub tensors merged into transformers' fused layout, in expert order (not "1, 10, 2")
    for name in ("model.language_model.layers.1.mlp.experts.gate_up_proj",
                 "model.language_model.layers.2.mlp.experts.down_proj",
                 "model.vision_tower.sam_encoder.layers.0.attn.qkv.weight"):  # fmt: skip
        assert torch.equal(reader.tensor(name, "cpu", torch.float32), ref[name]), name
    assert reader.reads[0] == "model.language_model.layers.1.mlp.experts.gate_up_proj"
    assert all(p.is_meta for p in skeleton.parameters())  # reading never touched the skeleton


def test_layers_stream_one_at_a_time(streamed):
    from ocr_app.quant.stream import DECODER

    model, recipe, report, steps, progress = streamed
    layers = len(model.model.language_model.layers)
    assert [p[0] for p in progress] == list(range(1, len(progress) + 1))
    assert progress[-1][:2] == (report.units + 1, report.units + 1) and report.units == 2 + 2 + layers
    final_bytes = steps[-1]["bytes"]
    for k in range(layers):
        step = next(s for s in steps if s["label"] == f"{DECODER}.{k}")
        # later layers are still unread (meta); no float nn.Linear remains in layers already done
        for j in range(layers):
            later = [n for n in step["meta"] if n.startswith(f"{DECODER}.{j}.")]
            assert bool(later) == (j > k), (k, j)
        assert not [n for n in step["float_linear"] if n.startswith(DECODER)], step["float_linear"]
        assert step["bytes"] <= final_bytes  # never more than the final model once a layer is done
    # vision blocks are quantised before any decoder layer is read
    first_decoder = next(i for i, s in enumerate(steps) if s["label"].startswith(DECODER))
    assert all(not s["label"].startswith(DECODER) for s in steps[:first_decoder])
    assert not [n for n in steps[first_decoder - 1]["float_linear"] if "vision_tower" in n]
    # the final model: quantised modules, no float copy of a quantised weight anywhere
    lm = model.model.language_model
    assert isinstance(lm.layers[1].mlp.experts, QuantExperts) and lm.layers[1].mlp.experts.bits == 4
    assert isinstance(lm.layers[0].self_attn.q_proj, QuantLinear)
    assert isinstance(model.model.vision_tower.sam_encoder.layers[0].attn.qkv, Int8Linear)
    names = {n for n, _ in model.named_parameters()} | {n for n, _ in model.named_buffers()}
    assert not any(n.endswith(("experts.gate_up_proj", "experts.down_proj", "q_proj.weight")) for n in names)
    assert recipe["streamed"] and recipe["awq"] and recipe["calibration"]["pages"] == 1
    assert report.calib_tokens > 257  # vision tokens + prompt + page text


def test_streamed_reads_each_unit_before_the_next(tiny_checkpoint):
    from ocr_app.quant.stream import CheckpointReader, stream_quantize, units_of

    order: list[str] = []
    real = CheckpointReader.tensor

    def spy(self, name, device, dtype):
        order.append(name)
        return real(self, name, device, dtype)

    mp = pytest.MonkeyPatch()
    mp.setattr(CheckpointReader, "tensor", spy)
    try:
        model, _, _ = stream_quantize(tiny_checkpoint, get_preset("int8"), torch.device("cpu"), torch.float32)
    finally:
        mp.undo()
    units = units_of(model)
    unit_of = [next((i for i, u in enumerate(units) if n.startswith(u + ".")), -1) for n in order]
    assert unit_of == sorted(unit_of)  # float parts (-1) first, then unit 0, 1, 2 … never interleaved
    assert sorted(set(unit_of)) == list(range(-1, len(units)))


@pytest.fixture(scope="module")
def transcript_batches(processor):
    """The eight tiny pages, each with its transcript teacher-forced, and where the transcript tokens are.

    Why these positions: they are what the trained model knows. Scoring a page it never learned (or the
    ``<image>`` placeholder positions, 545 of 602 in the earlier metric) measured noise that flipped
    with the CPU's instruction set."""
    from ocr_app.models.deepseek_ocr2.modes import apply_max_side, resolve_mode
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, PROMPT, render_pages

    tok, out = processor.tokenizer, []
    for page, image in zip(PAGES, render_pages(), strict=True):
        spec = resolve_mode(page.mode, image)
        enc = dict(processor(images=apply_max_side(spec, image), text=resolve_prompt(PROMPT),
                             return_tensors="pt", **spec.images_kwargs))  # fmt: skip
        target = torch.tensor([[*tok.encode(page.transcript(), add_special_tokens=False), tok.eos_token_id]])
        start = enc["input_ids"].shape[1] - 1  # the prompt's last position predicts the first token
        enc["input_ids"] = torch.cat([enc["input_ids"], target], 1)
        enc["attention_mask"] = torch.ones_like(enc["input_ids"])
        out.append((enc, slice(start, start + target.shape[1]), target[0]))
    return out


def _transcript_logits(model, batches) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits at the transcript positions of every page, and the transcript tokens they should pick."""
    with torch.inference_mode():
        logits = [model(**enc).logits[0, where] for enc, where, _ in batches]
    return torch.cat(logits).float(), torch.cat([t for _, _, t in batches])


# How far apart the two paths are, measured (2026-12-01) on the transcript tokens (672) of four trained
# builds: the pinned model under AVX-512, AVX2 and no-SIMD kernels (the same numbers on all three) and
# models trained with seeds 1, 2, 3. Tokens right (float / load-then-quantise / streamed) and the
# streamed path's logit MSE over load-then-quantise's:
#   pinned 672/669/668, MSE x1.118;  seed 1 672/670/670, x1.013;
#   seed 2 672/669/669, x0.956;     seed 3 672/669/669, x1.012
# Streaming calibrates each layer on the already-quantised layers before it, so it differs a little, in
# either direction. The bounds are the largest gap seen, with room: a real regression (scales applied to
# the wrong layer, calibration lost) costs tens of tokens and multiplies the MSE.
TOP1_SLACK = 2  # tokens (largest gap seen: 1)
MSE_RATIO = 1.25  # (largest seen: 1.118)


def test_streamed_awq_is_at_least_as_faithful_as_load_then_quantise(
    tiny_checkpoint, streamed, calib_batches, transcript_batches
):
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.calibration import collect_activations

    ref, target = _transcript_logits(_load_float(tiny_checkpoint), transcript_batches)
    today = _load_float(tiny_checkpoint)
    quantize_model(today, get_preset("mixed"), collect_activations(today, calib_batches))
    old, _ = _transcript_logits(today, transcript_batches)
    new, _ = _transcript_logits(streamed[0], transcript_batches)
    right = {
        name: int((x.argmax(-1) == target).sum()) for name, x in (("float", ref), ("old", old), ("new", new))
    }
    err_old, err_new = (old - ref).pow(2).mean().item(), (new - ref).pow(2).mean().item()
    assert right["float"] == len(target), right  # the trained model reads its pages
    assert right["new"] >= right["old"] - TOP1_SLACK, right
    assert right["new"] >= len(target) - 8, right  # 4-bit weights still read ~99 % of the tokens
    assert 0 < err_new <= err_old * MSE_RATIO, (err_new, err_old)  # really quantised, and as close


def test_incomplete_checkpoint_is_a_clear_error(tiny_checkpoint, tmp_path):
    from safetensors.torch import load_file, save_file

    from ocr_app.exceptions import ModelLoadError
    from ocr_app.quant.stream import stream_quantize

    broken = tmp_path / "broken"
    shutil.copytree(tiny_checkpoint, broken)
    state = load_file(str(broken / "model.safetensors"))
    del state["model.layers.2.self_attn.q_proj.weight"]
    save_file(state, str(broken / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=r"not a complete .*layers\.2\.self_attn\.q_proj\.weight"):
        stream_quantize(broken, get_preset("int8"), torch.device("cpu"), torch.float32)


def test_quantised_weights_are_cached_by_content(tiny_checkpoint, tmp_path, eval_batches):
    from click.testing import CliRunner

    from ocr_app.cli import main
    from ocr_app.quant.pipeline import PresetBackend
    from ocr_app.quant.store import HASHES_FILE, QuantStore

    cache = tmp_path / "cache"
    backend = PresetBackend("int8")
    first = backend.load_model(tiny_checkpoint, torch.device("cpu"), torch.float32, cache_dir=cache)
    assert first.ocr_quant_info["source"] == "quantised now" and first.ocr_quant_info["quantize_seconds"] > 0
    second = backend.load_model(tiny_checkpoint, torch.device("cpu"), torch.float32, cache_dir=cache)
    assert second.ocr_quant_info["source"] == "cache"
    assert second.ocr_quant_info["quantize_seconds"] == pytest.approx(
        first.ocr_quant_info["quantize_seconds"]
    )
    assert torch.equal(_logits(first, eval_batches), _logits(second, eval_batches))
    store = QuantStore(cache / "quantized")
    [entry] = store.entries()
    assert entry["preset"] == "int8" and entry["source"] == str(tiny_checkpoint)
    assert str(tiny_checkpoint.resolve() / "model.safetensors") in json.loads(
        (store.root / HASHES_FILE).read_text()
    )
    # the key follows the content: same bytes elsewhere → same key; one changed weight → another key
    copy = tmp_path / "copy"
    shutil.copytree(tiny_checkpoint, copy)
    assert store.key(copy, "int8", 4) == store.key(tiny_checkpoint, "int8", 4)
    assert store.key(copy, "mixed", 4) != store.key(copy, "int8", 4)
    from safetensors.torch import load_file, save_file

    state = load_file(str(copy / "model.safetensors"))
    state["model.norm.weight"] = state["model.norm.weight"] + 1
    save_file(state, str(copy / "model.safetensors"), metadata={"format": "pt"})
    assert store.key(copy, "int8", 4) != store.key(tiny_checkpoint, "int8", 4)
    # ocr-app cache info lists it, cache clear removes it
    env = {"DEEPSEEK_OCR_CACHE_DIR": str(cache)}
    out = CliRunner().invoke(main, ["cache", "info"], env=env).output
    assert "quantised models 1 entries" in out and f"from {tiny_checkpoint}" in out
    info = CliRunner().invoke(main, ["info", "--model", str(tiny_checkpoint)], env=env).output
    assert "quantised weights      cached: int8 (" in info and " GiB, quantised in " in info, info
    out = CliRunner().invoke(main, ["cache", "clear"], env=env).output
    assert "1 quantised models" in out and store.entries() == []


def test_engine_reports_precision_source_and_progress(tiny_checkpoint, tmp_path):
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.settings import Settings

    settings = Settings(model=str(tiny_checkpoint), device="cpu", dtype="int8", engine="deepseek",
                        idle_unload_s=0, cache_dir=tmp_path / "c")  # fmt: skip
    eng = DeepSeekOcr2Engine(settings)
    seen: list[tuple[int, int, str]] = []
    eng.load_progress = lambda *a: seen.append(a)
    eng.load()
    try:
        info = eng.describe()
        assert info["precision_reason"] == "--dtype int8" and info["quant_source"] == "quantised now"
        assert seen[-1][0] == seen[-1][1] == 8 and seen[-1][2] == "model.language_model.layers.2"
        eng.unload()
        seen.clear()
        eng.load()
        assert eng.describe()["quant_source"] == "cache" and seen == []  # nothing to quantise again
    finally:
        eng.unload()


# --- budget ----------------------------------------------------------------------------------------
class _FakeCuda:
    """torch.cuda's memory calls for a GPU of ``total`` bytes with ``free`` free (the real ones need a GPU)."""

    def __init__(self, monkeypatch, total=80 * GIB, free=79 * GIB, bf16=True):
        self.fractions: list[tuple[float, int]] = []
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free, total))
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(
            torch.cuda, "get_device_properties", lambda i: type("P", (), {"total_memory": total})
        )
        monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction",
                            lambda f, i=None: self.fractions.append((f, i)))  # fmt: skip


def test_choose_preset_follows_the_budget():
    from ocr_app.models.deepseek_ocr2.budget import choose_preset, need_bytes, weight_bytes

    assert choose_preset(4 * GIB, "cuda")[0] == "mixed"
    assert choose_preset(6 * GIB, "cuda")[0] == "int8"
    assert choose_preset(10 * GIB, "cuda")[0] == "bf16"
    assert choose_preset(8 * GIB, "cuda-no-bf16")[0] == "mixed"
    assert choose_preset(10 * GIB, "cuda-no-bf16")[0] == "fp16"
    assert choose_preset(None, "cpu")[0] == "fp32"
    _, why = choose_preset(4 * GIB, "cuda")
    assert why == f"4.0 GiB < {need_bytes('int8') / GIB:.1f} GiB that int8 needs"
    # thresholds follow the weights: mixed < int8 < bf16, each at least its weights plus one page
    assert 2.2 < weight_bytes("mixed") / GIB < 2.5 and 6.2 < weight_bytes("bf16") / GIB < 6.4
    assert need_bytes("mixed") < need_bytes("int8") < need_bytes("bf16") <= 10 * GIB


def test_budget_from_setting_or_free_memory_and_cap(monkeypatch):
    from ocr_app.models.deepseek_ocr2.budget import Budget, apply_cap, resolve_budget
    from ocr_app.settings import Settings

    fake = _FakeCuda(monkeypatch, total=80 * GIB, free=79 * GIB)
    assert resolve_budget(Settings(gpu_memory_gib=4), "cuda") == Budget(4 * GIB, "4.0 GiB budget")
    assert resolve_budget(Settings(), "cuda:0") == Budget(79 * GIB, "free memory 79.0 GiB")
    assert resolve_budget(Settings(gpu_memory_gib=4), "cpu") == Budget(None, "CPU: no GPU budget")
    apply_cap(Budget(4 * GIB, "4.0 GiB budget"), "cuda")
    apply_cap(Budget(None, "CPU: no GPU budget"), "cpu")
    assert fake.fractions == [(0.05, 0)]
    with pytest.raises(AttributeError):  # frozen: other parts code against it
        Budget(1, "x").bytes = 2  # type: ignore[misc]
    low = _FakeCuda(monkeypatch, total=8 * GIB, free=3 * GIB)
    b = resolve_budget(Settings(gpu_memory_gib=4), "cuda")
    assert b.bytes == 3 * GIB and "below the 4.0 GiB budget" in b.source and not low.fractions


def test_engine_auto_reads_the_budget_and_manager_caps(monkeypatch, tiny_checkpoint):
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.runtime.manager import ModelManager
    from ocr_app.settings import Settings

    fake = _FakeCuda(monkeypatch, total=80 * GIB, free=79 * GIB)
    cuda = torch.device("cuda")
    eng = DeepSeekOcr2Engine(Settings(model=str(tiny_checkpoint), gpu_memory_gib=4))
    assert eng._choose_precision(cuda) == ("mixed", "4.0 GiB budget → mixed")
    eng = DeepSeekOcr2Engine(Settings(model=str(tiny_checkpoint), gpu_memory_gib=6))
    assert eng._choose_precision(cuda) == ("int8", "6.0 GiB budget → int8")
    eng = DeepSeekOcr2Engine(Settings(model=str(tiny_checkpoint)))
    assert eng._choose_precision(cuda) == ("bf16", "free memory 79.0 GiB → bf16")

    class Loads(DeepSeekOcr2Engine):
        def load(self):  # the cap must be in place before the engine allocates anything
            self.caps_at_load = list(fake.fractions)

        def unload(self):
            pass

    engine = Loads(Settings(model=str(tiny_checkpoint), device="cuda", gpu_memory_gib=4))
    ModelManager(engine, engine.settings, idle_unload_s=0).load()
    assert engine.caps_at_load == [(4 / 80, 0)]


def test_bench_small_gpu_smoke_on_cpu(tmp_path):
    """The H200 benchmark runs the same code on the CPU (tiny config), so it cannot rot between GPU runs."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).parents[1]
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "bench/bench_small_gpu.py", "--tiny", "--budgets", "4", "--new", "2",
           "--tiny-pages", "2", "--mode", "global", "--work", str(tmp_path / "w"), "--out", str(out)]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(root))
    res = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    [row] = json.loads(out.read_text())["rows"]
    assert row["first_load"]["precision"] == "mixed" and row["first_load"]["quant_source"] == "quantised now"
    assert row["second_load"]["quant_source"] == "cache" and row["prequant_s"] > 0
    # the bar's reference goes through the same product path; each load says where its time went
    assert row["prequant_engine_info"]["quant_source"] == "pre-quantised checkpoint"
    assert row["prequant_engine_s"] > 0 and len(row["load2_runs_s"]) == 2
    hit = row["second_load"]["load_breakdown"]
    assert {"processor_s", "key_s", "skeleton_s", "read_s", "to_device_s", "assign_s"} <= set(hit)
    assert "| 4 GiB | cache hit (product path) |" in res.stdout and " · key 0.00 · " in res.stdout
    assert row["conv1_pages"] == 1 and row["conv16_pages"] == 2 and not row["conv16_errors"]
    assert row["oom_events"] == 0 and "| 4 GiB | mixed" in res.stdout


def test_first_quantisation_reports_progress_in_the_app_stream_and_the_cli(tiny_checkpoint, tmp_path):
    """gr.Progress gets the job stream's events: the quantisation units come first, as their own stage;
    the CLI shows a tqdm bar over the same units."""
    import threading

    from click.testing import CliRunner

    from ocr_app.cli import main
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines
    from ocr_app.ui.jobs import JobOutcome, stream_conversion
    from tests.factories import make_image

    img = make_image(tmp_path / "page.png", "Quarterly report")
    settings = Settings(model=str(tiny_checkpoint), device="cpu", dtype="int8", engine="deepseek",
                        idle_unload_s=0, cache_dir=tmp_path / "app-cache", max_new_tokens=2)  # fmt: skip
    engines = build_engines(settings)
    try:
        opts = ConvertOptions.from_settings(settings, mode="global")
        items = list(
            stream_conversion(Converter(engines, settings), [img], tmp_path / "o", opts, threading.Event())
        )
    finally:
        engines.unload_all()
    *progress, outcome = items
    assert isinstance(outcome, JobOutcome) and outcome.succeeded
    quant = [p for p in progress if p.event.stage == "quantize"]
    assert [(p.event.done, p.event.total) for p in quant] == [(i, 8) for i in range(1, 9)]
    assert quant[0].message.startswith("Quantising the model") and quant[-1].fraction == 1.0
    first_page_done = next(i for i, p in enumerate(progress) if p.event.stage == "page_done")
    assert progress.index(quant[-1]) < first_page_done  # the model is ready before the page finishes
    env = {"DEEPSEEK_OCR_CACHE_DIR": str(tmp_path / "cli-cache")}
    args = ["convert", str(img), "-o", str(tmp_path / "cli"), "--model", str(tiny_checkpoint), "--engine",
            "deepseek", "--device", "cpu", "--dtype", "int8", "--mode", "global", "--max-new-tokens", "2",
            "--format", "md"]  # fmt: skip
    res = CliRunner().invoke(main, args, env=env)
    assert res.exit_code == 0, res.output
    assert "quantising: 100%" in res.output and "8/8" in res.output


def test_info_and_gpu_panel_say_which_preset_and_why(monkeypatch):
    from ocr_app.info import _precision_info
    from ocr_app.settings import Settings
    from ocr_app.ui.status_panel import engines_markdown

    _FakeCuda(monkeypatch, total=80 * GIB, free=79 * GIB)
    info = _precision_info(Settings(device="cuda", gpu_memory_gib=4))
    assert info["gpu budget"] == "4.0 GiB budget"
    assert info["precision"].startswith("auto: 4.0 GiB budget → mixed (4.0 GiB < ")
    assert _precision_info(Settings(device="cuda", dtype="int8"))["precision"] == "int8 (--dtype)"
    engine = {"state": "ready", "dtype": "bfloat16", "precision_reason": "4.0 GiB budget → mixed",
              "quant_source": "cache", "quantize_seconds": 41.2}  # fmt: skip
    text = engines_markdown({"default": "deepseek", "engines": {"deepseek": engine}})
    assert (
        "precision: 4.0 GiB budget → mixed" in text
        and "quantised weights: cache, quantised in 41.2 s" in text
    )


@pytest.mark.parametrize("damage", ["truncated", "header overwritten"])
def test_a_damaged_quantised_weights_cache_entry_is_detected_and_recomputed(
    tiny_checkpoint, tmp_path, eval_batches, damage, caplog
):
    from ocr_app.quant.checkpoint import WEIGHTS_FILE
    from ocr_app.quant.pipeline import PresetBackend

    cache, backend = tmp_path / "cache", PresetBackend("int8")
    first = backend.load_model(tiny_checkpoint, torch.device("cpu"), torch.float32, cache_dir=cache)
    entry = Path(first.ocr_quant_info["cache_path"])
    weights = entry / WEIGHTS_FILE
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"\0" * 64 + data[64:])
    caplog.set_level("WARNING", logger="ocr_app.quant.store")
    second = backend.load_model(tiny_checkpoint, torch.device("cpu"), torch.float32, cache_dir=cache)
    assert second.ocr_quant_info["source"] == "quantised now"  # not an error, not the damaged weights
    assert second.ocr_quant_info["cache_damaged"] == str(entry)
    assert f"quantised-weights cache: damaged entry {entry.name}" in caplog.text
    assert torch.equal(_logits(first, eval_batches), _logits(second, eval_batches))
    third = backend.load_model(tiny_checkpoint, torch.device("cpu"), torch.float32, cache_dir=cache)
    assert third.ocr_quant_info["source"] == "cache"  # written afresh
    assert torch.equal(_logits(first, eval_batches), _logits(third, eval_batches))
