"""DeepSeek-OCR-2's ``config.json`` and ``generation_config.json`` as light typed objects.

Why: the native loader (``native_weights``) must build the model without importing transformers, whose
config classes come with its model machinery (seconds of a cold start, issue 32). These objects carry the
same attribute names the project reads from transformers' ``DeepseekOcr2Config`` (``text_config.hidden_size``,
``num_experts_per_tok``, ``vision_config.sam_config`` …) and the same defaults where a file leaves a
field out (transformers 5.24's config classes), so every consumer (decoder, estimates, warm-up, quantiser)
reads either kind. Keys this module does not know are kept and written back unchanged.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, ClassVar

from ocr_app.exceptions import ModelLoadError

logger = logging.getLogger(__name__)

MODEL_TYPE = "deepseek_ocr2"
CONFIG_FILE = "config.json"
GENERATION_FILE = "generation_config.json"


class _Section:
    """One section of a config file: ``DEFAULTS`` overlaid with the file's values, as attributes."""

    DEFAULTS: ClassVar[dict[str, Any]] = {}
    NESTED: ClassVar[dict[str, type[_Section]]] = {}

    def __init__(self, values: dict[str, Any] | None = None, **overrides: Any) -> None:
        raw = {**(values or {}), **overrides}
        merged = {**self.DEFAULTS, **raw}
        for key, cls in self.NESTED.items():
            sub = merged.get(key)
            merged[key] = sub if isinstance(sub, _Section) else cls(sub or {})
        self.__dict__.update(merged)
        self._keys = list(merged)
        self._finish(raw)

    def _finish(self, raw: dict[str, Any]) -> None:
        """Derived fields, as transformers' ``__post_init__`` computes them."""

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for key in self._keys:
            value = getattr(self, key)
            out[key] = value.to_dict() if isinstance(value, _Section) else value
        return out

    def to_json_string(self, use_diff: bool = False) -> str:
        """The whole config as JSON (``use_diff`` is accepted for transformers' signature; the full
        config is always written: it is what identifies the model in cache keys)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json_string()})"


class SamConfig(_Section):
    """SAM ViT-B (``vision_config.sam_config``)."""

    DEFAULTS: ClassVar[dict[str, Any]] = {
        "model_type": "deepseek_ocr2_sam_vision_model",
        "hidden_size": 768,
        "output_channels": 256,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "num_channels": 3,
        "image_size": 1024,
        "patch_size": 16,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-6,
        "attention_dropout": 0.0,
        "qkv_bias": True,
        "mlp_ratio": 4.0,
        "use_abs_pos": True,
        "use_rel_pos": True,
        "window_size": 14,
        "global_attn_indexes": [2, 5, 8, 11],
        "mlp_dim": None,
        "downsample_channels": None,
    }

    def _finish(self, raw: dict[str, Any]) -> None:
        if self.downsample_channels is None:
            self.downsample_channels = [512, 896]
        if self.mlp_dim is None:
            self.mlp_dim = int(self.hidden_size * self.mlp_ratio)
        self.scale = self.hidden_size // 2
        if "scale" not in self._keys:
            self._keys.append("scale")


def _rope(section: _Section, raw: dict[str, Any]) -> None:
    """``rope_parameters`` (older files: a bare ``rope_theta``); only the default RoPE is built natively."""
    if section.rope_parameters is None:
        section.rope_parameters = {
            "rope_type": "default",
            "rope_theta": float(raw.get("rope_theta", 10000.0)),
        }
    rope_type = section.rope_parameters.get("rope_type", section.rope_parameters.get("type", "default"))
    if rope_type != "default":
        raise ModelLoadError(
            f"RoPE type {rope_type!r} is not built by the native loader; use DEEPSEEK_OCR_LOADER=transformers."
        )


class EncoderConfig(_Section):
    """The Qwen2-style vision encoder (``vision_config.encoder_config``)."""

    DEFAULTS: ClassVar[dict[str, Any]] = {
        "model_type": "deepseek_ocr2_encoder",
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "rope_parameters": None,
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
        "layer_types": None,
        "attention_dropout": 0.0,
    }

    def _finish(self, raw: dict[str, Any]) -> None:
        if not self.use_sliding_window:
            self.sliding_window = None
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.layer_types is None:
            self.layer_types = ["full_attention"] * self.num_hidden_layers
        if any(t != "full_attention" for t in self.layer_types):
            raise ModelLoadError("sliding-window vision attention is not built by the native loader")
        # transformers reads ``getattr(config, "head_dim", hidden // heads)``: a file's value wins
        self.head_dim = int(raw.get("head_dim") or self.hidden_size // self.num_attention_heads)
        _rope(self, raw)


class VisionConfig(_Section):
    DEFAULTS: ClassVar[dict[str, Any]] = {"model_type": "deepseek_ocr2_vision"}
    NESTED: ClassVar[dict[str, type[_Section]]] = {"sam_config": SamConfig, "encoder_config": EncoderConfig}


class TextConfig(_Section):
    """The DeepSeek-V2-style MoE decoder (``text_config``)."""

    DEFAULTS: ClassVar[dict[str, Any]] = {
        "model_type": "deepseek_ocr2_text",
        "vocab_size": 102400,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": None,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "pad_token_id": None,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "tie_word_embeddings": False,
        "rope_parameters": None,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "n_group": None,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "routed_scaling_factor": 1.0,
        "topk_group": None,
        "topk_method": "greedy",
        "num_experts_per_tok": None,
        "moe_intermediate_size": 1407,
        "mlp_layer_types": None,
    }

    def _finish(self, raw: dict[str, Any]) -> None:
        self.head_dim = self.hidden_size // self.num_attention_heads  # transformers ignores a file's value
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.mlp_layer_types is None or len(self.mlp_layer_types) < self.num_hidden_layers:
            raise ModelLoadError("text_config.mlp_layer_types must name dense/sparse for every decoder layer")
        if self.topk_method not in ("greedy", "group_limited_greedy"):
            raise ModelLoadError(f"unknown MoE routing {self.topk_method!r}")
        _rope(self, raw)

    @property
    def num_experts(self) -> int:
        """transformers' alias of ``n_routed_experts``."""
        return int(self.n_routed_experts)


class Ocr2Config(_Section):
    """The whole ``config.json`` of a transformers-format DeepSeek-OCR-2 checkpoint."""

    DEFAULTS: ClassVar[dict[str, Any]] = {
        "model_type": MODEL_TYPE,
        # no id written out (tests/test_realtok.py): a config without one gets the tokenizer's ``<image>``
        # id from the load (``loading._load_native``), the authority for token ids
        "image_token_id": None,
        "tie_word_embeddings": False,
    }
    NESTED: ClassVar[dict[str, type[_Section]]] = {"vision_config": VisionConfig, "text_config": TextConfig}

    def get_text_config(self, decoder: bool = True) -> TextConfig:
        return self.text_config

    def save_pretrained(self, directory: str | Path) -> None:
        Path(directory, CONFIG_FILE).write_text(self.to_json_string())


class GenerationSettings(_Section):
    """``generation_config.json``: the ids the engine reads (BOS, EOS, PAD); other keys are kept."""

    DEFAULTS: ClassVar[dict[str, Any]] = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}

    def save_pretrained(self, directory: str | Path) -> None:
        Path(directory, GENERATION_FILE).write_text(self.to_json_string())


def read_config(directory: str | Path) -> Ocr2Config:
    """The checkpoint's ``config.json``; ``ModelLoadError`` for another model type or an unreadable file."""
    path = Path(directory) / CONFIG_FILE
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    if raw.get("model_type") != MODEL_TYPE:
        raise ModelLoadError(
            f"{path} describes a {raw.get('model_type')!r} model, not {MODEL_TYPE!r} (use the "
            "transformers-format checkpoint deepseek-community/DeepSeek-OCR-2)."
        )
    return Ocr2Config(raw)


def read_generation_config(directory: str | Path, config: Ocr2Config) -> GenerationSettings:
    """``generation_config.json``, or (as transformers does without one) the text config's ids."""
    path = Path(directory) / GENERATION_FILE
    if path.is_file():
        try:
            return GenerationSettings(json.loads(path.read_text()))
        except ValueError as exc:
            raise ModelLoadError(f"cannot read {path}: {exc}") from exc
    text = config.text_config
    return GenerationSettings(
        bos_token_id=text.bos_token_id, eos_token_id=text.eos_token_id, pad_token_id=text.pad_token_id
    )


__all__ = [
    "EncoderConfig",
    "GenerationSettings",
    "Ocr2Config",
    "SamConfig",
    "TextConfig",
    "VisionConfig",
    "read_config",
    "read_generation_config",
]
