"""A batch of many small files overlaps when the engine batches concurrent conversions.

The real DeepSeek engine on the tiny checkpoint with the graph decoder (eager on the CPU) says through
its ``Capabilities`` how many conversions share its decoder; the converter then keeps that many files
in flight. What is checked: files really overlap (their "open" and "done" progress events interleave)
but never more than the engine's count, each document's outputs equal those of a one-after-another run
(the expected values are the library's own), results come back in input order, and the CLI's exit codes
and progress bar are what they were.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import make_pdf

pytest.importorskip("torch")

TEXTS = [f"# File {n}\n\nLine {n} of the batch." for n in range(6)]


def _folder(root: Path) -> Path:
    folder = root / "batch"
    folder.mkdir()
    for n, text in enumerate(TEXTS):
        make_pdf(folder / f"f{n}.pdf", [text] * (1 + n % 2))
    return folder


def _most_open(events) -> int:
    """Files open at once, from the serialized progress events (open ... done / file_error)."""
    now = most = 0
    for e in events:
        if e.stage == "open":
            now += 1
            most = max(most, now)
        elif e.stage in ("done", "file_error"):
            now -= 1
    return most


def test_a_folder_of_small_pdfs_converts_files_side_by_side_within_the_engines_count(
    tiny_checkpoint, tmp_path
):
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(
        model=str(tiny_checkpoint),
        device="cpu",
        engine="deepseek",
        decoder="graph",
        decode_max_slots=3,
        max_new_tokens=8,
        mode="global",
        dpi=72,
        result_cache_mb=0,
        idle_unload_s=0,
    )
    engines = build_engines(settings)
    try:
        assert engines.get("deepseek").capabilities().max_concurrent_jobs == 3  # min(16, decode slots)
        converter = Converter(engines, settings)
        folder = _folder(tmp_path)
        events = []
        overlapped = converter.convert(
            [folder], tmp_path / "side", ConvertOptions.from_settings(settings), events.append
        )
        converter.convert(
            [folder], tmp_path / "serial", ConvertOptions.from_settings(settings, files_at_once=1)
        )
    finally:
        engines.unload_all()
    assert 2 <= _most_open(events) <= 3
    assert [d.source for d in overlapped] == [f"f{n}.pdf" for n in range(6)]  # input order
    assert [len(d.pages) for d in overlapped] == [1 + n % 2 for n in range(6)]
    for n in range(6):
        got = (tmp_path / "side" / f"f{n}" / f"f{n}.md").read_text()
        assert got == (tmp_path / "serial" / f"f{n}" / f"f{n}.md").read_text()
    done = [e.file_index for e in events if e.stage == "done"]
    assert sorted(done) == list(range(6))


def test_an_engine_that_does_not_batch_converts_one_file_after_another(tmp_path):
    """The light CPU engine uses every core per page: its files do not overlap."""
    pytest.importorskip("rapidocr")
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(engine="light", dpi=72, result_cache_mb=0)
    engines = build_engines(settings)
    try:
        assert engines.get("light").capabilities().max_concurrent_jobs == 1
        folder = tmp_path / "two"
        folder.mkdir()
        for n in range(2):
            make_pdf(folder / f"s{n}.pdf", [f"# Scan {n}"])
        events = []
        Converter(engines, settings).convert(
            [folder], tmp_path / "out", ConvertOptions.from_settings(settings, engine="light"), events.append
        )
    finally:
        engines.unload_all()
    assert _most_open(events) == 1


def test_the_cli_over_a_folder_keeps_its_exit_code_and_bar_while_files_overlap(tiny_checkpoint, tmp_path):
    folder = _folder(tmp_path)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is not a PDF")
    root = Path(__file__).resolve().parents[1]  # this checkout's code, not an installed copy
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(root),
        DEEPSEEK_OCR_DECODER="graph",
        DEEPSEEK_OCR_DECODE_MAX_SLOTS="4",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", "convert", str(folder), "-o", str(tmp_path / "out"), "--model", str(tiny_checkpoint),
         "--engine", "deepseek", "--device", "cpu", "--mode", "global", "--max-new-tokens", "6"],
        capture_output=True, text=True, env=env, cwd=root, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr  # a rejected file: exit 2, the others converted
    assert "broken.pdf" in proc.stderr
    for n in range(6):
        assert (tmp_path / "out" / f"f{n}" / f"f{n}.md").is_file()
    assert "7/7 files" in proc.stderr  # one bar over every file; each one counted once, broken included
    assert "9/9" in proc.stderr  # and over every page of the batch (6 files: 1 + 2 + 1 + 2 + 1 + 2)
