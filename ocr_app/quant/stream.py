"""Streaming quantisation at load: a float checkpoint becomes a quantised model one layer at a time.

Why: loading the bf16 checkpoint first and quantising afterwards puts the whole float model (6.3 GiB)
on the GPU, more than the cards ``mixed`` is made for. Here the model skeleton lives on the meta device,
tensors are read one at a time from the memory-mapped safetensors files, and each vision block and
decoder layer is materialised on the work device, quantised, and only then is the next one read. The GPU
holds the quantised model so far, one layer's float weights (a sparse layer's routed experts stay on the
CPU and reach the GPU a few experts at a time) and the calibration activations.

AWQ calibration runs on the same path, layer by layer: the rendered calibration pages go through the
(already quantised) vision tower and the embeddings, layer 0's inputs are caught, and the inputs of
layer k are the outputs of the quantised layers before it. Statistics, scale search and packing are
those of the load-then-quantise path (``calibration`` / ``apply``), so both give the same formats.

Checkpoint key names come from transformers' own conversion table for the model type (hub names →
module names, per-expert tensors → fused experts); its operations run on the few tensors of one target.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError, WeightsNotFoundError
from ocr_app.models.deepseek_ocr2.conversion import plan_targets

if TYPE_CHECKING:
    import torch

    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)

# (done, total, label): called after each quantised unit (the float parts first, then every vision
# block and decoder layer).
ProgressFn = Callable[[int, int, str], None]
# (unit prefix, model): called after each unit; tests use it to check what exists at that moment.
ObserverFn = Callable[[str, Any], None]

VISION = "model.vision_tower"
CALIB_SAM_ATTN_MB = 64
DECODER = "model.language_model.layers"


class _Caught(Exception):
    """Raised by the hook on decoder layer 0 once it has seen its inputs."""


class CheckpointReader:
    """The tensors of a safetensors checkpoint under the model's own names, read one target at a time.

    ``reads`` lists the target names in the order they were read (the streaming order, for tests).
    """

    def __init__(self, model_dir: str | Path, model) -> None:
        from safetensors import safe_open

        files = sorted(Path(model_dir).glob("*.safetensors"))
        if not files:
            raise WeightsNotFoundError(f"{model_dir} has no *.safetensors weights to quantise")
        self._file_of: dict[str, Path] = {}
        for f in files:
            with safe_open(str(f), framework="pt", device="cpu") as h:
                self._file_of.update(dict.fromkeys(h.keys(), f))
        self._handles: dict[Path, Any] = {}
        self.targets = plan_targets(model, list(self._file_of))
        self.reads: list[str] = []

    def tensor(self, name: str, device, dtype) -> torch.Tensor:
        """Target ``name`` on ``device``; floating tensors in ``dtype``."""
        target = self.targets.get(name)
        if target is None:
            raise ModelLoadError(f"the checkpoint has no tensor for {name}")
        self.reads.append(name)
        x = target.build(self._read)
        return x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype)

    def _read(self, key: str) -> torch.Tensor:
        from safetensors import safe_open

        f = self._file_of[key]
        if f not in self._handles:
            self._handles[f] = safe_open(str(f), framework="pt", device="cpu")
        return self._handles[f].get_tensor(key)

    def release(self) -> None:
        """Unmap the files: the pages read so far leave this process's RSS (they stay in the OS page
        cache), so host memory holds about one unit of the checkpoint at a time."""
        self._handles.clear()


@dataclass
class StreamReport:
    """What a streaming load did: seconds, units, work device, calibration size, GPU peak (bytes)."""

    seconds: float
    units: int
    device: str
    calib_pages: int
    calib_tokens: int
    peak_bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def build_skeleton(model_dir: str | Path, dtype: torch.dtype):
    """``DeepseekOcr2ForConditionalGeneration`` with every weight on the meta device (no memory)."""
    from transformers import AutoConfig

    from ocr_app.models.deepseek_ocr2.conversion import empty_model

    return empty_model(AutoConfig.from_pretrained(model_dir)).to(dtype)  # meta: only their dtype changes


def _set_tensor(model, name: str, value) -> None:
    from torch import nn

    parent, _, leaf = name.rpartition(".")
    mod = model.get_submodule(parent)
    if leaf in mod._parameters:
        mod._parameters[leaf] = nn.Parameter(value, requires_grad=False)
    else:
        mod._buffers[leaf] = value


def units_of(model) -> list[str]:
    """Module prefixes quantised one at a time: SAM blocks, vision-encoder layers, decoder layers."""
    tower = model.model.vision_tower
    units = [f"{VISION}.sam_encoder.layers.{i}" for i in range(len(tower.sam_encoder.layers))]
    units += [f"{VISION}.vision_encoder.layers.{i}" for i in range(len(tower.vision_encoder.layers))]
    units += [f"{DECODER}.{i}" for i in range(len(model.model.language_model.layers))]
    return units


def _is_expert(name: str) -> bool:
    return name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj"))


@contextmanager
def _experts_on(layer, device, offloaded: bool):
    """Offloaded float routed experts on ``device`` for the length of a calibration forward, then back
    (the CPU copy is kept, so nothing is copied back)."""
    ex = getattr(layer.mlp, "experts", None)
    if not offloaded or ex is None or not hasattr(ex, "gate_up_proj"):
        yield
        return
    from torch import nn

    kept = (ex._parameters["gate_up_proj"], ex._parameters["down_proj"])
    for name, p in zip(("gate_up_proj", "down_proj"), kept, strict=True):
        ex._parameters[name] = nn.Parameter(p.data.to(device, copy=True), requires_grad=False)
    try:
        yield
    finally:
        ex._parameters["gate_up_proj"], ex._parameters["down_proj"] = kept


def _out(x):
    return x[0] if isinstance(x, tuple) else x


def _catch_layer0_inputs(model, batches: list[dict], device, dtype) -> list[tuple[Any, dict]]:
    """Run the calibration pages up to decoder layer 0 (vision tower, projector, embeddings, mask and
    rotary tables as the model builds them) and keep layer 0's hidden states and keyword arguments."""
    from ocr_app.quant.calibration import model_inputs

    caught: list[tuple[Any, dict]] = []

    def hook(_mod, args, kwargs):
        kw = dict(kwargs)
        hidden = args[0] if args else kw.pop("hidden_states")
        for drop in ("cache", "past_key_values", "past_key_value", "use_cache"):
            kw.pop(drop, None)
        caught.append((hidden, kw))
        raise _Caught

    handle = model.model.language_model.layers[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        for batch in batches:
            try:
                model(**model_inputs(batch, device, dtype), use_cache=False, logits_to_keep=1)
            except _Caught:
                continue
            raise ModelLoadError("calibration forward never reached decoder layer 0")
    finally:
        handle.remove()
    return caught


def _calibration_batches(model_dir: Path, pages: int, processor=None, seed: int = 0) -> list[dict]:
    from transformers import AutoProcessor

    from ocr_app.quant.calibration import calibration_batches, render_calibration_pages

    processor = processor or AutoProcessor.from_pretrained(model_dir)
    return calibration_batches(processor, render_calibration_pages(pages, seed=seed))


def stream_quantize(
    model_dir: str | Path,
    preset: Preset,
    device: torch.device,
    dtype: torch.dtype,
    *,
    calib_pages: int = 4,
    calib_batches: list[dict] | None = None,
    progress: ProgressFn | None = None,
    observer: ObserverFn | None = None,
    offload_experts: bool | None = None,
) -> tuple[Any, dict[str, Any], StreamReport]:
    """Build the ``preset`` model from the float checkpoint ``model_dir`` on ``device`` without ever
    holding the float model there. Returns ``(model, recipe, report)``; the recipe is the one
    ``apply.quantize_model`` writes (plus ``"streamed": true``), so ``checkpoint.save_quantized`` stores it.

    ``calib_batches`` (processor outputs) replace the ``calib_pages`` rendered pages, e.g. in tests.
    ``offload_experts`` (default: on CUDA) keeps a sparse layer's float routed experts on the CPU; they
    visit the device for the calibration forward and are quantised from there a few at a time.
    """
    import torch
    from torch import nn

    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
    from ocr_app.quant.apply import RECIPE_FORMAT, RECIPE_VERSION, guard_fp16
    from ocr_app.quant.calibration import layer_activations, record_layer_inputs
    from ocr_app.quant.recipes import quantize_decoder_layer, quantize_vision_part

    model_dir = Path(model_dir)
    t0 = time.perf_counter()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model = build_skeleton(model_dir, dtype)
    reader = CheckpointReader(model_dir, model)
    names = list(model.state_dict().keys())
    missing = [n for n in names if n not in reader.targets]
    if missing:
        raise ModelLoadError(
            f"{model_dir} is not a complete DeepSeek-OCR-2 checkpoint: no tensor for {', '.join(missing[:5])}"
            + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        )
    # calibration pages go through SAM with a small bias slice: the vision pass stays well below a layer
    bound_sam_attention(model, CALIB_SAM_ATTN_MB)
    for mod in model.modules():  # non-persistent buffers (rotary tables) were built on the CPU
        for key, buf in list(mod._buffers.items()):
            if buf is not None and not buf.is_meta:
                mod._buffers[key] = buf.to(device)
    units = units_of(model)
    offload = device.type == "cuda" if offload_experts is None else offload_experts
    calibrate = bool(preset.awq and (calib_pages > 0 or calib_batches))
    recipe: dict[str, Any] = {
        "format": RECIPE_FORMAT,
        "version": RECIPE_VERSION,
        "preset": preset.name,
        "float_dtype": preset.float_dtype,
        "awq": calibrate,
        "streamed": True,
        "calibration": None,
        "modules": {},
        "layer_stats": {},
    }
    total = len(units) + 1
    done = 0

    def step(label: str) -> None:
        nonlocal done
        done += 1
        reader.release()
        if observer is not None:
            observer(label, model)
        if progress is not None:
            progress(done, total, label)

    def under(prefix: str) -> list[str]:
        return [n for n in names if n.startswith(prefix + ".")]

    def materialise(prefix: str, experts_device=None) -> None:
        for n in under(prefix):
            dev = experts_device if (experts_device is not None and _is_expert(n)) else device
            _set_tensor(model, n, reader.tensor(n, dev, dtype))

    in_units = {n for u in units for n in under(u)}
    with torch.no_grad():
        for n in names:  # embeddings, lm_head, norms, projector, SAM neck, queries: they stay float
            if n not in in_units:
                _set_tensor(model, n, reader.tensor(n, device, dtype))
        step("float parts")
        caught: list[tuple[Any, dict]] | None = None
        cpu = torch.device("cpu")
        for unit in units:
            if unit.startswith(VISION):
                materialise(unit)
                quantize_vision_part(model, unit, preset, recipe)
                step(unit)
                continue
            if caught is None and calibrate:
                quantize_vision_part(model, VISION, preset, recipe)  # tower linears outside the blocks
                batches = calib_batches or _calibration_batches(model_dir, calib_pages)
                caught = _catch_layer0_inputs(model, batches, device, dtype)
                recipe["calibration"] = {
                    "pages": len(batches),
                    "tokens": int(sum(h.shape[0] * h.shape[1] for h, _ in caught)),
                }
            i = int(unit.rsplit(".", 1)[1])
            layer = model.get_submodule(unit)
            materialise(unit, experts_device=cpu if offload else None)
            acts = None
            if caught:
                rec: dict = {}
                handles = record_layer_inputs(layer, i, rec)
                try:
                    with _experts_on(layer, device, offload):
                        for hidden, kw in caught:
                            layer(hidden, **kw)
                finally:
                    for h in handles:
                        h.remove()
                acts = layer_activations(rec, i)
            stats = quantize_decoder_layer(model, i, preset, acts, recipe)  # each kind by its recipe
            if stats or preset.decoder_bits:
                recipe["layer_stats"][str(i)] = stats
            del acts
            if caught:  # the next layer's inputs come from this (quantised) layer
                with _experts_on(layer, device, offload):
                    caught = [(_out(layer(hidden, **kw)), kw) for hidden, kw in caught]
            step(unit)
        quantize_vision_part(model, VISION, preset, recipe)
    left = [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
    if left:
        raise ModelLoadError(f"streaming load left {len(left)} tensors unread, e.g. {left[:3]}")
    model.to(device)  # anything a module built on the CPU by itself joins the rest (no copy otherwise)
    model.eval()
    for p in model.parameters():
        if isinstance(p, nn.Parameter):
            p.requires_grad_(False)
    try:
        from transformers import GenerationConfig

        model.generation_config = GenerationConfig.from_pretrained(model_dir)
    except OSError:
        logger.debug("no generation_config.json in %s", model_dir)
    if dtype == torch.float16:
        guard_fp16(model)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    cal = recipe["calibration"] or {}
    report = StreamReport(
        seconds=time.perf_counter() - t0,
        units=len(units),
        device=str(device),
        calib_pages=int(cal.get("pages", 0)),
        calib_tokens=int(cal.get("tokens", 0)),
        peak_bytes=peak,
    )
    logger.info("streamed %s into %s on %s in %.1f s", model_dir, preset.name, device, report.seconds)
    return model, recipe, report
