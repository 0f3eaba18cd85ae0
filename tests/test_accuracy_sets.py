"""The public measure-only set made from the R manuals: Texinfo HTML → ground-truth blocks, and a
section cut out of a PDF where its outline entry and the next one point."""

from __future__ import annotations

import pymupdf

from bench.accuracy.fetch_sets import _cut_pdf, _outline_at, _texinfo_blocks, render, section_units

HTML = (
    '<div class="header"><p>Next: <a href="#x">Next</a></p></div>'
    '<h3 class="section">1.1 Scope</h3><p>Body one.</p>'
    '<ul class="section-toc"><li><a href="#d">Deeper</a></li></ul>'
    "<blockquote><table><tr><td><code>a</code></td><td>first</td></tr></table></blockquote>"
    '<table summary="" class="cartouche" border="1"><tr><td><pre class="example">x &lt;- 1</pre></td></tr></table>'
    '<dl compact="compact"><dt><code>--vanilla</code></dt><dd><p>No profile.</p></dd></dl>'
    '<h4 class="subsection">1.1.1 Deeper</h4><p>Body two.</p>'
    '<h3 class="section">1.2 Next</h3><p>Other.</p>'
)


def test_texinfo_sections_become_units_without_navigation_or_menus():
    units = section_units(_texinfo_blocks(HTML))
    assert [u[0] for u in units] == [0, 1, 2]  # 1.1 (with 1.1.1 inside), 1.1.1, 1.2
    _, md = render(units[0][1], border=False)
    assert md.strip().split("\n\n") == [
        "# 1.1 Scope",
        "Body one.",
        "<table><tr><td>a</td><td>first</td></tr></table>",
        "```\nx <- 1\n```",  # a framed box's example: no one-cell table
        "--vanilla",
        "No profile.",
        "## 1.1.1 Deeper",
        "Body two.",
    ]


def test_a_section_is_cut_where_its_outline_entry_and_the_next_one_point(tmp_path):
    src = pymupdf.open()
    for k in range(2):
        page = src.new_page(width=612, height=792)
        page.insert_text((90, 60), f"Chapter 1: Running head {k + 1}", fontsize=9)
        for y, text in ((120, f"before {k}"), (400, f"inside {k}"), (600, f"after {k}")):
            page.insert_text((90, y), text, fontsize=10)
    # Outline targets in PDF space (y up from the bottom), as TeX writes them: y 380 and 590 from the top.
    targets = [(1, "One", 0, 380.0), (1, "Two", 1, 590.0)]
    src.set_toc(
        [
            [lvl, t, pg + 1, {"kind": pymupdf.LINK_GOTO, "page": pg, "to": pymupdf.Point(90, 792 - y)}]
            for lvl, t, pg, y in targets
        ]
    )
    toc = src.get_toc(simple=False)
    start, end = _outline_at(src, toc[0]), _outline_at(src, toc[1])
    assert start[0] == 0 and end[0] == 1
    out = tmp_path / "cut.pdf"
    assert _cut_pdf(src, start, end, out)
    text = " ".join(p.get_text() for p in pymupdf.open(out)).split()
    assert text == ["inside", "0", "after", "0", "before", "1", "inside", "1"]


def test_second_round_kinds_write_numbered_manuals_product_sheets_and_forms(tmp_path):
    from bench.accuracy.generate_set import EXTRA_KINDS, write_set

    names = write_set(tmp_path, [0, 1, 2], kinds=EXTRA_KINDS)
    assert [n.split("-")[0] for n in names] == ["handbook", "specs", "keyvalue"]
    manual = (tmp_path / "gt" / f"{names[0]}.md").read_text()
    assert any(
        line.startswith("### ") and line[4:5].isalnum() and "." in line.split()[1]
        for line in manual.splitlines()
    )
    for name in names[1:]:
        assert "<table>" in (tmp_path / "gt" / f"{name}.md").read_text()
    assert "<th>" not in (tmp_path / "gt" / f"{names[2]}.md").read_text()  # a form: no header row
    assert all((tmp_path / "pdf" / f"{n}.pdf").stat().st_size > 1000 for n in names)
