"""Private results on a shared app: one browser's files are never served to another.

Why our own check: gradio serves any file under its temp folder or an allowed path to whoever asks for
its URL (``/gradio_api/file=…``; with sign-in on, to any signed-in user). The URL of a page image or a
ZIP can leak (a shared screenshot, a proxy log, a colleague's history). So every client gets an
unguessable cookie (``CLIENT_COOKIE``, set by ``PrivacyMiddleware`` on its first request: the page for a
browser, ``/config`` for gradio_client, which keeps the cookies it is given), and a file under the
guarded folders is served only to the clients that own it: a job's folder to the client that ran the
job, an upload to the clients that uploaded it (gradio stores equal uploads once). Anything else under
those folders is refused. Outputs are written inside gradio's temp folder, so gradio serves them in place
instead of copying them where no owner is known.

Why the owner check sees exactly the path gradio opens: the server decodes a URL's path once, and
gradio takes the file route's parameter as it is, makes it absolute lexically (``os.path.abspath``)
and opens that, following symlinks. A second decoding here once let ``a%252Fb/../..`` climb one folder
less for gradio than for the check: another session's file was served (issue 31). So the check takes
the parameter undecoded, refuses outright any path that hides a parent step, a separator, a backslash,
a NUL or bytes that are not UTF-8 behind any number of encodings (no URL the app makes has one), and
decides on both the lexical path and its real path: a symlink in a client's folder to another's file
is not that client's.

The middleware also reports each file it served in full (``on_delivered``): API results are deleted
once the client has fetched them (``ApiResults``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

logger = logging.getLogger(__name__)

CLIENT_COOKIE = "ocr_app_client"
STATE_KEY = "ocr_app_client"  # where the middleware leaves the client id for the handlers (scope state)
FILE_MARKERS = ("/file=", "/file/")  # gradio's file routes: /gradio_api/file=<path>, /gradio_api/file/<path>
UPLOAD_SUFFIX = "/upload"
_MAX_DECODINGS = 8  # a path still changing after this many decodings is refused as hostile


def client_of(request: Any) -> str | None:
    """The client id of a gradio ``Request`` (or a Starlette one): the cookie, else the id the middleware
    just assigned to this very request."""
    inner = getattr(request, "request", request)
    cookies = getattr(inner, "cookies", None) or {}
    found = cookies.get(CLIENT_COOKIE) if hasattr(cookies, "get") else None
    if found:
        return str(found)
    state = getattr(inner, "scope", {}).get("state") or {}
    return state.get(STATE_KEY)


def _resolve(path: str | Path) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return Path("/nonexistent")


def _lexical(path: str | Path) -> Path:
    """The path as gradio opens it: absolute, ``..`` removed by text (before symlinks are followed)."""
    try:
        return Path(os.path.abspath(os.path.expanduser(str(path))))
    except (OSError, ValueError):
        return Path("/nonexistent")


def hostile_path(path: str) -> str | None:
    """Why ``path`` (a file route's parameter, decoded once by the server) is refused, or None.

    Decoded until it stops changing, no form of it may hold a ``..`` step, a backslash, a NUL or an
    invalid UTF-8 sequence (overlong encodings decode to U+FFFD), and no decoding may add a separator.
    """
    forms = [path]
    while len(forms) <= _MAX_DECODINGS:
        nxt = unquote(forms[-1], errors="replace")
        if nxt == forms[-1]:
            break
        forms.append(nxt)
    else:
        return "encoded too many times"
    for form in forms:
        if "\\" in form:
            return "a backslash"
        if "\x00" in form or "\ufffd" in form:
            return "a NUL or invalid UTF-8"
        if ".." in form.split("/"):
            return "a parent-folder step"
        if form.count("/") != path.count("/"):
            return "an encoded separator"
    return None


class Owners:
    """Which clients own which folders and files under the guarded roots. Thread-safe."""

    PRUNE_EVERY = 256  # claims between drops of entries whose file is gone (gradio's hourly sweep)

    def __init__(self, roots: Iterable[str | Path]) -> None:
        given = list(roots)
        self.roots = [_resolve(r) for r in given]
        self._lexical_roots = list(zip([_lexical(r) for r in given], self.roots, strict=True))
        self._owners: dict[Path, set[str]] = {}
        self._lock = threading.Lock()
        self._claims = 0

    def claim(self, path: str | Path, client: str | None) -> None:
        """``client`` owns ``path`` (a folder: everything under it) from now on, beside earlier owners."""
        if not client:
            return
        with self._lock:
            self._owners.setdefault(_resolve(path), set()).add(client)
            self._claims += 1
            if self._claims % self.PRUNE_EVERY == 0:  # a server up for weeks: forget deleted files
                for gone in [p for p in self._owners if not p.exists()]:
                    del self._owners[gone]

    def __len__(self) -> int:
        with self._lock:
            return len(self._owners)

    def forget(self, path: str | Path) -> None:
        """Drop ``path`` and everything registered under it (it was deleted)."""
        target = _resolve(path)
        with self._lock:
            for p in [p for p in self._owners if p == target or target in p.parents]:
                del self._owners[p]

    def guarded(self, path: str | Path) -> bool:
        p = _resolve(path)
        return any(p == r or r in p.parents for r in self.roots)

    def _lexically_guarded(self, path: str | Path) -> Path | None:
        """``path`` as gradio opens it, on the resolved root it lies under by its text; None outside."""
        p = _lexical(path)
        for given, real in self._lexical_roots:
            if p == given or given in p.parents:
                return real / p.relative_to(given)
        return None

    def owners_of(self, path: str | Path) -> set[str]:
        """The owners of the nearest registered folder or file at or above ``path``."""
        p = _resolve(path)
        with self._lock:
            for candidate in (p, *p.parents):
                if candidate in self._owners:
                    return set(self._owners[candidate])
        return set()

    def allows(self, path: str | Path, client: str | None) -> bool:
        """Whether ``client`` may fetch ``path``: paths outside the guarded roots are gradio's business.

        Under them, both what the path names by its text and what it really is (symlinks followed)
        must be the client's: a link in one's own folder to another's file, or out of the guarded
        folders, is refused."""
        real = _resolve(_lexical(path))
        textual = self._lexically_guarded(path)
        really = self.guarded(real)
        if textual is None and not really:
            return True
        if not client or not really or client not in self.owners_of(real):
            return False
        return textual is None or client in self.owners_of(textual)


def file_route_path(url_path: str) -> str | None:
    """The file system path a gradio file route asks for, exactly as gradio takes it, or None when the
    URL is no file route. ``url_path`` is the ASGI ``path``: the server decoded it once already."""
    for marker in FILE_MARKERS:
        head, sep, tail = url_path.partition(marker)
        if sep and head.endswith("gradio_api"):
            return tail
    return None


class PrivacyMiddleware:
    """ASGI middleware: client cookie, owner check on file routes, upload ownership, delivery reports."""

    def __init__(
        self,
        app: Any,
        owners: Owners,
        on_delivered: Callable[[Path], None] | None = None,
        secure_cookie: bool = False,
    ) -> None:
        self.app = app
        self.owners = owners
        self.on_delivered = on_delivered
        self.secure_cookie = secure_cookie

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        client, new = self._client(scope)
        scope.setdefault("state", {})[STATE_KEY] = client
        path = scope.get("path", "")
        wanted = file_route_path(path) if scope.get("method") in ("GET", "HEAD") else None
        if wanted is not None:
            hostile = hostile_path(wanted)
            if hostile is not None:
                logger.warning("refused a file path holding %s: %r", hostile, wanted)
                await _refuse(send, f"This file path is refused: it holds {hostile}.")
                return
            if not self.owners.allows(wanted, client):
                logger.warning("refused %s to a client that does not own it", wanted)
                await _refuse(send)
                return
        upload = scope.get("method") == "POST" and path.rstrip("/").endswith(UPLOAD_SUFFIX)
        body: list[bytes] = []
        status = [0]

        async def wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message.get("status", 0))
                if new:
                    headers = list(message.get("headers", []))
                    headers.append((b"set-cookie", self._cookie(client).encode("latin-1")))
                    message = {**message, "headers": headers}
            elif message["type"] == "http.response.body":
                if upload:
                    body.append(message.get("body", b""))
                if not message.get("more_body", False) and status[0] == 200:
                    self._finished(wanted, upload, body, client, scope)
            await send(message)

        await self.app(scope, receive, wrapped)

    def _finished(
        self, wanted: str | None, upload: bool, body: list[bytes], client: str, scope: dict
    ) -> None:
        if upload:
            try:
                paths = json.loads(b"".join(body) or b"[]")
            except ValueError:
                return
            for p in paths if isinstance(paths, list) else []:
                if isinstance(p, str):
                    self.owners.claim(p, client)
        elif wanted is not None and self.on_delivered is not None and scope.get("method") == "GET":
            try:
                self.on_delivered(_resolve(wanted))
            except Exception:  # a cleanup hook must never break a download
                logger.exception("delivery hook failed for %s", wanted)

    def _client(self, scope: dict) -> tuple[str, bool]:
        for name, value in scope.get("headers", []):
            if name == b"cookie":
                for part in value.decode("latin-1").split(";"):
                    key, _, val = part.strip().partition("=")
                    if key == CLIENT_COOKIE and val:
                        return val, False
        return secrets.token_urlsafe(18), True

    def _cookie(self, client: str) -> str:
        secure = "; Secure" if self.secure_cookie else ""
        return f"{CLIENT_COOKIE}={client}; Path=/; HttpOnly; SameSite=Lax{secure}"


async def _refuse(send: Callable, detail: str = "This file belongs to another session.") -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


__all__ = ["CLIENT_COOKIE", "Owners", "PrivacyMiddleware", "client_of", "file_route_path", "hostile_path"]
