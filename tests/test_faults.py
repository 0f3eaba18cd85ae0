"""Faults an operator meets, one test per row of issue 24: damaged caches, two runs writing one name,
signals, a full disk, a long name, temp files after SIGKILL, an app stopped mid-job, API refusals, a
third-party image in a document, a decompression bomb.

Everything runs the real parts: CLI and app in subprocesses (signals are real signals), the trained tiny
DeepSeek-OCR-2 for the model caches, PyMuPDF-made PDFs, Chromium for the viewer. Waiting for a run to
reach a state polls the file system for that state (with a deadline), never a fixed sleep.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_pdf

ROOT = Path(__file__).parents[1]
A4 = (595.0, 842.0)


# --- helpers ---------------------------------------------------------------------------------------
def _env(**extra: str) -> dict[str, str]:
    """This checkout's code (not an installed copy), offline, no settings leaking from the test process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_OCR_", "GRADIO_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **extra)
    return env


def _cli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ocr_app.cli", *args]


def _one_core() -> None:
    """In the child before exec: one CPU, so the text layer converts one file at a time (it takes as
    many files at once as it has cores) and "the file in progress" is one file."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(_cli_cmd(*args), capture_output=True, text=True, env=_env(**env), timeout=600)


def _wait_for(what: str, condition: Callable[[], bool], timeout: float = 240.0, proc=None) -> None:
    """Poll until ``condition()`` holds (a state on disk a run reaches), failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended (rc {proc.returncode}) before: {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.05)


def _long_pdf(path: Path, pages: int) -> Path:
    """A born-digital A4 PDF, each page with a heading and a few lines (the text layer reads it)."""
    import pymupdf

    path.parent.mkdir(parents=True, exist_ok=True)
    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page(width=A4[0], height=A4[1])
        page.insert_text((72, 90), f"Chapter {i + 1}", fontsize=18)
        page.insert_text((72, 130), [f"Line {j + 1} of page {i + 1}." for j in range(8)], fontsize=11)
    doc.save(path)
    doc.close()
    return path


def _hidden(folder: Path) -> list[str]:
    """Leftovers of ours anywhere under ``folder``: staging folders, locks, temp files."""
    return sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"
    )


def _overlays_written(out: Path, stem: str, n: int) -> Callable[[], bool]:
    stage = out / f".{stem}.partial" / "overlays"
    return lambda: stage.is_dir() and len(list(stage.glob("page_*.png"))) >= n


def _json(folder: Path) -> dict:
    return json.loads((folder / f"{folder.name}.json").read_text())


def _check_bundle(folder: Path, pages: int) -> dict:
    """A published document: every overlay the JSON names is on disk and in the ZIP."""
    data = _json(folder)
    assert data["pages_done"] == pages == len(data["pages"])
    named = [p["overlay"] for p in data["pages"]]
    assert all(named) and all((folder / n).is_file() for n in named)
    assert sorted(p.name for p in (folder / "overlays").iterdir()) == sorted(Path(n).name for n in named)
    with zipfile.ZipFile(folder / f"{folder.name}.zip") as zf:
        assert sorted(n for n in zf.namelist() if n.startswith("overlays/")) == sorted(named)
    return data


# --- rows 1 and 2: caches never serve damage --------------------------------------------------------
def _tiny_settings(checkpoint: Path, cache: Path, **extra) -> Settings:
    base = {"model": str(checkpoint), "device": "cpu", "engine": "deepseek", "dtype": "fp32",
            "idle_unload_s": 0, "cache_dir": cache, "result_cache_mb": 0}  # fmt: skip
    return Settings(**{**base, **extra})


def _tiny_run(settings: Settings, paths: list[Path], out: Path) -> list:
    engines = build_engines(settings)
    try:  # the first 40 tokens of each page: enough to change when the features are damaged
        opts = ConvertOptions(mode="global", formats=frozenset({"md", "json"}), max_new_tokens=40)
        return Converter(engines, settings).convert(paths, out, opts)
    finally:
        engines.unload_all()


@pytest.fixture(scope="module")
def tiny_pages(tmp_path_factory) -> list[Path]:
    """Three of the pages the trained tiny model reads exactly (``--mode global``)."""
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, write_pages

    paths = write_pages(tmp_path_factory.mktemp("tiny-pages"))
    return [p for spec, p in zip(PAGES, paths, strict=True) if spec.mode == "global"][:3]


def _flip(path: Path, offset_from_end: int = 64, n: int = 32) -> None:
    """Overwrite ``n`` bytes near the end of the file (tensor data, past any header) with other bytes."""
    data = bytearray(path.read_bytes())
    start = len(data) - offset_from_end
    data[start : start + n] = bytes((b ^ 0x5A) for b in data[start : start + n])
    path.write_bytes(bytes(data))


def test_damaged_vision_features_are_recomputed_not_served(trained_checkpoint, tiny_pages, tmp_path, caplog):
    """Row 1: flipped tensor bytes and a truncated feature file → a warning each, the page is encoded
    again and reads exactly as without the cache."""
    settings = _tiny_settings(trained_checkpoint, tmp_path / "cache", vision_cache_disk=True)
    first = _tiny_run(settings, tiny_pages, tmp_path / "a")
    expected = [d.pages[0].markdown for d in first]
    assert all(d.error is None for d in first) and all(expected)
    files = sorted((tmp_path / "cache" / "vision").glob("*/*.safetensors"))
    assert len(files) == len(tiny_pages)
    _flip(files[0])
    files[1].write_bytes(files[1].read_bytes()[: files[1].stat().st_size // 2])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ocr_app.runtime.vision_cache"):
        second = _tiny_run(settings, tiny_pages, tmp_path / "b")
    assert [d.pages[0].markdown for d in second] == expected
    warnings = [r.getMessage() for r in caplog.records if "damaged entry" in r.getMessage()]
    assert len(warnings) == 2, warnings
    from_cache = [d.pages[0] for d in second if "vision features from cache" in d.pages[0].notes]
    assert len(from_cache) == 1  # the intact entry is still used
    # the damaged entries were replaced by good ones: a third run reads all three from disk
    third = _tiny_run(settings, tiny_pages, tmp_path / "c")
    assert all("vision features from cache" in d.pages[0].notes for d in third)
    assert [d.pages[0].markdown for d in third] == expected


def test_edited_or_truncated_result_entries_are_recomputed(trained_checkpoint, tiny_pages, tmp_path, caplog):
    """Row 2: an entry edited into other, valid JSON, and a truncated one → recomputed, a warning each."""
    settings = _tiny_settings(trained_checkpoint, tmp_path / "cache", result_cache_mb=64, cache_enabled=True)
    first = _tiny_run(settings, tiny_pages, tmp_path / "a")
    expected = [d.pages[0].markdown for d in first]
    entries = sorted((tmp_path / "cache" / "results").glob("*/*.json"))
    assert len(entries) == len(tiny_pages)
    edited = json.loads(entries[0].read_text())
    edited["output"]["raw_text"] = "Forged text."
    for block in edited["output"]["blocks"]:
        block["text"] = "Forged text."
    entries[0].write_text(json.dumps(edited))  # valid JSON, same key, another output
    entries[1].write_text(entries[1].read_text()[:40])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ocr_app.runtime.result_cache"):
        second = _tiny_run(settings, tiny_pages, tmp_path / "b")
    markdowns = [d.pages[0].markdown for d in second]
    assert markdowns == expected and not any("Forged" in m for m in markdowns)
    warnings = [r.getMessage() for r in caplog.records if "damaged entry" in r.getMessage()]
    assert len(warnings) == 2, warnings
    hits = [d for d in second if "result cache hit" in d.pages[0].notes]
    assert len(hits) == 1
    assert "Forged" not in entries[0].read_text()  # rewritten from the recomputed page


def test_damaged_quantised_weights_are_quantised_again(trained_checkpoint, tmp_path, caplog):
    """Row 1 for the quantised-weights cache: flipped weight bytes, then an entry.json naming another
    key → each is logged, removed and quantised again; the model reads the page as before."""
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.models.deepseek_ocr2.tiny_pages import write_pages
    from ocr_app.quant.store import QuantStore
    from ocr_app.schema import PageImage, PageRequest

    source = shutil.copytree(trained_checkpoint, tmp_path / "src")
    settings = _tiny_settings(source, tmp_path / "cache", dtype="int8")
    eng = DeepSeekOcr2Engine(settings)
    image_path = write_pages(tmp_path / "pages")[0]
    from PIL import Image

    page = PageImage(image=Image.open(image_path).convert("RGB"), index=0, source=image_path.name)
    request = PageRequest(page=page, prompt="markdown", mode="global", max_new_tokens=64)

    def load_and_read() -> tuple[str, str]:
        eng.unload()
        eng.load()
        return eng.describe()["quant_source"], eng.predict_batch([request])[0].raw_text

    try:
        source_kind, reference = load_and_read()
        assert source_kind == "quantised now" and reference
        assert load_and_read() == ("cache", reference)
        [entry] = QuantStore(tmp_path / "cache" / "quantized").entries()
        _flip(Path(entry["path"]) / "model.safetensors", offset_from_end=4096, n=256)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ocr_app.quant.store"):
            assert load_and_read() == ("quantised now", reference)
        assert any("damaged entry" in r.getMessage() for r in caplog.records)
        assert load_and_read() == ("cache", reference)  # the new entry is good
        [entry] = QuantStore(tmp_path / "cache" / "quantized").entries()
        meta = Path(entry["path"]) / "entry.json"
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "key": "0" * 32}))
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="ocr_app.quant.store"):
            assert load_and_read() == ("quantised now", reference)
        assert any("does not record this key" in r.getMessage() for r in caplog.records)
    finally:
        eng.unload()


# --- row 3: two runs, one document name, one folder ---------------------------------------------------
def test_two_runs_writing_the_same_name_never_mix_files(tmp_path):
    """Row 3: a 40-page and a 3-page same.pdf into one -o folder at the same time. The first run is
    frozen (SIGSTOP) while it holds the name, so the second runs entirely inside the first."""
    big = _long_pdf(tmp_path / "d1" / "same.pdf", 40)
    small = _long_pdf(tmp_path / "d2" / "same.pdf", 3)
    out = tmp_path / "out"
    first = subprocess.Popen(
        _cli_cmd("convert", str(big), "-o", str(out), "--engine", "textlayer", "-q"),
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_for("the first run's overlays", _overlays_written(out, "same", 2), proc=first)
        os.kill(first.pid, signal.SIGSTOP)
        second = _cli("convert", str(small), "-o", str(out), "--engine", "textlayer", "-q")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr
    assert second.returncode == 0, second.stderr
    assert "another run is writing same" in second.stderr and "same-2" in second.stdout
    big_data = _check_bundle(out / "same", 40)
    small_data = _check_bundle(out / "same-2", 3)
    assert big_data["complete"] and small_data["complete"]
    assert small_data["page_count"] == 3 and any("same-2" in n for n in small_data["notes"])
    assert "Line 8 of page 40." in (out / "same" / "same.md").read_text()
    assert "of page 4." not in (out / "same-2" / "same-2.md").read_text()
    assert _hidden(out) == []


# --- rows 4 and 7: signals and what they leave ----------------------------------------------------------
@pytest.fixture(scope="module")
def four_files(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("four")
    return [_long_pdf(d / f"f{i}.pdf", n) for i, n in enumerate((2, 40, 3, 3), 1)]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_publishes_the_document_in_progress_marked_incomplete(four_files, tmp_path, signum, code):
    """Row 4: SIGINT (exit 130) or SIGTERM (exit 143) during file 2 of 4: file 1 complete, file 2
    published with complete: false, pages_done/page_count and a header line; files 3-4 not started;
    no temp file anywhere (row 7)."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _cli_cmd("convert", *map(str, four_files), "-o", str(out), "--engine", "textlayer", "-q"),
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_one_core,
    )  # fmt: skip
    _wait_for("file 2's overlays", _overlays_written(out, "f2", 3), proc=proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == code, stderr
    assert sorted(p.name for p in out.iterdir()) == ["f1", "f2"]
    assert _json(out / "f1")["complete"] is True
    data = _json(out / "f2")
    done = data["pages_done"]
    assert data["complete"] is False and 3 <= done < 40 and data["page_count"] == data["pages_selected"] == 40
    assert data["incomplete_reason"] == f"cancelled by {signal.Signals(signum).name}"
    assert [p["page_number"] for p in data["pages"]] == list(range(1, done + 1))
    md = (out / "f2" / "f2.md").read_text()
    assert md.startswith(
        f"<!-- ocr-app: complete=false pages_done={done} pages_selected=40 page_count=40 -->"
    )
    assert f"INCOMPLETE: {done} of 40 pages converted" in md.splitlines()[1]
    assert f"f2.pdf: INCOMPLETE: {done} of 40 pages converted" in stdout
    assert "Traceback" not in stderr
    _check_bundle(out / "f2", done)
    assert _hidden(out) == []


def test_a_second_signal_stops_at_once_and_publishes_nothing_of_that_document(four_files, tmp_path):
    """Two signals: the document in progress is dropped whole (not published), files done before it
    stay, no temp files. Both signals are sent while the process is frozen, so they arrive together."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _cli_cmd("convert", *map(str, four_files), "-o", str(out), "--engine", "textlayer", "-q"),
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_one_core,
    )  # fmt: skip
    _wait_for("file 2's overlays", _overlays_written(out, "f2", 3), proc=proc)
    os.kill(proc.pid, signal.SIGSTOP)
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGINT)
    os.kill(proc.pid, signal.SIGCONT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode in (130, 143), stderr
    assert "Stopped at once" in stderr and "Traceback" not in stderr
    assert sorted(p.name for p in out.iterdir()) == ["f1"]
    assert _json(out / "f1")["complete"] is True


def test_sigkill_leftovers_are_removed_by_the_next_run(four_files, tmp_path):
    """Row 7: SIGKILL leaves a staging folder and a lock; the next run into the folder removes them and
    publishes its documents whole."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _cli_cmd("convert", str(four_files[1]), "-o", str(out), "--engine", "textlayer", "-q"),
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _wait_for("the overlays", _overlays_written(out, "f2", 2), proc=proc)
    proc.kill()
    proc.wait(60)
    assert ".f2.partial" in _hidden(out)
    assert not (out / "f2").exists()
    again = _cli("convert", str(four_files[0]), "-o", str(out), "--engine", "textlayer", "-q")
    assert again.returncode == 0, again.stderr
    assert _hidden(out) == []
    assert sorted(p.name for p in out.iterdir()) == ["f1"]


# --- rows 4b, 5 and 6: full disk, the real cause, long names ---------------------------------------------
def test_a_write_error_names_its_cause_and_publishes_nothing(tmp_path, monkeypatch, caplog):
    """Row 5: ENOSPC at the writer's file layer on page 3 → the file's error says "No space left on
    device" (no AttributeError from the failure handler, no traceback); nothing of it is published; the
    next file fails the same way, in its own words."""
    import ocr_app.render.atomic as atomic

    docs = [_long_pdf(tmp_path / f"doc{i}.pdf", 6) for i in (1, 2)]
    real = atomic.TextSpool.write
    calls = {"n": 0}

    def full_disk(self, text: str) -> None:
        calls["n"] += 1
        if calls["n"] > 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.tmp))
        real(self, text)

    monkeypatch.setattr(atomic.TextSpool, "write", full_disk)
    settings = Settings(engine="textlayer", result_cache_mb=0)
    out = tmp_path / "out"
    with caplog.at_level(logging.DEBUG):
        results = Converter(build_engines(settings), settings).convert(docs, out, ConvertOptions())
    for doc, src in zip(results, docs, strict=True):
        assert doc.error == "Cannot write the outputs: No space left on device", src
        assert doc.error_kind == "internal" and doc.outputs == {}
    assert not any(r.exc_info for r in caplog.records)
    assert "AttributeError" not in caplog.text
    assert list(out.iterdir()) == []
    from ocr_app.cli import EXIT_INTERNAL, _exit_code

    assert _exit_code(results) == EXIT_INTERNAL


def test_a_full_disk_is_exit_1_with_one_line_per_file(tmp_path):
    """Row 4b on a real full disk: a 1 MiB tmpfs mounted in a user namespace (no root needed)."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("user namespaces (unshare -rm) are not available here: the ENOSPC test above covers it")
    docs = [_long_pdf(tmp_path / f"doc{i}.pdf", 30) for i in (1, 2)]
    out = tmp_path / "tiny-disk"
    out.mkdir()
    cli = " ".join(_cli_cmd("convert", *map(str, docs), "-o", str(out), "--engine", "textlayer", "-q"))
    script = f"mount -t tmpfs -o size=1m tmpfs {out} && {cli}; echo rc=$?; ls -A {out}"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          env=_env(), timeout=600)  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    assert "rc=1" in lines, proc.stdout + proc.stderr
    assert lines[-1] == "rc=1"  # ls printed nothing: no document, no staging folder, no lock
    for doc in docs:
        assert f"✗ {doc.name}: Cannot write the outputs: No space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr and "AttributeError" not in proc.stderr


def test_a_read_only_output_folder_is_exit_1_naming_the_cause(tmp_path):
    """Row 4/5's other causes: a folder that cannot be written (a read-only mount; root ignores file
    permissions, a read-only file system stops it too) → one line with the cause, exit 1."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("user namespaces (unshare -rm) are not available here")
    pdf = _long_pdf(tmp_path / "doc.pdf", 2)
    out = tmp_path / "ro"
    out.mkdir()
    cli = " ".join(_cli_cmd("convert", str(pdf), "-o", str(out), "--engine", "textlayer", "-q"))
    script = f"mount -t tmpfs -o ro tmpfs {out} && {cli}; echo rc=$?"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True,
                          env=_env(), timeout=600)  # fmt: skip
    assert proc.stdout.strip().splitlines()[-1] == "rc=1", proc.stdout + proc.stderr
    assert "✗ doc.pdf: Cannot write the outputs: Read-only file system" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_app_summary_names_an_incomplete_document():
    """Row 4 in the app: a cancelled job's document says it is incomplete in the summary line."""
    from ocr_app.schema import DocumentResult, PageResult
    from ocr_app.ui.viewer import summary_markdown

    pages = [PageResult(index=i, source="long.pdf", width=10, height=10) for i in range(7)]
    doc = DocumentResult(source="long.pdf", pages=pages, page_count=40, pages_selected=40,
                         incomplete_reason="cancelled")  # fmt: skip
    assert doc.to_dict()["complete"] is False and doc.to_dict()["pages_done"] == 7
    text = summary_markdown([doc], cancelled=True)
    assert "**long.pdf** — INCOMPLETE: 7 of 40 pages converted (cancelled)" in text
    done = DocumentResult(source="long.pdf", pages=pages, page_count=40, pages_selected=7)
    assert "INCOMPLETE" not in summary_markdown([done], cancelled=False) and done.complete


def test_a_name_of_251_characters_converts(tmp_path):
    """Row 6: a 255-character file name is legal; its outputs get a shortened name that fits."""
    name = "r" * 251
    pdf = _long_pdf(tmp_path / f"{name}.pdf", 2)
    out = tmp_path / "out"
    proc = _cli("convert", str(pdf), "-o", str(out), "--engine", "textlayer", "-q")
    assert proc.returncode == 0, proc.stderr
    [folder] = list(out.iterdir())
    assert len(folder.name.encode()) <= 160 and folder.name.startswith("r" * 100)
    data = _check_bundle(folder, 2)
    assert data["source"] == f"{name}.pdf"
    assert (folder / f"{folder.name}_layout.pdf").is_file()
    assert _hidden(out) == []


# --- row 8: the app stops on SIGTERM --------------------------------------------------------------------
def test_app_sigterm_stops_within_3_s_cancelling_the_running_job(tmp_path):
    """Row 8: SIGTERM while a 120-page conversion runs through the API: the server exits within 3 s,
    logs one line that says it cancelled the job, no traceback, and its temp folder is gone."""
    gradio_client = pytest.importorskip("gradio_client")
    from tests.ui_support import free_port

    pdf = _long_pdf(tmp_path / "long.pdf", 120)
    port = free_port()
    log = tmp_path / "app.log"
    temp = tmp_path / "gradio-temp"
    env = _env(GRADIO_TEMP_DIR=str(temp), DEEPSEEK_OCR_CACHE_DIR=str(tmp_path / "cache"))
    with log.open("w") as fh:
        app = subprocess.Popen(_cli_cmd("ui", "--engine", "textlayer", "--port", str(port)), env=env,
                               stdout=fh, stderr=subprocess.STDOUT, cwd=tmp_path)  # fmt: skip
    try:
        _wait_for("the app to listen", lambda: "Running on" in log.read_text(), proc=app)
        client = gradio_client.Client(f"http://127.0.0.1:{port}/", verbose=False)
        job = client.submit(files=[gradio_client.handle_file(str(pdf))], api_name="/convert")
        _wait_for("pages written", lambda: len(list(temp.rglob("page_*.png"))) >= 2, proc=app)
        start = time.monotonic()
        app.send_signal(signal.SIGTERM)
        app.wait(30)
        took = time.monotonic() - start
    finally:
        if app.poll() is None:
            app.kill()
    text = log.read_text()
    assert app.returncode == 0, text
    assert took <= 3.0, (took, text)
    stops = [ln for ln in text.splitlines() if ln.startswith("INFO ocr_app.ui.main")]
    assert stops == ["INFO ocr_app.ui.main: SIGTERM: server stopped, 1 running job(s) cancelled"] or (
        len(stops) == 1 and "1 running job(s) cancelled, 1 still finishing a page" in stops[0]
    ), text
    assert "Traceback" not in text and "ERROR" not in text, text
    assert not list((temp / "ocr-app").glob("proc-*"))
    assert not job.done() or job.status().code.name in ("FINISHED", "CANCELLED")


# --- row 9: refusals carry their reason -------------------------------------------------------------------
@pytest.fixture
def app_in_tmp(tmp_path, monkeypatch):
    """The app with Gradio's upload folder inside its working folder, as under ``ocr-app ui`` started
    from the temp folder: then Gradio refuses uploads whose names start with a dot."""
    pytest.importorskip("gradio_client")
    from tests.ui_support import free_port, running_app

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.chdir(tmp_path)
    settings = Settings(engine="textlayer", cache_dir=tmp_path / "cache", result_cache_mb=0, dpi=72,
                        host="127.0.0.1", port=free_port())  # fmt: skip
    with running_app(settings) as running:
        yield running


def test_api_refusals_carry_their_reason(app_in_tmp, tmp_path):
    """Row 9: a dotfile name, ``..pdf``, a path on the server and a URL are refused, and the client is
    told which file and why (it got ``{"error": null}``)."""
    import httpx
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError

    (tmp_path / "docs").mkdir()
    good = make_pdf(tmp_path / "docs" / "good.pdf", ["Hello"])
    client = Client(app_in_tmp.url, verbose=False)
    for name in (".hidden.pdf", "..pdf"):
        path = tmp_path / "docs" / name
        path.write_bytes(good.read_bytes())
        with pytest.raises(AppError) as refused:
            client.predict(files=[handle_file(str(path))], api_name="/convert")
        assert str(refused.value).startswith(f"{name}: refused: a file whose name starts with a dot")
    markdown, result, _ = client.predict(files=[handle_file(str(good))], api_name="/convert")
    assert "Hello" in markdown and result["documents"][0]["complete"] is True  # a good file still works

    # the same endpoint over plain HTTP, naming a file on the server and a URL instead of uploading
    api = app_in_tmp.url.rstrip("/") + "/gradio_api"
    params = httpx.get(f"{api}/info").json()["named_endpoints"]["/convert"]["parameters"]
    defaults = [p.get("parameter_default") for p in params[1:]]
    for path, why in ((str(good), "it was not uploaded to this app"), ("https://example.com/a.pdf", "a URL")):
        event = httpx.post(f"{api}/call/convert", json={"data": [[{"path": path, "meta": {"_type":
                           "gradio.FileData"}}], *defaults]}).json()["event_id"]  # fmt: skip
        stream = httpx.get(f"{api}/call/convert/{event}", timeout=60).text
        assert "event: error" in stream
        error = json.loads(stream.split("event: error\ndata: ", 1)[1].splitlines()[0])["error"]
        assert error.startswith(f"{Path(path).name}: refused: {why}"), error


# --- row 10: the viewer loads nothing from elsewhere -------------------------------------------------
@pytest.mark.browser
def test_viewing_a_document_loads_nothing_from_outside_the_app(tmp_path):
    """Row 10: a document whose text holds ``![x](https://example.com/track.gif)``, shown in Chromium
    (Pages and Document tabs): no request leaves 127.0.0.1, the image is a link, and the page carries
    the Content-Security-Policy."""
    from tests.ui_support import chromium, free_port, running_app

    pdf = make_pdf(tmp_path / "track.pdf", ["# Report\nSee ![x](https://example.com/track.gif) here."])
    settings = Settings(engine="textlayer", cache_dir=tmp_path / "cache", result_cache_mb=0, dpi=72,
                        host="127.0.0.1", port=free_port())  # fmt: skip
    with running_app(settings) as app, chromium() as browser:
        tab = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        tab.set_default_timeout(120_000)
        requests: list[str] = []
        tab.on("request", lambda r: requests.append(r.url))
        response = tab.goto(app.url)
        assert "img-src 'self' data: blob:" in response.headers["content-security-policy"]
        tab.set_input_files("#input-files input[type=file]", [str(pdf)])
        tab.locator("#input-files").get_by_text("track", exact=True).first.wait_for()
        tab.click("#convert-btn")
        tab.locator("#job-status").get_by_text("Done:").wait_for()
        link = tab.locator("#page-view a.ocr-remote-image")
        link.wait_for()
        assert link.inner_text() == "remote image: x"
        assert link.get_attribute("href") == "https://example.com/track.gif"
        tab.get_by_role("tab", name="Document").click()
        doc = tab.locator("#doc-markdown")
        doc.get_by_text("remote image: x").wait_for()
        assert doc.locator("img[src*='example.com']").count() == 0
        assert doc.locator("a[href='https://example.com/track.gif']").count() == 1
    outside = [u for u in requests if not u.startswith(("http://127.0.0.1", "data:", "blob:"))]
    assert requests and outside == []


# --- row 11: bounded inflation ------------------------------------------------------------------------------
def _bomb_pdf(path: Path, inflated_mib: int, page: int = 1, fill: bytes = b" ") -> Path:
    """3 pages; page ``page`` (0-based) gets a Flate content stream inflating to ``inflated_mib`` MiB."""
    import zlib

    import pymupdf

    doc = pymupdf.open()
    for i in range(3):
        doc.new_page(width=A4[0], height=A4[1]).insert_text((72, 90), f"Page {i + 1} text", fontsize=16)
    xref = doc[page].get_contents()[0]
    deflate = zlib.compressobj(9)
    parts = [deflate.compress(b"BT /F1 12 Tf 72 72 Td (bomb) Tj ET\n")]
    chunk = fill * (1 << 20)
    parts += [deflate.compress(chunk) for _ in range(inflated_mib)]
    parts.append(deflate.flush())
    doc.update_stream(xref, b"".join(parts), compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")
    doc.save(path)
    doc.close()
    return path


def test_a_decompression_bomb_page_is_refused_fast_and_holds_no_memory(tmp_path):
    """Row 11: a page whose content inflates to 256 MiB (limit lowered to 16 MiB) is that page's
    error; the other pages convert; the run stays small and fast (MuPDF never reads the page)."""
    pdf = _bomb_pdf(tmp_path / "bomb.pdf", 256)
    assert pdf.stat().st_size < 2 * 2**20
    code = (
        "import json, resource, sys, time\n"
        "from ocr_app.convert import Converter, ConvertOptions\n"
        "from ocr_app.settings import Settings\n"
        "from ocr_app.stack import build_engines\n"
        "s = Settings(engine='textlayer', result_cache_mb=0, max_page_stream_mb=16)\n"
        "engines = build_engines(s)\n"
        "def hwm():\n"
        "    return [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')][0] // 1024\n"
        "before = hwm(); t = time.monotonic()\n"
        f"[d] = Converter(engines, s).convert([{str(pdf)!r}], {str(tmp_path / 'out')!r}, ConvertOptions())\n"
        "print(json.dumps({'s': time.monotonic() - t, 'grew_mb': hwm() - before,\n"
        "                  'pages': [[p.index, p.status, p.error] for p in d.pages]}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
                          timeout=600, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    (i0, s0, _), (i1, s1, e1), (i2, s2, _) = result["pages"]
    assert (i0, s0, i1, s1, i2, s2) == (0, "ok", 1, "error", 2, "ok")
    assert e1 == (
        "bomb.pdf: page 2's content inflates to more than 16 MiB (a decompression bomb?); it was not "
        "rendered (set DEEPSEEK_OCR_MAX_PAGE_STREAM_MB to raise the limit)"
    )
    assert result["grew_mb"] < 150, result  # inflating it in MuPDF held 600 MB
    assert result["s"] < 20, result


def _slow_pdf(tmp_path: Path) -> Path:
    """Four pages: page 2 says "Page 2 text" and then fills the page 4 million times (68 MiB of content,
    under the size limit; hours to render, so no machine renders it within the time limit), page 3 holds
    3 MiB of plain content (spaces after one word), pages 1 and 4 a line of text each."""
    import zlib

    import pymupdf

    doc = pymupdf.open()
    for i in range(4):
        doc.new_page(width=A4[0], height=A4[1]).insert_text((72, 90), f"Page {i + 1} text", fontsize=16)
    fills = b"BT /helv 16 Tf 72 752 Td (Page 2 text) Tj ET\n1 g\n" + b"0 0 595 842 re f\n" * 4_000_000
    light = b"BT /helv 12 Tf 72 72 Td (light) Tj ET\n" + b" " * (3 << 20)
    for index, content in ((1, fills), (2, light)):
        xref = doc[index].get_contents()[0]
        doc.update_stream(xref, zlib.compress(content, 1), compress=False)
        doc.xref_set_key(xref, "Filter", "/FlateDecode")
    pdf = tmp_path / "slow.pdf"
    doc.save(pdf)
    doc.close()
    return pdf


def test_the_text_layer_reads_a_page_of_millions_of_paths_without_walking_them(tmp_path):
    """The text layer looked for figures and ruled tables by asking PyMuPDF for every path as a Python
    dict: on a page of 4 million paths that held the process for minutes and gigabytes (the suite hung
    here, on a machine fast enough to render the page in time). Past 4 MiB of content it reads the text
    only and says so; lighter pages keep the full analysis."""
    from PIL import Image

    from ocr_app.engines.textlayer import TextLayerEngine
    from ocr_app.schema import PageImage, PageRequest

    pdf = _slow_pdf(tmp_path)
    engine = TextLayerEngine(Settings(engine="textlayer"))

    def request(index: int) -> PageRequest:
        page = PageImage(
            image=Image.new("RGB", (595, 842), "white"), index=index, source="slow.pdf", pdf_path=pdf
        )
        return PageRequest(page=page, prompt="")

    heavy, light = engine.predict_batch([request(1), request(2)])
    assert [b.text for b in heavy.blocks] == ["Page 2 text"]
    assert heavy.notes == [
        "page 2 draws more than 4 MiB of vector content: its text was read, figures and ruled tables were "
        "not looked for"
    ]
    assert heavy.timings["total"] < 30, heavy.timings
    assert light.notes == [] and "light" in " ".join(b.text for b in light.blocks)


def test_a_page_that_renders_too_long_is_stopped(tmp_path):
    """Row 11's time limit: pages with more than 1 MiB of content render in a child process; one of 4
    million full-page fills (68 MiB, under the size limit) is stopped after 4 s and says so, while a page
    of 3 MiB of plain content renders in its child in time; the others convert."""
    pdf = _slow_pdf(tmp_path)
    settings = Settings(engine="textlayer", result_cache_mb=0, render_isolation_mb=1, max_render_s=4)
    options = ConvertOptions(formats=frozenset({"json"}))
    [result] = Converter(build_engines(settings), settings).convert([pdf], tmp_path / "out", options)
    assert [p.status for p in result.pages] == ["ok", "error", "ok", "ok"]
    assert result.pages[1].error == (
        "slow.pdf: page 2 took longer than 4 s to render and was stopped (set DEEPSEEK_OCR_MAX_RENDER_S "
        "to allow longer)"
    )
    assert result.pages[2].width == round(A4[0] * 2) and result.complete


def _forms_pdf(path: Path, chain: list[int], leaf: bytes) -> Path:
    """Two text pages; page 1 also draws form 0, form k draws form k + 1 ``chain[k]`` times, and the
    last form holds ``leaf`` (Flate-compressed)."""
    import zlib

    import pymupdf

    doc = pymupdf.open()
    for i in range(2):
        doc.new_page(width=A4[0], height=A4[1]).insert_text((72, 90), f"Page {i + 1} text", fontsize=16)
    xrefs = [doc.get_new_xref() for _ in range(len(chain) + 1)]
    form = "<</Type/XObject/Subtype/Form/BBox[0 0 595 842]"
    for k, times in enumerate(chain):
        doc.update_object(xrefs[k], f"{form}/Resources<</XObject<</F{k + 1} {xrefs[k + 1]} 0 R>>>>>>")
        doc.update_stream(xrefs[k], f"q /F{k + 1} Do Q\n".encode() * times)
    doc.update_object(xrefs[-1], form + ">>")
    doc.update_stream(xrefs[-1], zlib.compress(leaf, 1), compress=False)
    doc.xref_set_key(xrefs[-1], "Filter", "/FlateDecode")
    page = doc[0]
    kind, resources = doc.xref_get_key(page.xref, "Resources")
    if kind == "xref":
        doc.xref_set_key(int(resources.split()[0]), "XObject", f"<</F0 {xrefs[0]} 0 R>>")
    else:
        doc.xref_set_key(page.xref, "Resources/XObject", f"<</F0 {xrefs[0]} 0 R>>")
    content = page.get_contents()[0]
    doc.update_stream(content, doc.xref_stream(content) + b"\nq /F0 Do Q\n")
    doc.save(path)
    doc.close()
    return path


def test_a_bomb_inside_nested_forms_is_refused_by_the_size_limit(tmp_path):
    """Row 11 through form XObjects: 20 MiB of whitespace two forms deep counts toward the page's limit
    (8 MiB here), so that page is refused and names the setting; the other page converts."""
    pdf = _forms_pdf(tmp_path / "nested.pdf", [1, 1], b" " * (20 << 20))
    settings = Settings(engine="textlayer", result_cache_mb=0, max_page_stream_mb=8)
    options = ConvertOptions(formats=frozenset({"json"}))
    [result] = Converter(build_engines(settings), settings).convert([pdf], tmp_path / "out", options)
    assert [p.status for p in result.pages] == ["error", "ok"]
    assert result.pages[0].error == (
        "nested.pdf: page 1's content inflates to more than 8 MiB (a decompression bomb?); it was not "
        "rendered (set DEEPSEEK_OCR_MAX_PAGE_STREAM_MB to raise the limit)"
    )


def test_forms_drawing_forms_billions_of_times_render_under_the_time_limit(tmp_path):
    """Six forms, each drawing the next 30 times, end in one page fill: 2 KB of streams that MuPDF would
    interpret 729 million times (in-process, where nothing can stop it). Counted as drawn, the page goes to
    the child process and is stopped after 3 s; the other page converts."""
    from ocr_app.ingest.pdf_guard import content_cost

    pdf = _forms_pdf(tmp_path / "laughs.pdf", [30] * 6, b"0 0 595 842 re f\n")
    import pymupdf

    with pymupdf.open(pdf) as doc:
        cost = content_cost(doc[0], 256 << 20)
    assert cost.stored < 4096 and cost.drawn > 30**6 * 17, cost
    settings = Settings(engine="textlayer", result_cache_mb=0, max_render_s=3)
    options = ConvertOptions(formats=frozenset({"json"}))
    start = time.monotonic()
    [result] = Converter(build_engines(settings), settings).convert([pdf], tmp_path / "out", options)
    assert [p.status for p in result.pages] == ["error", "ok"]
    assert result.pages[0].error == (
        "laughs.pdf: page 1 took longer than 3 s to render and was stopped (set DEEPSEEK_OCR_MAX_RENDER_S to "
        "allow longer)"
    )
    assert time.monotonic() - start < 30


def test_remote_images_in_model_html_are_not_loaded_either():
    """Row 10 for engines whose output keeps raw HTML (DeepSeek): ``<img>`` of another host loses its
    source in the page viewer and becomes a link in the Document tab; the app's own figures stay."""
    from ocr_app.ui.offline import offline_markdown
    from ocr_app.ui.page_html import markdown_html

    md = 'A ![x](https://example.com/t.gif) B <img src="//tracker.test/p.png" alt="y"> ![f](images/0_0.jpg)'
    html = markdown_html(md, [], {"images/0_0.jpg": "/gradio_api/file=/tmp/f.jpg"})
    assert "example.com" not in html.split('href="')[0] and 'src="//tracker.test' not in html
    assert 'class="ocr-remote-image" href="https://example.com/t.gif"' in html
    assert '<img alt="y">' in html and 'src="/gradio_api/file=/tmp/f.jpg"' in html
    assert offline_markdown(md) == (
        "A [remote image: x](https://example.com/t.gif) B [remote image: y](//tracker.test/p.png) "
        "![f](images/0_0.jpg)"
    )
