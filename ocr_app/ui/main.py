"""The web app's entry point, shared by ``python app.py`` and ``ocr-app ui``.

Thin on purpose: the options are parsed once, by the ``ui`` click command in ``ocr_app.cli`` (flags
override ``DEEPSEEK_OCR_*`` env vars and ``.env``); settings, engines, the converter and the Blocks come
from the library; nothing is loaded here unless ``--preload`` asks.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time

logger = logging.getLogger(__name__)


def serve(log_level: str = "INFO", **overrides: object) -> int:
    """Build the app from settings (``overrides`` win over the environment) and serve until stopped."""
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(log_level.upper())  # the CLI group configured the root logger already
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
    from ocr_app.ui.temp_dirs import use_process_temp

    temp = use_process_temp()  # uploads and served files go here; the outputs inside it
    converter = Converter(engines, settings)
    demo = None
    stop = _Stop()
    try:
        demo = build_app(converter, settings, work_dir=temp.work_dir)
        stop.install(demo)  # SIGTERM (a service manager's stop) and Ctrl+C end the server the same way
        launch(demo, settings, prevent_thread_lock=True)
        stop.wait()
    finally:
        stop.restore()
        _shutdown(demo, engines, temp, stop)
    return 0


class _Stop:
    """SIGTERM and SIGINT: cancel the running jobs at once and wake the main thread to shut down.

    Why not Gradio's own loop: it learns of a stop through a KeyboardInterrupt, then waits for the open
    requests, i.e. for the running conversion to finish (12–14 s for 12 pages), before anything cancels
    it; the temp folder was then removed under a job that still wrote into it."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal_name: str | None = None
        self.cancelled = 0
        self._demo = None
        self._old: dict[int, object] = {}

    def install(self, demo) -> None:
        self._demo = demo
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._old[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.event.is_set():
            return
        self.signal_name = signal.Signals(signum).name
        jobs = getattr(self._demo, "ocr_app_jobs", None)
        self.cancelled = (
            jobs.cancel_all(f"cancelled: the server is stopping ({self.signal_name})") if jobs else 0
        )
        self.event.set()

    def wait(self) -> None:
        while not self.event.wait(1.0):  # the handler's set() wakes it at once
            pass

    def restore(self) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        self._old.clear()


JOBS_GRACE_S = 1.5  # a cancelled job finishes the page in progress; the server does not wait longer
EVENTS_GRACE_S = 1.0  # for the cancelled jobs' last messages to reach their clients


def _force_close(demo) -> None:
    """Close the server without waiting for open event streams (uvicorn's ``force_exit``); their tasks
    are cancelled, which uvicorn reports as errors with tracebacks: expected here, so not logged."""
    server = getattr(demo, "server", None)
    if server is not None:
        server.force_exit = True
    quiet = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "asyncio")]
    was = [lg.disabled for lg in quiet]
    for lg in quiet:
        lg.disabled = True
    try:
        demo.close(verbose=False)
    finally:
        for lg, disabled in zip(quiet, was, strict=True):
            lg.disabled = disabled


def _drain_events(demo, timeout_s: float) -> None:
    """Wait until Gradio has sent every session its finished events, so their event streams close and
    the server stops at once (otherwise it waits 5 s for the open streams, then gives up on them)."""
    queue = getattr(demo, "_queue", None)
    pending = getattr(queue, "pending_event_ids_session", None)
    if pending is None:
        return
    deadline = time.monotonic() + timeout_s
    while any(len(ids) for ids in list(pending.values())) and time.monotonic() < deadline:
        time.sleep(0.05)


def _shutdown(demo, engines, temp, stop: _Stop) -> None:
    """Cancelled jobs end (or the grace runs out), then the server, the engines and the temp folder go."""
    from ocr_app.ui.jobs import wait_for_jobs

    left = wait_for_jobs(JOBS_GRACE_S)
    if demo is not None:
        if left:  # a page that cannot be interrupted: stop the server without waiting for its stream
            _force_close(demo)
        else:
            _drain_events(demo, EVENTS_GRACE_S)
            demo.close()
        demo.ocr_app_dirs.close()
    engines.unload_all()
    temp.remove()
    why = stop.signal_name or "stopped"
    extra = f", {left} still finishing a page" if left else ""
    logger.info("%s: server stopped, %d running job(s) cancelled%s", why, stop.cancelled, extra)
