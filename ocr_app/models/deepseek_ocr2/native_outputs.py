"""What the native DeepSeek-OCR-2 modules return: plain dataclasses with transformers' field names.

Why a module of its own without torch: the decoding package hands vision features to either model kind
(``mm_encoder_outputs={"image": ImageFeatures(pooler_output=[...])}``; both read only ``pooler_output``),
and importing it must cost nothing: before, that wrapper came from ``transformers.modeling_outputs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ImageFeatures:
    """Vision features of a batch: ``pooler_output[i]`` is page i's ``[tokens, hidden]`` in the order its
    image tokens take them (tiles, global view, separator)."""

    pooler_output: list[Any]
    last_hidden_state: Any = None


@dataclass
class DecoderOutput:
    """The language model's output (``last_hidden_state``) and its K/V cache when asked for."""

    last_hidden_state: Any
    cache: Any = None

    @property
    def past_key_values(self) -> Any:
        return self.cache


@dataclass
class CausalLMOutput:
    """Logits of the kept positions, the K/V cache and the vision features used (if any)."""

    logits: Any
    cache: Any = None
    image_outputs: ImageFeatures | None = None

    @property
    def past_key_values(self) -> Any:
        return self.cache


__all__ = ["CausalLMOutput", "DecoderOutput", "ImageFeatures"]
