"""What the decoding package takes and gives: one page in (``DecodeRequest``), one page out
(``DecodeResult``), and how the decoder runs (``DecoderOptions``).

Why a module of its own: the slot state builds results, the step reads the options, the decoder and
the scheduler pass requests; keeping these records apart from all of them leaves no import loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec
from ocr_app.schema import EngineOutput, PageRequest, StopReason


@dataclass
class DecodeRequest:
    """One page to decode: prompt ids (image tokens expanded) and the extra model inputs for prefill.

    ``model_inputs`` holds what the model's forward takes besides ``input_ids`` for this page alone:
    ``pixel_values`` / ``pixel_values_local`` / ``num_local_patches`` or ``mm_encoder_outputs``.
    """

    input_ids: Sequence[int]
    model_inputs: dict[str, Any] = field(default_factory=dict)
    max_new_tokens: int = 8192
    key: Any = None  # opaque, handed back with the result
    # what the scheduler's ``encoder`` turns into ``model_inputs`` on the decoding thread, right before
    # the page's prefill (the engine's preprocessed page: its vision pass runs there, see scheduler)
    payload: Any = None


@dataclass
class DecodeResult:
    tokens: list[int]  # generated ids, EOS included when it ended the page
    stop: StopReason
    prompt_len: int
    first_token_s: float = 0.0  # admission start → first token on the device
    decode_s: float = 0.0  # first token → finish (wall clock, shared with the batch)
    key: Any = None


@dataclass(frozen=True)
class DecoderOptions:
    """How the decoder runs. ``graphs``: "auto" (CUDA graphs on CUDA), "on", "off" (eager)."""

    guard: GuardSpec = field(default_factory=GuardSpec)
    loop: LoopSpec = field(default_factory=LoopSpec)
    eos_ids: tuple[int, ...] = ()
    check_every: int = 16
    graphs: str = "auto"
    kernels: str = "auto"  # "auto": fused Triton kernels on CUDA; "triton": force; "torch": module calls only
    # "auto": the fused step's split-K Triton attention (lengths on the device: one graph per batch bucket);
    # "sdpa": torch's SDPA with a length mask over length buckets (the module step always uses SDPA)
    attention: str = "auto"
    len_step: int = 256  # attention length buckets are multiples of this
    prefill_batch: int = 4  # pages of equal prompt length prefilled in one forward


class PageSource(Protocol):
    """What the graph decoder takes from the engine it decodes for (``adapter.stream_pages``).

    Why a protocol: the engine calls into the decoding package, never the other way round; the
    package sees the engine only through these public members (``DeepSeekOcr2Engine`` has them).
    A prepared page is opaque here except for ``input_ids``, ``max_new_tokens``, ``features`` and
    ``vision_s``.
    """

    model: Any

    def preprocess(self, request: PageRequest) -> Any:
        """Mode, image processor and tokenizer for one page: the prepared page."""

    def attach_features(self, pages: list[Any]) -> None:
        """Fill each prepared page's ``features`` (vision cache first, then the encoder)."""

    def eos_ids(self) -> list[int]:
        """Token ids that end a page."""

    def guard_spec(self) -> GuardSpec:
        """The no-repeat rule both decode paths apply."""

    def page_output(self, page: Any, ids: list[int], stop: StopReason, timings: dict) -> EngineOutput:
        """The engine's output for one decoded page."""


__all__ = ["DecodeRequest", "DecodeResult", "DecoderOptions", "PageSource"]
