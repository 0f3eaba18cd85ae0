"""Nil dashes in tables on scans (issue 30, round 19).

Why: the light engine's text detector drops a lone dash, the "-" a statistical table prints for a
nil value. The cells came out empty, and a row of figures lost the cells that place its values (ICDAR
2013's eu-018, eu-001, us-024 and us-018 print tens of them). ``engines.scan_lines.recover_dashes`` puts
each back as a line of its own: a thin, short bar of ink inside one of the layout model's table boxes,
covered by no read line, level with the middle of a read line of its row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image

from ocr_app.engines.scan_lines import recover_dashes
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.lines import TextLine
from tests.factories import table_rows

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"
TABLE = (0.0, 0.0, 400.0, 200.0)


def _page(bars: list[tuple[int, int, int, int]]) -> np.ndarray:
    grey = np.full((200, 400), 255, dtype=np.uint8)
    for x0, y0, x1, y1 in bars:
        grey[y0:y1, x0:x1] = 40
    return grey


def _row(y: float) -> list[TextLine]:
    return [
        TextLine("Austria", (10.0, y, 80.0, y + 20.0), 14.0),
        TextLine("109", (100.0, y, 130.0, y + 20.0), 14.0),
    ]


def test_a_bar_in_an_empty_cell_level_with_its_row_is_a_dash():
    lines = _row(50.0)
    out = recover_dashes(_page([(200, 60, 205, 61)]), lines, [TABLE])
    (dash,) = out[len(lines) :]
    assert dash.text == "-" and dash.words == ((200.0, 205.0),)
    assert 50.0 <= (dash.box[1] + dash.box[3]) / 2 <= 70.0


def test_a_dash_s_width_says_which_dash_it_is():
    """Against the type's em (14 px here): a hyphen a third of it, an en dash half, an em dash one."""
    lines = _row(50.0)
    widths = {"-": 5, "–": 7, "—": 13}
    for glyph, width in widths.items():
        (dash,) = recover_dashes(_page([(200, 60, 200 + width, 61)]), lines, [TABLE])[len(lines) :]
        assert dash.text == glyph, (glyph, width)


def test_bars_that_are_no_dash_stay_ink():
    lines = _row(50.0)
    bars = [
        (200, 150, 206, 151),  # level with no read line
        (150, 60, 300, 61),  # a rule under a group's head: too wide
        (200, 58, 204, 63),  # a blob, not a bar
        (110, 60, 116, 61),  # under a read line ("109")
    ]
    assert recover_dashes(_page(bars), lines, [TABLE]) == lines
    # outside the layout model's table boxes nothing is looked for
    assert recover_dashes(_page([(200, 60, 206, 61)]), lines, []) == lines


def test_eu_018s_nil_cells_read_from_a_scan(light_engine):
    with pymupdf.open(DATA / "eu-018.pdf") as doc:
        pix = doc[0].get_pixmap(dpi=144, colorspace=pymupdf.csGRAY)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples).convert("RGB")
    out = light_engine.predict_batch(
        [PageRequest(page=PageImage(image=image, index=0, source="eu-018"), prompt="")]
    )[0]
    table = next(b.text for b in out.blocks if b.label == "table" and "Austria" in b.text)
    rows = {r[0]: r for r in table_rows(table)}
    # 2004 and 2003 were not sampled in Austria and Spain: four dashes each
    assert rows["Austria"][-4:] == ["-"] * 4 and rows["Spain"][-4:] == ["-"] * 4, rows
