"""Streaming quantisation at load: a float checkpoint becomes a quantised model one layer at a time.

Why: loading the bf16 checkpoint first and quantising afterwards puts the whole float model (6.3 GiB)
on the GPU, more than the cards ``mixed`` is made for. Here the model skeleton lives on the meta device,
tensors are read one at a time from the memory-mapped safetensors files, and each unit the model's
adapter lists (a vision block, a decoder layer) is materialised on the work device, quantised, and only
then is the next one read. The GPU holds the quantised model so far, one unit's float weights (tensors
the adapter calls offloadable — a sparse layer's routed experts — stay on the CPU and reach the GPU a
few experts at a time) and the calibration activations.

AWQ calibration runs on the same path, unit by unit: the rendered calibration pages go through the
(already quantised) unchained units and the embeddings, the first chained unit's inputs are caught, and
the inputs of chained unit k are the outputs of the quantised ones before it. Statistics, scale search
and packing are those of the load-then-quantise path (``calibration`` / ``apply``), so both give the
same formats.

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
from ocr_app.quant.conversion import plan_targets

if TYPE_CHECKING:
    import torch

    from ocr_app.quant.adapter import QuantAdapter, Unit
    from ocr_app.quant.presets import Preset

logger = logging.getLogger(__name__)

# (done, total, label): called after each quantised unit (the float parts first, then every unit).
ProgressFn = Callable[[int, int, str], None]
# (unit prefix, model): called after each unit; tests use it to check what exists at that moment.
ObserverFn = Callable[[str, Any], None]


class _Caught(Exception):
    """Raised by the hook on the first chained unit once it has seen its inputs."""


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
    """The checkpoint's model (``conversion.empty_model``) with every weight on the meta device (no memory)."""
    from transformers import AutoConfig

    from ocr_app.quant.conversion import empty_model

    return empty_model(AutoConfig.from_pretrained(model_dir)).to(dtype)  # meta: only their dtype changes


def _set_tensor(model, name: str, value) -> None:
    from torch import nn

    parent, _, leaf = name.rpartition(".")
    mod = model.get_submodule(parent)
    if leaf in mod._parameters:
        mod._parameters[leaf] = nn.Parameter(value, requires_grad=False)
    else:
        mod._buffers[leaf] = value


@contextmanager
def _visiting(model, names: list[str], device):
    """The offloaded float tensors ``names`` on ``device`` for the length of a calibration forward, then
    back (the CPU copy is kept, so nothing is copied back). Names a recipe has since replaced are skipped."""
    from torch import nn

    kept = []
    for name in names:
        parent, _, leaf = name.rpartition(".")
        mod = model.get_submodule(parent)
        p = mod._parameters.get(leaf)
        if p is not None:
            kept.append((mod, leaf, p))
            mod._parameters[leaf] = nn.Parameter(p.data.to(device, copy=True), requires_grad=False)
    try:
        yield
    finally:
        for mod, leaf, p in kept:
            mod._parameters[leaf] = p


def _out(x):
    return x[0] if isinstance(x, tuple) else x


def _catch_first_inputs(model, first: str, batches: list[dict], device, dtype) -> list[tuple[Any, dict]]:
    """Run the calibration pages up to the first chained unit ``first`` (vision tower, projector,
    embeddings, mask and rotary tables as the model builds them) and keep its hidden states and keyword
    arguments."""
    from ocr_app.quant.calibration import model_inputs

    caught: list[tuple[Any, dict]] = []

    def hook(_mod, args, kwargs):
        kw = dict(kwargs)
        hidden = args[0] if args else kw.pop("hidden_states")
        for drop in ("cache", "past_key_values", "past_key_value", "use_cache"):
            kw.pop(drop, None)
        caught.append((hidden, kw))
        raise _Caught

    handle = model.get_submodule(first).register_forward_pre_hook(hook, with_kwargs=True)
    try:
        for batch in batches:
            try:
                model(**model_inputs(batch, device, dtype), use_cache=False, logits_to_keep=1)
            except _Caught:
                continue
            raise ModelLoadError(f"calibration forward never reached {first}")
    finally:
        handle.remove()
    return caught


def _calibration_batches(adapter: QuantAdapter, model_dir: Path, pages: int, seed: int = 0) -> list[dict]:
    from transformers import AutoProcessor

    from ocr_app.quant.calibration import render_calibration_pages

    processor = AutoProcessor.from_pretrained(model_dir)
    return adapter.calibration_batches(processor, render_calibration_pages(pages, seed=seed))


def stream_quantize(
    model_dir: str | Path,
    preset: Preset,
    device: torch.device,
    dtype: torch.dtype,
    *,
    adapter: QuantAdapter,
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
    ``offload_experts`` (default: on CUDA) keeps the tensors the adapter calls offloadable (a sparse
    layer's float routed experts) on the CPU; they visit the device for the calibration forward and are
    quantised from there a few at a time. ``adapter`` is the model as this package sees it (its units,
    calibration inputs and ``prepare`` hook on the skeleton): this package knows no model.
    """
    import torch

    t0 = time.perf_counter()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    job = _StreamJob(Path(model_dir), preset, adapter, device, dtype, progress, observer)
    adapter.prepare(job.model)
    job.move_buffers()
    calibrate = bool(preset.awq and (calib_pages > 0 or calib_batches))
    job.recipe["awq"] = calibrate
    with torch.no_grad():
        job.read_float_parts()
        offload = device.type == "cuda" if offload_experts is None else offload_experts
        batches = (
            (lambda: calib_batches or _calibration_batches(adapter, job.model_dir, calib_pages))
            if calibrate
            else None
        )
        job.quantise_units(batches, offload)
    job.finish()
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    cal = job.recipe["calibration"] or {}
    report = StreamReport(
        seconds=time.perf_counter() - t0,
        units=len(job.units),
        device=str(device),
        calib_pages=int(cal.get("pages", 0)),
        calib_tokens=int(cal.get("tokens", 0)),
        peak_bytes=peak,
    )
    logger.info("streamed %s into %s on %s in %.1f s", model_dir, preset.name, device, report.seconds)
    return job.model, job.recipe, report


class _StreamJob:
    """One streaming load: the meta skeleton, the checkpoint reader, the recipe being written and the
    progress count; ``stream_quantize`` runs its steps in order."""

    def __init__(self, model_dir: Path, preset: Preset, adapter: QuantAdapter, device, dtype, progress,
                 observer) -> None:  # fmt: skip
        from ocr_app.quant.apply import new_recipe

        self.model_dir, self.preset, self.adapter = model_dir, preset, adapter
        self.device, self.dtype = device, dtype
        self.progress, self.observer = progress, observer
        self.model = build_skeleton(model_dir, dtype)
        self.reader = CheckpointReader(model_dir, self.model)
        self.names = list(self.model.state_dict().keys())
        missing = [n for n in self.names if n not in self.reader.targets]
        if missing:
            raise ModelLoadError(
                f"{model_dir} is not a complete {adapter.name} checkpoint: no tensor for {', '.join(missing[:5])}"
                + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            )
        self.units = adapter.units(self.model)
        self.recipe = new_recipe(preset, [u.prefix for u in self.units], streamed=True)
        self.total = len(self.units) + 1
        self.done = 0

    def step(self, label: str) -> None:
        self.done += 1
        self.reader.release()
        if self.observer is not None:
            self.observer(label, self.model)
        if self.progress is not None:
            self.progress(self.done, self.total, label)

    def under(self, prefix: str) -> list[str]:
        return [n for n in self.names if n.startswith(prefix + ".")]

    def materialise(self, prefix: str, offload_device=None) -> list[str]:
        """Read the tensors under ``prefix``; those the adapter calls offloadable onto ``offload_device``
        when given. Returns the names so offloaded."""
        offloaded = []
        for n in self.under(prefix):
            off = offload_device is not None and self.adapter.offloadable(n)
            _set_tensor(
                self.model, n, self.reader.tensor(n, offload_device if off else self.device, self.dtype)
            )
            if off:
                offloaded.append(n)
        return offloaded

    def move_buffers(self) -> None:
        """Non-persistent buffers (rotary tables) were built on the CPU: they join the work device."""
        for mod in self.model.modules():
            for key, buf in list(mod._buffers.items()):
                if buf is not None and not buf.is_meta:
                    mod._buffers[key] = buf.to(self.device)

    def read_float_parts(self) -> None:
        """Every tensor under no unit (embeddings, output head, norms, projector…): read once, stays float."""
        in_units = {n for u in self.units for n in self.under(u.prefix)}
        for n in self.names:
            if n not in in_units:
                _set_tensor(self.model, n, self.reader.tensor(n, self.device, self.dtype))
        self.step("float parts")

    def quantise_units(self, batches: Callable[[], list[dict]] | None, offload: bool) -> None:
        """Every unit in the adapter's order; the chained ones calibrated when ``batches`` gives pages."""
        import torch

        from ocr_app.quant.recipes import quantize_unit

        caught: list[tuple[Any, dict]] | None = None
        i = 0  # the chained unit's index: the key of its AWQ statistics
        for unit in self.units:
            if not unit.chained:
                self.materialise(unit.prefix)
                quantize_unit(self.model, unit, self.preset, self.recipe)
                self.step(unit.prefix)
                continue
            if caught is None and batches is not None:
                pages = batches()
                caught = _catch_first_inputs(self.model, unit.prefix, pages, self.device, self.dtype)
                self.recipe["calibration"] = {
                    "pages": len(pages),
                    "tokens": int(sum(h.shape[0] * h.shape[1] for h, _ in caught)),
                }
            caught = self.quantise_chained(unit, i, caught, torch.device("cpu") if offload else None)
            self.step(unit.prefix)
            i += 1

    def quantise_chained(self, unit: Unit, i: int, caught, offload_device) -> list[tuple[Any, dict]] | None:
        """Read, calibrate and quantise one chained unit; returns the next one's calibration inputs."""
        from ocr_app.quant.calibration import layer_activations
        from ocr_app.quant.recipes import quantize_unit

        layer = self.model.get_submodule(unit.prefix)
        offloaded = self.materialise(unit.prefix, offload_device=offload_device)
        acts = None
        if caught:
            rec: dict = {}
            handles = self.adapter.record_inputs(layer, rec)
            try:
                with _visiting(self.model, offloaded, self.device):
                    for hidden, kw in caught:
                        layer(hidden, **kw)
            finally:
                for h in handles:
                    h.remove()
            acts = layer_activations(rec)
        stats = quantize_unit(self.model, unit, self.preset, self.recipe, acts)  # each kind's recipe
        if stats or self.preset.decoder_bits:
            self.recipe["layer_stats"][str(i)] = stats
        del acts
        if caught:  # the next unit's inputs come from this (quantised) one
            with _visiting(self.model, offloaded, self.device):
                caught = [(_out(layer(hidden, **kw)), kw) for hidden, kw in caught]
        return caught

    def finish(self) -> None:
        """Nothing left unread; eval mode, no grads, the generation config, fp16 clamps."""
        import torch
        from torch import nn

        from ocr_app.quant.apply import guard_fp16

        model = self.model
        left = [n for n, t in list(model.named_parameters()) + list(model.named_buffers()) if t.is_meta]
        if left:
            raise ModelLoadError(f"streaming load left {len(left)} tensors unread, e.g. {left[:3]}")
        model.to(
            self.device
        )  # anything a module built on the CPU by itself joins the rest (no copy otherwise)
        model.eval()
        for p in model.parameters():
            if isinstance(p, nn.Parameter):
                p.requires_grad_(False)
        try:
            from transformers import GenerationConfig

            model.generation_config = GenerationConfig.from_pretrained(self.model_dir)
        except OSError:
            logger.debug("no generation_config.json in %s", self.model_dir)
        if self.dtype == torch.float16:
            guard_fp16(model, [u.prefix for u in self.units])
