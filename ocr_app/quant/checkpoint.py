"""Pre-quantised checkpoints: write once, load straight to the device.

Layout of a quantised directory: ``model.safetensors`` (packed codes, scales, float tensors of the
parts that stay float), ``config.json`` and ``generation_config.json`` (unchanged model config), the
tokenizer/processor files copied from the source, and ``quant_recipe.json`` (preset, formats and shape
of every replaced module, AWQ statistics).

Loading builds the model skeleton with empty (meta) weights, swaps in empty quantised modules from the
recipe, then assigns tensors read from safetensors directly on the target device: the float weights of
quantised parts never exist anywhere, so GPU memory never holds more than the quantised model.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError, WeightsNotFoundError
from ocr_app.quant.conversion import empty_model

if TYPE_CHECKING:
    import torch
    from torch import nn

    from ocr_app.quant.adapter import QuantAdapter

logger = logging.getLogger(__name__)

RECIPE_FILE = "quant_recipe.json"
WEIGHTS_FILE = "model.safetensors"
_SKIP_COPY = {WEIGHTS_FILE, RECIPE_FILE, "model.safetensors.index.json"}


class DamagedCheckpointError(ModelLoadError):
    """A cached quantised checkpoint whose weights do not match their recorded checksum."""


class TensorDigest:
    """A running checksum over named tensors, in the order they are given (sort the names).

    xxh3-128 when ``xxhash`` is installed (≈ 20 GB/s: checking a 6 GB checkpoint as it loads costs a
    fraction of reading it), blake2b otherwise; the digest names its algorithm, and a digest made with an
    algorithm not available here never matches (the entry is then rebuilt)."""

    def __init__(self, algorithm: str | None = None) -> None:
        self.algorithm = algorithm or _default_algorithm()
        if self.algorithm == "xxh3_128":
            import xxhash

            self._h = xxhash.xxh3_128()
        else:
            self._h = hashlib.blake2b(digest_size=16)

    def update(self, name: str, tensor) -> None:
        import torch

        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        self._h.update(f"{name}|{flat.dtype}|{tuple(tensor.shape)}|".encode())
        self._h.update(memoryview(flat.view(torch.uint8).numpy()))

    def hexdigest(self) -> str:
        return f"{self.algorithm}:{self._h.hexdigest()}"


def _default_algorithm() -> str:
    try:
        import xxhash  # noqa: F401
    except ImportError:
        return "blake2b"
    return "xxh3_128"


def digest_for(expected: str | None) -> TensorDigest | None:
    """A digest to check ``expected`` (``"algo:hex"``) with, or None when it cannot be checked here."""
    algorithm = (expected or "").partition(":")[0]
    if algorithm not in ("xxh3_128", "blake2b") or (
        algorithm == "xxh3_128" and _default_algorithm() != algorithm
    ):
        return None
    return TensorDigest(algorithm)


def weights_checksum(path: Path) -> str:
    """The checksum of a safetensors file's tensors, in name order (what a checked load computes)."""
    from safetensors import safe_open

    digest = TensorDigest()
    with safe_open(str(path), framework="pt", device="cpu") as f:
        for name in sorted(f.keys()):
            digest.update(name, f.get_tensor(name))
    return digest.hexdigest()


def is_quantized_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is a directory written by :func:`save_quantized`."""
    return (Path(path) / RECIPE_FILE).is_file()


def save_quantized(
    model: nn.Module, recipe: dict[str, Any], out_dir: str | Path, source_dir: str | Path | None
) -> Path:
    """Write the quantised ``model`` and its ``recipe``; copy tokenizer/processor files from ``source_dir``."""
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if source_dir is not None:
        for f in Path(source_dir).iterdir():
            if (
                f.is_file()
                and f.name not in _SKIP_COPY
                and not f.name.endswith((".safetensors", ".bin", ".pt"))
            ):
                shutil.copy2(f, out / f.name)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(state, str(out / WEIGHTS_FILE), metadata={"format": "pt", "quant": recipe["preset"]})
    model.config.save_pretrained(out)
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(out)
    (out / RECIPE_FILE).write_text(json.dumps(recipe, indent=1))
    logger.info("wrote quantised checkpoint (%s) to %s", recipe["preset"], out)
    return out


def read_recipe(path: str | Path) -> dict[str, Any]:
    p = Path(path) / RECIPE_FILE
    if not p.is_file():
        raise WeightsNotFoundError(f"{path} is not a quantised checkpoint (no {RECIPE_FILE})")
    recipe = json.loads(p.read_text())
    if recipe.get("format") != "ocr-app-quant":
        raise ModelLoadError(f"{p} is not an ocr-app quantisation recipe")
    return recipe


def _empty_module(entry: dict[str, Any], dtype: torch.dtype) -> nn.Module:
    from ocr_app.quant.modules import Int8Linear, QuantExperts, QuantLinear

    kind = entry["kind"]
    if kind == "int8":
        return Int8Linear(entry["in_features"], entry["out_features"], entry["bias"], dtype, "meta")
    if kind == "wq":
        return QuantLinear(
            entry["in_features"], entry["out_features"], entry["bits"], entry["group"], entry["bias"],
            entry["input_scale"], dtype, "meta",
        )  # fmt: skip
    if kind == "experts":
        return QuantExperts(
            entry["num_experts"], entry["hidden_dim"], entry["intermediate_dim"], entry["bits"],
            entry["input_scale"], dtype, "meta",
        )  # fmt: skip
    raise ModelLoadError(f"unknown quantised module kind {kind!r} in the recipe")


def load_quantized(
    path: str | Path,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    *,
    timings: dict[str, float] | None = None,
    prefetch: Any = None,
    adapter: QuantAdapter | None = None,
    checksum: str | None = None,
    skeleton: Callable[[Path, torch.dtype], nn.Module] | None = None,
):
    """Load a pre-quantised checkpoint onto ``device``. Returns ``(model, recipe)``.

    ``skeleton``: builds the empty (meta) model of a checkpoint directory, generation config included
    (a wing's own modules); default: transformers' class for the config (``conversion.empty_model``).

    ``prefetch``: the loader's background read of this checkpoint onto ``device`` (``result()`` → the
    tensors, ``seconds``), started before transformers was imported; its tensors are used instead of
    reading the file here. ``adapter``: the model's, for a recipe written before recipes listed their
    units (the fp16 guard needs them).

    ``checksum`` (the quantised-weights cache's ``weights_checksum``) is checked over the tensors as they
    are read (``verify_s``); a mismatch raises ``DamagedCheckpointError``.

    ``dtype`` overrides the float dtype the checkpoint was written with (e.g. fp16 on GPUs without bf16).
    ``timings`` (updated) gets the seconds of each step: ``skeleton_s`` (config, empty model, quantised
    modules), ``read_s`` (tensors mapped out of the file: safetensors maps it, so the bytes are read
    when the copy first touches them), ``to_device_s`` (copies, page-cache reads included, and casts on
    ``device``), ``assign_s`` (into the modules, buffers moved, generation config).
    """
    import time

    import torch
    from safetensors import SafetensorError, safe_open

    from ocr_app.quant.apply import guard_fp16

    t = timings if timings is not None else {}
    t0 = time.perf_counter()
    path = Path(path)
    recipe = read_recipe(path)
    if not (path / WEIGHTS_FILE).is_file():
        raise WeightsNotFoundError(f"{path / WEIGHTS_FILE} is missing")
    dtype = dtype or getattr(torch, recipe.get("float_dtype", "bfloat16"))
    device = torch.device(device)
    model = _quantized_skeleton(path, recipe, dtype, skeleton)
    t1 = time.perf_counter()
    t["skeleton_s"] = t1 - t0
    # Tensor by tensor, as safetensors' load_file does it, with the read and the copy timed apart;
    # a cast happens after the copy (on the device) so a wider dtype never crosses the bus.
    state: dict[str, torch.Tensor] = {}
    read = copy = verify = 0.0
    digest = None
    if checksum is not None:
        digest = digest_for(checksum)
        if digest is None:
            raise DamagedCheckpointError(
                f"{path}: its checksum {checksum.partition(':')[0]} cannot be checked here"
            )

    def cast(k: str, v: torch.Tensor) -> torch.Tensor:
        if v.is_floating_point() and v.dtype != dtype and not k.endswith(("wscale", "gate.weight")):
            return v.to(dtype)
        return v

    if prefetch is not None:  # read in the background: here only what is left of it is waited for
        a = time.perf_counter()
        fetched = prefetch.result()
        if digest is not None:  # the opt-in prefetch path pays a copy back to check its tensors
            c = time.perf_counter()
            for k in sorted(fetched):
                digest.update(k, fetched[k])
            verify += time.perf_counter() - c
        state = {k: cast(k, v) for k, v in fetched.items()}
        read, copy = prefetch.seconds or 0.0, time.perf_counter() - a - verify
    else:
        try:
            with safe_open(str(path / WEIGHTS_FILE), framework="pt", device="cpu") as f:
                for k in sorted(f.keys()):
                    a = time.perf_counter()
                    v = f.get_tensor(k)
                    if digest is not None:  # hashed on the CPU copy the read makes anyway
                        c = time.perf_counter()
                        digest.update(k, v)
                        verify += time.perf_counter() - c
                    b = time.perf_counter()
                    state[k] = cast(k, v.to(device))
                    read, copy = read + b - a, copy + time.perf_counter() - b
        except SafetensorError as exc:  # cut short or a garbled header: not a safetensors file any more
            raise DamagedCheckpointError(f"{path / WEIGHTS_FILE} cannot be read: {exc}") from exc
    if device.type == "cuda":
        a = time.perf_counter()
        torch.cuda.synchronize(device)
        copy += time.perf_counter() - a
    t["read_s"], t["to_device_s"] = (read - verify if prefetch is None else read), copy
    if digest is not None:
        t["verify_s"] = verify
        if digest.hexdigest() != checksum:
            raise DamagedCheckpointError(f"{path}: its weights do not match the checksum recorded for them")
    t2 = time.perf_counter()
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as exc:
        raise ModelLoadError(f"quantised checkpoint {path} does not match its recipe: {exc}") from exc
    del state
    model.to(device)  # non-persistent buffers (rotary tables) built on the CPU
    model.eval()
    if skeleton is None:  # a skeleton brings its own generation config
        _transformers_generation_config(model, path)
    if dtype == torch.float16:
        units = recipe.get("units") or ([u.prefix for u in adapter.units(model)] if adapter else None)
        if units is None:
            raise ModelLoadError(f"{path}: an fp16 load needs the model's units, and its recipe lists none")
        guard_fp16(model, units)
    t["assign_s"] = time.perf_counter() - t2
    logger.info("loaded quantised checkpoint %s (%s) on %s in %.2f s", path, recipe["preset"], device,
                time.perf_counter() - t0)  # fmt: skip
    return model, recipe


def _quantized_skeleton(path: Path, recipe: dict[str, Any], dtype: torch.dtype, skeleton: Any) -> nn.Module:
    """The empty model (``skeleton``'s, else transformers' class for the config) with the recipe's empty
    quantised modules swapped in."""
    from ocr_app.quant.apply import set_module

    if skeleton is not None:
        model = skeleton(path, dtype)
    else:
        from transformers import AutoConfig

        model = empty_model(AutoConfig.from_pretrained(path))
    for name, entry in recipe["modules"].items():
        set_module(model, name, _empty_module(entry, dtype))
    return model


def _transformers_generation_config(model: nn.Module, path: Path) -> None:
    from transformers import GenerationConfig

    try:
        model.generation_config = GenerationConfig.from_pretrained(path)
    except OSError:
        logger.debug("no generation_config.json in %s", path)
