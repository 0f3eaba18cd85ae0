"""A batch with one bad file: that file gets its own error, the others convert (Converter level).

Also: an animated GIF says that only its first frame was read (in the document notes and the JSON).
"""

from __future__ import annotations

import json

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_image, make_pdf

# The first bytes of a real HEIC photo (ISO-BMFF 'ftyp' box, brand heic), then filler.
HEIC_BYTES = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 2048


def test_unsupported_heic_in_a_batch_fails_alone(tmp_path):
    pdf = make_pdf(tmp_path / "a.pdf", ["# Alpha\n\nThe first document converts fine."])
    heic = tmp_path / "photo.heic"
    heic.write_bytes(HEIC_BYTES)
    png = make_image(tmp_path / "c.png", "Third file")
    settings = Settings(engine="textlayer", idle_unload_s=0)
    engines = build_engines(settings)
    docs = Converter(engines, settings).convert(
        [pdf, heic, png], tmp_path / "out", ConvertOptions(formats=frozenset({"md", "json"}))
    )
    by_name = {d.source: d for d in docs}
    assert [d.source for d in docs] == ["a.pdf", "photo.heic", "c.png"]
    assert by_name["a.pdf"].error is None and by_name["a.pdf"].pages[0].status == "ok"
    heic_doc = by_name["photo.heic"]
    assert heic_doc.error_kind == "input" and heic_doc.pages == []
    assert "photo.heic is not a PDF or a supported image" in heic_doc.error
    # the PNG went on to its own result (text layer reads no image: a page error, not a batch error)
    assert by_name["c.png"].error is None and len(by_name["c.png"].pages) == 1
    assert (tmp_path / "out" / "a" / "a.md").read_text().count("The first document converts fine.") == 1


def test_animated_webp_notes_that_only_the_first_frame_was_read(tmp_path):
    """A WebP animation is not pages (unlike GIF/TIFF frames): its first frame is read and a note says so."""
    gif = make_image(tmp_path / "anim.webp", "Frame", frames=3)
    settings = Settings(engine="light", idle_unload_s=0, cache_enabled=False)
    engines = build_engines(settings)
    (doc,) = Converter(engines, settings).convert(
        [gif], tmp_path / "out", ConvertOptions(formats=frozenset({"json"}))
    )
    note = "anim.webp is an animation of 3 frames; only the first frame was read"
    assert note in doc.notes and len(doc.pages) == 1
    assert note in json.loads(doc.outputs["json"].read_text())["notes"]


def test_json_records_the_prompt_and_mode_actually_used(tmp_path, tiny_checkpoint):
    """Text layer: prompt and mode do not apply → null plus a note. DeepSeek: what it was given."""
    pdf = make_pdf(tmp_path / "d.pdf", ["# Title\n\nSome born-digital words on the page."])
    asked = {"prompt": "free", "mode": "global"}
    settings = Settings(engine="textlayer", idle_unload_s=0)
    (doc,) = Converter(build_engines(settings), settings).convert(
        [pdf], tmp_path / "tl", ConvertOptions(formats=frozenset({"json"}), **asked)
    )
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    assert (page["engine"], page["prompt"], page["mode"]) == ("textlayer", None, None)
    assert "textlayer: takes no prompt and no resolution mode; both were ignored" in page["notes"]

    settings = Settings(model=str(tiny_checkpoint), device="cpu", engine="deepseek", idle_unload_s=0)
    engines = build_engines(settings)
    try:
        (doc,) = Converter(engines, settings).convert(
            [pdf], tmp_path / "ds", ConvertOptions(formats=frozenset({"json"}), max_new_tokens=2, **asked)
        )
    finally:
        engines.unload_all()
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    assert page["engine"] == "deepseek", page["error"]
    assert (page["prompt"], page["mode"]) == ("<image>\nFree OCR.", "global")


def test_web_app_batch_applies_the_page_range_per_file(tmp_path):
    """The app converts an upload batch file by file; one range still applies to each as far as it goes."""
    import threading

    from ocr_app.ui.jobs import JobOutcome, stream_conversion

    pdf = make_pdf(tmp_path / "report.pdf", ["# One\n\nFirst.", "# Two\n\nSecond.", "# Three\n\nThird."])
    png = make_image(tmp_path / "scan.png", "Hello")
    settings = Settings(engine="light", idle_unload_s=0, cache_enabled=False)
    engines = build_engines(settings)
    options = ConvertOptions(pages="1-2", engine="light", formats=frozenset({"json"}))
    try:
        items = list(
            stream_conversion(
                Converter(engines, settings), [pdf, png], tmp_path / "o", options, threading.Event()
            )
        )
    finally:
        engines.unload_all()
    outcome = items[-1]
    assert isinstance(outcome, JobOutcome)
    report, scan = outcome.documents
    assert [p.index for p in report.pages] == [0, 1] and report.error is None
    assert scan.error is None and [p.index for p in scan.pages] == [0]
    assert any('page range "1-2": the document has 1 page' in n for n in scan.notes)
