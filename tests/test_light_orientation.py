"""The light engine (real RapidOCR) on turned scans and on scripts outside its models (issue 16/15)."""

from __future__ import annotations

import pymupdf
import pytest
from PIL import Image

from bench.accuracy import generate, metrics
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.pipeline import blocks_to_markdown

SEED = 3


@pytest.fixture(scope="module")
def engine(light_engine):
    return light_engine


def _read(engine, image: Image.Image):
    page = PageImage(image=image, index=0, source="scan.png", dpi=generate.SCAN_DPI)
    return engine.predict_batch([PageRequest(page=page, prompt="")])[0]


@pytest.fixture(scope="module")
def upright(tmp_path_factory):
    """A short generated page (the top third of a real generated page, to keep the test fast)."""
    pdf = tmp_path_factory.mktemp("orient") / "born.pdf"
    generate.make_born_digital(pdf, [SEED])
    image = generate.render(pdf, 0)
    return image.crop((0, 0, image.width, image.height // 3))


@pytest.fixture(scope="module")
def upright_out(engine, upright):
    return _read(engine, upright)


@pytest.mark.parametrize("turn", [Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_180])
def test_turned_scan_reads_like_the_upright_one(engine, upright, upright_out, turn):
    want = metrics.markdown_to_plain(blocks_to_markdown(upright_out.blocks))
    assert len(want) > 100
    turned = upright.transpose(turn)
    out = _read(engine, turned)
    got = metrics.markdown_to_plain(blocks_to_markdown(out.blocks))
    assert metrics.cer(want, got) < 0.02
    assert any("page read turned" in n for n in out.notes)
    width, height = turned.size
    for block in out.blocks:
        x0, y0, x1, y1 = block.boxes[0]
        assert 0 <= x0 < x1 <= width + 1 and 0 <= y0 < y1 <= height + 1
    if turn is Image.Transpose.ROTATE_90:  # turned counter-clockwise: the lines run upwards
        first = out.blocks[0].boxes[0]
        assert first[3] - first[1] > first[2] - first[0]


def test_upright_scan_is_not_turned_and_is_confident(upright_out):
    out = upright_out
    assert not any("turned" in n for n in out.notes)
    assert out.confidence is not None and out.confidence > 0.9
    assert not any(n.startswith("low confidence:") for n in out.notes)


def _script_page(text: str, **font) -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=300)
    for i in range(5):
        page.insert_text((40, 60 + 30 * i), text, fontsize=16, **font)
    pix = page.get_pixmap(dpi=generate.SCAN_DPI)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def test_korean_page_is_flagged_low_confidence(engine):
    """The wheel's recognizer reads Latin and Chinese; Korean comes out as wrong Chinese characters,
    which must not pass as a good page."""
    out = _read(engine, _script_page("대한민국 헌법은 국민의 기본권을 보장한다", fontname="korea"))
    assert out.confidence is not None and out.confidence < 0.75
    assert any(n.startswith("low confidence:") for n in out.notes)
