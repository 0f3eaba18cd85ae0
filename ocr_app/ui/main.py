"""The web app's entry point, shared by ``python app.py`` and ``ocr-app ui``.

Thin on purpose: the options are parsed once, by the ``ui`` click command in ``ocr_app.cli`` (flags
override ``DEEPSEEK_OCR_*`` env vars and ``.env``); settings, engines, the converter and the Blocks come
from the library; nothing is loaded here unless ``--preload`` asks.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

logger = logging.getLogger(__name__)


def serve(log_level: str = "INFO", **overrides: object) -> int:
    """Build the app from settings (``overrides`` win over the environment) and serve until stopped."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    from ocr_app.exceptions import install_user_error_filter

    install_user_error_filter()  # user errors: one log line each, no traceback

    from ocr_app.convert import Converter
    from ocr_app.engines.devices import check_cuda_devices, visible_cuda_count
    from ocr_app.exceptions import OcrError
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines
    from ocr_app.ui.access import resolve_access
    from ocr_app.ui.app import build_app
    from ocr_app.ui.launch import launch

    try:
        settings = load_settings(**overrides)
        check_cuda_devices(settings.device, visible_cuda_count())  # before anything loads: exit 2
        resolve_access(settings)  # a bad --auth entry or auth file stops here, before anything loads
        engines = build_engines(settings)
        if settings.preload:
            logger.info("preloading engine %s", engines.default)
            engines.get(None).preload()
    except OcrError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # pydantic's ValidationError: a bad DEEPSEEK_OCR_* value
        print(f"error: invalid settings: {exc}", file=sys.stderr)
        return 2
    from ocr_app.ui.temp_dirs import ProcessTemp, sweep_orphans

    sweep_orphans()
    temp = ProcessTemp.create()
    # gradio reads this when the Blocks and the server are created: uploads and served files go here
    os.environ["GRADIO_TEMP_DIR"] = str(temp.gradio_dir)
    signal.signal(signal.SIGTERM, _stop)  # a service manager's stop cleans up like Ctrl+C does
    converter = Converter(engines, settings)
    demo = None
    try:
        demo = build_app(converter, settings, work_dir=temp.work_dir)
        launch(demo, settings)
    except KeyboardInterrupt:
        pass
    finally:
        if demo is not None:
            demo.close()
            demo.ocr_app_dirs.close()
        engines.unload_all()
        temp.remove()
    return 0


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds the main thread through main()'s cleanup
