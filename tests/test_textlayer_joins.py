"""Lines of born-digital pages joined as a reader reads them (issue 34, item 7): a word broken at a
line-end hyphen mended and a compound's hyphen kept, a web address set in a typewriter face left in its
sentence, a title broken over two lines kept as one heading with the first page's own header apart from
it, and Chinese/Japanese lines wrapped inside a sentence joined without a space. Each page is built here
with PyMuPDF and read by the real text-layer engine."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from ocr_app.structure.paragraphs import join_lines
from tests.factories import pdf_page_request

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
]


def _lines(page: pymupdf.Page, lines: list[str], y: float = 100, **kw) -> float:
    for text in lines:
        page.insert_text((72, y), text, fontsize=kw.get("fontsize", 11), fontname=kw.get("fontname", "helv"))
        y += kw.get("leading", 14)
    return y


def _read(engine, pdf: Path, index: int = 0):
    [out] = engine.predict_batch([pdf_page_request(pdf, index, dpi=72)])
    return out.blocks


def _body(n: int, count: int) -> list[str]:
    """Lines of one paragraph of ordinary prose, different on every page (a line repeated on every page
    is a running one). Only the last ends a sentence: a line of its own that ends one, where the next
    word would have fitted, ends its paragraph."""
    return [
        " ".join(WORDS[(i * 7 + n * 5 + k) % len(WORDS)] for k in range(10)).capitalize()
        + ("." if i == count - 1 else ",")
        for i in range(count)
    ]


def test_a_word_broken_at_a_line_end_is_mended_and_a_compound_keeps_its_hyphen(textlayer_engine, tmp_path):
    pdf = tmp_path / "hyphens.pdf"
    with pymupdf.open() as doc:
        _lines(
            doc.new_page(),
            [
                "The method was first described by Ger-",
                "stein and colleagues, in a docu-",
                "ment on self-organising maps; see the well-",
                "known results and the state-of-the-",
                "art review, which covers non-",
                "English sources and COVID-",
                "19 studies as well.",
            ],
        )
        doc.save(pdf)
    [block] = _read(textlayer_engine, pdf)
    assert block.text == (
        "The method was first described by Gerstein and colleagues, in a document on self-organising maps; "
        "see the well-known results and the state-of-the-art review, which covers non-English sources and "
        "COVID-19 studies as well."
    )


@pytest.mark.parametrize(
    ("a", "b", "joined"),
    [
        ("described by Ger-", "stein", "described by Gerstein"),  # a name broken at the line end
        ("a docu-", "ment", "a document"),
        ("the well-", "known", "the well-known"),  # a compound's first half: kept
        ("the state-of-the-", "art", "the state-of-the-art"),
        ("non-", "English", "non-English"),  # upper-case continuation: a real hyphen
        ("ein Beispiel\u2010", "wort", "ein Beispielwort"),  # U+2010 HYPHEN breaks words too
        ("ここに含まれ", "ています。", "ここに含まれています。"),
        ("季度收入", "增长。", "季度收入增长。"),
        ("한국어", "문장입니다", "한국어 문장입니다"),  # Korean spaces its words
    ],
)
def test_the_join_rule(a, b, joined):
    assert join_lines(a, b) == joined


def test_a_web_address_in_a_typewriter_face_stays_in_its_sentence(textlayer_engine, tmp_path):
    pdf = tmp_path / "url.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page()
        y = _lines(page, ["The full list of options is in the manual at"])
        y = _lines(page, ["https://example.org/manual/chapter-3/index.html"], y, fontname="cour")
        y = _lines(page, ["which is updated with every release."], y)
        y = _lines(page, ["Listing:"], y + 20)
        _lines(
            page,
            ["curl -O \\", "https://example.org/release.tar.gz", "tar xf release.tar.gz"],
            y,
            fontname="cour",
        )
        doc.save(pdf)
    blocks = _read(textlayer_engine, pdf)
    assert [b.label for b in blocks] == ["text", "text", "code"], [(b.label, b.text) for b in blocks]
    assert blocks[0].text == (
        "The full list of options is in the manual at https://example.org/manual/chapter-3/index.html "
        "which is updated with every release."
    )
    assert "https://example.org/release.tar.gz" in blocks[2].text  # inside a listing it is code


def test_a_two_line_title_stays_one_heading_and_the_first_pages_header_stays_apart(
    textlayer_engine, tmp_path
):
    """Page 1 has its own header line (the proceedings' citation) where the running header of the other
    pages stands, set like the title under it: it is a page header, not the title's first line."""
    pdf = tmp_path / "paper.pdf"
    with pymupdf.open() as doc:
        for n in range(4):
            page = doc.new_page()
            header = (
                "Proceedings of the Example Conference 2025, pages 101-115"
                if n == 0
                else "A. Author, B. Writer"
            )
            page.insert_text((72, 50), header, fontsize=16, fontname="hebo")
            y = 78
            if n == 0:
                page.insert_text(
                    (72, y), "Hyphenation, Headings and Running Headers", fontsize=16, fontname="hebo"
                )
                page.insert_text((72, y + 20), "in Born-Digital Documents", fontsize=16, fontname="hebo")
                y += 60
            _lines(page, _body(n, 30), y)
        doc.save(pdf)
    blocks = _read(textlayer_engine, pdf)
    assert (blocks[0].label, blocks[0].text) == (
        "page_header", "Proceedings of the Example Conference 2025, pages 101-115",
    )  # fmt: skip
    heading = blocks[1]
    assert heading.label in ("title", "sub_title")
    assert heading.text.lstrip("# ") == "Hyphenation, Headings and Running Headers in Born-Digital Documents"
    assert [b.label for b in blocks[2:]] == ["text"]
    assert _read(textlayer_engine, pdf, 1)[0].label == "page_header"


def test_japanese_and_chinese_lines_wrapped_in_a_sentence_join_without_a_space(textlayer_engine, tmp_path):
    pdf = tmp_path / "cjk.pdf"
    japanese = "日本語の文章はここから始まり、長い行は次の行へ折り返されて続きます。ここに含まれています。"
    chinese = "中文文本在这里开始，较长的句子会在下一行继续，季度收入持续增长，这里没有多余的空格。"
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_htmlbox(pymupdf.Rect(72, 72, 300, 200), f"<p>{japanese}</p>", css="p{font-size:11pt}")
        page.insert_htmlbox(pymupdf.Rect(72, 260, 300, 400), f"<p>{chinese}</p>", css="p{font-size:11pt}")
        doc.save(pdf)
        assert len(doc[0].get_text("dict")["blocks"][0]["lines"]) >= 3  # the sentences do wrap
    blocks = _read(textlayer_engine, pdf)
    assert [b.text for b in blocks] == [japanese, chinese]


@pytest.mark.parametrize(("regular", "bold"), [("tiro", "tibo"), ("helv", "hebo")])
def test_a_drop_cap_starts_its_paragraphs_first_word(textlayer_engine, tmp_path, regular, bold):
    """A magazine's drop cap: one capital set over three lines, the first three lines indented beside
    it. Read alone, the letter landed mid-paragraph ("S planned in …") and the paragraph began with
    "mall towns"; it is the first word's first letter, and the paragraph is one."""
    pdf = tmp_path / "dropcap.pdf"
    text = "Small towns cut their energy bills by a third in two years, and nobody expected it. " + " ".join(
        _body(1, 6)
    )
    lines: list[str] = []
    line = ""
    for word in text.split():
        width = 240 - (38 if len(lines) < 3 else 0)
        if line and pymupdf.get_text_length(f"{line} {word}", fontname=regular, fontsize=10) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    with pymupdf.open() as doc:
        page = doc.new_page(width=595, height=842)
        page.insert_text((50, 80), "The quiet revolution", fontsize=32, fontname=bold)
        page.insert_text((50, 165), "S", fontsize=44, fontname=bold)
        y = 135.0
        for i, text_line in enumerate(lines):
            page.insert_text((50 + (38 if i < 3 else 0), y), text_line[1:] if i == 0 else text_line, fontsize=10,
                             fontname=regular)  # fmt: skip
            y += 12.5
        page.insert_text((50, y + 20), "A second paragraph follows.", fontsize=10, fontname=regular)
        doc.save(pdf)
    blocks = _read(textlayer_engine, pdf)
    texts = [b.text for b in blocks if b.label != "title"]
    assert texts[0].startswith("Small towns cut their energy bills"), texts
    assert texts[0].endswith(lines[-1]) and "S " not in texts[0], texts
    assert texts[1:] == ["A second paragraph follows."], texts
