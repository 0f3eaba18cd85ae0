"""Huge scans are read as overlapping tiles, through the product path, with the real light engine.

A generated 12,000 × 9,000 px scan with known text: one line crosses a horizontal tile border (it must
come out once, whole, from the tile that saw it whole), one line is wider than the overlap and crosses
a vertical border (its two pieces are stitched), two lines lie in the overlap of two tiles (one copy
kept). Large type and sparse text keep RapidOCR quick on the four tiles.
"""

from __future__ import annotations

import json
import re

from PIL import Image, ImageDraw, ImageFont

from ocr_app.convert import Converter, ConvertOptions
from ocr_app.engine_api import Engine
from ocr_app.engines.tiling import plan_tiles, stitch_text, tallest_line
from ocr_app.settings import Settings
from ocr_app.stack import build_engines

W, H, FONT = 12_000, 9_000, 120
TILE = 6200  # 2 × 2 tiles: columns [0, 6200] [5800, 12000], rows [0, 6200] [2800, 9000]
LINES = {
    (600, 500): "NORTH GATE SURVEY 2026",
    (3500, 1000): "LONG HORIZON LINE CROSSES THE VERTICAL BORDER",  # x 3500 → ~6600, across x 5800-6200
    (1000, 6150): "BRIDGE ON THE ROW BORDER",  # y ~6180-6270: cut by row 0's bottom edge at 6200
    (700, 4000): "WEST FIELD NOTES",  # in the overlap of both rows
    (6500, 4500): "CENTRAL PLAZA",  # in the overlap of both rows
    (9000, 8000): "SOUTH EAST MARKER 77",
}


def _norm(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


def _scan(path):
    img = Image.new("RGB", (W, H), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=FONT)
    boxes = {}
    for xy, text in LINES.items():
        draw.text(xy, text, fill="black", font=font)
        boxes[text] = draw.textbbox(xy, text, font=font)
    img.save(path, compress_level=1)
    return boxes


def test_huge_scan_is_tiled_and_every_line_comes_out_once_and_whole(tmp_path):
    boxes = _scan(tmp_path / "survey.png")
    assert boxes["LONG HORIZON LINE CROSSES THE VERTICAL BORDER"][2] > TILE  # really crosses
    assert boxes["BRIDGE ON THE ROW BORDER"][1] < TILE < boxes["BRIDGE ON THE ROW BORDER"][3]
    settings = Settings(engine="light", tile_size=TILE, cache_enabled=False)  # 108 MP: within the default
    engines = build_engines(settings)
    try:
        opts = ConvertOptions(formats=frozenset({"md", "json"}))
        [doc] = Converter(engines, settings).convert([tmp_path / "survey.png"], tmp_path / "out", opts)
    finally:
        engines.unload_all()
    assert doc.error is None and doc.pages[0].error is None
    page = json.loads(doc.outputs["json"].read_text())["pages"][0]
    tiling = page["tiling"]
    assert tiling["grid"] == [2, 2] and tiling["tile_size"] == [TILE, TILE]
    assert tiling["overlap_px"] >= tiling["tallest_line_px"] >= FONT * 0.8
    assert any(n.startswith("tiled: 2×2 tiles") for n in page["notes"])

    texts = [_norm(b["text"]) for b in page["blocks"]]
    md = _norm(page["markdown"])
    for line in LINES.values():
        assert sum(_norm(line) in t for t in texts) == 1, (line, texts)  # once, and whole in one block
        assert md.count(_norm(line)) == 1
    assert len(page["blocks"]) == len(LINES)  # no stray pieces of cut lines
    # boxes are in page pixels: the stitched line spans both tiles
    long_ = next(b for b in page["blocks"] if _norm("VERTICAL BORDER") in _norm(b["text"]))
    x1, y1, x2, y2 = long_["boxes"][0]
    want = boxes["LONG HORIZON LINE CROSSES THE VERTICAL BORDER"]
    assert abs(x1 - want[0]) < 60 and abs(x2 - want[2]) < 60 and y1 < want[3] and y2 > want[1]
    # reading order: top to bottom
    tops = [b["boxes"][0][1] for b in page["blocks"]]
    assert tops == sorted(tops)


def test_small_pages_are_not_tiled_and_the_plan_covers_the_page():
    plan = plan_tiles((12_000, 9_000), 3000, line_height=150, min_overlap=96)
    assert (plan.cols, plan.rows) == (5, 4) and plan.overlap >= 150
    covered = Image.new("1", (12_000, 9_000), 0)
    for box in plan.tiles:
        covered.paste(1, box)
        assert box[2] - box[0] <= 3000 and box[3] - box[1] <= 3000
    assert covered.getextrema() == (1, 1)
    # the tallest line is measured from the ink, not guessed
    img = Image.new("RGB", (5000, 5000), "white")
    ImageDraw.Draw(img).text((100, 100), "Tall", fill="black", font=ImageFont.load_default(size=400))
    ImageDraw.Draw(img).text((100, 2000), "small", fill="black", font=ImageFont.load_default(size=40))
    assert 300 <= tallest_line(img, strip_px=3000) <= 520


def test_stitching_keeps_the_shared_run_once():
    assert stitch_text("The quick brown fox ju", "own fox jumps over") == "The quick brown fox jumps over"
    assert stitch_text("ALPHA", "OMEGA") == "ALPHA OMEGA"


class RectReader(Engine):
    """Stands in for DeepSeek-OCR-2 (no real weights here) on the grounded-text path: it reads the
    tile it is given — each grey rectangle becomes a block whose box is on the model's 0-999 grid of
    the tile — so the wrapper must parse, rescale, shift and merge exactly as for the real model."""

    name = "deepseek-ocr2"

    def __init__(self) -> None:
        self.tiles: list[tuple[int, int]] = []

    def load(self) -> None:
        pass

    def unload(self) -> None:
        pass

    @property
    def is_loaded(self) -> bool:
        return True

    def predict_batch(self, requests):
        return [out for _, out in self.predict_stream(requests)]

    def predict_stream(self, requests):
        import numpy as np

        from ocr_app.models.deepseek_ocr2.grounding import finish_output
        from ocr_app.schema import EngineOutput, StopReason

        for i, req in enumerate(requests):
            grey = np.asarray(req.page.image.convert("L"))
            h, w = grey.shape
            self.tiles.append((w, h))
            parts = []
            for level in sorted(set(np.unique(grey).tolist()) - {255}):
                ys, xs = np.nonzero(grey == level)
                box = [round(xs.min() / w * 999), round(ys.min() / h * 999)]
                box += [round((xs.max() + 1) / w * 999), round((ys.max() + 1) / h * 999)]
                parts.append(f"<|ref|>text<|/ref|><|det|>[{box}]<|/det|>\nRECT {level}")
            out = EngineOutput(engine=self.name, raw_text="\n\n".join(parts), stop_reason=StopReason.END)
            yield i, finish_output(out, w, h)  # as the real engine: blocks parsed in the tile's pixels


def test_grounded_engine_tiles_are_parsed_and_mapped_back_to_page_pixels():
    from ocr_app.engines.tiling import TilingEngine
    from ocr_app.schema import PageImage, PageRequest

    img = Image.new("RGB", (9000, 5000), "white")
    draw = ImageDraw.Draw(img)
    rects = {
        10: (100, 100, 900, 300),
        20: (2500, 1000, 3500, 1100),  # across the vertical border between the first two columns
        30: (4000, 2700, 5000, 2800),  # across a horizontal border
        40: (8000, 4500, 8900, 4900),
    }
    for level, box in rects.items():
        draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=(level,) * 3)
    reader = RectReader()
    engine = TilingEngine(reader, max_side=4000, tile_size=3000)
    page = PageImage(image=img, index=0, source="x.png")
    [out] = engine.predict_batch([PageRequest(page=page, prompt="<image>\n<|grounding|>Convert.")])
    plan = out.tiling
    assert plan["grid"] == [4, 2] and len(reader.tiles) == 8
    assert all(w <= 3000 and h <= 3000 for w, h in reader.tiles)
    got = {int(b.text.split()[1]): b.boxes[0] for b in out.blocks}
    assert sorted(got) == sorted(rects) and len(out.blocks) == len(rects)  # each once
    for level, want in rects.items():  # 0-999 grid of a 3,000 px tile: ±4 px
        assert all(abs(g - w) <= 4 for g, w in zip(got[level], want, strict=True)), (level, got[level])
    assert [int(b.text.split()[1]) for b in out.blocks] == [10, 20, 30, 40]  # reading order
    assert "tile 1 of 8" in out.raw_text


def test_registry_tiles_every_ocr_engine_and_can_turn_it_off(tiny_checkpoint):
    from ocr_app.engines.tiling import TilingEngine

    engines = build_engines(
        Settings(model=str(tiny_checkpoint), remote_url="http://127.0.0.1:9", tile_size=2000)
    )
    for name in ("deepseek", "light", "remote"):
        assert isinstance(engines.get(name), TilingEngine) and engines.get(name).tile_size == 2000
    assert not isinstance(engines.get("textlayer"), TilingEngine)  # a text layer needs no tiles
    assert engines.get("auto").ocr is engines.get("remote")
    plain = build_engines(Settings(model=str(tiny_checkpoint), tile_max_side=0))
    assert not any(isinstance(e, TilingEngine) for e in plain.engines.values())
