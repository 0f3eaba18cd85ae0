"""Small leftovers of issue 31: nothing stray in the temp folders, one summary line per file.

- every API upload left a zero-byte temp file in Gradio's folder until the app stopped (``gr.File``
  makes one per file it passes to an event and never uses it);
- onnxruntime's telemetry wrote ``$TMPDIR/.ses`` on import and never removed it;
- a file name holding a newline printed its CLI summary line in two pieces.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_app.settings import Settings
from tests.factories import make_image, make_pdf
from tests.ui_support import free_port, running_app

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_OCR_", "GRADIO_"))}
    env.update(PYTHONPATH=str(ROOT), DEEPSEEK_OCR_RESULT_CACHE_MB="0", **extra)
    return env


def test_api_uploads_leave_no_empty_temp_files(tmp_path, monkeypatch):
    gradio_client = pytest.importorskip("gradio_client")
    temp = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(temp))
    settings = Settings(engine="textlayer", host="127.0.0.1", port=free_port(), cache_dir=tmp_path / "cache",
                        result_cache_mb=0, dpi=72)  # fmt: skip
    with running_app(settings) as app:
        client = gradio_client.Client(app.url, verbose=False, download_files=False)
        for i in range(3):
            pdf = make_pdf(tmp_path / f"d{i}.pdf", [f"# Doc {i}\nText."])
            _, result, _ = client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/convert")
            assert result["documents"][0]["error"] is None
        empty = [p for p in temp.rglob("*") if p.is_file() and p.stat().st_size == 0]
    assert empty == []


def _user_env(**extra: str) -> dict[str, str]:
    """A user's shell, not a CI runner's: onnxruntime writes no telemetry at all when it sees one of
    a CI's variables (``CI``, ``GITHUB_ACTIONS``, ``JENKINS_URL``…, checked: 1.32), so only what a
    program needs is kept."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "USER")
    return {**{k: v for k, v in _env().items() if k in keep}, "PYTHONPATH": str(ROOT),
            "DEEPSEEK_OCR_RESULT_CACHE_MB": "0", **extra}  # fmt: skip


def test_onnxruntime_leaves_no_telemetry_file_in_tmpdir(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    bare = subprocess.run(
        [sys.executable, "-c", "import onnxruntime"], env=_user_env(TMPDIR=str(tmpdir)), check=True
    )
    assert bare.returncode == 0 and (tmpdir / ".ses").exists()  # what onnxruntime does on its own
    (tmpdir / ".ses").unlink()
    image = make_image(tmp_path / "page.png")
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", "-q", "--engine", "light", "-o", str(tmp_path / "out"),
           "--", str(image)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_user_env(TMPDIR=str(tmpdir)), timeout=300)
    assert proc.returncode in (0, 3), proc.stderr[-2000:]  # the light engine (RapidOCR, onnxruntime) ran
    assert sorted(os.listdir(tmpdir)) == []


def test_a_newline_in_a_file_name_stays_on_its_summary_line(tmp_path):
    pdf = make_pdf(tmp_path / "two\nlines.pdf", ["# Title\nText."])
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", "-q", "--engine", "textlayer", "-o", "out", "--",
           pdf.name]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert [line for line in lines if "lines.pdf" in line] == [
        r"✓ two\nlines.pdf: 1 page: 1 ok → out/two_lines"
    ]
