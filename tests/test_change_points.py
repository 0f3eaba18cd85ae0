"""docs/ARCHITECTURE.md's claims, proved: a new resolution mode, a new engine and a new output format are
each added in one place — here, from the test itself — and every front end sees them without further
changes. (The layer-kind quantisation recipe: ``tests/test_quant_recipes.py``.)"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ocr_app.engine_api import Capabilities, Engine
from ocr_app.models.deepseek_ocr2 import modes
from ocr_app.schema import Block, EngineOutput, StopReason
from tests.factories import make_image, make_pdf


class EchoEngine(Engine):
    """A third-party engine: one block per page saying its size (as an HTML table, which its kind says
    to keep), added by the one registration line in ``echo_kind``."""

    name = "echo"
    KIND = Capabilities(name="echo", label="echo of page sizes", keeps_table_html=True, reads_scans=True)

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
        return replace(self.KIND, modes=("echo-mode",))

    def predict_batch(self, requests):
        return [
            EngineOutput(
                engine=self.name,
                raw_text=f"{r.page.size[0]}x{r.page.size[1]}",
                blocks=[
                    Block(
                        label="text",
                        text=f"<table><tr><td>echo {r.page.size[0]}x{r.page.size[1]}</td></tr></table>",
                    )
                ],
                stop_reason=StopReason.END,
                used_mode=r.mode,
            )
            for r in requests
        ]


@pytest.fixture
def echo_kind():
    from ocr_app.choices import register_engine, unregister_engine

    register_engine(EchoEngine.KIND, factory=EchoEngine)  # the one registration line
    yield "echo"
    unregister_engine("echo")


def test_a_new_engine_is_one_registration(echo_kind, tmp_path):
    """Settings and the CLI take its name, the web app offers it with its label and lists it in the
    GPU panel, the converter runs it, and the writer keeps its table HTML because its kind says so."""
    from click.testing import CliRunner

    from ocr_app.cli import main
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines
    from ocr_app.ui import form, status_panel
    from ocr_app.ui.blocks import Choices

    settings = Settings(engine="echo", cache_enabled=False)
    converter = Converter(build_engines(settings), settings)
    assert "echo" in converter.engine_names()
    assert "echo-mode" in converter.capabilities().modes  # the UI's mode dropdown lists it
    choices = Choices.of(converter, settings)
    assert ("echo: echo of page sizes", "echo") in choices.engines and choices.default_engine == "echo"
    assert "- **echo** (default): not loaded" in status_panel.engines_markdown(converter.describe())
    assert form.ignored_options_reason("echo", converter.describe()) is not None  # not prompted

    image = make_image(tmp_path / "scan.png", size=(320, 200))
    opts = ConvertOptions(engine="echo", mode="echo-mode", formats=frozenset({"md", "json"}))
    [doc] = converter.convert([image], tmp_path / "out", opts)
    assert doc.error is None and doc.pages[0].engine == "echo"
    assert "<td>echo 320x200</td>" in doc.outputs["md"].read_text()  # kept: keeps_table_html
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    assert (
        page["blocks"][0]["text"].endswith("echo 320x200</td></tr></table>") and page["mode"] == "echo-mode"
    )

    engine_option = next(p for p in main.commands["convert"].params if p.name == "engine")
    assert "echo" in engine_option.type.choices
    run = CliRunner().invoke(
        main, ["convert", str(image), "-o", str(tmp_path / "cli"), "--engine", "ECHO", "-q"]
    )
    assert run.exit_code == 0, run.output
    assert "<td>echo 320x200</td>" in (tmp_path / "cli" / "scan" / "scan.md").read_text()


def test_a_setting_an_engine_kind_requires_is_checked_by_the_cli_from_its_capabilities(tmp_path):
    """The CLI knows no engine by name: a kind that declares ``requires`` is refused (exit 2, naming the
    variable to set) until the setting is there — as the built-in remote engine without its endpoint."""
    from click.testing import CliRunner

    from ocr_app.choices import register_engine, unregister_engine
    from ocr_app.cli import main

    register_engine(replace(EchoEngine.KIND, name="keyed", requires=(("remote_api_key", "a key"),)),
                    factory=EchoEngine)  # fmt: skip
    image = make_image(tmp_path / "scan.png", size=(320, 200))
    args = ["convert", str(image), "-o", str(tmp_path / "cli"), "--engine", "keyed", "-q"]
    try:
        refused = CliRunner().invoke(main, args, env={"DEEPSEEK_OCR_REMOTE_API_KEY": ""})
        runs = CliRunner().invoke(main, args, env={"DEEPSEEK_OCR_REMOTE_API_KEY": "k"})
    finally:
        unregister_engine("keyed")
    assert (
        refused.exit_code == 2
        and "--engine keyed needs a key: set DEEPSEEK_OCR_REMOTE_API_KEY." in refused.output
    )
    assert runs.exit_code == 0, runs.output


def test_an_unknown_engine_name_is_refused_and_its_html_escaped(tmp_path):
    from ocr_app.choices import engine_kind
    from ocr_app.render.markdown import page_markdown
    from ocr_app.settings import Settings

    with pytest.raises(ValueError, match="Unknown engine 'echo'"):
        Settings(engine="echo")  # not registered here
    kind = engine_kind("echo").capabilities
    assert not kind.keeps_table_html and not kind.prompted
    text, _ = page_markdown([Block(label="text", text="<table><tr><td>x</td></tr></table>")], None, 0, None,
                            keep_table_html=kind.keeps_table_html)  # fmt: skip
    assert "<table>" not in text and "&lt;table>" in text


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

    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.models.deepseek_ocr2.modes import smaller_modes
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
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


@pytest.fixture
def plain_text_format():
    """A "txt" format (the block texts of each page, nothing else), registered for one test."""
    from ocr_app.render.formats import PagedTextFormat, register_format, unregister_format

    class PlainText(PagedTextFormat):
        name = "txt"
        help = "plain text, one line per block"
        download = True
        suffix = ".txt"

        def page_text(self, page):
            return "\n".join(b.text for b in page.blocks)

    register_format(PlainText)
    yield "txt"
    unregister_format("txt")


def test_a_new_output_format_is_one_class(plain_text_format, tmp_path):
    """The converter writes it by default, ``--format`` takes it, the ZIP bundles it, the web app
    offers it for download, and a later run without it removes the stale file."""
    import zipfile

    from click.testing import CliRunner

    from ocr_app.cli import main
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines
    from ocr_app.ui import viewer

    pdf = make_pdf(tmp_path / "memo.pdf", ["Quarterly memo\n\nRevenue grew by nine percent.", "Second page"])
    settings = Settings(engine="textlayer", idle_unload_s=0)
    converter = Converter(build_engines(settings), settings)
    [doc] = converter.convert([pdf], tmp_path / "lib", ConvertOptions())
    txt = doc.outputs["txt"]
    assert txt == tmp_path / "lib" / "memo" / "memo.txt"
    text = txt.read_text()
    assert "<!-- page 1 -->" in text and "Revenue grew by nine percent." in text and "Second page" in text
    assert "#" not in text.replace("<!-- page", "")  # block texts, not the Markdown
    assert str(txt) in viewer.download_paths([doc]) and "txt" in viewer.download_kinds()

    out = tmp_path / "cli"
    run = CliRunner().invoke(
        main, ["convert", str(pdf), "-o", str(out), "--engine", "textlayer", "--format", "txt", "-q"]
    )
    assert run.exit_code == 0, run.output
    assert sorted(f.name for f in (out / "memo").iterdir()) == ["memo.txt"]
    run = CliRunner().invoke(
        main, ["convert", str(pdf), "-o", str(out), "--engine", "textlayer", "--format", "zip", "-q"]
    )
    assert run.exit_code == 0, run.output
    with zipfile.ZipFile(out / "memo" / "memo.zip") as zf:
        assert zf.read("memo.txt").decode() == (out / "memo" / "memo.txt").read_text() == text

    [again] = converter.convert([pdf], tmp_path / "lib", ConvertOptions(formats=frozenset({"md"})))
    assert "txt" not in again.outputs and not txt.exists() and again.outputs["md"].exists()
    bad = CliRunner().invoke(main, ["convert", str(pdf), "-o", str(out), "--format", "docx"])
    assert (
        bad.exit_code == 2
        and "choose from md, mmd, json, overlay, layout_pdf, searchable, xlsx, zip, txt" in bad.output
    )


def test_every_change_point_names_a_test_that_exists():
    """docs/ARCHITECTURE.md's "where to change one thing" tables: every test named in a row's last
    column exists (the file, and the function when one is named)."""
    import re
    from pathlib import Path

    repo = Path(__file__).parents[1]
    text = (repo / "docs" / "ARCHITECTURE.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`tests/" in line]
    named = [
        ref for row in rows for ref in re.findall(r"`(tests/[\w/]+\.py(?:::\w+)?)`", row.rsplit("|", 2)[-2])
    ]
    assert len(named) >= 10
    missing = []
    for ref in named:
        path, _, func = ref.partition("::")
        source = repo / path
        if not source.exists() or (func and not re.search(rf"^def {func}\(", source.read_text(), re.M)):
            missing.append(ref)
    assert missing == []
