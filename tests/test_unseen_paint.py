"""Paint a reader does not see rules no table (issue 30, round 28): a browser prints a code listing as a
panel with each line's own background on it, in the panel's colour, the lines' boxes running past the
panel's edge and clipped to it (Node.js's API reference). PyMuPDF's table finder read those unseen edges
as a ruled table of the listing's words. Real text-layer engine, pages printed by Chromium."""

from __future__ import annotations

import collections
from pathlib import Path

from ocr_app.engines.paint import shown_drawings, unseen_paint
from tests.factories import pages_markdown

CSS = (
    "<style>body{font-family:'DejaVu Sans',sans-serif;background:white}"
    "pre{background:#f2f2f2;padding:1rem;margin:1rem;overflow-x:auto}"
    "code{background:#f2f2f2;padding:1px 3px;border-radius:2px}"
    ".cm{color:#008000}.kw{color:#a626a4}.fn{color:#4078f2}.copy{float:right;background:#3e7a38;color:white;"
    "font-size:7pt;padding:1mm 4mm;border-radius:3mm}</style>"
)
# An inline <code> over several lines: Chromium paints its background once per line, each time the
# whole box shifted left by the lines before it and clipped to that line.
LISTING = (
    "<pre><code><span class=cm>// addTwo.mjs</span>\n<span class=kw>function</span> <span class=fn>addTwo</span>"
    "(num) {\n  <span class=kw>return</span> num + 2;\n}\n\n<span class=kw>export</span> { addTwo };</code> "
    "<button class=copy>copy</button></pre>"
)
PAGE = (
    f"{CSS}<h1>Modules: ECMAScript modules</h1>"
    "<p>The following example of an ES module exports a function, which a second module imports.</p>"
    f"{LISTING}<p>Node.js fully supports ECMAScript modules as they are currently specified.</p>"
)


def test_a_listings_line_backgrounds_make_no_table(textlayer_engine, printer):
    """Before: ``<table>`` rows "function | addTwo(num) {", "return | num + 2;" from the lines' edges."""
    md = pages_markdown(textlayer_engine, printer("listing", PAGE))[0]
    assert "<table" not in md, md
    assert "addTwo(num)" in md.replace("addTwo (num)", "addTwo(num)") and "num + 2;" in md, md
    assert "Node.js fully supports" in md, md


def test_the_line_backgrounds_are_unseen_and_the_panel_is_not(printer):
    """The panel shows (grey on the paper) and so does the button (green on grey); the lines' grounds,
    grey on the grey panel, do not, nor the parts of them clipped away."""
    import pymupdf

    with pymupdf.open(printer("listing_paint", PAGE)) as doc:
        page = doc[0]
        every = page.get_drawings()
        unseen = unseen_paint(page)
        shown = shown_drawings(page)
    grey = [p for p in every if p.get("fill") and abs(p["fill"][0] - 0xF2 / 255) < 0.01]
    assert len(grey) >= 5, grey  # the panel and a background for each line of code
    panel = max(grey, key=lambda p: p["rect"].get_area())
    lines = [p for p in grey if p is not panel]
    assert panel["seqno"] not in unseen
    assert all(p["seqno"] in unseen for p in lines), [(p["rect"], p["seqno"]) for p in lines]
    green = [p for p in every if p.get("fill") and p["fill"][1] > p["fill"][0] + 0.1]
    assert green and all(p["seqno"] not in unseen for p in green)
    assert len(shown) == len(every) - len(unseen)


def _page_of(content: bytes, width: float, height: float, path: Path) -> Path:
    """A one-page PDF whose page is ``content`` (PDF operators, y up from the page's foot)."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, content)
    page.set_contents(xref)
    doc.save(path)
    return path


def test_only_clipped_fills_on_their_own_colour_are_unseen(tmp_path: Path):
    """Unseen: a fill on a ground of its colour that its clip cuts (a browser's line ground), and a
    shape its clip leaves nothing of. Kept: a darker header on a light ground, a light cell on the
    paper, and a same-coloured fill drawn whole (a word processor's paragraph shading in its cell,
    which the form rules read)."""
    import pymupdf

    grey, dark = "0.9 0.9 0.9 rg", "0.6 0.6 0.6 rg"
    # PDF space: y up from the page's foot (height 300). Each shape on its own, in painting order.
    content = "\n".join(
        [
            f"{grey} 20 100 360 180 re f",  # the ground, y 20-200 from the top
            f"{dark} 20 250 360 30 re f",  # a darker header on it: y 20-50
            f"{grey} 20 190 180 30 re f",  # same colour, whole: y 80-110, kept
            f"q 40 150 100 20 re W n {grey} -200 150 500 20 re f Q",  # same colour, clipped: y 130-150
            f"{grey} 20 40 180 40 re f",  # light on the paper: y 220-260
            f"q 300 10 50 10 re W n {dark} 20 250 100 10 re f Q",  # clipped away entirely
        ]
    ).encode()
    with pymupdf.open(_page_of(content, 400, 300, tmp_path / "fills.pdf")) as saved:
        page = saved[0]
        by_top = collections.defaultdict(list)
        for p in page.get_drawings():
            by_top[round(p["rect"].y0)].append(p["seqno"])
        unseen = unseen_paint(page)
    assert unseen == {by_top[130][0], by_top[40][-1]}, (unseen, dict(by_top))


def test_a_heat_maps_cells_are_not_each_searched_for_a_ground(tmp_path: Path, monkeypatch):
    """Only a fill its clip cuts is looked at against the grounds under it. Each of a heat map's 3,600
    fills was (a vector heat map prints one fill a cell): its grounds searched back to the first for
    every cell: 6.5 million box tests here, and most of the 32 CPU s a heat map of 160 × 160 cells took.
    The clipped line on its ground is still found."""
    import pymupdf

    from ocr_app.engines import paint
    from tests.factories import count_calls

    cells = [
        f"{0.1 + 0.8 * ((i * 7 + j * 3) % 10) / 10:.2f} 0.5 0.5 rg {20 + 5 * i} {20 + 5 * j} 5 5 re f"
        for i in range(60)
        for j in range(60)
    ]
    grey = "0.9 0.9 0.9 rg"
    content = "\n".join(
        [*cells, f"{grey} 350 20 40 100 re f", f"q 355 60 30 10 re W n {grey} 300 60 100 10 re f Q"]
    ).encode()
    path = _page_of(content, 400, 340, tmp_path / "heat.pdf")
    tests = count_calls(monkeypatch, paint, "_meets", key=lambda *a: "box tests")
    with pymupdf.open(path) as saved:
        page = saved[0]
        unseen = unseen_paint(page)
        clipped = [p["seqno"] for p in page.get_drawings() if p["rect"].x0 < 355 - 1 and p["rect"].x1 > 395]
    assert len(clipped) == 1 and unseen == set(clipped), (unseen, clipped)
    assert 0 < tests["box tests"] <= 3_601, tests  # one search, at most one test a ground


MACRO = [
    "#define NODE_API_CALL(env, call)                                  \\",
    "  do {                                                            \\",
    "    napi_status status = (call);                                  \\",
    "    if (status != napi_ok) {                                      \\",
    "      const napi_extended_error_info* error_info = NULL;          \\",
    "      napi_get_last_error_info((env), &error_info);               \\",
    "      const char* err_message = error_info->error_message;        \\",
    "      bool is_pending;                                            \\",
    "      napi_is_exception_pending((env), &is_pending);              \\",
    "      if (!is_pending) {                                          \\",
    "        napi_throw_error((env), NULL, err_message);               \\",
    "      }                                                           \\",
    "      return NULL;                                                \\",
    "    }                                                             \\",
    "  } while(0)",
]
PROSE = (
    "The Node.js-specific parts of an addon can be separated from the code that exposes the actual "
    "functionality to the JavaScript environment, so that the latter may be used with multiple "
    "implementations of the interface. In the example below, the helper macro checks every call."
)


def test_a_listing_with_a_button_beside_its_last_line_stays_code(textlayer_engine, printer):
    """A macro whose lines end in a column of continuation marks, in a panel with a "copy" button set
    beside its last line. In Node.js's reference the layout model boxed such a listing as a table; the
    button's line, in the text face, made the region no listing (not every line monospaced), and the
    marks' column made a two-column table of the code. On this page the model boxes no table, so this
    guards the page as a whole; ``test_which_regions_are_listings`` holds the rule itself."""
    listing = "\n".join(MACRO).replace("&", "&amp;").replace("<", "&lt;")
    html = (
        f"{CSS}<h1>Node-API</h1><p>{PROSE}</p><p>{PROSE}</p><pre><code>{listing}</code>"
        " <button class=copy>copy</button></pre>"
        f"<p>{PROSE}</p><p>{PROSE}</p>"
    )
    md = "\n".join(pages_markdown(textlayer_engine, printer("macro", html)))
    assert "<table" not in md, md
    assert "napi_status status = (call);" in md and "} while(0)" in md, md


def test_which_regions_are_listings():
    """``table_bounds.listing``, the rule behind the test above, on lines as the text layer gives
    them: a label beside a line of code leaves a listing; a header row in the text face over cells of
    code, or cells of prose beside code, make a table."""
    from ocr_app.structure.lines import TextLine
    from ocr_app.structure.table_bounds import listing

    def code(k: int, text: str, x: float = 60) -> TextLine:
        return TextLine(text, (x, 100 + 14 * k, x + 6 * len(text), 110 + 14 * k), 10, mono=True)

    def plain(k: int, text: str, x: float) -> TextLine:
        return TextLine(text, (x, 100 + 14 * k, x + 5 * len(text), 110 + 14 * k), 10)

    macro = [code(k, line) for k, line in enumerate(MACRO)]
    assert listing(macro)
    assert listing([*macro, plain(len(MACRO) - 1, "C O P Y", 470)])  # the button beside the last line
    assert not listing([*macro, plain(len(MACRO), "C O P Y", 470)])  # on a row of its own: no code there
    header = [plain(0, "Constant", 60), plain(0, "Value", 300)]
    cells = [line for k in range(1, 9) for line in (code(k, f"SIGNAL_{k}"), code(k, f"0x{k:04x}", 300))]
    assert not listing([*header, *cells])
    prose = [
        line for k in range(8) for line in (code(k, f"--flag-{k}"), plain(k, "Turns the option on", 300))
    ]
    assert not listing(prose)
