"""The web app's entry point, shared by ``python app.py`` and ``ocr-app ui``.

Thin on purpose: settings (flags override ``DEEPSEEK_OCR_*`` env vars and ``.env``), engines, the
converter and the Blocks come from the library; nothing is loaded here unless ``--preload`` asks.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

logger = logging.getLogger(__name__)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="ocr-app web UI (DeepSeek-OCR-2 document parser)")
    p.add_argument("--host", help="interface to listen on (default 127.0.0.1; 0.0.0.0 for the network)")
    p.add_argument("--port", type=int, help="port (default 7860)")
    p.add_argument("--share", action="store_true", default=None, help="also create a public gradio link")
    p.add_argument("--model", help="hub id or local folder of the DeepSeek-OCR-2 checkpoint")
    p.add_argument("--device", help="auto, cpu, cuda, cuda:N")
    p.add_argument("--dtype", help="auto, bf16, fp16, fp32, int8, mixed")
    p.add_argument("--engine", help="auto, deepseek, light, textlayer, remote")
    p.add_argument("--preload", action="store_true", default=None, help="load the model before serving")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")

    from ocr_app.convert import Converter
    from ocr_app.engines.registry import build_engines
    from ocr_app.exceptions import OcrError
    from ocr_app.settings import load_settings
    from ocr_app.ui.app import build_app
    from ocr_app.ui.launch import launch

    try:
        settings = load_settings(
            host=args.host,
            port=args.port,
            share=args.share,
            model=args.model,
            device=args.device,
            dtype=args.dtype,
            engine=args.engine,
            preload=args.preload,
        )
        engines = build_engines(settings)
        if settings.preload:
            logger.info("preloading engine %s", engines.default)
            engines.get(None).preload()
    except OcrError as exc:
        print(f"error: {exc}", file=sys.stderr)
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
