"""Every setting is documented, so a user can find each DEEPSEEK_OCR_* variable in one place."""

from __future__ import annotations

from pathlib import Path

from ocr_app.settings import Settings

DOC = Path(__file__).parents[1] / "docs" / "RUNTIME.md"


def test_every_setting_has_a_row_in_runtime_md():
    text = DOC.read_text()
    missing = [f for f in Settings.model_fields if f"`DEEPSEEK_OCR_{f.upper()}`" not in text]
    assert missing == []


def test_readme_links_every_doc():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    docs = sorted(p.name for p in DOC.parent.glob("*.md"))
    assert [d for d in docs if f"docs/{d}" not in readme] == []


def test_every_kernel_option_and_variable_is_documented():
    import dataclasses

    from ocr_app.quant import options

    text = DOC.read_text()
    fields = [f.name for f in dataclasses.fields(options.KernelOptions)]
    assert [f for f in fields if f"`{f}`" not in text] == []
    assert f"`{options.ENV_BACKEND}`" in text and f"`{options.ENV_FAST_LAUNCH}`" in text
