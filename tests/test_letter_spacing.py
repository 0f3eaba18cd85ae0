"""Letter-spaced words read as words (issue 30, round 29): designed documents track their headings and
buttons, and MuPDF puts a synthetic space into each gap between the letters ("A N N U A L  R E P O R T",
Node.js's "C O P Y" buttons as headings). Ordinary type keeps every word space MuPDF adds. Real
text-layer engine; pages printed by Chromium, or written with PyMuPDF one word at a time."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from tests.factories import heading_texts, pages_markdown

BODY = "Our revenue grew in every region this year, and the board proposes a higher dividend. " * 4
SENTENCE = "a b c and I saw a cat in the yard"
HEADS = ["Letter from the chair", "Financial review 2025", "Outlook for next year"]


def _report(tracking: str) -> str:
    style = (
        "<style>body{font-family:'DejaVu Serif';font-size:10.5pt} h1,h2{font-family:'DejaVu Sans';"
        f"letter-spacing:{tracking};text-transform:uppercase}} h2{{font-size:13pt}}"
        ".copy{letter-spacing:0.15em;font:bold 8pt sans-serif;text-transform:uppercase}</style>"
    )
    parts = [style, "<h1>Annual report</h1>"]
    for head in HEADS:
        parts.append(f"<h2>{head}</h2><p>{BODY}</p><p>{BODY}<button class=copy>copy</button></p>")
    return "".join(parts)


@pytest.mark.parametrize("tracking", ["0.08em", "0.25em", "0.45em"])
def test_tracked_headings_read_as_words(textlayer_engine, printer, tracking):
    """Before: "## L E T T E R F R O M T H E C H A I R", the words' own spaces lost among the
    letters' synthetic ones."""
    md = pages_markdown(textlayer_engine, printer(f"tracked{tracking}", _report(tracking)))[0]
    assert "# ANNUAL REPORT" in md, md[:400]
    for head in HEADS:
        assert f"## {head.upper()}" in md, (head, md[:600])
    assert md.count("COPY") == len(HEADS), md  # the tracked button is one word: "C OPY" before


def _words_pdf(tmp_path, lines: list[list[tuple[float, str]]]) -> Path:
    """A page whose words are each placed on their own, with no space glyphs between them: MuPDF
    makes every word space a synthetic one."""
    doc = pymupdf.open()
    page = doc.new_page()
    for row, words in enumerate(lines):
        for x, word in words:
            page.insert_text((x, 100 + 24 * row), word, fontsize=11, fontname="helv")
    path = tmp_path / "words.pdf"
    doc.save(path)
    return path


def test_synthetic_word_spaces_stay(textlayer_engine, tmp_path):
    """Words in ordinary type, a row of single letters set apart like a table's columns, and
    single-letter words: every synthetic space between them is kept."""
    font = pymupdf.Font("helv")
    sentence: list[tuple[float, str]] = []
    x = 72.0
    for word in SENTENCE.split():
        sentence.append((x, word))
        x += font.text_length(word, 11) + 3.2  # a tight justified line's word space
    columns = [(72.0 + 60 * k, letter) for k, letter in enumerate("WXYZ")]
    md = pages_markdown(textlayer_engine, _words_pdf(tmp_path, [sentence, columns]))[0]
    assert SENTENCE in md, md
    assert "W" in md and "WXYZ" not in md and "WX" not in md, md


def _code_panels(wide: bool) -> str:
    """Node.js's print: each code listing in a shaded panel, a "copy" button floated right at its
    foot (bold white capitals on a green pill, tracked). ``wide``: a line of the listing reaches under
    the button (it is read in the listing's column); else the buttons make a column of their own."""
    style = (
        "<style>body{font-family:'Liberation Sans';font-size:9pt} h2{font-size:14pt}"
        "pre{background:#f2f2f2;padding:12pt;font:8.1pt 'Liberation Mono'}"
        ".copy{float:right;background:#2f7d32;color:white;border:0;border-radius:500px;min-width:7.5rem;"
        "padding:0 .5rem;height:1.5rem;font:bold 10px 'Liberation Sans';letter-spacing:2px;"
        "text-transform:uppercase}</style>"
    )
    code = (
        "<span style='color:#a626a4'>const</span> { lookup, reverse } = <span style='color:#4078f2'>require"
        "</span>(<span style='color:#50a14f'>'node:dns'</span>);\n"
        "lookup(<span style='color:#50a14f'>'example.org'</span>, (err, address, family) =&gt; {\n"
        "  console.<span style='color:#4078f2'>log</span>(<span style='color:#50a14f'>'address: %j family: "
        "IPv%s'</span>, address, family);\n"
        "}); <span style='color:#a0a1a7'>// prints the address of example.org once known</span>"
    )
    if wide:
        code += (
            "\n<span style='color:#a0a1a7'>// address: &quot;2606:2800:21f:cb07:6820:80da:af6b:8b2c&quot; "
            "family: IPv6, or an IPv4 address</span>"
        )
    parts = [style]
    for head in HEADS * 3:  # three pages: a document with a style of its own
        parts.append(
            f"<h2>{head}</h2><p>{BODY}</p><p>{BODY}</p><pre>{code}<button class=copy>copy</button></pre>"
        )
    return "".join(parts)


@pytest.mark.parametrize("wide", [True, False])
def test_a_button_at_a_code_panels_foot_is_no_heading(textlayer_engine, printer, wide):
    """Node.js's "COPY" button, bold white capitals on a pill in the right part of each code panel:
    kept as text, never a heading (314 of Node's 1,864 headings were one), whether it is read in its
    listing's column or in a column of buttons of its own."""
    md = "\n\n".join(pages_markdown(textlayer_engine, printer(f"copy-buttons-{wide}", _code_panels(wide))))
    assert heading_texts(md) == HEADS * 3, md
    assert md.count("COPY") == 3 * len(HEADS), md
