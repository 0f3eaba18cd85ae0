"""A generated set of born-digital documents whose ground-truth Markdown is exact (issue 25).

Why: the public sets reachable here (package registries only) hold few PDFs with a Markdown ground
truth, and none with the layouts the text layer gets wrong. Each document is written as HTML (the
ground truth's structure) and typeset by a real layout engine — PyMuPDF's Story (``--typesetter
story``) or LibreOffice (``--typesetter libreoffice``, when ``soffice`` is installed) — so word
positions are a typesetter's, not ours. The kinds of document are the misses of issue 25: tables
without rules (5 columns with wrapped cells, a 3-column worksheet with empty cells, a financial
table with a spanning "Year Ended" header, a 22-row parameter table), numbered section titles,
bold lead-ins ending in a colon, two text columns, and a chart with axis labels (a figure, not a
table: its labels are not part of the ground truth).

    python -m bench.accuracy.generate_set OUT --seeds 0-23 [--typesetter story]

writes ``OUT/pdf/NAME.pdf`` and ``OUT/gt/NAME.md``. The tuning set is seeds 0–23 with Story; the
measure-only set is seeds 1000–1023 with LibreOffice (other seeds, other typesetter, other fonts).
"""

from __future__ import annotations

import argparse
import html
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.accuracy.generate import _NAMES, _WORDS

KINDS = ("report", "worksheet", "financial", "parameters", "columns", "chart")
# Kinds of the second round (``--kinds``): a numbered heading hierarchy over pages, a product sheet
# (a text first column beside short values), a form-like key/value table with wrapped keys.
EXTRA_KINDS = ("handbook", "specs", "keyvalue")
FONTS = (("sans-serif", "Helvetica"), ("serif", "Times"))


@dataclass
class Doc:
    """A document as HTML body parts (what the typesetter gets) and Markdown (the ground truth)."""

    html: list[str] = field(default_factory=list)
    md: list[str] = field(default_factory=list)
    columns: list[list[str]] = field(default_factory=list)  # two-column body, when set (HTML parts)
    chart: bool = False
    css: str = ""  # the document's own style rules, after the common ones

    def heading(self, level: int, text: str) -> None:
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")
        self.md.append(f"{'#' * level} {text}")

    def para(self, text: str) -> None:
        self.html.append(f"<p>{html.escape(text)}</p>")
        self.md.append(text)

    def lead_in(self, level: int, text: str) -> None:
        """A bold paragraph ending in a colon: a heading in the ground truth."""
        self.html.append(f"<p><b>{html.escape(text)}</b></p>")
        self.md.append(f"{'#' * level} {text}")

    def numbered(self, items: list[str]) -> None:
        self.html.append("<ol>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ol>")
        self.md.append("\n".join(f"{k}. {i}" for k, i in enumerate(items, 1)))

    def table(self, header: list[list[tuple[str, int]]], rows: list[list[str]], centre: bool = False) -> None:
        """``header``: rows of (text, colspan); body rows of plain cells. No rules anywhere.
        ``centre``: the columns after the first are centred (a product sheet)."""
        head_html = "".join("<tr>" + "".join(_th(t, span) for t, span in hr) + "</tr>" for hr in header)
        td = ['<td class="c">' if centre and k else "<td>" for k in range(max(len(r) for r in rows))]
        body_html = "".join(
            "<tr>" + "".join(f"{td[k]}{html.escape(c)}</td>" for k, c in enumerate(r)) + "</tr>" for r in rows
        )
        self.html.append(f"<table>{head_html}{body_html}</table>")
        md_head = "".join("<tr>" + "".join(_th(t, span) for t, span in hr) + "</tr>" for hr in header)
        md_body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        self.md.append(f"<table>{md_head}{md_body}</table>")


def _th(text: str, span: int) -> str:
    attr = f' colspan="{span}"' if span > 1 else ""
    return f"<th{attr}>{html.escape(text)}</th>"


class Text:
    """Seeded words, sentences and names."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def words(self, n: int) -> str:
        return " ".join(self.rng.choice(_WORDS) for _ in range(n))

    def sentence(self, lo: int = 8, hi: int = 16) -> str:
        s = self.words(self.rng.randint(lo, hi))
        return s[0].upper() + s[1:] + "."

    def paragraph(self, lo: int = 3, hi: int = 5) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def title(self, lo: int = 2, hi: int = 5) -> str:
        return " ".join(w.capitalize() for w in self.words(self.rng.randint(lo, hi)).split())

    def name(self) -> str:
        return self.rng.choice(_NAMES)


def _report(d: Doc, t: Text) -> None:
    d.heading(1, t.title(3, 6))
    d.para(t.paragraph())
    d.heading(2, f"1 {t.title(1, 3)}")
    d.para(t.paragraph())
    d.heading(3, f"1.1 {t.title(2, 4)}")
    d.para(t.paragraph(2, 3))
    cols = 5
    header = [[(t.title(1, 2), 1) for _ in range(cols)]]
    rows = []
    for _ in range(t.rng.randint(4, 7)):
        row = [t.name()] + [t.rng.choice(["Y", "N", "Yes", "No", "n/a"]) for _ in range(cols - 2)]
        row.append(t.sentence(6, 14) if t.rng.random() < 0.6 else t.words(2))
        rows.append(row)
    d.table(header, rows)
    d.heading(2, f"2 {t.title(1, 3)}")
    d.para(t.paragraph())


def _worksheet(d: Doc, t: Text) -> None:
    d.heading(1, t.title(2, 4) + " Worksheet")
    d.para(t.paragraph(2, 3))
    header = [[("Item", 1), ("Description", 1), ("Notes", 1)]]
    rows = []
    for k in range(t.rng.randint(4, 6)):
        rows.append([f"{t.title(1, 2)}", t.words(t.rng.randint(3, 8)), t.words(2) if k % 2 else ""])
    d.table(header, rows)
    d.lead_in(2, f"Steps for Using the {t.title(1, 2)}:")
    d.numbered([t.sentence(5, 10) for _ in range(t.rng.randint(3, 5))])
    d.lead_in(2, f"Safety {t.title(1, 2)}:")
    d.para(t.paragraph(2, 3))


def _money(rng: random.Random) -> str:
    v = rng.randint(-9000, 90000) / 10
    s = f"{abs(v):,.1f}"
    return f"({s})" if v < 0 else s


def _financial(d: Doc, t: Text) -> None:
    d.heading(2, f"Consolidated {t.title(1, 2)} Statement")
    d.para(t.paragraph(2, 3))
    years = sorted(t.rng.sample(range(2015, 2026), 3))
    header = [[("", 1), ("Year Ended", 3)], [("(in millions)", 1)] + [(str(y), 1) for y in years]]
    rows = [[t.title(1, 3)] + [_money(t.rng) for _ in years] for _ in range(t.rng.randint(5, 8))]
    d.table(header, rows)
    d.para(t.paragraph(2, 4))


def _parameters(d: Doc, t: Text) -> None:
    d.heading(2, f"{t.title(1, 2)} Parameters")
    d.para(t.paragraph(1, 2))
    rows = []
    for _ in range(22):
        key = "_".join(t.rng.choice(_WORDS).upper() for _ in range(t.rng.randint(2, 4)))
        rows.append([key, f"{t.rng.randint(1, 999) / 100:.2f}%"])
    d.table([[("Parameter", 1), ("Value", 1)]], rows)


def _columns(d: Doc, t: Text) -> None:
    d.heading(1, t.title(3, 6))
    d.para(t.paragraph(1, 2))
    col: list[str] = []
    md: list[str] = []
    for k in range(4):
        title = f"{k + 1} {t.title(1, 3)}"
        col.append(f"<h2>{html.escape(title)}</h2>")
        md.append(f"## {title}")
        for _ in range(2):
            p = t.paragraph(2, 4)
            col.append(f"<p>{html.escape(p)}</p>")
            md.append(p)
    d.columns = [col]
    d.md.extend(md)


def _chart(d: Doc, t: Text) -> None:
    d.heading(2, f"{t.title(1, 3)} by {t.title(1, 1)}")
    d.para(t.paragraph(2, 3))
    d.chart = True
    d.html.append("<p>&#160;</p>" * 16)  # room for the chart drawn after typesetting (blank lines)
    caption = f"Figure 1: {t.sentence(5, 9)}"
    d.para(caption)
    d.para(t.paragraph(2, 3))


_ROMAN = ("I", "II", "III", "IV")
_VALUES = ("Yes", "No", "—", "12 V", "2.4 GHz", "n/a", "Optional", "4", "16 GB", "IP67", "1.2 kg", "USB-C")


def _handbook(d: Doc, t: Text) -> None:
    """A manual over two or three pages whose headings nest by their numbers: chapters ("1", "Chapter
    1", "I.", "A."), sections ("1.1"), subsections ("1.1.1"). Half the documents set sections and
    subsections in one size and weight, so only the numbering tells their levels apart."""
    scheme = t.rng.choice(("decimal", "chapter", "roman", "letter"))
    d.heading(1, t.title(3, 5))
    d.para(t.paragraph(2, 3))
    for c in range(1, t.rng.randint(3, 4)):
        top = {
            "decimal": f"{c}",
            "chapter": f"Chapter {c}",
            "roman": f"{_ROMAN[c - 1]}.",
            "letter": f"{'ABCD'[c - 1]}.",
        }
        d.heading(2, f"{top[scheme]} {t.title(1, 3)}")
        d.para(t.paragraph(2, 4))
        prefix = f"{'ABCD'[c - 1]}" if scheme == "letter" else f"{c}"
        for k in range(1, t.rng.randint(2, 3) + 1):
            d.heading(3, f"{prefix}.{k} {t.title(1, 3)}")
            d.para(t.paragraph(2, 4))
            for m in range(1, t.rng.randint(0, 2) + 1):
                d.heading(4, f"{prefix}.{k}.{m} {t.title(1, 3)}")
                d.para(t.paragraph(1, 3))
    if t.rng.random() < 0.5:
        d.css = "h3 {font-size: 1em; font-weight: bold} h4 {font-size: 1em; font-weight: bold}"
    else:
        d.css = "h4 {font-size: 1em; font-weight: bold}"


def _specs(d: Doc, t: Text) -> None:
    """A product sheet: feature names (text, some long enough to wrap) beside short centred values."""
    d.heading(2, f"{t.title(1, 2)} Specifications")
    d.para(t.paragraph(1, 2))
    models = [f"Model {c}" for c in "ABCDE"[: t.rng.randint(2, 4)]]
    rows = []
    for _ in range(t.rng.randint(6, 10)):
        name = t.title(1, 3) if t.rng.random() < 0.7 else t.sentence(6, 10).rstrip(".")
        rows.append([name] + [t.rng.choice(_VALUES) for _ in models])
    d.table([[("Feature", 1)] + [(m, 1) for m in models]], rows, centre=True)
    d.para(t.paragraph(1, 3))


def _keyvalue(d: Doc, t: Text) -> None:
    """A form-like table of two columns, no header: labels (some wrapping) and their values."""
    d.heading(2, f"{t.title(1, 3)} Details")
    d.para(t.paragraph(1, 2))
    rows = [[t.title(1, 5) + ":", t.words(t.rng.randint(1, 9))] for _ in range(t.rng.randint(5, 9))]
    d.table([], rows)
    d.para(t.paragraph(2, 3))


BUILDERS = {
    "report": _report,
    "worksheet": _worksheet,
    "financial": _financial,
    "parameters": _parameters,
    "columns": _columns,
    "chart": _chart,
    "handbook": _handbook,
    "specs": _specs,
    "keyvalue": _keyvalue,
}


def build(seed: int, kinds: tuple[str, ...] = KINDS) -> tuple[str, Doc, str, float]:
    """Seed → (name, document, font family, body size)."""
    rng = random.Random(seed)
    kind = kinds[seed % len(kinds)]
    d = Doc()
    BUILDERS[kind](d, Text(rng))
    family = FONTS[rng.randrange(len(FONTS))][0]
    return f"{kind}-{seed:04d}", d, family, rng.choice((9.0, 10.0, 11.0, 12.0))


def _css(family: str, size: float) -> str:
    return (
        f"body {{font-family: {family}; font-size: {size}pt}} "
        f"h1 {{font-size: {size * 1.9:.1f}pt}} h2 {{font-size: {size * 1.45:.1f}pt}} "
        f"h3 {{font-size: {size * 1.2:.1f}pt}} "
        "table {border-collapse: collapse; margin: 6pt 0} "
        f"td, th {{padding: 2pt {size * 1.2:.1f}pt 2pt 0; text-align: left; vertical-align: top}} "
        "th {font-weight: bold} td.c {text-align: center}"
    )


def _story_pdf(path: Path, d: Doc, family: str, size: float) -> None:
    import pymupdf

    css = _css(family, size) + " " + d.css
    page = pymupdf.paper_rect("a4")
    frame = pymupdf.Rect(56, 56, page.width - 56, page.height - 56)
    writer = pymupdf.DocumentWriter(str(path))
    story = pymupdf.Story(html="".join(d.html), user_css=css)
    more = 1
    while more:
        dev = writer.begin_page(page)
        more, filled = story.place(frame)
        story.draw(dev)
        if not more and d.columns:
            top = pymupdf.Rect(filled).y1 + size
            half = (frame.width - 24) / 2
            col = pymupdf.Story(html="".join(d.columns[0]), user_css=css)
            rects = [pymupdf.Rect(frame.x0, top, frame.x0 + half, frame.y1)]
            rects.append(pymupdf.Rect(frame.x1 - half, top, frame.x1, frame.y1))
            for r in rects:
                more_col, _ = col.place(r)
                col.draw(dev)
                if not more_col:
                    break
        writer.end_page()
    writer.close()
    if d.chart:
        _draw_chart(path, size)


def _draw_chart(path: Path, size: float) -> None:
    """Bars with numeric axis labels and category names into the blank room left for them."""
    import pymupdf

    doc = pymupdf.open(path)
    page = doc[0]
    hits = [b for b in page.get_text("blocks") if b[4].startswith("Figure 1")]
    bottom = hits[0][1] - 2 * size if hits else 400
    x0, y1, h = 110.0, bottom, 170.0
    shape = page.new_shape()
    shape.draw_line((x0, y1), (x0 + 330, y1))
    shape.draw_line((x0, y1), (x0, y1 - h))
    shape.finish(color=(0, 0, 0), width=0.8)
    rng = random.Random(int(bottom))
    for k in range(5):
        v = rng.uniform(0.2, 1.0)
        bx = x0 + 20 + k * 62
        shape.draw_rect(pymupdf.Rect(bx, y1 - v * h, bx + 36, y1))
        shape.finish(fill=(0.3, 0.45, 0.7), color=None)
        page.insert_text((bx + 4, y1 + 11), rng.choice(_WORDS)[:6], fontsize=7)
    shape.commit()
    for k in range(5):
        page.insert_text((x0 - 18, y1 - k * h / 4 + 2), str(k * 25), fontsize=7)
    doc.saveIncr()
    doc.close()


def _libreoffice_pdf(path: Path, d: Doc, family: str, size: float) -> None:
    """The same HTML through LibreOffice Writer (another typesetter: other fonts, spacing, tables)."""
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise SystemExit("--typesetter libreoffice needs soffice (apt-get install libreoffice-writer-nogui)")
    body = "".join(d.html)
    if d.columns:
        body += '<div style="column-count: 2">' + "".join(d.columns[0]) + "</div>"
    style = _css(family, size) + " " + d.css
    page = f"<html><head><meta charset='utf-8'><style>{style}</style></head><body>{body}</body></html>"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{path.stem}.html"
        src.write_text(page, encoding="utf-8")
        subprocess.run(
            [
                soffice,
                "--headless",
                "--infilter=HTML (StarWriter)",  # import into Writer: the web filter drops the text
                "--convert-to",
                "pdf:writer_pdf_Export",
                "--outdir",
                tmp,
                str(src),
            ],
            check=True,
            capture_output=True,
            timeout=180,
        )
        shutil.move(Path(tmp) / f"{path.stem}.pdf", path)
    if d.chart:
        _draw_chart(path, size)


def write_set(
    out: Path, seeds: list[int], typesetter: str = "story", kinds: tuple[str, ...] = KINDS
) -> list[str]:
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    (out / "gt").mkdir(parents=True, exist_ok=True)
    names = []
    for seed in seeds:
        name, d, family, size = build(seed, kinds)
        pdf = out / "pdf" / f"{name}.pdf"
        (_story_pdf if typesetter == "story" else _libreoffice_pdf)(pdf, d, family, size)
        (out / "gt" / f"{name}.md").write_text("\n\n".join(d.md) + "\n", encoding="utf-8")
        names.append(name)
    return names


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seeds", default="0-23")
    ap.add_argument("--typesetter", choices=("story", "libreoffice"), default="story")
    ap.add_argument(
        "--kinds", default=",".join(KINDS), help=f"kinds, cycled by seed (also: {', '.join(EXTRA_KINDS)})"
    )
    args = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = set(kinds) - set(BUILDERS)
    if unknown:
        raise SystemExit(f"unknown kinds: {', '.join(sorted(unknown))}")
    names = write_set(args.out, _seeds(args.seeds), args.typesetter, kinds)
    print(f"{len(names)} documents in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
