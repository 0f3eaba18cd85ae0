"""The converter: bad inputs lose nothing, failing pages become error entries, progress and cancel work."""

from __future__ import annotations

import json
import threading

import fitz
import pytest

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.exceptions import ConversionCancelled, EngineError
from ocr_app.schema import StopReason
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_image, make_pdf

ZERO_PAGE_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\n"
    b"trailer<</Root 1 0 R>>\n%%EOF\n"
)


@pytest.fixture(scope="module")
def settings(tiny_checkpoint):
    return Settings(model=str(tiny_checkpoint), device="cpu", engine="deepseek", idle_unload_s=0)


@pytest.fixture(scope="module")
def converter(settings):
    engines = build_engines(settings)
    yield Converter(engines, settings)
    engines.unload_all()


def _opts(**kw):
    base = {"mode": "global", "max_new_tokens": 6, "formats": frozenset({"md", "json"})}
    base.update(kw)
    return ConvertOptions(**base)


def _bad_inputs(tmp_path):
    """(file, expected message fragment, extra settings) for every kind of bad input."""
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    zero = tmp_path / "zero.pdf"
    zero.write_bytes(ZERO_PAGE_PDF)
    text_as_pdf = tmp_path / "notes.pdf"
    text_as_pdf.write_text("just some plain text, not a PDF at all\n")
    locked = make_pdf(tmp_path / "locked.pdf", ["secret"], password="pw")
    truncated = tmp_path / "cut.png"
    truncated.write_bytes(make_image(tmp_path / "full.png", size=(300, 200)).read_bytes()[:120])
    huge = make_image(tmp_path / "huge.png", size=(1200, 1000))
    many = make_pdf(tmp_path / "many.pdf", ["a", "b", "c"])
    return [
        (corrupt, "corrupt.pdf", {}),
        (empty, "empty", {}),
        (zero, "no pages", {}),
        (text_as_pdf, "notes.pdf", {}),
        (locked, "encrypted", {}),
        (truncated, "cut.png", {}),
        (huge, "pixels", {"max_pixels_per_page": 500_000}),
        (many, "pages", {"max_pages": 2}),
    ]


def test_every_bad_input_has_a_specific_error_and_others_convert(tiny_checkpoint, tmp_path):
    good = make_image(tmp_path / "good.png", text="Good", size=(320, 240))
    messages = set()
    for bad, fragment, extra in _bad_inputs(tmp_path):
        settings = Settings(model=str(tiny_checkpoint), device="cpu", engine="deepseek", **extra)
        engines = build_engines(settings)
        try:
            results = Converter(engines, settings).convert([bad, good], tmp_path / "out", _opts())
        finally:
            engines.unload_all()
        bad_result, good_result = results
        assert bad_result.error is not None, bad.name
        assert fragment.lower() in bad_result.error.lower(), (bad.name, bad_result.error)
        assert bad_result.error_kind == "input"
        assert good_result.error is None and len(good_result.pages) == 1
        assert good_result.pages[0].ok and (tmp_path / "out" / "good" / "good.md").is_file()
        messages.add(bad_result.error)
    assert len(messages) == len(_bad_inputs(tmp_path)), "each bad input should get its own message"


def test_wrong_password_and_right_password(converter, tmp_path):
    locked = make_pdf(tmp_path / "locked.pdf", ["secret page"], password="s3cret")
    [wrong] = converter.convert([locked], tmp_path / "o1", _opts(password="nope"))
    assert wrong.error and "password" in wrong.error.lower()
    [right] = converter.convert([locked], tmp_path / "o2", _opts(password="s3cret"))
    assert right.error is None and len(right.pages) == 1


def test_progress_messages_and_token_cap_flag(converter, tmp_path):
    pdf = make_pdf(tmp_path / "doc.pdf", ["one", "two", "three"])
    events = []
    [doc] = converter.convert([pdf], tmp_path / "o", _opts(max_new_tokens=3), progress=events.append)
    assert [p.index for p in doc.pages] == [0, 1, 2]
    # random tiny weights with a 3-token cap: every page hits the cap, and is kept and flagged
    assert all(p.stop_reason in (StopReason.LENGTH, StopReason.REPETITION) for p in doc.pages)
    assert all(p.status in ("length", "repetition") for p in doc.pages)
    msgs = [e.message for e in events]
    assert "Rendering page 2 of 3" in msgs
    assert any(m.startswith("Recognized page 3") for m in msgs)
    assert [e.done for e in events if e.stage == "page_done"] == [1, 2, 3]
    assert events[-1].stage == "done"
    data = json.loads(doc.outputs["json"].read_text())
    assert [p["status"] for p in data["pages"]] == [p.status for p in doc.pages]


def test_failing_page_becomes_error_entry_while_others_convert(settings, tmp_path):
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine

    class BreaksOnPage2(DeepSeekOcr2Engine):
        """The real engine, except that page 2 fails inside the engine."""

        def predict_stream(self, requests):
            def check(reqs):  # the stream is lazy: page 2 fails when the engine takes it
                for r in reqs:
                    if r.page.index == 1:
                        raise EngineError("simulated decoder failure on page 2")
                    yield r

            yield from super().predict_stream(check(requests))

    engines = build_engines(settings)
    engines.engines["deepseek"] = BreaksOnPage2(settings)
    pdf = make_pdf(tmp_path / "doc.pdf", ["one", "two", "three"])
    try:
        [doc] = Converter(engines, settings).convert([pdf], tmp_path / "o", _opts())
    finally:
        engines.unload_all()
    assert [p.status == "error" for p in doc.pages] == [False, True, False]
    # the neighbours were really recognised (6 tokens of the trained tiny model end inside its first
    # box, so there are no blocks yet: the model's text is the evidence)
    assert doc.pages[0].raw_text.startswith("<|ref|>") and doc.pages[2].raw_text.startswith("<|ref|>")
    assert "simulated decoder failure" in doc.pages[1].error
    assert doc.pages[1].error_kind == "internal"
    md = doc.outputs["md"].read_text()
    assert "page 2" in md.lower()


def test_cancel_keeps_finished_pages(converter, tmp_path):
    pdf = make_pdf(tmp_path / "doc.pdf", ["one", "two", "three", "four"])
    cancel = threading.Event()

    def on_progress(event):
        if event.stage == "page_done":
            cancel.set()

    with pytest.raises(ConversionCancelled) as info:
        converter.convert([pdf], tmp_path / "o", _opts(), progress=on_progress, cancel=cancel)
    partial = info.value.partial
    assert [p.index for p in partial.pages] == [0] and partial.outputs["md"].is_file()
    data = json.loads((tmp_path / "o" / "doc" / "doc.json").read_text())
    assert [p["page_number"] for p in data["pages"]] == [1]


def test_text_layer_engine_reads_born_digital_pdf(tmp_path):
    settings = Settings(engine="textlayer")
    engines = build_engines(settings)
    pdf = make_pdf(tmp_path / "digital.pdf", ["# Heading\n\nThe quick brown fox jumps."])
    [doc] = Converter(engines, settings).convert([pdf], tmp_path / "o", _opts())
    assert doc.pages[0].engine == "textlayer"
    assert "quick brown fox" in doc.outputs["md"].read_text()
    with fitz.open(pdf) as d:
        assert doc.pages[0].width == round(d[0].rect.width * 2)


def test_mislabelled_file_converts_and_says_so(converter, tmp_path):
    png_named_pdf = make_image(tmp_path / "scan.pdf", text="Hi", size=(300, 200), fmt="PNG")
    [doc] = converter.convert([png_named_pdf], tmp_path / "o", _opts())
    assert doc.error is None and len(doc.pages) == 1
    assert any("png" in n.lower() for n in doc.notes)
    data = json.loads(doc.outputs["json"].read_text())
    assert data["notes"] == doc.notes


def test_preload_through_the_router_loads_the_ocr_engine(settings):
    auto = settings.model_copy(update={"engine": "auto"})  # device=cpu forced + weights on disk → deepseek
    engines = build_engines(auto)
    try:
        router, deepseek = engines.get("auto"), engines.get("deepseek")
        assert router.ocr is deepseek
        router.load()
        assert deepseek.describe()["state"] == "not loaded"  # load() alone keeps the model lazy
        router.preload()
        assert deepseek.describe()["state"] == "ready"
    finally:
        engines.unload_all()


def test_options_from_settings_take_known_keywords_and_reject_typos(tmp_path):
    settings = Settings(dpi=200, mode="global", cache_dir=tmp_path)
    opts = ConvertOptions.from_settings(settings, pages="2-3", dpi=None, use_cache=False)
    assert (opts.pages, opts.dpi, opts.mode, opts.use_cache) == ("2-3", 200, "global", False)
    # A misspelt keyword is an error, with or without a value; it never becomes a silent attribute.
    for typo, name in (({"page": "2"}, "'page'"), ({"page": None}, "'page'"), ({"promt": "x"}, "'promt'")):
        with pytest.raises(TypeError, match=name):
            ConvertOptions.from_settings(settings, dpi=150, **typo)
    assert not hasattr(ConvertOptions.from_settings(settings), "page")
