"""Section titles marked only by small capitals or an underline, on a scan (issue 30, round 46).

Reports set section titles at the body's size and weight, marked by small capitals or an underline;
the text layer reads both from its fonts and drawings (``headings._quiet_title_level``). On a scan
OCR reads "Method" in small capitals as "METHOD", measured by its small letters at 0.63 × the body,
and an underline is pixels under the line: both stayed text, and the italic subsections under them
came out a level too high. ``ink.small_caps`` and ``ink.underlined`` read them from the ink.
The reports are printed by Chromium from the probe set (``bench/accuracy/printed.py``) and rendered
to pixels; the REAL light engine (RapidOCR and the CDLA layout model) reads them. The ink measures
are also tested on lines PyMuPDF draws.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pymupdf
import pytest

from bench.accuracy.printed import build
from ocr_app.engines.light import LightOcrEngine
from ocr_app.structure import ink
from ocr_app.structure.headings import RowContext, heading_level, set_strong
from ocr_app.structure.lines import LayoutConfig, Row, TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from ocr_app.structure.scan_levels import HeadingRecord, document_levels
from tests.test_scan_decks import _requests

DPI = 144
SCALE = DPI / 72


def _headings(md: str) -> list[tuple[int, str]]:
    return [
        (len(ln) - len(ln.lstrip("#")), ln.lstrip("# ").strip().lower())
        for ln in md.splitlines()
        if ln.startswith("#")
    ]


@pytest.mark.parametrize("name", ["report-smallcaps-2", "report-underline-2"])
def test_titles_in_small_capitals_or_underlined_are_sections_over_their_italic_subsections(
    name: str, tmp_path: Path
) -> None:
    build(tmp_path, only=(name,))
    truth = dict((t, level) for level, t in _headings((tmp_path / "gt" / f"{name}.md").read_text()))
    engine = LightOcrEngine()
    engine.load()
    with pymupdf.open(tmp_path / "pdf" / f"{name}.pdf") as doc:
        outs = engine.predict_batch(_requests(doc))
    md = "\n\n".join(blocks_to_markdown(o.blocks) for o in outs)
    found = _headings(md)
    sections = [t for t, level in truth.items() if level == 2]
    assert len(sections) >= 3 and all((2, t) in found for t in sections), md
    # Every heading found at the truth's level: the italic subsections one under the sections.
    assert [(level, t) for level, t in found if truth.get(t) != level] == [], md
    assert sum(1 for level, _ in found if level == 3) >= 4, md
    # As written, not as the small capitals show them: "## Results by region", not "## RESULTS BY REGION".
    written = [ln for ln in (tmp_path / "gt" / f"{name}.md").read_text().splitlines() if ln.startswith("## ")]
    assert all(ln in md.splitlines() for ln in written), md


def _line_page(draw) -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    """A page drawn by ``draw(page) -> boxes`` (points), as grey pixels at 144 DPI and the boxes in pixels."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=200)
    boxes = draw(page)
    pix = page.get_pixmap(dpi=DPI, colorspace=pymupdf.csGRAY)
    grey = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width)
    return grey, [tuple(v * SCALE for v in b) for b in boxes]


def _quad(box: tuple[float, float, float, float]) -> np.ndarray:
    x0, y0, x1, y1 = box
    return np.asarray([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


def _crop(grey: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    return ink.line_crop(grey, _quad(box))


def _small_caps(page: pymupdf.Page, y: float, words: tuple[str, ...]) -> float:
    """``words`` set in small capitals at ``y``: capitals 11 pt, the other letters as 8 pt capitals;
    a word in capitals (a Roman numeral) all at 11 pt. The line's right end."""
    x = 20.0
    for word in words:
        tall = len(word) if word.isupper() else 1 if word[0].isupper() else 0
        for part, size in ((word[:tall], 11), (word[tall:].upper(), 8)):
            page.insert_text((x, y), part, fontsize=size, fontname="helv")
            x += pymupdf.get_text_length(part, "helv", size)
        x += 4
    return x


def test_small_capitals_are_told_from_capitals_by_their_first_letters() -> None:
    def draw(page: pymupdf.Page) -> list[tuple[float, float, float, float]]:
        end = _small_caps(page, 40, ("Results", "by", "region"))
        numbered = _small_caps(page, 180, ("IV.", "Results"))
        page.insert_text((20, 90), "RESULTS BY REGION", fontsize=11, fontname="helv")  # capitals
        page.insert_text((20, 140), "COSTS (EUR) BY YEAR", fontsize=8, fontname="helv")  # brackets
        return [(16, 28, end + 4, 46), (16, 78, 160, 96), (16, 128, 140, 146), (16, 168, numbered + 4, 186)]

    grey, boxes = _line_page(draw)
    caps, text = ink.small_caps(_crop(grey, boxes[0]), "RESULTS BY REGION")
    # An 11 pt capital at 144 DPI stands about 16 px; the small capitals about 12 px.
    assert 13 <= caps <= 18, caps
    assert text == "Results by region"  # as written, as the text layer gives it
    assert ink.small_caps(_crop(grey, boxes[1]), "RESULTS BY REGION") == (0.0, "RESULTS BY REGION")
    assert ink.small_caps(_crop(grey, boxes[2]), "COSTS (EUR) BY YEAR") == (0.0, "COSTS (EUR) BY YEAR")
    assert ink.small_caps(_crop(grey, boxes[0]), "Results by region") == (0.0, "Results by region")
    # A section number in Roman numerals stands tall with the first letters (IEEE's "IV. RESULTS").
    caps, text = ink.small_caps(_crop(grey, boxes[3]), "IV. RESULTS")
    assert 13 <= caps <= 18 and text == "IV. Results", (caps, text)


def test_an_underline_is_a_rule_under_the_text_that_stops_with_it() -> None:
    def draw(page: pymupdf.Page) -> list[tuple[float, float, float, float]]:
        for y in (40, 90, 140):
            page.insert_text((20, y), "Costs and funding", fontsize=10, fontname="helv")
        width = pymupdf.get_text_length("Costs and funding", "helv", 10)
        page.draw_line((20, 42), (20 + width, 42), width=0.7)  # underlined
        page.draw_line((20, 92), (380, 92), width=0.7)  # a rule that runs on across the page
        return [(16, 30, 24 + width, 45), (16, 80, 24 + width, 95), (16, 130, 24 + width, 145)]

    grey, boxes = _line_page(draw)
    assert ink.underlined(grey, _quad(boxes[0]))
    assert not ink.underlined(grey, _quad(boxes[1]))
    assert not ink.underlined(grey, _quad(boxes[2]))


def test_small_capitals_and_underlines_rank_with_bold_over_italics() -> None:
    body = 22.0

    def row(**style: object) -> Row:
        return Row([TextLine("Costs and funding", (100.0, 300.0, 300.0, 322.0), 14.0, **style)])

    config, alone = LayoutConfig(), RowContext(isolated=True)
    assert heading_level(row(caps_size=21.0), body, config, None, alone) == 3
    assert heading_level(row(underlined=True), body, config, None, alone) == 3
    assert heading_level(row(), body, config, None, alone) == 0  # plain: text
    assert heading_level(row(caps_size=21.0), body, config, None, RowContext()) == 0  # run in
    assert heading_level(row(caps_size=12.0), body, config, None, alone) == 0  # small capitals, small
    assert set_strong(row(underlined=True).items[0], body)
    assert not set_strong(row(underlined=True, italic=True).items[0], body)  # an italic title's underline
    # In the document's levels: strong titles over the italic ones at body size.
    levels = document_levels([HeadingRecord(1.0, True, "Method"), HeadingRecord(1.0, False, "Scope")], config)
    assert levels.level(HeadingRecord(1.0, True, "Method")) < levels.level(HeadingRecord(1.0, False, "Scope"))


def test_strong_titles_under_the_heading_size_rank_by_size_then_by_capitals() -> None:
    """A report sets its section titles bold at 1.14 × the body (or bold in capitals) and its
    subsections bold at the body's size, all under the light engine's heading size (1.25 ×): they
    came out on one level (the probe's report-colon-2 and report-caps-2 as scans)."""
    config = LayoutConfig(heading_ratio=1.25)
    title = HeadingRecord(1.8, True, "Bridge Maintenance Programme")

    def levels(records: list[HeadingRecord]) -> list[int]:
        found = document_levels([title, *records], config, first_page=1)
        return [found.level(r) for r in records]

    # As measured on the scan: 1.18 × for 12 pt sections over 10.5 pt text.
    sized = [HeadingRecord(1.18, True, "Outlook"), HeadingRecord(1.0, True, "Next steps"),
             HeadingRecord(1.02, True, "Scope"), HeadingRecord(1.17, True, "Background")]  # fmt: skip
    assert levels(sized) == [2, 3, 3, 2]
    capitals = [HeadingRecord(1.0, True, "DATA SOURCES"), HeadingRecord(1.01, True, "Main findings"),
                HeadingRecord(0.98, True, "Costs"), HeadingRecord(1.0, True, "BACKGROUND")]  # fmt: skip
    assert levels(capitals) == [2, 3, 3, 2]
    # One larger title, or one in capitals ("NOTE"), makes no rank of its own.
    assert levels([HeadingRecord(1.18, True, "Outlook"), *sized[1:3]]) == [2, 2, 2]
    assert levels([HeadingRecord(1.0, True, "SUMMARY"), *capitals[1:3]]) == [2, 2, 2]
