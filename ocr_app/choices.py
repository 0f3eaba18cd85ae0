"""The vocabularies every layer reads: the engine kinds (by name, with their facts) and the precisions.

Why one low module: settings validate against these, the CLI and the web app build their choices from
them, and the writer and the converter look an engine's facts up by the name a page carries. None of
them may import an engine or the DeepSeek-OCR-2 wing for that (it would pull their code, and torch,
into processes that never read a scan), so the names live here and the code that runs them above.

An engine kind is registered once (``register_engine``), built-ins below; a plug-in or a test
registers its own with a factory, and ``stack.build_engines`` offers it like the built-in ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from ocr_app.engine_api import Capabilities
from ocr_app.exceptions import ConfigError

if TYPE_CHECKING:
    from ocr_app.engine_api import Engine

logger = logging.getLogger(__name__)

# --- precisions -----------------------------------------------------------------------------------
Precision = Literal["bf16", "fp16", "fp32", "int8", "mixed"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
DtypeSetting = Literal["auto", Precision]  # what a user may ask for (plus the aliases below)
DTYPE_CHOICES: tuple[str, ...] = get_args(DtypeSetting)
QUANT_PRESETS: tuple[str, ...] = ("int8", "mixed")
# The one alias table: what users may type for a precision.
PRECISION_ALIASES: dict[str, str] = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "w4": "mixed",
    "awq": "mixed",
}


def canonical_precision(name: str) -> str:
    """``auto`` or a precision from ``PRECISIONS``; aliases mapped; anything else is a ``ConfigError``."""
    key = (name or "auto").strip().lower()
    key = PRECISION_ALIASES.get(key, key)
    if key != "auto" and key not in PRECISIONS:
        raise ConfigError(f"Unknown dtype '{name}': use auto, {', '.join(PRECISIONS)}.")
    return key


# --- engine kinds ---------------------------------------------------------------------------------
EngineFactory = Callable[[Any], "Engine"]  # called with the ``Settings`` (which import this module)


@dataclass(frozen=True)
class EngineKind:
    """One engine name: its facts (``capabilities``: name, label, prompted, …), the other names users
    may type for it, and for a plug-in the factory that builds it from settings (built-in kinds are
    built by the composition root, ``ocr_app.stack``)."""

    capabilities: Capabilities
    aliases: tuple[str, ...] = ()
    factory: EngineFactory | None = None

    @property
    def name(self) -> str:
        return self.capabilities.name


_KINDS: dict[str, EngineKind] = {}
_LOCK = threading.Lock()


def register_engine(
    capabilities: Capabilities, *, aliases: tuple[str, ...] = (), factory: EngineFactory | None = None
) -> EngineKind:
    """Declare an engine kind (replacing one of the same name); returns it."""
    name = capabilities.name.strip().lower()
    if not name:
        raise ConfigError("An engine kind needs a name.")
    kind = EngineKind(replace(capabilities, name=name), tuple(a.lower() for a in aliases), factory)
    with _LOCK:
        _KINDS[name] = kind
    return kind


def unregister_engine(name: str) -> None:
    with _LOCK:
        _KINDS.pop(name.lower(), None)


def engine_names() -> tuple[str, ...]:
    """Every registered engine name, in registration order (the CLI's and settings' choices)."""
    with _LOCK:
        return tuple(_KINDS)


def registered_engines() -> tuple[EngineKind, ...]:
    with _LOCK:
        return tuple(_KINDS.values())


def canonical_engine(name: str) -> str:
    """The engine name an alias stands for (case-insensitive); unknown names come back lowercased."""
    key = name.strip().lower()
    with _LOCK:
        for kind in _KINDS.values():
            if key in kind.aliases:
                return kind.name
    return key


def engine_kind(name: str | None) -> EngineKind:
    """The kind registered under ``name`` (or an alias); an unknown name gets plain facts: its name
    as label, an OCR engine without prompts, table HTML not kept (the safe reading of unknown text)."""
    key = canonical_engine(name or "")
    with _LOCK:
        kind = _KINDS.get(key)
    return kind if kind is not None else EngineKind(Capabilities(name=key, label=key, reads_scans=True))


def check_engine(name: str) -> str:
    """``name`` made canonical, or ``ConfigError`` naming the engines there are."""
    key = canonical_engine(name)
    if key not in engine_names():
        raise ConfigError(f"Unknown engine '{name}': use {', '.join(engine_names())}.")
    return key


def unmet_requirement(name: str, settings: Any) -> str | None:
    """What engine ``name`` needs and ``settings`` lack (its ``Capabilities.requires``), as a sentence
    naming the environment variable to set; None when nothing is missing."""
    caps = engine_kind(name).capabilities
    prefix = getattr(settings, "model_config", {}).get("env_prefix", "")
    for field, what in caps.requires:
        if not getattr(settings, field, None):
            return f"--engine {caps.name} needs {what}: set {prefix}{field.upper()}."
    return None


# Built-in kinds, in the order front ends list them.
register_engine(
    Capabilities(
        name="auto",
        label="auto",
        reads_scans=True,
        help="the PDF text layer where usable, else the best OCR engine here",
    )
)
register_engine(
    Capabilities(
        name="deepseek",
        label="DeepSeek-OCR-2",
        prompted=True,
        keeps_table_html=True,
        reads_scans=True,
        wants_gpu=True,
        vision_cache=True,
        help=(
            "To use DeepSeek-OCR-2 (best quality; any GPU with 4 GB or more — the `mixed` precision preset "
            "peaks at 3.2 GiB for a dense page), download the transformers-format checkpoint once on a "
            "machine with internet (`hf download deepseek-community/DeepSeek-OCR-2 --local-dir "
            "DeepSeek-OCR-2`) and start the app with `--model /path/to/DeepSeek-OCR-2` (or "
            "`DEEPSEEK_OCR_MODEL=...`)."
        ),
    ),
    aliases=("deepseek-ocr2", "deepseek-ocr-2"),
)
register_engine(
    Capabilities(name="light", label="light CPU OCR (rapidocr)", reads_scans=True),
    aliases=("rapidocr",),
)
register_engine(Capabilities(name="textlayer", label="PDF text layer only"))
register_engine(
    Capabilities(
        name="remote",
        label="remote vLLM/SGLang server",
        prompted=True,
        keeps_table_html=True,
        reads_scans=True,
        requires=(("remote_url", "an endpoint"),),
    )
)
