"""Load a DeepSeek-OCR-2 checkpoint into the native modules, straight into device memory.

Why: transformers' ``from_pretrained`` (its import, conversion and materialisation code) was ~5 s of a
10 s cold start on an H200 host (issue 32). Here: the config is parsed (``native_config``), the model is
built on the ``meta`` device (no memory, no initialisation), each parameter gets its device memory, and
``weights.WeightPrefetch`` reads every checkpoint tensor in a background thread through pinned staging
buffers with non-blocking copies *into those parameters* (a fused expert weight receives each expert's
slices in place): no second copy of the model, no per-tensor Python work on the loading thread, which
meanwhile builds the processor. Tensors stored in another dtype than the model's (an fp32 checkpoint
loaded in bf16, the router kept in fp32) are read beside and cast on the device.

Checkpoint names: the hub's original layout (``model.sam_model.blocks.N``, ``model.qwen2_model…``,
``model.layers.N.mlp.experts.E.gate_proj.weight`` …), which is also what transformers' ``save_pretrained``
writes for this model, is renamed with ``RENAMES`` and per-expert tensors are placed into
``experts.gate_up_proj`` (gate rows, then up rows) and ``experts.down_proj`` — the same result as
transformers' conversion table for ``deepseek_ocr2`` (tested). Names that already are module names (a
state dict saved as it is) are taken unchanged.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError

if TYPE_CHECKING:
    import torch
    from torch import nn

logger = logging.getLogger(__name__)

# (pattern, replacement), applied in this order, each at its first match (every matching rule fires).
RENAMES: tuple[tuple[str, str], ...] = (
    (r"sam_model\.blocks\.(\d+)\.norm1\.", r"vision_tower.sam_encoder.layers.\1.layer_norm1."),
    (r"sam_model\.blocks\.(\d+)\.norm2\.", r"vision_tower.sam_encoder.layers.\1.layer_norm2."),
    (r"sam_model\.blocks\.(\d+)\.attn\.", r"vision_tower.sam_encoder.layers.\1.attn."),
    (r"sam_model\.blocks\.(\d+)\.mlp\.", r"vision_tower.sam_encoder.layers.\1.mlp."),
    (r"sam_model\.patch_embed\.proj\.", "vision_tower.sam_encoder.patch_embed.projection."),
    (r"sam_model\.pos_embed", "vision_tower.sam_encoder.pos_embed"),
    (r"sam_model\.neck\.0\.", "vision_tower.sam_encoder.neck.conv1."),
    (r"sam_model\.neck\.1\.", "vision_tower.sam_encoder.neck.layer_norm1."),
    (r"sam_model\.neck\.2\.", "vision_tower.sam_encoder.neck.conv2."),
    (r"sam_model\.neck\.3\.", "vision_tower.sam_encoder.neck.layer_norm2."),
    (r"sam_model\.net_2\.", "vision_tower.sam_encoder.proj.conv1."),
    (r"sam_model\.net_3\.", "vision_tower.sam_encoder.proj.conv2."),
    (r"qwen2_model\.model\.model\.layers\.", "vision_tower.vision_encoder.layers."),
    (r"qwen2_model\.model\.model\.norm\.", "vision_tower.vision_encoder.norm."),
    (r"qwen2_model\.query_768\.", "vision_tower.query_768_resolution."),
    (r"qwen2_model\.query_1024\.", "vision_tower.query_1024_resolution."),
    (r"projector\.layers\.", "multi_modal_projector."),
    (r"view_seperator", "view_separator"),
    (r"(^|model\.)embed_tokens\.", r"\1language_model.embed_tokens."),
    (r"(^|model\.)layers\.", r"\1language_model.layers."),
    (r"(^|model\.)norm\.", r"\1language_model.norm."),
)
_RENAMES = tuple((re.compile(p), r) for p, r in RENAMES)
_EXPERT = re.compile(
    r"^(?P<experts>.+\.mlp\.experts)\.(?P<e>\d+)\.(?P<proj>gate_proj|up_proj|down_proj)\.weight$"
)
BASE_PREFIX = "model"


@dataclass(frozen=True)
class Placement:
    """Where one checkpoint tensor goes: parameter ``target``, or, for one expert's weight, its slice
    ``target[expert, rows]`` (``rows`` None = the whole expert)."""

    target: str
    expert: int | None = None
    rows: tuple[int, int] | None = None

    def view(self, param: torch.Tensor) -> torch.Tensor:
        if self.expert is None:
            return param
        x = param[self.expert]
        return x if self.rows is None else x[self.rows[0] : self.rows[1]]


def module_name(key: str, known: set[str] | dict[str, Any]) -> str:
    """The module name a checkpoint key renames to (unchanged when it already is one)."""
    if key in known:
        return key
    name = key
    for pattern, repl in _RENAMES:
        name = pattern.sub(repl, name, count=1)
    if name not in known and f"{BASE_PREFIX}.{name}" in known:  # a checkpoint of the base model alone
        name = f"{BASE_PREFIX}.{name}"
    return name


def place(key: str, shapes: dict[str, tuple[int, ...]]) -> Placement | None:
    """The placement of checkpoint tensor ``key`` in a model whose tensors have ``shapes``; None when
    the model has no such tensor."""
    name = module_name(key, shapes)
    if name in shapes:
        return Placement(name)
    m = _EXPERT.match(name)
    if m is None:
        return None
    experts, e, proj = m["experts"], int(m["e"]), m["proj"]
    if proj == "down_proj":
        return Placement(f"{experts}.down_proj", e) if f"{experts}.down_proj" in shapes else None
    fused = f"{experts}.gate_up_proj"
    if fused not in shapes:
        return None
    half = shapes[fused][1] // 2
    return Placement(fused, e, (0, half) if proj == "gate_proj" else (half, 2 * half))


def plan(keys: list[str], shapes: dict[str, tuple[int, ...]]) -> tuple[dict[str, Placement], list[str]]:
    """Each key's placement, and the keys the model has no place for. Raises ``ModelLoadError`` when a
    model tensor (or part of a fused one) is not covered exactly once."""
    placed: dict[str, Placement] = {}
    unused: list[str] = []
    covered: dict[str, set] = {}
    for key in keys:
        p = place(key, shapes)
        if p is None:
            unused.append(key)
            continue
        part = (p.expert, p.rows)
        seen = covered.setdefault(p.target, set())
        if part in seen:
            raise ModelLoadError(f"the checkpoint has {p.target} twice (last from {key})")
        seen.add(part)
        placed[key] = p
    missing = [name for name, shape in shapes.items() if not _complete(covered.get(name), shape)]
    if missing:
        raise ModelLoadError(f"the checkpoint lacks tensors of the model: {sorted(missing)[:5]}")
    return placed, unused


def _complete(parts: set | None, shape: tuple[int, ...]) -> bool:
    if not parts:
        return False
    if (None, None) in parts:
        return len(parts) == 1
    experts = {e for e, _ in parts}
    if experts != set(range(shape[0])):
        return False
    rows = {r for _, r in parts}
    return rows == {None} or (
        rows == {(0, shape[1] // 2), (shape[1] // 2, shape[1])} and len(parts) == 2 * shape[0]
    )


# --- the load -----------------------------------------------------------------------------------------
def materialize(model: nn.Module, device: torch.device) -> dict[str, torch.Tensor]:
    """Give every meta parameter uninitialised memory on ``device`` (same dtype; tied parameters stay
    one tensor); returns ``{name: parameter}``."""
    import torch
    from torch import nn

    made: dict[int, nn.Parameter] = {}
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is None:
                continue
            if id(p) not in made:
                made[id(p)] = nn.Parameter(
                    torch.empty(p.shape, dtype=p.dtype, device=device), requires_grad=False
                )
            module._parameters[name] = made[id(p)]
    return dict(model.named_parameters(remove_duplicate=False))


class NativeLoad:
    """A native load in progress: config and skeleton built, parameters allocated on ``device`` and the
    checkpoint being read into them by a background thread (started at construction). ``result()``
    waits, finishes (casts, buffers, checks) and returns the model; ``timings`` names each step."""

    def __init__(
        self, directory: Path, device: Any, dtype: torch.dtype, *, after: Callable[[], None] | None = None
    ) -> None:
        import torch

        from ocr_app.models.deepseek_ocr2.native_config import read_config, read_generation_config
        from ocr_app.models.deepseek_ocr2.native_model import build_skeleton
        from ocr_app.models.deepseek_ocr2.weights import WeightPrefetch, checkpoint_files, read_header

        t0 = time.perf_counter()
        self.directory = Path(directory)
        self.device = torch.device(device)
        config = read_config(self.directory)
        self.model = build_skeleton(config, dtype, read_generation_config(self.directory, config))
        files = checkpoint_files(self.directory)
        if not files:
            raise ModelLoadError(f"{self.directory} has no *.safetensors files")
        entries = {f: read_header(f) for f in files}
        t1 = time.perf_counter()
        shapes = {k: tuple(v.shape) for k, v in self.model.state_dict().items()}
        by_key = {t.name: t for es in entries.values() for t in es}
        self.placed, unused = plan(list(by_key), shapes)
        if unused:
            logger.warning("checkpoint tensors the model does not use (skipped): %s", sorted(unused)[:5])
        params = materialize(self.model, self.device)
        self.direct: dict[str, torch.Tensor] = {}
        self.cast: list[tuple[str, torch.Tensor]] = []
        for key, p in self.placed.items():
            dest = p.view(params[p.target].data)
            entry = by_key[key]
            if tuple(dest.shape) != entry.shape:
                raise ModelLoadError(
                    f"{key}: shape {entry.shape} in the checkpoint, {tuple(dest.shape)} in the model"
                )
            if _torch_dtype(entry.dtype) == dest.dtype:
                self.direct[key] = dest
            else:
                self.cast.append((key, dest))
        t2 = time.perf_counter()
        self.timings = {"skeleton_s": t1 - t0, "allocate_s": t2 - t1}
        wanted = {f: [t for t in es if t.name in self.placed] for f, es in entries.items()}
        self.read = WeightPrefetch(files, self.device, after=after, destinations=self.direct, entries=wanted)
        self.nbytes = self.read.nbytes

    def result(self) -> nn.Module:
        import torch

        t0 = time.perf_counter()
        tensors = self.read.result()
        t1 = time.perf_counter()
        with torch.no_grad():
            for key, dest in self.cast:
                dest.copy_(tensors[key])
        del tensors
        self.read.tensors, self.read._flat = {}, {}  # the cast sources: device memory not kept
        self.model.to(self.device)  # the rotary tables (CPU, float32); parameters are there already
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.timings.update(
            wait_s=t1 - t0, read_s=self.read.seconds or 0.0, cast_s=time.perf_counter() - t1,
            cast_tensors=float(len(self.cast)),
        )  # fmt: skip
        return self.model


def _torch_dtype(name: str) -> torch.dtype:
    import torch

    from ocr_app.models.deepseek_ocr2.weights import _DTYPES

    return getattr(torch, _DTYPES[name])


def native_skeleton(directory: str | Path, dtype: torch.dtype) -> nn.Module:
    """The model of ``directory``'s config on the meta device with its generation config (the quantiser's
    loader of pre-quantised checkpoints swaps its modules in and assigns the tensors)."""
    from ocr_app.models.deepseek_ocr2.native_config import read_config, read_generation_config
    from ocr_app.models.deepseek_ocr2.native_model import build_skeleton

    config = read_config(directory)
    return build_skeleton(config, dtype, read_generation_config(directory, config))


__all__ = [
    "RENAMES",
    "NativeLoad",
    "Placement",
    "materialize",
    "module_name",
    "native_skeleton",
    "place",
    "plan",
]
