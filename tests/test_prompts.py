"""Prompt presets and the resolve rule, checked against the spec and the tiny checkpoint's tokenizer."""

from __future__ import annotations

import pytest

from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2.prompts import PRESET_LABELS, PRESETS, is_grounded, resolve_prompt


def test_official_and_v1_presets_are_the_published_prompts():
    assert resolve_prompt("markdown") == "<image>\n<|grounding|>Convert the document to markdown."
    assert resolve_prompt("free") == "<image>\nFree OCR."
    assert resolve_prompt("ocr") == "<image>\n<|grounding|>OCR this image."
    assert resolve_prompt("figure") == "<image>\nParse the figure."
    assert resolve_prompt("describe") == "<image>\nDescribe this image in detail."
    assert (
        resolve_prompt("locate", locate_text="Total") == "<image>\nLocate <|ref|>Total<|/ref|> in the image."
    )


def test_preset_names_are_case_and_space_insensitive():
    assert resolve_prompt("  Markdown ") == PRESETS["markdown"]
    assert resolve_prompt("FREE") == PRESETS["free"]


def test_custom_text_gets_image_token_once():
    assert resolve_prompt("Read the table.") == "<image>\nRead the table."
    assert resolve_prompt("<image>\nRead it.") == "<image>\nRead it."
    assert resolve_prompt("Extract <image> now") == "Extract <image> now"


def test_unknown_preset_looking_name_is_custom_text():
    assert resolve_prompt("markdwon") == "<image>\nmarkdwon"


@pytest.mark.parametrize("text", [None, "", "   "])
def test_locate_without_text_is_a_config_error(text):
    with pytest.raises(ConfigError, match="locate"):
        resolve_prompt("locate", locate_text=text)


def test_empty_prompt_is_a_config_error():
    with pytest.raises(ConfigError, match="empty"):
        resolve_prompt("  ")


def test_labels_cover_presets_and_keys_are_plain_names():
    assert set(PRESET_LABELS) == set(PRESETS)
    for key, label in PRESET_LABELS.items():
        assert key.isascii() and key.isidentifier()
        assert label and label != key


def test_grounded_detection():
    assert is_grounded(resolve_prompt("markdown"))
    assert is_grounded(resolve_prompt("locate", locate_text="x"))
    assert not is_grounded(resolve_prompt("free"))


def test_presets_tokenize_special_tags_as_single_ids(tiny_checkpoint):
    """Every tag in the presets must reach the model as ONE token id, or grounding cannot work."""
    from transformers import AutoProcessor

    tok = AutoProcessor.from_pretrained(tiny_checkpoint).tokenizer
    for name in PRESETS:
        prompt = resolve_prompt(name, locate_text="Total")
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        for tag in ("<image>", "<|grounding|>", "<|ref|>", "<|/ref|>"):
            if tag in prompt:
                assert ids.count(tok.convert_tokens_to_ids(tag)) == prompt.count(tag), (name, tag)
        assert tok.decode(ids, skip_special_tokens=False) == prompt
