"""Prompt presets for DeepSeek-OCR-2 and the rule that turns a user's choice into a full prompt.

Why a table keyed by plain names: the CLI (``--prompt markdown``), the UI dropdown and the settings file
all refer to the same presets; labels for humans live in a separate mapping so nobody keys on display text.

Rule for ``resolve_prompt`` (also shown in CLI help):

* a preset name (case-insensitive, surrounding spaces ignored) gives that preset's prompt;
* ``locate`` needs ``locate_text``: the text to find is put between ``<|ref|>`` and ``<|/ref|>``;
* anything else is custom prompt text, used verbatim, with ``<image>\\n`` prepended when the text does
  not contain ``<image>`` already. A word that merely looks like a preset name (``"markdwon"``) is
  therefore sent to the model as custom text — it is never an error, because any text is a valid prompt.
"""

from __future__ import annotations

import logging

from ocr_app.exceptions import ConfigError

logger = logging.getLogger(__name__)

IMAGE_TOKEN = "<image>"

PRESETS: dict[str, str] = {
    # official DeepSeek-OCR-2 prompts
    "markdown": "<image>\n<|grounding|>Convert the document to markdown.",
    "free": "<image>\nFree OCR.",
    # v1 prompts that users know
    "ocr": "<image>\n<|grounding|>OCR this image.",
    "figure": "<image>\nParse the figure.",
    "describe": "<image>\nDescribe this image in detail.",
    "locate": "<image>\nLocate <|ref|>{text}<|/ref|> in the image.",
}

PRESET_LABELS: dict[str, str] = {
    "markdown": "Document → Markdown with layout boxes",
    "free": "Free OCR (plain text, no boxes)",
    "ocr": "OCR with boxes (v1 prompt)",
    "figure": "Parse a figure or chart",
    "describe": "Describe the image",
    "locate": "Locate a text in the page",
}

# Presets whose output carries grounding tags (<|ref|>/<|det|>) that the parser turns into boxes.
GROUNDED_PRESETS = frozenset({"markdown", "ocr", "locate"})


def resolve_prompt(preset_or_text: str, *, locate_text: str | None = None) -> str:
    """Return the full prompt (with ``<image>``) for a preset name or custom text (rule: module doc)."""
    if preset_or_text is None or not str(preset_or_text).strip():
        raise ConfigError("The prompt is empty: choose a preset (" + ", ".join(PRESETS) + ") or give text.")
    key = preset_or_text.strip().lower()
    if key == "locate":
        if locate_text is None or not locate_text.strip():
            raise ConfigError("The 'locate' prompt needs the text to find (e.g. --locate-text 'Total').")
        return PRESETS["locate"].format(text=locate_text.strip())
    if key in PRESETS:
        return PRESETS[key]
    text = preset_or_text
    if IMAGE_TOKEN not in text:
        text = f"{IMAGE_TOKEN}\n{text}"
    logger.debug("custom prompt: %r", text)
    return text


def is_grounded(prompt: str) -> bool:
    """Whether the model is asked for grounding tags (so boxes can be expected in its output)."""
    return "<|grounding|>" in prompt or "<|ref|>" in prompt


__all__ = ["GROUNDED_PRESETS", "IMAGE_TOKEN", "PRESETS", "PRESET_LABELS", "is_grounded", "resolve_prompt"]
