"""Section titles set bold at the body's size on a scan (issue 30, round 44).

A scan has no fonts, so nothing says what the document's headings look like (the text layer's
``DocStyle``): a bold line was a heading only at 1.15 × the body size or inside the layout model's
title box. Reports set their section titles bold at body size ("SUMMARY", "METHOD" in spaced
capitals), and the model boxes some of them as text. The page is printed by Chromium from the probe
set (``bench/accuracy/printed.py``) and rendered to pixels; the REAL light engine (RapidOCR and the
CDLA layout model) reads it.
"""

from __future__ import annotations

from bench.accuracy import sheets
from bench.accuracy.printed import build
from ocr_app.engines.light import LightOcrEngine
from ocr_app.structure.headings import RowContext, heading_level
from ocr_app.structure.lines import LayoutConfig, Row, TextLine
from ocr_app.structure.pipeline import blocks_to_markdown
from ocr_app.structure.regions import detect_regions, overlap
from tests.test_light_scans import read

BODY = 22.0


def test_bold_section_titles_at_body_size_are_headings_on_a_scan(tmp_path) -> None:
    build(tmp_path, only=("booktabs-grouped-single-centred",))
    image = sheets.scan(tmp_path / "pdf" / "booktabs-grouped-single-centred.pdf")
    engine = LightOcrEngine()
    engine.load()
    out = read(engine, image)
    summary = next(b for b in out.blocks if "SUMMARY" in b.text)
    titles = [r for r in detect_regions(image) if r.label == "title"]
    assert not any(overlap(summary.box, r.box) > 0.3 for r in titles), "the model boxes it as a title now"
    md = blocks_to_markdown(out.blocks)
    headings = [ln.lstrip("#").strip() for ln in md.splitlines() if ln.startswith("#")]
    assert headings[0] == "Bridge Maintenance Programme", md
    for title in ("SUMMARY", "METHOD", "RECOMMENDATIONS"):
        assert title in headings, md
    assert not any(h.startswith(("Water quality", "Maintenance costs")) for h in headings), md


def _bold(text: str) -> Row:
    return Row([TextLine(text, (100.0, 300.0, 100.0 + 11 * len(text), 300.0 + BODY), BODY, bold=True)])


def test_a_bold_line_at_body_size_is_a_heading_only_standing_alone() -> None:
    config = LayoutConfig()
    alone, run_in = RowContext(isolated=True), RowContext(isolated=False)
    assert heading_level(_bold("Progress of the works"), BODY, config, None, alone) == 3
    assert heading_level(_bold("Progress of the works"), BODY, config, None, run_in) == 0  # a lead-in
    assert heading_level(_bold("Table 2: Costs by quarter"), BODY, config, None, alone) == 0  # a caption
    assert heading_level(_bold("the works in detail"), BODY, config, None, alone) == 0  # a line's tail
    off_edge = RowContext(isolated=True, aligned=False)
    assert heading_level(_bold("Progress of the works"), BODY, config, None, off_edge) == 0  # over a column
