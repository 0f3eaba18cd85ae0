"""End to end through the real console script: generated PDF → `ocr-app convert` → every output.

Nothing is mocked between the CLI and the model: the tiny checkpoint is loaded by the same
``from_pretrained`` path real weights use, in a separate process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import fitz
import jsonschema
import pytest
from PIL import Image

from tests.factories import make_image, make_pdf

PAGES = ["# First page\n\nAlpha beta gamma.", "# Second page\n\nDelta epsilon.", "# Third\n\nZeta eta theta."]


def _cli(*args: str, env_extra: dict[str, str] | None = None, cwd: Path | None = None):
    exe = shutil.which("ocr-app")
    cmd = [exe] if exe else [sys.executable, "-m", "ocr_app.cli"]
    import os

    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env_extra or {}))
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def _tiny(model, *extra: str, tokens: str = "4") -> list[str]:
    """The options every tiny-model conversion shares: the real engine on the CPU, short outputs."""
    return [
        "--model",
        str(model),
        "--engine",
        "deepseek",
        "--device",
        "cpu",
        "--mode",
        "global",
        "--max-new-tokens",
        tokens,
        *extra,
    ]


@pytest.fixture(scope="module")
def converted(tiny_checkpoint, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    pdf = make_pdf(tmp / "report.pdf", PAGES)
    out = tmp / "out"
    proc = _cli(
        "convert",
        str(pdf),
        "-o",
        str(out),
        *_tiny(tiny_checkpoint, "--pages", "1-2,3", "--json-summary", tokens="12"),
    )
    return pdf, out, proc


def test_cli_convert_writes_every_output(converted):
    pdf, out, proc = converted
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["exit_code"] == 0
    [entry] = summary["files"]
    assert entry["source"] == "report.pdf" and entry["pages"] == 3 and entry["error"] is None
    folder = out / "report"
    for name in ("report.md", "report.mmd", "report.json", "report_layout.pdf", "report.zip"):
        assert (folder / name).is_file(), name
        assert (folder / name).stat().st_size > 0, name

    data = json.loads((folder / "report.json").read_text())
    schema = json.loads(
        (Path(__file__).parents[1] / "ocr_app" / "render" / "document.schema.json").read_text()
    )
    jsonschema.validate(data, schema)
    assert [p["page_number"] for p in data["pages"]] == [1, 2, 3]
    assert all(p["engine"] == "deepseek" for p in data["pages"])
    assert all(p["stop_reason"] in ("end", "length", "repetition") for p in data["pages"])

    with fitz.open(pdf) as doc:
        sizes = [(round(p.rect.width * 144 / 72), round(p.rect.height * 144 / 72)) for p in doc]
    overlays = sorted((folder / "overlays").glob("*.png"))
    assert len(overlays) == 3
    for overlay, size in zip(overlays, sizes, strict=True):
        assert Image.open(overlay).size == size
    for page in data["pages"]:
        assert (page["width"], page["height"]) == sizes[page["index"]]

    with fitz.open(folder / "report_layout.pdf") as layout:
        assert layout.page_count == 3
    with zipfile.ZipFile(folder / "report.zip") as zf:
        names = set(zf.namelist())
        assert zf.testzip() is None
    assert {"report.md", "report.mmd", "report.json", "report_layout.pdf"} <= names
    assert sum(n.startswith("overlays/") and n.endswith(".png") for n in names) == 3


def test_cli_markdown_matches_json(converted):
    _, out, proc = converted
    assert proc.returncode == 0, proc.stderr
    folder = out / "report"
    md = (folder / "report.md").read_text()
    data = json.loads((folder / "report.json").read_text())
    for page in data["pages"]:
        assert page["markdown"].strip() in md


def test_cli_bad_input_exit_code_and_other_files_convert(tiny_checkpoint, tmp_path):
    good = make_image(tmp_path / "good.png", text="Hello", size=(400, 300))
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.7\n1 0 obj <<>> garbage without xref")
    out = tmp_path / "out"
    proc = _cli("convert", str(bad), str(good), "-o", str(out), *_tiny(tiny_checkpoint, "-q"))
    assert proc.returncode == 2, proc.stderr
    assert "broken.pdf" in proc.stderr
    assert (out / "good" / "good.md").is_file()
    assert not (out / "broken").exists() or not any((out / "broken").iterdir())


def test_cli_page_range_error_is_bad_input(tiny_checkpoint, tmp_path):
    pdf = make_pdf(tmp_path / "two.pdf", ["one", "two"])
    proc = _cli("convert", str(pdf), "-o", str(tmp_path / "o"), *_tiny(tiny_checkpoint, "--pages", "5", "-q"))
    assert proc.returncode == 2
    assert "two.pdf" in proc.stderr and "2 pages" in proc.stderr


def test_cli_unknown_format_is_usage_error(tmp_path):
    proc = _cli("convert", str(tmp_path), "--format", "md,docx")
    assert proc.returncode == 2
    assert "docx" in proc.stderr


def test_cli_info_reports_versions_and_weights(tiny_checkpoint):
    proc = _cli("info", "--json", "--model", str(tiny_checkpoint))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["versions"]["transformers"] != "not installed"
    assert "no gpu" in str(data["device"]["gpu"]).lower()
    assert str(tiny_checkpoint) in data["model"]["weights"]
    assert "light" in data["engines"]["available"]
    assert "CDLA PicoDet" in data["engines"]["layout model"]
    assert "hard-swish fused" in data["engines"]["layout model"]


def test_cli_make_tiny_model_then_convert(trained_checkpoint, build_cache, tmp_path):
    """The trained model (reused from the build cache) and its sample pages; a page converts exactly."""
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES

    env = {"DEEPSEEK_OCR_CACHE_DIR": str(build_cache)}
    proc = _cli("make-tiny-model", str(tmp_path / "tiny"), env_extra=env)
    assert proc.returncode == 0, proc.stderr
    assert "trained" in proc.stdout
    assert (tmp_path / "tiny" / "config.json").is_file() and (tmp_path / "tiny" / "tokenizer.json").is_file()
    [table] = [p for p in PAGES if p.name == "table"]
    page = tmp_path / "tiny" / "sample-pages" / "03-table.png"
    assert page.is_file()
    proc = _cli(
        "convert", str(page), "-o", str(tmp_path / "o"), *_tiny(tmp_path / "tiny", "-q", tokens="256")
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "o" / "03-table" / "03-table.json").read_text())
    assert data["pages"][0]["stop_reason"] == "end"
    assert [b["label"] for b in data["pages"][0]["blocks"]] == ["table_caption", "table"]
    assert data["pages"][0]["markdown"] == "\n\n".join(b.content for b in table.blocks)


def test_cli_make_tiny_model_random(build_cache, tmp_path):
    proc = _cli(
        "make-tiny-model",
        "--random",
        str(tmp_path / "r"),
        env_extra={"DEEPSEEK_OCR_CACHE_DIR": str(build_cache)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "random-weight" in proc.stdout
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["text_config"]["vocab_size"] == 129280 and not (tmp_path / "r" / "sample-pages").exists()


def test_cli_cache_reuses_results_and_clear_empties_it(tiny_checkpoint, tmp_path):
    cache_env = {"DEEPSEEK_OCR_CACHE_DIR": str(tmp_path / "cache")}
    img = make_image(tmp_path / "page.png", text="Cache me", size=(400, 300))
    args = ["convert", str(img), *_tiny(tiny_checkpoint, "--json-summary")]
    first = _cli(*args, "-o", str(tmp_path / "a"), env_extra=cache_env)
    second = _cli(*args, "-o", str(tmp_path / "b"), env_extra=cache_env)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    a = json.loads((tmp_path / "a" / "page" / "page.json").read_text())["pages"][0]
    b = json.loads((tmp_path / "b" / "page" / "page.json").read_text())["pages"][0]
    assert a["markdown"] == b["markdown"]
    assert not any("cache hit" in n for n in a["notes"])
    assert any("cache hit" in n for n in b["notes"])
    info = _cli("cache", "info", env_extra=cache_env)
    assert "1 entries" in info.stdout
    cleared = _cli("cache", "clear", env_extra=cache_env)
    assert cleared.returncode == 0 and "Removed 1 cached results" in cleared.stdout
    assert "0 entries" in _cli("cache", "info", env_extra=cache_env).stdout


def test_cli_ui_command_shares_the_app_entry_point():
    """``ocr-app ui`` and ``python app.py`` parse with one click command and reach one ``serve``: a bad
    flag is click's usage error in both; a flag click accepts but the machine cannot honour (a CUDA
    device it lacks) and a bad setting are ``serve``'s own errors in both, before anything loads."""
    import os

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    for cmd in ([sys.executable, "-m", "ocr_app.cli", "ui"], [sys.executable, "app.py"]):

        def run(*args, cmd=cmd, **extra):
            return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=root,
                                  env={**env, **extra}, timeout=300)  # fmt: skip

        flag = run("--engine", "no-such-engine")
        assert flag.returncode == 2 and "Invalid value for '--engine': 'no-such-engine'" in flag.stderr
        device = run("--engine", "textlayer", "--device", "cuda:64")
        assert device.returncode == 2
        assert "error: Device 'cuda:64' does not exist: this machine has" in device.stderr
        setting = run("--engine", "textlayer", DEEPSEEK_OCR_MAX_PAGES="0")
        assert setting.returncode == 2 and "error: invalid settings" in setting.stderr
        assert "max_pages" in setting.stderr


def test_the_cli_process_ends_at_once_and_loses_nothing(tmp_path):
    """Run as its own process, ``convert`` ends without freeing the engines or tearing Python down (the
    OS does it), after every output file and the JSON summary are written; called inside another
    program (here pytest) it is not the process's end, so it frees as before."""
    from ocr_app.cli import _process_ends_here

    assert _process_ends_here() is False
    good = make_pdf(tmp_path / "good.pdf", ["# Title", "Some body text on the page."])
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", str(good), str(tmp_path / "missing.pdf"),
           "-o", str(tmp_path / "out"), "--engine", "textlayer", "--json-summary"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    summary = json.loads(proc.stdout)
    assert proc.returncode == summary["exit_code"] == 2  # one file missing: the batch's exit code
    [done] = [f for f in summary["files"] if f["error"] is None]
    for key in ("md", "json", "zip"):
        assert Path(done["outputs"][key]).stat().st_size > 0
    assert "Title" in Path(done["outputs"]["md"]).read_text()
