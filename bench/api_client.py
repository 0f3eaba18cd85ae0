"""One benchmark client of the app in a process of its own, as a user's browser is.

Why a process: ``bench_concurrency`` used to run its ``gradio_client`` clients as threads of the server's
own process. Their HTTP, SSE and JSON work then took the server's GIL, so 16 clients slowed the app they
measured (a CPU profile of 16 × 1 page: more samples in the clients' threads than in the app's jobs).
Users' browsers are other processes. Here each client is a child process that connects once, then
converts the files it is sent over a pipe (a path per line in, a JSON line out); the parent's thread
only waits on the pipe.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


class _PromptSleep:
    """``time`` for gradio_client's message loop, whose waits are cut to 1 ms (see ``serve``)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, POLL_S))


POLL_S = 0.001


def serve(url: str, prompt: bool = False) -> None:
    """The child: connect (the app's config fetched, as an open tab has it), then one job per line of
    stdin (a PDF path; an empty line ends it), one JSON line on stdout per job.

    ``prompt``: gradio_client's reader looks for the server's next message every 50 ms
    (``time.sleep(0.05)`` in ``gradio_client.utils``), so a result waits 25 ms on average, and up to
    50 ms, after the server sent it; a browser's EventSource takes each message as it comes. With
    ``prompt`` that wait is 1 ms, and the client builds its TLS context once (``_one_tls_setup``), so the
    figure is the app's and not the client library's."""
    out = sys.stdout
    sys.stdout = sys.stderr  # gradio_client's own prints stay off the reply channel
    try:
        import gradio_client.utils
        from gradio_client import Client, handle_file

        if prompt:
            gradio_client.utils.time = _PromptSleep()
            _one_tls_setup()

        client = Client(url, verbose=False, download_files=False)
        marks = _mark_requests()
    except Exception as exc:  # reported to the parent, which raises it
        _reply(out, "error", f"{type(exc).__name__}: {exc}"[:300])
        return
    _reply(out, "ready", None)
    for line in sys.stdin:
        pdf = line.strip()
        if not pdf:
            return
        marks.clear()
        marks["sent"] = time.perf_counter()
        try:
            _, result, _ = client.predict(files=[handle_file(pdf)], use_cache=False, api_name="/convert")
            marks["got"] = time.perf_counter()
            _reply(out, "ok", result["documents"][0], marks)
        except Exception as exc:
            _reply(out, "error", f"{type(exc).__name__}: {exc}"[:300])


def _one_tls_setup() -> None:
    """``gradio_client`` opens a new ``httpx`` client for each request of a job (upload, queue join, event
    stream), and each builds a TLS context from certifi's bundle, ~20 ms, even for plain http on
    loopback: ~60 ms a job that a browser, which keeps its connection set-up, never pays. With
    ``prompt`` the context is built once per setting and shared."""
    import functools

    import httpx._transports.default as transport

    build = transport.create_ssl_context
    cached = functools.lru_cache(maxsize=8)(build)

    def shared(verify=True, cert=None, trust_env=True):
        if isinstance(verify, bool) and cert is None:
            return cached(verify=verify, cert=None, trust_env=trust_env)
        return build(verify=verify, cert=cert, trust_env=trust_env)

    transport.create_ssl_context = shared


def _mark_requests() -> dict[str, float]:
    """When this client first sent, and first had the answer of, each kind of request of a job (upload,
    queue join, the event stream), on ``perf_counter``'s clock, which on Linux is the host's monotonic
    clock and so comparable with the server's marks: where the time outside the conversion goes."""
    import httpx

    marks: dict[str, float] = {}
    send = httpx.Client.send

    def marked(self, request, *a, **kw):
        kind = request.url.path.rstrip("/").rsplit("/gradio_api/", 1)[-1].split("/")[0:2]
        name = "/".join(k for k in kind if k in ("upload", "queue", "join", "data"))
        if not name:  # the heartbeat and the config: not a job's
            return send(self, request, *a, **kw)
        marks.setdefault(f"{name}_sent", time.perf_counter())
        try:
            return send(self, request, *a, **kw)
        finally:
            marks.setdefault(f"{name}_back", time.perf_counter())

    httpx.Client.send = marked
    return marks


def _reply(out: Any, kind: str, value: Any, marks: dict[str, float] | None = None) -> None:
    out.write(json.dumps([kind, value, marks or {}]) + "\n")
    out.flush()


class ClientProcess:
    """A connected client in its own process; ``convert`` blocks the calling thread on a pipe only."""

    def __init__(self, url: str, prompt: bool = False) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), url, *(["--prompt"] if prompt else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.marks: dict[str, float] = {}  # the last job's request marks (``_mark_requests``)
        kind, value = self._read()
        if kind != "ready":
            self.close()
            raise RuntimeError(f"client could not connect: {value}")

    def _read(self) -> tuple[str, Any]:
        line = self._proc.stdout.readline()
        if not line:
            return "error", f"client process ended (exit {self._proc.wait()})"
        kind, value, self.marks = json.loads(line)
        return kind, value

    def convert(self, pdf: str) -> dict:
        """The first document of the ``/convert`` result for ``pdf``."""
        self._proc.stdin.write(pdf + "\n")
        self._proc.stdin.flush()
        kind, value = self._read()
        if kind != "ok":
            raise RuntimeError(value)
        return value

    def close(self) -> None:
        try:
            self._proc.stdin.write("\n")
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()


if __name__ == "__main__":
    serve(sys.argv[1], prompt="--prompt" in sys.argv[2:])
