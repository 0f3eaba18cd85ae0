"""The DeepSeek-OCR-2 architecture at two sizes, as plain dicts for ``DeepseekOcr2Config(**...)``.

Why one place: the tiny checkpoint (tests, ``ocr-app make-tiny-model``) and the GPU benchmarks (a
full-size random-weight model, since no weights can be downloaded there) must describe the same
architecture; the hub config is the authority when real weights are present. Plain dicts keep this
importable without transformers.
"""

from __future__ import annotations

import copy
from typing import Any

# GUIDE §1, counted on the full config: 3.389 B parameters.
FULL: dict[str, Any] = {
    "vision_config": {
        "sam_config": {},  # defaults: ViT-B, 12 layers, global attention at 2/5/8/11, neck 512 → 896
        "encoder_config": {
            "hidden_size": 896,
            "intermediate_size": 4864,
            "num_hidden_layers": 24,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "vocab_size": 151936,
            "max_position_embeddings": 32768,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    },
    "text_config": {
        "vocab_size": 129280,
        "hidden_size": 1280,
        "intermediate_size": 6848,
        "num_hidden_layers": 12,
        "num_attention_heads": 10,
        "num_key_value_heads": 10,
        "moe_intermediate_size": 896,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "num_experts_per_tok": 6,
        "n_group": 1,
        "topk_group": 1,
        "topk_method": "greedy",
        "max_position_embeddings": 8192,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "mlp_layer_types": ["dense"] + ["sparse"] * 11,
    },
    # image_token_id: transformers' default is the hub value; the tokenizer is the authority (realtok).
}

# Same layout, tiny widths: 1024/768 px views still give 256/144 tokens, so token counts are real.
TINY: dict[str, Any] = {
    "vision_config": {
        "sam_config": {
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "global_attn_indexes": [1],
            "output_channels": 16,
            "downsample_channels": [32, 64],
        },
        "encoder_config": {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "vocab_size": 16,
        },
    },
    "text_config": {
        "vocab_size": 129280,  # the real config's padded vocabulary: the real tokenizer's ids fit
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "moe_intermediate_size": 32,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "n_shared_experts": 1,
        "mlp_layer_types": ["dense", "sparse", "sparse"],
        "max_position_embeddings": 8192,
    },
}


def config_dict(size: str = "full", *, text: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """A deep copy of ``FULL`` or ``TINY`` with ``text_config`` keys and top-level keys overridden."""
    base = copy.deepcopy({"full": FULL, "tiny": TINY}[size])
    base["text_config"].update(text or {})
    base.update(top)
    return base


def random_model(cfg: dict[str, Any], device: Any, dtype: Any, *, seed: int = 0, experts: str | None = None):
    """A ``DeepseekOcr2ForConditionalGeneration`` with random weights for the GPU benchmarks.

    Built directly on ``device`` in ``dtype``; every matrix is drawn from N(0, 0.02), because the
    default init leaves SAM near zero and a benchmark needs realistic activations.
    """
    import torch
    from transformers import DeepseekOcr2Config, DeepseekOcr2ForConditionalGeneration

    config = DeepseekOcr2Config(**cfg)
    if experts is not None:
        config._experts_implementation = experts
        config.text_config._experts_implementation = experts
    torch.manual_seed(seed)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = DeepseekOcr2ForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(old)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.02)
    return model.eval()
