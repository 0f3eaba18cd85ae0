"""The UI's parts without a browser: form validation, the job stream and cancel, the viewer's data,
the status panel, per-session folders, the event wiring, and the ``app.py`` launcher (share fails soft)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2.modes import MODES
from ocr_app.models.deepseek_ocr2.prompts import PRESETS
from ocr_app.runtime.vram import VramHistory, VramSnapshot
from ocr_app.schema import DocumentResult, PageResult, StopReason
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from ocr_app.ui import form, status_panel, viewer
from ocr_app.ui.jobs import CancelRegistry, JobOutcome, Progress, stream_conversion
from ocr_app.ui.session import SessionDirs
from tests.factories import make_pdf
from tests.ui_support import free_port, tiny_settings

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def settings(tiny_checkpoint, tmp_path_factory):
    return tiny_settings(tiny_checkpoint, tmp_path_factory.mktemp("ui-parts-cache"))


@pytest.fixture(scope="module")
def converter(settings):
    engines = build_engines(settings)
    yield Converter(engines, settings)
    engines.unload_all()


# --- form ------------------------------------------------------------------------------------------
def test_choices_come_from_the_engines_capabilities(converter):
    caps = converter.capabilities()
    values = [v for _, v in form.preset_choices(caps)]
    assert values == [*PRESETS, form.CUSTOM]
    modes = form.mode_choices(caps)
    assert modes[0] == "auto" and sorted(modes) == sorted(MODES)
    # an engine set without a prompt-taking engine offers the configured default only
    from ocr_app.engine_api import Capabilities

    assert form.preset_choices(Capabilities(), "free") == [("free", "free")]
    assert form.mode_choices(Capabilities(modes=("global", "auto"))) == ["auto", "global"]


def test_build_options_maps_the_form(settings):
    opts = form.build_options(
        form.FormValues(pages=" 1-2 ", preset="free", mode="auto", dpi=200.0, use_cache=False, engine=""),
        settings,
    )
    assert (opts.pages, opts.prompt, opts.mode, opts.dpi, opts.use_cache) == (
        "1-2",
        "free",
        "auto",
        200,
        False,
    )
    assert opts.engine is None and opts.max_new_tokens == settings.max_new_tokens
    custom = form.build_options(form.FormValues(preset=form.CUSTOM, custom_prompt=" Free OCR. "), settings)
    assert custom.prompt == "Free OCR."
    locate = form.build_options(form.FormValues(preset="locate", locate_text="Total"), settings)
    assert (locate.prompt, locate.locate_text) == ("locate", "Total")
    assert form.build_options(form.FormValues(pages=""), settings).pages is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (form.FormValues(preset=form.CUSTOM, custom_prompt="  "), "custom prompt is empty"),
        (form.FormValues(preset="locate"), "needs the text to find"),
        (form.FormValues(dpi=20), "DPI must be between 36 and 600, got 20"),
    ],
)
def test_bad_form_values_raise_config_errors(settings, values, message):
    with pytest.raises(ConfigError, match=message):
        form.build_options(values, settings)


# --- job stream and cancel ---------------------------------------------------------------------
def test_stream_reports_progress_and_returns_every_document(converter, settings, tmp_path):
    pdf = make_pdf(tmp_path / "two.pdf", ["# One\nfirst", "# Two\nsecond"])
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.7\n" + b"\x00junk" * 40)
    items = list(
        stream_conversion(
            converter, [pdf, bad], tmp_path / "out", ConvertOptions.from_settings(settings), threading.Event()
        )
    )
    *progress, outcome = items
    assert isinstance(outcome, JobOutcome) and not outcome.cancelled
    assert all(isinstance(p, Progress) for p in progress)
    messages = [p.message for p in progress]
    assert "File 1 of 2 · Rendering page 1 of 2" in messages
    assert any(m.startswith("File 2 of 2 · ") and "bad.pdf" in m for m in messages)
    fractions = [p.fraction for p in progress]
    assert fractions == sorted(fractions) and fractions[-1] >= 0.5
    assert [d.source for d in outcome.documents] == ["two.pdf", "bad.pdf"]
    assert [d.source for d in outcome.succeeded] == ["two.pdf"] and len(outcome.succeeded[0].pages) == 2
    assert outcome.failed[0].error and "bad.pdf" in outcome.failed[0].error


def test_cancel_keeps_finished_pages_and_skips_later_files(converter, settings, tmp_path):
    pdf = make_pdf(tmp_path / "three.pdf", ["one", "two", "three"])
    later = make_pdf(tmp_path / "later.pdf", ["never converted"])
    cancel = threading.Event()
    options = ConvertOptions.from_settings(settings)
    outcome = None
    for item in stream_conversion(converter, [pdf, later], tmp_path / "out", options, cancel):
        if isinstance(item, Progress) and item.event.stage == "render":
            cancel.set()  # page 1 is being recognized; the converter stops after it
        if isinstance(item, JobOutcome):
            outcome = item
    assert outcome is not None and outcome.cancelled
    (doc,) = outcome.documents
    assert doc.source == "three.pdf" and 1 <= len(doc.pages) < 3
    # page 1 was really recognised: the trained tiny model's text (12 tokens can end inside its first
    # box, leaving no block and so no Markdown yet)
    assert doc.pages[0].index == 0 and doc.pages[0].raw_text.startswith("<|ref|>")


def test_closing_the_stream_early_cancels_the_worker(converter, settings, tmp_path):
    pdf = make_pdf(tmp_path / "two.pdf", ["a", "b"])
    cancel = threading.Event()
    stream = stream_conversion(
        converter, [pdf], tmp_path / "out", ConvertOptions.from_settings(settings), cancel
    )
    first = next(stream)
    assert isinstance(first, Progress)
    stream.close()  # what gradio does when the browser goes away
    assert cancel.is_set()


def test_cancel_registry_targets_the_running_job_of_one_session():
    reg = CancelRegistry()
    assert reg.cancel("s1") is False
    event = reg.start("s1")
    other = reg.start("s2")
    assert reg.running("s1") and reg.cancel("s1") is True and event.is_set()
    assert reg.cancel("s1") is False and not other.is_set()
    newer = reg.start("s1")
    reg.finish("s1", event)  # a stale finish must not drop the newer job
    assert reg.running("s1")
    reg.finish("s1", newer)
    assert not reg.running("s1")


# --- session folders ----------------------------------------------------------------------------
def test_session_dirs_replace_finished_jobs_keep_running_ones_and_clean_up(tmp_path):
    dirs = SessionDirs(tmp_path / "root")
    first = dirs.new_job("abc")
    (first / "out.md").write_text("x")
    running = dirs.new_job("abc")  # first is still active: kept
    assert first.exists() and running.exists()
    dirs.finished(first)
    dirs.finished(running)
    third = dirs.new_job("abc")
    assert not first.exists() and not running.exists() and third.exists()
    odd = dirs.new_job("../../etc")
    assert odd.resolve().is_relative_to((tmp_path / "root").resolve())
    assert dirs.cleanup("abc") is True and not third.exists() and dirs.cleanup("abc") is False
    # The tab closes while a job still runs: whatever the job writes afterwards is removed when it ends.
    busy = dirs.new_job("late")
    assert dirs.cleanup("late") is True and not busy.exists()
    busy.mkdir(parents=True)
    (busy / "written-after-close.md").write_text("x")
    dirs.finished(busy)
    assert not busy.parent.exists()
    dirs.close()
    assert not (tmp_path / "root").exists()


# --- viewer -------------------------------------------------------------------------------------
def _page(index: int, **kw) -> PageResult:
    return PageResult(
        index=index, source="doc.pdf", width=100, height=200, markdown=f"# Page {index + 1}", **kw
    )


def test_viewer_data_reports_status_and_reasons(tmp_path):
    md = tmp_path / "doc.md"
    md.write_text("x")
    doc = DocumentResult(
        source="doc.pdf",
        pages=[
            _page(0, engine="deepseek-ocr2", engine_reason="DeepSeek-OCR-2 on the CPU"),
            _page(1, stop_reason=StopReason.LENGTH, num_tokens=8192),
            _page(2, stop_reason=StopReason.REPETITION),
            _page(3, stop_reason=StopReason.ERROR, error="page 4 could not be rendered"),
        ],
        outputs={"md": md, "json": tmp_path / "missing.json"},
    )
    failed = DocumentResult(source="bad.png", error="bad.png is not an image")
    entries = viewer.page_entries([doc, failed])
    assert [e.status for e in entries] == ["ok", "length", "repetition", "error"]
    assert entries[1].label == "doc.pdf · page 2 · token cap hit"
    assert "8192 tokens" in entries[1].reason and "repeated" in entries[2].reason
    assert entries[3].reason == "page 4 could not be rendered"
    assert entries[0].reason == "DeepSeek-OCR-2 on the CPU"
    assert len({e.key for e in entries}) == 4

    rows = viewer.status_rows([doc, failed])
    assert rows[-1] == ["bad.png", "", "error", "", "—", "—", "bad.png is not an image"]
    assert rows[1][:3] == ["doc.pdf", 2, "token cap hit"]
    assert len(rows[0]) == len(viewer.STATUS_HEADERS)

    text = viewer.document_markdown([doc, failed])
    assert "# Page 1" in text and "> Page 4 failed: page 4 could not be rendered" in text
    assert "> **bad.png** could not be converted: bad.png is not an image" in text
    assert viewer.download_paths([doc, failed]) == [str(md)]  # missing files are not offered

    summary = viewer.summary_markdown([doc, failed], cancelled=False)
    assert "4 page(s) from 1 file(s): 1 ok, 1 token cap hit, 1 repetition, 1 error." in summary
    assert "3 page(s) need attention" in summary
    assert "Failed: bad.png" in summary
    assert viewer.summary_markdown([doc], cancelled=True).startswith("**Cancelled.**")
    assert "token cap hit" in viewer.page_status_markdown(entries[1])


def test_token_figures_show_a_dash_for_engines_that_decode_no_tokens():
    light = _page(0, engine="light")  # StopReason.NONE, no tokens
    decoded = _page(1, engine="deepseek-ocr2", stop_reason=StopReason.END, num_tokens=120)
    decoded.timings["decode"] = 2.0
    assert viewer.token_figures(light) == ("—", "—")
    assert viewer.token_figures(decoded) == ("120", "60.0")
    rows = viewer.status_rows([DocumentResult(source="d.pdf", pages=[light, decoded])])
    assert rows[0][4:6] == ["—", "—"] and rows[1][4:6] == ["120", "60.0"]


def test_new_page_statuses_are_labelled_and_counted_in_the_headline():
    class Flagged(PageResult):  # the library side adds these statuses; the UI shows any status string
        def __init__(self, index, status):
            super().__init__(index=index, source="d.pdf", width=10, height=10, markdown="")
            self._status = status

        @property
        def status(self):
            return self._status

    pages = [Flagged(i, "ok") for i in range(14)] + [Flagged(14, "empty"), Flagged(15, "empty")]
    pages.append(Flagged(16, "low_confidence"))
    pages.append(Flagged(17, "brand_new"))
    doc = DocumentResult(source="d.pdf", pages=pages)
    summary = viewer.summary_markdown([doc], cancelled=False)
    assert "18 page(s) from 1 file(s): 14 ok, 2 empty, 1 low confidence, 1 brand new." in summary
    entries = viewer.page_entries([doc])
    assert entries[14].label == "d.pdf · page 15 · empty"
    assert viewer.status_rows([doc])[16][2] == "low confidence"
    assert "blank page" in entries[14].html()  # an empty page says so instead of an empty box


# --- status panel -------------------------------------------------------------------------------
def _snap(t: float, used: int | None, allocated: int | None = None) -> VramSnapshot:
    return VramSnapshot(
        available=True,
        timestamp=t,
        total_bytes=8 << 30,
        used_bytes=used,
        torch_allocated_bytes=allocated,
        device_index=0,
        device_name="Test GPU",
    )


def test_history_frame_plots_gib_over_seconds_ago():
    now = 1000.0
    history = VramHistory(window_s=600, clock=lambda: now)
    history.add(_snap(now - 10, 2 << 30, 1 << 30))
    history.add(_snap(now - 5, 3 << 30))
    history.add(VramSnapshot(available=False, timestamp=now - 1, reason="no GPU"))
    frame = status_panel.history_frame(history, now=now)
    rows = sorted(map(tuple, frame.to_numpy().tolist()))
    assert rows == [
        (-10.0, "device used", 2.0),
        (-10.0, "process allocated", 1.0),
        (-5.0, "device used", 3.0),
    ]


def test_panel_text_says_no_gpu_and_shows_engine_states(converter, settings):
    no_gpu = VramSnapshot(available=False, timestamp=0.0, reason="no GPU: NVML sees 0 devices")
    assert status_panel.vram_markdown(no_gpu) == (
        "**No GPU on this machine** (NVML sees 0 devices); pages run on the CPU."
    )
    nested = VramSnapshot(available=False, timestamp=0.0, reason="no GPU (NVML: not found; torch sees none)")
    assert "(NVML: not found; torch sees none);" in status_panel.vram_markdown(nested)
    assert "Test GPU" in status_panel.vram_markdown(_snap(0.0, 1 << 30))
    text = status_panel.engines_markdown(converter.describe())
    assert "**deepseek** (default): " in text
    state = converter.describe()["engines"]["deepseek"]["state"]
    assert f"(default): {state}" in text
    assert status_panel.engine_label("auto", converter.describe()) == "auto: PDF text layer, else deepseek"
    assert status_panel.engine_label("light", {}) == "light: light CPU OCR (rapidocr)"
    assert status_panel.engine_state({"loaded": True}) == "ready"
    assert status_panel.engine_state({"loaded": False}) == "not loaded"
    markdown, frame, has_gpu = status_panel.panel_update(VramHistory(), converter.describe(), settings)
    assert "**Engines**" in markdown and (len(frame) > 0) == has_gpu


def test_notice_explains_how_to_get_deepseek_when_it_is_not_used(tiny_checkpoint, tmp_path):
    base = {"model": str(tiny_checkpoint), "device": "cpu", "cache_dir": tmp_path}
    forced = Settings(engine="deepseek", **base)
    assert status_panel.notice_markdown(build_engines(forced).describe()) == ""
    light = build_engines(Settings(engine="light", **base)).describe()
    notice = status_panel.notice_markdown(light)
    assert "**light** engine" in notice and "--model /path/to/DeepSeek-OCR-2" in notice
    missing = {
        "default": "textlayer",
        "preferred": "deepseek",
        "engines": {"textlayer": {}},
        "unavailable": {"deepseek": "no torch"},
    }
    notice = status_panel.notice_markdown(missing)
    assert "DeepSeek-OCR-2 cannot run here:** no torch" in notice and "ocr-app[light]" in notice


def test_the_banner_and_the_summary_say_which_engine_reads_which_page(tmp_path):
    """``auto`` without DeepSeek-OCR-2 weights: PDF pages with text are read by the text layer, the rest by
    the light engine — the banner says both (it used to name the light engine alone while the text layer
    read every PDF page), and a finished job says which engine read how many pages."""
    settings = Settings(engine="auto", model=str(tmp_path / "no-weights"), device="cpu", cache_dir=tmp_path)
    notice = status_panel.notice_markdown(build_engines(settings).describe())
    assert "PDF pages with a usable text layer are read from it (the **textlayer** engine)" in notice
    assert "by the **light** engine" in notice and "Pages are read by the" not in notice
    forced = build_engines(Settings(engine="light", device="cpu", cache_dir=tmp_path)).describe()
    assert "Every page is read by the **light** engine" in status_panel.notice_markdown(forced)
    pages = [_page(0, engine="textlayer"), _page(1, engine="textlayer"), _page(2, engine="light")]
    summary = viewer.summary_markdown([DocumentResult(source="d.pdf", pages=pages)], cancelled=False)
    assert "Read by: textlayer 2 pages, light 1 page." in summary


# --- wiring -------------------------------------------------------------------------------------
def test_gpu_events_share_one_queue_limit(converter, tiny_checkpoint, tmp_path):
    from ocr_app.ui.app import build_app

    settings = tiny_settings(tiny_checkpoint, tmp_path / "cache", concurrency_limit=2)
    demo = build_app(converter, settings, work_dir=tmp_path / "work")
    fns = {f.name: f for f in demo.fns.values()}
    ui, api = fns["convert_ui"], fns["convert_api"]
    assert api.api_name == "convert"
    assert demo.analytics_enabled is False  # no telemetry calls out of a document server
    assert ui.concurrency_id == api.concurrency_id == "gpu"
    assert ui.concurrency_limit == api.concurrency_limit == 2
    assert fns["cancel_job"].concurrency_limit is None  # Cancel must never wait behind the job it cancels
    by_id = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    for md in ("doc-markdown",):  # DeepSeek writes \( \) and \[ \]; tables are HTML
        delimiters = {(d["left"], d["right"]) for d in by_id[md].latex_delimiters}
        assert {("\\(", "\\)"), ("\\[", "\\]"), ("$$", "$$")} <= delimiters
        assert by_id[md].sanitize_html  # HTML tables render, scripts do not
    # The page viewer is sanitised server-side (page_html) and ships its script as package data.
    assert by_id["page-view"].js_on_load and "data-block" in by_id["page-view"].js_on_load
    assert by_id["cancel-btn"].interactive is False  # nothing runs yet
    assert (by_id["opt-dpi"].minimum, by_id["opt-dpi"].maximum) == (36, 600)  # the CLI's --dpi range
    demo.ocr_app_dirs.close()


def test_importing_the_ui_modules_loads_neither_gradio_nor_torch():
    code = (
        "import sys, ocr_app.ui.app, ocr_app.ui.launch, ocr_app.ui.status_panel;"
        "print(sorted(m for m in ('gradio', 'torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- launcher -----------------------------------------------------------------------------------
def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(REPO / "app.py"), *args],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_launcher_share_fails_soft_offline_and_env_sets_the_port(tmp_path):
    port = free_port()
    offline = {  # every outside request goes to a closed port: the share server is unreachable
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "DEEPSEEK_OCR_PORT": str(port),
        "DEEPSEEK_OCR_CACHE_DIR": str(tmp_path / "cache"),
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    proc = _start(["--engine", "textlayer", "--share"], offline)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "no public link exists" in line:
                break
        assert any("Could not create a gradio share link" in ln for ln in lines), "".join(lines)
        printed = "".join(lines)  # nothing claims a link that was not made, nor gives gradio's own hint
        assert "public share link" not in printed and "share=True" not in printed, printed
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
            assert resp.status == 200 and "ocr-app" in resp.read().decode()
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_launcher_rejects_an_unknown_engine_with_a_clear_message(tmp_path):
    proc = _start(
        ["--engine", "nonexistent", "--port", str(free_port())],
        {"DEEPSEEK_OCR_CACHE_DIR": str(tmp_path / "cache")},
    )
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 2
    # the flag is checked by the one parser (click) against the declared engine names
    assert "Invalid value for '--engine': 'nonexistent' is not one of 'auto', 'deepseek'" in out
    env_proc = _start(
        ["--port", str(free_port())],
        {"DEEPSEEK_OCR_CACHE_DIR": str(tmp_path / "cache"), "DEEPSEEK_OCR_ENGINE": "nonexistent"},
    )
    out, _ = env_proc.communicate(timeout=90)
    assert env_proc.returncode == 2
    assert "error: invalid settings" in out and "engine" in out and "nonexistent" in out


# --- temp folders: removed on shutdown and, for dead owners, at start-up ---------------------------
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _owned_folder(base: Path, name: str, pid: int) -> Path:
    folder = base / name
    (folder / "gradio").mkdir(parents=True)
    (folder / "gradio" / "upload.pdf").write_bytes(b"%PDF-1.7 left behind")
    (folder / "owner.json").write_text(json.dumps({"pid": pid, "start": None}))
    return folder


def test_app_removes_its_temp_folder_on_sigterm_and_orphans_at_start(tmp_path):
    """SIGTERM (a service manager's stop) takes the same cleanup path as Ctrl+C (SIGINT)."""
    from gradio_client import Client, handle_file

    base = tmp_path / "ocr-app"
    orphan = _owned_folder(base, "proc-1-orphan", _dead_pid())
    live = _owned_folder(base, "proc-2-live", os.getpid())  # this test's process: alive, must stay
    port = free_port()
    env = {
        "TMPDIR": str(tmp_path),
        "DEEPSEEK_OCR_PORT": str(port),
        "DEEPSEEK_OCR_CACHE_DIR": str(tmp_path / "c"),
    }
    clean_env = {k: v for k, v in os.environ.items() if k != "GRADIO_TEMP_DIR"}
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "app.py"), "--engine", "textlayer"],
        cwd=REPO,
        env={**clean_env, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).close()
                break
            except OSError:
                time.sleep(0.3)
        assert not orphan.exists() and live.exists()
        (mine,) = [p for p in base.glob(f"proc-{proc.pid}-*")]
        pdf = make_pdf(tmp_path / "doc.pdf", ["# Uploaded\nText."])
        client = Client(f"http://127.0.0.1:{port}/", verbose=False, download_files=str(tmp_path / "dl"))
        _, result, files = client.predict(files=[handle_file(str(pdf))], api_name="/convert")
        assert result["documents"][0]["error"] is None and {Path(f).suffix for f in files} >= {".md", ".zip"}
        kept = [p.relative_to(mine) for p in mine.rglob("*") if p.is_file()]
        # the upload lives in the process folder; the outputs were served from it in place (its sessions
        # folder) and went once the client had fetched them (ui.api_results)
        assert {k.parts[0] for k in kept} == {"owner.json", "gradio"}
        assert not any("sessions" in k.parts for k in kept)
        assert any(k.name == "doc.pdf" for k in kept)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    assert not mine.exists() and live.exists()


def test_sweep_removes_only_folders_whose_owner_is_gone(tmp_path):
    from ocr_app.ui.temp_dirs import ProcessTemp, _start_ticks, sweep_orphans

    base = tmp_path / "ocr-app"
    mine = ProcessTemp.create(base)
    dead = _owned_folder(base, "proc-1-dead", _dead_pid())
    reused = _owned_folder(base, "proc-2-reused", os.getpid())  # same pid, another process's start time
    (reused / "owner.json").write_text(json.dumps({"pid": os.getpid(), "start": "1"}))
    unmarked = base / "proc-3-being-created"
    unmarked.mkdir()
    assert _start_ticks(os.getpid()) not in (None, "1")
    assert sorted(p.name for p in sweep_orphans(base)) == ["proc-1-dead", "proc-2-reused"]
    assert mine.path.exists() and unmarked.exists() and not dead.exists() and not reused.exists()
    mine.remove()
    assert not mine.path.exists()


def test_outputs_in_the_process_temp_are_served_by_gradio_in_place(tmp_path, monkeypatch):
    """The app's outputs lie inside gradio's folder, so a result's downloads are not copied and hashed
    again (a 16-page job's PDFs and ZIP cost ~0.3 s per result when they were). Gradio's own code
    decides it: its cache move returns the output's path unchanged, and a file elsewhere is copied."""
    import asyncio

    import gradio as gr

    from ocr_app.ui.temp_dirs import use_process_temp

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "before"))  # restored after the test
    base = tmp_path / "ocr-app"
    gone = _owned_folder(base, "proc-1-dead", _dead_pid())
    temp = use_process_temp(base)
    assert not gone.exists()  # the sweep ran first
    assert os.environ["GRADIO_TEMP_DIR"] == str(temp.gradio_dir)
    out = temp.work_dir / "job" / "doc.zip"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"PK" + b"x" * 1000)
    elsewhere = tmp_path / "elsewhere.zip"
    elsewhere.write_bytes(b"PK" + b"y" * 1000)
    with gr.Blocks():
        block = gr.File()
    served = asyncio.run(block.async_move_resource_to_block_cache(out))
    copied = asyncio.run(block.async_move_resource_to_block_cache(elsewhere))
    assert Path(served) == out.resolve()
    assert Path(copied) != elsewhere.resolve() and Path(copied).is_relative_to(temp.gradio_dir.resolve())
    temp.remove()


# --- small parts of the form and the queue line --------------------------------------------------
def test_prompt_and_mode_are_off_for_engines_that_ignore_them():
    describe = {"default": "auto", "engines": {"auto": {"ocr": "light"}}}
    assert "light engine, which takes no prompt" in form.ignored_options_reason("auto", describe)
    assert form.ignored_options_reason("textlayer", describe) == (
        "textlayer (PDF text layer only) takes no prompt or resolution mode"
    )
    assert "light (light CPU OCR (rapidocr)) takes no prompt" in form.ignored_options_reason(
        "light", describe
    )
    assert form.ignored_options_reason("deepseek", describe) is None
    assert form.ignored_options_reason("remote", describe) is None
    assert form.ignored_options_reason("auto", {"engines": {"auto": {"ocr": "deepseek-ocr2"}}}) is None
    assert form.ignored_options_reason(None, {"default": "deepseek"}) is None  # the default engine


def test_passwords_parse_as_one_for_all_or_per_file():
    assert form.parse_passwords("") == (None, {})
    assert form.parse_passwords(" spaced pw ") == (" spaced pw ", {})
    assert form.parse_passwords('{"a.pdf": "x", "b.pdf": ""}') == (None, {"a.pdf": "x"})
    assert form.parse_passwords("{not json") == ("{not json", {})
    assert form.parse_passwords({"a.pdf": "y"}) == (None, {"a.pdf": "y"})


def test_queue_position_in_words():
    """Against gradio's own queue objects (a hand-made copy of their shape would pass after gradio
    renamed them): one job running in the "gpu" group, two sessions queued behind it."""
    import gradio as gr
    from gradio.queueing import Event

    from ocr_app.ui.queue_words import jobs_ahead, queue_words

    with gr.Blocks() as blocks:
        box = gr.Textbox()
        gr.Button().click(lambda t: t, box, box, concurrency_id="gpu", concurrency_limit=1)
    blocks.queue()
    [fn] = blocks.fns.values()
    blocks._queue.create_event_queue_for_fn(fn)  # what gradio does when the first job is pushed
    group = blocks._queue.event_queue_per_concurrency_id["gpu"]
    assert group.queue == [] and group.current_concurrency == 0
    group.queue.extend(Event(session, fn, None, None) for session in ("a", "b"))
    group.current_concurrency = 1  # as gradio counts the job it is running
    assert jobs_ahead(blocks, "a", "gpu") == 1 and jobs_ahead(blocks, "b", "gpu") == 2
    assert jobs_ahead(blocks, "c", "gpu") is None and jobs_ahead(blocks, "a", "other") is None
    assert queue_words(1) == "waiting: 1 job ahead" and queue_words(3) == "waiting: 3 jobs ahead"
    assert queue_words(None) == ""


def test_engine_list_leaves_out_deepseek_without_weights_and_warns_without_gpu():
    describe = {"default": "auto", "engines": {"auto": {"ocr": "light"}}, "unavailable": {"remote": "no URL"}}
    names = ["deepseek", "light", "textlayer", "auto"]
    no_weights = {"deepseek": "no model weights on this machine"}
    choices, notes = status_panel.engine_choices(names, describe, missing=no_weights, has_gpu=False)
    assert [v for _, v in choices] == ["light", "textlayer", "auto"]
    assert any(n.startswith("deepseek: no model weights") for n in notes) and "remote: no URL" in notes
    choices, _ = status_panel.engine_choices(names, describe, missing={}, has_gpu=False)
    assert dict((v, k) for k, v in choices)["deepseek"].endswith("no GPU: slow on the CPU")


# --- the app's wording of encrypted-PDF errors (issue 22, item 7) -------------------------------------
def test_the_app_words_encrypted_pdf_errors_itself_and_the_library_keeps_its_own():
    from ocr_app.exceptions import EncryptedDocumentError
    from ocr_app.schema import DocumentResult
    from ocr_app.ui.form import PASSWORDS_BOX, app_errors, needs_password

    library = "a.pdf is encrypted; pass its password (--password in the CLI)"
    docs = [
        DocumentResult(
            "a.pdf", error=library, error_kind="input", error_type=EncryptedDocumentError.__name__
        ),
        DocumentResult(
            "b.pdf", error="the password given for b.pdf is wrong", error_type="EncryptedDocumentError"
        ),
        DocumentResult("c.pdf", error="c.pdf: cannot be read as a PDF", error_type="CorruptFileError"),
    ]
    a, b, c = app_errors(docs, {"b.pdf": "typo"})
    assert a.error.startswith("a.pdf is encrypted: type its password") and PASSWORDS_BOX in a.error
    assert b.error.startswith("the password typed for b.pdf is wrong") and PASSWORDS_BOX in b.error
    assert c.error == docs[2].error  # other errors stay the library's
    assert docs[0].error == library  # the library's result is not rewritten in place
    assert needs_password(docs) and not needs_password([docs[2]])


def test_the_converter_records_which_error_a_file_failed_with(tmp_path):
    """``DocumentResult.error_type``: what ``form.app_errors`` words its advice from (no string matching)."""
    settings = Settings(engine="textlayer", device="cpu", dpi=36, result_cache_mb=0, cache_dir=tmp_path / "c")
    locked = make_pdf(tmp_path / "locked.pdf", ["# Locked"], password="pw")
    converter = Converter(build_engines(settings), settings)
    (doc,) = converter.convert([locked], tmp_path / "out", ConvertOptions.from_settings(settings))
    assert doc.error and doc.error_type == "EncryptedDocumentError" and doc.error_kind == "input"
    assert "--password" in doc.error  # the library's words (the CLI's) stay as they were
    (ok,) = converter.convert(
        [locked], tmp_path / "out2", ConvertOptions.from_settings(settings, password="pw")
    )
    assert ok.error is None and ok.error_type is None
