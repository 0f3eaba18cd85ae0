"""A full disk or a file-size limit, wherever it strikes, is the same one line and nothing published.

Issue 31: at some sizes the layout PDF (written by MuPDF) failed with "Internal error … FzErrorSystem:
cannot fwrite: No space left on device" and a traceback, while other sizes gave the right line; through
the app the message named the server's folder. Here the real CLI converts a 30-page PDF (every output
format) under a file-size limit (``RLIMIT_FSIZE``, set in the child) and on small tmpfs disks (mounted
in a user namespace), at sizes that fail in different writers: the first Markdown bytes, the overlays,
the layout PDF's incremental saves, the ZIP.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ocr_app.exceptions import OutputError
from ocr_app.render.write_errors import output_error

ROOT = Path(__file__).resolve().parents[1]


def _pdf(path: Path, pages: int = 30) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        page.insert_text((72, 90), f"Chapter {i + 1}", fontsize=18)
        page.insert_text((72, 130), [f"Line {j + 1} of page {i + 1}." for j in range(8)], fontsize=11)
    doc.save(path)
    doc.close()
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_OCR_", "GRADIO_"))}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", DEEPSEEK_OCR_RESULT_CACHE_MB="0")
    return env


def _convert_cmd(pdf: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "ocr_app.cli", "convert", "-q", "--engine", "textlayer", "--no-cache",
            "-o", str(out), "--", str(pdf)]  # fmt: skip


def _assert_one_line(proc: subprocess.CompletedProcess, cause: str, out: Path) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert f"✗ doc.pdf: Cannot write the outputs: {cause}" in proc.stderr.splitlines(), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Internal error" not in proc.stderr, proc.stderr[-3000:]
    assert str(out) not in proc.stderr.replace(f"-o {out}", "")
    assert not out.exists() or sorted(os.listdir(out)) == []  # nothing published, no staging, no lock


@pytest.mark.parametrize("limit", [20_000, 200_000, 1_500_000])
def test_a_file_size_limit_is_one_line_at_every_size(tmp_path, limit):
    pdf = _pdf(tmp_path / "doc.pdf")
    out = tmp_path / "out"

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.run(_convert_cmd(pdf, out), capture_output=True, text=True, env=_env(), timeout=300,
                          preexec_fn=limited, cwd=tmp_path)  # fmt: skip
    _assert_one_line(proc, "File too large", out)


def _namespaces() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-rm", "true"]).returncode == 0


@pytest.mark.skipif(
    not _namespaces(), reason="user namespaces (unshare -rm) are off: the RLIMIT test covers it"
)
@pytest.mark.parametrize("size", ["64k", "5m"])
def test_a_full_disk_is_one_line_at_every_size(tmp_path, size):
    pdf = _pdf(tmp_path / "doc.pdf")
    out = tmp_path / "disk"
    out.mkdir()
    cmd = " ".join(_convert_cmd(pdf, out))
    script = f"mount -t tmpfs -o size={size} tmpfs {out} && {cmd}; rc=$?; ls -A {out}; exit $rc"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, env=_env(),
                          timeout=300, cwd=tmp_path)  # fmt: skip
    assert proc.stdout.strip() == ""  # ls inside the namespace: nothing left on the full disk
    _assert_one_line(proc, "No space left on device", out)


def test_every_writer_s_failure_has_the_same_words_and_no_path():
    """OSError (Python, Pillow, zipfile) and MuPDF's RuntimeError give one message; bugs stay bugs."""
    full = OSError(28, os.strerror(28), "/srv/secret/job-1/doc.md")
    mupdf = RuntimeError("code=2: cannot fwrite: No space left on device")
    assert (
        str(output_error(full))
        == str(output_error(mupdf))
        == "Cannot write the outputs: No space left on device"
    )
    assert (
        str(output_error(RuntimeError("cannot fwrite: File too large")))
        == "Cannot write the outputs: File too large"
    )
    assert output_error(ValueError("a bug")) is None
    same = OutputError("x")
    assert output_error(same) is same


def test_the_app_says_a_full_disk_in_one_line_without_its_folders(tmp_path, monkeypatch):
    """Through the API: a write that fails with ENOSPC (naming a file under the server's folders), and a
    job folder that cannot be made, are the same one line, without any server path."""
    import errno

    gradio_client = pytest.importorskip("gradio_client")
    import ocr_app.render.atomic as atomic
    from ocr_app.settings import Settings
    from tests.factories import make_pdf
    from tests.ui_support import free_port, running_app

    def full_disk(self, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.tmp))

    settings = Settings(engine="textlayer", host="127.0.0.1", port=free_port(), cache_dir=tmp_path / "cache",
                        result_cache_mb=0, dpi=72)  # fmt: skip
    pdf = make_pdf(tmp_path / "doc.pdf", ["# Title\nText."])
    with running_app(settings) as app:
        client = gradio_client.Client(app.url, verbose=False, download_files=False)
        monkeypatch.setattr(atomic.TextSpool, "write", full_disk)
        with pytest.raises(Exception) as failed:
            client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/convert")
        monkeypatch.undo()
        dirs = app.demo.ocr_app.dirs

        def no_folder(*args, **kwargs):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dirs.root / "s" / "job-9"))

        monkeypatch.setattr(dirs, "new_job", no_folder)
        with pytest.raises(Exception) as refused:
            client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/convert")
        roots = [str(app.work_root), str(tmp_path)]
    for message in (str(failed.value), str(refused.value)):
        assert "Cannot write the outputs: No space left on device" in message, message
        assert not any(root in message for root in roots), message
