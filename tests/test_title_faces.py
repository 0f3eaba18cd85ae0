"""Titles told from the text by their typeface alone (issue 30, round 11): a report whose subsection
titles are set in a sans at the body's size and weight among serif paragraphs
(``heading_tiers.title_faces``, read by ``headings``).

Before: "Scope", "Risks", "Limitations" … came out as lines of text; only the larger section titles
were headings (the printed probe's report-otherface-2: MHS 0.28).
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from bench.accuracy.printed import build
from ocr_app.structure.heading_tiers import title_faces
from ocr_app.structure.lines import ANY_WEIGHT, DocStyle, TextLine
from tests.factories import heading_texts, page_markdown

STYLE = DocStyle(body_size=10.5, body_font="serif")
PROSE = "Water quality was sampled at forty stations along the river and most of them improved"


def _line(
    text: str, y: float, size: float = 10.5, font: str = "serif", mono: bool = False, weight: int = 0
) -> TextLine:
    return TextLine(
        text, (56.0, y, 56.0 + 5 * len(text), y + size), size, weight=weight, font=font, mono=mono
    )


def _page(*heads: TextLine) -> tuple[float, list[TextLine]]:
    """A page of prose with ``heads`` among it (page height, lines)."""
    body = [_line(PROSE, 200.0 + 14 * k) for k in range(20)]
    return 842.0, [*heads, *body]


def test_a_face_that_sets_the_headings_and_short_body_size_titles_is_a_title_face():
    pages = [
        _page(_line("Results by region", 100, 12.0, "sans"), _line("Scope", 150, font="sans")),
        _page(_line("Risks", 100, font="sans"), _line("Limitations", 150, font="sans")),
    ]
    assert title_faces(pages, STYLE) == {("sans", ANY_WEIGHT), ("sans", 0)}


def test_a_face_is_its_family_at_one_weight():
    """rustdoc sets its section titles and "Examples" in Fira Sans Medium and a version label beside
    every method ("1.8.0 ·") in Fira Sans Regular: the labels, many to a page, spoil only their own
    weight (round 33)."""

    def labels(y: float) -> list[TextLine]:
        return [_line(f"1.{k}.0 ·", y + 30 * k, font="sans", weight=400) for k in range(6)]

    pages = [
        _page(
            _line("Implementations", 100, 14.0, "sans", weight=500),
            _line("Examples", 150, font="sans", weight=500),
        ),
        _page(_line("Panics", 100, font="sans", weight=500), *labels(300)),
        _page(_line("Examples", 100, font="sans", weight=500), *labels(300)),
    ]
    assert title_faces(pages, STYLE) == {("sans", 500)}


@pytest.mark.parametrize(
    "pages, why",
    [
        (
            [_page(_line("Scope", 100, font="sans")), _page(_line("Risks", 100, font="sans"))],
            "no heading larger than the body in that face",
        ),
        (
            [
                _page(_line("Results by region", 100, 12.0, "sans"), _line("Scope", 150, font="sans")),
                _page(
                    _line("Risks", 100, font="sans"), _line("Readers wrote to us about it.", 150, font="sans")
                ),
            ],
            "a sentence set in it (a sidebar's text)",
        ),
        (
            [
                _page(_line("Results by region", 100, 12.0, "sans"), _line("Scope", 150, font="sans")),
                _page(_line("Risks", 100, font="sans", mono=True)),
            ],
            "code",
        ),
        (
            [
                _page(
                    _line("Results by region", 100, 12.0, "sans"),
                    _line("Scope", 150, font="sans"),
                    _line("Risks", 170, font="sans"),
                ),
                _page(),
            ],
            "body-size lines on one page only (a cover's authors)",
        ),
        (
            [
                _page(
                    _line("Results by region", 100, 12.0, "sans"),
                    *[_line("725", 120 + 5 * k, font="sans") for k in range(6)],
                ),
                _page(*[_line("Q2 2026", 100 + 5 * k, font="sans") for k in range(6)]),
            ],
            "many to a page (a table's cells)",
        ),
    ],
)
def test_other_faces_are_no_title_face(pages, why):
    assert title_faces(pages, STYLE) == frozenset(), why


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("faces")
    build(out, ("report-otherface-2",))
    return out


def test_every_title_of_a_report_set_apart_by_typeface_is_a_heading(textlayer_engine, report):
    pdf = report / "pdf" / "report-otherface-2.pdf"
    with pymupdf.open(pdf) as doc:
        md = "\n\n".join(page_markdown(textlayer_engine, pdf, k) for k in range(doc.page_count))
    truth = (report / "gt" / "report-otherface-2.md").read_text(encoding="utf-8")
    want = [h.lstrip("#").strip() for h in truth.splitlines() if h.startswith("#")]
    assert heading_texts(md) == want, md
    assert "Scope" in want and "Limitations" in want  # the titles set apart by typeface alone
