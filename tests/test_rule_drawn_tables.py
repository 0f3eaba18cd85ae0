"""Tables drawn by horizontal rules alone, with words in their cells (issue 30, round 15).

Why: ICDAR 2013's us-019 sets "Variable | Assumption" between a top rule, a rule under the head and a
bottom rule: labels flush left, some wrapping under a hanging indent, beside notes set flush right,
group heads between, rows at line spacing. The layout model boxes its columns as text, and only the
rows between two group heads came out as a table, with the wrapped labels' lines in the wrong rows.
The rules say where the table is (``structure.rule_frames``); the rows are told by the keys' indents
and line breaks (``slot_rows.split_keys``, ``join_wrapped_text_rows``); the rows over the head
rule are the header (``slot_rows.head_over_rule``). On a scan the rules come from the page image
(``rulings.horizontal_rules``) and the light engine reads the frame the same way.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from ocr_app.engines.pdf_drawings import horizontal_rules
from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.engines.textlayer import TextLayerEngine
from ocr_app.structure import slot_rows, table_bounds, table_slots
from ocr_app.structure.lines import body_size
from ocr_app.structure.rule_frames import rule_frames
from tests.factories import page_markdown, table_rows

DATA = Path(__file__).parent / "data" / "public" / "icdar2013"
PROSE = (
    "The council met on Tuesday to agree the budget for the coming year and heard from residents about "
    "the state of the roads, the library opening hours and the plans for the new sports ground by the river."
)


@pytest.fixture(scope="module")
def engine() -> TextLayerEngine:
    engine = TextLayerEngine()
    assert engine._learned, "the tables extra (rapid-table 0.3.0) is part of the dev install"
    return engine


def test_us019_labels_beside_notes_between_three_rules_are_one_table(engine):
    md = page_markdown(engine, DATA / "us-019.pdf", 1)
    assert "<thead><tr><th>Variable</th><th>Assumption</th></tr></thead>" in md
    rows = table_rows(md)
    assert [r[0] for r in rows] == [
        "Variable",
        "Demographic assumptions",
        "Population",
        "18- to 24-year-old population",
        "25- to 29-year-old population",
        "30- to 34-year-old population",
        "35- to 44-year-old population",
        "Economic assumptions",
        "Disposable income per capita in constant dollars",
        "Education revenue receipts from state sources per capita in constant dollars",
        "Inflation rate",
        "Unemployment rate (men)",
        "Ages 18 and 19",
        "Ages 20 to 24",
        "Age 25 and over",
        "Unemployment rate (women)",
        "Ages 18 and 19",
        "Ages 20 to 24",
        "Age 25 and over",
    ]
    by_key = {r[0]: r[1:] for r in rows}
    assert by_key["Disposable income per capita in constant dollars"] == [
        "Annual percent changes range between -1.9% and 2.2% with an annual growth rate of 1.4%"
    ]
    assert by_key["Inflation rate"] == ["Inflation rate ranges between 1.0% and 2.0%"]
    # the notes under the bottom rule stay text under the table
    assert "SOURCE: U.S. Department of Commerce" in md.split("</table>")[1]


def test_us019_as_a_scan_is_read_by_the_light_engine_between_its_rules(light_engine):
    """The same page rendered as a 144-DPI scan: the rules come from the page image
    (``rulings.horizontal_rules``); the labels and notes were text before, interleaved line by line."""
    from PIL import Image

    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.structure.pipeline import blocks_to_markdown

    with pymupdf.open(DATA / "us-019.pdf") as doc:
        pix = doc[1].get_pixmap(dpi=144)
    image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    out = light_engine.predict_batch(
        [PageRequest(page=PageImage(image=image, index=1, source="s.png"), prompt="")]
    )
    md = blocks_to_markdown(out[0].blocks)
    assert "<thead><tr><th>Variable</th><th>Assumption</th></tr></thead>" in md
    by_key = {r[0]: r[1:] for r in table_rows(md)}
    assert by_key["Education revenue receipts from state sources per capita in constant dollars"] == [
        "Annual percent changes range between -2.4% and 2.3% with an annual growth rate of 1.3%"
    ]
    assert by_key["Ages 20 to 24"] and by_key["Age 25 and over"] and len(by_key) >= 15
    assert "SOURCE: U.S. Department of Commerce" in md.split("</table>")[1]


def _booktabs_page(path: Path, *, rules: tuple[bool, bool, bool] = (True, True, True)) -> Path:
    """A report's table of words: three rules, labels flush left (two wrap under a hanging indent)
    beside notes set flush right, bold group heads, rows at line spacing; a note under it."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    font = pymupdf.Font("helv")
    left, right, size, step = 72.0, 540.0, 9.0, 11.0

    def flush_right(y: float, text: str) -> None:
        page.insert_text((right - font.text_length(text, size), y), text, fontsize=size, fontname="helv")

    page.insert_text(
        (left, 90), "Table 4. Summary of the assumptions behind the forecast", fontsize=10, fontname="hebo"
    )
    y = 100.0
    if rules[0]:
        page.draw_line((left - 4, y), (right + 4, y), width=0.6)
    page.insert_text((left, y + 11), "Variable", fontsize=size, fontname="helv")
    flush_right(y + 11, "Assumption")
    if rules[1]:
        page.draw_line((left - 4, y + 15), (right + 4, y + 15), width=0.4)
    y += 28
    body = [
        ("Demographic assumptions", None),
        ("Population", "Consistent with the census estimates"),
        ("Working-age population", "Projection: growth of 0.4% a year"),
        ("Economic assumptions", None),
        (("Disposable income per capita in", "constant dollars"), ("Annual changes range between -1.9% and 2.2%", "with an annual growth rate of 1.4%")),
        (("Education revenue receipts from", "state sources per capita"), ("Annual changes range between -2.4% and 2.3%", "with an annual growth rate of 1.3%")),
        ("Inflation rate", "Ranges between 1.0% and 2.0%"),
        ("Unemployment rate", None),
        ("Ages 18 and 19", "Remains between 17.7% and 26.8%"),
        ("Ages 20 to 24", "Remains between 10.8% and 15.6%"),
        ("Age 25 and over", "Remains between 5.3% and 7.9%"),
    ]  # fmt: skip
    for key, note in body:
        if note is None:
            page.insert_text((left, y), key, fontsize=size, fontname="hebo")
            y += step
            continue
        keys = key if isinstance(key, tuple) else (key,)
        notes = note if isinstance(note, tuple) else (note,)
        for k, text in enumerate(keys):
            page.insert_text((left + (10 if k else 0), y + k * step), text, fontsize=size, fontname="helv")
        for k, text in enumerate(notes):
            flush_right(y + k * step, text)
        y += step * max(len(keys), len(notes))
    if rules[2]:
        page.draw_line((left - 4, y - 6), (right + 4, y - 6), width=0.6)
    page.insert_text(
        (left, y + 8), "SOURCE: the national statistics office, population estimates.", fontsize=7
    )
    doc.save(path)
    return path


def test_a_built_table_of_words_between_three_rules_reads_row_by_row(engine, tmp_path):
    md = page_markdown(engine, _booktabs_page(tmp_path / "booktabs.pdf"))
    assert "<th>Variable</th><th>Assumption</th>" in md
    rows = table_rows(md)
    keys = [r[0] for r in rows]
    assert keys[0] == "Variable" and keys[-3:] == ["Ages 18 and 19", "Ages 20 to 24", "Age 25 and over"]
    by_key = {r[0]: r[1:] for r in rows}
    assert by_key["Disposable income per capita in constant dollars"] == [
        "Annual changes range between -1.9% and 2.2% with an annual growth rate of 1.4%"
    ]
    assert by_key["Education revenue receipts from state sources per capita"] == [
        "Annual changes range between -2.4% and 2.3% with an annual growth rate of 1.3%"
    ]
    assert "Inflation rate" in by_key and len(rows) == 12
    assert "SOURCE: the national statistics office" in md.split("</table>")[1]


def _frames(pdf: Path) -> list:
    with pymupdf.open(pdf) as doc:
        lines = extract_lines(doc[0], 2.0)
        return rule_frames(horizontal_rules(doc[0], 2.0), lines, body_size(lines))


def test_three_rules_of_one_width_frame_the_table_and_no_more(tmp_path):
    frames = _frames(_booktabs_page(tmp_path / "three.pdf"))
    assert len(frames) == 1
    x0, y0, x1, y1 = frames[0]
    assert (x0, y0) == pytest.approx((136, 200), abs=2) and x1 == pytest.approx(1088, abs=2)
    assert y1 == pytest.approx(2 * 265, abs=2)  # the bottom rule (265 pt), not the note under it


def test_two_rules_frame_nothing(tmp_path):
    """Without the rule under the head, two rules may as well box a quotation or a note."""
    assert _frames(_booktabs_page(tmp_path / "two.pdf", rules=(True, False, True))) == []


def test_rules_around_prose_frame_no_table(engine, tmp_path):
    """A newsletter: a rule under the masthead, one under the issue line, one over the footer; two
    columns of prose between them. The head band is the issue line, but the rows are running text."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 60), "Parish News", fontsize=18, fontname="hebo")
    page.draw_line((72, 70), (540, 70), width=0.8)
    page.insert_text((72, 84), "Issue 12", fontsize=9)
    page.insert_text((470, 84), "Spring 2026", fontsize=9)
    page.draw_line((72, 92), (540, 92), width=0.8)
    for col in (72, 318):
        page.insert_textbox(pymupdf.Rect(col, 100, col + 222, 700), PROSE * 4, fontsize=9)
    page.draw_line((72, 710), (540, 710), width=0.8)
    pdf = tmp_path / "news.pdf"
    doc.save(pdf)
    md = page_markdown(engine, pdf)
    assert "<table>" not in md
    assert md.count("The council met on Tuesday") == 8


def _slot(row: int, col: int, *lines: tuple[float, float, str]) -> table_slots.Slot:
    """A cell whose lines are (x, y, text), each word 6 px a character, 12 px high."""
    words = []
    for x, y, text in lines:
        for word in text.split():
            words.append(((x, y, x + 6 * len(word), y + 12), word))
            x += 6 * len(word) + 4
    return table_slots.Slot(row, col, words=words)


def _flush_right(right: float, y: float, text: str) -> tuple[float, float, str]:
    """A line of ``_slot`` that ends at ``right``."""
    words = text.split()
    return right - sum(6 * len(w) for w in words) - 4 * (len(words) - 1), y, text


def _texts(slots: list[table_slots.Slot]) -> list[list[str]]:
    return [[c.text for c in r] for r in slot_rows.cell_rows(slots, None)]


def test_a_key_line_set_out_left_of_the_keys_first_line_starts_the_next_row():
    """The model's rows a line off: a wrapped key's indented last line and the next key's first line
    in one row."""
    slots = [
        _slot(0, 0, (20, 100, "Disposable income per capita in")),
        _slot(0, 1, _flush_right(500, 100, "Annual changes range")),
        _slot(1, 0, (32, 114, "constant dollars"), (20, 128, "Inflation rate")),
        _slot(
            1,
            1,
            _flush_right(500, 114, "with growth of 1.4%"),
            _flush_right(500, 128, "Ranges between 1 and 2%"),
        ),
        _slot(2, 0, (20, 142, "Ages 18 and 19")),
        _slot(2, 1, _flush_right(500, 142, "Remains between 17.7% and 26.8%")),
    ]  # notes set flush right
    out = slot_rows.split_keys(slots)
    assert _texts(out) == [
        ["Disposable income per capita in", "Annual changes range"],
        ["constant dollars", "with growth of 1.4%"],
        ["Inflation rate", "Ranges between 1 and 2%"],
        ["Ages 18 and 19", "Remains between 17.7% and 26.8%"],
    ]
    # and the key set in under a full line, with the notes going on, joins the row above
    assert _texts(slot_rows.join_wrapped_text_rows(out))[:2] == [
        ["Disposable income per capita in constant dollars", "Annual changes range with growth of 1.4%"],
        ["Inflation rate", "Ranges between 1 and 2%"],
    ]


def test_two_short_keys_in_one_model_row_with_a_note_beside_each_are_two_rows():
    slots = [
        _slot(0, 0, (20, 100, "Ages 18 and 19 and older")),
        _slot(0, 1, (300, 100, "Remains between 17.7% and 26.8% over the decade")),
        _slot(1, 0, (20, 114, "Ages 20 to 24"), (20, 128, "Age 25 and over")),
        _slot(
            1, 1, (300, 114, "Remains between 10.8% and 15.6%"), (300, 128, "Remains between 5.3% and 7.9%")
        ),
    ]
    assert [r[0] for r in _texts(slot_rows.split_keys(slots))] == [
        "Ages 18 and 19 and older",
        "Ages 20 to 24",
        "Age 25 and over",
    ]


@pytest.mark.parametrize(
    "key, note, why",
    [
        (
            [(20, 114, "Education revenue receipts from"), (20, 128, "state sources")],
            [(300, 114, "Annual changes"), (300, 128, "with growth of 1.3%")],
            "a key whose first line was full (the next word would not have fitted) wrapped",
        ),
        (
            [(20, 114, "Books and"), (20, 128, "school supplies")],
            [(300, 114, "Books can be expensive and the cost"), (300, 128, "of paper adds up")],
            "a key broken early beside a description that runs on (ICDAR's us-036)",
        ),
        (
            [(20, 114, "Total"), (20, 128, "(thousands)")],
            [(300, 114, "1,204")],
            "a key's second line with nothing beside it is the same key",
        ),
        (
            [(32, 114, "Men"), (32, 128, "Women")],
            [(300, 114, "Remains between"), (300, 128, "Remains between")],
            "keys set in under a flush-left column edge are not at the edge",
        ),
    ],
)
def test_a_key_that_wraps_stays_one_row(key, note, why):
    slots = [
        _slot(0, 0, (20, 100, "Education revenue receipts from")),
        _slot(0, 1, (300, 100, "Annual changes range")),
        _slot(1, 0, *key),
        _slot(1, 1, *note),
        _slot(2, 0, (20, 142, "Inflation rate")),
        _slot(2, 1, (300, 142, "Ranges between 1 and 2%")),
    ]
    assert len(_texts(slot_rows.split_keys(slots))) == 3, why


def _head_table() -> list[table_slots.Slot]:
    return [
        _slot(0, 0, (20, 100, "Variable")), _slot(0, 1, (300, 100, "Assumption")),
        _slot(1, 0, (20, 120, "Population")), _slot(1, 1, (300, 120, "Consistent")),
        _slot(2, 0, (20, 134, "Inflation")), _slot(2, 1, (300, 134, "Ranges")),
        _slot(3, 0, (20, 148, "Ages 18")), _slot(3, 1, (300, 148, "Remains")),
    ]  # fmt: skip


def test_the_rows_over_a_rule_across_the_table_under_its_first_row_are_its_head():
    slots = _head_table()
    slot_rows.head_over_rule(slots, [(15.0, 90.0, 500.0), (15.0, 116.0, 500.0), (15.0, 166.0, 500.0)])
    assert slot_rows.count_header_rows(slots) == 1


@pytest.mark.parametrize(
    "cuts, why",
    [
        ([(15.0, 116.0, 500.0), (15.0, 131.0, 500.0), (15.0, 145.0, 500.0)], "a rule under every row"),
        ([(15.0, 116.0, 200.0)], "a rule under the first column only"),
        ([(15.0, 90.0, 500.0), (15.0, 166.0, 500.0)], "rules over and under the table only"),
    ],
)
def test_no_head_without_a_rule_under_the_first_rows_only(cuts, why):
    slots = _head_table()
    slot_rows.head_over_rule(slots, cuts)
    assert slot_rows.count_header_rows(slots) == 0, why


def _lines(y: float, cells: list[tuple[float, str]]) -> list:
    from ocr_app.structure.lines import TextLine

    return [TextLine(text, (x, y, x + 7.0 * len(text), y + 12), 12) for x, text in cells]


def _caption_over_table(first: list[tuple[float, str]]) -> list:
    return [
        *_lines(80, first),
        *_lines(104, [(20, "Answers"), (200, "Freq."), (300, "Percent")]),
        *_lines(124, [(20, "0"), (200, "138"), (300, "6.9")]),
        *_lines(140, [(20, "1"), (200, "178"), (300, "8.8")]),
    ]


def test_a_captions_last_line_over_the_top_rule_is_no_row_of_the_table():
    """ICDAR's eu-026 as a scan: the layout model's box took in the caption's last line over the double
    top rule; it stays text. A head over the rule (pieces side by side) stays the table's."""
    held = _caption_over_table([(20, "to three questions on the financial literacy task.")])
    cuts = [(15.0, 98.0, 400.0), (15.0, 100.0, 400.0), (15.0, 120.0, 400.0)]
    box, kept = table_bounds.below_top_rule((10, 70, 410, 160), held, cuts, 12.0)
    assert [ln.text for ln in kept][:3] == ["Answers", "Freq.", "Percent"] and len(kept) == 9
    assert box[1] == 104
    headed = _caption_over_table([(200, "Boys"), (300, "Girls")])
    assert len(table_bounds.below_top_rule((10, 70, 410, 160), headed, cuts, 12.0)[1]) == 11
    spanning = _caption_over_table([(20, "THRESHOLD FOR RELEASES")])  # a head spanning the columns
    assert len(table_bounds.below_top_rule((10, 70, 410, 160), spanning, cuts, 12.0)[1]) == 10
    short = [(15.0, 98.0, 250.0)]  # a rule under some columns only
    assert len(table_bounds.below_top_rule((10, 70, 410, 160), held, short, 12.0)[1]) == 10
