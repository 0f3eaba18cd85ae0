"""What a script sees of ``ocr-app convert``, as its own process: stdout that parses, exit codes 1, 2 and
130, options that cannot apply refused or reported, every frame of a multi-frame image read.

Each test runs the checkout's CLI (``python -m ocr_app.cli`` with this repository first on the path) in
a subprocess, with real files made here (PyMuPDF, Pillow) and the real engines.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from tests.factories import make_pdf

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return dict(os.environ, PYTHONPATH=path, HF_HUB_OFFLINE="1", **extra)


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "ocr_app.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=_env(**env), cwd=ROOT, timeout=600)


def _damaged_pdf(path: Path) -> Path:
    """A 6-page PDF cut in half: MuPDF repairs it (3 pages left) and reports each broken object."""
    doc = pymupdf.open()
    for i in range(6):
        doc.new_page().insert_text((72, 72), f"Page {i + 1} of a report " * 4)
    data = doc.tobytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def test_json_summary_parses_after_a_damaged_pdf(tmp_path):
    """MuPDF's errors went to stdout ahead of the JSON (34 lines on a truncated PDF): now the log's."""
    pdf = _damaged_pdf(tmp_path / "truncated.pdf")
    proc = _cli(
        "convert", str(pdf), "-o", str(tmp_path / "out"), "-q", "--json-summary", "--engine", "textlayer"
    )
    summary = json.loads(proc.stdout)
    [file] = summary["files"]
    assert proc.returncode == summary["exit_code"] == 3  # repaired pages are flagged
    assert file["source_repaired"] is True and file["error"] is None
    assert "MuPDF" not in proc.stdout
    assert "was damaged and has been repaired" in proc.stderr
    verbose = _cli("-vv", "convert", str(pdf), "-o", str(tmp_path / "v"), "-q", "--engine", "textlayer")
    assert "MuPDF error" in verbose.stderr and "MuPDF" not in verbose.stdout  # kept, in the debug log


def test_json_summary_keeps_stdout_for_the_json_whatever_a_library_prints(tmp_path):
    """A native library writing to fd 1 (as MuPDF and onnxruntime do) lands on stderr meanwhile."""
    pdf = make_pdf(tmp_path / "a.pdf", ["# Title\n\nBody text."])
    noisy = (
        "import os, sys\n"
        "import ocr_app.ingest.pdf as pdf\n"
        "check = pdf.PdfDocument._check\n"
        "def noisy(self, repaired):\n"
        "    os.write(1, b'native noise\\n'); print('python noise')\n"
        "    return check(self, repaired)\n"
        "pdf.PdfDocument._check = noisy\n"
        "from ocr_app.cli import main\n"
        "main()\n"
    )
    args = ["convert", str(pdf), "-o", str(tmp_path / "o"), "--engine", "textlayer", "--json-summary"]
    proc = subprocess.run([sys.executable, "-c", noisy, *args], capture_output=True, text=True,
                          env=_env(), cwd=ROOT, timeout=600)  # fmt: skip
    assert json.loads(proc.stdout)["exit_code"] == proc.returncode == 0
    assert "native noise" in proc.stderr and "python noise" in proc.stderr


_NO_TORCH_CHECK = (
    "import sys\n"
    "from ocr_app.cli import main\n"
    "try:\n"
    "    main()\n"
    "finally:\n"
    "    print('torch imported' if 'torch' in sys.modules else 'torch not imported', file=sys.stderr)\n"
)


@pytest.mark.parametrize("device", ["cuda:64", "cuda:0,cuda:64"])
def test_a_cuda_device_the_machine_lacks_is_a_usage_error_before_anything_loads(tmp_path, device):
    """It was exit 0: the text layer read the PDF and the device was never looked at."""
    from ocr_app.engines.devices import visible_cuda_count

    assert (visible_cuda_count() or 0) < 64  # precondition: no machine here has 65 GPUs
    pdf = make_pdf(tmp_path / "a.pdf", ["Some text."])
    args = ["convert", str(pdf), "-o", str(tmp_path / "o"), "--engine", "textlayer", "--device", device]
    proc = subprocess.run([sys.executable, "-c", _NO_TORCH_CHECK, *args], capture_output=True, text=True,
                          env=_env(), cwd=ROOT, timeout=600)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Invalid value for '--device': Device 'cuda:" in proc.stderr  # the first one missing
    assert "does not exist: this machine has" in proc.stderr
    assert "torch not imported" in proc.stderr
    assert not (tmp_path / "o").exists()  # refused before anything ran


def test_check_cuda_devices_against_a_device_count():
    from ocr_app.engines.devices import check_cuda_devices
    from ocr_app.exceptions import ConfigError

    for ok in ("auto", "cpu", "cuda", "cuda:1", "cuda:0,cuda:1", "cpu,cpu"):
        check_cuda_devices(ok, 2)
    check_cuda_devices("cuda:9", None)  # not known without torch or NVML: the loader decides
    with pytest.raises(ConfigError, match=r"'cuda:2' does not exist: this machine has 2 CUDA device\(s\)"):
        check_cuda_devices("cuda:0,cuda:2", 2)
    with pytest.raises(ConfigError, match="'cuda' does not exist: this machine has no CUDA device"):
        check_cuda_devices("cuda", 0)


def test_an_ignored_prompt_and_mode_are_said_once_and_recorded_as_ignored(tmp_path):
    pdfs = [make_pdf(tmp_path / f"{n}.pdf", [f"# {n}\n\nText of {n}."]) for n in ("a", "b")]
    out = tmp_path / "o"
    args = ["convert", *map(str, pdfs), "-o", str(out), "-q", "--engine", "textlayer", "--json-summary"]
    proc = _cli(*args, "--prompt", "free", "--mode", "global")
    assert proc.returncode == 0, proc.stderr
    note = "--prompt free and --mode global were ignored: the textlayer engine took no prompt and no resolution mode"
    assert proc.stderr.count(note) == 1  # once for the run, not once per file or page
    summary = json.loads(proc.stdout)
    assert [f["ignored"] for f in summary["files"]] == [{"prompt": "free", "mode": "global"}] * 2
    settings = json.loads((out / "a" / "a.json").read_text())["settings"]
    assert settings["prompt"] is None and settings["mode"] is None
    assert settings["ignored"] == {"prompt": "free", "mode": "global"}
    plain = _cli("convert", str(pdfs[0]), "-o", str(tmp_path / "p"), "-q", "--engine", "textlayer")
    assert "ignored" not in plain.stderr  # nothing asked, nothing to say


def _frames(texts: list[str]) -> list[Image.Image]:
    font = ImageFont.load_default(size=56)
    frames = []
    for text in texts:
        frame = Image.new("RGB", (900, 260), "white")
        ImageDraw.Draw(frame).text((40, 90), text, fill="black", font=font)
        frames.append(frame)
    return frames


@pytest.mark.parametrize("name", ["scan.gif", "scan.tiff"])
def test_every_frame_of_a_gif_or_tiff_is_a_page(tmp_path, name):
    """A 3-frame GIF converted its first frame only, and said nothing."""
    words = ["Alpha 101", "Bravo 202", "Charlie 303"]
    frames = _frames(words)
    path = tmp_path / name
    frames[0].save(path, save_all=True, append_images=frames[1:])
    assert Image.open(path).n_frames == 3
    proc = _cli("convert", str(path), "-o", str(tmp_path / "o"), "-q", "--engine", "light", "--json-summary")
    assert proc.returncode == 0, proc.stderr
    [file] = json.loads(proc.stdout)["files"]
    assert file["pages"] == 3 and file["status"] == {"1": "ok", "2": "ok", "3": "ok"}
    data = json.loads((tmp_path / "o" / path.stem / f"{path.stem}.json").read_text())
    assert [p["markdown"].strip() for p in data["pages"]] == words


def test_exit_code_1_when_the_engine_cannot_load(tmp_path):
    """An internal failure (here: model weights that are not there) is exit 1, with the reason on stderr."""
    pdf = make_pdf(tmp_path / "a.pdf", ["Some text."])
    proc = _cli("convert", str(pdf), "-o", str(tmp_path / "o"), "-q", "--json-summary", "--engine",
                "deepseek", "--device", "cpu", "--model", str(tmp_path / "no-weights"))  # fmt: skip
    assert proc.returncode == json.loads(proc.stdout)["exit_code"] == 1
    assert f"Model directory '{tmp_path / 'no-weights'}' does not exist" in proc.stderr


def test_ctrl_c_is_exit_130_and_keeps_the_pages_finished(tmp_path):
    """SIGINT once the first page is done: exit 130, a clear line, and the finished pages written."""
    pdf = make_pdf(tmp_path / "long.pdf", [f"# Page {i + 1}\n\nBody of page {i + 1}." for i in range(400)])
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", str(pdf), "-o", str(tmp_path / "o"),
           "--engine", "textlayer", "--format", "md,json"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    seen, deadline = b"", time.monotonic() + 300
    try:
        while b"Recognized page" not in seen:  # the progress bar (stderr) says a page is done
            chunk = proc.stderr.read1(4096)
            assert chunk and time.monotonic() < deadline, seen.decode(errors="replace")
            seen += chunk
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=300)[::-1]
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = (seen + rest).decode(errors="replace")
    assert proc.returncode == 130, stderr
    assert f"marked incomplete, to {tmp_path / 'o'}." in stderr
    data = json.loads((tmp_path / "o" / "long" / "long.json").read_text())
    assert data["complete"] is False and data["page_count"] == 400
    done = [p["page_number"] for p in data["pages"]]
    assert done and len(done) < 400 and done == list(range(1, len(done) + 1))
    assert "Body of page 1." in (tmp_path / "o" / "long" / "long.md").read_text()


def test_make_tiny_model_builds_from_the_pinned_weights_and_shows_no_warnings(build_cache, tmp_path):
    """It trained for 9 min 50 s and printed a FutureWarning and a requires_grad UserWarning; now the
    pinned decoder is installed (no training: the seconds it takes are the model's build and save)."""
    cache = tmp_path / "cache"
    shutil.copytree(build_cache / "tokenizer", cache / "tokenizer")  # the rest is built from nothing
    proc = _cli("make-tiny-model", str(tmp_path / "tiny"), DEEPSEEK_OCR_CACHE_DIR=str(cache))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no framework warning, no progress bar
    assert proc.stdout.startswith(f"Wrote a tiny trained checkpoint to {tmp_path / 'tiny'}.")
    info = json.loads((tmp_path / "tiny" / "tiny_model.json").read_text())
    assert info["stats"]["source"] == "pinned" and "steps" not in info["stats"]
    assert len(list((tmp_path / "tiny" / "sample-pages").glob("*.png"))) == 8
