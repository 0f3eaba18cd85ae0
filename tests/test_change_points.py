"""docs/ARCHITECTURE.md's claims, proved: a new resolution mode and a new engine are each added in one
place — here, from the test itself — and every front end sees them without further changes."""

from __future__ import annotations

import json

import pytest

from ocr_app.engines.base import Capabilities, Engine
from ocr_app.engines.deepseek import modes
from ocr_app.schema import Block, EngineOutput, StopReason
from tests.factories import make_image


class EchoEngine(Engine):
    """A third-party engine: one block per page saying its size, wired in through ``build_engines``."""

    name = "echo"

    def __init__(self, settings) -> None:
        self.settings = settings
        self._loaded = False

    def load(self) -> None:
        self._loaded = True

    def unload(self) -> None:
        self._loaded = False

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def capabilities(self) -> Capabilities:
        return Capabilities(modes=("echo-mode",))

    def predict_batch(self, requests):
        return [
            EngineOutput(
                engine=self.name,
                raw_text=f"{r.page.size[0]}x{r.page.size[1]}",
                blocks=[Block(label="text", text=f"echo {r.page.size[0]}x{r.page.size[1]}")],
                stop_reason=StopReason.END,
            )
            for r in requests
        ]


def test_a_new_engine_is_one_factory(tmp_path):
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines

    settings = Settings(engine="textlayer")
    engines = build_engines(settings, extra={"echo": EchoEngine})
    converter = Converter(engines, settings)
    assert "echo" in converter.engine_names()
    assert "echo-mode" in converter.capabilities().modes  # the UI's mode dropdown lists it
    image = make_image(tmp_path / "scan.png", size=(320, 200))
    opts = ConvertOptions(engine="echo", formats=frozenset({"md", "json"}))
    [doc] = converter.convert([image], tmp_path / "out", opts)
    assert doc.error is None and doc.pages[0].engine == "echo"
    assert "echo 320x200" in doc.outputs["md"].read_text()
    assert json.loads(doc.outputs["json"].read_text())["pages"][0]["blocks"][0]["text"] == "echo 320x200"


@pytest.fixture
def quick_mode():
    """A "quick" mode (global view + at most 3 tiles), registered for one test and removed after."""
    modes.register_mode(
        "quick",
        "1024 px global view + 2–3 tiles of 768 px: faster than default on dense pages.",
        {
            "crop_to_patches": True,
            "min_patches": 2,
            "max_patches": 3,
            "tile_size": 768,
            "size": {"height": 1024, "width": 1024},
        },
    )
    yield "quick"
    modes.MODES.pop("quick")
    modes._FIXED.pop("quick")


def test_a_new_mode_is_one_registration(quick_mode, tiny_checkpoint):
    """The engine runs the new mode through the real processor and model (the engine checks the
    processor's token expansion and the model's feature count against ``vision_tokens``), the UI's
    choices list it and the OOM ladder knows its tile limit."""
    from PIL import Image

    from ocr_app.engines.deepseek.engine import DeepSeekOcr2Engine
    from ocr_app.engines.deepseek.prompts import resolve_prompt
    from ocr_app.runtime.oom import smaller_modes
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.settings import load_settings
    from ocr_app.ui import form

    size = (1600, 900)  # wide: the tiled canvas is 2 × 1 tiles
    spec = modes.resolve_mode("quick", Image.new("RGB", size))
    expected = modes.vision_tokens(spec, size)
    assert expected == 257 + 144 * modes.num_tiles(spec, size) and modes.num_tiles(spec, size) >= 2
    assert modes.tile_limit("quick") == 3 and smaller_modes("quick") == ["default:2", "global"]
    engine = DeepSeekOcr2Engine(load_settings(model=str(tiny_checkpoint), device="cpu", max_new_tokens=3))
    assert "quick" in form.mode_choices(engine.capabilities())
    page = PageImage(image=Image.new("RGB", size, "white"), index=0, source="p.png")
    try:
        out = engine.predict_batch([PageRequest(page=page, prompt=resolve_prompt("free"), mode="quick")])[0]
    finally:
        engine.unload()
    assert out.vision_tokens == expected and out.num_tokens == 3


def test_reserved_mode_names_are_refused():
    from ocr_app.exceptions import ConfigError

    for name in ("auto", "default:3"):
        with pytest.raises(ConfigError, match="reserved"):
            modes.register_mode(name, "x", {})
