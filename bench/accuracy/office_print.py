"""The probe's HTML laid out and printed by LibreOffice Writer: a third producer, a word processor's.

Why: Chromium and MuPDF are HTML engines. Most reports and forms on the web were written in a word
processor and saved as PDF, which sets text otherwise: its own fonts (Liberation, DejaVu), lines
broken by its own rules, tables drawn as a stroke per cell edge and a fill per cell, list markers in
a symbol font, headings indented by their outline level. Writer (``soffice --headless``) reads HTML
and exports PDF, so the same truth measures how far the rules carry to such files.

Writer's HTML reader knows inline styles and simple selectors, not the probe's stylesheets
(descendant selectors, ``:nth-child``, CSS columns). So Chromium computes each element's style and
the page is handed over with those styles inline, CSS columns as Writer's ``<multicol>`` sections.
Writer then lays out and breaks lines and pages itself. Slides are set on A4 (its reader takes no
page size); running headers and page numbers are written onto each page afterwards, as Chromium's
templates do. What Writer cannot lay out as written is left out (``SKIPPED``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SOFFICE = "soffice"
SKIPPED = (
    "deck-pair-",  # two tables side by side in flex boxes: Writer stacks them
    "deck-bar-",  # a slide in two halves (flex): Writer stacks them
)

# Chromium's computed style of every element, written inline in the units Writer reads (pt, #rrggbb).
INLINE_JS = r"""
() => {
  const hex = c => {
    const m = c.match(/rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)/);
    if (!m || (m[4] !== undefined && parseFloat(m[4]) === 0)) return null;
    return '#' + [m[1], m[2], m[3]].map(v => (+v).toString(16).padStart(2, '0')).join('');
  };
  const pt = v => (parseFloat(v) * 0.75).toFixed(2) + 'pt';
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('svg')) continue;
    const s = getComputedStyle(el);
    const out = [];
    out.push('font-family:' + s.fontFamily.split(',')[0].trim());
    out.push('font-size:' + pt(s.fontSize));
    out.push('font-weight:' + (parseInt(s.fontWeight) >= 600 ? 'bold' : 'normal'));
    out.push('font-style:' + s.fontStyle);
    if (s.fontVariantCaps === 'small-caps') out.push('font-variant:small-caps');
    if (s.textTransform !== 'none') out.push('text-transform:' + s.textTransform);
    if (s.textDecorationLine !== 'none') out.push('text-decoration:' + s.textDecorationLine);
    out.push('text-align:' + (s.textAlign === 'start' ? 'left' : s.textAlign));
    const colour = hex(s.color);
    if (colour) out.push('color:' + colour);
    const back = hex(s.backgroundColor);
    if (back && back !== '#ffffff') out.push('background-color:' + back);
    const block = ['block', 'list-item', 'table-cell'].includes(s.display);
    if (block) {
      for (const side of ['top', 'bottom', 'left', 'right']) {
        const w = parseFloat(s['border-' + side + '-width']);
        const st = s['border-' + side + '-style'];
        if (w > 0 && st !== 'none' && st !== 'hidden')
          out.push(`border-${side}:${pt(w)} solid ${hex(s['border-' + side + '-color']) || '#000000'}`);
      }
      // A cell's padding goes on its table (Writer reads it there); a paragraph's padding into its
      // margin (Writer drops a paragraph's padding, and a hanging indent then hung into the gutter).
      if (s.display !== 'table-cell')
        for (const side of ['top', 'bottom', 'left', 'right'])
          out.push(`margin-${side}:${pt(parseFloat(s['margin-' + side]) + parseFloat(s['padding-' + side]))}`);
      if (parseFloat(s.textIndent) !== 0) out.push('text-indent:' + pt(s.textIndent));
      if (s.breakBefore === 'page') out.push('page-break-before:always');
      if (s.display === 'table-cell') el.setAttribute('valign', s.verticalAlign === 'top' ? 'top' : 'middle');
      if (s.display === 'table-cell' && out.some(o => o.startsWith('border-'))) {
        // Writer drops a cell's padding where the cell has a border (its figures then touched the
        // next column's text): its text goes in a paragraph set in by the padding, as Writer pads.
        const inner = document.createElement('div');
        const font = out.filter(o => !o.startsWith('border-') && !o.startsWith('background'));
        inner.setAttribute('style', [...font, `margin-left:${pt(s.paddingLeft)}`,
          `margin-right:${pt(s.paddingRight)}`, 'margin-top:0pt', 'margin-bottom:0pt'].join(';'));
        while (el.firstChild) inner.appendChild(el.firstChild);
        el.appendChild(inner);
      }
    }
    if (el.tagName === 'TABLE') {  // its share of the column it stands in (Writer reads pixels otherwise)
      const p = getComputedStyle(el.parentElement), n = parseInt(p.columnCount) || 1;
      const column = (el.parentElement.getBoundingClientRect().width - (n - 1) * (parseFloat(p.columnGap) || 0)) / n;
      const cell = el.querySelector('td,th');
      if (cell) {  // Writer pads a cell alike on every side: the mean of its padding across and down
        const c = getComputedStyle(cell);
        el.setAttribute('cellpadding', String(Math.round((parseFloat(c.paddingLeft) + parseFloat(c.paddingTop)) / 2)));
      }
      el.setAttribute('width', Math.min(100, Math.round(100 * el.getBoundingClientRect().width / column)) + '%');
    }
    if (el.tagName === 'IMG') {  // a picture at the size it is shown, not its pixels' size
      const box = el.getBoundingClientRect();
      out.push(`width:${pt(box.width)}`, `height:${pt(box.height)}`);
    }
    el.setAttribute('style', out.join(';'));
  }
  for (const el of [...document.body.querySelectorAll('div')]) {
    const n = parseInt(getComputedStyle(el).columnCount);
    if (!(n > 1)) continue;
    const m = document.createElement('multicol');
    m.setAttribute('cols', String(n));
    m.setAttribute('gutter', String(Math.round(parseFloat(getComputedStyle(el).columnGap) || 24)));
    el.replaceWith(m);
    m.appendChild(el);
  }
  return '<html><head><meta charset="utf-8"></head>' + document.body.outerHTML + '</html>';
}
"""


def printable(name: str) -> bool:
    """Whether Writer lays out this probe document as its HTML means."""
    return not name.startswith(SKIPPED)


def available() -> bool:
    """Whether LibreOffice's ``soffice`` is on the PATH (Debian's libreoffice-writer-nogui)."""
    return shutil.which(SOFFICE) is not None


def inline(browser, page_html: str) -> str:
    """``page_html`` with Chromium's computed styles inline, CSS columns as ``<multicol>`` and each
    drawing (SVG, which Writer's reader does not draw) as its picture."""
    import base64

    page = browser.new_page()
    try:
        page.set_content(page_html)
        for k in range(page.locator("svg").count()):
            svg = page.locator("svg").nth(k)
            box = svg.bounding_box()
            png = base64.b64encode(svg.screenshot()).decode()
            svg.evaluate(
                "(el, a) => { const i = document.createElement('img'); i.src = a[0];"
                " i.width = a[1]; i.height = a[2]; el.replaceWith(i); }",
                [f"data:image/png;base64,{png}", round(box["width"]), round(box["height"])],
            )
        flat = page.evaluate(INLINE_JS)
    finally:
        page.close()
    return re.sub(r"<style>.*?</style>", "", flat, flags=re.S)


def _text_band(page) -> tuple[float, float]:
    """The top of the page's first line and the bottom of its last."""
    boxes = [b[:4] for b in page.get_text("blocks") if b[4].strip()]
    if not boxes:
        return page.rect.height / 2, page.rect.height / 2
    return min(b[1] for b in boxes), max(b[3] for b in boxes)


def print_office(pages: list[tuple[str, str, str]], pdf_dir: Path) -> None:
    """``pages`` (name, inlined HTML, kind) → ``pdf_dir/NAME.pdf``, one Writer process for all."""
    import pymupdf

    from bench.accuracy.story_print import running_lines

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "html"), Path(tmp, "pdf")
        src.mkdir()
        for name, page_html, _ in pages:
            (src / f"{name}.html").write_text(page_html, encoding="utf-8")
        subprocess.run(
            [
                SOFFICE,
                f"-env:UserInstallation=file://{tmp}/profile",
                "--headless",
                "--infilter=HTML (StarWriter)",
                "--convert-to",
                "pdf:writer_pdf_Export",
                "--outdir",
                str(dst),
                *sorted(str(p) for p in src.glob("*.html")),
            ],
            check=True,
            capture_output=True,
            timeout=1800,
        )
        for name, _, kind in pages:
            doc = pymupdf.open(str(dst / f"{name}.pdf"))
            try:
                # Writer's margins are narrower than Chromium's: the running lines go clear of the
                # text on every page, at one place in the document (as a template puts them)
                bands = [_text_band(p) for p in doc]
                top, bottom = min(b[0] for b in bands), max(b[1] for b in bands)
                for number, p in enumerate(doc, start=1):
                    for (x, y), text in running_lines(kind if kind != "slide" else "A4", number, p.rect):
                        y = min(y, top - 6) if y < p.rect.height / 2 else max(y, bottom + 12)
                        if 8 <= y <= p.rect.height - 4:
                            p.insert_text((x, y), text, fontsize=6)
                doc.save(str(pdf_dir / f"{name}.pdf"))
            finally:
                doc.close()
