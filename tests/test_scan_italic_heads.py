"""Subheads set in italics at body size on a scan (issue 30, round 44).

Reports and papers set their lowest headings in italics at the body's size and weight ("Limitations",
"A. Grading scale"). A scan has no font names; the slant is read from the ink (``ink.slant``: the shear
that stands the strokes upright). The pages are real PDFs, made by PyMuPDF or printed by Chromium from
the probe set, rendered to pixels; the REAL light engine reads them.
"""

from __future__ import annotations

import numpy as np
import pymupdf

from bench.accuracy import sheets
from bench.accuracy.printed import build
from ocr_app.engines.light import LightOcrEngine
from ocr_app.structure import ink
from ocr_app.structure.headings import RowContext, heading_level
from ocr_app.structure.lines import LayoutConfig, Row, TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.test_light_scans import read


def _crop(text: str, font: str) -> np.ndarray:
    """One line of ``text`` in ``font`` at 12 pt, rendered at 144 DPI in grey."""
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=40)
    page.insert_text((10, 26), text, fontsize=12, fontname=font)
    pix = page.get_pixmap(dpi=144, colorspace=pymupdf.csGRAY)
    return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width)


def test_the_slant_of_italic_type_is_read_from_the_ink() -> None:
    for upright, italic in (("helv", "heit"), ("tiro", "tiit")):
        angle, gain = ink.slant(_crop("Limitations and scope", italic))
        assert angle >= ink.ITALIC_SLANT and gain >= ink.ITALIC_GAIN, (italic, angle, gain)
        angle, gain = ink.slant(_crop("Limitations and scope", upright))
        assert abs(angle) < ink.ITALIC_SLANT, (upright, angle, gain)
    crops = [_crop("Limitations", "heit"), _crop("Limitations", "helv"), _crop("A1", "heit")]
    assert ink.italic_flags(crops, ["Limitations", "Limitations", "A1"]) == [True, False, False]


def _line(text: str, italic: bool = True) -> Row:
    return Row([TextLine(text, (100.0, 300.0, 100.0 + 11 * len(text), 322.0), 22.0, italic=italic)])


def test_an_italic_line_standing_alone_at_body_size_is_a_heading() -> None:
    config, alone = LayoutConfig(), RowContext(isolated=True)
    assert heading_level(_line("Limitations"), 22.0, config, None, alone) == 3
    assert heading_level(_line("Limitations"), 22.0, config, None, RowContext()) == 0  # in a run
    assert heading_level(_line("Limitations", italic=False), 22.0, config, None, alone) == 0
    assert heading_level(_line("Table 1: Agreement by element"), 22.0, config, None, alone) == 0
    assert heading_level(_line("and so on"), 22.0, config, None, alone) == 0
    # A manual's caption and code, set in italics (IBM's redbook in docling's set, as a scan).
    assert heading_level(_line("Example 3-9 Creating a mask"), 22.0, config, None, alone) == 0
    assert heading_level(_line("AS <correlation name>"), 22.0, config, None, alone) == 0


def test_italic_subheads_under_bold_heads_on_a_scan(tmp_path) -> None:
    """The probe's report whose sections are bold at body size and subsections italic at body size."""
    build(tmp_path, only=("report-samesize-2",))
    engine = LightOcrEngine()
    engine.load()
    md = blocks_to_markdown(read(engine, sheets.scan(tmp_path / "pdf" / "report-samesize-2.pdf")).blocks)
    heads = {
        ln.lstrip("#").strip(): len(ln) - len(ln.lstrip("#")) for ln in md.splitlines() if ln.startswith("#")
    }
    assert "Costs and funding" in heads and "Limitations" in heads, md
    assert heads["Limitations"] == heads["Costs and funding"] + 1, md
    assert not any(h.startswith(("The pilot", "Staff turnover")) for h in heads), md
