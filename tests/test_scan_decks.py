"""Slide decks read as scans (issue 30, round 45).

On the probe's decks printed by Chromium and read as pixels, the light engine lost what the text layer
keeps: three panels side by side (a head and two lines of text in each) came out as a three-column
table, the running footer ("Regional Council · 3") stayed in the text when it was a slide's only text
block, slide titles of one style landed on three levels (one page measured them against its footer,
others just under the heading size), and the layout model's title box over a slide's four bullets made
them headings. The decks are printed by Chromium from the probe set (``bench/accuracy/printed.py``)
and rendered to pixels; the REAL light engine (RapidOCR and the CDLA layout model) reads them. The
panel finder is also tested on pages PyMuPDF draws: panels, zebra rows, a chart, a tinted page.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.printed import build
from ocr_app.engines.light import LightOcrEngine
from ocr_app.schema import Block, PageImage, PageRequest
from ocr_app.structure.lines import LayoutConfig, TextLine
from ocr_app.structure.passes.blocks import _typical_gap
from ocr_app.structure.pipeline import blocks_to_markdown, build_blocks
from ocr_app.structure.regions import detect_regions, overlap
from ocr_app.structure.scan_levels import HeadingRecord, document_levels
from ocr_app.structure.scan_running import mark_running, running_keys
from tests.test_light_scans import DPI, scan_page

LIGHT = LightOcrEngine()._layout  # the light engine's sizes: headings from 1.25 ×, "#" from 1.9 ×


@pytest.fixture(scope="module")
def engine() -> LightOcrEngine:
    eng = LightOcrEngine()
    eng.load()
    return eng


def _requests(doc: pymupdf.Document) -> list[PageRequest]:
    return [
        PageRequest(page=PageImage(image=scan_page(doc, k), index=k, source="deck.pdf", dpi=DPI), prompt="")
        for k in range(len(doc))
    ]


def _printed(tmp: Path, name: str) -> pymupdf.Document:
    build(tmp, only=(name,))
    return pymupdf.open(tmp / "pdf" / f"{name}.pdf")


def _headings(md: str) -> list[str]:
    return [ln for ln in md.splitlines() if ln.startswith("#")]


def test_a_scanned_deck_reads_its_panels_whole_drops_its_footer_and_levels_its_titles_alike(
    engine: LightOcrEngine, tmp_path: Path
) -> None:
    doc = _printed(tmp_path, "deck-caps")
    requests = _requests(doc)
    panels_page = requests[2]
    scanned = engine._scan(panels_page)
    assert len(scanned.panels) == 3, scanned.panels
    outs = engine.predict_batch(requests)
    pages = [blocks_to_markdown(o.blocks) for o in outs]
    md = "\n\n".join(pages)
    assert "Regional Council" not in md, md
    assert [b.label for o in outs for b in o.blocks if "Regional Council" in b.text] == ["page_footer"] * 6
    # The panels: each head a heading over its own sentence, no table.
    assert "<table" not in pages[2], pages[2]
    heads = _headings(pages[2])
    assert [h.lstrip("# ") for h in heads[1:]] == ["Cleaner rivers", "Open data", "Safer crossings"], heads
    assert "Nitrate below 5 mg/l at every station by 2027." in pages[2], pages[2]
    assert "<table" in pages[3] and "North" in pages[3], pages[3]  # a real table stays one
    # Every slide title on one level, under the deck's title and over the panels' heads.
    titles = [_headings(p)[0] for p in pages]
    assert titles[0].lstrip("# ") == "Freight and Logistics Report", titles
    level = {len(t) - len(t.lstrip("#")) for t in titles[1:]}
    assert len(level) == 1 and level.pop() > len(titles[0]) - len(titles[0].lstrip("#")), titles
    assert len(heads[1]) - len(heads[1].lstrip("#")) > len(heads[0]) - len(heads[0].lstrip("#")), heads


def test_bullets_in_the_models_title_box_stay_a_list(engine: LightOcrEngine, tmp_path: Path) -> None:
    doc = _printed(tmp_path, "deck-pair-samesize")
    image = scan_page(doc, 4)
    titles = [r for r in detect_regions(image) if r.label == "title" and r.score >= 0.6]
    out = engine.predict_batch(_requests(doc))[4]
    bullets = next(b for b in out.blocks if "Replace the oldest bearings" in b.text)
    assert any(overlap(bullets.box, r.box) > 0.5 for r in titles), "the model no longer boxes them as a title"
    md = blocks_to_markdown(out.blocks)
    assert _headings(md) == ["## What changes for staff"] or len(_headings(md)) == 1, md
    items = [ln for ln in md.splitlines() if ln.startswith("- ")]
    assert len(items) == 4 and items[0] == "- Replace the oldest bearings first", md


def test_a_panels_head_a_blank_line_over_its_two_lines_stands_alone(
    engine: LightOcrEngine, tmp_path: Path
) -> None:
    """deck-samesize's panels: heads in italics at the text's size. The third's blank line measures
    31 px on the OCR's boxes and its text's line gap 3: the panel's "typical" gap was their mean."""
    doc = _printed(tmp_path, "deck-samesize")
    md = blocks_to_markdown(engine.predict_batch(_requests(doc)[:3])[2].blocks)
    heads = [h.lstrip("# ") for h in _headings(md)]
    assert heads[1:] == ["Open data", "Cleaner rivers", "Safer crossings"], md
    assert "Forty crossings get new lights and raised tables." in md, md


def test_a_page_with_next_to_no_text_outside_its_tables_measures_its_title_against_the_document() -> None:
    """deck-pair-samesize's last slide as the OCR measured it (pixels at 144 DPI): its title, the two
    tables' labels a size over the deck's text, its footer. Against those the title was a level down."""
    lines = [
        TextLine("Costs and staff side by side", (105, 133, 708, 185), 44.0, True),
        TextLine("Costs", (102, 191, 210, 239), 36.0),
        TextLine("Staff", (744, 191, 843, 240), 36.0),
        TextLine("Regional Council · 7", (107, 759, 237, 786), 13.3),
    ]
    tables = [
        ((108.0, 252.0, 600.0, 472.0), [["Region", "Cost"], ["South", "239"]]),
        ((747.0, 248.0, 1245.0, 472.0), [["Region", "Staff"], ["Coast", "583"]]),
    ]

    def title(document_body: float) -> str:
        blocks = build_blocks(
            lines, page_width=1440, config=LIGHT, tables=tables, page_height=810, document_body=document_body
        )
        return blocks_to_markdown(blocks).splitlines()[0]

    assert title(0.0) == "### Costs and staff side by side"  # the page alone: a bold line at its size
    assert title(33.8) == "## Costs and staff side by side"  # 1.3 × the deck's text


def test_the_line_gap_of_a_few_rows_is_the_smaller_of_two_sizes_where_asked() -> None:
    config = LayoutConfig()
    assert _typical_gap([31.0, 3.0], 28.0, config) == 17.0  # the paragraphs' grouping, as before
    assert _typical_gap([31.0, 3.0], 28.0, config, one=True) == 3.0
    assert _typical_gap([31.0, 29.0], 28.0, config, one=True) == min(30.0, config.max_line_gap_ratio * 28.0)


def _drawn(draw) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=720, height=405)
    draw(page)
    return doc


def _panels(page: pymupdf.Page) -> None:
    page.insert_text((50, 60), "Three priorities for the year", fontsize=22, fontname="hebo")
    for k, (head, line) in enumerate(
        (("Rivers", "Cleaner water"), ("Data", "Published"), ("Roads", "Safer"))
    ):
        x = 50 + k * 215
        page.draw_rect(pymupdf.Rect(x, 90, x + 190, 210), color=None, fill=(0.89, 0.92, 0.96))
        page.insert_text((x + 10, 115), head, fontsize=14, fontname="hebo")
        page.insert_text((x + 10, 145), line + " every quarter", fontsize=12, fontname="helv")
        page.insert_text((x + 10, 162), "by the regional office", fontsize=12, fontname="helv")


def _zebra(page: pymupdf.Page) -> None:
    for r in range(8):
        y = 60 + 20 * r
        if r % 2:
            page.draw_rect(pymupdf.Rect(50, y - 14, 600, y + 6), color=None, fill=(0.9, 0.9, 0.9))
        for c, text in enumerate(("North", f"{100 + 7 * r}", f"{200 + 3 * r}", "+1.5")):
            page.insert_text((60 + 130 * c, y), text, fontsize=12, fontname="helv")


def _chart(page: pymupdf.Page) -> None:
    page.draw_rect(pymupdf.Rect(80, 60, 560, 340), color=None, fill=(0.93, 0.93, 0.93))
    for k, height in enumerate((120, 200, 90, 240, 160)):
        page.draw_rect(
            pymupdf.Rect(110 + 90 * k, 330 - height, 160 + 90 * k, 330), color=None, fill=(0.2, 0.4, 0.7)
        )
    page.insert_text((90, 80), "Costs by year", fontsize=12, fontname="helv")
    page.insert_text(
        (200, 370), "The chart shows the costs of every year since the survey began.", fontsize=12
    )


def _nested(page: pymupdf.Page) -> None:
    """IBM's redbook draws a figure as a grey box holding a pale yellow one: one grey level apart."""
    page.draw_rect(pymupdf.Rect(80, 60, 400, 360), color=None, fill=(0.953, 0.953, 0.953))
    page.draw_rect(pymupdf.Rect(100, 150, 360, 280), color=None, fill=(1, 1, 0.6))
    for k, text in enumerate(("Signed on as ALICE", "USER = ALICE", "CALL proc1")):
        page.insert_text((90, 85 + 20 * k), text, fontsize=11, fontname="helv")
    for k, text in enumerate(("Proc1:", "Owner = JOE", "SET OPTION USRPRF=*OWNER")):
        page.insert_text((110, 175 + 20 * k), text, fontsize=11, fontname="helv")


def _tinted(page: pymupdf.Page) -> None:
    page.draw_rect(page.rect, color=None, fill=(0.9, 0.88, 0.82))
    for k in range(6):
        page.insert_text((50, 60 + 40 * k), "A page of text on tinted paper, line after line.", fontsize=12)


@pytest.mark.parametrize(
    ("draw", "count"), [(_panels, 3), (_zebra, 0), (_chart, 0), (_nested, 0), (_tinted, 0)]
)
def test_filled_panels_on_a_scan_are_plain_grounds_inside_the_page(
    engine: LightOcrEngine, draw, count: int
) -> None:
    doc = _drawn(draw)
    scanned = engine._scan(_requests(doc)[0])
    assert scanned.ocr_lines, "nothing read"
    assert len(scanned.panels) == count, scanned.panels
    scale = DPI / 72
    drawn = [(scale * (50 + 215 * k), scale * 90, scale * (240 + 215 * k), scale * 210) for k in range(count)]
    found = sorted(scanned.panels)
    for want, got in zip(drawn, found, strict=True):  # where they were drawn, within a few pixels
        assert all(abs(a - b) <= 6 for a, b in zip(want, got, strict=True)), (drawn, found)


def test_a_footer_that_is_a_slides_only_text_block_runs() -> None:
    """A slide of a title and a list holds one text block, its footer: the outermost at both edges."""
    height = 810.0
    pages = [
        [
            Block("sub_title", f"## Slide {k}", [(100, 130, 500, 180)]),
            Block("list", "- one\n- two", [(130, 220, 600, 300)]),
            Block("text", f"Regional Council · {k}", [(100, 760, 240, 782)]),
        ]
        for k in range(1, 5)
    ]
    keys = running_keys([(blocks, height) for blocks in pages])
    assert keys, "no running line found"
    for blocks in pages:
        mark_running(blocks, height, keys)
        assert [b.label for b in blocks] == ["sub_title", "list", "page_footer"], blocks


def test_a_heading_measured_just_under_the_heading_size_joins_the_tier_it_spreads_from() -> None:
    records = [HeadingRecord(1.85, True, "Report"), HeadingRecord(1.25, True, "Where we stand")]
    records += [HeadingRecord(1.26, True, "Costs"), HeadingRecord(1.24, True, "Plans")]
    levels = document_levels(records, LIGHT)
    assert {levels.level(r) for r in records[1:]} == {3}
    assert levels.level(HeadingRecord(1.22, True, "What changes")) == 3  # a later page's
    assert levels.level(HeadingRecord(1.0, True, "Method")) == 4  # bold at body size: below
    # Without a heading under the heading size the tier keeps its edge: 1.2 is set apart.
    apart = document_levels(records[:3], LIGHT)
    assert apart.level(HeadingRecord(1.2, True, "Aside")) == 4


def test_a_lone_title_on_the_first_page_is_the_documents_title() -> None:
    """A scanned deck's or report's title measures 1.7-1.85 × the body, under the 1.9 × of "#": set once,
    on the first page, over smaller headings, it is the document's title, as on the text layer."""
    first = [HeadingRecord(1.77, True, "Household Energy Survey")]
    rest = [HeadingRecord(1.27, True, "Where we stand"), HeadingRecord(1.25, True, "Costs by region")]
    levels = document_levels([*first, *rest], LIGHT, first_page=1)
    assert [levels.level(r) for r in [*first, *rest]] == [1, 2, 2]
    # Without the first page's count, or with the size again on a later page, it keeps "##".
    assert document_levels([*first, *rest], LIGHT).level(first[0]) == 2
    again = [*rest, HeadingRecord(1.8, True, "Part two")]
    assert document_levels([*first, *again], LIGHT, first_page=1).level(first[0]) == 2
    # Nothing under it: a page of one heading size has no title over sections.
    assert document_levels(first, LIGHT, first_page=1).level(first[0]) == 2
    # Sections bold at body size under it (a report's "1. METHOD" at 1.2 ×): title "#", sections "##",
    # their numbered subsections "###".
    bold = [HeadingRecord(1.2, True, "1. METHOD"), HeadingRecord(1.0, True, "1.1 Timeline")]
    report = document_levels([*first, *bold], LIGHT, first_page=1)
    assert [report.level(r) for r in [*first, *bold]] == [1, 2, 3]
