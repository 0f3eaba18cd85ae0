"""A fleet of endpoints: three loopback servers speaking the OpenAI chat API the remote engine uses.

One server dies in the middle of the run (it drops a request, then stops listening), one is slow. The
CLI converts a 12-page PDF over the fleet: every page must convert, none twice, and each page must
say which endpoint read it — checked against what each server itself answered.
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from ocr_app.cli import main
from ocr_app.engines.pool import EnginePool, hedged, read_by
from ocr_app.engines.remote import Endpoint, RemoteEngine, build_remote_engine, parse_endpoints
from ocr_app.exceptions import ConfigError
from ocr_app.schema import PageImage, PageRequest
from ocr_app.settings import Settings


class Server:
    """One fake vLLM. ``die_after``: answer that many pages, drop the next request, stop listening.
    ``hang``: take every page and never answer (until the test ends: a wedged server)."""

    def __init__(
        self, delay_s: float = 0.0, die_after: int | None = None, fail_first: int = 0, hang: bool = False
    ) -> None:
        self.delay_s, self.die_after, self.fail_first, self.hang = delay_s, die_after, fail_first, hang
        self.released = threading.Event()
        self.took = threading.Event()  # a page request has arrived
        self.answered: list[str] = []  # "WxH" of each page answered
        self.requests = 0
        self.dead = False
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/health":
                    self._send(200, {})
                elif self.path == "/v1/models":
                    self._send(200, {"data": [{"id": "deepseek-ai/DeepSeek-OCR-2"}]})
                else:
                    self._send(404, {})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/tokenize":
                    self._send(200, {"tokens": [7]})
                    return
                with outer._lock:
                    outer.requests += 1
                    n = outer.requests
                outer.took.set()
                if outer.dead or (outer.die_after is not None and n > outer.die_after):
                    outer.die()
                    self.close_connection = True
                    return  # no answer at all: the client sees the server disconnect
                if n <= outer.fail_first:
                    self._send(503, {"error": "warming up"})
                    return
                if outer.hang:
                    outer.released.wait(120)  # the client's timeout or the test's end, whichever first
                    self.close_connection = True
                    return
                time.sleep(outer.delay_s)
                url = body["messages"][0]["content"][0]["image_url"]["url"]
                w, h = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size
                raw = f"<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\nimage {w}x{h}"
                outer.answered.append(f"{w}x{h}")
                reply = {"choices": [{"message": {"content": raw}, "finish_reason": "stop"}], "usage": {}}
                self._send(200, reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.handle_error = lambda *a: None
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def die(self) -> None:
        self.released.set()
        if not self.dead:
            self.dead = True
            threading.Thread(target=self._stop, daemon=True).start()

    def _stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers():
    made: list[Server] = []

    def make(**kw) -> Server:
        made.append(Server(**kw))
        return made[-1]

    yield make
    for s in made:
        s.die()


def _pdf(path: Path, pages: int) -> Path:
    import fitz

    doc = fitz.open()
    for i in range(pages):  # distinct sizes: the server's answer says which page it saw
        page = doc.new_page(width=200 + 10 * i, height=300)
        page.insert_text((20, 50), f"Page {i + 1}", fontsize=14)
    doc.save(path)
    return path


def test_fleet_converts_every_page_once_when_one_endpoint_dies_and_one_is_slow(
    tmp_path, servers, monkeypatch
):
    dying = servers(die_after=2)
    fast = servers()
    slow = servers(delay_s=0.4)
    monkeypatch.setenv("DEEPSEEK_OCR_REMOTE_URL", f"{dying.url}/v1,{fast.url},{slow.url}")
    monkeypatch.setenv("DEEPSEEK_OCR_REMOTE_CONCURRENCY", "2")
    monkeypatch.setenv("DEEPSEEK_OCR_REMOTE_BACKOFF_S", "30")  # the dead one must not come back
    pdf = _pdf(tmp_path / "doc.pdf", 12)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main, ["convert", str(pdf), "-o", str(out), "--engine", "remote", "--format", "md,json", "-q"]
    )
    assert res.exit_code == 0, res.output

    doc = json.loads(next(out.rglob("*.json")).read_text())
    pages = doc["pages"]
    assert [p["page_number"] for p in pages] == list(range(1, 13))
    assert all(p["status"] == "ok" for p in pages)
    sizes = {p["page_number"]: f"{p['width']}x{p['height']}" for p in pages}
    for p in pages:  # each page's own answer, not a neighbour's
        assert p["markdown"].strip() == f"image {sizes[p['page_number']]}"
    md = next(out.rglob("*.md")).read_text()
    assert all(md.count(f"image {s}") == 1 for s in sizes.values())  # none twice

    # which endpoint read each page: the note agrees with what each server answered
    by = {p["page_number"]: read_by(p["notes"]) for p in pages}
    assert set(by.values()) == {dying.url, fast.url, slow.url}
    for server in (dying, fast, slow):
        mine = sorted(sizes[n] for n, url in by.items() if url == server.url)
        assert mine == sorted(server.answered)
        assert all(server.url in p["engine_reason"] for p in pages if by[p["page_number"]] == server.url)
    assert len(dying.answered) == 2 and dying.requests >= 3  # it dropped a page, which was read elsewhere
    assert len(slow.answered) < len(fast.answered)  # the least-busy endpoint gets the pages

    counts = {url: len(server.answered) for url, server in ((s.url, s) for s in (dying, fast, slow))}
    for url, n in counts.items():
        assert re.search(rf"{re.escape(url)}: {n} pages? \(pages? [0-9, -]+\)", res.output), res.output


def _req(i: int) -> PageRequest:
    page = PageImage(image=Image.new("RGB", (100 + i, 50), "white"), index=i, source="x.png")
    return PageRequest(page=page, prompt="<image>\nFree OCR.")


def test_endpoint_back_after_backoff_is_probed_and_used_again(servers):
    flaky = servers(fail_first=1)  # 503 once, then healthy
    other = servers(delay_s=0.05)
    pool = build_remote_engine(
        # A backoff well past the first batch's time on a loaded 2-core CI machine (0.2 s had run out
        # before the state was read, and the member read "up" again)
        Settings(remote_url=f"{flaky.url},{other.url}", remote_concurrency=1, remote_backoff_s=1.0)
    )
    assert isinstance(pool, EnginePool)
    first = pool.predict_batch([_req(0), _req(1)])
    assert read_by(first[0].notes) == other.url  # the page that got a 503 was retried on `other`
    assert "100x50" in other.answered and "100x50" not in flaky.answered
    assert pool.describe()["pool"]["members"][0]["state"] in ("down", "retrying")
    time.sleep(1.1)
    outs = pool.predict_batch([_req(i) for i in range(2, 8)])
    assert [o.raw_text.rsplit(" ", 1)[1] for o in outs] == [f"{100 + i}x50" for i in range(2, 8)]
    assert flaky.url in {read_by(o.notes) for o in outs}  # probed through /health, back in the pool
    assert pool.describe()["pool"]["members"][0]["state"] == "up"


def test_weights_share_pages_in_proportion(tmp_path, servers, monkeypatch):
    a, b = servers(delay_s=0.05), servers(delay_s=0.05)
    toml = tmp_path / "fleet.toml"
    toml.write_text(
        f'max_in_flight = 3\n[[endpoint]]\nurl = "{a.url}/v1"\nweight = 3\n'
        f'[[endpoint]]\nurl = "{b.url}"\nmax_in_flight = 1\napi_key_env = "FLEET_KEY_B"\n'
    )
    with pytest.raises(ConfigError, match=r"FLEET_KEY_B.*not set"):
        parse_endpoints(str(toml))
    monkeypatch.setenv("FLEET_KEY_B", "secret-b")
    eps = parse_endpoints(str(toml))
    assert eps == [
        Endpoint(url=f"{a.url}/v1", weight=3, max_in_flight=3),
        Endpoint(url=b.url, api_key="secret-b", max_in_flight=1),
    ]
    pool = build_remote_engine(Settings(remote_url=str(toml)))
    assert [m.slots for m in pool.members] == [3, 1]
    assert isinstance(pool.members[1].engine, RemoteEngine) and pool.members[1].engine.api_key == "secret-b"
    outs = pool.predict_batch([_req(i) for i in range(16)])
    assert len(a.answered) + len(b.answered) == 16
    assert len(a.answered) >= 2 * len(b.answered)
    assert [o.raw_text.rsplit(" ", 1)[1] for o in outs] == [f"{100 + i}x50" for i in range(16)]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("http://a,ftp://b", "not an http"),
        ("http://a,http://a", "twice"),
        ("/nope/fleet.toml", "does not exist"),
    ],
)
def test_bad_endpoint_lists_are_config_errors(value, match):
    with pytest.raises(ConfigError, match=match):
        parse_endpoints(value)


def test_json_summary_says_which_endpoint_read_each_page():
    from ocr_app.cli import _summary_dict
    from ocr_app.schema import DocumentResult, PageResult

    pages = [
        PageResult(index=0, source="d.pdf", width=1, height=1, notes=["read by endpoint http://a:8000"]),
        PageResult(index=1, source="d.pdf", width=1, height=1, notes=["x", "read by endpoint http://b:8000"]),
        PageResult(index=2, source="d.pdf", width=1, height=1, notes=[]),  # text layer: no endpoint
    ]
    summary = _summary_dict([DocumentResult(source="d.pdf", pages=pages)], 0)
    assert summary["files"][0]["read_by"] == {1: "http://a:8000", 2: "http://b:8000"}


def test_bad_endpoint_list_leaves_the_other_engines_running():
    from ocr_app.exceptions import EngineUnavailableError
    from ocr_app.stack import build_engines

    engines = build_engines(Settings(remote_url="http://a:8000,ftp://b", engine="auto"))
    assert "remote" not in engines.engines and "not an http" in engines.unavailable["remote"]
    with pytest.raises(EngineUnavailableError, match="not an http"):
        build_engines(Settings(remote_url="http://a:8000,ftp://b", engine="remote"))


def test_a_hung_endpoint_is_hedged_around_long_before_its_timeout(servers, capsys):
    """One endpoint takes pages and never answers (timeout 60 s). Its pages are re-sent to the healthy
    one once they are overdue against the fleet's p95, so 12 pages finish long before the timeout, every
    page is the healthy endpoint's answer, and the summary says which were hedged. (How close a hedged
    fleet comes to a healthy one's time is a bench's question: a wall-clock ratio here fails under load.)"""
    good, hung = servers(delay_s=0.4), servers(hang=True)
    settings = Settings(
        remote_url=f"{good.url},{hung.url}",
        remote_concurrency=4,
        remote_timeout_s=60,
        remote_hedge_factor=1.5,
        remote_hedge_min_s=0.1,
    )
    pool = build_remote_engine(settings)
    assert isinstance(pool, EnginePool) and pool.hedging is not None
    t0 = time.perf_counter()
    outs = pool.predict_batch([_req(i) for i in range(12)])
    assert time.perf_counter() - t0 < settings.remote_timeout_s / 4  # no page waited on the timeout
    assert [o.raw_text.rsplit(" ", 1)[1] for o in outs] == [f"{100 + i}x50" for i in range(12)]
    assert {read_by(o.notes) for o in outs} == {good.url}
    assert hung.requests == 4 and not hung.answered  # it took its first pages only, then got none
    notes = [hedged(o.notes) for o in outs]
    assert sum(n is not None for n in notes) == 4
    assert all(f"{hung.url} had not answered" in n and f"re-sent to {good.url}" in n for n in notes if n)
    member = pool.describe()["pool"]["members"][1]
    assert member["label"] == hung.url and member["pages_hedged_away"] == 4

    from ocr_app.cli import _print_summary
    from ocr_app.schema import DocumentResult, PageResult

    pages = [
        PageResult(index=i, source="d.pdf", width=1, height=1, notes=list(o.notes))
        for i, o in enumerate(outs)
    ]
    capsys.readouterr()
    _print_summary([DocumentResult(source="d.pdf", pages=pages)])
    printed = capsys.readouterr().out
    first = [i + 1 for i, n in enumerate(notes) if n]
    assert f"{good.url}: 12 pages (pages 1-12)" in printed, printed
    assert (
        f"hedged: 4 pages re-sent because an endpoint was slow, the first answer kept (pages {first[0]}"
        in printed
    )


def test_a_cancelled_job_stops_waiting_for_a_fleet_that_does_not_answer(servers):
    """Both endpoints take pages and never answer (timeout 60 s): once the job is cancelled, the pool's
    stream ends within its polling interval, without the pages, and the pages not yet sent stay unsent."""
    a, b = servers(hang=True), servers(hang=True)
    pool = build_remote_engine(
        Settings(remote_url=f"{a.url},{b.url}", remote_concurrency=1, remote_timeout_s=60)
    )
    cancel = threading.Event()
    reqs = [_req(i) for i in range(6)]
    for r in reqs:
        r.cancel = cancel
    got: list = []
    done = threading.Event()

    def run() -> None:
        got.extend(pool.predict_stream(reqs))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert a.took.wait(30) and b.took.wait(30)  # one page in flight on each endpoint (their only slot)
    cancel.set()
    assert done.wait(30)  # far from the 60 s timeout
    assert got == [] and a.requests + b.requests == 2
