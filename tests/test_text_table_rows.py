"""A table of words only, with wrapped cells (issue 30, rows merged and rows split): a risk register
with top and bottom rules, its description column wrapping onto one to three lines beside one-line
cells. Each row must be one row with its whole description. Real text-layer engine and models, a PDF
built with PyMuPDF in a TrueType face."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

FONTS = Path("/usr/share/fonts/truetype/dejavu")
ROWS = [
    ("Supply", ["Delays from the two main suppliers of", "parts for the assembly line in the", "first half of the year"],
     "Medium", "Operations"),
    ("Staff", ["Loss of key engineers to competitors"], "High", "HR"),
    ("Currency", ["A stronger euro reduces export", "revenue in dollar markets"], "Medium", "Finance"),
    ("Cyber", ["Ransomware attack on the", "production systems"], "Low", "IT"),
]  # fmt: skip


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    return TextLayerEngine()


def _register(path: Path, *, centred: bool) -> Path:
    """The register; ``centred``: each row's one-line cells set at the middle of its description and
    rows a full line apart (a table whose cells are centred vertically), else top-aligned, tight."""
    font = FONTS / "DejaVuSans.ttf"
    bold = FONTS / "DejaVuSans-Bold.ttf"
    if not font.is_file():
        font = bold = None  # base-14 Helvetica: the same layout
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)

    def text(x: float, y: float, s: str, heavy: bool = False) -> None:
        if font is None:
            page.insert_text((x, y), s, fontsize=9, fontname="hebo" if heavy else "helv")
        else:
            page.insert_text(
                (x, y),
                s,
                fontsize=9,
                fontname="dvb" if heavy else "dv",
                fontfile=str(bold if heavy else font),
            )

    text(50, 60, "Table 2. Risk register", True)
    y = 75.0
    page.draw_line((50, y), (545, y), width=0.8)
    y += 14
    for x, head in [(54, "Risk"), (160, "Description"), (400, "Likelihood"), (480, "Owner")]:
        text(x, y, head, True)
    y += 6
    page.draw_line((50, y), (545, y), width=0.4)
    y += 14
    for risk, desc, likelihood, owner in ROWS:
        at = y + (6 * (len(desc) - 1) if centred else 0)
        text(54, at, risk)
        text(400, at, likelihood)
        text(480, at, owner)
        for k, line in enumerate(desc):
            text(160, y + 12 * k, line)
        y += 12 * len(desc) + (16 if centred else 8)
    page.draw_line((50, y - 4), (545, y - 4), width=0.8)
    doc.save(path)
    return path


@pytest.mark.parametrize("centred", [False, True], ids=["top", "centred"])
def test_each_risk_is_one_row_with_its_whole_description(tmp_path, engine, centred):
    pdf = _register(tmp_path / "risk.pdf", centred=centred)
    md = blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, 144, prompt="")])[0].blocks)
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    rows = re.findall(r"<tr>(.*?)</tr>", table)
    assert len(rows) == 1 + len(ROWS), table
    for row, (risk, desc, likelihood, owner) in zip(rows[1:], ROWS, strict=True):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)
        assert cells == [risk, " ".join(desc), likelihood, owner], row
