"""Right-to-left lines read in the order a reader takes them, whatever order the PDF wrote the glyphs in.

Producers of Arabic and Persian PDFs write a word's trailing comma before the word, a colon after the
space that follows it, and a Latin word's space on its right (docling's right_to_left_02 and _03 do
all three); the text layer took that order as written ("،وعليه" for "وعليه،"). ``rtl_order`` orders
a span's glyphs by where they stand, right to left, keeping left-to-right runs (digits, Latin words)
left to right. Checked on glyphs placed as those producers place them, and on the real PDF.
"""

from __future__ import annotations

from pathlib import Path

from ocr_app.engines.rtl_order import is_rtl_span, logical_order

SIZE = 12.0
DATA = Path(__file__).parent / "data" / "public" / "rtl"


def _glyphs(placed: list[tuple[str, float, float]]) -> list[dict]:
    """rawdict-like chars, in the order given (the producer's), each at its x-range on one line."""
    return [{"c": c, "bbox": (x0, 100.0, x1, 112.0)} for c, x0, x1 in placed]


def _text(chars: list[dict]) -> str:
    return "".join(ch["c"] for ch in logical_order(chars, SIZE))


def _word(word: str, right: float, width: float = 5.0) -> list[tuple[str, float, float]]:
    """``word``'s letters in logical order, set right to left from ``right``."""
    return [(c, right - (k + 1) * width, right - k * width) for k, c in enumerate(word)]


def test_a_comma_written_before_its_word_follows_it():
    # "وعليه، فإن": the comma stands left of "وعليه" but was written first
    comma = [("،", 172.0, 175.0)]
    chars = _glyphs(comma + _word("وعليه", 200.0) + [(" ", 169.0, 172.0)] + _word("فإن", 168.0))
    assert _text(chars) == "وعليه، فإن"


def test_a_colon_written_after_its_space_goes_back_to_its_word():
    # "رعساخ: وضع": the space (x 176-179) was written before the colon (179-182)
    chars = _glyphs([*_word("رعساخ", 207.0), (" ", 176.0, 179.0), (":", 179.0, 182.0), *_word("وضع", 175.0)])
    assert _text(chars) == "رعساخ: وضع"


def test_digits_and_latin_words_keep_their_left_to_right_order():
    # "للفترة 2024-2026 مع Python و R": the number and the Latin words are set left to right
    number = [(d, 150.0 + 5 * k, 155.0 + 5 * k) for k, d in enumerate("2024-2026")]
    python = [(c, 80.0 + 5 * k, 85.0 + 5 * k) for k, c in enumerate("Python")]
    chars = _glyphs(
        [
            *_word("للفترة", 230.0),
            (" ", 197.0, 200.0),
            *number,
            (" ", 147.0, 150.0),
            *_word("مع", 146.0),
            (" ", 113.0, 116.0),
            *python,
            (" ", 110.0, 113.0),  # the Latin word's space on its right, where an LTR run puts it
            ("و", 72.0, 77.0),
        ]
    )
    assert _text(chars) == "للفترة 2024-2026 مع Python و"


def test_two_numbers_apart_stay_in_right_to_left_order():
    # "(2024 - 2026)" in an RTL line is set "2026 - 2024" left to right: each number is its own run
    first = [(d, 160.0 + 5 * k, 165.0 + 5 * k) for k, d in enumerate("2024")]
    second = [(d, 120.0 + 5 * k, 125.0 + 5 * k) for k, d in enumerate("2026")]
    chars = _glyphs([*first, (" ", 150.0, 153.0), ("-", 145.0, 150.0), (" ", 142.0, 145.0), *second])
    assert _text(chars) == "2024 - 2026"


def test_marks_and_zero_width_glyphs_stay_with_their_letter():
    fatha = {"c": "\u064e", "bbox": (196.0, 98.0, 199.0, 100.0)}  # over the first letter, right of its centre
    alef = {"c": "\u0627", "bbox": (185.0, 100.0, 185.0, 112.0)}  # zero width, written before its lam
    chars = [{"c": "ك", "bbox": (195.0, 100.0, 200.0, 112.0)}, fatha, alef]
    chars += [{"c": "ل", "bbox": (185.0, 100.0, 195.0, 112.0)}]
    assert _text(chars) == "ك\u064e\u0627ل"  # the caller mends alef-before-lam into "لا"


def test_glyphs_already_in_reading_order_come_back_as_they_were():
    chars = _glyphs([*_word("الحكومة", 200.0), (" ", 162.0, 165.0), *_word("المصرية", 162.0)])
    assert _text(chars) == "الحكومة المصرية"
    assert is_rtl_span(chars)
    assert not is_rtl_span(_glyphs([(c, 10.0 * k, 10.0 * k + 5) for k, c in enumerate("Python")]))


def test_the_text_layer_reads_a_real_arabic_page_in_order():
    """docling's right_to_left_02 (MIT): the comma after "وعليه", the years in their order."""
    from ocr_app.engines.textlayer import TextLayerEngine
    from tests.factories import pages_markdown

    md = pages_markdown(TextLayerEngine(), DATA / "right_to_left_02.pdf")[0]
    assert md.startswith("وعليه، فإن الحكومة المصرية"), md[:200]
    assert "،وعليه" not in md
    assert "(2024 - 2026)" in md
    assert "مصووور 2023، وتوصوووي" in md
