"""One indented list set in two columns is text, not a table (issue 30 item 3, round 26).

Why: TeX Live's hyphenation-distribution lists its collections, their hyphenation packages and their
languages, each level a step further in, run on from the foot of the left column to the head of the
right one. Row by row the two columns line up like a table's, and the layout model boxed the page as
text, but a word grid of 49 rows × 2 came out, pairing "arabic" with "hyphen-icelandic". A reader sees
one list: both columns indent by the same steps and end raggedly. A table aligns each column at one
edge or its centres; only its first column indents (row labels under a group), and figures stand
flush right (``running_text.list_columns``, used by ``passes.tables``).
"""

from __future__ import annotations

import pymupdf

from ocr_app.structure.lines import TextLine
from ocr_app.structure.running_text import list_columns
from tests.factories import page_markdown

STEP = 11.0
ITEMS = [  # (level, text), in reading order
    (0, "collection-langarabic"), (1, "hyphen-arabic"), (2, "arabic"), (1, "hyphen-farsi"),
    (2, "farsi,persian"), (0, "collection-langchinese"), (1, "hyphen-chinese"), (2, "pinyin"),
    (0, "collection-langcyrillic"), (1, "hyphen-belarusian"), (2, "belarusian"), (1, "hyphen-bulgarian"),
    (2, "bulgarian"), (1, "hyphen-russian"), (2, "russian"), (1, "hyphen-serbian"), (2, "serbian"),
    (2, "serbianc"), (0, "collection-langczechslovak"), (1, "hyphen-czech"), (2, "czech"),
    (1, "hyphen-slovak"), (2, "slovak"), (0, "collection-langenglish"), (1, "hyphen-english"),
    (2, "ukenglish,british"), (2, "usenglishmax"), (0, "collection-langgerman"), (1, "hyphen-german"),
    (2, "german"), (2, "ngerman"), (2, "swissgerman"),
]  # fmt: skip


def _lines(items, x0: float, size: float = 10.0) -> list[TextLine]:
    return [
        TextLine(
            text=t,
            box=(x0 + STEP * lv, 90 + 12.3 * i, x0 + STEP * lv + 5.5 * len(t), 98 + 12.3 * i),
            size=size,
        )
        for i, (lv, t) in enumerate(items)
    ]


def test_two_columns_indenting_by_the_same_steps_are_one_list():
    half = len(ITEMS) // 2
    lines = [*_lines(ITEMS[:half], 57.0), *_lines(ITEMS[half:], 305.0)]
    assert list_columns(lines, 10.0)


def test_a_table_with_indented_row_labels_and_figures_flush_right_is_no_list():
    """Only the first column indents; the figures' starts differ by their widths, their right edges
    stand in one line."""
    labels = [(0, "Revenue"), (1, "Products"), (1, "Services"), (0, "Costs"), (1, "Staff"), (1, "Rent"),
              (0, "Result"), (1, "Before tax"), (1, "After tax")]  # fmt: skip
    figures = ["1,234", "987", "247", "12,045", "9,876", "169", "2,000", "1,500", "1,125"]
    lines = _lines(labels, 57.0)
    for i, f in enumerate(figures):
        for right in (300.0, 380.0):
            lines.append(
                TextLine(text=f, box=(right - 5.5 * len(f), 90 + 12.3 * i, right, 98 + 12.3 * i), size=10.0)
            )
    assert not list_columns(lines, 10.0)


def test_a_list_in_one_column_beside_plain_descriptions_is_no_list_in_columns():
    """A table of names (indented under groups) and descriptions: one column indents."""
    descriptions = [TextLine(text=f"used for {t}", box=(305.0, 90 + 12.3 * i, 305.0 + 5.5 * (9 + len(t)), 98 + 12.3 * i), size=10.0)
                    for i, (_, t) in enumerate(ITEMS[:12])]  # fmt: skip
    assert not list_columns([*_lines(ITEMS[:12], 57.0), *descriptions], 10.0)


def test_the_list_in_two_columns_reads_as_text_in_column_order(textlayer_engine, tmp_path):
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((57, 75), "List of languages in TeX Live:", fontsize=10)
    half = len(ITEMS) // 2
    for x0, part in ((57.0, ITEMS[:half]), (305.0, ITEMS[half:])):
        for i, (lv, t) in enumerate(part):
            page.insert_text((x0 + STEP * lv, 100 + 12.3 * i), t, fontsize=10.5, fontname="cour")
    pdf = tmp_path / "languages.pdf"
    doc.save(pdf)
    md = page_markdown(textlayer_engine, pdf, 0)
    assert "<table" not in md, md
    # the left column's last entry comes before the right column's first
    assert md.index("collection-langarabic") < md.index("slovak") < md.index("collection-langenglish")
    assert md.index("hyphen-czech") < md.index("swissgerman")


def test_figure_columns_under_spanning_heads_are_no_list():
    """LaTeX's framed table of nitrate and phosphate by year: the two years' columns under each head
    span one extent, whose starts (34 pt apart) look like two levels; they stand side by side in each
    row, and a column's width is no indent."""
    lines = [TextLine(text="Site", box=(79.3, 309.6, 98.5, 318.0), size=10.0)]
    for head, x in (("Nitrate (mg/l)", 127.1), ("Phosphate (mg/l)", 212.5)):
        lines.append(TextLine(text=head, box=(x, 303.6, x + 80.0, 312.0), size=10.0))
        lines += [TextLine(text=y, box=(x + dx, 315.6, x + dx + 23.0, 324.0), size=10.0)
                  for y, dx in (("2024", 0.0), ("2025", 42.7))]  # fmt: skip
    for i, site in enumerate(["Upper weir", "Mill bridge", "Town park", "Plant outlet", "Estuary"]):
        y = 327.5 + 12.0 * i
        lines.append(TextLine(text=site, box=(62.7, y, 62.7 + 5.0 * len(site), y + 8.4), size=10.0))
        for x in (127.1, 161.9, 212.5, 247.4):
            lines.append(TextLine(text="4.09", box=(x, y, x + 17.7, y + 8.4), size=10.0))
    assert not list_columns(lines, 10.0)


def test_a_tree_beside_descriptions_set_in_with_it_stays_a_table():
    """kpathsea's directory tree: each description set in about as far as its directory (the starts
    side by side correlate), so each row is one entry across both columns."""
    tree = [(0, "prefix/"), (1, "bin/"), (1, "man/"), (1, "share/"), (2, "texmf/"), (3, "bibtex/"), (4, "bib/"),
            (5, "base/"), (5, "misc/"), (4, "bst/"), (5, "base/"), (5, "misc/"), (3, "doc/"), (3, "fonts/")]  # fmt: skip
    lines = []
    for i, (lv, t) in enumerate(tree):
        y = 90 + 12.3 * i
        lines.append(TextLine(text=t, box=(57 + 5.5 * lv, y, 57 + 5.5 * (lv + len(t)), y + 8), size=10.0))
        x = 130 + 5.5 * min(lv, 4)  # the descriptions step in with the tree, a level behind at the deepest
        lines.append(TextLine(text=f"files of {t}", box=(x, y, x + 5.5 * (9 + len(t)), y + 8), size=10.0))
    assert not list_columns(lines, 10.0)
