"""Input handling and output files from a new user's point of view (issue 15, items 6, 8, 9, 10, 14).

Real CLI subprocesses on PyMuPDF-made PDFs and Pillow images, the text-layer engine (fast, no model).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import time
import zipfile

import pytest

from ocr_app.exceptions import EncryptedDocumentError, UserErrorLogFilter
from tests.factories import make_image, make_pdf

PAGES = ["# One\n\nFirst page words here.", "# Two\n\nSecond page words.", "# Three\n\nThird page words."]


def _cli(*args: str, umask: int | None = None, env_extra: dict[str, str] | None = None):
    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env_extra or {}))

    def set_umask() -> None:
        os.umask(umask)

    return subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=set_umask if umask is not None else None,
    )


# --- item 8: options validated before anything loads -------------------------------------------------
@pytest.mark.parametrize(
    ("option", "value", "listed"),
    [
        ("--mode", "huge", "auto, default, global, small (or default:N)"),
        (
            "--device",
            "tpu",
            "device: unknown device 'tpu': use auto, cpu, cuda, mps, cuda:N or a list (cuda:0,cuda:1)",
        ),
        ("--dtype", "bogus", "'auto', 'bf16', 'fp16', 'fp32', 'int8', 'mixed'"),
        ("--engine", "nope", "'auto', 'deepseek', 'light', 'textlayer', 'remote'"),
    ],
)
def test_unknown_option_values_exit_2_at_once_with_the_choices(tmp_path, option, value, listed):
    pdf = make_pdf(tmp_path / "d.pdf", PAGES[:1])
    start = time.perf_counter()
    proc = _cli("convert", str(pdf), "-o", str(tmp_path / "out"), "--engine", "textlayer", option, value)
    assert proc.returncode == 2, proc.stderr
    assert f"'{value}'" in proc.stderr and listed in proc.stderr
    assert "Traceback" not in proc.stderr and "errors.pydantic.dev" not in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing ran
    assert time.perf_counter() - start < 60  # no model load, no conversion (generous: shared CI cores)


def test_bad_mode_from_the_environment_is_caught_too(tmp_path):
    pdf = make_pdf(tmp_path / "d.pdf", PAGES[:1])
    proc = _cli("convert", str(pdf), "-o", str(tmp_path / "out"), env_extra={"DEEPSEEK_OCR_MODE": "huge"})
    assert proc.returncode == 2 and "Unknown resolution mode 'huge'" in proc.stderr


def test_remote_engine_without_url_is_bad_usage(tmp_path):
    pdf = make_pdf(tmp_path / "d.pdf", PAGES[:1])
    env = {k: v for k, v in os.environ.items() if k != "DEEPSEEK_OCR_REMOTE_URL"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ocr_app.cli",
            "convert",
            str(pdf),
            "-o",
            str(tmp_path / "o"),
            "--engine",
            "remote",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "--engine remote needs an endpoint: set DEEPSEEK_OCR_REMOTE_URL" in proc.stderr


# --- item 9: a page range applies per file ----------------------------------------------------------
def test_page_range_applies_per_file_in_a_batch(tmp_path):
    pdf = make_pdf(tmp_path / "report.pdf", PAGES)
    png = make_image(tmp_path / "scan.png", "Hello")
    out = tmp_path / "out"
    proc = _cli(
        "convert", str(pdf), str(png), "-o", str(out), "--engine", "light", "-p", "1-2", "--format", "json"
    )
    assert proc.returncode in (0, 3), proc.stderr  # 3 only if the light engine flags the tiny scan
    report = json.loads((out / "report" / "report.json").read_text())
    scan = json.loads((out / "scan" / "scan.json").read_text())
    assert [p["page_number"] for p in report["pages"]] == [1, 2]
    assert [p["page_number"] for p in scan["pages"]] == [1] and scan["error"] is None
    assert any('page range "1-2": the document has 1 page' in n for n in scan["notes"])


def test_page_range_past_the_end_of_a_single_file_is_still_an_error(tmp_path):
    pdf = make_pdf(tmp_path / "report.pdf", PAGES)
    proc = _cli("convert", str(pdf), "-o", str(tmp_path / "out"), "--engine", "textlayer", "-p", "1-30")
    assert proc.returncode == 2 and "page 30 does not exist" in proc.stderr


# --- item 10: odd names and a file where the output folder should be ----------------------------------
def test_file_named_dot_dot_pdf_converts(tmp_path):
    pdf = make_pdf(tmp_path / "..pdf", PAGES[:1])
    out = tmp_path / "out"
    proc = _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer", "--format", "md")
    assert proc.returncode == 0, proc.stderr
    assert "First page words here." in (out / "document" / "document.md").read_text()


def test_out_pointing_at_an_existing_file_is_a_clear_error(tmp_path):
    pdf = make_pdf(tmp_path / "d.pdf", PAGES[:1])
    target = tmp_path / "taken.txt"
    target.write_text("mine")
    proc = _cli("convert", str(pdf), "-o", str(target), "--engine", "textlayer")
    assert proc.returncode == 2
    assert "is an existing file, not a folder" in proc.stderr and "Traceback" not in proc.stderr
    assert target.read_text() == "mine"


# --- item 6: outputs follow the umask; a run owns its folder -----------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_outputs_follow_the_umask(tmp_path, umask):
    pdf = make_pdf(tmp_path / "d.pdf", PAGES[:2])
    out = tmp_path / "out"
    proc = _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer", umask=umask)
    assert proc.returncode == 0, proc.stderr
    files = [p for p in (out / "d").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"d.md", "d.json", "d_layout.pdf", "d.zip", "page_0001.png"}
    modes = {p.relative_to(out).as_posix(): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes


def test_rerun_with_fewer_pages_leaves_no_stale_files(tmp_path):
    pdf = make_pdf(tmp_path / "d.pdf", PAGES)
    out = tmp_path / "out"
    assert _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer").returncode == 0
    assert len(list((out / "d" / "overlays").iterdir())) == 3
    (out / "d" / "notes.txt").write_text("the user's own file")
    proc = _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer", "-p", "2")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "d" / "overlays").iterdir()) == ["page_0002.png"]
    with zipfile.ZipFile(out / "d" / "d.zip") as zf:
        assert [n for n in zf.namelist() if n.startswith("overlays/")] == ["overlays/page_0002.png"]
    data = json.loads((out / "d" / "d.json").read_text())
    assert (data["page_count"], data["pages_selected"], data["pages_done"], data["complete"]) == (
        3,
        1,
        1,
        True,
    )
    assert (out / "d" / "notes.txt").read_text() == "the user's own file"  # not ours: left alone
    # a narrower run drops outputs of formats it was not asked for (they would describe other pages)
    assert (
        _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer", "--format", "md").returncode == 0
    )
    assert sorted(p.name for p in (out / "d").iterdir()) == ["d.md", "notes.txt"]


# --- item 14: user errors are one log line ----------------------------------------------------------
def test_user_errors_are_logged_without_traceback(caplog):
    logger = logging.getLogger("ocr_app.test_user_errors")
    handler = logging.StreamHandler(stream := __import__("io").StringIO())
    handler.addFilter(UserErrorLogFilter())
    logger.addHandler(handler)
    try:
        try:
            raise EncryptedDocumentError("locked.pdf is encrypted;\npass its password")
        except EncryptedDocumentError:
            logger.exception("conversion of %s failed", "locked.pdf")
        try:
            raise RuntimeError("a real bug")
        except RuntimeError:
            logger.exception("internal failure")
    finally:
        logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        "conversion of locked.pdf failed: EncryptedDocumentError: locked.pdf is encrypted; pass its password"
    )
    assert "Traceback" not in lines[0] and lines[1] == "internal failure"
    assert "Traceback (most recent call last)" in stream.getvalue()  # the bug keeps its traceback


def test_cli_log_has_no_traceback_for_a_bad_file(tmp_path):
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n garbage garbage")
    good = make_pdf(tmp_path / "good.pdf", PAGES[:1])
    proc = _cli("-vv", "convert", str(bad), str(good), "-o", str(tmp_path / "out"), "--engine", "textlayer")
    assert proc.returncode == 2
    assert "broken.pdf" in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "out" / "good" / "good.md").exists()


def test_convert_builds_one_typed_object_from_exactly_its_options(tmp_path):
    """Every ``convert`` option is a field of ``ConvertArgs`` and back, and the object builds the
    library's options: a new flag cannot be parsed and then dropped on the way."""
    from dataclasses import fields

    from ocr_app.cli import ConvertArgs, convert
    from ocr_app.settings import Settings

    assert {p.name for p in convert.params} == {f.name for f in fields(ConvertArgs)}
    args = ConvertArgs(inputs=(tmp_path / "a.pdf",), pages="2", formats="md,json", cache=False, dpi=None)
    options = args.options(Settings(dpi=150, cache_dir=tmp_path))
    assert (options.pages, options.formats, options.use_cache, options.dpi) == (
        "2",
        frozenset({"md", "json"}),
        False,
        150,
    )
    with pytest.raises(TypeError):
        ConvertArgs(inputs=(), page="2")  # a misspelt option is an error, not an attribute
