"""Heading levels from the document's own hierarchy (issue 25): section numbers tell levels apart where
sizes and weights do not, and the same style keeps its level on every page."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocr_app.ingest.pdf import import_pymupdf
from ocr_app.structure.numbering import depth_bases, numbered_level, numbering_depth
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

pymupdf = import_pymupdf()
PROSE = " ".join(["The manual explains each part in plain words for the reader."] * 6)


@pytest.fixture(scope="module")
def engine(textlayer_engine):
    return textlayer_engine


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1 Introduction", 1),
        ("2.1 Scope", 2),
        ("2.1.3 Limits of use", 3),
        ("Chapter 4 Results", 1),
        ("Appendix B Tables", 1),
        ("B.2 Codes", 2),
        ("IV. Discussion", 1),
        ("a. first item", 0),
        ("A Survey of Methods", 0),
        ("I Introduction", 0),
        ("A. Appendix", 1),
        ("Introduction", 0),
    ],
)
def test_numbering_depth(text, depth):
    assert numbering_depth(text) == depth


def test_levels_with_several_depths_move_deeper_numbers_down():
    bases = depth_bases([(3, "1.1 Scope"), (3, "1.1.1 Details"), (2, "1 Start"), (2, "Overview")])
    assert bases == {3: 2}  # level 2 holds one depth only: nothing to tell apart there
    assert numbered_level(3, "1.1.1 Details", bases) == 4
    assert numbered_level(3, "1.2 Other", bases) == 3
    assert numbered_level(2, "2 Next", bases) == 2


def _manual(path: Path) -> Path:
    """Three pages: a title, chapters at 16 pt, then sections ("1.1") and subsections ("1.1.1") both
    set bold at the body size, so only their numbers tell them apart."""
    doc = pymupdf.open()
    for c in (1, 2, 3):
        page = doc.new_page(width=595, height=842)
        y = 70
        if c == 1:
            page.insert_text((56, y), "Field Manual", fontsize=22, fontname="hebo")
            y += 40
        page.insert_text((56, y), f"{c} Chapter Title {c}", fontsize=16, fontname="hebo")
        y += 30
        for s in (1, 2):
            page.insert_text((56, y), f"{c}.{s} Section {c}.{s}", fontsize=10, fontname="hebo")
            y += 18
            page.insert_textbox(pymupdf.Rect(56, y - 10, 540, y + 60), PROSE, fontsize=10)
            y += 60
            page.insert_text((56, y), f"{c}.{s}.1 Subsection {c}.{s}.1", fontsize=10, fontname="hebo")
            y += 18
            page.insert_textbox(pymupdf.Rect(56, y - 10, 540, y + 60), PROSE, fontsize=10)
            y += 70
    doc.save(path)
    return path


def test_sections_and_subsections_in_one_style_get_levels_from_their_numbers(tmp_path, engine):
    pdf = _manual(tmp_path / "manual.pdf")
    heads = []
    for k in range(3):
        out = engine.predict_batch([pdf_page_request(pdf, k, 72, prompt="")])[0]
        heads += [ln for ln in blocks_to_markdown(out.blocks).splitlines() if ln.startswith("#")]
    assert heads[:5] == [
        "# Field Manual",
        "## 1 Chapter Title 1",
        "### 1.1 Section 1.1",
        "#### 1.1.1 Subsection 1.1.1",
        "### 1.2 Section 1.2",
    ], heads
    # The same style, the same level on every page.
    assert [h for h in heads if "Subsection 3." in h] == [
        "#### 3.1.1 Subsection 3.1.1",
        "#### 3.2.1 Subsection 3.2.1",
    ]
    assert [h for h in heads if "Chapter Title" in h] == [f"## {c} Chapter Title {c}" for c in (1, 2, 3)]


def test_side_heads_in_the_margin_head_their_own_paragraphs(tmp_path, engine):
    """A manual's layout with headings in the left margin, level with the first line of their text:
    a table-like layout whose left "column" must not be read before all the text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 70), "Product Manual", fontsize=20, fontname="hebo")
    y = 110
    heads = ["Installation", "Safety Notes", "Cleaning"]
    for k, head in enumerate(heads):
        page.insert_text((56, y), head, fontsize=10, fontname="hebo")
        for j in range(4):
            page.insert_text(
                (180, y + 13 * j),
                f"Part {k} line {j} tells what to do with the device in words.",
                fontsize=10,
            )
        y += 13 * 4 + 20
    pdf = tmp_path / "side.pdf"
    doc.save(pdf)
    md = blocks_to_markdown(engine.predict_batch([pdf_page_request(pdf, 0, 72, prompt="")])[0].blocks)
    order = [
        md.index(f"# {heads[0]}"),
        md.index("Part 0 line 0"),
        md.index(f"# {heads[1]}"),
        md.index("Part 1 line 0"),
    ]
    assert order == sorted(order), md
    assert md.index(f"# {heads[2]}") < md.index("Part 2 line 0") and "<table" not in md
