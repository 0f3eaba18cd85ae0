"""No false tables, round 2 (issue 30 item 3): a sidebar beside two body columns, a newsletter's
three Courier columns, two columns on different line pitches and a key-facts box stay text in
reading order with their headings; a table of contents stays a table (as public ground truths write
it: title and page).

The pages are built with PyMuPDF (``bench.accuracy.false_table_pages``, the pages the
``false_tables`` bench counts on).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy import false_table_pages as pages
from bench.accuracy import generate
from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.schema import union_box
from ocr_app.structure import learned_tables as lt
from ocr_app.structure.lines import body_size
from ocr_app.structure.paragraphs import join_lines
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

DPI = 144


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    eng = TextLayerEngine()
    assert eng._learned, "the tables extra (rapid-table) is part of the dev install"
    return eng


def _page(tmp_path: Path, name: str) -> Path:
    return pages.build(tmp_path / "page.pdf", {**pages.NO_TABLE, **pages.WITH_TABLE}[name])


def _markdown(engine: TextLayerEngine, pdf: Path) -> str:
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, DPI, prompt="")])[0].blocks)


def _flat(md: str) -> str:
    return re.sub(r"\s+", " ", md)


def test_a_narrow_sidebar_beside_two_columns_is_text_with_its_headings(tmp_path, engine):
    """A 150 pt sidebar of short ragged lines on the body's line grid: its lines are too short and
    ragged for the word-count test of prose, but its sentences run on from line to line."""
    md = _markdown(engine, _page(tmp_path, "prose with a sidebar"))
    assert "<table>" not in md
    assert_in_order(
        md,
        [
            "Document conversion starts",
            "When the two ideas are confused",
            "### At a glance",
            "The survey covers 199 public files from reports, papers and slide decks.",
            "### Why it matters",
            "### What we did",
        ],
    )


def test_three_courier_columns_in_a_table_region_are_not_read_as_a_table(tmp_path, engine):
    """Where the layout model boxes a newsletter's three columns as one table, the region's lines are
    columns of running text (each starting at one x, its sentences running on): no table is read
    there, by the structure model or by the word rules (the structure model reads such a band as a
    grid of sentence fragments)."""
    pdf = _page(tmp_path, "newsletter, three Courier columns")
    import pymupdf

    image = generate.render(pdf, 0, DPI)
    with pymupdf.open(pdf) as doc:
        lines = extract_lines(doc[0], DPI / 72)
    body = body_size(lines)
    # A band of the columns, from their headings down twelve lines (below the masthead).
    tops = sorted({round(ln.box[1]) for ln in lines if ln.box[1] > 110 * DPI / 72})
    region = union_box([ln.box for ln in lines if tops[0] <= ln.box[1] <= tops[12]])
    found, rest = lt.tables_in_regions(
        image, [region], lines, body=body, join=join_lines, rules=engine._word_grid(image.width, body)
    )
    assert found == []
    assert len(rest) == len(lines)


def test_guard_the_courier_newsletter_page_reads_column_by_column(tmp_path, engine):
    """Guard (passes before this round's change): the whole page through the engine."""
    md = _markdown(engine, _page(tmp_path, "newsletter, three Courier columns"))
    assert "<table>" not in md
    assert_in_order(md, ["THE PARSER", "From the Editor", "Club News", "Next Meeting"])


def test_guard_two_columns_on_different_line_pitches_stay_two_columns(tmp_path, engine):
    """Guard: lines 11 pt apart beside lines 13 pt apart share no row grid; each column reads whole."""
    md = _markdown(engine, _page(tmp_path, "two columns, two line pitches"))
    assert "<table>" not in md
    text = _flat(md)
    assert_in_order(text, ["Left: Reading Order", "Document conversion starts", "Right: Line Grids"])
    assert "which of them form a heading, a list or a table." in text
    assert "no longer be searched or quoted as the author wrote it." in text


def test_a_key_facts_box_is_text_beside_the_body_in_reading_order(tmp_path, engine):
    """Five "label: value" lines in a ruled box beside the body: a value follows its label one space
    after the colon, as in a sentence, so the box is text (not a two-column grid), read after the
    body paragraph it stands beside, not inside it."""
    md = _markdown(engine, _page(tmp_path, "key facts box"))
    assert "<table>" not in md
    text = _flat(md)
    assert "in which order they are read, and which of them form a heading" in text
    assert_in_order(text, ["Key facts", "Founded: 1998", "Headquarters: Lyon, France", "Customers: banks"])


def test_a_table_of_contents_is_one_table_of_titles_and_pages(tmp_path, engine):
    """Guard: dot leaders to page numbers, sections indented under chapters: one table of two
    columns, as docling's ground truth writes a contents page."""
    md = _markdown(engine, _page(tmp_path, "table of contents"))
    assert md.count("<table>") == 1
    cells = re.findall(r"<td>([^<]*)</td>", md)
    titles, numbers = cells[0::2], cells[1::2]
    assert len(titles) == len(pages.CONTENTS)
    assert [t.split(" .")[0].strip() for t in titles] == [c[1] for c in pages.CONTENTS]
    assert numbers == [c[2] for c in pages.CONTENTS]
