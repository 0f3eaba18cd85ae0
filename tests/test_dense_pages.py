"""Dense pages are no pair-by-pair scan: a chart's 2,000 scattered value labels took the text layer 488
CPU s a page, an index of 840 lines 2.6 s. Each rule that weighed a row's pieces or a page's lines
against one another now looks only where an answer can come from; these tests hold the answers and
count the work (no timings)."""

from __future__ import annotations

import collections
import random
import re

import pymupdf

from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure import justified, lines
from ocr_app.structure.lines import TextLine, group_rows
from ocr_app.structure.passes import tables
from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import count_calls, pdf_page_request


def _labels(n: int, seed: int = 4) -> list[TextLine]:
    """``n`` value labels of a plot, 5 pt figures strewn along 60 rows of its area (a labelled
    heat map's or a bar chart's: dozens side by side at one height, unevenly apart)."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        x, y = 40 + rng.random() * 500, 130 + 11 * (k % 60) + rng.uniform(-0.3, 0.3)
        text = str(rng.randint(1, 999))
        out.append(
            TextLine(text, (x, y - 4, x + 2.8 * len(text), y + 1), 5.0, words=((x, x + 2.8 * len(text)),))
        )
    return out


def test_rows_grow_their_box_as_they_grow(monkeypatch):
    """Each row's box is made as the row starts and again for the sort, not from all its items for
    every item weighed (some 6,000 times here); every item still overlaps its row by half its height."""
    labels = _labels(2000)
    made = count_calls(monkeypatch, lines, "union_box", key=lambda *a: "boxes")
    rows = group_rows(labels)
    assert sum(len(r.items) for r in rows) == 2000
    assert max(len(r.items) for r in rows) >= 20  # rows of dozens of labels: the case that was slow
    assert len(rows) >= 50
    assert made["boxes"] <= 3 * len(rows), (made, len(rows))
    for row in rows:  # every item overlaps its row's box by half its height at least
        box = row.box
        assert all(lines.vertical_overlap(box, it.box) >= 0.5 for it in row.items)


def test_a_row_of_figures_is_not_matched_as_contents_entries(monkeypatch):
    """The contents rule's full pattern (two lazy runs: time in the cube of the text) is tried only on
    a text that ends in dot leaders and a page number: never on a row of figures, still on an entry."""
    tried: list[str] = []
    real = tables._CONTENTS_ROW

    class Counted:
        def match(self, text):
            tried.append(text)
            return real.match(text)

    monkeypatch.setattr(tables, "_CONTENTS_ROW", Counted())
    row = max(group_rows(_labels(2000)), key=lambda r: len(r.items))
    assert tables._entries(row) is None and tried == []
    entry = tables.contents_row("Water supply . . . . . . 12")
    assert entry is not None and entry.group("page") == "12" and len(tried) == 1
    assert tables.contents_row("Water supply 12") is None  # no leaders


def test_a_row_of_scattered_labels_is_not_tried_run_by_run(monkeypatch):
    """No run of uneven gaps can be a justified line: the runs past each piece's reach are not
    measured. A justified line broken at its spaces, beside its measure, is still joined."""
    labels = _labels(2000)
    measured = count_calls(monkeypatch, justified, "_even", key=lambda *a: "runs")
    assert justified.join_justified(labels) == labels
    assert measured["runs"] <= 2 * len(labels), measured

    def piece(text: str, x0: float) -> TextLine:  # one word, 5 pt a letter, on the second line
        x1 = x0 + 5 * len(text)
        return TextLine(text, (x0, 106, x1, 115), 10.0, words=((x0, x1),))

    measure = TextLine(
        "the council agreed new prices",
        (60, 91, 200, 100),
        10.0,
        words=((60, 75), (78, 113), (116, 141), (144, 159), (162, 200)),
    )
    gap = (140 - 85) / 3  # the line's four words spread evenly over the measure, 60 to 200
    broken = [piece("with", 60), piece("the", 80 + gap), piece("water", 95 + 2 * gap), piece("board", 175)]
    out = justified.join_justified([measure, *broken])
    assert [ln.text for ln in out] == ["the council agreed new prices", "with the water board"]


def test_a_page_of_scattered_labels_keeps_its_figures(tmp_path):
    """The page such labels come from, through the real text layer: its figures are kept (it took 488
    CPU s; the tests above count the work)."""
    rng = random.Random(4)
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(
        pymupdf.Rect(50, 20, 545, 110), "The survey covered every plot of the site. " * 8, fontsize=9
    )
    writer = pymupdf.TextWriter(page.rect)
    figures = []
    for _ in range(2000):
        figures.append(str(rng.randint(1, 999)))
        writer.append((40 + rng.random() * 500, 130 + rng.random() * 680), figures[-1], fontsize=5)
    writer.write_text(page)
    doc.save(tmp_path / "labels.pdf")
    out = TextLayerEngine().predict_batch([pdf_page_request(tmp_path / "labels.pdf", 0, 144, prompt="")])[0]
    md = blocks_to_markdown(out.blocks)
    assert "The survey covered every plot" in md
    read = collections.Counter(re.findall(r"\d+", md))
    assert (
        sum((read & collections.Counter(figures)).values()) >= 1990
    )  # two labels set over each other may merge
