"""Lists inside lists as a browser prints them (issue 30, item 5): Chromium draws an HTML list's
markers as shapes, not glyphs, a filled disc at the first level, a ring at the second and a filled
square at the third. The rings went unseen, so a second level's items ran into the item above them
and into one paragraph after it (Node.js's "options <Object>" over "message", "actual", "expected")."""

from __future__ import annotations

import re

from tests.factories import pages_markdown

CSS = (
    "<style>body{font-family:'Liberation Sans',sans-serif;color:#333;font-size:15px;line-height:1.6}"
    "#content{padding:0 3em}</style>"
)
PROSE = (
    "The settings below are read once when the service starts; a change to any of them takes effect at "
    "the next start, and the service logs the values it used."
)
OUTER = ["Connection settings for the database", "Limits that apply to every request", "Logging"]
INNER = ["Host name or address of the server", "Port the server listens on", "Seconds to wait for a reply"]
DEEPEST = ["Zero waits for ever", "Negative values are refused"]


def _html(legend: str = "") -> str:
    deepest = "".join(f"<li>{t}</li>" for t in DEEPEST)
    inner = "".join(
        f"<li>{t}" + (f"<ul>{deepest}</ul>" if k == 2 else "") + "</li>" for k, t in enumerate(INNER)
    )
    outer = "".join(
        f"<li>{t}" + (f"<ul>{inner}</ul>" if k == 0 else "") + "</li>" for k, t in enumerate(OUTER)
    )
    return (
        f"{CSS}<div id='content'><h2>Settings</h2><p>{PROSE}</p><ul>{outer}</ul><p>{PROSE}</p>{legend}</div>"
    )


def _items(md: str) -> list[tuple[int, str]]:
    return [(len(m.group(1)) // 4, m.group(2)) for m in re.finditer(r"^( *)- (.+)$", md, re.M)]


def test_items_of_a_list_inside_a_list_are_items_one_level_in(textlayer_engine, printer):
    md = pages_markdown(textlayer_engine, printer("nested-lists", _html()))[0]
    expected = [
        (0, OUTER[0]),
        *[(1, t) for t in INNER],
        *[(2, t) for t in DEEPEST],
        (0, OUTER[1]),
        (0, OUTER[2]),
    ]
    assert _items(md) == expected, md
    assert md.count(PROSE) == 2, md


def test_rings_in_another_colour_than_the_text_mark_no_items(textlayer_engine, printer):
    """A chart legend's hollow keys, drawn in their series' colours beside their labels, stay labels."""
    keys = "".join(
        f"<p><svg width='9' height='9'><circle cx='4.5' cy='4.5' r='3.5' fill='none' stroke='{c}'/></svg>"
        f" {label}</p>"
        for c, label in (("#d62728", "Measured load"), ("#1f77b4", "Forecast load"))
    )
    md = pages_markdown(textlayer_engine, printer("ring-legend", _html(keys)))[0]
    assert "- Measured load" not in md and "- Forecast load" not in md, md


def test_a_ring_alone_beside_a_label_marks_no_item():
    """A ring with no other ring of its size over or under it is a charge in a chemical formula ("O"
    with its ⊖ drawn as a ring, pymupdf4llm's test_370) or a drawing's node, not a list's marker; two
    rings one over the other beside their lines are."""
    import pymupdf

    from ocr_app.engines.pdf_drawings import mark_drawn_bullets
    from ocr_app.engines.pdf_spans import extract_lines

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.draw_circle((300, 96.5), 1.6, color=(0, 0, 0), fill=None, width=0.6)  # in a scheme, right
    page.insert_text((306, 100), "O", fontsize=10)
    for k, item in enumerate(("Host name of the server", "Port it listens on")):
        page.draw_circle((72, 196.5 + 16 * k), 1.6, color=(0, 0, 0), fill=None, width=0.6)
        page.insert_text((80, 200 + 16 * k), item, fontsize=10)
    lines = extract_lines(page, 2.0)
    mark_drawn_bullets(page, lines, 2.0)
    assert [ln.text for ln in lines] == ["O", "• Host name of the server", "• Port it listens on"]


def test_a_list_of_code_on_grey_grounds_inside_a_numbered_step_is_a_list(textlayer_engine, printer):
    """mdBook's "environment variables must be set:" under a numbered step: each item is inline code on
    a grey ground, its marker a ring. Grounds and rings together looked like a drawing, and its lines
    like a drawing's labels: one paragraph each, a "•" in front (round 34). Lines that are mostly list
    items are no drawing's labels."""
    code = (
        "<code style='background:#f6f7f6;padding:0.3em 0.4em;border-radius:3px;font-size:0.875em'>{}</code>"
    )
    names = [
        "CC_&lt;target&gt;=qcc",
        "CFLAGS_&lt;target&gt;=&lt;nto_cflag&gt;",
        "CXX_&lt;target&gt;=qcc",
        "AR_&lt;target&gt;=&lt;nto_ar&gt;",
        "LD_&lt;target&gt;=&lt;nto_ld&gt;",
    ]
    inner = "".join(f"<li style='line-height:1.45'>{code.format(n)}</li>" for n in names)
    html = (
        f"{CSS}<div id='content'><h2>Building</h2><p>{PROSE}</p><ol><li><p>Compile the toolchain</p>"
        f"<p>Set these variables to use the right tools:</p><ul>{inner}</ul></li></ol><p>{PROSE}</p></div>"
    )
    md = pages_markdown(textlayer_engine, printer("code-items", html))[0]
    plain = [n.replace("&lt;", "<").replace("&gt;", ">") for n in names]
    assert [t.replace("&lt;", "<") for _, t in _items(md) if "_" in t] == plain, md
    assert "•" not in md, md


def test_markers_of_a_contents_page_in_link_blue_mark_items(textlayer_engine, printer):
    """Cargo's SemVer guide opens with its contents: black group names over links in blue, the links
    three lists deep with squares for markers. Blue holds most of the page's letters, so the black
    squares matched neither their line's ink nor the page's commonest, and the links ran together into
    one paragraph under "Items" (round 35). An ink that holds a fifth of the page's letters is a text ink."""
    links = [
        "Major: renaming, moving or removing any public items",
        "Minor: adding new public items to the crate",
        "Major: changing the alignment, layout or size of a type",
        "Possibly-breaking: introducing a new function type parameter",
    ]
    leaves = "".join(f"<li><a href='#{k}' style='color:#20609f'>{t}</a></li>" for k, t in enumerate(links))
    html = (
        f"{CSS}<div id='content' style='color:#000'><h2>Contents</h2><p>What each kind of change does to a crate's users.</p><ul><li>Change categories<ul>"
        f"<li>API compatibility<ul>{leaves}</ul></li><li>Tooling</li></ul></li></ul></div>"
    )
    md = pages_markdown(textlayer_engine, printer("contents-in-blue", html))[0]
    assert _items(md) == [
        (0, "Change categories"),
        (1, "API compatibility"),
        *[(2, t) for t in links],
        (1, "Tooling"),
    ], md
