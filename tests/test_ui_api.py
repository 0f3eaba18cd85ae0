"""The launched Gradio app, driven over HTTP with gradio_client: the named ``/convert`` endpoint.

The app runs the real DeepSeek-OCR-2 classes with the tiny checkpoint. Its output is random text, so every
expectation is computed by the library itself (``Converter.convert`` with the same settings).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from ocr_app.exceptions import PageRangeError
from ocr_app.ingest import parse_page_range
from ocr_app.ui import viewer
from tests.factories import make_pdf
from tests.ui_support import running_app, tiny_settings

gradio_client = pytest.importorskip("gradio_client")


@pytest.fixture(scope="module")
def app(tiny_checkpoint, tmp_path_factory):
    with running_app(tiny_settings(tiny_checkpoint, tmp_path_factory.mktemp("ui-api-cache"))) as running:
        yield running


@pytest.fixture(scope="module")
def client(app):
    return gradio_client.Client(app.url, verbose=False, download_files=True)


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    d = tmp_path_factory.mktemp("ui-api-docs")
    report = make_pdf(d / "report.pdf", ["# Quarterly report\nRevenue grew.", "# Appendix\nTables follow."])
    corrupt = d / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    return {"report": report, "corrupt": corrupt}


def _call(client, files, **kwargs):
    from gradio_client import handle_file

    return client.predict(files=[handle_file(str(f)) for f in files], api_name="/convert", **kwargs)


def test_convert_endpoint_is_named_and_documented(client):
    api = client.view_api(return_format="dict", print_info=False)
    assert "/convert" in api["named_endpoints"]
    params = [p["parameter_name"] for p in api["named_endpoints"]["/convert"]["parameters"]]
    assert params[:3] == ["files", "pages", "prompt"]
    assert {"mode", "dpi", "use_cache", "engine"} <= set(params)


def test_good_and_corrupt_file_match_the_library(app, client, docs, tmp_path):
    markdown, result, files = _call(client, [docs["report"], docs["corrupt"]])
    expected = app.expected([docs["report"], docs["corrupt"]], tmp_path / "lib")
    good, bad = expected

    got_good, got_bad = result["documents"]
    assert result["cancelled"] is False
    assert got_good["source"] == "report.pdf" and got_good["error"] is None
    assert [p["markdown"] for p in got_good["pages"]] == [p.markdown for p in good.pages]
    assert [p["status"] for p in got_good["pages"]] == [p.status for p in good.pages]
    assert [p["page_number"] for p in got_good["pages"]] == [1, 2]
    # The corrupt file carries the library's own message; the good file converted anyway.
    assert bad.error and got_bad["error"] == bad.error
    assert "corrupt.pdf" in got_bad["error"]

    assert markdown == viewer.document_markdown(expected)
    assert all(p.markdown in markdown for p in good.pages)

    names = [Path(f).name for f in files]
    assert names == ["report.md", "report.json", "report.zip"]
    md_file, json_file, zip_file = (Path(f) for f in files)
    assert md_file.read_text(encoding="utf-8") == good.outputs["md"].read_text(encoding="utf-8")
    stored = json.loads(json_file.read_text(encoding="utf-8"))
    assert [p["markdown"] for p in stored["pages"]] == [p.markdown for p in good.pages]
    with zipfile.ZipFile(zip_file) as got, zipfile.ZipFile(good.outputs["zip"]) as want:
        assert sorted(got.namelist()) == sorted(want.namelist())
        assert any(n.endswith("report.md") for n in got.namelist())
        assert any("overlays/" in n for n in got.namelist())


def test_page_range_and_custom_prompt_reach_the_library(app, client, docs, tmp_path):
    _, result, files = _call(
        client, [docs["report"]], pages="2", prompt="custom", custom_prompt="Free OCR.", mode="global"
    )
    (doc,) = result["documents"]
    assert [p["page_number"] for p in doc["pages"]] == [2]
    assert doc["settings"]["prompt"] == "Free OCR."
    assert doc["settings"]["pages"] == "2"
    (want,) = app.expected([docs["report"]], tmp_path / "lib", pages="2", prompt="Free OCR.")
    assert doc["pages"][0]["markdown"] == want.pages[0].markdown
    assert [Path(f).name for f in files] == ["report.md", "report.json", "report.zip"]


def test_engine_choice_reaches_the_library(client, docs):
    markdown, result, _ = _call(client, [docs["report"]], engine="textlayer")
    (doc,) = result["documents"]
    assert {p["engine"] for p in doc["pages"]} == {"textlayer"}
    assert "Quarterly report" in markdown and "Revenue grew." in markdown
    assert "Tables follow." in doc["pages"][1]["markdown"]


def test_no_files_is_a_clear_error(client):
    with pytest.raises(gradio_client.exceptions.AppError, match="Upload at least one PDF or image"):
        client.predict(files=[], api_name="/convert")


def test_only_bad_files_raise_the_library_message(app, client, docs, tmp_path):
    (want,) = app.expected([docs["corrupt"]], tmp_path / "lib")
    assert want.error
    with pytest.raises(gradio_client.exceptions.AppError) as ui:
        _call(client, [docs["corrupt"]])
    assert want.error in str(ui.value)


def test_bad_page_range_raises_the_library_message(client, docs):
    with pytest.raises(PageRangeError) as lib:
        parse_page_range("7", 2)
    with pytest.raises(gradio_client.exceptions.AppError) as ui:
        _call(client, [docs["report"]], pages="7")
    assert str(lib.value) in str(ui.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": "custom", "custom_prompt": "   "}, "custom prompt is empty"),
        ({"prompt": "locate", "locate_text": ""}, "needs the text to find"),
    ],
)
def test_invalid_choices_are_reported(client, docs, kwargs, message):
    with pytest.raises(gradio_client.exceptions.AppError, match=message):
        _call(client, [docs["report"]], **kwargs)


def test_cancel_endpoint_stops_the_sessions_running_job(client, tmp_path):
    import time

    from gradio_client import handle_file

    pdf = make_pdf(tmp_path / "six.pdf", [f"Page {i}" for i in range(1, 7)])
    assert client.predict(api_name="/cancel").startswith("Nothing to cancel")
    job = client.submit(files=[handle_file(str(pdf))], api_name="/convert")
    deadline = time.monotonic() + 60
    while job.status().code.name != "PROCESSING" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Cancelling" in client.predict(api_name="/cancel")
    _, result, files = job.result(timeout=120)
    assert result["cancelled"] is True
    (doc,) = result["documents"]
    assert 1 <= len(doc["pages"]) < 6 and doc["pages"][0]["page_number"] == 1
    # the pages finished before the cancel are kept and offered: md, json and zip of those pages only
    assert sorted(Path(f).suffix for f in files) == [".json", ".md", ".zip"]
    md = Path(next(f for f in files if f.endswith(".md"))).read_text()
    assert "<!-- page 1 -->" in md and "<!-- page 6 -->" not in md


def test_outputs_live_in_one_folder_per_session_and_a_new_job_replaces_the_old(app, client, docs):
    _call(client, [docs["report"]], pages="1")
    sessions = [p for p in app.work_root.iterdir() if p.is_dir()]
    assert len(sessions) == 1
    first = sorted(p.name for p in sessions[0].iterdir())
    _call(client, [docs["report"]], pages="1")
    second = sorted(p.name for p in sessions[0].iterdir())
    assert len(first) == len(second) == 1 and first != second
