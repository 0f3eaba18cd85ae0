"""A refused API call is one INFO line with its reason in the server log, never a traceback.

Issue 31: each of 21 refused calls wrote a full traceback (Gradio prints one for every ``gr.Error``).
The real app, in this process, so the log records and what Gradio prints to stderr are both seen.
"""

from __future__ import annotations

import logging

import httpx
import pytest

from ocr_app.settings import Settings
from tests.factories import make_pdf
from tests.ui_support import free_port, running_app

gradio_client = pytest.importorskip("gradio_client")


def test_refusals_are_one_info_line_each_without_traceback(tmp_path, capfd, caplog):
    settings = Settings(engine="textlayer", host="127.0.0.1", port=free_port(), cache_dir=tmp_path / "cache",
                        result_cache_mb=0, dpi=72)  # fmt: skip
    good = make_pdf(tmp_path / "good.pdf", ["Hello"])
    with running_app(settings) as app, caplog.at_level(logging.INFO, logger="ocr_app"):
        capfd.readouterr()
        api = app.url.rstrip("/") + "/gradio_api"
        params = httpx.get(f"{api}/info").json()["named_endpoints"]["/convert"]["parameters"]
        defaults = [p.get("parameter_default") for p in params[1:]]
        for path in (str(good), "https://example.com/a.pdf"):  # a server path, a URL
            data = [[{"path": path, "meta": {"_type": "gradio.FileData"}}], *defaults]
            event = httpx.post(f"{api}/call/convert", json={"data": data}).json()["event_id"]
            assert "event: error" in httpx.get(f"{api}/call/convert/{event}", timeout=60).text
        client = gradio_client.Client(app.url, verbose=False)
        with pytest.raises(
            Exception, match="not in the list of choices"
        ):  # a bad choice (Gradio's own check)
            client.predict(files=[gradio_client.handle_file(str(good))], mode="nonsense", api_name="/convert")
        with pytest.raises(Exception, match="Upload at least one"):  # no file at all (the app's check)
            client.predict(files=[], api_name="/convert")
        _, result, _ = client.predict(files=[gradio_client.handle_file(str(good))], api_name="/convert")
        assert result["documents"][0]["error"] is None  # the server still serves
        printed = capfd.readouterr().err
    refusals = [r for r in caplog.records if r.name == "ocr_app.ui.refusals"]
    assert "Traceback" not in printed, printed[-3000:]
    assert [r.levelno for r in refusals] == [logging.INFO] * 4
    assert not any(r.exc_info for r in refusals)
    messages = [r.getMessage() for r in refusals]
    assert "good.pdf: refused: it was not uploaded to this app" in messages[0]
    assert "a.pdf: refused: a URL is not a file" in messages[1]
    assert "nonsense is not in the list of choices" in messages[2]
    assert "Upload at least one PDF or image first." in messages[3]
