"""Checkpoint names → the model's names, and the empty model they are assigned to.

Why one module: three loads read safetensors tensors without ``from_pretrained`` — a model wing's
bf16/fp16 fast load, the quantised checkpoint (``checkpoint.py``) and streaming quantisation
(``stream.py``) — and all must name and merge tensors exactly as transformers does. It names no model:
the class comes from the checkpoint's config (transformers' image-text-to-text auto mapping), so it sits
in this package, below the wings that use it. The rules
are transformers' own conversion table for the model type (hub names → module names, per-expert
tensors → fused experts); this module only groups a checkpoint's keys by the target they build.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

_SKELETON_LOCK = threading.Lock()


def natural_key(s: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


@dataclass
class Target:
    """One tensor of the model and the checkpoint keys it is built from."""

    sources: dict[str, list[str]] = field(default_factory=dict)  # converter pattern ("" = plain) → keys
    converter: Any = None

    def build(self, read: Callable[[str], torch.Tensor] | Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The target tensor from its sources (``read``: a key → tensor function or a mapping)."""
        get = read.__getitem__ if isinstance(read, Mapping) else read
        if self.converter is None:
            [key] = self.sources[""]
            return get(key)
        conv = self.converter
        data: dict[str, Any] = {
            p: [get(k) for k in sorted(keys, key=natural_key)] for p, keys in self.sources.items()
        }
        for op in conv.operations:
            data = op.convert(data, conv.source_patterns, conv.target_patterns)
        if len(data) != 1:
            raise ModelLoadError(f"converting checkpoint tensors gave {len(data)} tensors, not one")
        [x] = data.values()
        return x


def _conversions(model) -> tuple[list, list, Callable | None]:
    """transformers' renamings and converters for this model, and its key-renaming function."""
    try:
        from transformers.conversion_mapping import get_model_conversion_mapping
        from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key
    except ImportError:  # an older transformers: checkpoint keys must already be module names
        logger.warning("transformers has no weight conversion table: reading checkpoint keys as they are")
        return [], [], None
    transforms = get_model_conversion_mapping(model)
    renamings = [t for t in transforms if isinstance(t, WeightRenaming)]
    converters = [t for t in transforms if isinstance(t, WeightConverter)]
    return renamings, converters, rename_source_key


def plan_targets(model, keys: list[str]) -> dict[str, Target]:
    """Checkpoint ``keys`` grouped by the model tensor each one builds."""
    renamings, converters, rename = _conversions(model)
    meta = model.state_dict()
    targets: dict[str, Target] = {}
    for key in keys:
        if rename is None:
            name, pattern = key, None
        else:
            name, pattern = rename(key, renamings, converters, model.base_model_prefix, meta)
        target = targets.setdefault(name, Target())
        if pattern is not None:
            target.converter = next(c for c in converters if pattern in c.source_patterns)
        target.sources.setdefault(pattern or "", []).append(key)
    return targets


def empty_model(config):
    """The config's model class (through transformers' image-text-to-text auto mapping) with every
    weight on the meta device, for a load that
    assigns all of them. transformers' weight initialisation is skipped: on meta tensors it does no
    work but costs about 0.5 s of Python for the full-size model, on every load. Buffers (rotary
    tables) are still built by the modules themselves, on the CPU, in their own dtype. Both contexts
    patch torch/transformers globally while they are open, so builds are serialised: two engines loading
    at once (one per GPU) must not save each other's patched functions as the originals."""
    from accelerate import init_empty_weights
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    model_class = MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING[type(config)]

    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # pragma: no cover - older transformers: initialise the meta weights (slower)
        from contextlib import nullcontext as no_init_weights

    with _SKELETON_LOCK, init_empty_weights(include_buffers=False), no_init_weights():
        return model_class(config)


__all__ = ["Target", "empty_model", "natural_key", "plan_targets"]
