"""CI subset of the accuracy benchmark (bench/accuracy): the issue's CER bars on a few pages.

Three generated pages (9, 14 and 12 pt body; headings, lists, tables, two columns) read
by the text layer, one clean and one degraded 144-DPI scan read by the light engine. The full
30-page run and its timings are in docs/ACCURACY.md.
"""

from __future__ import annotations

import statistics

import pytest

from bench.accuracy import generate, metrics
from bench.accuracy.run import BARS
from ocr_app.engines.light import LightOcrEngine
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.pipeline import blocks_to_markdown

SEEDS = [0, 4, 9]  # body 9 pt, 14 pt (two columns), 12 pt; each has headings, a list and a table


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    pdf = tmp_path_factory.mktemp("accuracy") / "born.pdf"
    truths = generate.make_born_digital(pdf, SEEDS)
    renders = [generate.render(pdf, i) for i in range(len(SEEDS))]
    return pdf, truths, renders


def _md(engine, image, pdf=None, index=0) -> str:
    page = PageImage(image=image, index=index, source="bench", dpi=144, pdf_path=pdf)
    out = engine.predict_batch([PageRequest(page=page, prompt="")])[0]
    return blocks_to_markdown(out.blocks)


def test_text_layer_on_born_digital_pages_meets_the_bar(corpus):
    pdf, truths, renders = corpus
    engine = TextLayerEngine()
    cers = []
    for i, truth in enumerate(truths):
        plain = metrics.markdown_to_plain(_md(engine, renders[i], pdf, i))
        cers.append(metrics.cer(truth.plain(), plain))
        assert metrics.reading_order_errors([e.plain() for e in truth.elements], plain) == 0
    assert statistics.fmean(cers) <= BARS[("textlayer", "born")], cers


@pytest.mark.parametrize(("page", "kind"), [(0, "clean"), (1, "degraded")])
def test_light_on_scans_meets_the_bar(corpus, page, kind):
    _, truths, renders = corpus
    scan = generate.simulate_scan(renders[page], SEEDS[page], degraded=kind == "degraded")
    engine = LightOcrEngine()
    try:
        plain = metrics.markdown_to_plain(_md(engine, scan))
    finally:
        engine.unload()
    truth = truths[page]
    assert metrics.cer(truth.plain(), plain) <= BARS[("light", kind)]
    assert metrics.reading_order_errors([e.plain() for e in truth.elements], plain) == 0


def test_metrics_catch_errors():
    """The measures themselves: a wrong word, a swapped block and Markdown syntax."""
    assert metrics.cer("hello world", "hello world") == 0
    assert metrics.cer("abcd", "abcf") == pytest.approx(0.25)
    assert metrics.wer("one two three four", "one two tree four") == pytest.approx(0.25)
    assert (
        metrics.markdown_to_plain("# Title\n\n- a\n1. b\n\n| x | y |\n|---|---|\n| 1 | 2 |")
        == "Title a b x y 1 2"
    )
    blocks = ["first block of words", "second block here", "third and last block"]
    assert metrics.reading_order_errors(blocks, " ".join(blocks)) == 0
    assert metrics.reading_order_errors(blocks, " ".join([blocks[1], blocks[0], blocks[2]])) == 1
    assert metrics.reading_order_errors(blocks, blocks[0]) == 2  # two blocks missing
    assert metrics.heading_recall([(1, "Annual Report")], "# Annual Report\n\ntext") == 1.0
    assert metrics.heading_recall([(1, "Annual Report")], "Annual Report\n\ntext") == 0.0
