"""Lists only where a marker starts a line at the list's indent (issue 30 item 5): on born-digital
pages a wrapped line that happens to start like a list item ("B. Jones", "12. The", "a) and") stays in
its paragraph or list item, while real lists — after a lead-in, numbers right-aligned (" 9." over
"10."), items without a full stop, nested items — stay lists. Each page is built here with PyMuPDF at
chosen x positions and read by the real text-layer engine."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from ocr_app.structure.pipeline import blocks_to_markdown
from tests.factories import pdf_page_request

SIZE = 11.0
LEADING = 14.0


def _page(pdf: Path, rows: list[tuple[float, str]]) -> Path:
    """One page, one ``(x, text)`` row under the other at the body's leading."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        for k, (x, text) in enumerate(rows):
            page.insert_text((x, 100 + LEADING * k), text, fontsize=SIZE, fontname="helv")
        doc.save(pdf)
    return pdf


def _markdown(engine, pdf: Path) -> str:
    [out] = engine.predict_batch([pdf_page_request(pdf, 0, dpi=72)])
    return blocks_to_markdown(out.blocks)


def _width(text: str) -> float:
    return pymupdf.get_text_length(text, fontsize=SIZE)


def test_a_wrapped_line_that_starts_like_a_marker_stays_in_its_paragraph(textlayer_engine, tmp_path):
    lines = [
        "The committee published its first findings in a joint report written by A. Smith and",
        "B. Jones, which the board read in the spring of that year; the sums it gave in item",
        "12. The board accepted them without a vote, and the report was filed with the rest",
        "a) and b) of the appendix, as the rules of the committee required it to do then.",
    ]
    widest = max(_width(t) for t in lines)
    assert all(_width(t) >= widest - 2 * SIZE for t in lines[:-1])  # the wrapped lines run full
    md = _markdown(textlayer_engine, _page(tmp_path / "wrapped.pdf", [(72, t) for t in lines]))
    assert md == " ".join(lines)


def test_a_numbered_list_after_a_lead_in_with_right_aligned_numbers_stays_one_list(
    textlayer_engine, tmp_path
):
    digit = _width("0")
    rows = [(72, "The installation needs the following steps, in the order given here:")]
    steps = [
        "Copy the archive to the server and unpack it into the folder chosen for",
        "Read the notes that come with the archive",
        "Start the service",
        "Check the log",
        "Open the port",
        "Add the users",
        "Set the quotas",
        "Plan the backups",
        "Test a restore",
        "Tell the users",
        "Close the ticket",
    ]
    for n, step in enumerate(steps, start=1):
        marker = f"{n}."
        # Numbers set flush right at one tab stop: " 9." sits one digit width right of "10.".
        rows.append((72 + (2 - len(str(n))) * digit + 0, f"{marker} {step}"))
        if n == 1:
            # The first item wraps; its next line starts at the item's text and with a number.
            rows.append((72 + _width("10. "), "2. the service in section 4 of the guide"))
    md = _markdown(textlayer_engine, _page(tmp_path / "numbered.pdf", rows))
    lead, listed = md.split("\n\n")
    assert lead == rows[0][1]
    items = listed.split("\n")
    assert len(items) == 11, items
    assert items[0] == (
        "1. Copy the archive to the server and unpack it into the folder chosen for 2. the service in "
        "section 4 of the guide"
    )
    assert items[8:] == ["9. Test a restore", "10. Tell the users", "11. Close the ticket"]


def test_bullet_items_without_a_full_stop_and_nested_items_stay_list_items(textlayer_engine, tmp_path):
    items = [
        "An item that states a fact without a full stop and runs all the way to the edge",
        "A second item that also states a fact without a stop and runs to the edge too",
        "A third and short one",
    ]
    rows = [(72, "Some facts first.")]
    rows += [(90, f"\u2022 {t}") for t in items]
    rows += [(110, "a) a nested point under the third item"), (110, "b) and another one")]
    rows += [(90, "\u2022 A fourth item back at the outer level")]
    md = _markdown(textlayer_engine, _page(tmp_path / "bullets.pdf", rows))
    assert md == (
        "Some facts first.\n\n"
        + "\n".join(f"- {t}" for t in items)
        + "\n    - a) a nested point under the third item\n    - b) and another one"
        + "\n- A fourth item back at the outer level"
    )


def _entries(pdf: Path, entries: list[tuple[str, list[str]]]) -> Path:
    """A reference list: each label at x 72, its text a tab further at x 95, wrapped lines under it."""
    with pymupdf.open() as doc:
        page = doc.new_page()
        y = 100.0
        for label, lines in entries:
            page.insert_text((72, y), label, fontsize=10, fontname="helv")
            for text in lines:
                page.insert_text((95, y), text, fontsize=10, fontname="helv")
                y += 12
            y += 2
        doc.save(pdf)
    return pdf


def test_labelled_entries_keep_their_wrapped_lines_and_each_entry_is_its_own_paragraph(
    textlayer_engine, tmp_path
):
    entries = [
        ("[1]", ["A. Author and B. Writer. A study of tables in documents nobody here made, in",
                 "Proceedings of the Layout Workshop, pages 10-19, 2001."]),
        # A first line that stops short of the column's edge: its next line still hangs under the text.
        ("[2]", ["D. Editor and E. Critic. Lists at their own indent, not at every wrapped line,",
                 "in Proc. Layout Analysis, pages 1-9, 2003."]),
        ("[3]", ["F. Scholar. Reading order across columns of text, Document Analysis and",
                 "Recognition 7: 100-120, 2005."]),
    ]  # fmt: skip
    md = _markdown(textlayer_engine, _entries(tmp_path / "refs.pdf", entries))
    assert md.split("\n\n") == [f"{label} {' '.join(lines)}" for label, lines in entries]
    # One line each, every line as wide as the next: the labels at the tab still part the entries.
    short = [
        ("[1]", ["A. Author and B. Writer. A study of tables in documents nobody here made."]),
        ("[2]", ["C. Reader. Headings from the whole document, Journal of Structure 12."]),
        ("[3]", ["D. Editor and E. Critic. Lists at their own indent. Proc. Layout 2003."]),
    ]
    md = _markdown(textlayer_engine, _entries(tmp_path / "short.pdf", short))
    assert md.split("\n\n") == [f"{label} {lines[0]}" for label, lines in short]
