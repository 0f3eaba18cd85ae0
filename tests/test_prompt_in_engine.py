"""The DeepSeek wing owns its prompts: the converter passes the user's choice (preset name or text, plus
the locate text) in the page request, the DeepSeek engine resolves it, the JSON records what it sent."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import ClassVar

from click.testing import CliRunner

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.schema import PageImage, PageRequest
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_image
from tests.test_change_points import EchoEngine

LOCATE_TOTAL = "<image>\nLocate <|ref|>Total<|/ref|> in the image."


class RecordingEngine(EchoEngine):
    """Keeps the requests it was given (the converter's side of the contract)."""

    name = "recording"
    seen: ClassVar[list[PageRequest]] = []

    def predict_batch(self, requests):
        type(self).seen.extend(requests)
        return super().predict_batch(requests)


def test_convert_imports_nothing_of_the_deepseek_wing():
    tree = ast.parse(Path("ocr_app/convert.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [m for m in names if m.startswith("ocr_app.models.deepseek_ocr2")], names


def test_the_request_carries_the_choice_not_a_resolved_prompt(tmp_path):
    settings = Settings(engine="textlayer", idle_unload_s=0)
    converter = Converter(build_engines(settings, extra={"recording": RecordingEngine}), settings)
    RecordingEngine.seen = []
    image = make_image(tmp_path / "scan.png", size=(300, 200))
    opts = ConvertOptions(
        engine="recording", prompt="locate", locate_text="Total", formats=frozenset({"json"})
    )
    [doc] = converter.convert([image], tmp_path / "out", opts)
    assert doc.error is None
    [req] = RecordingEngine.seen
    assert (req.prompt, req.locate_text) == ("locate", "Total")


def test_the_deepseek_engine_resolves_the_preset(tmp_path, tiny_checkpoint):
    settings = Settings(model=str(tiny_checkpoint), device="cpu", engine="deepseek", idle_unload_s=0)
    engines = build_engines(settings)
    converter = Converter(engines, settings)
    image = make_image(tmp_path / "scan.png", size=(320, 240))
    try:
        ok = ConvertOptions(
            prompt="locate", locate_text=" Total ", max_new_tokens=2, formats=frozenset({"json"})
        )
        [doc] = converter.convert([image], tmp_path / "ok", ok, progress=None)
        # without the text to find, the engine refuses the page with the wing's own message
        bad = ConvertOptions(prompt="LOCATE", max_new_tokens=2, formats=frozenset({"json"}))
        [failed] = converter.convert([image], tmp_path / "bad", bad)
    finally:
        engines.unload_all()
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    assert page["engine"] == "deepseek" and page["error"] is None
    assert page["prompt"] == LOCATE_TOTAL
    assert json.loads(doc.outputs["json"].read_text())["settings"]["prompt"] == "locate"  # as asked
    [bad_page] = failed.pages
    assert bad_page.stop_reason.value == "error" and "needs the text to find" in bad_page.error


def test_result_cache_keys_on_the_locate_text():
    from PIL import Image

    from ocr_app.runtime.result_cache import ResultCache

    def key(text, index=0, source="p.png"):
        page = PageImage(image=Image.new("RGB", (8, 8), "white"), index=index, source=source)
        return ResultCache.make_key(
            PageRequest(page=page, prompt="locate", locate_text=text), engine="e", fingerprint={}
        )

    assert key("Total") != key("Subtotal")
    assert key("Total") != key(None)  # "locate" without its text is another request
    # the same pixels and text in another file or page is the same request: a hit, not a new entry
    assert key("Total") == key("Total", index=4, source="other.png")


def test_cli_locate_without_text_is_a_usage_error(tmp_path):
    from ocr_app.cli import main

    image = make_image(tmp_path / "scan.png")
    result = CliRunner().invoke(
        main,
        ["convert", str(image), "-o", str(tmp_path / "out"), "--engine", "textlayer", "--prompt", "locate"],
    )
    assert result.exit_code == 2, result.output
    assert "needs the text to find" in result.output and not (tmp_path / "out").exists()
