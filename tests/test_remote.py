"""Remote engine against a loopback server that speaks the OpenAI chat API like vLLM does.

The server is a fake (no vLLM can run here) but the engine talks to it over real HTTP through the same
code path as production: /v1/models, /tokenize, /v1/chat/completions with a base64 PNG.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from ocr_app.engines.remote import RemoteEngine
from ocr_app.exceptions import EngineError, EngineUnavailableError
from ocr_app.schema import PageImage, PageRequest, StopReason
from ocr_app.settings import Settings

TOKENS = {"<td>": 900, "</td>": 901}


class FakeVllm(BaseHTTPRequestHandler):
    """Answers with a grounded block whose box spans the image it received (proves the image arrived)."""

    seen: list[dict] = []  # noqa: RUF012

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, code: int, body: dict | str) -> None:
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self._send(200, {"data": [{"id": "deepseek-ai/DeepSeek-OCR-2"}]})
        else:
            self._send(404, {"error": "no"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/tokenize":
            self._send(200, {"tokens": [TOKENS[body["prompt"]]]})
            return
        FakeVllm.seen.append(body)
        content = body["messages"][0]["content"]
        url = content[0]["image_url"]["url"]
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        text = content[1]["text"]
        if "FAIL" in text:
            self._send(500, "model exploded")
            return
        w, h = image.size
        raw = f"<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\nimage {w}x{h}"
        finish = "length" if body["max_tokens"] < 10 else "stop"
        self._send(
            200,
            {
                "choices": [{"message": {"content": raw}, "finish_reason": finish}],
                "usage": {"completion_tokens": 7},
            },
        )


@pytest.fixture
def server():
    FakeVllm.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeVllm)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _request(w: int, h: int, prompt: str = "<image>\n<|grounding|>Convert the document to markdown.", **kw):
    page = PageImage(image=Image.new("RGB", (w, h), "white"), index=0, source="x.png")
    return PageRequest(page=page, prompt=prompt, **kw)


def test_remote_engine_sends_image_prompt_and_guard(server):
    engine = RemoteEngine(Settings(remote_url=server + "/v1", remote_concurrency=2))
    outs = engine.predict_batch([_request(300, 200), _request(640, 480), _request(50, 60, max_new_tokens=5)])
    assert [o.raw_text.rsplit(" ", 1)[1] for o in outs] == ["300x200", "640x480", "50x60"]
    assert [o.stop_reason for o in outs] == [StopReason.END, StopReason.END, StopReason.LENGTH]
    assert all(o.engine == "remote" and o.num_tokens == 7 for o in outs)
    body = FakeVllm.seen[0]
    assert body["model"] == "deepseek-ai/DeepSeek-OCR-2"
    assert body["temperature"] == 0.0 and body["skip_special_tokens"] is False
    assert body["messages"][0]["content"][1]["text"] == "<|grounding|>Convert the document to markdown."
    assert body["vllm_xargs"]["whitelist_token_ids"] == [900, 901]
    assert body["vllm_xargs"]["ngram_size"] == Settings().no_repeat_ngram_size


def test_remote_engine_server_error_is_an_engine_error(server):
    engine = RemoteEngine(Settings(remote_url=server))
    with pytest.raises(EngineError, match=r"answered 500.*model exploded"):
        engine.predict_batch([_request(10, 10, prompt="<image>\nFAIL")])


def test_remote_engine_unreachable_and_unknown_model(server):
    with pytest.raises(EngineUnavailableError, match="Cannot reach the OCR server"):
        RemoteEngine(Settings(remote_url="http://127.0.0.1:9")).load()
    with pytest.raises(EngineUnavailableError, match=r"does not serve 'other'.*DeepSeek-OCR-2"):
        RemoteEngine(Settings(remote_url=server, remote_model="other")).load()
    with pytest.raises(EngineUnavailableError, match="DEEPSEEK_OCR_REMOTE_URL"):
        RemoteEngine(Settings(remote_url=None))


def test_the_recorded_mode_is_what_the_server_was_sent_none(server, tmp_path):
    """The chat API carries no resolution mode, so none is sent and none is recorded as used; the
    prompt that was sent is recorded, and the page says the asked mode was not applied."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.stack import build_engines
    from tests.factories import make_image

    settings = Settings(remote_url=server, engine="remote", cache_enabled=False)
    engines = build_engines(settings)
    try:
        opts = ConvertOptions.from_settings(
            settings, mode="global", prompt="free", formats=frozenset({"json"})
        )
        [doc] = Converter(engines, settings).convert([make_image(tmp_path / "p.png")], tmp_path / "out", opts)
    finally:
        engines.unload_all()
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    sent = FakeVllm.seen[-1]
    assert not {"mode", "mm_processor_kwargs", "crop_mode"} & set(sent)
    assert sent["messages"][0]["content"][1]["text"] == "Free OCR."
    assert page["mode"] is None and page["prompt"] == "<image>\nFree OCR."
    assert any("resolution mode 'global' not applied" in n for n in page["notes"])
    assert engines.get("remote").capabilities().modes == ()  # the form offers no mode for it


class HangingVllm(FakeVllm):
    """Never answers a page 333 px wide (the connection stays open, as a stuck server's does)."""

    release = threading.Event()

    def do_POST(self):
        if self.path.endswith("/chat/completions"):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            url = body["messages"][0]["content"][0]["image_url"]["url"]
            image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            if image.size[0] == 333:
                HangingVllm.release.wait(120)
                return
            self.rfile = io.BytesIO(json.dumps(body).encode())  # the parent reads the body again
            self.headers.replace_header("Content-Length", str(len(self.rfile.getvalue())))
        super().do_POST()


@pytest.fixture
def hanging():
    HangingVllm.release.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), HangingVllm)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    HangingVllm.release.set()
    httpd.shutdown()
    httpd.server_close()


def test_a_server_that_never_answers_times_out_and_the_other_pages_convert(hanging, tmp_path):
    """A hung request ends at ``remote_timeout_s`` with a page error that says so; the other file converts."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.stack import build_engines

    Image.new("RGB", (333, 200), "white").save(tmp_path / "stuck.png")
    Image.new("RGB", (640, 480), "white").save(tmp_path / "fine.png")
    settings = Settings(engine="remote", remote_url=hanging, remote_timeout_s=1.0, cache_enabled=False)
    engines = build_engines(settings)
    try:
        opts = ConvertOptions(formats=frozenset({"json"}))
        stuck, fine = Converter(engines, settings).convert(
            [tmp_path / "stuck.png", tmp_path / "fine.png"], tmp_path / "out", opts
        )
    finally:
        engines.unload_all()
    [page] = stuck.pages
    assert page.status == "error" and "ReadTimeout" in page.error, page.error
    assert not HangingVllm.release.is_set()  # it ended by the timeout, not because the server let go
    [ok] = fine.pages
    assert ok.error is None and ok.raw_text.endswith("image 640x480")
