"""Build a tiny DeepSeek-OCR-2 checkpoint with the real tokenizer and processor settings.

Why: no model hub is reachable in CI or on a fresh offline machine, yet every model code path must
run through the real classes and the real ``from_pretrained`` loader. The checkpoint written here has
the real architecture (SAM + Qwen2-style encoder + MoE decoder, 1024/768 px views, 256/144 tokens per
view), tiny widths, the real tokenizer (rebuilt by ``realtok``), the real config's 129,280 embedding rows
and special ids, and the processor settings of the transformers-native DeepSeek-OCR-2 processor config.
Weights are random here; ``tiny_train`` trains them so that the output is known.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

logger = logging.getLogger(__name__)

# Settings of the transformers-native DeepSeek-OCR-2 processor config (derived with transformers'
# own conversion code from the hub's processor_config.json): copied as values, nothing is read.
PROCESSOR_SETTINGS: dict[str, Any] = {"patch_size": 16, "downsample_ratio": 4}
IMAGE_PROCESSOR_SETTINGS: dict[str, Any] = {
    "background_color": [127, 127, 127],
    "crop_to_patches": True,
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "max_patches": 6,
    "min_patches": 2,
    "resample": 3,  # bicubic
    "rescale_factor": 1 / 255,
    "size": {"height": 1024, "width": 1024},
    "tile_size": 768,
}


def special_ids(tokenizer: PreTrainedTokenizerFast) -> dict[str, int]:
    """BOS, EOS, PAD and ``<image>`` ids, as the tokenizer says."""
    from ocr_app.models.deepseek_ocr2.realtok import IMAGE

    return {
        "bos": int(tokenizer.bos_token_id),
        "eos": int(tokenizer.eos_token_id),
        "pad": int(tokenizer.pad_token_id),
        "image": int(tokenizer.convert_tokens_to_ids(IMAGE)),
    }


def tiny_config(tokenizer: PreTrainedTokenizerFast, **text: Any):
    """A ``DeepseekOcr2Config`` with the real layout and tiny widths, wired to the tokenizer's ids."""
    from transformers import DeepseekOcr2Config

    from ocr_app.models.deepseek_ocr2.configs import config_dict

    ids = special_ids(tokenizer)
    text = {"bos_token_id": ids["bos"], "eos_token_id": ids["eos"], "pad_token_id": ids["pad"], **text}
    config = DeepseekOcr2Config(**config_dict("tiny", text=text, image_token_id=ids["image"]))
    if config.text_config.vocab_size < len(tokenizer):
        raise ValueError(f"vocab_size {config.text_config.vocab_size} < tokenizer size {len(tokenizer)}")
    return config


def make_processor(tokenizer: PreTrainedTokenizerFast):
    """The ``DeepseekOcr2Processor`` of the transformers-native config, around ``tokenizer``."""
    from transformers import DeepseekOcr2ImageProcessor, DeepseekOcr2Processor

    image_processor = DeepseekOcr2ImageProcessor(**IMAGE_PROCESSOR_SETTINGS)
    return DeepseekOcr2Processor(image_processor=image_processor, tokenizer=tokenizer, **PROCESSOR_SETTINGS)


def new_model(tokenizer: PreTrainedTokenizerFast, seed: int = 0):
    """A random-weight tiny model whose generation config carries the tokenizer's BOS/EOS/PAD.

    The weights are the same bytes on every machine (``fill_weights``), so a decoder trained on this
    model's vision features elsewhere (``tiny_train``'s pinned weights) fits it here.
    """
    from transformers import DeepseekOcr2ForConditionalGeneration

    config = tiny_config(tokenizer)
    model = DeepseekOcr2ForConditionalGeneration(config).eval()
    fill_weights(model, seed)
    ids = special_ids(tokenizer)
    model.generation_config.bos_token_id = ids["bos"]
    model.generation_config.eos_token_id = ids["eos"]
    model.generation_config.pad_token_id = ids["pad"]
    return model


def fill_weights(model: Any, seed: int, std: float = 0.02) -> None:
    """Redraw every randomly initialised parameter from NumPy's PCG64, seeded by ``seed`` and its name.

    Why not ``torch.manual_seed``: torch's CPU ``normal_`` takes another code path with AVX2 than
    without (measured: other bytes under ``ATEN_CPU_CAPABILITY=default``), so the same seed gave other
    weights on another machine. NumPy's generator is plain integer arithmetic. Matrices get
    N(0, ``std``) — on the vision side too: the default init leaves SAM's patch embedding near zero,
    which makes every page's features the same. Vectors that transformers draws at random (the view
    separator) get N(0, 1/√n); constant vectors (norm weights, biases) keep their value.
    """
    import zlib

    import numpy as np
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() < 2 and bool((p == p.flatten()[0]).all()):
                continue  # a constant: ones or zeros by construction
            scale = std if p.dim() >= 2 else p.shape[-1] ** -0.5
            rng = np.random.Generator(np.random.PCG64([seed, zlib.crc32(name.encode())]))
            values = rng.standard_normal(tuple(p.shape), dtype=np.float32) * np.float32(scale)
            p.copy_(torch.from_numpy(values))


def save_checkpoint(model: Any, tokenizer: PreTrainedTokenizerFast, out_dir: str | Path) -> Path:
    """Write model, tokenizer and processor so that ``from_pretrained`` loads them back."""
    from transformers.utils import logging as hf_logging

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # "Writing model shards" for one 68 MB file is noise
    try:
        model.save_pretrained(out)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    make_processor(tokenizer).save_pretrained(out)
    return out


def build_tiny_checkpoint(out_dir: str | Path, seed: int = 0, *, cache_dir: Path | None = None) -> Path:
    """Write a loadable tiny random-weight checkpoint (model, real tokenizer, processor) into ``out_dir``."""
    from ocr_app.models.deepseek_ocr2.realtok import load_tokenizer

    tokenizer = load_tokenizer(cache_dir)
    out = save_checkpoint(new_model(tokenizer, seed), tokenizer, out_dir)
    logger.info("wrote tiny random-weight DeepSeek-OCR-2 checkpoint to %s", out)
    return out
