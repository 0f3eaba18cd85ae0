"""The probe's documents typeset by LaTeX (pdfTeX): a fourth producer, the one most papers come from.

Why: Chromium, MuPDF and Writer all set a paragraph as a block with space around it. LaTeX sets text
otherwise, and a large share of public PDFs (papers, theses, preprints) are its output: paragraphs
told apart by a first-line indent with no space between them, justified lines with words hyphenated
at the line's end, Computer Modern or Times set by its own metrics, ligatures, section titles in its
own sizes, tables as ``tabular`` with booktabs' three rules or ``|`` and ``\\hline``, ``\\multicolumn``
and ``\\multirow``, cell fills from colortbl, columns by ``multicols`` filled to balance, the page
number centred in the foot.

The probe's HTML is read by Chromium (each element's computed style: weight, size, fills, borders,
columns, flex boxes), written out as LaTeX and typeset by ``pdflatex``; the truth stays the probe's.
Drawings go in as pictures. What LaTeX is not asked to imitate: the probe's own heading sizes (LaTeX's
``\\section*`` sizes are used), the space between paragraphs.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
from pathlib import Path

PDFLATEX = "pdflatex"
SKIPPED = (
    "deck-pair-",  # two tables side by side in flex boxes: not a layout a LaTeX author writes
)

# Chromium's view of the page: a tree of elements with the computed style LaTeX needs.
TREE_JS = r"""
() => {
  const hex = c => {
    const m = c.match(/rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)/);
    if (!m || (m[4] !== undefined && parseFloat(m[4]) === 0)) return null;
    const h = [m[1], m[2], m[3]].map(v => (+v).toString(16).padStart(2, '0')).join('').toUpperCase();
    return h === 'FFFFFF' ? null : h;
  };
  const ink = c => { const h = hex(c); return c.startsWith('rgb(255, 255, 255') ? 'FFFFFF' : h === '000000' ? null : h; };
  const pt = v => parseFloat(v) * 0.75;
  const walk = el => {
    if (el.nodeType === 3) return {text: el.textContent};
    if (el.nodeType !== 1) return null;
    const s = getComputedStyle(el);
    if (s.display === 'none') return null;
    const box = el.getBoundingClientRect();
    const n = {
      tag: el.tagName.toLowerCase(), cls: el.className && el.className.baseVal === undefined ? el.className : '',
      bold: parseInt(s.fontWeight) >= 600, italic: s.fontStyle === 'italic', size: pt(s.fontSize),
      align: s.textAlign, bg: hex(s.backgroundColor), color: ink(s.color), caps: s.textTransform,
      smallcaps: s.fontVariantCaps === 'small-caps', display: s.display, float: s.cssFloat,
      columns: parseInt(s.columnCount) || 1, span: s.columnSpan, brk: s.breakBefore === 'page',
      mono: /mono/i.test(s.fontFamily), serif: !/sans/i.test(s.fontFamily.split(',')[0]),
      indent: pt(s.textIndent), padleft: pt(s.paddingLeft), width: pt(box.width), height: pt(box.height),
      room: el.parentElement ? pt(el.parentElement.getBoundingClientRect().width) / (parseInt(getComputedStyle(el.parentElement).columnCount) || 1) : 0,
      colspan: el.colSpan || 1, rowspan: el.rowSpan || 1,
      borders: ['top', 'bottom', 'left', 'right'].map(side => {
        const w = parseFloat(s['border-' + side + '-width']), st = s['border-' + side + '-style'];
        return w > 0 && st !== 'none' && st !== 'hidden' ? pt(w) : 0;
      }),
      kids: [],
    };
    if (n.tag === 'svg' || n.tag === 'img') return n;
    for (const c of el.childNodes) { const k = walk(c); if (k) n.kids.push(k); }
    return n;
  };
  return walk(document.body);
}
"""

SIZES = (  # LaTeX's size commands at 10 pt and the point size each sets
    ("\\tiny", 5), ("\\scriptsize", 7), ("\\footnotesize", 8), ("\\small", 9), ("\\normalsize", 10),
    ("\\large", 12), ("\\Large", 14.4), ("\\LARGE", 17.28), ("\\huge", 20.74), ("\\Huge", 24.88),
)  # fmt: skip

ESCAPES = {
    "\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
    "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
    "–": "--", "—": "---", "“": "``", "”": "''", "·": "\\textperiodcentered{}",
    "<": "\\textless{}", ">": "\\textgreater{}", "|": "\\textbar{}",
}  # fmt: skip

RUNNING = {  # the running lines Chromium's templates print (story_print.running_lines), as fancyhdr's
    "report": ("\\fancyhead[L]{\\scriptsize Regional Council --- annual report}", "\\fancyfoot[C]{\\scriptsize Page \\thepage}"),
    "paper": ("", "\\fancyfoot[C]{\\thepage}"),
    "deck": ("", "\\fancyfoot[L]{\\scriptsize Regional Council \\textperiodcentered{} \\thepage}"),
}  # fmt: skip


def printable(name: str) -> bool:
    """Whether this probe document is one a LaTeX author would write."""
    return not name.startswith(SKIPPED)


def available() -> bool:
    """Whether ``pdflatex`` is on the PATH (Debian's texlive-latex-extra and texlive-fonts-recommended)."""
    return shutil.which(PDFLATEX) is not None


def esc(text: str) -> str:
    return "".join(ESCAPES.get(c, c) for c in text)


def plain(n: dict) -> str:
    """An element's text, without markup."""
    return n["text"] if "text" in n else "".join(plain(k) for k in n.get("kids", ()))


def tree(browser, page_html: str) -> dict:
    """The page's element tree with computed styles; each drawing and picture as a PNG of itself."""
    page = browser.new_page(device_scale_factor=3)
    try:
        page.set_content(page_html)
        pictures = []
        for k in range(page.locator("svg, img").count()):
            pictures.append(base64.b64encode(page.locator("svg, img").nth(k).screenshot()).decode())
        root = page.evaluate(TREE_JS)
    finally:
        page.close()
    queue = list(pictures)

    def attach(n: dict) -> None:
        if n.get("tag") in ("svg", "img"):
            n["png"] = queue.pop(0)
        for k in n.get("kids", ()):
            attach(k)

    attach(root)
    return root


class Writer:
    """One document's LaTeX, written from Chromium's tree."""

    def __init__(self, root: dict, kind: str, assets: Path, name: str) -> None:
        self.root, self.kind, self.assets, self.name = root, kind, assets, name
        self.base = root["size"]
        self.pictures = 0

    # -- inline ---------------------------------------------------------------------------------
    def inline(self, n: dict, parent: dict | None = None) -> str:
        if "text" in n:
            return esc(" ".join(n["text"].split(" ")).replace("\n", " "))
        if n["tag"] == "br":
            return "\\newline{}"
        if n["tag"] in ("svg", "img"):
            return self.picture(n)
        body = "".join(self.inline(k, n) for k in n["kids"])
        parent = parent or {}
        if n["caps"] == "uppercase" and parent.get("caps") != "uppercase":
            body = f"\\MakeUppercase{{{body}}}"
        if n["smallcaps"] and not parent.get("smallcaps"):
            body = f"\\textsc{{{body}}}"
        if n["bold"] and not parent.get("bold"):
            body = f"\\textbf{{{body}}}"
        if n["italic"] and not parent.get("italic"):
            body = f"\\textit{{{body}}}"
        if n["color"] and n["color"] != parent.get("color"):
            body = f"\\textcolor[HTML]{{{n['color']}}}{{{body}}}"
        return body

    def text(self, n: dict) -> str:
        """A block's content as one run of inline LaTeX (its own weight and slant included)."""
        body = "".join(self.inline(k, n) for k in n["kids"]).strip()
        if n["caps"] == "uppercase":
            body = f"\\MakeUppercase{{{body}}}"
        if n["smallcaps"]:
            body = f"\\textsc{{{body}}}"
        if n["bold"]:
            body = f"\\textbf{{{body}}}"
        if n["italic"]:
            body = f"\\textit{{{body}}}"
        if n["color"]:
            body = f"\\textcolor[HTML]{{{n['color']}}}{{{body}}}"
        return body

    def size(self, n: dict) -> str:
        want = 10 * n["size"] / self.base
        command, _ = min(SIZES, key=lambda s: abs(s[1] - want))
        return "" if command == "\\normalsize" else command + " "

    def picture(self, n: dict) -> str:
        self.pictures += 1
        path = self.assets / f"{self.name}-{self.pictures}.png"
        path.write_bytes(base64.b64decode(n["png"]))
        return f"\\includegraphics[width={min(n['width'], 1000):.1f}pt]{{{path.name}}}"

    # -- blocks ---------------------------------------------------------------------------------
    def blocks(self, kids: list[dict], columns: int = 1) -> str:
        out = []
        for n in kids:
            if "text" in n:
                if n["text"].strip():
                    out.append(esc(n["text"].strip()) + "\n\n")
                continue
            out.append(self.block(n, columns))
        return "".join(out)

    def block(self, n: dict, columns: int) -> str:
        tag, cls = n["tag"], n["cls"]
        head = "\\clearpage\n" if n["brk"] else ""
        if n["span"] == "all" and columns > 1:  # spans the columns: close them around it
            return f"\\end{{multicols}}\n{self.block({**n, 'span': 'none'}, 1)}\\begin{{multicols}}{{{columns}}}\n"
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            return head + self.heading(n)
        if tag in ("ul", "ol"):
            env = "itemize" if tag == "ul" else "enumerate"
            items = "".join(f"\\item {self.item(k)}\n" for k in n["kids"] if k.get("tag") == "li")
            return f"{head}{{{self.size(n)}\\begin{{{env}}}\n{items}\\end{{{env}}}}}\n"
        if tag == "table":
            return head + self.table(n, columns)
        if tag == "pre":
            text = "".join(k.get("text", "") for k in n["kids"])
            return f"{head}\\begin{{verbatim}}\n{text.strip(chr(10))}\n\\end{{verbatim}}\n"
        if tag in ("svg", "img"):
            return f"{head}\\par\\noindent{self.picture(n)}\\par\n"
        if n["columns"] > 1:
            inner = self.blocks(n["kids"], n["columns"])
            return f"{head}\\begin{{multicols}}{{{n['columns']}}}\n{inner}\\end{{multicols}}\n"
        if n["display"] == "flex":  # panels side by side
            boxes = [k for k in n["kids"] if "tag" in k]
            width = 0.96 / max(1, len(boxes))
            parts = [
                f"\\begin{{minipage}}[t]{{{width:.3f}\\linewidth}}\n{self.box(k)}\\end{{minipage}}"
                for k in boxes
            ]
            return head + "\\par\\noindent " + "\\hfill\n".join(parts) + "\\par\\medskip\n"
        if n["bg"] or (any(n["borders"]) and tag == "div") or cls in ("note", "pull"):
            return head + self.framed(n)
        if tag == "div" or "drop" in cls.split():
            return head + self.blocks(n["kids"], columns)
        return head + self.paragraph(n)

    def box(self, n: dict) -> str:
        inner = (
            self.blocks(n["kids"]) if any(k.get("tag") in BLOCKS for k in n["kids"]) else self.paragraph(n)
        )
        if n["bg"]:
            return (
                f"\\colorbox[HTML]{{{n['bg']}}}{{\\begin{{minipage}}[t]{{\\dimexpr\\linewidth-2\\fboxsep}}"
                f"\n{inner}\\end{{minipage}}}}\n"
            )
        return inner

    def framed(self, n: dict) -> str:
        """A sidebar, a note or a pull quote: a box in the flow, filled or ruled as it is drawn."""
        inner = (
            self.blocks(n["kids"]) if any(k.get("tag") in BLOCKS for k in n["kids"]) else self.paragraph(n)
        )
        if n["bg"]:
            frame = "\\fcolorbox[HTML]{999999}" if any(n["borders"][2:]) else "\\colorbox[HTML]"
            colour = f"{{{n['bg']}}}"
            return (
                f"\\par\\medskip\\noindent{frame}{colour}{{\\begin{{minipage}}{{\\dimexpr\\linewidth-2\\fboxsep-2\\fboxrule}}"
                f"\n{inner}\\end{{minipage}}}}\\par\\medskip\n"
            )
        rule = "\\par\\noindent\\rule{\\linewidth}{0.8pt}\\par\n"
        top = rule if n["borders"][0] else ""
        bottom = rule if n["borders"][1] else ""
        return f"{top}{inner}{bottom}"

    def item(self, n: dict) -> str:
        if any(k.get("tag") in BLOCKS for k in n["kids"]):
            return self.blocks(n["kids"])
        return self.text(n)

    def paragraph(self, n: dict) -> str:
        drop = next((k for k in n["kids"] if "drop" in k.get("cls", "").split()), None)
        if drop is not None:  # a drop cap: lettrine sets it over two lines, as a magazine does
            letter = "".join(k.get("text", "") for k in drop["kids"])
            rest = [k for k in n["kids"] if k is not drop]
            body = "".join(self.inline(k, n) for k in rest).strip()
            first, _, tail = body.partition(" ")
            return f"\\lettrine{{{esc(letter)}}}{{{first}}} {tail}\n\n"
        label = next((k for k in n["kids"] if "label" in k.get("cls", "").split()), None)
        size = self.size(n)
        if label is not None:  # a numbered reference: label hung in the margin, as thebibliography
            rest = "".join(self.inline(k, n) for k in n["kids"] if k is not label).strip()
            lab = "".join(self.inline(k, label) for k in label["kids"]).strip()
            return (
                f"{{{size}\\begin{{list}}{{}}{{\\leftmargin={n['padleft']:.1f}pt\\labelwidth={n['padleft'] - 2:.1f}pt"
                f"\\labelsep=2pt\\itemsep=0pt\\topsep=1pt\\parsep=0pt}}\\item[{lab}] {rest}\n\\end{{list}}}}\n"
            )
        body = self.text(n)
        if not body:
            return ""
        if n["indent"] < 0:  # a hanging indent (a reference list)
            return f"{{{size}\\hangindent={n['padleft']:.1f}pt\\hangafter=1\\noindent {body}\\par}}\n"
        if n["align"] == "center":
            return f"{{{size}\\centering {body}\\par}}\n"
        if "caption" in n["cls"].split():
            return f"{{{size}\\noindent {body}\\par}}\\smallskip\n"
        return f"{{{size}{body}\\par}}\n" if size else f"{body}\n\n"

    def heading(self, n: dict) -> str:
        body = "".join(self.inline(k, {**n, "bold": True, "italic": False}) for k in n["kids"]).strip()
        if n["caps"] == "uppercase":
            body = f"\\MakeUppercase{{{body}}}"
        if n["smallcaps"]:
            body = f"\\textsc{{{body}}}"
        if n["tag"] == "h1":
            if n["align"] == "center":
                return f"\\begin{{center}}{{\\LARGE {body}\\par}}\\end{{center}}\n"
            return f"\\noindent{{\\LARGE\\bfseries {body}\\par}}\\medskip\n"
        command = {"h2": "section", "h3": "subsection"}.get(n["tag"], "subsubsection")
        return f"\\{command}*{{{body}}}\n"

    # -- tables ---------------------------------------------------------------------------------
    def table(self, n: dict, columns: int = 1) -> str:
        heads = sum(len(p["kids"]) for p in n["kids"] if p.get("tag") == "thead")
        rows = [
            r for part in n["kids"] if part.get("tag") in ("thead", "tbody", "tfoot") for r in part["kids"]
        ]
        rows += [r for r in n["kids"] if r.get("tag") == "tr"]
        rows = [[c for c in r["kids"] if c.get("tag") in ("td", "th")] for r in rows if r.get("tag") == "tr"]
        if not rows:
            return ""
        ncols = max(sum(c["colspan"] for c in r) for r in rows)
        # where each cell sits, rowspans included
        grid: list[list[dict | None]] = [[None] * ncols for _ in rows]
        placed = []
        for i, row in enumerate(rows):
            j = 0
            for c in row:
                while j < ncols and grid[i][j] is not None:
                    j += 1
                for di in range(c["rowspan"]):
                    for dj in range(c["colspan"]):
                        if i + di < len(rows) and j + dj < ncols:
                            grid[i + di][j + dj] = c
                placed.append((i, j, c))
                j += c["colspan"]
        start = {id(c): (i, j) for i, j, c in placed}
        vertical = any(c["borders"][2] or c["borders"][3] for _, _, c in placed)
        texts = [
            [len(plain(c)) if c is not None and start[id(c)] == (i, j) else 0 for j, c in enumerate(row)]
            for i, row in enumerate(grid)
        ]
        wide = n["width"] >= 0.95 * n["room"]  # set to its column's width
        spec = []
        for j in range(ncols):
            longest = max(texts[i][j] for i in range(len(rows)))
            cells = [grid[i][j] for i in range(len(rows)) if grid[i][j] is not None]
            align = "r" if cells and all(c["align"] == "right" for c in cells[1:]) else "l"
            spec.append("X" if longest > 28 else align)
        fills = any(c["bg"] for _, _, c in placed)
        if wide and fills and "X" not in spec:  # fills spread by \extracolsep leave gaps: X columns
            spec = spec[:1] + ["X"] * (ncols - 1)
        colspec = "|" + "|".join(spec) + "|" if vertical else "".join(spec)
        long = len(rows) > 24 and columns == 1  # a table over pages: longtable, as its author would
        if long:
            env = "xltabular" if "X" in colspec else "longtable"
        else:
            env = "tabularx" if "X" in colspec else "tabular*" if wide else "tabular"
        width = "{\\linewidth}" if env in ("tabularx", "tabular*", "xltabular") else ""
        if env == "tabular*":  # spread across the column, as a table set at its full width is
            colspec = "@{\\extracolsep{\\fill}}" + colspec
        lines = []

        def rule(i: int) -> str:
            """The rule between row i-1 and row i (i == len(rows): under the last)."""
            heavy, cols = 0.0, []
            for j in range(ncols):
                above = grid[i - 1][j] if i > 0 else None
                below = grid[i][j] if i < len(rows) else None
                if above is not None and above is below:
                    continue  # a rowspan goes on through this line
                w = max(above["borders"][1] if above else 0, below["borders"][0] if below else 0)
                if w:
                    cols.append(j)
                    heavy = max(heavy, w)
            if not cols:
                return ""
            if len(cols) == ncols:
                if vertical:
                    return "\\hline"
                return "\\toprule" if i == 0 else "\\bottomrule" if i == len(rows) else "\\midrule"
            parts, run = [], [cols[0]]
            for j in cols[1:]:
                if j == run[-1] + 1:
                    run.append(j)
                else:
                    parts.append(run)
                    run = [j]
            parts.append(run)
            command = "\\cline" if vertical else "\\cmidrule"
            return "".join(f"{command}{{{r[0] + 1}-{r[-1] + 1}}}" for r in parts)

        for i in range(len(rows)):
            r = rule(i)
            if r:
                lines.append(r)
            if long and heads and i == heads:  # the head rows (and the rule under them) repeat on every page
                lines.append("\\endhead")
            cells, j = [], 0
            while j < ncols:
                c = grid[i][j]
                if c is None:
                    cells.append("")
                    j += 1
                    continue
                span = c["colspan"] if start[id(c)][1] == j else 1
                # under fills, a cell over rows is written in its last row, reaching up (the next
                # row's fill would paint over it), as colortbl's manual says
                down = -c["rowspan"] if fills else c["rowspan"]
                at = start[id(c)][0] + (c["rowspan"] - 1 if down < 0 else 0)
                body = self.text(c) if i == at and start[id(c)][1] == j else ""
                if body and c["rowspan"] > 1:
                    body = f"\\multirow{{{down}}}{{*}}{{{body}}}"
                if c["bg"]:
                    body = f"\\cellcolor[HTML]{{{c['bg']}}}{body}"
                if span > 1 or (c["align"] == "center" and spec[j] != "X"):
                    a = "c" if c["align"] == "center" else "r" if c["align"] == "right" else "l"
                    if vertical:
                        a = ("|" if j == 0 else "") + a + "|"
                    body = f"\\multicolumn{{{span}}}{{{a}}}{{{body}}}"
                cells.append(body)
                j += span
            lines.append(" & ".join(cells) + " \\\\")
        r = rule(len(rows))
        if r:
            lines.append(r)
        size = self.size(n)
        body = "\n".join(lines)
        if long:
            return f"{{{size}\\begin{{{env}}}{width}{{{colspec}}}\n{body}\n\\end{{{env}}}}}\n"
        return f"\\par\\smallskip{{{size}\\noindent\\begin{{{env}}}{width}{{{colspec}}}\n{body}\n\\end{{{env}}}\\par}}\\smallskip\n"

    # -- the document ---------------------------------------------------------------------------
    def document(self) -> str:
        base = self.base
        option = "12pt" if base >= 11.5 else "11pt" if base >= 10.5 else "10pt"
        serif = self.root["serif"]
        face = "\\usepackage{mathptmx}" if serif and "Liberation" in self.name else ""
        if not serif:
            face = "\\usepackage[scaled=0.92]{helvet}\\renewcommand{\\familydefault}{\\sfdefault}"
        if self.kind in ("deck", "slide"):
            paper = "paperwidth=10in,paperheight=5.625in,margin=20mm,bottom=14mm"
        elif self.kind == "report":
            paper = "a4paper,margin=20mm,top=22mm,bottom=22mm"
        else:
            paper = "a4paper,margin=20mm"
        head, foot = RUNNING.get(self.kind, ("", ""))
        encoding = "\\usepackage[T1]{fontenc}" if face else ""
        return f"""\\documentclass[{option}]{{article}}
\\usepackage[{paper}]{{geometry}}
{encoding}
{face}
\\input{{glyphtounicode}}\\pdfgentounicode=1
\\usepackage{{graphicx,multicol,booktabs,multirow,tabularx,xltabular,lettrine,textcomp}}
\\usepackage[table]{{xcolor}}
\\usepackage{{fancyhdr}}\\pagestyle{{fancy}}\\fancyhf{{}}\\renewcommand{{\\headrulewidth}}{{0pt}}
{head}
{foot}
\\setlength{{\\emergencystretch}}{{2em}}
\\renewcommand{{\\LettrineTextFont}}{{\\normalfont}}
\\begin{{document}}
{self.blocks(self.root["kids"])}
\\end{{document}}
"""


BLOCKS = ("p", "div", "ul", "ol", "table", "h1", "h2", "h3", "h4", "pre", "svg", "img")


def print_latex(pages: list[tuple[str, dict, str]], pdf_dir: Path) -> list[str]:
    """``pages`` (name, Chromium's tree, kind) → ``pdf_dir/NAME.pdf``; the names pdflatex typeset."""
    done = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, root, kind in pages:
            source = Path(tmp, f"{name}.tex")
            source.write_text(Writer(root, kind, Path(tmp), name).document(), encoding="utf-8")
            run = subprocess.run(
                [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", source.name],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if run.returncode != 0:
                error = next((ln for ln in run.stdout.splitlines() if ln.startswith("!")), "failed")
                print(f"pdflatex: {name}: {error}")
                shutil.copy(source, pdf_dir / f"{name}.tex")
                continue
            shutil.copy(Path(tmp, f"{name}.pdf"), pdf_dir / f"{name}.pdf")
            done.append(name)
    return done
