"""Reference documentation as Sphinx and rustdoc print (issue 30, round 33): Sphinx's "nature" theme
sets every heading with a white text shadow, which Chromium prints as a second copy of its glyphs one
pixel lower; rustdoc lists a module's items as names over descriptions set in from them.

Why: read untouched, every Sphinx heading came out twice ("Abstract Abstract") and matched none of the
document's outline; and in rustdoc's item lists each name was joined to the end of the description
above it ("E formatting. UpperHex"), the description being taken for a paragraph's indented first
line. Real text-layer engine; the pages are printed by Chromium, as a reader's browser prints them."""

from __future__ import annotations

import pymupdf
import pytest

from ocr_app.engines.overprint import _suspects, drop_overprints
from ocr_app.engines.pdf_spans import extract_lines
from ocr_app.structure.definition_lists import indented_terms
from ocr_app.structure.lines import LayoutConfig, Row, Table, TextLine
from tests.factories import SURVEY_TEXT, heading_texts, page_markdown

# Sphinx's nature theme, its own rules for headings and body.
SPHINX_STYLE = """<style>
body{font-family:Arial,sans-serif;font-size:100%;color:#555}
div.body{padding:0 30px 30px 30px}
div.body h1,div.body h2,div.body h3{font-family:Arial,sans-serif;background-color:#BED4EB;font-weight:normal;
color:#212224;margin:30px 0 10px 0;padding:5px 0 5px 10px;text-shadow:0px 1px 0 white}
div.body h1{border-top:20px solid white;margin-top:0;font-size:200%}
div.body h2{font-size:150%;background-color:#C8D5E3} div.body h3{font-size:120%;background-color:#D8DEE3}
div.body p{line-height:1.5em}
</style>"""

SECTIONS = [
    ("h1", "Abstract"),
    ("h2", "1. Copyright"),
    ("h2", "2. Completing the move to Python 3"),
    ("h3", "2.1. Removal of the unversioned packages"),
    ("h3", "2.2. Unversioned python commands"),
    ("h2", "3. Python Packaging"),
]


def _sphinx_page() -> str:
    body = "".join(f"<{tag}>{title}</{tag}><p>{SURVEY_TEXT}.</p>" for tag, title in SECTIONS)
    return f"{SPHINX_STYLE}<div class='body'>{body}</div>"


def test_headings_set_with_a_text_shadow_come_out_once(printer, textlayer_engine):
    pdf = printer("sphinx-nature", _sphinx_page())
    with pymupdf.open(pdf) as doc:  # the print does hold every heading twice: the shadow, then the text
        assert doc[0].get_text().count("Abstract") == 2
    md = page_markdown(textlayer_engine, pdf)
    assert heading_texts(md) == [title for _, title in SECTIONS], md
    assert md.count("Abstract") == 1 and md.count("the survey of regional households") == len(SECTIONS), md


def _span(text: str, x: float, y: float, size: float = 12.0) -> dict:
    """A rawdict span of one-em-apart glyphs (width 0.5 em each)."""
    chars = [
        {"c": c, "bbox": (x + k * 0.5 * size, y, x + (k + 0.5) * 0.5 * size, y + size)}
        for k, c in enumerate(text)
    ]
    bbox = (x, y, x + len(text) * 0.5 * size, y + size)
    return {"size": size, "chars": chars, "bbox": bbox}


def _block(*spans: dict) -> dict:
    return {"lines": [{"spans": [s], "bbox": s["bbox"]} for s in spans]}


def _texts(blocks: list[dict]) -> list[str]:
    return ["".join(c["c"] for s in ln["spans"] for c in s["chars"]) for b in blocks for ln in b["lines"]]


def test_the_copy_drawn_last_is_kept_and_glyphs_side_by_side_stay():
    shadow, text = _span("Abstract", 72, 100.75), _span("Abstract", 72, 100)
    text["color"] = 0x212224
    fake_bold = [_span("Bold", 72 + dx, 140) for dx in (0.0, 0.3, 0.6)]  # printed thrice, a hair apart
    doubles = _span("all ll ... ==", 72, 180)  # the same glyph one width on: two glyphs, not one
    below = _span("Abstract", 72, 103.5)  # over a quarter of the size lower: not a copy
    blocks = [_block(shadow, text), _block(*fake_bold), _block(doubles), _block(below)]
    assert drop_overprints(blocks) == 8 + 2 * 4
    assert _texts(blocks) == ["Abstract", "Bold", "all ll ... ==", "Abstract"]
    assert blocks[0]["lines"][0]["spans"][0].get("color") == 0x212224  # the one on top: the text's


def test_a_glyph_under_a_later_one_in_the_same_span_goes_and_the_span_closes_up():
    span = _span("SSTT", 72, 100)
    for k in (1, 3):  # "SSTT": each letter printed twice on one spot within one span
        span["chars"][k]["bbox"] = span["chars"][k - 1]["bbox"]
    blocks = [_block(span)]
    assert drop_overprints(blocks) == 2
    assert _texts(blocks) == ["ST"]


def test_extracted_lines_read_a_shadowed_word_once(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.draw_rect(pymupdf.Rect(60, 80, 400, 110), color=None, fill=(0.75, 0.83, 0.92))
    page.insert_text((72, 100.75), "Completing the move", fontsize=18, color=(1, 1, 1))
    page.insert_text((72, 100), "Completing the move", fontsize=18, color=(0.13, 0.13, 0.14))
    page.insert_text((72, 140), "Letters all spelled well, a rule of dots ....", fontsize=11)
    texts = [ln.text for ln in extract_lines(page, 1.0)]
    assert texts == ["Completing the move", "Letters all spelled well, a rule of dots ...."], texts


# rustdoc's item lists: each item's name (a link in its kind's colour) over its summary, set in.
RUSTDOC_ITEMS = [
    (
        "Arguments",
        "This structure represents a safely precompiled version of a format string and its "
        "arguments. This cannot be generated at runtime because it cannot safely be done.",
    ),
    ("DebugList", "A struct to help with fmt::Debug implementations."),
    ("DebugMap", "A struct to help with fmt::Debug implementations."),
    ("UpperExp", "E formatting."),
    ("UpperHex", "X formatting."),
    ("Write", "A trait for writing or formatting into Unicode-accepting buffers or streams."),
]


@pytest.fixture(scope="module")
def items_markdown(printer, textlayer_engine) -> str:
    rows = "".join(f"<dt><a href='#'>{name}</a></dt><dd>{summary}</dd>" for name, summary in RUSTDOC_ITEMS)
    html = (
        "<style>body{font-family:'DejaVu Serif',serif;font-size:16px} dd{margin-left:32px}"
        " dt{margin-top:10px;font-family:'DejaVu Sans',sans-serif} dt a{color:#ad378a;text-decoration:none}"
        "h2{font-family:'DejaVu Sans',sans-serif;font-size:22px}"
        " p.indented{text-indent:2em;margin:0}</style>"
        f"<h2>Structs</h2><p>{SURVEY_TEXT}.</p><dl>{rows}</dl>"
        f"<p class='indented'>{SURVEY_TEXT} {SURVEY_TEXT}.</p>"
    )
    return page_markdown(textlayer_engine, printer("rustdoc-items", html))


def test_names_over_descriptions_set_in_are_paragraphs_of_their_own(items_markdown):
    paragraphs = [p.strip() for p in items_markdown.split("\n\n")]
    for name, summary in RUSTDOC_ITEMS:
        assert name in paragraphs, items_markdown
        assert summary in paragraphs, items_markdown


def test_a_first_line_indent_that_wraps_still_runs_on_at_the_left_edge(items_markdown):
    paragraphs = [p.strip() for p in items_markdown.split("\n\n")]
    assert f"{SURVEY_TEXT} {SURVEY_TEXT}." in paragraphs, items_markdown


def test_only_lines_that_reach_over_another_are_searched_glyph_by_glyph():
    """The glyph search runs on the lines that may hold a copy (``_suspects``): none on a page of
    lines set one under another, nor side by side in a row; the shadow and its text, and a span that
    goes back over itself, are; a line set sideways never is."""
    column = [_block(_span("Lines set at their leading.", 72, 100 + 14.4 * k)) for k in range(6)]
    row = [_block(_span("Cell", 72 + 40 * k, 200)) for k in range(4)]  # a table's row: tops equal
    assert _suspects(column + row) == set()
    shadow, text = _block(_span("Abstract", 72, 300.75)), _block(_span("Abstract", 72, 300))
    back = _span("SSTT", 72, 400)
    back["chars"][1]["bbox"] = back["chars"][0]["bbox"]
    sideways = {"lines": [{"spans": [_span("Hall", 72, 500)], "dir": (0.0, 1.0)}]}
    blocks = [*column, shadow, text, _block(back), sideways]
    lines = [b["lines"][0] for b in (shadow, text, blocks[-2])]
    assert _suspects(blocks) == {id(ln) for ln in lines}


def test_a_line_left_with_spaces_only_goes_too():
    """A diagram's labels printed twice, the second copy in pieces with spaces between them (IBM's
    Redbook in docling's set): once its glyphs are gone, no line of spaces may stay behind."""
    whole = _span("Specifies that", 72, 100)
    pieces = [_span("S", 72, 100), _span("  ", 78, 100), _span("ifi", 96, 100)]  # spans of their own
    for ch, k in zip([c for sp in pieces for c in sp["chars"]], (0, 1, 2, 4, 5, 6), strict=True):
        ch["bbox"] = whole["chars"][k]["bbox"]  # "S" and "ifi" on the whole's
    blocks = [{"lines": [{"spans": pieces, "bbox": whole["bbox"]}]}, _block(whole)]
    assert drop_overprints(blocks) == 4
    assert _texts(blocks) == ["Specifies that"]


def test_a_clipped_glyph_beside_its_twin_and_a_ligatures_letters_stay():
    """A rule of underscores whose first glyph is clipped (docling's form: its box half as wide) lies
    closer to the next than half the next one's width, but not half its own; a ligature ("لا") splits one
    box between its letters, beside a letter of its own kind (round 33: both lost a glyph)."""
    rule = _span("____", 72, 100)
    rule["chars"][0]["bbox"] = (72.0, 100.0, 74.0, 112.0)
    rule["chars"][1]["bbox"] = (74.5, 100.0, 80.5, 112.0)
    kala = _span("کالا", 72, 140)  # kaf, alef, then lam-alef: the last alef's half-box by the first
    kala["chars"][3]["bbox"] = (kala["chars"][1]["bbox"][0] + 1, 140.0, kala["chars"][1]["bbox"][2], 152.0)
    blocks = [_block(rule), _block(kala)]
    assert drop_overprints(blocks) == 0
    assert _texts(blocks) == ["____", "کالا"]


def test_a_line_the_shadow_parted_is_one_line_again():
    """Chromium draws a shadowed heading piece by piece, and PyMuPDF parts the line where a shadow
    comes between its words ("5.2. " + the shadow of "Programs using …", then "Programs using …"). Left
    alone on a page's top, the number read as a running head and the heading was lost (round 33)."""
    number, title = _span("5.2. ", 72, 46), _span("Programs using", 102, 46)
    shadows = [_span("5.2. ", 72, 46.75), _span("Programs using", 102, 46.75)]
    lines = [[shadows[0]], [number, shadows[1]], [title]]
    block = {"lines": [{"spans": spans, "bbox": _union_of(spans), "dir": (1.0, 0.0)} for spans in lines]}
    assert drop_overprints([block]) == 4 + 13
    assert _texts([block]) == ["5.2. Programs using"]
    assert block["lines"][0]["bbox"] == (72, 46, 102 + 14 * 6, 58)


def _union_of(spans: list[dict]) -> tuple[float, float, float, float]:
    boxes = [s["bbox"] for s in spans]
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _row(text: str, x: float, y: float, color: int, weight: int = 400) -> Row:
    return Row([TextLine(text, (x, y, x + 6 * len(text), y + 12), 12.0, weight=weight, color=color)])


def test_names_in_their_kinds_colour_over_summaries_set_in_are_an_option_lists_terms():
    """rustdoc's item names are coloured links, not bold, each over its summary set in by two ems: an
    option list's terms all the same, so no headings (round 33: "IntoIter", "Iter", "IterMut" were,
    their colour read as a heading's accent). A grey or black line over text set in is no term."""
    units: list[Row | Table] = []
    for k, name in enumerate(("IntoIter", "Iter", "IterMut")):
        units += [
            _row(name, 53, 100 + 40 * k, 0xAD378A),
            _row("An iterator over the value.", 77, 118 + 40 * k, 0),
        ]
    terms = indented_terms(units, LayoutConfig())
    assert terms == {id(u) for u in units[::2]}
    plain = [_row(u.text, u.box[0], u.box[1], 0x808080 if u.box[0] < 60 else 0) for u in units]  # grey names
    assert indented_terms(plain, LayoutConfig()) == set()


def test_one_letter_on_the_same_letter_of_another_line_is_no_copy():
    """Node.js prints "Skip to content" at the top of every page, over the text: the "n" of "content"
    lies on the "n" of "On macOS:". One glyph in a span of many is a coincidence, not a shadow; taking it
    out parted the running head ("Skip to co tent") and it came out as text (round 33)."""
    skip = _span("Skip to content", 44, 43)
    on = _span("On macOS:", skip["chars"][13]["bbox"][0] - 6, 42.5)  # its "n" on the last "n"
    blocks = [_block(skip), _block(on)]
    assert drop_overprints(blocks) == 0
    assert _texts(blocks) == ["Skip to content", "On macOS:"]


def test_text_set_sideways_keeps_its_doubled_letters():
    """Sideways, glyphs follow one another down the page, a narrow letter's width apart: "ll" and "ss"
    are two letters each, though closer than a quarter of the size (CI: "follows" lost an "l")."""
    word = _span("Hall pass", 72, 100)
    for k, ch in enumerate(word["chars"]):
        ch["bbox"] = (72.0, 100.0 + 2.5 * k, 84.0, 102.5 + 2.5 * k)
    blocks = [{"lines": [{"spans": [word], "bbox": (72, 100, 84, 122.5), "dir": (0.0, 1.0)}]}]
    assert drop_overprints(blocks) == 0
    assert _texts(blocks) == ["Hall pass"]
