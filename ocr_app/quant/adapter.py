"""What the quantiser asks of a model: the model-adapter protocol.

Why: the quantiser knows no model and the model knows no quantiser (vLLM's split). Formats, kernels, AWQ,
streaming and the store are generic; which modules a model has, what kind of layer each one is, how a
calibration page becomes the model's input and which activations AWQ needs are the model's knowledge.
A model's wing implements ``QuantAdapter`` and registers a recipe for each of its layer kinds
(``recipes.register_recipe(kind, fn, version, builtin=True)``); ``apply``, ``stream``, ``calibration``,
``pipeline`` and ``store`` are handed the adapter and ask it, never the model's module names.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch
    from PIL import Image

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unit:
    """One piece of the model quantised at a time: its module path, the layer kinds whose recipes run
    on it (in this order), and whether it is a link of the calibration chain (a decoder layer: its
    recorded inputs feed AWQ, and its quantised outputs are the next link's inputs)."""

    prefix: str
    kinds: tuple[str, ...]
    chained: bool = False


class QuantAdapter(Protocol):
    """A model family as the quantiser sees it."""

    name: str  # enters the quantised-weights cache key
    kinds: tuple[str, ...]  # its layer kinds; each has a recipe in ``recipes``

    def units(self, model: Any) -> list[Unit]:
        """Every unit, in the order a streaming load reads them: all unchained units (the vision blocks)
        before the first chained one, because calibration pages run through them. Works on a skeleton
        whose weights are still on the meta device. Tensors under no unit stay in the float dtype."""
        ...

    def calibration_batches(
        self,
        processor: Any,
        pages: list[tuple[Image.Image, str]],
        max_text_tokens: int = 384,
        **images_kwargs: Any,
    ) -> list[dict]:
        """Processor outputs, one page each, for rendered pages (image, its Markdown): the sequences the
        model sees in use (its prompt, the page, the page's text)."""
        ...

    def record_inputs(self, layer: Any, rec: dict[str, list[torch.Tensor]]) -> list[Any]:
        """Hooks on chained unit ``layer`` that append the activations its recipes read to ``rec`` (by
        name); returns the handles (``calibration.tap_input`` / ``tap_output`` make them)."""
        ...

    def offloadable(self, name: str) -> bool:
        """Whether tensor ``name`` may stay on the CPU while its unit streams in (the large routed
        experts: they visit the device for the calibration forward, and are quantised a few at a time)."""
        ...

    def prepare(self, model: Any) -> None:
        """The model's own preparation of a streamed skeleton before any forward (e.g. bounding an
        attention's memory while calibration pages run through it)."""
        ...


def chained_units(adapter: QuantAdapter, model: Any) -> list[Unit]:
    return [u for u in adapter.units(model) if u.chained]


__all__ = ["QuantAdapter", "Unit", "chained_units"]
