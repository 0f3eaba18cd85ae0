"""The password of an encrypted PDF reaches every reader of the file, and nothing else.

Readers: the page renderer (ingest), the router's text-layer check and the text-layer engine. Before,
the router re-opened the file without the password, so an encrypted born-digital PDF fell back to OCR
and ``--engine textlayer --password x`` failed on every page.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import zipfile

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_pdf

SECRET = "Tr0ub4dor-s3cret"
PAGES = ["# Locked report\n\nThe encrypted text of page one.", "# Part two\n\nMore encrypted words here."]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


def _assert_secret_nowhere(out_dir, *texts: str) -> None:
    for text in texts:
        assert SECRET not in text
    for path in out_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
            if path.suffix == ".zip":
                with zipfile.ZipFile(path) as zf:
                    for name in zf.namelist():
                        assert SECRET.encode() not in zf.read(name), name


def test_encrypted_born_digital_pdf_uses_the_text_layer_with_auto(tmp_path):
    pdf = make_pdf(tmp_path / "locked.pdf", PAGES, password=SECRET)
    out = tmp_path / "out"
    proc = _cli("-vv", "convert", str(pdf), "-o", str(out), "--password", SECRET, "--engine", "auto", "-q")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "locked" / "locked.json").read_text())
    assert [p["engine"] for p in data["pages"]] == ["textlayer", "textlayer"]
    assert "The encrypted text of page one." in (out / "locked" / "locked.md").read_text()
    _assert_secret_nowhere(out, proc.stdout, proc.stderr)


def test_engine_textlayer_with_password(tmp_path):
    pdf = make_pdf(tmp_path / "locked.pdf", PAGES, password=SECRET)
    out = tmp_path / "out"
    proc = _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer", "--password", SECRET)
    assert proc.returncode == 0, proc.stderr
    assert "locked.pdf: 2 pages: 2 ok" in proc.stdout
    data = json.loads((out / "locked" / "locked.json").read_text())
    assert [p["status"] for p in data["pages"]] == ["ok", "ok"]
    assert "More encrypted words here." in data["pages"][1]["markdown"]
    _assert_secret_nowhere(out, proc.stdout, proc.stderr)


def test_wrong_password_is_an_input_error_that_does_not_echo_it(tmp_path):
    pdf = make_pdf(tmp_path / "locked.pdf", PAGES, password=SECRET)
    wrong = "not-the-" + SECRET
    proc = _cli(
        "convert", str(pdf), "-o", str(tmp_path / "out"), "--engine", "textlayer", "--password", wrong
    )
    assert proc.returncode == 2
    assert "password given for locked.pdf is wrong" in proc.stderr
    assert wrong not in proc.stdout + proc.stderr


def test_password_never_logged_in_process(tmp_path, caplog):
    pdf = make_pdf(tmp_path / "locked.pdf", PAGES, password=SECRET)
    settings = Settings(engine="auto", idle_unload_s=0, cache_enabled=False)
    engines = build_engines(settings)
    options = ConvertOptions(password=SECRET, formats=frozenset({"md", "json", "zip"}))
    with caplog.at_level(logging.DEBUG):
        logging.getLogger(__name__).debug("options: %r", options)  # what a debugging line would show
        (doc,) = Converter(engines, settings).convert([pdf], tmp_path / "out", options)
    assert [p.status for p in doc.pages] == ["ok", "ok"]
    assert caplog.records  # the run did log (so the check below looked at something)
    assert SECRET not in caplog.text
    _assert_secret_nowhere(tmp_path / "out", repr(doc), json.dumps(doc.to_dict()))
