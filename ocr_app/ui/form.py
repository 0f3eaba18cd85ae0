"""Form values → ``ConvertOptions``.

Why separate from the Blocks: the choices offered (prompt presets, resolution modes, engines) come from
the engines' ``Capabilities`` (no engine knowledge here), and turning raw widget values into validated
options is testable without gradio.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ocr_app.choices import engine_kind
from ocr_app.exceptions import ConfigError

if TYPE_CHECKING:
    from ocr_app.convert import ConvertOptions
    from ocr_app.engine_api import Capabilities
    from ocr_app.schema import DocumentResult
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

CUSTOM = "custom"  # dropdown value that enables the custom prompt box
LOCATE = "locate"  # preset that needs the text to locate
AUTO_MODE = "auto"
DPI_MIN, DPI_MAX = 36, 600  # the CLI's --dpi range and Settings.dpi's bounds


def preset_choices(caps: Capabilities, default: str = "markdown") -> list[tuple[str, str]]:
    """(label, value) pairs for the prompt dropdown, custom prompt last; engines without prompts give
    one entry, the configured default, so the form stays valid."""
    choices = [(label, name) for name, label in caps.prompts]
    if caps.custom_prompt:
        choices.append(("Custom prompt…", CUSTOM))
    return choices or [(default, default)]


def mode_choices(caps: Capabilities, default: str = "default") -> list[str]:
    """Resolution modes the engines offer, with ``auto`` first (it picks per page)."""
    names = list(caps.modes) or [default]
    return sorted(names, key=lambda n: n != AUTO_MODE)


@dataclass
class FormValues:
    """Raw widget values, in the order the UI and the API endpoint pass them."""

    pages: str | None = None
    preset: str = "markdown"
    custom_prompt: str | None = None
    locate_text: str | None = None
    mode: str = "default"
    dpi: float | int | None = None
    use_cache: bool = True
    engine: str | None = None


def build_options(values: FormValues, settings: Settings) -> ConvertOptions:
    """Validate the form and build options; raises ``ConfigError`` with a message for the user."""
    from ocr_app.convert import ConvertOptions

    preset = (values.preset or settings.prompt).strip()
    if preset == CUSTOM:
        prompt = (values.custom_prompt or "").strip()
        if not prompt:
            raise ConfigError("The custom prompt is empty: type a prompt or choose a preset.")
    else:
        prompt = preset
    locate = (values.locate_text or "").strip() or None
    if preset == LOCATE and locate is None:
        raise ConfigError("The 'locate' prompt needs the text to find: fill in 'Text to locate'.")
    dpi = settings.dpi if values.dpi in (None, "") else int(values.dpi)
    if not DPI_MIN <= dpi <= DPI_MAX:
        raise ConfigError(f"DPI must be between {DPI_MIN} and {DPI_MAX}, got {dpi}.")
    pages = (values.pages or "").strip() or None
    engine = (values.engine or "").strip() or None
    return ConvertOptions.from_settings(
        settings,
        pages=pages,
        prompt=prompt,
        locate_text=locate,
        mode=(values.mode or settings.mode).strip(),
        dpi=dpi,
        use_cache=bool(values.use_cache),
        engine=engine,
    )


def ignored_options_reason(engine: str | None, describe: dict[str, Any]) -> str | None:
    """Why the prompt and resolution mode do nothing with ``engine``; None when they are honoured.

    An engine kind says whether it is prompted (``Capabilities.prompted``: DeepSeek-OCR-2, local or
    remote); the light engine and the text layer read text as it is. A router (``auto``) honours them
    when it sends scans to a prompted engine.
    """
    name = (engine or str(describe.get("default") or "")).strip()
    ocr = str(((describe.get("engines") or {}).get(name) or {}).get("ocr") or "")
    if ocr:
        if engine_kind(ocr).capabilities.prompted:
            return None
        return (
            f"{name} reads PDF text layers and sends scans to the {ocr} engine, which takes no prompt or mode"
        )
    kind = engine_kind(name).capabilities
    if kind.prompted:
        return None
    what = f"{name} ({kind.label})" if kind.label and kind.label != name else name
    return f"{what} takes no prompt or resolution mode"


def uses_vision_cache(engine: str | None, describe: dict[str, Any]) -> bool:
    """Whether the cross-page vision cache does anything with ``engine`` (``Capabilities.vision_cache``:
    DeepSeek-OCR-2 on this machine; a router when it sends scans to it)."""
    name = (engine or str(describe.get("default") or "")).strip()
    ocr = str(((describe.get("engines") or {}).get(name) or {}).get("ocr") or "")
    return engine_kind(ocr or name).capabilities.vision_cache


def parse_passwords(text: str | dict[str, str] | None) -> tuple[str | None, dict[str, str]]:
    """The API's ``password`` value → (one password for every file, per-file passwords by file name).

    A JSON object (``{"a.pdf": "secret"}``) gives passwords per file; any other text is one password
    for every file. Never logged.
    """
    if isinstance(text, dict):
        return None, {str(k): str(v) for k, v in text.items() if v}
    value = (text or "").strip("\n")
    if not value:
        return None, {}
    if value.lstrip().startswith("{"):
        import json

        try:
            data = json.loads(value)
        except ValueError:
            return value, {}
        if isinstance(data, dict):
            return None, {str(k): str(v) for k, v in data.items() if v}
    return value, {}


PASSWORDS_BOX = "PDF passwords (encrypted PDFs only)"  # the accordion under the file list


def app_errors(documents: list[DocumentResult], passwords: dict[str, str]) -> list[DocumentResult]:
    """The documents as the app shows them: an encrypted PDF's error says where to type its password.

    Why here and not in the library: the library's message speaks to every front end (the CLI names its
    ``--password`` option); the app knows its own password box and whether one was typed for the file.
    """
    from dataclasses import replace

    from ocr_app.exceptions import EncryptedDocumentError

    shown = []
    for doc in documents:
        if doc.error and doc.error_type == EncryptedDocumentError.__name__:
            where = f"its box under “{PASSWORDS_BOX}”, just below the file list, then press Convert again"
            if passwords.get(doc.source):
                doc = replace(
                    doc, error=f"the password typed for {doc.source} is wrong: correct it in {where}."
                )
            else:
                doc = replace(doc, error=f"{doc.source} is encrypted: type its password in {where}.")
        shown.append(doc)
    return shown


def needs_password(documents: list[DocumentResult]) -> bool:
    from ocr_app.exceptions import EncryptedDocumentError

    return any(d.error_type == EncryptedDocumentError.__name__ for d in documents)
