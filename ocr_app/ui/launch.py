"""Launch a built app: host, port, share link (opt-in, fails soft), allowed output folder, sign-in
(gradio's own ``auth``), the open-instance warning and the private-results middleware (``ui.privacy``).

Why separate from ``app.py`` at the repo root: the tests launch exactly what the launcher launches.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import gradio as gr

    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)


@dataclass
class Launched:
    """Where the app listens; ``share_error`` says why a requested share link is missing."""

    local_url: str
    share_url: str | None = None
    share_error: str | None = None


def launch(
    demo: gr.Blocks,
    settings: Settings,
    *,
    share: bool | None = None,
    prevent_thread_lock: bool = False,
    quiet: bool = False,
) -> Launched:
    """Start the server. A share link that cannot be created (offline) is reported, not fatal. Without
    sign-in, an app reachable from other machines says so on stderr (and in its page, ``OcrApp``), once
    it is known whether a share link exists: a link that could not be created is not claimed.

    Gradio's own start-up lines are replaced by the app's (gradio tells every user to "set
    share=True in launch()"; a user of this app passes ``--share``)."""
    from ocr_app.ui.access import resolve_access
    from ocr_app.ui.app import CSS
    from ocr_app.ui.fonts import font_css, font_dir

    share = settings.share if share is None else share
    dirs = getattr(demo, "ocr_app_dirs", None)
    access = resolve_access(settings, share=False)  # the sign-in pairs; the warning once the link is known
    _, local_url, share_url = demo.launch(
        server_name=settings.host,
        server_port=settings.port or None,
        share=share,
        prevent_thread_lock=True,
        quiet=True,
        allowed_paths=[str(font_dir())] + ([str(dirs.root)] if dirs is not None else []),
        max_file_size=int(settings.max_file_mb * 2**20),  # refuse oversize uploads before they hit disk
        css=font_css() + "\n" + CSS,
        auth=access.gradio_auth,
        auth_message="Sign in to use this ocr-app server." if access.users else None,
        app_kwargs=_app_kwargs(demo),
    )
    info = Launched(local_url=local_url, share_url=share_url)
    if not quiet:
        print(f"* Running on local URL: {local_url}", flush=True)
    if share and not share_url:
        info.share_error = (
            "Could not create a gradio share link (it needs internet access to gradio.live): "
            f"no public link exists; the app runs only at {local_url}"
        )
        logger.warning(info.share_error)
        print(info.share_error, flush=True)
    elif not share and not quiet:
        print("* To give others a public link, start the app with --share (it needs internet access).")
    access = resolve_access(settings, share=bool(share_url))
    app = getattr(demo, "ocr_app", None)
    if app is not None:
        app.set_access(access)  # the page's banner says the same
    if access.warning:
        logger.warning(access.warning)
        print(f"WARNING: {access.warning}", file=sys.stderr, flush=True)
    if not prevent_thread_lock:
        demo.block_thread()
    return info


def _app_kwargs(demo: gr.Blocks) -> dict:
    """FastAPI's own schema route off (it answers without sign-in; gradio has a guarded one under
    /gradio_api), the Content-Security-Policy, and the private-results middleware of an app built by
    ``OcrApp``."""
    from starlette.middleware import Middleware

    from ocr_app.ui.offline import ContentSecurityPolicy

    # every page carries the Content-Security-Policy: it loads nothing from elsewhere (ui/offline.py)
    kwargs: dict = {"openapi_url": None, "middleware": [Middleware(ContentSecurityPolicy)]}
    app = getattr(demo, "ocr_app", None)
    if app is None:
        return kwargs
    from ocr_app.ui.privacy import PrivacyMiddleware

    delivered = app.api_results.delivered
    kwargs["middleware"].append(Middleware(PrivacyMiddleware, owners=app.owners, on_delivered=delivered))
    return kwargs
