"""Headings against the document's bookmarks, and a title its running header repeats (issue 30,
item 4: headings from the whole document).

Why: on real manuals (texinfo's, DocBook's) the bookmarks are typed apart from the text: a hyphen
left out ("Nonregular files" for "Non-regular files"), an underscore drawn as a rule, a section's
number left out ("ASN.1 syntax" for "2.1 ASN.1 syntax"). Such headings missed their bookmark and took
a level from their size's rank instead, among the bookmarked ones: "### 2.13." between "## 2.12." and
"## 2.14.", and function entries at "#####" under "##" sections. The size ranks now take their levels
from the bookmarks the document's lines match (``heading_tiers.outline_tiers``). And a first page's
title whose words run as the header of every other page was cut as a running line.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.numbering import normal_title, outline_level
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

BODY = ["Body text of this section runs on for a while so that it is clearly a paragraph of prose."] * 3


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


def _lines(page: pymupdf.Page, y: float, texts: list[str], size: float = 11, font: str = "helv") -> float:
    for t in texts:
        page.insert_text((72, y), t, fontsize=size, fontname=font)
        y += size * 1.3
    return y + size


def _heads(engine: TextLayerEngine, pdf: Path, index: int) -> list[str]:
    out = engine.predict_batch([pdf_page_request(pdf, index, 72, prompt="")])[0]
    return [ln for ln in blocks_to_markdown(out.blocks).splitlines() if ln.startswith("#")]


def test_titles_match_bookmarks_without_their_hyphens_underscores_or_section_numbers():
    assert normal_title("2.13. Non-regular files") == normal_title("2.13. Nonregular files")
    assert normal_title("asn1 parser2tree") == normal_title("asn1_parser2tree")
    outline = {normal_title("1 Introduction"): 1, normal_title("ASN.1 syntax"): 2}
    assert outline_level(outline, "1 Introduction") == 1
    assert outline_level(outline, "2.1 ASN.1 syntax") == 2
    assert outline_level(outline, "ASN.1 syntax rules") is None
    assert outline_level({}, "1 Introduction") is None


def test_a_bookmark_typed_without_the_titles_hyphen_still_gives_its_level(tmp_path, engine):
    """shared-mime-info's spec bookmarks "2.13. Nonregular files" for the line "2.13. Non-regular
    files", set like its siblings."""
    pdf = tmp_path / "outline.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 80, ["2. Unified system"], size=17, font="hebo")
    y = _lines(p, y, BODY * 2)
    y = _lines(p, y, ["2.12. Recommended checking order"], size=14, font="hebo")
    y = _lines(p, y, BODY * 2)
    y = _lines(p, y, ["2.13. Non-regular files"], size=14, font="hebo")
    _lines(p, y, BODY * 2)
    doc.set_toc(
        [
            [1, "2. Unified system", 1],
            [2, "2.12. Recommended checking order", 1],
            [2, "2.13. Nonregular files", 1],
        ]
    )
    doc.save(pdf)
    assert _heads(engine, pdf, 0) == [
        "# 2. Unified system",
        "## 2.12. Recommended checking order",
        "## 2.13. Non-regular files",
    ]


def test_headings_the_bookmarks_leave_out_sit_a_level_under_the_bookmarked_ones(tmp_path, engine):
    """A texinfo manual: a cover title, chapters bookmarked with their numbers, sections without,
    and function entries (a smaller bold size) not bookmarked at all."""
    pdf = tmp_path / "manual.pdf"
    doc = pymupdf.open()
    _lines(doc.new_page(), 120, ["Libfoo"], size=26, font="hebo")
    for n, (chapter, section, functions) in enumerate(
        [
            ("Introduction", "ASN.1 syntax", ["foo_parse_tree", "foo_parse_array"]),
            ("Function reference", "Field functions", ["foo_create_element", "foo_delete_element"]),
        ],
        start=1,
    ):
        p = doc.new_page()
        y = _lines(p, 80, [f"{n} {chapter}"], size=17, font="hebo")
        y = _lines(p, y, BODY)
        y = _lines(p, y, [f"{n}.1 {section}"], size=14, font="hebo")
        y = _lines(p, y, BODY)
        for name in functions:
            y = _lines(p, y, [name.replace("_", " ")], size=13, font="hebo")
            y = _lines(p, y, BODY)
    doc.set_toc(
        [
            [1, "1 Introduction", 2],
            [2, "ASN.1 syntax", 2],
            [1, "2 Function reference", 3],
            [2, "Field functions", 3],
        ]
    )
    doc.save(pdf)
    assert _heads(engine, pdf, 1) == [
        "# 1 Introduction",
        "## 1.1 ASN.1 syntax",
        "### foo parse tree",
        "### foo parse array",
    ]
    assert _heads(engine, pdf, 2)[2:] == ["### foo create element", "### foo delete element"]


def test_a_title_its_running_header_repeats_stays_on_the_first_page(tmp_path, engine):
    pdf = tmp_path / "spec.pdf"
    doc = pymupdf.open()
    p = doc.new_page()
    y = _lines(p, 70, ["Shared Records Database"], size=24, font="hebo")
    _lines(p, y + 20, BODY * 3)
    for k in range(4):
        p = doc.new_page()
        p.insert_text((400, 50), "Shared Records Database", fontsize=9, fontname="heit")
        y = _lines(p, 90, [f"{k + 1}. Section {k + 1}"], size=14, font="hebo")
        _lines(p, y, BODY * 3)
    doc.save(pdf)
    first = engine.predict_batch([pdf_page_request(pdf, 0, 72, prompt="")])[0]
    assert blocks_to_markdown(first.blocks).startswith("# Shared Records Database")
    later = blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 2, 72, prompt="")])[0].blocks)
    assert "Shared Records Database" not in later
