"""The light engine's inference plumbing: sessions built once, recognition split over the cores.

Real RapidOCR models on small generated pages; nothing here times anything (speed figures come from
``bench/accuracy/speed.py`` on real pages, docs/ACCURACY.md).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from ocr_app.engines.light import LightOcrEngine, _default_factory
from ocr_app.engines.ocr_threads import split_recognition

LINES = [
    "Invoice 2041 for the spring delivery",
    "Total due",
    "Payment within thirty days of receipt",
    "Bank",
    "Questions go to the accounts office",
    "Thank you for your order",
    "Reference A-77",
    "Printed on recycled paper",
]


def _page() -> Image.Image:
    """A small page of lines of very different widths (the split deals them out by width)."""
    img = Image.new("RGB", (900, 40 + 46 * len(LINES)), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=26)
    for i, text in enumerate(LINES):
        draw.text((30, 20 + 46 * i), text, fill="black", font=font)
    return img


@pytest.fixture(scope="module")
def ocr():
    """One RapidOCR object as the engine builds it (one crop per call, onnxruntime on one thread)."""
    return _default_factory(dict(LightOcrEngine(threads=2)._params))


@contextlib.contextmanager
def _recording(ocr):
    """Note (thread name, crop count) of every recognition call ``ocr`` makes inside the block."""
    calls: list[tuple[str, int]] = []
    original = ocr.recognize_txt

    def recording(crops):
        calls.append((threading.current_thread().name, len(crops)))
        return original(crops)

    ocr.recognize_txt = recording
    try:
        yield calls
    finally:
        ocr.recognize_txt = original


def test_split_recognition_runs_shares_on_threads_and_keeps_the_order(ocr):
    page = np.asarray(_page())
    whole = ocr(page, use_det=True, use_cls=False, use_rec=True)
    assert len(whole.txts) == len(LINES)

    with _recording(ocr) as calls:
        assert split_recognition(ocr, 2) is True
        split = ocr(page, use_det=True, use_cls=False, use_rec=True)
    # two shares of four crops, each read on its own worker thread, none on the caller's
    assert sorted(n for _, n in calls) == [4, 4]
    assert all(name.startswith("light-rec") for name, _ in calls)
    # the merged result is the unsplit one, line for line, in page order
    assert list(split.txts) == list(whole.txts)
    assert np.allclose(split.scores, whole.scores)
    assert np.allclose(np.asarray(split.boxes), np.asarray(whole.boxes))
    assert [t.split()[0] for t in split.txts] == [t.split()[0] for t in LINES]


def test_split_recognition_uses_no_more_threads_than_crop_pairs(ocr):
    """Many cores, few crops: shares of at least two crops (five crops on 16 cores → 2 shares)."""
    page = np.asarray(_page().crop((0, 0, 900, 14 + 46 * 5)))  # the first five lines
    with _recording(ocr) as calls:
        assert split_recognition(ocr, 16) is True
        out = ocr(page, use_det=True, use_cls=False, use_rec=True)
    assert sorted(n for _, n in calls) == [2, 3]
    assert [t.split()[0] for t in out.txts] == [t.split()[0] for t in LINES[:5]]


def test_split_recognition_leaves_single_core_and_foreign_objects_alone(ocr):
    before = ocr.recognize_txt
    assert split_recognition(ocr, 1) is False
    assert ocr.recognize_txt == before
    assert split_recognition(object(), 4) is False  # not RapidOCR 3: runs unchanged


def test_engine_threads_choose_workers_and_onnxruntime_threads():
    two = LightOcrEngine(threads=2)
    assert two._workers == 2
    assert two._params["EngineConfig.onnxruntime.intra_op_num_threads"] == 1
    assert two._params["Rec.rec_batch_num"] == 1
    one = LightOcrEngine(threads=1)
    assert one._workers == 1
    assert one._params["EngineConfig.onnxruntime.intra_op_num_threads"] == 1


def test_sessions_are_built_once_for_a_whole_document(tmp_path, monkeypatch):
    """Three scanned pages through the product path: two onnxruntime sessions (detection and
    recognition) for the whole run, not per page; the pages are still read."""
    import rapidocr.inference_engine.onnxruntime.main as ort_main

    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines
    from tests.factories import make_image

    built: list[str] = []
    real = ort_main.InferenceSession

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, path, *args, **kwargs):
            built.append(str(path))
            super().__init__(path, *args, **kwargs)

    monkeypatch.setattr(ort_main, "InferenceSession", Counting)
    scan = make_image(tmp_path / "scan.tif", text="Hello page", size=(800, 300), frames=3)
    settings = Settings(engine="light")
    converter = Converter(build_engines(settings), settings)
    (doc,) = converter.convert([scan], tmp_path / "out", ConvertOptions(formats=frozenset({"md"})))
    assert doc.error is None
    assert [p.engine for p in doc.pages] == ["light"] * 3
    assert [("Hello" in p.markdown) for p in doc.pages] == [True] * 3
    assert len(built) == 2, built
    assert any("det" in b for b in built) and any("rec" in b for b in built)


def test_detection_runs_on_every_core_and_recognition_on_one_thread_a_share(tmp_path):
    """With two cores the detector's session gets both (it runs while no recognition share does);
    each recognition call keeps one onnxruntime thread (the shares run side by side)."""
    from ocr_app.engines.ocr_threads import detect_on_all_cores
    from tests.factories import make_image

    eng = LightOcrEngine(threads=2)
    eng.load()
    image = Image.open(make_image(tmp_path / "scan.png", text="Hello page", size=(800, 300)))
    eng._ocr(np.asarray(image.convert("RGB")))
    threads = {
        step: getattr(eng._ocr, step).session.session.get_session_options().intra_op_num_threads
        for step in ("text_det", "text_rec")
    }
    assert threads == {"text_det": 2, "text_rec": 1}
    assert not detect_on_all_cores(eng._ocr, 2)  # built already: nothing is rebuilt
    assert not detect_on_all_cores(object(), 2)  # not RapidOCR 3: left alone
    eng.unload()
