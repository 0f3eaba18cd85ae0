"""Scientific papers printed by Chromium from the probe set of ``bench/accuracy/printed.py`` (issue 30,
round 10), read by the real text-layer engine: every paragraph and reference of the truth comes out as
one paragraph.

What the papers showed before: a paragraph broken by the column break came out in two pieces; so did
the abstract, whose short last line was read with the left column below it; references set with
hanging indents ran together when the list began at the top of a column with an entry's last line;
one-line references before the first one that wraps ran together; the prose above a reference list in
the same column was split after each full stop; the last page's two references in each column were
read across the gutter; a page range broken after its dash came out "350– 360"; a table in one
column was read together with the prose of the other; and on a last page mostly of references in
small print, the conclusion's lines in the body's size became headings (the page took the small print
for its body size).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.printed import build
from tests.factories import page_markdown, table_rows

PAPERS = ("paper-numbered-two", "paper-authoryear-two", "paper-authoryear-one", "paper-ieee-one")
BESIDE = "headfill-grouped-two"
BROKEN = "booktabs-grouped-two"
FRAMED = "frame-grouped-two"


@pytest.fixture(scope="module")
def papers(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("papers")
    build(out, (*PAPERS, BESIDE, BROKEN, FRAMED))
    return out


def _paragraphs(md: str) -> list[str]:
    return [p.strip() for p in md.split("\n\n") if p.strip()]


@pytest.mark.parametrize("name", PAPERS)
def test_every_paragraph_and_reference_is_one_paragraph(textlayer_engine, papers, name):
    pdf = papers / "pdf" / f"{name}.pdf"
    with pymupdf.open(pdf) as doc:
        pages = doc.page_count
    md = "\n\n".join(page_markdown(textlayer_engine, pdf, k) for k in range(pages))
    truth = (papers / "gt" / f"{name}.md").read_text(encoding="utf-8")
    want = [p for p in _paragraphs(truth) if not p.startswith(("#", "<table"))]
    got = _paragraphs(md)
    missing = [p for p in want if p not in got]
    assert not missing, (missing, md)
    assert len(want) >= 12


def test_the_papers_hold_what_the_test_is_about(papers):
    """The printed pages have the layouts the test above is about (so it cannot pass vacuously)."""
    with pymupdf.open(papers / "pdf" / "paper-numbered-two.pdf") as doc:
        assert doc.page_count == 2
        last = [b for b in doc[1].get_text("blocks") if b[4].startswith("[")]
        assert len({round(b[0]) for b in last}) == 2  # references in both columns of the last page


def test_a_table_in_one_column_is_not_read_with_the_prose_of_the_other(textlayer_engine, papers):
    """A table under a dark header bar in the right column of a two-column page, level with a section
    of the left column. Before: the rows of both columns were read as one table without rulings, whose
    first column held the left column's heading and lines of prose."""
    md = page_markdown(textlayer_engine, papers / "pdf" / f"{BESIDE}.pdf")
    truth = (papers / "gt" / f"{BESIDE}.md").read_text(encoding="utf-8")
    assert md.count("<table>") == 1 and table_rows(md) == table_rows(truth), md
    prose = [p for p in _paragraphs(truth) if not p.startswith(("#", "<table"))]
    assert all(p in _paragraphs(md) for p in prose), md


def test_heads_over_groups_wrapped_onto_two_lines_head_their_groups(textlayer_engine, papers):
    """The same table: heads painted cell by cell, "Nitrate" over "(mg/l)" over "2024 2025" (round 12).
    Before: the three header lines were read as one row, "Nitrate (mg/l) 2024" one head and "2025"
    another; the groups were lost."""
    md = page_markdown(textlayer_engine, papers / "pdf" / f"{BESIDE}.pdf")
    head = md[md.index("<thead>") : md.index("</thead>")]
    assert '<th rowspan="2">Site</th><th colspan="2">Nitrate (mg/l)</th><th colspan="2">Phosphate' in head, md
    assert head.count("<tr>") == 2 and "<th>2024</th><th>2025</th><th>2024</th><th>2025</th>" in head, md


def test_a_framed_table_the_column_broke_after_its_first_row_is_one_table(textlayer_engine, papers):
    """A framed table broken after its heads and first row ("Upper" over "weir"), the frame open at the
    foot of the left column, the rest under the repeated heads in the right one (round 12). Before:
    the open frame was taken for a diagram and its lines for the diagram's labels; they came out as
    loose lines over the second piece ("Site Nitrate Phosphate", "Upper 3.98 7.68 7.18 8.76",
    "weir"), and the first row was lost from the table."""
    md = page_markdown(textlayer_engine, papers / "pdf" / f"{FRAMED}.pdf")
    truth = (papers / "gt" / f"{FRAMED}.md").read_text(encoding="utf-8")
    assert md.count("<table>") == 1, md
    assert table_rows(md) == table_rows(truth), md
    outside = (md[: md.index("<table>")] + md[md.index("</table>") :]).replace("Nitrate levels", "")
    assert not any(word in outside for word in ("Nitrate", "Phosphate", "2024", "weir")), md


def test_a_table_the_column_broke_after_one_row_is_one_table_with_its_group_heads(textlayer_engine, papers):
    """Heads over column groups set flush left ("Nitrate (mg/l)" over "2024 2025"), one row at the foot
    of the left column, the rest under the repeated heads at the top of the right column. Before: the
    first piece's heads and row were left as three lines of text (its columns were taken from the group
    heads' row, which covers the gap inside each group)."""
    md = page_markdown(textlayer_engine, papers / "pdf" / f"{BROKEN}.pdf")
    assert md.count("<table>") == 1, md
    head = '<th rowspan="2">Site</th><th colspan="2">Nitrate (mg/l)</th><th colspan="2">Phosphate (mg/l)</th>'
    assert head in md, md
    rows = table_rows(md)
    assert rows[1] == ["2024", "2025", "2024", "2025"], md
    assert [r[0] for r in rows[2:]] == [
        "Upper weir",
        "Mill bridge",
        "Town park",
        "Plant outlet",
        "Estuary",
    ], md
