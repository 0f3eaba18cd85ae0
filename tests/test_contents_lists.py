"""A chapter's contents list printed from HTML is a list of entries, not of headings (issue 30, round
28): DocBook's chapters (Valgrind's manual) open with "Table of Contents" over their sections' titles,
set at body size in the colour the document gives its headings, with no page numbers or leaders to
mark a contents table. Each entry names a heading set larger further on. Real text-layer engine, pages
printed by Chromium."""

from __future__ import annotations

from tests.factories import heading_texts, pages_markdown

CSS = (
    "<style>body{font-family:'DejaVu Sans',sans-serif;font-size:10.8pt;line-height:1.3;color:#202020}"
    "h1{font-size:21.6pt;color:#74240f} h2{font-size:16.2pt;color:#74240f} a{color:#74240f}"
    "dl.toc dt{margin:0}</style>"
)
SECTIONS = ["1.1. An Overview of Valgrind", "1.2. How to navigate this manual"]
TEXT = (
    "Valgrind is an instrumentation framework for building dynamic analysis tools. There are tools that "
    "detect memory management and threading bugs, and profile programs in detail."
)


def _chapter(toc: bool = True) -> str:
    entries = "".join(f"<dt><a href='#s{k}'>{t}</a></dt>" for k, t in enumerate(SECTIONS))
    parts = [f"{CSS}<h1>1. Introduction</h1>"]
    if toc:
        parts.append(f"<p><b>Table of Contents</b></p><dl class=toc>{entries}</dl>")
    parts += [f"<h2 id='s{k}'>{t}</h2><p>{TEXT}</p><p>{TEXT}</p>" for k, t in enumerate(SECTIONS)]
    return "".join(parts)


def test_a_contents_lists_entries_are_no_headings(textlayer_engine, printer):
    """Before: each entry, in the headings' colour at body size (a colour the document sets its
    headings in, two lines of it), came out as a heading of its own: the outline listed every section
    twice."""
    md = "\n".join(pages_markdown(textlayer_engine, printer("toc", _chapter())))
    heads = [h for h in heading_texts(md) if h != "Table of Contents"]
    assert heads == ["1. Introduction", *SECTIONS], md
    for title in SECTIONS:
        assert md.count(title) == 2, md  # the entry is kept, as text, and the section's heading


def test_without_a_contents_list_the_sections_are_as_before(textlayer_engine, printer):
    md = "\n".join(pages_markdown(textlayer_engine, printer("no_toc", _chapter(toc=False))))
    assert heading_texts(md) == ["1. Introduction", *SECTIONS], md


def test_entries_of_a_nested_contents_list_are_one_paragraph_each(textlayer_engine, printer):
    """Valgrind's Callgrind chapter lists "6.2. Advanced Usage" over its sections set in, one a line,
    no page numbers. Set in, the longest entry set the column's edge, so each next entry's first word
    seemed not to fit after the line above and the entries ran together as one paragraph ("6.2.1.
    Multiple profiling dumps from one program run 6.2.2. Limiting the range …", round 35). A line that
    opens on the number following the open paragraph's starts an entry of its own."""
    tree = {
        "6.1. Overview": ["6.1.1. Functionality", "6.1.2. Basic Usage"],
        "6.2. Advanced Usage": [
            "6.2.1. Multiple profiling dumps from one program run",
            "6.2.2. Limiting the range of collected events",
            "6.2.3. Counting global bus events",
        ],
        "6.3. Callgrind Monitor Commands": [],
        "6.4. Callgrind specific client requests": [],
    }
    entries = "".join(
        f"<dt><a href='#'>{top}</a></dt>"
        + (f"<dd><dl>{''.join(f'<dt><a href=#>{t}</a></dt>' for t in subs)}</dl></dd>" if subs else "")
        for top, subs in tree.items()
    )
    html = (
        f"{CSS}<h1>6. Callgrind: a call-graph generating profiler</h1><p><b>Table of Contents</b></p>"
        f"<dl class=toc>{entries}</dl><p>{TEXT}</p>"
    )
    md = pages_markdown(textlayer_engine, printer("toc-nested", html))[0]
    paragraphs = [p.strip().lstrip(":").strip() for p in md.split("\n\n")]
    for top, subs in tree.items():
        for entry in (top, *subs):
            assert entry in paragraphs, md
