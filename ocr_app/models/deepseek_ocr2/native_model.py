"""The whole native DeepSeek-OCR-2: vision tower, projector, language model, ``lm_head``.

Why: see ``native_vision``. ``DeepseekOcr2Native`` answers what the project asks of transformers'
``DeepseekOcr2ForConditionalGeneration`` — ``get_image_features(...).pooler_output``, a forward that takes
``input_ids`` with ``mm_encoder_outputs`` (or pixels), ``use_cache`` and ``logits_to_keep`` and returns
``logits`` and the K/V cache, ``config``, ``generation_config``, ``model.language_model``, ``lm_head`` — and
nothing else: no ``generate`` (the graph decoder decodes), no training losses.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ocr_app.models.deepseek_ocr2.native_config import GenerationSettings, Ocr2Config
from ocr_app.models.deepseek_ocr2.native_outputs import CausalLMOutput, ImageFeatures
from ocr_app.models.deepseek_ocr2.native_text import KVCache, TextDecoder
from ocr_app.models.deepseek_ocr2.native_vision import Linear, VisionTower

NATIVE_CLASS = "DeepseekOcr2Native"


class Ocr2Backbone(nn.Module):
    """``model``: vision tower, projector, language model and the view separator."""

    def __init__(self, config: Ocr2Config) -> None:
        super().__init__()
        self.config = config
        self.vision_tower = VisionTower(config.vision_config)
        self.multi_modal_projector = Linear(
            config.vision_config.encoder_config.hidden_size, config.text_config.hidden_size
        )
        self.language_model = TextDecoder(config.text_config)
        self.view_separator = nn.Parameter(torch.empty(config.text_config.hidden_size))

    def get_input_embeddings(self) -> nn.Embedding:
        return self.language_model.embed_tokens

    def get_image_features(
        self,
        pixel_values: torch.Tensor,
        pixel_values_local: torch.Tensor | None = None,
        num_local_patches: list[int] | torch.Tensor | None = None,
        **_: Any,
    ) -> ImageFeatures:
        """Per image: its tiles' features, the global view's, the separator (``pooler_output``)."""
        if isinstance(num_local_patches, torch.Tensor):
            num_local_patches = num_local_patches.tolist()
        glob = self.multi_modal_projector(self.vision_tower(pixel_values))
        locals_: list[torch.Tensor | None] = [None] * glob.shape[0]
        if pixel_values_local is not None:
            tiles = self.multi_modal_projector(self.vision_tower(pixel_values_local))
            locals_ = list(torch.split(tiles, list(num_local_patches), dim=0))
        sep = self.view_separator.to(glob.device).unsqueeze(0)
        hidden = glob.shape[-1]
        features = []
        for g, tiles in zip(glob, locals_, strict=True):
            parts = [g.reshape(-1, hidden), sep]
            if tiles is not None and tiles.shape[0]:
                parts.insert(0, tiles.reshape(-1, hidden))
            features.append(torch.cat(parts, dim=0))
        return ImageFeatures(pooler_output=features, last_hidden_state=glob)

    def embed(
        self,
        input_ids: torch.Tensor,
        image_features: ImageFeatures | None,
        pixel_values: torch.Tensor | None = None,
        pixel_values_local: torch.Tensor | None = None,
        num_local_patches: Any = None,
    ) -> tuple[torch.Tensor, ImageFeatures | None]:
        """Token embeddings with the image tokens' rows replaced by the vision features, in order."""
        x = self.get_input_embeddings()(input_ids)
        if image_features is None and pixel_values is not None:
            image_features = self.get_image_features(pixel_values, pixel_values_local, num_local_patches)
        if image_features is not None:
            feats = torch.cat(list(image_features.pooler_output), dim=0).to(x.device, x.dtype)
            slots = input_ids == self.config.image_token_id
            if int(slots.sum()) != feats.shape[0]:
                raise ValueError(
                    f"Image features and image tokens do not match: {int(slots.sum())} tokens, "
                    f"{feats.shape[0]} features"
                )
            x = x.masked_scatter(slots[..., None], feats)
        return x, image_features


class DeepseekOcr2Native(nn.Module):
    """``DeepseekOcr2ForConditionalGeneration``'s modules and the calls the project makes on it."""

    def __init__(self, config: Ocr2Config, generation_config: GenerationSettings | None = None) -> None:
        super().__init__()
        self.config = config
        self.generation_config = generation_config or GenerationSettings()
        self.model = Ocr2Backbone(config)
        self.lm_head = Linear(config.text_config.hidden_size, config.text_config.vocab_size, bias=False)
        if config.tie_word_embeddings or config.text_config.tie_word_embeddings:
            self.lm_head.weight = self.model.language_model.embed_tokens.weight

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.get_input_embeddings()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def get_image_features(self, pixel_values, pixel_values_local=None, num_local_patches=None, **kw):
        return self.model.get_image_features(pixel_values, pixel_values_local, num_local_patches, **kw)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        pixel_values: torch.Tensor | None = None,
        pixel_values_local: torch.Tensor | None = None,
        num_local_patches: Any = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        cache: KVCache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int = 0,
        mm_encoder_outputs: dict[str, Any] | None = None,
        past_key_values: KVCache | None = None,
        **_: Any,
    ) -> CausalLMOutput:
        """Logits of the last ``logits_to_keep`` positions (0: all) and the cache (``use_cache``)."""
        if pixel_values is not None and mm_encoder_outputs is not None:
            raise ValueError("give pixel_values or mm_encoder_outputs, not both")
        image = (mm_encoder_outputs or {}).get("image")
        if inputs_embeds is None:
            inputs_embeds, image = self.model.embed(
                input_ids, image, pixel_values, pixel_values_local, num_local_patches
            )
        out = self.model.language_model(
            inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids,
            cache=cache if cache is not None else past_key_values, use_cache=use_cache,
        )  # fmt: skip
        hidden = out.last_hidden_state
        if logits_to_keep:
            hidden = hidden[:, -int(logits_to_keep) :, :]
        return CausalLMOutput(logits=self.lm_head(hidden), cache=out.cache, image_outputs=image)


def build_skeleton(config: Ocr2Config, dtype: torch.dtype, generation: GenerationSettings | None = None):
    """The model on the ``meta`` device in ``dtype`` (the router's weights in float32, as transformers
    keeps them): shapes and names only, no memory and no initialisation. The rotary tables are real
    (CPU, float32); moving the model moves them."""
    from ocr_app.models.deepseek_ocr2.native_text import TopkRouter

    with torch.device("meta"):
        model = DeepseekOcr2Native(config, generation)
    for module in model.modules():  # parameters only: the rotary tables stay float32
        want = torch.float32 if isinstance(module, TopkRouter) else dtype
        for name, p in list(module._parameters.items()):
            if p is not None and p.dtype != want:
                module._parameters[name] = nn.Parameter(p.data.to(want), requires_grad=False)
            elif p is not None:
                p.requires_grad_(False)
    if config.tie_word_embeddings or config.text_config.tie_word_embeddings:
        model.lm_head.weight = model.model.language_model.embed_tokens.weight
    return model.eval()


__all__ = ["NATIVE_CLASS", "DeepseekOcr2Native", "Ocr2Backbone", "build_skeleton"]
