"""Page status a reader can trust: ``empty``, ``low_confidence``, ``repaired`` beside ok/length/repetition/error.

Real PDFs from PyMuPDF, the real text layer and the real light engine (RapidOCR); the CLI runs as a
subprocess. Every case here once converted as "ok" with nothing (or garbage) in its Markdown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pymupdf
import pytest
from PIL import Image

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.render.writer import document_schema
from ocr_app.schema import Block, EngineOutput, PageResult, StopReason, status_counts, status_headline
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from ocr_app.structure.quality import assess, ink_fraction, is_blank
from tests.factories import make_pdf

TEXT = (
    "# Quarterly report\n\n"
    + "The committee reviewed the annual budget and approved the plan for next year. " * 6
    + "\nSecond paragraph with more words about the finance department results."
)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, "-m", "ocr_app.cli", *args], capture_output=True, text=True, env=env, timeout=300
    )


def _scan_pdf(path: Path, images: list[Image.Image]) -> Path:
    """A scan-only PDF: each page is one picture, no text layer."""
    doc = pymupdf.open()
    for im in images:
        page = doc.new_page(width=im.width / 2, height=im.height / 2)  # 144 DPI renders as 72 DPI points
        page.insert_image(page.rect, stream=_png(im), keep_proportion=False)
    doc.save(path)
    doc.close()
    return path


def _png(im: Image.Image) -> bytes:
    import io

    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def _render(pdf: Path, index: int = 0, dpi: int = 144) -> Image.Image:
    with pymupdf.open(pdf) as doc:
        pix = doc[index].get_pixmap(dpi=dpi)
        return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


@pytest.fixture(scope="module")
def light_converter():
    settings = Settings(engine="light", idle_unload_s=0, cache_enabled=False)
    engines = build_engines(settings)
    yield Converter(engines, settings)
    engines.unload_all()


# --- the rule, unit by unit ------------------------------------------------------------------------
def test_blank_detection_on_real_renders(tmp_path):
    pdf = make_pdf(tmp_path / "d.pdf", ["", "One short line."])
    blank, one_line = _render(pdf, 0), _render(pdf, 1)
    assert ink_fraction(blank) == 0.0 and is_blank(blank)
    assert not is_blank(one_line)  # a single short line is still a page with something on it
    grey_scan = Image.new("RGB", (800, 1000), (200, 200, 195))  # a grey, slightly tinted empty scan
    assert is_blank(grey_scan)


def test_status_order_and_headline():
    def page(i, **kw):
        return PageResult(index=i, source="x.pdf", width=10, height=10, **kw)

    pages = [
        page(0),
        page(1, quality="empty", source_repaired=True),
        page(2, source_repaired=True),
        page(3, quality="low_confidence"),
        page(4, stop_reason=StopReason.LENGTH, quality="empty"),  # length outranks empty
        page(5, error="boom", source_repaired=True),
    ]
    assert [p.status for p in pages] == ["ok", "empty", "repaired", "low_confidence", "length", "error"]
    assert status_counts(pages) == {
        "error": 1,
        "length": 1,
        "empty": 1,
        "low_confidence": 1,
        "repaired": 1,
        "ok": 1,
    }
    assert (
        status_headline(pages[:3], repaired_source=True)
        == "3 pages: 1 empty, 1 repaired, 1 ok (repaired source)"
    )
    assert status_headline(pages[:1]) == "1 page: 1 ok"


def test_assess_uses_engine_confidence_and_suspicion():
    text = [Block("text", "some words", [(0, 0, 5, 5)])]
    page = Image.new("RGB", (50, 50), "white")
    assert assess(text, page, EngineOutput("light", confidence=0.97)) == (None, "")
    quality, why = assess(text, page, EngineOutput("light", confidence=0.6), min_confidence=0.8)
    assert quality == "low_confidence" and "0.600 is below 0.8" in why
    quality, why = assess(text, page, EngineOutput("textlayer", suspect="text layer: garbage"))
    assert (quality, why) == ("low_confidence", "text layer: garbage")
    figure_only = [Block("image", "", [(0, 0, 5, 5)])]  # a page that is one picture is not empty
    assert assess(figure_only, page, EngineOutput("deepseek-ocr2"))[0] is None


# --- end to end --------------------------------------------------------------------------------------
def test_truncated_pdf_is_not_all_ok(tmp_path):
    """First 60 % of a real 18-page PDF: the lost pages are 'empty', the rest 'repaired'; exit 3."""
    full = make_pdf(
        tmp_path / "full.pdf", [f"# Page {i + 1}\n\nSome words on page {i + 1}." for i in range(18)]
    )
    data = full.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    out = tmp_path / "out"
    proc = _cli("convert", str(cut), "-o", str(out), "--engine", "textlayer", "-q")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads((out / "cut" / "cut.json").read_text())
    jsonschema.validate(doc, document_schema())
    counts = doc["status_counts"]
    assert doc["source_repaired"] is True and "ok" not in counts
    assert counts.get("empty", 0) >= 1 and counts.get("repaired", 0) >= 1
    assert sum(counts.values()) == 18
    empty = [p for p in doc["pages"] if p["status"] == "empty"]
    assert all(p["status_reason"] == "no text found; the page image is blank" for p in empty)
    assert all(p["markdown"] == "" for p in empty)
    parts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items())
    headline = f"18 pages: {parts} (repaired source)"
    assert headline in proc.stdout
    assert "empty: no text found; the page image is blank" in proc.stderr


def test_scan_only_pdf_through_the_text_layer_is_empty_not_ok(tmp_path):
    scan = _render(make_pdf(tmp_path / "src.pdf", [TEXT]))
    pdf = _scan_pdf(tmp_path / "scan.pdf", [scan, Image.new("RGB", scan.size, "white")])
    out = tmp_path / "out"
    proc = _cli(
        "convert", str(pdf), "-o", str(out), "--engine", "textlayer", "--format", "json", "--json-summary"
    )
    assert proc.returncode == 3, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["files"][0]["status_counts"] == {"empty": 2}
    assert summary["files"][0]["headline"] == "2 pages: 2 empty"
    pages = json.loads((out / "scan" / "scan.json").read_text())["pages"]
    assert "no usable text layer" in pages[0]["status_reason"]  # ink on the page, nothing read
    assert pages[1]["status_reason"] == "no text found; the page image is blank"


def test_born_digital_pdf_stays_ok_with_exit_0(tmp_path):
    pdf = make_pdf(tmp_path / "fine.pdf", [TEXT, TEXT])
    proc = _cli("convert", str(pdf), "-o", str(tmp_path / "out"), "--engine", "textlayer", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "fine.pdf: 2 pages: 2 ok" in proc.stdout


def test_light_engine_pages_turned_and_blank(tmp_path, light_converter):
    """Real RapidOCR: pages turned 180°/90° are read upright (high confidence: ok), a white page is empty."""
    upright = _render(make_pdf(tmp_path / "src.pdf", [TEXT]))
    pages = [
        upright,
        upright.rotate(180),
        upright.rotate(90, expand=True),
        Image.new("RGB", upright.size, "white"),
    ]
    pdf = _scan_pdf(tmp_path / "scan.pdf", pages)
    options = ConvertOptions(formats=frozenset({"json"}), engine="light", dpi=144)
    (doc,) = light_converter.convert([pdf], tmp_path / "out", options)
    statuses = [p.status for p in doc.pages]
    assert statuses == ["ok", "ok", "ok", "empty"], [(p.status, p.confidence) for p in doc.pages]
    assert all(p.confidence > light_converter.settings.min_confidence for p in doc.pages[:3])
    assert doc.pages[3].quality_reason == "no text found; the page image is blank"
    assert doc.headline() == "4 pages: 1 empty, 3 ok"
    data = json.loads(doc.outputs["json"].read_text())
    jsonschema.validate(data, document_schema())
    assert [p["status"] for p in data["pages"]] == statuses
    assert data["pages"][0]["confidence"] == pytest.approx(doc.pages[0].confidence, abs=1e-4)


def test_light_engine_confidence_below_the_setting_is_low_confidence(tmp_path):
    """The threshold is DEEPSEEK_OCR_MIN_CONFIDENCE: above a clean page's score, the page is flagged."""
    pdf = _scan_pdf(tmp_path / "scan.pdf", [_render(make_pdf(tmp_path / "src.pdf", [TEXT]))])
    settings = Settings(engine="light", idle_unload_s=0, cache_enabled=False, min_confidence=0.999)
    engines = build_engines(settings)
    try:
        (doc,) = Converter(engines, settings).convert(
            [pdf], tmp_path / "out", ConvertOptions(formats=frozenset({"json"}), engine="light")
        )
    finally:
        engines.unload_all()
    (page,) = doc.pages
    assert page.status == "low_confidence" and 0.9 < page.confidence < 0.999
    assert f"engine confidence {page.confidence:.3f} is below 0.999" in page.quality_reason
    assert "Quarterly report" in page.markdown  # the text is kept; only its status says "check me"


def test_garbage_text_layer_forced_is_low_confidence(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "\ue000\ue001\ue002 " * 30, fontsize=11)
    doc.save(tmp_path / "g.pdf")
    settings = Settings(engine="textlayer", idle_unload_s=0)
    engines = build_engines(settings)
    (res,) = Converter(engines, settings).convert(
        [tmp_path / "g.pdf"], tmp_path / "out", ConvertOptions(formats=frozenset({"json"}))
    )
    (page,) = res.pages
    assert page.status == "low_confidence"
    assert page.quality_reason.startswith("text layer: embedded text is mostly symbols")
