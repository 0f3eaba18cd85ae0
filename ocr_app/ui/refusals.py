"""Refusals carry their reason to the client: Gradio's own file checks become a ``gr.Error`` in words.

Why: before an event's function runs, Gradio checks every file an API call names: a path on the server
that was not uploaded, or an upload whose name starts with a dot (``.hidden.pdf``, ``..pdf``), is
refused with an ``InvalidPathError``. Gradio shows only ``gr.Error`` messages to clients, so the client
got ``{"error": null}`` ("verbose error reporting not enabled"): refused, with no reason. ``OcrBlocks``
turns that refusal into a ``gr.Error`` that says, as the CLI would, which file and why; other errors stay
as Gradio reports them (internal messages are not sent to clients).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_NAMED = re.compile(r"Cannot move (.+?) to the gradio cache dir")


def refusal_message(error: BaseException) -> str:
    """The reason a file was refused, in one line that names the file (never a server folder)."""
    text = str(error)
    found = _NAMED.search(text)
    name = Path(found.group(1)).name if found else "a file"
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


def blocks_class() -> type:
    """``gr.Blocks`` whose input checks report their refusals to the client (``gr.Error``)."""
    import gradio as gr
    from gradio.exceptions import InvalidPathError

    class OcrBlocks(gr.Blocks):
        async def preprocess_data(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().preprocess_data(*args, **kwargs)
            except InvalidPathError as exc:
                message = refusal_message(exc)
                logger.info("refused an API call: %s", message)
                raise gr.Error(message, title="File refused") from None

    return OcrBlocks


__all__ = ["blocks_class", "refusal_message"]
