"""The ``auto`` router with the real text-layer and light engines on real mixed PDFs."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from bench.accuracy import generate
from ocr_app.engines.light import LightOcrEngine
from ocr_app.engines.router import RouterEngine
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.exceptions import ConfigError
from ocr_app.schema import PageImage, PageRequest
from ocr_app.settings import Settings
from ocr_app.structure.pipeline import blocks_to_markdown

REASON = "no GPU and no DeepSeek-OCR-2 weights"
SCAN_WORDS = "Scanned Invoice 2041"


def _scan_image(text: str):
    """A small 144-DPI raster of one line of text: what a scanner gives."""
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=120)
    page.insert_text((30, 60), text, fontsize=18)
    pix = page.get_pixmap(dpi=144)
    from PIL import Image

    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


@pytest.fixture(scope="module")
def mixed_pdf(tmp_path_factory) -> Path:
    """Page 1: born-digital text. Page 2: a scan (image only). Page 3: a scan under an invisible OCR layer."""
    path = tmp_path_factory.mktemp("router") / "mixed.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=120)
    page.insert_text((30, 50), "Born digital page with real embedded text.", fontsize=9)
    scan = _scan_image(SCAN_WORDS)
    for invisible in (False, True):
        page = doc.new_page(width=300, height=120)
        page.insert_image(page.rect, stream=_png(scan))
        if invisible:
            page.insert_text((30, 60), "Wrong Invisible Layer Text", fontsize=18, render_mode=3)
    doc.save(path)
    return path


def _png(image) -> bytes:
    import io

    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def _requests(pdf: Path, indices=(0, 1, 2)) -> list[PageRequest]:
    reqs = []
    for i in indices:
        page = PageImage(image=generate.render(pdf, i), index=i, source=pdf.name, dpi=144, pdf_path=pdf)
        reqs.append(PageRequest(page=page, prompt="<image>\nFree OCR."))
    return reqs


@pytest.fixture(scope="module")
def light():
    eng = LightOcrEngine()
    yield eng
    eng.unload()


def _router(light, policy="auto") -> RouterEngine:
    return RouterEngine(ocr=light, textlayer=TextLayerEngine(), text_layer_policy=policy, reason=REASON)


def test_auto_routes_text_pages_to_text_layer_and_scans_to_ocr(mixed_pdf, light):
    outs = _router(light).predict_batch(_requests(mixed_pdf))
    assert [o.engine for o in outs] == ["textlayer", "light", "light"]
    assert blocks_to_markdown(outs[0].blocks) == "Born digital page with real embedded text."
    assert "textlayer: 36 chars of embedded text" in outs[0].notes  # non-space characters
    assert outs[1].notes[-1] == f"light: {REASON}; text layer not used: no embedded text"
    assert "invisible OCR layer" in outs[2].notes[-1]
    for out in outs[1:]:
        assert blocks_to_markdown(out.blocks) == SCAN_WORDS  # real OCR of the scan, not the hidden text


def test_never_ocrs_every_page(mixed_pdf, light):
    outs = _router(light, "never").predict_batch(_requests(mixed_pdf))
    assert [o.engine for o in outs] == ["light", "light", "light"]
    assert "text_layer=never" in outs[0].notes[-1]
    assert "Born digital page" in blocks_to_markdown(outs[0].blocks)


def test_always_uses_any_text_layer_even_an_invisible_one(mixed_pdf, light):
    outs = _router(light, "always").predict_batch(_requests(mixed_pdf))
    assert [o.engine for o in outs] == ["textlayer", "light", "textlayer"]
    # 18 pt against the document's 9 pt body: a heading by the document-level style (issue 16).
    assert blocks_to_markdown(outs[2].blocks) == "## Wrong Invisible Layer Text"
    assert "text_layer=always" in outs[2].notes[-1]


def test_ocr_engine_loads_only_when_a_page_needs_it(mixed_pdf):
    ocr = LightOcrEngine()
    router = RouterEngine(ocr=ocr, textlayer=TextLayerEngine(), reason=REASON)
    out = router.predict_batch(_requests(mixed_pdf, indices=(0,)))[0]
    assert out.engine == "textlayer"
    assert router.is_loaded and not ocr.is_loaded
    router.unload()
    assert not router.is_loaded and not router.textlayer.is_loaded


def test_stream_yields_every_page_once_with_its_own_output(mixed_pdf, light):
    reqs = _requests(mixed_pdf, indices=(1, 0, 2))
    got = list(_router(light).predict_stream(reqs))
    assert sorted(i for i, _ in got) == [0, 1, 2]
    by_index = dict(got)
    assert by_index[1].engine == "textlayer"  # request 1 is PDF page 0
    assert by_index[0].engine == by_index[2].engine == "light"


def test_images_without_pdf_go_to_ocr(light):
    page = PageImage(image=_scan_image(SCAN_WORDS), index=0, source="photo.png")
    out = _router(light).predict_batch([PageRequest(page=page, prompt="")])[0]
    assert out.engine == "light" and out.notes[-1] == f"light: {REASON}"


def test_unreadable_text_layer_falls_back_to_ocr(tmp_path, light):
    pdf = tmp_path / "gone.pdf"
    doc = pymupdf.open()
    doc.new_page(width=300, height=120).insert_image(
        pymupdf.Rect(0, 0, 300, 120), stream=_png(_scan_image(SCAN_WORDS))
    )
    doc.save(pdf)
    [req] = _requests(pdf, indices=(0,))
    pdf.write_bytes(b"%PDF-1.4 truncated")  # the file changed under us: corrupt now
    out = _router(light).predict_batch([req])[0]
    assert out.engine == "light"
    assert "text layer unreadable" in out.notes[-1]


def test_invalid_policy_is_a_config_error(light):
    with pytest.raises(ConfigError, match="text_layer"):
        RouterEngine(ocr=light, textlayer=None, text_layer_policy="sometimes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("device", "gpu", "weights", "name", "fragment"),
    [
        ("auto", True, True, "deepseek", "GPU"),
        ("auto", False, True, "light", "no GPU"),
        ("cpu", False, True, "deepseek", "device=cpu"),
        ("auto", True, False, "light", "weights not found"),
        ("auto", False, False, "light", "no GPU and no DeepSeek-OCR-2 weights"),
        ("cuda", False, True, "light", "device=cuda was set but no GPU"),
        ("cpu", False, False, "light", "no GPU and no"),
    ],
)
def test_choose_ocr_engine(device, gpu, weights, name, fragment):
    from ocr_app.stack import choose_ocr_engine

    got, why = choose_ocr_engine(Settings(device=device), has_gpu=gpu, weights_available=weights)
    assert got == name
    assert fragment in why


def test_converter_reports_engine_and_reason_per_page(mixed_pdf, tmp_path, monkeypatch):
    """End to end through the registry's ``auto`` engine: the JSON says who did each page and why."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.stack import build_engines

    monkeypatch.setenv("DEEPSEEK_OCR_MODEL", str(tmp_path / "no-weights-here"))
    settings = Settings(engine="auto")
    engines = build_engines(settings)
    try:
        opts = ConvertOptions(mode="global", max_new_tokens=6, formats=frozenset({"md", "json"}))
        [doc] = Converter(engines, settings).convert([mixed_pdf], tmp_path / "o", opts)
    finally:
        engines.unload_all()
    data = json.loads(doc.outputs["json"].read_text())
    pages = data["pages"]
    assert [p["engine"] for p in pages] == ["textlayer", "light", "light"]
    assert pages[0]["engine_reason"] == "36 chars of embedded text"
    assert "text layer not used: no embedded text" in pages[1]["engine_reason"]
    assert SCAN_WORDS in doc.outputs["md"].read_text()


def test_garbage_text_layer_routes_to_ocr(tmp_path, light):
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=120)
    page.insert_image(page.rect, stream=_png(_scan_image(SCAN_WORDS)))
    page.insert_text((30, 100), "".join(chr(c) for c in range(1, 9)) * 5, fontsize=9)  # broken encoding
    doc.save(tmp_path / "garbage.pdf")
    out = _router(light).predict_batch(_requests(tmp_path / "garbage.pdf", indices=(0,)))[0]
    assert out.engine == "light"
    assert "text layer not used: embedded text is garbage" in out.notes[-1]
    assert SCAN_WORDS in blocks_to_markdown(out.blocks)
