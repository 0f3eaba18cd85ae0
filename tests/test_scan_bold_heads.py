"""Section titles set bold at the body's size on a scan (issue 30, round 44).

A scan has no fonts, so nothing says what the document's headings look like (the text layer's
``DocStyle``): a bold line was a heading only from 0.95 × the body size or inside the layout model's
title box. Reports set their section titles bold at body size ("SUMMARY", "METHOD" in spaced
capitals, 0.88-0.95 × the body by their capitals' height), and the model boxes some of them as text. The page is printed by Chromium from the probe
set (``bench/accuracy/printed.py``) and rendered to pixels; the REAL light engine (RapidOCR and the
CDLA layout model) reads it.
"""

from __future__ import annotations

from bench.accuracy import sheets
from bench.accuracy.printed import build
from ocr_app.engines.light import LightOcrEngine
from ocr_app.structure.headings import RowContext, heading_level, isolated_rows
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


def _bold(text: str, role: str = "", bold: bool = True) -> Row:
    box = (100.0, 300.0, 100.0 + 11 * len(text), 300.0 + BODY)
    return Row([TextLine(text, box, BODY, bold=bold, role=role)])


def test_a_bold_line_at_body_size_is_a_heading_only_standing_alone() -> None:
    config = LayoutConfig()
    alone, run_in = RowContext(isolated=True), RowContext(isolated=False)
    assert heading_level(_bold("Progress of the works"), BODY, config, None, alone) == 3
    assert heading_level(_bold("Progress of the works"), BODY, config, None, run_in) == 0  # a lead-in
    assert heading_level(_bold("Table 2: Costs by quarter"), BODY, config, None, alone) == 0  # a caption
    assert heading_level(_bold("the works in detail"), BODY, config, None, alone) == 0  # a line's tail
    off_edge = RowContext(isolated=True, aligned=False)
    assert heading_level(_bold("Progress of the works"), BODY, config, None, off_edge) == 0  # over a column


def test_the_models_paragraph_box_over_a_title_standing_alone_does_not_unmake_it() -> None:
    # The model's text box over "RESULTS BY REGION" and its paragraph gave the title the prose role.
    config, alone = LayoutConfig(), RowContext(isolated=True)
    assert heading_level(_bold("RESULTS BY REGION", role="prose"), BODY, config, None, alone) == 3
    assert heading_level(_bold("Results by region", role="prose", bold=False), BODY, config, None, alone) == 0
    assert heading_level(_bold("RESULTS BY REGION", role="prose"), BODY, config, None, RowContext()) == 0


def test_on_a_scan_a_blank_line_is_measured_over_the_paragraphs_own_line_gap() -> None:
    # Boxes as the OCR gave them on the probe's word-labelled-wide-centred: padded, so the title's
    # blank line below measures 19 px at a size of 22 px, and a paragraph's lines overlap by 2 px.
    def line(text: str, y0: float, y1: float) -> Row:
        return Row([TextLine(text, (108.0, y0, 108.0 + 11 * len(text), y1), 22.2)])

    title = line("BACKGROUND", 203, 233)
    units = [line("Freight and Logistics Report", 136, 179), title, line("Maintenance costs", 252, 283)]
    units.append(line("must be replaced.", 281, 311))
    config = LayoutConfig()
    assert id(title) not in isolated_rows(units, config)  # a blank line of a full size between boxes
    assert id(title) in isolated_rows(units, config, line_gap=-2.0)
    assert id(units[2]) not in isolated_rows(units, config, line_gap=-2.0)


def test_a_centred_line_standing_alone_is_a_heading_an_equation_is_not() -> None:
    config = LayoutConfig()
    centred = RowContext(isolated=True, centred=True)
    small_caps = Row([TextLine("I. INTRODUCTION", (500.0, 300.0, 640.0, 313.0), 12.5)])
    assert heading_level(small_caps, 18.1, config, None, centred) == 3  # small capitals, 0.69 × body
    assert heading_level(small_caps, 18.1, config, None, RowContext(isolated=True)) == 0  # at the edge
    assert heading_level(small_caps, 18.1, config, None, RowContext(centred=True)) == 0  # in a run
    authors = Row([TextLine("Okafor, N., Lindqvist, M.", (494.0, 203.0, 700.0, 225.0), 18.0)])
    assert heading_level(authors, 18.1, config, None, centred) == 0
    equation = Row([TextLine("x = 2y + 3 (4)", (500.0, 300.0, 640.0, 318.0), 18.0)])
    assert heading_level(equation, 18.1, config, None, centred) == 0


def test_a_papers_section_titles_in_centred_small_capitals_are_headings_on_a_scan(tmp_path) -> None:
    """The probe's IEEE-style paper printed by Chromium: "I. Introduction" set centred in small
    capitals, no bolder than the text, which the layout model does not box as a title."""
    build(tmp_path, only=("paper-ieee-one",))
    engine = LightOcrEngine()
    engine.load()
    md = blocks_to_markdown(read(engine, sheets.scan(tmp_path / "pdf" / "paper-ieee-one.pdf")).blocks)
    headings = [ln.lstrip("#").strip().upper() for ln in md.splitlines() if ln.startswith("#")]
    for title in ("ABSTRACT", "I. INTRODUCTION", "II. RELATED WORK", "III. DATA AND METHOD", "IV. RESULTS"):
        assert title in headings, md
    assert not any("OKAFOR" in h for h in headings), md


def test_a_plain_line_a_size_larger_standing_alone_is_a_heading_on_a_scan() -> None:
    """A report's section titles a size up in another face, not bold ("Outlook" at 1.18 × the body on
    the probe's report-otherface-2). A scan's sizes spread by ±5 %: from 1.12 × only, and only where the
    engine asks for it (the light engine's ``plain_alone_ratio``)."""
    config, alone = LightOcrEngine()._layout, RowContext(isolated=True)

    def plain(text: str, ratio: float, role: str = "") -> Row:
        return Row(
            [
                TextLine(
                    text,
                    (100.0, 300.0, 100.0 + 11 * len(text), 300.0 + BODY * ratio),
                    BODY * ratio,
                    role=role,
                )
            ]
        )

    assert heading_level(plain("Outlook", 1.18), BODY, config, None, alone) == 3
    assert heading_level(plain("Limitations", 1.18, role="prose"), BODY, config, None, alone) == 3
    assert heading_level(plain("Outlook", 1.06), BODY, config, None, alone) == 0  # within the spread
    assert heading_level(plain("Outlook", 1.18), BODY, config, None, RowContext()) == 0  # in a run
    assert (
        heading_level(plain("Outlook", 1.18), BODY, config, None, RowContext(isolated=True, aligned=False))
        == 0
    )
    assert heading_level(plain("Costs rose.", 1.18), BODY, config, None, alone) == 0  # a sentence
    assert heading_level(plain("1,204 / 2,310", 1.18), BODY, config, None, alone) == 0  # figures
    assert heading_level(plain("and the rest", 1.18), BODY, config, None, alone) == 0  # a line's tail
    assert heading_level(plain("Outlook", 1.18), BODY, LayoutConfig(), None, alone) == 0  # not asked for


def test_a_reports_section_titles_a_size_up_in_another_face_are_headings_on_a_scan(tmp_path) -> None:
    build(tmp_path, only=("report-otherface-2",))
    engine = LightOcrEngine()
    engine.load()
    md = blocks_to_markdown(read(engine, sheets.scan(tmp_path / "pdf" / "report-otherface-2.pdf")).blocks)
    headings = [ln.lstrip("#").strip() for ln in md.splitlines() if ln.startswith("#")]
    assert headings[:3] == ["Annual Review of Regional Services", "Results by region", "Outlook"], md


def test_a_bold_heading_in_a_dark_colour_is_bold_and_regular_coloured_text_is_not() -> None:
    """A report's subsection titles bold in dark blue at the body's size (the probe's report-caps-2:
    "Main findings", "Costs"): measured at the black text's ink level their strokes lost their edges
    and came out regular (1.17-1.20 × the body's stroke, bold from 1.25 ×)."""
    import pymupdf

    from ocr_app.schema import PageImage, PageRequest
    from tests.test_light_scans import DPI, scan_page

    blue = (0.12, 0.23, 0.37)
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 80
    for text, font, color in (
        ("Main findings", "hebo", blue),
        (BODY_TEXT, "helv", (0, 0, 0)),
        ("Next steps", "hebo", blue),
        (BODY_TEXT, "helv", (0, 0, 0)),
        ("Regional office notes", "helv", blue),
        (BODY_TEXT, "helv", (0, 0, 0)),
    ):
        page.insert_text((60, y), text, fontsize=10, fontname=font, color=color)
        y += 40
    engine = LightOcrEngine(regions=False)
    engine.load()
    image = scan_page(doc, 0)
    lines = engine._scan(
        PageRequest(page=PageImage(image=image, index=0, source="s.png", dpi=DPI), prompt="")
    ).lines
    bold = {ln.text: ln.bold for ln in lines}
    assert bold.get("Main findings") is True and bold.get("Next steps") is True, bold
    assert bold.get("Regional office notes") is False, bold  # regular type in the same blue
    assert not any(v for k, v in bold.items() if k.startswith("The survey")), bold


BODY_TEXT = "The survey asked households how they heat their homes and what they spend on energy."
