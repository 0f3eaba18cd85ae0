"""The probe's documents printed by LibreOffice Writer, a word processor (issue 30, round 21;
``bench.accuracy.office_print``).

Why: Chromium and MuPDF are HTML engines; most reports are written in a word processor and saved as
PDF. Writer printed the same HTML with habits neither engine has, and showed faults:

- **padded rows**: Writer pads a table's cells alike on every side, so the rows of a table without
  rules stand more than a line apart. The word grid ended a run of rows at such a gap, each row was a
  run of its own, and the table came out as text (or as two columns of text). A row of cells up to
  1.6 lines under the run now goes on it, as does a bold group label ("Staff") between such rows
  (``borderless_runs._next_row``); two numbered section titles over each other ("3.2  Losses" over
  "3.2.1  Reported") still do not;
- **heads in the middle of their cells**: Writer sets a table's heads in the middle of their cells, so
  "Site" (over two rows) overlaps "Nitrate (mg/l)" and the two lines of "Phosphate (mg/l)". Their
  negative gaps came out as the page's spacing between lines, and every paragraph broke after each
  line. Rows overlapping more than a quarter of a line are no lines of a paragraph
  (``passes.blocks._section_units``). The heads were left over the table as a heading: bold rows
  overlapping each other (or a head's first line right over its second) right over the table are
  now one row of heads, each head's lines joined (``borderless_heads.centred_heads``);
- **a column longer than the next**: Writer fills one column before the next, so the first may run
  below the second's end. Its last section, after a blank line, was taken for text after the columns
  and read last. A column whose bottom line is a full line broken mid-sentence goes on in the next
  column (``passes.columns._runs_on``);
- **bookmarks and small capitals**: Writer writes the headings' outline into the PDF, and writes
  small capitals as capitals at a smaller size ("1. R" + "ECOMMENDATIONS"). Such a title measured under
  the body's size on average, so the outline was not asked and the title was lost. Its capitals' size
  counts now (``headings``). Its text stays as the PDF writes it, in capitals: that is what a reader
  sees, and what ICDAR 2013's truth keeps ("THRESHOLD FOR RELEASES" in eu-001's small capitals).

The PDFs in ``tests/data/office`` were printed by ``python -m bench.accuracy.printed --out DIR
--printer office --only NAME`` (LibreOffice 7.4, Debian's libreoffice-writer-nogui); CI has no
LibreOffice, so they are kept, and their truth is built from the same plan here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.accuracy.printed import plan
from ocr_app.structure.borderless_runs import _next_row
from ocr_app.structure.lines import TextLine
from ocr_app.structure.passes.columns import _detached_tail
from tests.factories import page_markdown, pages_markdown

OFFICE = Path(__file__).parent / "data" / "office"
PADDED = ("none-wrapped-single", "headfill-grouped-two")
SMALL_CAPS = ("report-smallcaps-1", "paper-ieee-two")
CENTRED_HEADS = "headfill-grouped-single-centred"
NEWSLETTER = "news-ragged"


def _truth(name: str) -> str:
    return next(make for n, _, make in plan() if n == name)()[1]


def _tables(md: str) -> list[list[list[str]]]:
    return [
        [re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", t, re.S)]
        for t in re.findall(r"<table>.*?</table>", md, re.S)
    ]


def test_the_kept_pdfs_are_writers():
    import pymupdf

    for pdf in sorted(OFFICE.glob("*.pdf")):
        with pymupdf.open(pdf) as doc:
            assert (doc.metadata or {}).get("producer", "").startswith("LibreOffice"), pdf.name
            assert {f[3].split("+")[-1] for f in doc[0].get_fonts()} & {
                "LiberationSans",
                "LiberationSerif",
                "DejaVuSans",
            }, pdf.name
    assert {p.stem for p in OFFICE.glob("*.pdf")} == {*PADDED, *SMALL_CAPS, CENTRED_HEADS, NEWSLETTER}


@pytest.mark.parametrize("name", PADDED)
def test_a_table_with_padded_rows_is_one_table(textlayer_engine, name):
    """Rows a blank line apart (Writer's cell padding): one table, its rows and spans as the truth."""
    truth = _truth(name)
    md = page_markdown(textlayer_engine, OFFICE / f"{name}.pdf")
    assert md.count("<table>") == 1, md
    assert _tables(md) == _tables(truth), md
    assert "The table below sets out the figures by line." in md


@pytest.mark.parametrize("name", SMALL_CAPS)
def test_titles_in_small_capitals_read_as_written(textlayer_engine, name):
    """Writer's small capitals ("I. I" + "NTRODUCTION"): every title a heading at the truth's level,
    in the capitals the PDF writes."""
    truth = _truth(name)
    md = "\n\n".join(pages_markdown(textlayer_engine, OFFICE / f"{name}.pdf"))
    got = [ln.split(" ", 1) for ln in md.splitlines() if ln.startswith("#")]
    want = [ln.split(" ", 1) for ln in truth.splitlines() if ln.startswith("#")]
    assert [(h, t.upper()) for h, t in got] == [(h, t.upper()) for h, t in want], md


def test_heads_set_in_the_middle_of_their_cells(textlayer_engine):
    """A table's heads set in the middle of their cells overlap each other ("Site" beside "Nitrate
    (mg/l)" beside "Phosphate" over "(mg/l)"): their negative "gaps" were taken for the page's line
    spacing, and every paragraph broke after each line; and the heads were left over the table as a
    heading ("### Phosphate Nitrate (mg/l) (mg/l) Site")."""
    truth = _truth(CENTRED_HEADS)
    md = page_markdown(textlayer_engine, OFFICE / f"{CENTRED_HEADS}.pdf")
    paragraphs = [p for p in truth.split("\n\n") if p and not p.startswith(("#", "<table"))]
    assert len(paragraphs) >= 6
    for paragraph in paragraphs:
        assert paragraph.strip() in md.split("\n\n"), paragraph
    # and the heads are the table's: "Site" over two rows, each group head over its two years
    assert _tables(md) == _tables(truth), md
    assert "### Phosphate" not in md


def test_a_column_that_runs_longer_than_the_next_is_read_in_its_place(textlayer_engine):
    """Writer fills one column before the next: the first column runs below the second's end, its
    last section ("Works in progress", after a blank line) broken mid-sentence into the next column.
    It was taken for text after the columns and read last, its heading after its own paragraph."""
    md = page_markdown(textlayer_engine, OFFICE / f"{NEWSLETTER}.pdf")
    flat = " ".join(md.split())
    section = flat[flat.index("## Works in progress") :]
    assert section.startswith(
        "## Works in progress Water quality was sampled at forty stations along the river. Nitrate levels"
        " fell at most stations, while phosphate stayed close"
    ), md
    assert flat.index("## Works in progress") < flat.index("## Costs"), md


def test_text_after_the_columns_stays_after_them():
    def line(text: str, x0: float, y0: float, x1: float) -> TextLine:
        return TextLine(text, (x0, y0, x1, y0 + 10.0), 10.0)

    left = [line("running text of the first column", 0.0, 12.0 * k, 200.0) for k in range(10)]
    right = [line("running text of the second column", 230.0, 12.0 * k, 430.0) for k in range(5)]
    ends = [line("Note", 0.0, 160.0, 40.0), line("The figures are provisional.", 0.0, 172.0, 150.0)]
    runs = [
        line("Works in progress", 0.0, 160.0, 120.0),
        line("the river ran low and the", 0.0, 172.0, 198.0),
    ]
    band = [(0, it) for it in left] + [(1, it) for it in right]
    assert len(_detached_tail([*band, *((0, it) for it in ends)], 10.0)) == 2  # a note under the columns
    assert _detached_tail([*band, *((0, it) for it in runs)], 10.0) == []  # the column runs on


def _piece(text: str, x0: float, y0: float, bold: bool = False) -> TextLine:
    return TextLine(text, (x0, y0, x0 + 8.0 * len(text), y0 + 10.0), 10.0, bold, 700 if bold else 400)


def test_padded_rows_go_on_numbered_titles_do_not():
    row = [_piece("Upper", 50.0, 100.0), _piece("3.37", 200.0, 100.0), _piece("1.40", 300.0, 100.0)]
    wrap = [_piece("weir", 50.0, 111.0)]
    padded = [_piece("Mill", 50.0, 135.0), _piece("4.43", 200.0, 135.0), _piece("1.44", 300.0, 135.0)]
    far = [_piece("Town", 50.0, 165.0), _piece("3.06", 200.0, 165.0), _piece("3.64", 300.0, 165.0)]
    para = [_piece("The pilot ran in six schools for one term and more", 50.0, 135.0)]
    assert _next_row([row, wrap, padded], 1, 10.0, 600.0)  # 14 under a line of 10: a padded row
    assert not _next_row([row, wrap, para], 1, 10.0, 600.0)  # a paragraph that far under is not
    assert not _next_row([padded, far], 0, 10.0, 600.0)  # 20 under: more than 1.6 lines
    titles = [
        [_piece("3.2", 50.0, 100.0, True), _piece("Measuring Losses", 90.0, 100.0, True)],
        [_piece("3.2.1", 50.0, 124.0, True), _piece("Reported Losses", 90.0, 124.0, True)],
    ]
    assert not _next_row(titles, 0, 10.0, 600.0)
    # a group label between padded rows goes on; a plain line there, or one with no row under it, not
    label = [_piece("Staff", 50.0, 135.0, True)]
    under = [_piece("Salaries", 50.0, 159.0), _piece("395", 200.0, 159.0), _piece("327", 300.0, 159.0)]
    assert _next_row([row, wrap, label, under], 1, 10.0, 600.0)
    assert not _next_row([row, wrap, [_piece("Staff", 50.0, 135.0)], under], 1, 10.0, 600.0)
    assert not _next_row([row, wrap, label], 1, 10.0, 600.0)
    # the boxes of a flow chart: two over five, as far apart, are no padded rows (ICDAR's eu-014)
    boxes = [_piece("Municipal taxes", 300.0, 100.0), _piece("Municipalities", 450.0, 100.0)]
    five = [
        _piece(t, 10.0 + 110.0 * k, 124.0)
        for k, t in enumerate(("Taxes", "State", "Ministry", "Providers", "Schools"))
    ]
    assert not _next_row([boxes, five], 0, 10.0, 600.0)
    assert _next_row([boxes, five[:3]], 0, 10.0, 600.0)
