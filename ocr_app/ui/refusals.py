"""Refusals carry their reason to the client: Gradio's own file checks become a ``gr.Error`` in words.

Why: before an event's function runs, Gradio checks every file an API call names: a path on the server
that was not uploaded, or an upload whose name starts with a dot (``.hidden.pdf``, ``..pdf``), is
refused with an ``InvalidPathError``. Gradio shows only ``gr.Error`` messages to clients, so the client
got ``{"error": null}`` ("verbose error reporting not enabled"): refused, with no reason. ``OcrBlocks``
turns that refusal into a ``gr.Error`` that says, as the CLI would, which file and why; other errors stay
as Gradio reports them (internal messages are not sent to clients). A "file" that is a URL is refused
too: Gradio would download it, i.e. a client could make the server fetch any address it can reach.

Why refusals are logged as one line: Gradio prints the traceback of every ``gr.Error`` an event raises
unless the error says not to (``print_exception``); every refused API call (a bad choice, a server path,
a URL, no file) wrote one to the server log, where tracebacks should mean bugs (issue 31). ``OcrBlocks``
logs each ``gr.Error`` as one INFO line with its reason and turns Gradio's printing off for it; any other
exception keeps its traceback.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_NAMED = re.compile(r"Cannot move (.+?) to the gradio cache dir")


def refusal_message(error: BaseException, names: list[str] | None = None) -> str:
    """The reason a file was refused, in one line that names the file (never a server folder).

    ``names`` are the names of the files the call sent, to name a refused dotfile (Gradio's message
    for it has no name)."""
    text = str(error)
    found = _NAMED.search(text)
    dotted = [n for n in names or [] if n.startswith(".")]
    name = Path(found.group(1)).name if found else (dotted[0] if dotted else "a file")
    if "not uploaded by a user" in text:
        return (
            f"{name}: refused: it was not uploaded to this app. Send the file itself (gradio_client: "
            "handle_file(path)); a path on the server cannot be converted through the API."
        )
    if "Dotfiles" in text or name.startswith("."):
        return (
            f"{name}: refused: a file whose name starts with a dot is not accepted by the web app "
            "(hidden files); rename it (e.g. without the leading dot) and upload it again."
        )
    if "blocked_paths" in text:
        return f"{name}: refused: it lies in a folder this app does not read from."
    return f"{name}: refused: the file cannot be read by this app."


def sent_files(value: Any) -> list[dict]:
    """The file payloads (``{"path": …}`` dicts) anywhere in an event's inputs."""
    found: list[dict] = []
    if isinstance(value, dict):
        if isinstance(value.get("path"), str):
            found.append(value)
        else:
            for v in value.values():
                found.extend(sent_files(v))
    elif isinstance(value, list | tuple):
        for v in value:
            found.extend(sent_files(v))
    return found


def _name(payload: dict) -> str:
    return str(payload.get("orig_name") or Path(str(payload["path"])).name)


def url_refusal(payloads: list[dict]) -> str | None:
    """Why a call that names a URL as a file is refused (the server would fetch it: a request the
    client makes the server send, to any address it can reach), or None."""
    for payload in payloads:
        path = str(payload["path"]).strip().lower()
        if path.startswith(("http:", "https:", "//", "ftp:", "file:")):
            return (
                f"{_name(payload)}: refused: a URL is not a file; the app fetches nothing from the "
                "network. Download it and upload the file itself."
            )
    return None


def blocks_class() -> type:
    """``gr.Blocks`` whose input checks report their refusals to the client (``gr.Error``)."""
    import gradio as gr
    from gradio.exceptions import InvalidPathError

    class OcrBlocks(gr.Blocks):
        async def preprocess_data(self, *args: Any, **kwargs: Any) -> Any:
            inputs = kwargs.get("inputs", args[1] if len(args) > 1 else None)
            payloads = sent_files(inputs)
            message = url_refusal(payloads)
            if message is None:
                try:
                    return await super().preprocess_data(*args, **kwargs)
                except InvalidPathError as exc:
                    message = refusal_message(exc, [_name(p) for p in payloads])
            raise gr.Error(message, title="File refused")

        async def process_api(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().process_api(*args, **kwargs)
            except gr.Error as exc:
                quiet_refusal(exc)
                raise

    return OcrBlocks


def quiet_refusal(exc: BaseException) -> None:
    """One INFO line for a refusal (``gr.Error``), and no traceback from Gradio for it."""
    logger.info("refused a request: %s", " ".join(str(getattr(exc, "message", exc)).split()))
    exc.print_exception = False  # type: ignore[attr-defined]


__all__ = ["blocks_class", "quiet_refusal", "refusal_message", "sent_files", "url_refusal"]
