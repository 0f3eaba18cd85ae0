"""Slide panels and list entries come out as a reader expects (issue 30 items 3 and 5): each panel
of a slide read whole (its title, then its bullets, each bullet one item with its wrapped lines
joined), each entry of a reference list one paragraph, in order, column by column.

The pages are built here with PyMuPDF the way such documents are set: panels on coloured (and
rounded) fills, bullets with their text at a tab and wrapped lines under it, reference entries with
hanging indents whose label is drawn in the same run as the text or apart from it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.false_table_pages import AUTHOR_YEAR, PROSE, REFERENCES, wrap
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import assert_in_order, pdf_page_request

SLIDE = (960.0, 540.0)
A4 = (595.0, 842.0)


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    return TextLayerEngine()


def _markdown(engine: TextLayerEngine, doc: pymupdf.Document, tmp_path: Path) -> str:
    path = tmp_path / "page.pdf"
    doc.save(path)
    doc.close()
    return blocks_to_markdown(engine.predict_batch([pdf_page_request(path, 0, 144, prompt="")])[0].blocks)


def _paragraphs(md: str) -> list[str]:
    return [p.strip() for p in md.split("\n\n") if p.strip()]


def _slide(panels: list[tuple[str, list[str]]], radius: float | None = None) -> pymupdf.Document:
    """A 16:9 slide: a title, then the panels side by side on fills, each a title and bullets ("•"
    at the panel's inner margin, the text at a tab, wrapped lines under the text)."""
    doc = pymupdf.open()
    page = doc.new_page(width=SLIDE[0], height=SLIDE[1])
    page.insert_text((48, 66), "Quarterly Review", fontname="hebo", fontsize=28)
    gap, x0 = 24.0, 48.0
    w = (SLIDE[0] - 2 * x0 - gap * (len(panels) - 1)) / len(panels)
    fills = [(0.85, 0.91, 0.98), (0.89, 0.96, 0.87), (0.99, 0.92, 0.84)]
    for k, (title, bullets) in enumerate(panels):
        x = x0 + k * (w + gap)
        page.draw_rect(pymupdf.Rect(x, 104, x + w, 490), color=None, fill=fills[k], width=0, radius=radius)
        page.insert_text((x + 16, 138), title, fontname="hebo", fontsize=20)
        y = 176.0
        for b in bullets:
            page.insert_text((x + 16, y), "•", fontname="helv", fontsize=15)
            for line in wrap(b, w - 52, 15):
                page.insert_text((x + 34, y), line, fontname="helv", fontsize=15)
                y += 19
            y += 10
    return doc


PANELS = [
    (
        "Revenue",
        [
            "Subscriptions grew in every region we sell in, led by the northern offices",
            "Churn fell to its lowest level since the product launched",
        ],
    ),
    (
        "Costs",
        [
            "Hosting costs rose with usage",
            "Support headcount stayed flat while tickets per customer dropped by a third",
            "Travel budgets were cut",
        ],
    ),
    (
        "Next steps",
        ["Open two new offices in the south and hire the local teams before the summer"],
    ),
]


@pytest.mark.parametrize("radius", [None, 0.08])
def test_slide_panels_read_panel_by_panel_with_each_bullet_one_item(tmp_path, engine, radius):
    """Bullets that wrap onto two or three lines, panels of unequal length on square and rounded fills:
    each panel's title and then its bullets, each bullet one list item with its wrapped text joined."""
    md = _markdown(engine, _slide(PANELS, radius), tmp_path)
    assert "<table>" not in md
    items = [ln[2:] for ln in md.splitlines() if ln.startswith("- ")]
    bullets = [b for _, bs in PANELS for b in bs]
    assert items == bullets, md
    order = [part for title, bs in PANELS for part in (title, *bs)]
    assert_in_order(md, order)


def test_small_panels_side_by_side_are_not_read_across(tmp_path, engine):
    """Three panels of a title and one short bullet each: too few lines side by side to show a gutter;
    the fills hold each panel together."""
    panels = [
        ("Plan", ["Agree the scope"]),
        ("Build", ["Ship the first release"]),
        ("Learn", ["Measure what changed"]),
    ]
    md = _markdown(engine, _slide(panels), tmp_path)
    paragraphs = _paragraphs(md)
    for title, (bullet,) in panels:
        k = next(i for i, p in enumerate(paragraphs) if p.lstrip("# ") == title)
        assert paragraphs[k + 1] == f"- {bullet}", md
    assert_in_order(md, ["Plan", "Agree the scope", "Build", "Ship the first release", "Learn"])


def _hanging(
    page: pymupdf.Page, x: float, y: float, width: float, label: str, text: str, indent: float
) -> float:
    """One reference entry set with a hanging indent: the label, and the text at ``indent`` (in the
    same run as the label when they are a space apart, as LaTeX's and Word's styles draw them)."""
    size, lead = 8.0, 9.8
    lines = wrap(text, width - indent, size, font="tiro")
    label_w = pymupdf.get_text_length(label + " ", fontname="tiro", fontsize=size)
    if label_w >= indent - 0.5:  # "[10] " fills the tab: one run
        page.insert_text((x, y), f"{label} {lines[0]}", fontname="tiro", fontsize=size)
    else:
        page.insert_text((x, y), label, fontname="tiro", fontsize=size)
        page.insert_text((x + indent, y), lines[0], fontname="tiro", fontsize=size)
    for k, line in enumerate(lines[1:], 1):
        page.insert_text((x + indent, y + k * lead), line, fontname="tiro", fontsize=size)
    return y + len(lines) * lead + 3.0


def test_numbered_references_in_two_columns_are_one_paragraph_each_in_order(tmp_path, engine):
    """ "[n]" entries with hanging indents, the labels of two digits drawn in the same run as the text,
    entries whose first line ends a sentence short of the column's edge: each entry one paragraph,
    its wrapped lines joined, the left column before the right."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, gutter = 56.0, 14.0
    col = (A4[0] - 2 * margin - gutter) / 2
    page.insert_text((margin, 70), "References", fontname="hebo", fontsize=12)
    refs = REFERENCES * 2
    x, y = margin, 92.0
    indent = pymupdf.get_text_length("[24] ", fontname="tiro", fontsize=8)
    for k, ref in enumerate(refs):
        if k == len(refs) // 2:
            x, y = margin + col + gutter, 92.0
        y = _hanging(page, x, y, col, f"[{k + 1}]", ref, indent)
    md = _markdown(engine, doc, tmp_path)
    entries = [p for p in _paragraphs(md) if p.startswith("[")]
    assert [re.match(r"\[(\d+)\]", p).group(1) for p in entries] == [str(k + 1) for k in range(len(refs))], md
    for entry, ref in zip(entries, refs, strict=True):
        assert re.sub(r"^\[\d+\] ", "", entry) == ref, md


def test_an_author_year_bibliography_keeps_one_entry_per_paragraph(tmp_path, engine):
    """Author-year entries with hanging indents, one-line entries one after another, under a paragraph
    of prose: each entry one paragraph, the paragraph above it one too."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    margin, size, lead, indent = 72.0, 10.0, 12.5, 18.0
    width = A4[0] - 2 * margin
    page.insert_text((margin, 80), "Bibliography", fontname="hebo", fontsize=14)
    y = 106.0
    for line in wrap(PROSE[4], width, size, font="tiro"):
        page.insert_text((margin, y), line, fontname="tiro", fontsize=size)
        y += lead
    y += 8
    for ref in AUTHOR_YEAR:
        lines = wrap(ref, width, size, font="tiro")
        rest = wrap(" ".join(lines[1:]), width - indent, size, font="tiro") if len(lines) > 1 else []
        page.insert_text((margin, y), lines[0], fontname="tiro", fontsize=size)
        for k, line in enumerate(rest, 1):
            page.insert_text((margin + indent, y + k * lead), line, fontname="tiro", fontsize=size)
        y += (1 + len(rest)) * lead + 4
    md = _markdown(engine, doc, tmp_path)
    paragraphs = _paragraphs(md)
    assert paragraphs[1:] == [PROSE[4], *AUTHOR_YEAR], md


def test_panels_whose_rows_line_up_are_panels_not_a_table(tmp_path, engine):
    """Three equal panels, each a title and three one-line items drawn with their dash in the same run,
    rows at the same heights: the words make a full grid (three columns, a bold first row), but each
    column stands on a fill of its own."""
    doc = pymupdf.open()
    page = doc.new_page(width=SLIDE[0], height=SLIDE[1])
    page.insert_text((60, 90), "Where we grew", fontname="hebo", fontsize=30)
    panels = []
    for k, title in enumerate(("Customers", "Products", "People")):
        x = 60 + 300 * k
        items = [f"{title}: new accounts", f"{title}: retention up", f"{title}: renewals early"]
        panels.append((title, items))
        page.draw_rect(pymupdf.Rect(x, 130, x + 260, 430), color=None, fill=(0.93, 0.95, 0.98))
        page.insert_text((x + 15, 160), title, fontname="hebo", fontsize=16)
        for r, item in enumerate(items):
            page.insert_text((x + 15, 195 + 22 * r), f"- {item}", fontname="helv", fontsize=13)
    md = _markdown(engine, doc, tmp_path)
    assert "<table>" not in md and "|---" not in md, md
    assert [ln[2:] for ln in md.splitlines() if ln.startswith("- ")] == [
        i for _, items in panels for i in items
    ]
    assert_in_order(md, [part for title, items in panels for part in (title, *items)])


def _figures_table(fill: str) -> pymupdf.Document:
    """A four-column table of figures without rules; ``fill``: "panel" (the whole table on one filled
    ground) or "column" (the latest year's column highlighted from top to bottom)."""
    doc = pymupdf.open()
    page = doc.new_page(width=A4[0], height=A4[1])
    page.insert_textbox(pymupdf.Rect(60, 60, 535, 110), PROSE[:200], fontname="helv", fontsize=10)
    cols = [72, 260, 350, 440]
    top, pitch, rows = 150.0, 20.0, 7
    if fill == "panel":
        page.draw_rect(
            pymupdf.Rect(60, top - 18, 535, top + rows * pitch), color=None, fill=(0.92, 0.94, 0.98)
        )
    else:
        page.draw_rect(
            pymupdf.Rect(340, top - 18, 420, top + rows * pitch), color=None, fill=(0.92, 0.94, 0.98)
        )
    head = ["Segment", "2023", "2022", "2021"]
    for c, t in zip(cols, head, strict=True):
        page.insert_text((c, top), t, fontname="hebo", fontsize=10)
    for r in range(1, rows):
        row = [f"Segment {chr(64 + r)}", f"{1000 + 37 * r:,}", f"{900 + 29 * r:,}", f"{800 + 23 * r:,}"]
        for c, t in zip(cols, row, strict=True):
            page.insert_text((c, top + r * pitch), t, fontname="helv", fontsize=10)
    page.insert_textbox(
        pymupdf.Rect(60, top + rows * pitch + 30, 535, 420), PROSE[:200], fontname="helv", fontsize=10
    )
    return doc


@pytest.mark.parametrize("fill", ["panel", "column"])
def test_a_table_on_one_ground_or_with_a_highlighted_column_stays_a_table(tmp_path, engine, fill):
    md = _markdown(engine, _figures_table(fill), tmp_path)
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert "<th>Segment</th><th>2023</th><th>2022</th><th>2021</th>" in table
    assert "<td>Segment C</td><td>1,111</td><td>987</td><td>869</td>" in table


SIDEBAR = (
    "Heat pumps use one unit of electricity to move three units of heat. Grants cover up to half of the "
    "cost for homes built before 1990."
)


@pytest.mark.parametrize("filled", [False, True])
def test_a_sidebar_on_a_fill_beside_the_text_is_read_after_it(tmp_path, engine, filled):
    """A sidebar panel (a filled box with its own title) right of the body text, both starting at the
    same height: the body column first, then the panel, as without the fill. Read by height alone, the
    panel came first and its title became the heading of the body text."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "Why heat pumps now", fontsize=16, fontname="hebo")
    body = " ".join(PROSE[:3])
    page.insert_textbox(pymupdf.Rect(50, 80, 370, 500), body, fontsize=10, fontname="tiro")
    if filled:
        page.draw_rect(pymupdf.Rect(390, 80, 545, 330), color=None, fill=(0.9, 0.95, 0.9))
    page.insert_text((400, 100), "At a glance", fontsize=11, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(400, 110, 535, 320), SIDEBAR, fontsize=9, fontname="helv")
    md = _markdown(engine, doc, tmp_path)
    assert_in_order(md, ["Why heat pumps now", body[:40], body[-40:], "At a glance", SIDEBAR[:40]])


def test_a_slide_tables_cells_of_several_words_stay_one_column(tmp_path, engine):
    """A slide's table of words (large type, faint rules): the structure model cut the "Theme" column
    at a word space ("Faster | start-up", "Tables | in scans") into a column with no head of its own.
    Every row's words run on across the cut and its edges do not line up: one column."""
    doc = pymupdf.open()
    page = doc.new_page(width=960, height=540)
    page.insert_text((60, 70), "Roadmap", fontsize=30, fontname="hebo")
    xs = [60, 300, 600]
    y = 150.0
    for x, head in zip(xs, ["Quarter", "Theme", "Owner"], strict=True):
        page.insert_text((x, y), head, fontsize=22, fontname="hebo", color=(0.1, 0.3, 0.6))
    page.draw_line((55, y + 12), (900, y + 12), width=0.5, color=(0.8, 0.8, 0.8))
    rows = [("Q1", "Faster start-up", "Platform team"), ("Q2", "Tables in scans", "Layout team"),
            ("Q3", "Sign-in for teams", "Web team")]  # fmt: skip
    for row in rows:
        y += 50
        for x, text in zip(xs, row, strict=True):
            page.insert_text((x, y), text, fontsize=18, fontname="helv")
        page.draw_line((55, y + 12), (900, y + 12), width=0.5, color=(0.8, 0.8, 0.8))
    md = _markdown(engine, doc, tmp_path)
    (table,) = re.findall(r"<table>.*?</table>", md, re.S)
    assert re.findall(r"<th>([^<]*)</th>", table) == ["Quarter", "Theme", "Owner"], table
    for quarter, theme, owner in rows:
        assert f"<td>{quarter}</td><td>{theme}</td><td>{owner}</td>" in table, table
