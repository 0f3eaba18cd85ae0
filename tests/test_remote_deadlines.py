"""A remote endpoint that accepts a page and never answers lets go: deadlines, hedging, cancel.

Issue 31: such an endpoint held a run for the whole 300 s timeout and Ctrl-C did not end it. Here the
endpoints are real local HTTP servers over real sockets: ``Silent`` takes a page request and never
sends a byte (it notices when the client closes the connection), ``Streaming`` answers the way vLLM
does with ``"stream": true`` (server-sent events, the usage last).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from ocr_app.engines.pool import EnginePool, hedged, read_by
from ocr_app.engines.remote import RemoteEngine, build_remote_engine
from ocr_app.exceptions import EngineError
from ocr_app.schema import PageImage, PageRequest, StopReason
from ocr_app.settings import Settings


class _Server:
    """A loopback server; ``silent``: page requests get no answer, ever (until the test ends)."""

    def __init__(self, silent: bool) -> None:
        self.silent = silent
        self.took = threading.Event()  # a page request arrived
        self.closed_at: list[float] = []  # when the client dropped a silent request's connection
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _json(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._json({"data": [{"id": "deepseek-ai/DeepSeek-OCR-2"}]} if "models" in self.path else {})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize":
                    self._json({"tokens": [7]})
                    return
                outer.took.set()
                if outer.silent:
                    self.connection.settimeout(120)
                    try:
                        gone = self.rfile.read(1) == b""  # returns when the client shuts its side
                    except OSError:
                        gone = True
                    if gone:
                        outer.closed_at.append(time.monotonic())
                    self.close_connection = True
                    return
                assert body["stream"] is True
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                events = [
                    {
                        "choices": [
                            {"delta": {"content": "<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\n"}}
                        ]
                    },
                    {"choices": [{"delta": {"content": "streamed "}}]},
                    {"choices": [{"delta": {"content": "answer"}, "finish_reason": "length"}]},
                    {"choices": [], "usage": {"completion_tokens": 3}},
                ]
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers():
    made: list[_Server] = []

    def make(silent: bool) -> _Server:
        made.append(_Server(silent))
        return made[-1]

    yield make
    for s in made:
        s.stop()


def _req(i: int, cancel: threading.Event | None = None) -> PageRequest:
    page = PageImage(image=Image.new("RGB", (100 + i, 50), "white"), index=i, source="d.pdf")
    return PageRequest(page=page, prompt="<image>\nFree OCR.", cancel=cancel)


def test_a_streamed_answer_is_read_whole(servers):
    good = servers(silent=False)
    [out] = RemoteEngine(Settings(remote_url=good.url)).predict_batch([_req(0)])
    assert out.raw_text.endswith("streamed answer") and out.stop_reason == StopReason.LENGTH
    assert out.num_tokens == 3


def test_a_silent_endpoint_fails_the_page_at_the_first_byte_deadline(servers):
    """The total timeout stays 300 s; silence is cut at ``remote_first_byte_s`` (1 s here) with a page
    error that names the setting."""
    silent = servers(silent=True)
    engine = RemoteEngine(Settings(remote_url=silent.url, remote_first_byte_s=1, remote_timeout_s=300))
    start = time.monotonic()
    with pytest.raises(EngineError) as info:
        engine.predict_batch([_req(0)])
    assert time.monotonic() - start < 5
    assert str(info.value) == (
        f"OCR server {silent.url} did not send a byte for page 1 within 1 s (ReadTimeout; "
        "DEEPSEEK_OCR_REMOTE_FIRST_BYTE_S)"
    )
    assert Settings().remote_first_byte_s <= 30


def test_a_fleet_hedges_the_first_pages_of_a_silent_endpoint(servers):
    """No page time is known yet, so the p95 rule cannot call the silent endpoint slow: its page is
    re-sent after half the first-byte deadline (3 s of 6 s here), before that deadline fails it: the
    page says it was hedged (a page failed over after the deadline would not)."""
    silent, good = servers(silent=True), servers(silent=False)
    pool = build_remote_engine(
        Settings(remote_url=f"{silent.url},{good.url}", remote_first_byte_s=6, remote_hedge_min_s=0.1)
    )
    assert isinstance(pool, EnginePool)
    outs = pool.predict_batch([_req(0), _req(1)])
    assert silent.took.is_set()
    assert {read_by(o.notes) for o in outs} == {good.url}
    notes = [n for n in (hedged(o.notes) for o in outs) if n]
    assert len(notes) == 1 and f"{silent.url} had not answered" in notes[0], notes
    waited = float(notes[0].split("had not answered after ")[1].split(" s")[0])
    assert waited >= 3, notes  # re-sent at half the deadline (a fail-over after it carries no such note)


def test_a_cancel_closes_the_requests_in_flight_within_2_s(servers):
    """A job cancelled while its page waits on a silent endpoint (deadlines 60 s and 300 s): the engine's
    stream ends, the connection is shut (the server sees the client go) and no request thread is left."""
    silent = servers(silent=True)
    engine = RemoteEngine(
        Settings(remote_url=silent.url, remote_first_byte_s=60, remote_timeout_s=300, remote_concurrency=2)
    )
    cancel = threading.Event()
    got: list = []
    done = threading.Event()
    # request threads of earlier tests in this worker may still be running out their own deadlines
    earlier = {t for t in threading.enumerate() if t.name.startswith("ocr-remote")}

    def ours() -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("ocr-remote") and t not in earlier]

    def run() -> None:
        got.extend(engine.predict_stream([_req(0, cancel), _req(1, cancel), _req(2, cancel)]))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert silent.took.wait(30)
    time.sleep(0.3)  # both requests of the two slots are on their way
    cancelled = time.monotonic()
    cancel.set()
    assert done.wait(2) and got == []
    deadline = cancelled + 2
    while len(silent.closed_at) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(silent.closed_at) == 2 and max(silent.closed_at) - cancelled < 2, silent.closed_at
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ours()
