"""``structure.paragraphs``: line joins with hyphen mends, the document vocabulary, list markers, code
blocks, and the continuation rules (hanging indents, en-dash line starts, marker-like wrapped lines)."""

from __future__ import annotations

import pytest

from ocr_app.structure.lines import Row, TextLine
from ocr_app.structure.paragraphs import (
    URL_LINE,
    Pending,
    code_block,
    dash_continues,
    hanging,
    join_lines,
    label_text_x,
    list_marker,
    next_entry,
    next_numbered,
    vocabulary_of,
    wrapped_marker,
)


@pytest.mark.parametrize(
    ("a", "b", "joined"),
    [
        ("docu\u00ad", "ment", "document"),  # a soft hyphen always goes
        ("docu-", "ment", "document"),  # a word broken at the line end
        ("self-", "organising", "self-organising"),  # a compound's first half
        ("state-of-the-", "art", "state-of-the-art"),  # part of a longer compound
        ("non-", "English", "non-English"),  # upper case after the hyphen: a real one
        ("COVID-", "19", "COVID-19"),
        ("Hello", "world", "Hello world"),
        ("", "alone", "alone"),
        ("这是", "一个例子", "这是一个例子"),  # Chinese joins without a space
    ],
)
def test_join_lines(a, b, joined):
    assert join_lines(a, b) == joined


def test_the_broken_word_is_looked_for_at_the_paragraphs_end_only():
    """``_tail_word`` answers what a search of the whole paragraph answers, on texts that end in a
    hyphen or not, whose last word runs back past the window or not, with a final newline or not;
    and a long paragraph joined line by line still mends its last broken word."""
    import random

    from ocr_app.structure import paragraphs

    rng = random.Random(5)
    alphabet = ["a", "Z", "é", "1", "_", "-", " ", ".", "\u00ad", "\u2010", "\n", "ß"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice([1, 3, 40, 300, 700])))
        whole, tail = paragraphs._TAIL_WORD.search(text), paragraphs._tail_word(text)
        assert (whole and whole.groups()) == (tail and tail.groups()), repr(text[-30:])
    word = "x" * (paragraphs.TAIL_WINDOW + 50) + "-"  # a run longer than the window
    assert (
        paragraphs._tail_word("see " + word).groups() == paragraphs._TAIL_WORD.search("see " + word).groups()
    )
    text = ""
    for k in range(200):
        text = join_lines(text, f"line {k} of a long paragraph set in a narrow col-")
    assert join_lines(text, "umn") == text[:-1] + "umn"


def test_the_documents_own_spelling_decides_a_broken_compound():
    assert join_lines("co-", "operate") == "cooperate"
    hyphenated = frozenset(vocabulary_of(["we co-operate with them"]))
    assert join_lines("co-", "operate", hyphenated) == "co-operate"
    assert join_lines("some-", "thing", frozenset({"something"})) == "something"


def test_vocabulary_leaves_out_the_broken_half_at_a_line_end():
    words = vocabulary_of(["a well-known fact about docu-", "ment"])
    assert {"well-known", "well", "known", "fact", "ment"} <= words
    assert "docu" not in words


@pytest.mark.parametrize(
    ("text", "marker"),
    [
        ("• first item", ("-", "first item")),
        ("- dash item", ("-", "dash item")),
        ("• • doubled glyph", ("-", "doubled glyph")),
        ("1. First", ("1.", "First")),
        ("a) option", ("a)", "option")),
        ("iv. fourth", ("iv.", "fourth")),
        ("2.1 Scope", None),  # a section number, not a list
        ("-5 degrees", None),  # no space after the dash
        ("Plain text", None),
    ],
)
def test_list_marker(text, marker):
    assert list_marker(text) == marker


def test_code_block_rebuilds_indentation_from_left_edges_and_fences_around_backticks():
    md = code_block(["def f():", "return 1"], [(100, 0, 180, 10), (120, 12, 200, 22)])
    assert md == "```\ndef f():\n  return 1\n```"
    fenced = code_block(["```bash", "ls -l"], [(100, 0, 170, 10), (100, 12, 150, 22)])
    assert fenced.startswith("````\n") and fenced.endswith("\n````")


def test_code_block_keeps_the_blank_lines_of_its_listing():
    """A line standing two or three pitches under the one before has one or two blank lines over it
    (a listing's paragraphs: imports, then the calls); never more than ``MAX_BLANK_LINES``."""
    lines = ["import x", "a = x.f()", "b = x.g()", "print(a, b)", "end()"]
    tops = [0, 27, 40.5, 81, 300]
    boxes = [(60, y, 60 + 6 * len(t), y + 8) for t, y in zip(lines, tops, strict=True)]
    md = code_block(lines, boxes)
    assert md == "```\nimport x\n\na = x.f()\nb = x.g()\n\n\nprint(a, b)\n\n\nend()\n```", md


def test_a_url_line_is_text_even_in_a_typewriter_face():
    assert URL_LINE.match("https://example.com/a/b")
    assert URL_LINE.match("<someone@example.org>")
    assert not URL_LINE.match("print(x)")


def _open(text: str, right_edge: float) -> Pending:
    last = Row([TextLine(text[-20:], (50, 100, right_edge, 110), 10.0)])
    return Pending("text", 0, [text], [last.box], last, 50.0, 10.0)


def test_a_full_line_that_ends_no_sentence_makes_the_next_indented_line_a_continuation():
    assert hanging(_open("[1] A. Author. A study of tables, in", 545), right=550, size=10)
    assert not hanging(_open("[1] A. Author. A study of tables.", 545), right=550, size=10)
    assert not hanging(_open("[1] A. Author. A study of tables, in", 300), right=550, size=10)


def test_an_en_dash_line_start_continues_an_unfinished_paragraph_only():
    assert dash_continues(_open("firms with a staff of 51", 500), "– 99 staff", big_gap=False)
    assert not dash_continues(_open("The list follows.", 500), "– first item", big_gap=False)
    assert not dash_continues(_open("firms with a staff of 51", 500), "– 99 staff", big_gap=True)
    assert not dash_continues(None, "– 99 staff", big_gap=False)
    assert not dash_continues(_open("firms with a staff of 51", 500), "- 99 staff", big_gap=False)


def _row(text: str, x0: float) -> Row:
    return Row([TextLine(text, (x0, 112, x0 + 200, 122), 10.0)])


def _open_block(text: str, right_edge: float, kind: str = "text") -> Pending:
    """An open paragraph (or list item, its marker at x 50) whose one line is ``text``."""
    last = Row([TextLine(text, (50, 100, right_edge, 110), 10.0)])
    return Pending(kind, 0, [text], [last.box], last, 55.0 if kind == "list" else 50.0, 10.0, [50.0])


def test_a_marker_like_wrapped_line_continues_only_at_the_blocks_own_left_edge():
    para = _open_block("A joint report on the findings, written by A. Smith and", 545)
    assert wrapped_marker(para, _row("B. Jones, which the board read.", 50), right=550, big_gap=False)
    assert not wrapped_marker(para, _row("1. an item set apart", 70), right=550, big_gap=False)
    assert not wrapped_marker(para, _row("B. Jones, which the board read.", 50), right=550, big_gap=True)
    finished = _open_block("A joint report on the findings came out in the spring.", 545)
    assert not wrapped_marker(finished, _row("1. First item", 50), right=550, big_gap=False)
    short = _open_block("1. Parent item", 545)  # the widest line of a narrow list, not running text
    assert not wrapped_marker(short, _row("2. Next item", 50), right=550, big_gap=False)
    item = _open_block("1. Copy the archive to the server and unpack it in", 545, "list")
    assert wrapped_marker(item, _row("2. the folder of section 4", 62), right=550, big_gap=False)
    assert not wrapped_marker(item, _row("2. Read the notes", 50), right=550, big_gap=False)  # a sibling
    assert not wrapped_marker(item, _row("10. Read the notes", 44), right=550, big_gap=False)  # right-aligned


def _pieces(*pieces: tuple[str, float, float], y: float = 112) -> Row:
    return Row([TextLine(t, (x0, y, x1, y + 10), 10.0) for t, x0, x1 in pieces])


def test_an_entry_label_set_a_tab_apart_gives_the_text_x_and_parts_the_next_entry():
    assert label_text_x(_pieces(("[3]", 72, 86), ("D. Editor.", 95, 300))) == 95
    assert label_text_x(_pieces(("[3]", 72, 86), ("D. Editor.", 87, 300))) is None  # no tab: one run
    assert label_text_x(_pieces(("In", 72, 84), ("the text", 95, 300))) is None  # no label
    first = _pieces(("[1]", 72, 86), ("A. Author. A study.", 95, 300), y=100)
    entry = Pending("text", 0, ["[1] A. Author. A study."], [first.box], first, 72.0, 10.0, text_x=95.0)
    assert next_entry(entry, _pieces(("[2]", 72, 86), ("C. Reader.", 95, 300)))
    assert not next_entry(entry, _pieces(("[2]", 72, 86), ("C. Reader.", 120, 300)))  # another tab
    assert not next_entry(entry, _pieces(("12 the method", 72, 300)))  # a wrapped line


@pytest.mark.parametrize(
    "first, line, x0, entry",
    [
        ("6.2.1. Multiple profiling dumps", "6.2.2. Limiting the range", 50, True),  # the next one
        ("6.2.5. Forking Programs", "6.3. Command-line Options", 30, True),  # its parent's next
        ("6.2.5. Forking Programs", "7.1. Introduction", 30, False),  # no number follows 6.2.5 so
        ("6.2.1. Multiple profiling dumps", "6.2.3. Counting events", 50, False),  # one skipped
        ("6.2. Advanced Usage", "6.2.1. Multiple profiling dumps", 50, False),  # a child: set in apart
        ("6.2.1. Multiple profiling dumps", "6.2.2. Limiting the range", 80, False),  # set in further
        ("The rate rose from 1.2 to", "1.3 per cent over the year", 50, False),  # prose
    ],
)
def test_a_line_on_the_number_after_the_paragraphs_own_opens_an_entry(first, line, x0, entry):
    last = Row([TextLine(first, (50, 100, 300, 110), 10.0)])
    cur = Pending("text", 0, [first], [last.box], last, 50.0, 10.0)
    row = Row([TextLine(line, (x0, 112, x0 + 200, 122), 10.0)])
    assert next_numbered(cur, row) is entry


def test_a_term_in_code_hangs_its_descriptions_lines_and_a_lone_piece_hangs_none():
    """``label_text_x``: a name in code before its description on the row ("browse   browse the …") hangs
    the description's lines at the description's x; a row of one piece in code has no label (Expat's
    page 7 raised IndexError on it in a first version)."""
    term = TextLine("browse", (100, 75, 140, 88), 10.8, mono=True)
    text = TextLine("browse the dependency graph in a web browser.", (175, 75, 473, 87), 10.8)
    assert label_text_x(Row([term, text])) == 175
    assert label_text_x(Row([term])) is None
    assert label_text_x(Row([TextLine("browse", (100, 75, 140, 88), 10.8), text])) is None  # not code
