"""Parser and page Markdown against stored raw DeepSeek-OCR-2 outputs (tests/data/raw), compared exactly.

Each ``NN_name.txt`` is a raw model output in the official grounding format; ``.expected.json`` holds the
page size and the exact blocks, ``.expected.md`` the exact page Markdown (page 0, figures in images/).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from ocr_app.models.deepseek_ocr2.grounding import (
    blocks_from_output,
    clean_raw,
    grid_box_to_pixels,
    normalise_label,
    parse_grounded,
)
from ocr_app.render.markdown import page_markdown
from ocr_app.schema import Block, EngineOutput

RAW_DIR = Path(__file__).parent / "data" / "raw"
CASES = sorted(p.name.removesuffix(".txt") for p in RAW_DIR.glob("*.txt"))
EOS = "<｜end▁of▁sentence｜>"
TAG_RE = re.compile(r"<\|/?(?:ref|det|grounding)\|>|<｜")
SNAKE_RE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")


def _raw(case: str) -> str:
    return (RAW_DIR / f"{case}.txt").read_text(encoding="utf-8")


def _expected(case: str) -> dict:
    return json.loads((RAW_DIR / f"{case}.expected.json").read_text(encoding="utf-8"))


def _as_dicts(blocks: list[Block]) -> list[dict]:
    return [{"label": b.label, "text": b.text, "boxes": [list(x) for x in b.boxes]} for b in blocks]


def test_enough_stored_cases_with_expectations() -> None:
    assert len(CASES) >= 12
    for case in CASES:
        assert (RAW_DIR / f"{case}.expected.json").is_file(), case
        assert (RAW_DIR / f"{case}.expected.md").is_file(), case


@pytest.mark.parametrize("case", CASES)
def test_blocks_match_expected_exactly(case: str) -> None:
    exp = _expected(case)
    blocks = parse_grounded(_raw(case), exp["width"], exp["height"])
    assert _as_dicts(blocks) == exp["blocks"]


@pytest.mark.parametrize("case", CASES)
def test_page_markdown_matches_expected_exactly(case: str, tmp_path: Path) -> None:
    exp = _expected(case)
    blocks = parse_grounded(_raw(case), exp["width"], exp["height"])
    page = Image.new("RGB", (exp["width"], exp["height"]), "white")
    md, figures = page_markdown(blocks, page, 0, tmp_path / "images")
    expected_md = (RAW_DIR / f"{case}.expected.md").read_text(encoding="utf-8").removesuffix("\n")
    assert md == expected_md
    links = re.findall(r"!\[\]\((images/[^)]+)\)", md)
    assert [f"images/{f.name}" for f in figures] == links
    assert all((tmp_path / link).is_file() for link in links)


def test_figures_cropped_per_box_in_order(tmp_path: Path) -> None:
    exp = _expected("05_multi_box")
    blocks = parse_grounded(_raw("05_multi_box"), exp["width"], exp["height"])
    _, figures = page_markdown(blocks, Image.new("RGB", (999, 1998), "white"), 3, tmp_path / "images")
    assert [f.name for f in figures] == ["3_0.jpg", "3_1.jpg"]
    # two panels of 210 x 180 grid units on a 999 x 1998 page → 210 x 360 px
    assert [Image.open(f).size for f in figures] == [(210, 360), (210, 360)]


def test_latex_fixes_and_no_tags_in_markdown() -> None:
    md = (RAW_DIR / "03_formulas.expected.md").read_text(encoding="utf-8")
    assert "\\coloneqq" in _raw("03_formulas") and "\\coloneqq" not in md
    assert ":=" in md and "=:" in md
    for case in CASES:
        md = (RAW_DIR / f"{case}.expected.md").read_text(encoding="utf-8")
        assert not TAG_RE.search(md), case
        assert "\n\n\n" not in md, case


def test_plain_output_is_one_text_block_without_box() -> None:
    blocks = parse_grounded("Hello\n\nworld" + EOS, 100, 100)
    assert blocks == [Block(label="text", text="Hello\n\nworld", boxes=[])]


def test_scaling_uses_the_999_grid_and_the_original_size() -> None:
    raw = "<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999], [333, 111, 666, 222]]<|/det|>\nx"
    (block,) = parse_grounded(raw, 1700, 2200)
    assert block.boxes[0] == (0.0, 0.0, 1700.0, 2200.0)
    assert block.boxes[1] == (round(333 / 999 * 1700, 2), round(111 / 999 * 2200, 2), 1133.33, 488.89)
    assert block.box == (0.0, 0.0, 1700.0, 2200.0)


@pytest.mark.parametrize(
    ("raw_box", "expected"),
    [
        ((10, 20, 30, 40), (10.0, 20.0, 30.0, 40.0)),
        ((30, 40, 10, 20), (10.0, 20.0, 30.0, 40.0)),  # inverted corners ordered
        ((-5, -5, 2000, 2000), (0.0, 0.0, 999.0, 999.0)),  # clamped to the page
        ((10, 20, 10, 40), None),  # zero width
        ((10, 20, 30, 20), None),  # zero height
        ((1000, 0, 1200, 50), None),  # entirely right of the page
    ],
)
def test_grid_box_to_pixels(raw_box: tuple, expected: tuple | None) -> None:
    assert grid_box_to_pixels(raw_box, 999, 999) == expected


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("title", "title"),
        ("Sub Title", "sub_title"),
        ("subTitle", "sub_title"),
        ("page-header", "page_header"),
        ("  TABLE ", "table"),
        ("", "text"),
        ("!!!", "text"),
        ("x" * 100, "x" * 64),
    ],
)
def test_normalise_label(label: str, expected: str) -> None:
    assert normalise_label(label) == expected


def test_clean_raw_strips_special_tokens_and_custom_eos() -> None:
    raw = "<｜begin▁of▁sentence｜>a\r\nb<｜▁pad▁｜></s>" + EOS
    assert clean_raw(raw) == "a\nb</s>"
    assert clean_raw(raw, eos_tokens=(EOS, "</s>")) == "a\nb"


def test_parse_is_idempotent_over_clean_raw() -> None:
    for case in CASES:
        exp = _expected(case)
        raw = _raw(case)
        assert parse_grounded(clean_raw(raw), exp["width"], exp["height"]) == parse_grounded(
            raw, exp["width"], exp["height"]
        )


def _check_invariants(blocks: list[Block], width: int, height: int) -> None:
    for b in blocks:
        assert SNAKE_RE.match(b.label), b.label
        assert not TAG_RE.search(b.text), b.text
        assert b.boxes or b.text, "a block with neither box nor text must be dropped"
        assert b.text == b.text.strip("\n").rstrip()
        for x1, y1, x2, y2 in b.boxes:
            assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height


@pytest.mark.parametrize("case", ["09_malformed_tags", "05_multi_box", "18_garbage"])
def test_every_truncation_parses_within_the_page(case: str) -> None:
    """The token cap can cut the text anywhere: every prefix must parse, with valid boxes and labels."""
    raw = clean_raw(_raw(case))
    for end in range(len(raw) + 1):
        _check_invariants(parse_grounded(raw[:end], 640, 480), 640, 480)


def test_random_garbage_never_raises() -> None:
    import random

    rng = random.Random(1234)
    alphabet = [
        "<|ref|>",
        "<|/ref|>",
        "<|det|>",
        "<|/det|>",
        "[[",
        "]]",
        "[",
        "]",
        ",",
        " ",
        "\n",
        "-3",
        "1e9",
    ]
    alphabet += ["12", "999", "1000", "4.5", "text", "Image", "<table>", "</td>", EOS, "<|grounding|>", "x"]
    for _ in range(300):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        _check_invariants(parse_grounded(raw, 320, 200), 320, 200)


def test_blocks_from_output_prefers_engine_blocks() -> None:
    own = [Block(label="text", text="from the text layer", boxes=[(1.0, 2.0, 3.0, 4.0)])]
    raw = "<|ref|>title<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\n# T"
    assert blocks_from_output(EngineOutput(engine="textlayer", raw_text=raw, blocks=own), 10, 10) == own
    parsed = blocks_from_output(EngineOutput(engine="deepseek-ocr2", raw_text=raw), 10, 10)
    assert parsed == [Block(label="title", text="# T", boxes=[(0.0, 0.0, 10.0, 10.0)])]
