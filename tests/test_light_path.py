"""The text-layer path stays light: no torch, no transformers, no model stack, cheap GPU probe.

Each conversion runs in a fresh interpreter, because the test process itself has torch imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from tests.factories import make_pdf

HEAVY = ("torch", "transformers", "huggingface_hub", "gradio", "pymupdf.layout", "pymupdf4llm")


def _run(code: str, tmp_path) -> dict:
    env = dict(os.environ, DEEPSEEK_OCR_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=os.getcwd(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


BODIES = [
    "Quarterly results of a born-digital report: revenue grew in every region.",
    "Costs fell because the new plant opened in March and freight got cheaper.",
    "Outlook: the board expects steady demand and keeps the dividend unchanged.",
]


def _born_digital(tmp_path):
    # distinct text per page: a line repeated on every page is dropped as a running header
    return make_pdf(tmp_path / "born.pdf", BODIES)


@pytest.mark.parametrize("engine", ["textlayer", "auto"])
def test_converter_on_a_born_digital_pdf_imports_no_torch(tmp_path, engine):
    pdf = _born_digital(tmp_path)
    report = _run(
        f"""
        import json, sys
        from ocr_app.convert import Converter, ConvertOptions
        from ocr_app.settings import Settings
        from ocr_app.stack import build_engines

        settings = Settings(engine={engine!r})
        engines = build_engines(settings)
        docs = Converter(engines, settings).convert([{str(pdf)!r}], {str(tmp_path / "out")!r},
                                                    ConvertOptions(formats=frozenset({{"md", "json"}})))
        print(json.dumps({{"loaded": [m for m in {HEAVY!r} if m in sys.modules],
                          "engines": [p.engine for p in docs[0].pages],
                          "text": docs[0].pages[0].blocks[0].text if docs[0].pages[0].blocks else ""}}))
        """,
        tmp_path,
    )
    assert report["loaded"] == []
    assert report["engines"] == ["textlayer"] * 3
    md = (tmp_path / "out" / "born" / "born.md").read_text()
    assert all(body.split(":")[0] in md for body in BODIES)


@pytest.mark.parametrize("engine", ["textlayer", "auto"])
def test_cli_on_a_born_digital_pdf_imports_no_torch(tmp_path, engine):
    pdf = _born_digital(tmp_path)
    argv = ["ocr-app", "convert", str(pdf), "-o", str(tmp_path / "out"), "-q", "--engine", engine]
    report = _run(
        f"""
        import json, runpy, sys
        sys.argv = {argv!r}
        code = 0
        try:
            runpy.run_module("ocr_app.cli", run_name="__main__")
        except SystemExit as exc:
            code = exc.code or 0
        print(json.dumps({{"code": code, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
        """,
        tmp_path,
    )
    assert report == {"code": 0, "loaded": []}
    doc = json.loads((tmp_path / "out" / "born" / "born.json").read_text())
    assert [p["engine"] for p in doc["pages"]] == ["textlayer"] * 3


def test_auto_still_chooses_ocr_for_a_scan_page(tmp_path):
    """Laziness must not lose the OCR side: a page without a text layer goes to the OCR engine."""
    from ocr_app.engines.router import RouterEngine
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines

    engines = build_engines(Settings(engine="auto", model=str(tmp_path / "no-weights")))
    router = engines.get("auto")
    assert isinstance(router, RouterEngine)
    assert router._ocr is None  # not chosen yet: nothing asked for OCR
    info = engines.describe()
    assert info["engines"]["auto"]["ocr"] == "light"
    assert "weights" in info["default_reason"]


class _Nvml:
    def __init__(self, count: int | None):
        self.count = count

    def nvmlInit(self):
        if self.count is None:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlShutdown(self):
        pass


def test_gpu_present_asks_nvml_then_the_driver_never_torch(tmp_path, monkeypatch):
    from ocr_app.runtime import vram

    monkeypatch.setattr(vram, "_torch_if_imported", lambda: None)
    no_proc = str(tmp_path / "missing")
    assert vram.gpu_present(nvml=_Nvml(1), proc_dir=no_proc, environ={}) is True
    assert vram.gpu_present(nvml=_Nvml(0), proc_dir=no_proc, environ={}) is False
    assert vram.gpu_present(nvml=_Nvml(None), proc_dir=no_proc, environ={}) is False
    gpus = tmp_path / "gpus"
    (gpus / "0000:01:00.0").mkdir(parents=True)
    assert vram.gpu_present(nvml=_Nvml(None), proc_dir=str(gpus), environ={}) is True
    # CUDA_VISIBLE_DEVICES="" hides every GPU, whatever the driver says
    assert vram.gpu_present(nvml=_Nvml(1), proc_dir=str(gpus), environ={"CUDA_VISIBLE_DEVICES": ""}) is False
    # once torch is imported its answer is used
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: False))
    monkeypatch.setattr(vram, "_torch_if_imported", lambda: fake_torch)
    assert vram.gpu_present(nvml=_Nvml(1), proc_dir=str(gpus), environ={}) is False


def test_pymupdf_layout_stays_importable_after_the_light_import(tmp_path):
    report = _run(
        """
        import json, sys
        from ocr_app.ingest.pdf import import_pymupdf
        mod = import_pymupdf()
        skipped = "pymupdf.layout" not in sys.modules and "pymupdf4llm" not in sys.modules
        try:
            import pymupdf.layout  # an explicit request still works
            import pymupdf4llm
            later = "pymupdf.layout" in sys.modules and callable(pymupdf4llm.to_markdown)
        except ImportError:  # not installed at all: nothing to check
            later = None
        print(json.dumps({"name": mod.__name__, "skipped": skipped, "later": later}))
        """,
        tmp_path,
    )
    assert report["name"] == "pymupdf"
    assert report["skipped"] is True
    import importlib.util

    # both add-ons are installed here (PyMuPDF 2 and the dev extra's pymupdf4llm): the import is checked
    assert importlib.util.find_spec("pymupdf4llm") and importlib.util.find_spec("pymupdf.layout")
    assert report["later"] is True
