"""A file named like an option never redirects the outputs of ``ocr-app convert *``.

Issue 31: in a folder holding a file named ``--out=DIR``, the shell's wildcard put that name on the
command line and every output went to DIR. The real CLI runs in the folder, with the expansion the shell
would make (sorted names: ``--out=…`` sorts before the PDFs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.factories import make_pdf

ROOT = Path(__file__).resolve().parents[1]


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPSEEK_OCR_")}
    env.update(PYTHONPATH=str(ROOT), DEEPSEEK_OCR_RESULT_CACHE_MB="0")
    cmd = [sys.executable, "-m", "ocr_app.cli", "convert", "-q", "--engine", "textlayer", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=folder, env=env, timeout=300, check=False)


def test_an_option_named_file_is_refused_and_redirects_nothing(tmp_path):
    make_pdf(tmp_path / "a.pdf", ["# A\nText."])
    (tmp_path / "--out=elsewhere").write_bytes(b"")
    (tmp_path / "-o").write_bytes(b"")
    star = sorted(p.name for p in tmp_path.iterdir())  # what `ocr-app convert *` receives
    assert star[0] == "--out=elsewhere"
    refused = _run(tmp_path, *star)
    assert refused.returncode == 2
    assert (
        "'--out=elsewhere' is the name of a file here but looks like an option: put file names after --"
        in (refused.stderr)
    )
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "outputs").exists()
    after = _run(tmp_path, "-o", "out", "--", *star)  # after --, they are file names
    assert not (tmp_path / "elsewhere").exists()
    assert (tmp_path / "out" / "a" / "a.md").is_file()
    assert "--out=elsewhere" in after.stderr  # an empty file: its own error line, not an option
    typed = _run(tmp_path / "out", "--out=typed", "../a.pdf")  # a real option, no such file: still works
    assert typed.returncode == 0 and (tmp_path / "out" / "typed" / "a" / "a.md").is_file()
