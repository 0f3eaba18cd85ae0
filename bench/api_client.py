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
    ``prompt`` that wait is 1 ms, so the figure is the app's and not the client library's."""
    out = sys.stdout
    sys.stdout = sys.stderr  # gradio_client's own prints stay off the reply channel
    try:
        import gradio_client.utils
        from gradio_client import Client, handle_file

        if prompt:
            gradio_client.utils.time = _PromptSleep()

        client = Client(url, verbose=False, download_files=False)
    except Exception as exc:  # reported to the parent, which raises it
        _reply(out, "error", f"{type(exc).__name__}: {exc}"[:300])
        return
    _reply(out, "ready", None)
    for line in sys.stdin:
        pdf = line.strip()
        if not pdf:
            return
        try:
            _, result, _ = client.predict(files=[handle_file(pdf)], use_cache=False, api_name="/convert")
            _reply(out, "ok", result["documents"][0])
        except Exception as exc:
            _reply(out, "error", f"{type(exc).__name__}: {exc}"[:300])


def _reply(out: Any, kind: str, value: Any) -> None:
    out.write(json.dumps([kind, value]) + "\n")
    out.flush()


class ClientProcess:
    """A connected client in its own process; ``convert`` blocks the calling thread on a pipe only."""

    def __init__(self, url: str, prompt: bool = False) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), url, *(["--prompt"] if prompt else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        kind, value = self._read()
        if kind != "ready":
            self.close()
            raise RuntimeError(f"client could not connect: {value}")

    def _read(self) -> tuple[str, Any]:
        line = self._proc.stdout.readline()
        if not line:
            return "error", f"client process ended (exit {self._proc.wait()})"
        kind, value = json.loads(line)
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
