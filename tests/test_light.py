"""The light engine with the real RapidOCR models on generated scans: words, headings, order, boxes."""

from __future__ import annotations

import sys

import pymupdf
import pytest
from PIL import Image

from bench.accuracy import generate, metrics
from bench.accuracy.structure import split_tables
from ocr_app.engines.light import LightOcrEngine, _default_factory
from ocr_app.exceptions import EngineUnavailableError
from ocr_app.schema import PageImage, PageRequest, StopReason
from ocr_app.structure.pipeline import blocks_to_markdown

SEED = 4  # heading, two-column section, table and list on one page


def _request(image: Image.Image) -> PageRequest:
    return PageRequest(page=PageImage(image=image, index=0, source="scan.jpg"), prompt="<image>\nFree OCR.")


@pytest.fixture(scope="module")
def engine():
    calls = []

    def counting_factory(params):
        calls.append(params)
        return _default_factory(params)

    eng = LightOcrEngine(ocr_factory=counting_factory)
    eng.calls = calls
    yield eng
    eng.unload()


@pytest.fixture(scope="module")
def scanned(engine, tmp_path_factory):
    """One clean 144-DPI scan of a generated page, OCR'd once for all tests here."""
    pdf = tmp_path_factory.mktemp("light") / "born.pdf"
    [truth] = generate.make_born_digital(pdf, [SEED])
    scan = generate.simulate_scan(generate.render(pdf, 0), SEED, degraded=False)
    out = engine.predict_batch([_request(scan)])[0]
    return pdf, truth, scan, out


def test_known_words_are_recognised(scanned):
    _, truth, _, out = scanned
    assert truth.two_columns
    md = blocks_to_markdown(out.blocks)
    assert metrics.cer(truth.plain(), metrics.markdown_to_plain(md)) <= 0.03
    assert out.engine == "light" and out.stop_reason == StopReason.NONE
    assert out.timings["total"] >= out.timings["ocr"] > 0


def test_headings_detected_with_levels(scanned):
    _, truth, _, out = scanned
    md = blocks_to_markdown(out.blocks)
    h1 = next(e.text for e in truth.elements if e.kind == "h1")
    assert f"# {h1}" in md.splitlines()
    heads = [(2, e.text) for e in truth.elements if e.kind == "h2"]
    assert heads and metrics.heading_recall(heads, md) == 1.0


def test_two_column_reading_order_and_structure(scanned):
    _, truth, _, out = scanned
    md = blocks_to_markdown(out.blocks)
    plain = metrics.markdown_to_plain(md)
    assert metrics.reading_order_errors([e.plain() for e in truth.elements], plain) == 0
    table = next(e for e in truth.elements if e.kind == "table")
    [table_block] = [b for b in out.blocks if b.label == "table"]
    assert split_tables(table_block.text)[1] == [table.rows]  # an HTML table, like DeepSeek's
    lists = [b for b in out.blocks if b.label == "list"]
    assert lists and all(
        ln.startswith(("- ", "1. ", "2. ", "3. ", "4. ")) for ln in lists[0].text.splitlines()
    )


def test_boxes_land_on_the_text(scanned):
    pdf, truth, scan, out = scanned
    scale = 144 / 72
    checked = 0
    with pymupdf.open(pdf) as doc:
        page = doc[0]
        for el in truth.elements:
            if el.kind not in ("p", "h1", "h2"):
                continue
            # a word that occurs once on the page, so we know where it was drawn
            unique = [w.strip(".,!?") for w in el.text.split() if len(page.search_for(w.strip(".,!?"))) == 1]
            if not unique:
                continue
            word = unique[0]
            hits = page.search_for(word)
            cx = (hits[0].x0 + hits[0].x1) / 2 * scale
            cy = (hits[0].y0 + hits[0].y1) / 2 * scale
            owners = [b for b in out.blocks if word in b.text]
            assert owners, word
            assert any(bx[0] <= cx <= bx[2] and bx[1] <= cy <= bx[3] for b in owners for bx in b.boxes), (
                f"{word!r} at ({cx:.0f}, {cy:.0f}) is in none of its blocks' boxes"
            )
            checked += 1
    assert checked >= 3
    w, h = scan.size
    for b in out.blocks:
        for x1, y1, x2, y2 in b.boxes:
            assert 0 <= x1 < x2 <= w + 2 and 0 <= y1 < y2 <= h + 2


def test_loads_once_and_unload_frees(engine, scanned):
    assert len(engine.calls) == 1  # one RapidOCR object for every page so far
    assert engine.calls[0]["Global.use_cls"] is False
    assert engine.is_loaded
    engine.unload()
    assert not engine.is_loaded
    blank = Image.new("RGB", (600, 400), "white")
    out = engine.predict_batch([_request(blank)])[0]
    assert engine.is_loaded and len(engine.calls) == 2
    assert out.blocks == []


def test_missing_rapidocr_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "rapidocr", None)  # import rapidocr now raises ImportError
    eng = LightOcrEngine()
    with pytest.raises(EngineUnavailableError, match=r"ocr-app\[light\]"):
        eng.load()
    assert not eng.is_loaded


def test_rotated_scan_is_laid_out_deskewed(engine, scanned):
    """A 1.5° rotated page: rows stay rows (no interleaved lines) and boxes stay in page pixels."""
    pdf, truth, _, _ = scanned
    rotated = generate.render(pdf, 0).rotate(-1.5, resample=Image.Resampling.BICUBIC, fillcolor="white")
    out = engine.predict_batch([_request(rotated)])[0]
    [note] = [n for n in out.notes if n.startswith("deskewed")]
    assert float(note.split()[1].rstrip("°")) == pytest.approx(1.5, abs=0.3)
    plain = metrics.markdown_to_plain(blocks_to_markdown(out.blocks))
    assert metrics.cer(truth.plain(), plain) <= 0.03
    assert metrics.reading_order_errors([e.plain() for e in truth.elements], plain) == 0
    w, h = rotated.size
    assert all(0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h for b in out.blocks for x1, y1, x2, y2 in b.boxes)
