"""The web app's entry point, shared by ``python app.py`` and ``ocr-app ui``.

Thin on purpose: the options are parsed once, by the ``ui`` click command in ``ocr_app.cli`` (flags
override ``DEEPSEEK_OCR_*`` env vars and ``.env``); settings, engines, the converter and the Blocks come
from the library; nothing is loaded here unless ``--preload`` asks.
"""

from __future__ import annotations

import logging
import sys

logger = logging.getLogger(__name__)


def serve(log_level: str = "INFO", **overrides: object) -> int:
    """Build the app from settings (``overrides`` win over the environment) and serve until stopped."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")

    from ocr_app.convert import Converter
    from ocr_app.exceptions import OcrError
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines
    from ocr_app.ui.app import build_app
    from ocr_app.ui.launch import launch

    try:
        settings = load_settings(**overrides)
        engines = build_engines(settings)
        if settings.preload:
            logger.info("preloading engine %s", engines.default)
            engines.get(None).preload()
    except OcrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    converter = Converter(engines, settings)
    demo = build_app(converter, settings)
    try:
        launch(demo, settings)
    except KeyboardInterrupt:
        pass
    finally:
        engines.unload_all()
        demo.ocr_app_dirs.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python app.py [options]``: the ``ocr-app ui`` command, with the same click parser."""
    from ocr_app.cli import main as cli

    args = sys.argv[1:] if argv is None else list(argv)
    try:
        cli.main(["ui", *args], prog_name="app.py", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:  # click usage errors (standalone_mode=False hands them to us)
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        raise
    return 0
