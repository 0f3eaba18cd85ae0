"""The layout model's hard-swish rewrite (``structure/hard_swish.py``): the same arithmetic in fewer
nodes, the real CDLA model's regions unchanged, the rewrite kept in the cache, and every way it can fail
leaving the model as exported."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pymupdf
import pytest
from onnx import TensorProto, helper
from PIL import Image

from ocr_app.structure import hard_swish
from ocr_app.structure import regions as regions_mod


def _const(name: str, value: float):
    return helper.make_node(
        "Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [1], [value])
    )


def _model(*, add: float = 3.0, high: float = 6.0, div: float = 6.0, extra_reader: bool = False) -> bytes:
    """A convolution and the activation PicoDet's export writes after it, ``Div(Mul(x, Clip(Add(x, 3),
    0, 6)), 6)``, with constants as Constant nodes (as paddle2onnx writes them); ``extra_reader``: the
    clip's output is also a graph output, so the pattern's inner node feeds something else."""
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], np.linspace(-1, 1, 108).tolist())
    nodes = [
        helper.make_node("Conv", ["image", "w"], ["x"], pads=[1, 1, 1, 1]),
        _const("three", add),
        _const("zero", 0.0),
        _const("six", high),
        _const("divisor", div),
        helper.make_node("Add", ["x", "three"], ["shifted"]),
        helper.make_node("Clip", ["shifted", "zero", "six"], ["clipped"]),
        helper.make_node("Mul", ["x", "clipped"], ["gated"]),
        helper.make_node("Div", ["gated", "divisor"], ["out"]),
    ]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 16, 16])]
    if extra_reader:
        outputs.append(helper.make_tensor_value_info("clipped", TensorProto.FLOAT, [1, 4, 16, 16]))
    graph = helper.make_graph(
        nodes,
        "hard-swish",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        outputs,
        initializer=[weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def _run(model: bytes, image: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(["out"], {"image": image})[0]


def test_the_rewrite_computes_hard_swish_in_two_nodes() -> None:
    model = _model()
    fused, count = hard_swish.fuse(model)
    assert count == 1
    ops = [n.op_type for n in onnx.load_from_string(fused).graph.node]
    assert ops == ["Conv", "HardSigmoid", "Mul"], ops  # the four nodes and their constants are gone
    onnx.checker.check_model(onnx.load_from_string(fused))
    image = np.random.default_rng(0).normal(0, 2, (1, 3, 16, 16)).astype(np.float32)
    before, after = _run(model, image), _run(fused, image)
    assert (before < -0.1).any() and (before > 3.5).any()  # both bends of the activation are crossed
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs",
    [{"add": 2.0}, {"high": 5.0}, {"div": 5.0}, {"extra_reader": True}],
    ids=["add-2", "clip-to-5", "div-by-5", "inner-node-read-elsewhere"],
)
def test_what_is_not_hard_swish_is_left_alone(kwargs: dict) -> None:
    model = _model(**kwargs)
    assert hard_swish.fuse(model) == (model, 0)


def _page_image() -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((60, 80), "Annual rainfall by station", fontsize=18, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(60, 100, 535, 300), "The stations were read every morning. " * 18)
    for r in range(6):
        for k in range(4):
            page.insert_text((60 + 120 * k, 340 + 18 * r), f"{(r + 1) * (k + 3)}.{k}", fontsize=10)
    pix = page.get_pixmap(dpi=100)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def test_the_real_layout_model_gives_the_same_regions_fused(tmp_path: Path) -> None:
    """The wheel's CDLA model holds the 94 activations, and the rewritten model finds the same regions:
    labels and order alike, boxes within a hundredth of a pixel, scores within 1e-4 (float rounding)."""
    source = regions_mod.model_path()
    assert hard_swish.fuse(source.read_bytes())[1] == 94
    image = _page_image()
    plain = regions_mod.LayoutModel(fuse=False, cache_dir=tmp_path)
    fused = regions_mod.LayoutModel(cache_dir=tmp_path)
    before, after = plain.detect(image), fused.detect(image)
    assert plain.loaded_from == source
    assert fused.loaded_from is not None and fused.loaded_from.parent == tmp_path / "models"
    assert {r.label for r in before} >= {"title", "text"}, before
    assert [r.label for r in after] == [r.label for r in before]
    for a, b in zip(after, before, strict=True):
        assert max(abs(u - v) for u, v in zip(a.box, b.box, strict=True)) < 0.01, (a, b)
        assert abs(a.score - b.score) < 1e-4, (a, b)


def test_the_rewrite_is_made_once_and_read_from_the_cache(tmp_path: Path, monkeypatch) -> None:
    source = regions_mod.model_path()
    first = hard_swish.cached(source, tmp_path)
    assert first is not None and first.is_file() and first.stat().st_mode & 0o644 == 0o644
    assert [p.name for p in (tmp_path / "models").iterdir()] == [first.name]  # no temporary file left

    def no_rewrite(model: bytes) -> tuple[bytes, int]:
        raise AssertionError("rewritten again")

    monkeypatch.setattr(hard_swish, "fuse", no_rewrite)
    assert hard_swish.cached(source, tmp_path) == first
    assert "hard-swish fused: " + str(first) in regions_mod.describe(tmp_path)


def test_a_model_with_nothing_to_rewrite_is_marked_and_run_as_is(tmp_path: Path) -> None:
    source = tmp_path / "plain.onnx"
    source.write_bytes(_model(div=5.0))
    assert hard_swish.cached(source, tmp_path / "cache") is None
    _, marker = hard_swish.cache_names(source, source.read_bytes(), tmp_path / "cache")
    assert marker.is_file()
    assert regions_mod._fused(source, tmp_path / "cache") == source


def test_without_onnx_or_a_writable_cache_the_model_runs_as_exported(
    tmp_path: Path, monkeypatch, caplog: pytest.LogCaptureFixture
) -> None:
    source = regions_mod.model_path()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="ocr_app.structure.regions"):
        assert regions_mod._fused(source, blocked) == source  # cache_dir/models cannot be made
    assert "could not be kept in" in caplog.text
    monkeypatch.setitem(sys.modules, "onnx", None)  # as on a machine without the package
    assert regions_mod._fused(source, tmp_path / "cache") == source
    assert "onnx package is missing" in regions_mod.describe(tmp_path / "cache")
    model = regions_mod.LayoutModel(cache_dir=tmp_path / "cache")
    assert model.detect(_page_image()) and model.loaded_from == source


def test_a_damaged_rewrite_in_the_cache_is_dropped_and_the_model_still_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = regions_mod.model_path()
    target = hard_swish.cached(source, tmp_path)
    assert target is not None
    target.write_bytes(target.read_bytes()[:100_000])  # cut short, as a full disk or a crash leaves it
    model = regions_mod.LayoutModel(cache_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="ocr_app.structure.regions"):
        regions = model.detect(_page_image())
    assert regions and model.loaded_from == source
    assert "is unreadable" in caplog.text and not target.exists()
    assert hard_swish.cached(source, tmp_path) == target and target.stat().st_size > 7_000_000  # made again
