"""The viewer loads nothing from outside the app: a Content-Security-Policy, and remote images in a
document's Markdown shown as links.

Why: a document's text is the author's, not the viewer's. ``![x](https://example.com/track.gif)`` in a
PDF's text layer made the browser fetch that URL when the page was shown, telling whoever wrote the
document who opened it, when and from where. Three layers stop that:

- the Markdown the app shows turns a remote image into a link (``remote image: x``) that loads nothing
  until it is clicked (``offline_markdown`` for the Document tab; ``page_html`` drops remote ``src``);
- the fonts are the app's own (``ui/fonts.py``; Gradio 6's theme fonts are bundled too);
- every response carries a Content-Security-Policy that lets the page load images, fonts, styles and
  scripts only from the app itself (plus ``data:`` and ``blob:`` URLs, which Gradio uses), whatever
  slips past the first layer.

Gradio itself needs ``'unsafe-inline'`` styles and scripts and ``'unsafe-eval'`` (components' ``js``
hooks are compiled in the browser); none of these can load anything from another origin.
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

logger = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "img-src 'self' data: blob:",
        "media-src 'self' data: blob:",
        "font-src 'self' data:",
        "style-src 'self' 'unsafe-inline'",
        "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "frame-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
    ]
)

_REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.\-]*:|//|\\\\)", re.IGNORECASE)  # a scheme, or protocol-relative
_MD_IMAGE = re.compile(r"!\[((?:[^\]\\]|\\.)*)\]\(\s*(<[^>]*>|[^)\s]+)((?:\s+(?:\"[^\"]*\"|'[^']*'))?)\s*\)")
_HTML_IMG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""\b(src|alt)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


def is_remote(url: str) -> bool:
    """Whether loading ``url`` would leave the app: any scheme but ``data:``, or a ``//host`` URL."""
    url = html.unescape(url or "").strip().strip("<>")
    return bool(_REMOTE.match(url)) and not url.lower().startswith("data:")


def remote_image_link(url: str, alt: str) -> str:
    """The Markdown a remote image becomes: a link that says what it is and loads nothing by itself."""
    label = alt.strip() or "image"
    return f"[remote image: {label}]({url})"


def offline_markdown(text: str) -> str:
    """``text`` with every remote image (Markdown or ``<img>``) replaced by a link to it."""

    def md_image(m: re.Match[str]) -> str:
        url = m.group(2).strip("<>")
        return remote_image_link(url, m.group(1)) if is_remote(url) else m.group(0)

    def html_image(m: re.Match[str]) -> str:
        attrs = {k.lower(): a or b or c for k, a, b, c in _ATTR.findall(m.group(0))}
        url = attrs.get("src", "")
        if not is_remote(url):
            return m.group(0)
        return remote_image_link(html.unescape(url), html.unescape(attrs.get("alt", "")))

    return _HTML_IMG.sub(html_image, _MD_IMAGE.sub(md_image, text))


class ContentSecurityPolicy:
    """ASGI middleware: every HTTP response of the app carries ``CONTENT_SECURITY_POLICY``."""

    def __init__(self, app: Any, policy: str = CONTENT_SECURITY_POLICY) -> None:
        self.app = app
        self.header = (b"content-security-policy", policy.encode("ascii"))

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_policy(message: dict) -> None:
            if message.get("type") == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != self.header[0]]
                message = {**message, "headers": [*headers, self.header]}
            await send(message)

        await self.app(scope, receive, send_with_policy)


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "ContentSecurityPolicy",
    "is_remote",
    "offline_markdown",
    "remote_image_link",
]
