"""``python -m ocr_app.ui.health``: exit 0 when the web app answers on its port, else 1 (the Docker
``HEALTHCHECK``).

Why a module and not ``curl`` in the image: the slim image has no curl, and the host and port come from
the same settings the app was started with (``DEEPSEEK_OCR_HOST`` / ``DEEPSEEK_OCR_PORT``). The route is
``/``, which gradio serves from the running server without touching a model.
"""

from __future__ import annotations

import logging
import sys
import urllib.error
import urllib.request

logger = logging.getLogger(__name__)

ANY_INTERFACE = {"", "0.0.0.0", "::"}  # listening everywhere: ask the loopback interface


def app_url(host: str, port: int) -> str:
    return f"http://{'127.0.0.1' if host in ANY_INTERFACE else host}:{port}/"


def answers(url: str, timeout: float = 5.0) -> str | None:
    """None when ``url`` answers 200, else why not (in words, for the container's health log)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return None if resp.status == 200 else f"{url} answered {resp.status}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{url} does not answer: {exc}"


def main() -> int:
    from ocr_app.settings import load_settings

    settings = load_settings()
    why = answers(app_url(settings.host, settings.port))
    if why is not None:
        print(why, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
