"""The trained tiny DeepSeek-OCR-2 through the public paths: it reads its eight pages exactly.

The expected Markdown, labels and boxes come from the page specs (``tiny_pages.PAGES``: what was drawn
where), not from the model or the parser, so every stage between the pixels and the files is checked:
prompt with the real ``<image>`` id, vision encoder, greedy decoding to the real EOS id, decoding with
special tokens kept, grounding parsing, Markdown and JSON writing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.models.deepseek_ocr2.tiny_pages import DPI, PAGES, TinyPage, write_pages
from ocr_app.settings import Settings
from ocr_app.stack import build_engines

pytestmark = pytest.mark.slow  # every page through the converter in five precisions: minutes

FORMATS = frozenset({"md", "json"})


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> list[Path]:
    return write_pages(tmp_path_factory.mktemp("tiny-pages"))


def expected_markdown(page: TinyPage) -> str:
    parts = []
    for block in page.blocks:
        if block.label == "image":
            parts.append("![](images/0_0.jpg)")
        elif block.content:
            parts.append(block.content)
    return "\n\n".join(parts)


def expected_boxes(page: TinyPage) -> list[list[float]]:
    """Drawn rectangles in pixels of the 144 DPI page."""
    return [[v * DPI / 72 for v in block.rect] for block in page.blocks]


def convert(model: Path, paths: list[Path], out: Path, mode: str, **settings) -> list:
    base = {
        "model": str(model),
        "device": "cpu",
        "engine": "deepseek",
        "idle_unload_s": 0,
        "result_cache_mb": 0,
    }
    s = Settings(**{**base, **settings})
    engines = build_engines(s)
    try:
        return Converter(engines, s).convert(paths, out, ConvertOptions(mode=mode, formats=FORMATS))
    finally:
        engines.unload_all()


def by_mode(paths: list[Path]) -> dict[str, list[tuple[TinyPage, Path]]]:
    groups: dict[str, list[tuple[TinyPage, Path]]] = {}
    for spec, path in zip(PAGES, paths, strict=True):
        groups.setdefault(spec.mode, []).append((spec, path))
    return groups


def test_every_page_exact_through_the_converter(trained_checkpoint, pages, tmp_path):
    assert {p.mode for p in PAGES} == {"global", "default"} and len(PAGES) == 8
    for mode, group in by_mode(pages).items():
        results = convert(trained_checkpoint, [p for _, p in group], tmp_path / mode, mode, dtype="fp32")
        for (spec, path), doc in zip(group, results, strict=True):
            assert doc.error is None, doc.error
            [page] = doc.pages
            assert page.stop_reason.value == "end", (spec.name, page.raw_text)
            assert page.raw_text == spec.transcript(), spec.name
            assert page.markdown == expected_markdown(spec), spec.name
            data = json.loads((tmp_path / mode / path.stem / f"{path.stem}.json").read_text())
            [jpage] = data["pages"]
            assert jpage["stop_reason"] == "end" and jpage["status"] == "ok"
            assert jpage["markdown"] == expected_markdown(spec)
            assert [b["label"] for b in jpage["blocks"]] == [b.label for b in spec.blocks]
            for block, want in zip(jpage["blocks"], expected_boxes(spec), strict=True):
                [got] = block["boxes"]
                assert max(abs(g - w) for g, w in zip(got, want, strict=True)) <= 2.0, (spec.name, got, want)
            md = (tmp_path / mode / path.stem / f"{path.stem}.md").read_text()
            assert expected_markdown(spec) in md
            if any(b.label == "image" for b in spec.blocks):
                assert (tmp_path / mode / path.stem / "images" / "0_0.jpg").is_file()


def _raw_texts(model, pages, out, **settings) -> dict[str, str]:
    """Raw text per page name (asserting stop reason ``end``) for the table page (global) and the default one."""
    groups = by_mode(pages)
    chosen = {
        "global": [g for g in groups["global"] if g[0].name == "table"],
        "default": groups["default"],
    }
    texts = {}
    for mode, group in chosen.items():
        for (spec, _), doc in zip(
            group, convert(model, [p for _, p in group], out / mode, mode, **settings), strict=True
        ):
            [page] = doc.pages
            assert page.stop_reason.value == "end", (spec.name, settings, page.raw_text)
            texts[spec.name] = page.raw_text
    return texts


@pytest.mark.parametrize(
    "variant",
    [
        {"dtype": "bf16"},
        {"dtype": "fp16"},
        # the graph decoder loads natively by default; transformers' classes stay covered under it too
        {"dtype": "fp32", "decoder": "graph", "loader": "transformers"},
        {"dtype": "bf16", "decoder": "graph"},
        {"dtype": "fp32", "cache_enabled": False},
    ],
    ids=["bf16", "fp16", "graph-fp32-transformers", "graph-bf16-native", "no-vision-cache"],
)
def test_same_text_in_every_precision_decoder_and_cache_setting(trained_checkpoint, pages, tmp_path, variant):
    texts = _raw_texts(trained_checkpoint, pages, tmp_path, **variant)
    want = {p.name: p.transcript() for p in PAGES if p.name in texts}
    assert texts == want


def test_vision_cache_hit_gives_the_same_text(trained_checkpoint, pages, tmp_path):
    """Two pages with the same pixels in one run: the second one's features come from the cache."""
    [(spec, path)] = [g for g in by_mode(pages)["global"] if g[0].name == "equation"]
    twin = tmp_path / "twin.png"
    twin.write_bytes(path.read_bytes())
    docs = convert(trained_checkpoint, [path, twin], tmp_path / "o", "global", dtype="fp32")
    first, second = (d.pages[0] for d in docs)
    assert first.raw_text == second.raw_text == spec.transcript()
    assert any("vision features from cache" in n for n in second.notes), second.notes


def _guard_bans(ids: list[int], n: int, window: int) -> set[int]:
    """Ids of the transcript that the no-repeat rule (guard module doc) would ban where they occur."""
    banned = set()
    for end in range(n, len(ids) + 1):
        history = ids[max(0, end - 1 - window) : end - 1]
        prefix = tuple(ids[end - n : end - 1])
        for i in range(len(history) - n + 1):
            if tuple(history[i : i + n - 1]) == prefix and history[i + n - 1] == ids[end - 1]:
                banned.add(ids[end - 1])
    return banned


def test_guard_exempts_the_real_td_ids_on_a_table_with_empty_cells(trained_checkpoint, pages, tmp_path):
    """A 7-gram guard would ban ``</td>`` inside the row of empty cells, and nothing else on that page:
    the page still reads exactly only because the engine exempts the tokenizer's ``</td>`` id."""
    from ocr_app.models.deepseek_ocr2.realtok import load_tokenizer

    tok = load_tokenizer()
    [(spec, path)] = [g for g in by_mode(pages)["global"] if g[0].name == "rain-table"]
    ids = tok.encode(spec.transcript(), add_special_tokens=False)
    assert _guard_bans(ids, 7, 90) == {tok.convert_tokens_to_ids("</td>")}  # precondition
    [doc] = convert(
        trained_checkpoint,
        [path],
        tmp_path,
        "global",
        dtype="fp32",
        no_repeat_ngram_size=7,
        no_repeat_window=90,
    )
    assert doc.pages[0].raw_text == spec.transcript() and doc.pages[0].stop_reason.value == "end"
    # and the same guard does change a page whose repeats are not table tags
    [(other, other_path)] = [g for g in by_mode(pages)["global"] if g[0].name == "table"]
    assert _guard_bans(tok.encode(other.transcript(), add_special_tokens=False), 4, 90) - {
        tok.convert_tokens_to_ids("<td>")
    }
    [changed] = convert(
        trained_checkpoint, [other_path], tmp_path / "b", "global", dtype="fp32", no_repeat_ngram_size=4
    )
    assert changed.pages[0].raw_text != other.transcript()
