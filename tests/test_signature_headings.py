"""API reference pages whose headings are signatures, as rustdoc prints them (issue 30, round 36; real
text-layer engine, pages printed by Chromium with rustdoc's way of setting them, trimmed):
- an impl's heading goes on with its where-clause on lines of its own, set smaller ("impl<I> Clone for
  StepBy<I>" / "where" / "I: Clone,"), and a long signature wraps: both were read as listings, and a
  struct's page lost most of its outline;
- a signature longer than six words standing alone ("fn fmt(&self, f: &mut Formatter<'_>) -> …") is
  a heading like a short one;
- the version since which an item exists is printed flush right beside its signature ("1.0.0 ·"): on
  the signature's line it kept the line from reading as code, several of them were read as a column
  after all the signatures, and where one stood beside a page's first line, page after page, that
  place was taken for a running header's and every page lost its first line."""

from __future__ import annotations

import html

from ocr_app.structure.headings import wrapped_code_titles
from ocr_app.structure.lines import Row, TextLine, listing_rows, margin_label
from ocr_app.structure.page_furniture import page_number_key
from tests.factories import heading_texts, pages_markdown

CSS = (
    "<style>body{font-family:'DejaVu Serif',serif;font-size:16px;line-height:1.4;margin:0 1em}"
    ".code-header{font-family:'DejaVu Sans Mono',monospace;font-weight:600;margin:.6em 0 .3em}"
    "h3.code-header{font-size:1.125rem} h4.code-header{font-size:1rem}"
    ".where{display:block;white-space:pre;font-size:.875em}"
    ".rightside{float:right;font-family:'DejaVu Sans',sans-serif;color:#808080}</style>"
)
PROSE = "Returns a duplicate of the value, which the caller owns and may change freely. Read more"
IMPLS = [("Clone", "1.28.0"), ("Debug", "1.28.0"), ("DoubleEndedIterator", "1.38.0")]
METHODS = [
    ("fn clone(&self) -> StepBy<I>", ""),
    ("fn clone_from(&mut self, source: &Self)", "1.0.0"),
    ("fn fmt(&self, f: &mut Formatter<'_>) -> Result<(), Error>", ""),
    ("fn next_back(&mut self) -> Option<Self::Item>", "1.2.0"),
    ("fn nth_back(&mut self, n: usize) -> Option<Self::Item>", "1.37.0"),
]
PAGE_FIRST = [
    "fn count(self) -> usize",
    "fn last(self) -> usize",
    "fn nth(self) -> usize",
    "fn sum(self) -> u64",
]


def _impl(name: str, label: str) -> str:
    return (
        f"<section><span class='rightside'>{label} · </span><h3 class='code-header'>impl&lt;I&gt; {name} for "
        f"StepBy&lt;I&gt;<span class='where'>where\n    I: {name},</span></h3></section>"
    )


def _method(signature: str, label: str) -> str:
    side = f"<span class='rightside'>{label} · </span>" if label else ""
    # rustdoc marks a signature that returns an iterator with a "ⓘ" in its text face
    mark = "<span style='font-family:DejaVu Sans'> ⓘ</span>" if signature.endswith("Item>") else ""
    sig = html.escape(signature)
    return f"<section>{side}<h4 class='code-header'>{sig}{mark}</h4></section><p>{PROSE}</p>"


COMPARISONS = {
    "lt": "less than",
    "le": "less than or equal to",
    "gt": "greater than",
    "ge": "greater than or equal to",
}


def _comparisons() -> str:
    """Methods with a label and a one-line description each: rows of two cells, as a grid's finder sees
    them, the description's row with an empty second cell."""
    return "".join(
        f"<section><span class='rightside'>1.0.0 · </span><h4 class='code-header'>fn {name}(&amp;self, other: "
        f"&amp;Rhs) -&gt; bool</h4></section><p>Tests {what} for self and other.</p>"
        for name, what in COMPARISONS.items()
    )


AUTO = ["Freeze", "RefUnwindSafe", "Send", "Sync", "Unpin", "UnwindSafe"]


def _auto_traits() -> str:
    """Impl headings stacked with no text between them, the widest ("RefUnwindSafe") over a short one."""
    heads = "".join(
        f"<section><h3 class='code-header'>impl {t} for DefaultRandomSource</h3></section>" for t in AUTO
    )
    # on a page of its own whose lines are all shorter than the widest heading: no room after it
    return (
        "<div style='break-before:page'><h3 class='code-header'>impl Copy for DefaultRandomSource</h3><p>Copies it.</p>"
        f"<h2>Auto Trait Implementations</h2>{heads}<h2>Blanket Implementations</h2><p>Any type.</p></div>"
    )


def _page() -> str:
    first = "".join(_impl(n, v) + _method(*METHODS[k]) for k, (n, v) in enumerate(IMPLS))
    first += "".join(_method(*m) for m in METHODS[len(IMPLS) :]) + _comparisons() + _auto_traits()
    rest = "".join(
        f"<div style='break-before:page'>{_method(sig, '1.0.0')}{_method('fn len(&self) -> usize', '1.0.0')}"
        f"<p>{PROSE}</p></div>"
        for sig in PAGE_FIRST
    )
    return f"{CSS}<h2>Trait Implementations</h2>{first}{rest}"


def test_signatures_with_their_where_clauses_and_version_labels_read_as_the_outline(
    textlayer_engine, printer
):
    pages = pages_markdown(textlayer_engine, printer("rustdoc-like", _page()))
    md = html.unescape("\n\n".join(pages))
    heads = heading_texts(md)
    for name, _ in IMPLS:  # each impl one heading with its where-clause
        assert f"impl<I> {name} for StepBy<I> where I: {name}," in heads, heads
    for signature, _ in METHODS:  # long signatures too
        assert signature in heads, heads
    assert "```" not in md and "<table" not in md, md
    for name in COMPARISONS:
        assert f"fn {name}(&self, other: &Rhs) -> bool" in heads, heads
    for trait in AUTO:  # each a heading of its own
        assert f"impl {trait} for DefaultRandomSource" in heads, heads
    paragraphs = [p.strip() for p in md.split("\n\n")]
    for name, label in IMPLS:
        at = next(
            i
            for i, p in enumerate(paragraphs)
            if p.endswith(f"impl<I> {name} for StepBy<I> where I: {name},")
        )
        assert paragraphs[at - 1] == f"{label} ·", paragraphs[at - 2 : at + 1]  # the label right before it
    for signature, label in METHODS:
        if label:
            at = next(i for i, p in enumerate(paragraphs) if p.endswith(signature))
            assert paragraphs[at - 1] == f"{label} ·", paragraphs[at - 2 : at + 1]
    last = pages[-len(PAGE_FIRST) :]  # each page's first line kept, its label too
    for signature, page in zip(PAGE_FIRST, last, strict=True):
        assert signature in heading_texts(html.unescape(page)), page
        assert html.unescape(page).count("1.0.0 ·") == 2, page


def test_a_name_in_regular_code_set_larger_than_the_body_is_a_heading(textlayer_engine, printer):
    """rustdoc's fmt module heads each related macro with its name in regular code at 1.125 times the
    body ("write!"): not bold, so it was read as a listing of one line. A listing set at the body's
    size stays one."""
    head = "font-family:'DejaVu Sans Mono',monospace;font-weight:normal;font-size:18px"
    macros = ["write!", "print!", "eprint!"]
    sections = "".join(
        f'<h4 style="{head}">{name}</h4><p>{PROSE}</p><pre style=\'font-size:14px\'>{name}(w, "{{}}", x);</pre>'
        for name in macros
    )
    md = pages_markdown(textlayer_engine, printer("macro-titles", f"{CSS}<h2>Related macros</h2>{sections}"))[
        0
    ]
    heads = heading_texts(md)
    for name in macros:
        assert name in heads, heads
        assert f'```\n{name}(w, "{{}}", x);\n```' in md, md


def _row(
    text: str, y: float, size: float = 12.0, *, bold: bool = True, mono: bool = True, x: float = 50.0
) -> Row:
    return Row([TextLine(text, (x, y, x + 0.6 * size * len(text), y + size), size, bold=bold, mono=mono)])


def test_wrapped_code_titles_are_runs_of_bold_code_standing_alone():
    """Unit: a run of bold code lines at a bold listing's leading, no other code within reach, is one
    heading; a run beside a plain listing line, one that ends a statement, one that starts right of its
    next line and a run of plain code are not."""
    title = [
        _row("impl<I> Clone for StepBy<I>", 100, 13.5),
        _row("where", 116, 10.5),
        _row("I: Clone,", 128, 10.5, x=58),
    ]
    prose = [_row("Returns a duplicate of the value.", 150, bold=False, mono=False)]
    in_listing = [_row("let it = (1..9)", 200, bold=False), _row("fn step(self)", 214), _row("where", 228)]
    statement = [_row("let total = items", 300), _row("    .sum::<u64>();", 314)]
    set_in = [_row(".step_by(2)", 400, x=70), _row("fn main() -> u64", 414)]
    plain = [_row("fn main() {", 500, bold=False), _row("}", 514, bold=False)]
    # the "ⓘ" after a signature that fills its line, wrapped onto a line of its own in the text face
    marked = [_row("fn intersperse(self) -> Intersperse<Self>", 600), _row("•", 614, mono=False)]
    marked += [_row("where", 628, 10.5), _row("Self: Sized,", 640, 10.5, x=58)]
    rows = title + prose + in_listing + statement + set_in + plain + marked
    listings = {id(r) for r in rows if r.items[0].mono}
    heads, tails = wrapped_code_titles(rows, listings)
    assert heads == {id(title[0]), id(marked[0])}
    assert tails == {id(title[1]), id(title[2]), *(id(r) for r in marked[1:])}


def test_a_margin_label_is_a_short_text_piece_far_right_of_code():
    code = TextLine("fn count(self) -> usize", (62, 674, 230, 689), 12.0, bold=True, mono=True)
    label = TextLine("1.0.0 ·", (516, 673, 547, 690), 12.0)
    assert margin_label(Row([code, label])) is label
    near = TextLine("1.0.0 ·", (236, 673, 267, 690), 12.0)  # right after the code: part of its line
    assert margin_label(Row([code, near])) is None
    prose = TextLine("Counts the items", (62, 674, 180, 689), 12.0)
    assert margin_label(Row([prose, label])) is None  # beside text: a table's cells, a dotted contents line
    const = TextLine("1.36.0 (const: 1.36.0) ·", (420, 673, 547, 690), 12.0)  # a const fn's versions
    assert margin_label(Row([code, const])) is const
    long_label = TextLine("stable since version 1.0.0 of std", (330, 673, 547, 690), 12.0)
    assert margin_label(Row([code, long_label])) is None
    listing = TextLine("xcode-select --install", (62, 674, 230, 689), 12.0, mono=True)
    button = TextLine("COPY", (516, 673, 547, 690), 12.0)
    assert margin_label(Row([listing, button])) is None  # a code panel's button stays on its line
    brace = TextLine("}", (62, 674, 69, 689), 12.0, bold=True, mono=True)  # a mark, but no signature
    assert margin_label(Row([brace, button])) is None
    icon = TextLine("•", (232, 673, 240, 690), 12.0, bold=True)  # rustdoc's "ⓘ", in the text face
    assert margin_label(Row([code, icon, label])) is label


def test_a_mark_after_code_keeps_its_line_a_listing_line():
    code = TextLine("fn step_by(self, step: usize) -> StepBy<Self>", (62, 202, 393, 217), 12.0, mono=True)
    icon = TextLine("•", (393, 201, 401, 218), 12.0, bold=True)
    item = TextLine("npm ci", (80, 202, 130, 217), 12.0, mono=True)
    bullet = TextLine("•", (62, 201, 70, 218), 12.0)
    rows = [Row([code, icon]), Row([bullet, item])]
    assert listing_rows(rows) == {id(rows[0])}  # a marker before code starts a list's item


def test_a_version_is_no_page_number():
    assert (
        page_number_key("#")
        and page_number_key("- # -")
        and page_number_key("# / #")
        and page_number_key("#-#")
    )
    assert not page_number_key("#.#.# ·")
