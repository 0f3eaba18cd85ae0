"""Build a tiny random-weight DeepSeek-OCR-2 checkpoint.

Why: no model hub is reachable in CI or on a fresh offline machine, yet every model code path must
run through the real classes and the real ``from_pretrained`` loader. The checkpoint written here has
the real architecture (SAM + Qwen2-style encoder + MoE decoder, 1024/768 px views, 256/144 tokens per
view), tiny widths, and a byte-level BPE tokenizer that carries the model's special tokens.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
PAD = "<｜▁pad▁｜>"
IMAGE = "<image>"
# Special tokens the real tokenizer carries and that grounding output uses.
SPECIAL_TOKENS = [BOS, EOS, PAD, IMAGE, "<|grounding|>", "<|ref|>", "<|/ref|>", "<|det|>", "<|/det|>"]
# Regular (non-special) tokens that must be single ids so the repetition guard can exempt them.
ADDED_TOKENS = ["<td>", "</td>", "<tr>", "</tr>", "<table>", "</table>"]

_CORPUS = [
    "Convert the document to markdown.",
    "Free OCR. OCR this image. Parse the figure. Describe this image in detail. Locate in the image.",
    "# Title\n\n## Section\n\nThe quick brown fox jumps over the lazy dog. 0123456789",
    "| a | b |\n\\frac{1}{2} \\alpha + \\beta = \\gamma $$ x^2 $$ [[10, 20, 300, 400]]",
    "text title sub_title table table_caption image image_caption equation figure list",
]


def _build_tokenizer(out_dir: Path, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        model_max_length=8192,
    )
    fast.add_tokens(ADDED_TOKENS)
    fast.save_pretrained(out_dir)
    return fast


def tiny_config(image_token_id: int, vocab_size: int, bos_id: int, eos_id: int, pad_id: int):
    """Return a ``DeepseekOcr2Config`` with the real layout and tiny widths, wired to our tokenizer."""
    from transformers import DeepseekOcr2Config

    from ocr_app.engines.deepseek.configs import config_dict

    text = {"vocab_size": vocab_size, "bos_token_id": bos_id, "eos_token_id": eos_id, "pad_token_id": pad_id}
    return DeepseekOcr2Config(**config_dict("tiny", text=text, image_token_id=image_token_id))


def build_tiny_checkpoint(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a loadable tiny checkpoint (model, tokenizer, processor) into ``out_dir``."""
    import torch
    from transformers import (
        DeepseekOcr2ForConditionalGeneration,
        DeepseekOcr2ImageProcessor,
        DeepseekOcr2Processor,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer(out, vocab_size=400)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in (IMAGE, BOS, EOS, PAD)}
    config = tiny_config(ids[IMAGE], len(tokenizer), ids[BOS], ids[EOS], ids[PAD])
    torch.manual_seed(seed)
    model = DeepseekOcr2ForConditionalGeneration(config).eval()
    model.generation_config.bos_token_id = ids[BOS]
    model.generation_config.eos_token_id = ids[EOS]
    model.generation_config.pad_token_id = ids[PAD]
    model.save_pretrained(out)
    processor = DeepseekOcr2Processor(image_processor=DeepseekOcr2ImageProcessor(), tokenizer=tokenizer)
    processor.save_pretrained(out)
    logger.info("wrote tiny DeepSeek-OCR-2 checkpoint to %s", out)
    return out
