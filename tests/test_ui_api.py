"""The launched Gradio app, driven over HTTP with gradio_client: the named ``/convert`` endpoint.

The app runs the real DeepSeek-OCR-2 classes with the tiny checkpoint. Its output is random text, so every
expectation is computed by the library itself (``Converter.convert`` with the same settings).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pymupdf
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
    assert names == ["report.md", "report.json", "report_searchable.pdf", "report.zip"]
    md_file, json_file, searchable_file, zip_file = (Path(f) for f in files)
    assert md_file.read_text(encoding="utf-8") == good.outputs["md"].read_text(encoding="utf-8")
    with pymupdf.open(searchable_file) as got, pymupdf.open(good.outputs["searchable"]) as want:
        assert got.page_count == want.page_count and got[0].get_text() == want[0].get_text()
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
    assert [Path(f).name for f in files] == [
        "report.md",
        "report.json",
        "report_searchable.pdf",
        "report.zip",
    ]


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
    assert sorted(Path(f).suffix for f in files) == [".json", ".md", ".pdf", ".zip"]
    md = Path(next(f for f in files if f.endswith(".md"))).read_text()
    assert "<!-- page 1 -->" in md and "<!-- page 6 -->" not in md


def test_api_results_go_once_fetched_and_unfetched_ones_after_the_ttl(app, client, docs):
    """Each call writes into its own folder in the session's; a client that fetched every returned file
    leaves nothing behind, and a client that fetched nothing leaves its folder until the TTL passes."""
    results = app.demo.ocr_app.api_results
    _call(client, [docs["report"]], pages="1")
    sessions = [p for p in app.work_root.iterdir() if p.is_dir()]
    assert len(sessions) == 1 and list(sessions[0].iterdir()) == []  # fetched: removed at once

    lazy = gradio_client.Client(app.url, verbose=False, download_files=False)
    _call(lazy, [docs["report"]], pages="1")
    kept = [p for s in app.work_root.iterdir() for p in s.iterdir()]
    assert len(kept) == 1 and [z.name for z in kept[0].rglob("*.zip")] == ["report.zip"]
    clock = results.clock
    results.clock = lambda: clock() + results.ttl_s  # the TTL has passed
    try:
        assert kept[0] in results.sweep()
    finally:
        results.clock = clock
    assert not kept[0].exists()


# --- encrypted PDFs: a password per file, never logged, never written -------------------------------
SECRET = "Tr0ub4dor-s3cret-pw"


def _all_files(*roots: Path, since: float) -> list[Path]:
    found = []
    for root in roots:
        if root.exists():
            found.extend(p for p in root.rglob("*") if p.is_file() and p.stat().st_mtime >= since)
    return found


def _bytes(path: Path) -> bytes:
    """A scanned file's bytes; b"" for one gone since the scan listed it. Gradio's upload folder holds
    the work folders of every app on the machine, so the scan sees another test's job (another xdist
    worker's) renaming its temporary files as it writes them."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def test_password_opens_an_encrypted_pdf_and_is_never_logged_or_written(app, client, docs, tmp_path, caplog):
    import logging
    import time

    from gradio.utils import get_upload_folder

    locked = make_pdf(tmp_path / "locked.pdf", ["# Locked\nSecret figures."], password=SECRET)
    start = time.time() - 1
    caplog.set_level(logging.DEBUG)
    # one file needs a password, the other not: per-file passwords as a JSON object
    # (the default engine reads the rendered page; the text layer's own reopening is the library's part)
    _, result, files = _call(client, [locked, docs["report"]], password=json.dumps({"locked.pdf": SECRET}))
    got = {d["source"]: d for d in result["documents"]}
    (want,) = app.expected([locked], tmp_path / "lib", password=SECRET)
    assert got["locked.pdf"]["error"] is None and not any(p["error"] for p in got["locked.pdf"]["pages"])
    assert [p["markdown"] for p in got["locked.pdf"]["pages"]] == [p.markdown for p in want.pages]
    assert got["report.pdf"]["error"] is None
    # one password for every file works too; a wrong one fails only that file, with the library's words
    _, result, _ = _call(client, [locked], pages="1", password=SECRET)
    assert result["documents"][0]["error"] is None
    _, result, _ = _call(client, [locked, docs["report"]], pages="1", password="wrong")
    errors = {d["source"]: d["error"] for d in result["documents"]}
    assert errors["report.pdf"] is None and "password given for locked.pdf is wrong" in errors["locked.pdf"]

    assert caplog.records and SECRET not in caplog.text
    written = _all_files(app.work_root, Path(get_upload_folder()), tmp_path / "lib", since=start)
    written += [Path(f) for f in files]
    assert written  # outputs and uploads were there to scan
    leaks = [p for p in written if SECRET.encode() in _bytes(p)]
    assert not leaks
    assert SECRET not in json.dumps(result)


def test_an_unsupported_file_in_a_batch_fails_alone(app, client, docs, tmp_path):
    heic = tmp_path / "photo.heic"
    heic.write_bytes(b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64)
    _, result, files = _call(client, [docs["report"], heic])
    got = {d["source"]: d for d in result["documents"]}
    assert got["report.pdf"]["error"] is None and len(got["report.pdf"]["pages"]) == 2
    assert got["photo.heic"]["error"] and "photo.heic" in got["photo.heic"]["error"]
    assert [Path(f).name for f in files] == [
        "report.md",
        "report.json",
        "report_searchable.pdf",
        "report.zip",
    ]


def test_the_container_health_check_answers_for_the_app_and_fails_without_it(app):
    """``python -m ocr_app.ui.health`` (the Dockerfile's HEALTHCHECK) with the app's host and port from
    the environment, as in the image (host 0.0.0.0 = ask the loopback interface)."""
    import os
    import socket
    import subprocess
    import sys
    from urllib.parse import urlparse

    repo = Path(__file__).parents[1]
    env = {**os.environ, "DEEPSEEK_OCR_HOST": "0.0.0.0", "DEEPSEEK_OCR_PORT": str(urlparse(app.url).port)}
    cmd = [sys.executable, "-m", "ocr_app.ui.health"]
    ok = subprocess.run(cmd, env=env, cwd=repo, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    with socket.socket() as sock:  # a port nobody listens on once this socket closes
        sock.bind(("127.0.0.1", 0))
        env["DEEPSEEK_OCR_PORT"] = str(sock.getsockname()[1])
    down = subprocess.run(cmd, env=env, cwd=repo, capture_output=True, text=True, timeout=60)
    assert down.returncode == 1 and "does not answer" in down.stderr
