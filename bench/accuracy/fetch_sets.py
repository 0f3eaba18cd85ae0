"""A public measure-only set: sections of the Debian Reference (real headings, tables, lists, code),
typeset by LibreOffice, with a ground truth taken from the HTML's own structure.

Why: this machine reaches package registries only, and no package ships PDFs with a Markdown ground
truth of the layouts issue 25 is about. Debian's ``debian-reference-en`` package (GPL-2+, pinned
version below) ships the Debian Reference as DocBook HTML: real prose, numbered section titles, many
tables and lists, written by people who never saw this project. Each section becomes one short
document; LibreOffice Writer (not our typesetter) turns its HTML into a PDF, half of the documents
with ruled tables and half without. Nothing here is tuned on: it is measured only.

    python -m bench.accuracy.fetch_sets debian-reference OUT [--docs 24]

needs ``apt-get download`` (Debian's archive) and ``soffice`` (``apt-get install
libreoffice-writer-nogui``); writes ``OUT/pdf/NAME.pdf`` and ``OUT/gt/NAME.md``. The package is not
committed here: it is fetched by name and version.
"""

from __future__ import annotations

import argparse
import html
import itertools
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

PACKAGE = "debian-reference-en=2.100"
# Navigation, tables of contents, and admonitions (laid out as one-cell tables in DocBook).
SKIP_CLASSES = (
    "navheader",
    "navfooter",
    "toc",
    "list-of-tables",
    "footnotes",
    "note",
    "tip",
    "warning",
    "caution",
    "important",
)
MAX_CHARS = 3500  # about one to two pages per document


@dataclass
class Block:
    kind: str  # h, p, li, oli, table, pre
    text: str = ""
    level: int = 0
    rows: list[list[tuple[str, str, int]]] = field(default_factory=list)  # (th|td, text, colspan)


class DocBookBlocks(HTMLParser):
    """DocBook HTML → flat blocks in document order (navigation, tables of contents skipped)."""

    skip_classes: tuple[str, ...] = SKIP_CLASSES

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self._skip = 0  # depth inside a skipped div
        self._divs: list[bool] = []  # per open div: whether it started a skip
        self._buf: list[str] | None = None
        self._kind = ""
        self._level = 0
        self._lists: list[str] = []
        self._table: list[list[tuple[str, str, int]]] | None = None
        self._cell: tuple[str, int] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag == "div":
            skip = any(c in cls.split() for c in self.skip_classes)
            self._divs.append(skip)
            self._skip += skip
        if self._skip:
            return
        if re.fullmatch(r"h[1-6]", tag):
            self._open("h", int(tag[1]))
        elif tag in ("ul", "ol"):
            self._lists.append(tag)
        elif tag == "li":
            self._open("oli" if self._lists and self._lists[-1] == "ol" else "li")
        elif tag == "p" and self._buf is None and self._table is None:
            self._open("p")
        elif tag == "pre":
            self._open("pre")
        elif tag == "table":
            self._table = []
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = (tag, int(a.get("colspan") or 1))
            self._buf = []

    def _open(self, kind: str, level: int = 0) -> None:
        self._close()
        self._kind, self._level, self._buf = kind, level, []

    def _close(self) -> None:
        if self._buf is None or self._table is not None:
            return
        raw = "".join(self._buf)
        text = raw.strip("\n") if self._kind == "pre" else " ".join(raw.split())
        if text:
            self.blocks.append(Block(self._kind, text, self._level))
        self._buf = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._divs:
            self._skip -= self._divs.pop()
            return
        if self._skip:
            return
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            if self._table:
                self._table[-1].append(
                    (self._cell[0], " ".join("".join(self._buf or []).split()), self._cell[1])
                )
            self._cell, self._buf = None, None
        elif tag == "table" and self._table is not None:
            rows = [r for r in self._table if r]
            self._table = None
            if rows:
                self.blocks.append(Block("table", rows=rows))
        elif tag in ("ul", "ol") and self._lists:
            self._lists.pop()
        elif re.fullmatch(r"h[1-6]|p|li|pre", tag):
            self._close()

    def handle_data(self, data: str) -> None:
        if not self._skip and self._buf is not None:
            self._buf.append(data)


def sections(blocks: list[Block]) -> list[list[Block]]:
    """Runs of blocks from one section title (h2/h3) to the next, short enough for a document."""
    out: list[list[Block]] = []
    cur: list[Block] = []
    for b in blocks:
        if b.kind == "h" and b.level in (2, 3) and cur:
            out.append(cur)
            cur = []
        cur.append(b)
    if cur:
        out.append(cur)
    size = [sum(len(b.text) + sum(len(c[1]) for r in b.rows for c in r) for b in s) for s in out]
    return [s for s, n in zip(out, size, strict=True) if s[0].kind == "h" and 400 <= n <= MAX_CHARS]


def _table_html(rows: list[list[tuple[str, str, int]]], border: bool) -> str:
    attr = ' border="1" cellpadding="3"' if border else ' cellpadding="3"'
    body = "".join(
        "<tr>"
        + "".join(
            f"<{t}{f' colspan={chr(34)}{cs}{chr(34)}' if cs > 1 else ''}>{html.escape(x)}</{t}>"
            for t, x, cs in r
        )
        + "</tr>"
        for r in rows
    )
    return f"<table{attr}>{body}</table>"


def render(section: list[Block], border: bool) -> tuple[str, str]:
    """A section → (HTML for the typesetter, ground-truth Markdown). Heading levels are relative:
    the section's title is ``#``."""
    top = section[0].level
    page: list[str] = []
    md: list[str] = []
    items: list[str] = []
    for k, b in enumerate(section):
        if b.kind in ("li", "oli"):
            page.append(f"<li>{html.escape(b.text)}</li>")
            n = sum(1 for x in items if x) + 1
            items.append(f"{n}. {b.text}" if b.kind == "oli" else f"- {b.text}")
            nxt = section[k + 1].kind if k + 1 < len(section) else ""
            if nxt != b.kind:
                tag = "ol" if b.kind == "oli" else "ul"
                start = len(page) - len(items)
                page[start:] = [f"<{tag}>" + "".join(page[start:]) + f"</{tag}>"]
                md.append("\n".join(items))
                items = []
            continue
        if b.kind == "h":
            level = min(6, b.level - top + 1)
            page.append(f"<h{level}>{html.escape(b.text)}</h{level}>")
            md.append(f"{'#' * level} {b.text}")
        elif b.kind == "p":
            page.append(f"<p>{html.escape(b.text)}</p>")
            md.append(b.text)
        elif b.kind == "pre":
            page.append(f"<pre>{html.escape(b.text)}</pre>")
            md.append(f"```\n{b.text}\n```")
        elif b.kind == "table":
            page.append(_table_html(b.rows, border))
            md.append(_table_html(b.rows, False).replace(' cellpadding="3"', ""))
    css = "body {font-family: serif; font-size: 10pt} pre {font-family: monospace; font-size: 9pt}"
    doc = f"<html><head><meta charset='utf-8'><style>{css}</style></head><body>{''.join(page)}</body></html>"
    return doc, "\n\n".join(md) + "\n"


def _soffice_pdf(html_text: str, pdf: Path) -> None:
    soffice = shutil.which("soffice") or shutil.which("libreoffice")
    if soffice is None:
        raise SystemExit("needs soffice: apt-get install libreoffice-writer-nogui")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{pdf.stem}.html"
        src.write_text(html_text, encoding="utf-8")
        cmd = [soffice, "--headless", "--infilter=HTML (StarWriter)", "--convert-to", "pdf:writer_pdf_Export"]
        subprocess.run([*cmd, "--outdir", tmp, str(src)], check=True, capture_output=True, timeout=180)
        shutil.move(Path(tmp) / f"{pdf.stem}.pdf", pdf)


def debian_reference(out: Path, docs: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=tmp, check=True, capture_output=True)
        (deb,) = Path(tmp).glob("*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(tmp) / "x")], check=True)
        chapters = sorted((Path(tmp) / "x").rglob("ch*.en.html"))
        found: list[tuple[str, list[Block]]] = []
        for ch in chapters:
            parser = DocBookBlocks()
            parser.feed(ch.read_text(encoding="utf-8", errors="replace"))
            found += [(f"{ch.name.split('.')[0]}-{k:02d}", s) for k, s in enumerate(sections(parser.blocks))]
    # Round robin over the chapters (sections of every chapter, not the first chapter's only), then
    # documents with a table first (what TEDS needs), then the others.
    rank = {name: int(name.rsplit("-", 1)[1]) for name, _ in found}
    found.sort(key=lambda f: (rank[f[0]], f[0]))
    with_table = [f for f in found if any(b.kind == "table" for b in f[1])]
    without = [f for f in found if not any(b.kind == "table" for b in f[1])]
    chosen = with_table[: docs * 2 // 3] + without[: docs - min(len(with_table), docs * 2 // 3)]
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    (out / "gt").mkdir(parents=True, exist_ok=True)
    for k, (name, section) in enumerate(chosen):
        page, md = render(section, border=k % 2 == 1)
        _soffice_pdf(page, out / "pdf" / f"{name}.pdf")
        (out / "gt" / f"{name}.md").write_text(md, encoding="utf-8")
    return [n for n, _ in chosen]


# --- R manuals: real PDFs typeset by TeX, ground truth from the same Texinfo source's HTML ----------
R_PACKAGES = ("r-doc-pdf=4.2.2.20221110-2", "r-doc-html=4.2.2.20221110-2")
R_MANUALS = ("R-intro", "R-data", "R-admin", "R-lang", "R-exts", "R-ints")
R_MAX_CHARS = 5000  # about two pages of a manual
R_MIN_MATCH = 0.85  # PDF text vs ground truth, both plain: below this the cut went wrong
RUNNING_HEAD = 66.0  # points from the top: the manuals' running head ("Chapter 2: Objects   4")


class TexinfoBlocks(DocBookBlocks):
    """Texinfo's HTML (texi2any) → blocks: navigation, menus, contents and footnotes skipped; a
    definition list's terms (``@table`` items, ``@deffn`` lines) are paragraphs, as typeset."""

    skip_classes = ("header", "contents", "shortcontents", "footnote", "Contents_element")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        super().handle_starttag(tag, attrs)
        if tag == "dt" and not self._skip:
            self._open("p")

    def handle_endtag(self, tag: str) -> None:
        super().handle_endtag(tag)
        if tag == "dt" and not self._skip:
            self._close()


def _texinfo_blocks(html_text: str) -> list[Block]:
    html_text = re.sub(r'<ul class="section-toc">.*?</ul>', "", html_text, flags=re.S)  # menus
    # A framed box (@cartouche) is a one-cell bordered table in the HTML, not a table: its content
    # (an example, a formula) is read as it stands.
    html_text = re.sub(
        r'<table[^>]*class="cartouche"[^>]*><tr><td>(.*?)</td></tr></table>', r"\1", html_text, flags=re.S
    )
    html_text = re.sub(r'<table[^>]*class="index-\w+".*?</table>', "", html_text, flags=re.S)
    html_text = re.sub(r"<table[^>]*><tr><th[^>]*>Jump to:.*?</table>", "", html_text, flags=re.S)
    parser = TexinfoBlocks()
    parser.feed(html_text)
    parser._close()
    return parser.blocks


def _title_key(text: str) -> str:
    """A section title without its number, normalised ("2.1.3 Language objects" → "language objects")."""
    text = re.sub(r"^(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+", "", text.strip())
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def section_units(blocks: list[Block], levels: tuple[int, ...] = (3, 4)) -> list[tuple[int, list[Block]]]:
    """(index of the heading among the manual's headings, blocks) of each section whose heading is at
    one of ``levels`` (Texinfo: ``h3`` sections, ``h4`` subsections) with what it holds, up to the
    next heading of its level or above."""
    heads = [k for k, b in enumerate(blocks) if b.kind == "h"]
    units: list[tuple[int, list[Block]]] = []
    for n, k in enumerate(heads):
        level = blocks[k].level
        if level not in levels:
            continue
        end = next((j for j in heads[n + 1 :] if blocks[j].level <= level), len(blocks))
        units.append((n, blocks[k:end]))
    return units


def _plain(md: str) -> str:
    md = re.sub(r"<[^>]+>", " ", md)
    md = re.sub(r"^#+\s|^```.*$|^\s*(?:[-*]|\d+\.)\s", " ", md, flags=re.M)
    return " ".join(md.split())


def _outline_at(src, entry: list) -> tuple[int, float]:
    """An outline entry's target: (page index, y from the top of the page)."""
    page = src[entry[2] - 1]
    return entry[2] - 1, page.rect.height - entry[3]["to"].y


def _cut_pdf(src, start: tuple[int, float], end: tuple[int, float] | None, pdf: Path) -> bool:
    """Pages of ``src`` from ``start`` (page index, y from the top) to ``end`` (exclusive) as a PDF
    of their own: what lies before the start and from the end on is redacted, and so is every
    page's running head; pages left empty are dropped. The typesetting is TeX's, untouched."""
    import pymupdf

    last = end[0] if end is not None else src.page_count - 1
    doc = pymupdf.open()
    doc.insert_pdf(src, from_page=start[0], to_page=last)
    for k, page in enumerate(doc):
        w, h = page.rect.width, page.rect.height
        page.add_redact_annot(pymupdf.Rect(0, 0, w, RUNNING_HEAD))
        if k == 0:
            page.add_redact_annot(pymupdf.Rect(0, 0, w, start[1] - 1))
        if end is not None and k == len(doc) - 1:
            page.add_redact_annot(pymupdf.Rect(0, end[1] - 1, w, h))
        page.apply_redactions()
    empty = [k for k, page in enumerate(doc) if not page.get_text().strip()]
    if len(empty) == len(doc):
        return False
    if empty:
        doc.delete_pages(empty)
    doc.save(pdf, garbage=3, deflate=True)
    doc.close()
    return True


def _write_chosen(out: Path, found: list[tuple[str, str, Path]], docs: int) -> list[str]:
    """Round robin over the sources (the name's part before its last dash-separated title), documents
    with a table first (what TEDS needs), then the others."""
    by_source: dict[str, list[tuple[str, str, Path]]] = {}
    for f in found:
        by_source.setdefault(f[0].split("~")[0], []).append(f)
    ordered = [f for group in itertools.zip_longest(*by_source.values()) for f in group if f]
    with_table = [f for f in ordered if "<table>" in f[1]]
    without = [f for f in ordered if "<table>" not in f[1]]
    chosen = with_table[: docs * 2 // 3]
    chosen += without[: docs - len(chosen)]
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    (out / "gt").mkdir(parents=True, exist_ok=True)
    names = []
    for name, md, pdf in chosen:
        clean = name.replace("~", "-")
        shutil.copy(pdf, out / "pdf" / f"{clean}.pdf")
        (out / "gt" / f"{clean}.md").write_text(md, encoding="utf-8")
        names.append(clean)
    return names


def _section_documents(
    blocks: list[Block], levels: tuple[int, ...], src, prefix: str, tmp: Path
) -> list[tuple[str, str, Path]]:
    """The sections of one manual (headings at ``levels``, h1 = outline level 1) cut out of its PDF
    where the outline says they start and the next section at their level or above does; ground
    truth from the HTML blocks. Sections whose cut PDF's plain text does not match the ground truth
    (``R_MIN_MATCH``) are left out."""
    import pymupdf

    from bench.accuracy.scores import nid

    toc = src.get_toc(simple=False)
    heads = [b for b in blocks if b.kind == "h"]
    out: list[tuple[str, str, Path]] = []
    for n, unit in section_units(blocks, levels):
        size = sum(len(b.text) + sum(len(c[1]) for r in b.rows for c in r) for b in unit)
        if not 400 <= size <= R_MAX_CHARS:
            continue
        level = heads[n].level - levels[0] + 2  # the outline level of that heading
        key = _title_key(heads[n].text)
        at = [j for j, e in enumerate(toc) if e[0] == level and _title_key(e[1]) == key]
        if len(at) != 1 or "to" not in toc[at[0]][3]:
            continue
        j = at[0]
        nxt = next((e for e in toc[j + 1 :] if e[0] <= level and "to" in e[3]), None)
        start, end = _outline_at(src, toc[j]), (_outline_at(src, nxt) if nxt else None)
        if end is not None and end[0] - start[0] > 2:
            continue
        name = f"{prefix}~{key.replace(' ', '-')[:40]}"
        _, md = render(unit, border=False)
        pdf = tmp / f"{name}.pdf"
        if not _cut_pdf(src, start, end, pdf):
            continue
        text = " ".join(page.get_text() for page in pymupdf.open(pdf))
        if (nid(_plain(md), " ".join(text.split())) or 0) >= R_MIN_MATCH:
            out.append((name, md, pdf))
    return out


def r_manuals(out: Path, docs: int) -> list[str]:
    """Sections of six R manuals (Debian ``r-doc-pdf``/``r-doc-html``, GPL-2+): each section cut out
    of the manual's PDF where its outline says it starts and the next one does; ground truth from the
    HTML of the same Texinfo source. Sections with a table (Texinfo multitables: columns without
    rules) first, round robin over the manuals."""
    import pymupdf

    found: list[tuple[str, str, Path]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["apt-get", "download", *R_PACKAGES], cwd=tmp, check=True, capture_output=True)
        for deb in root.glob("*.deb"):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root / "x")], check=True)
        manual_dir = root / "x" / "usr" / "share" / "doc"
        for manual in R_MANUALS:
            blocks = _texinfo_blocks((manual_dir / "r-doc-html" / "manual" / f"{manual}.html").read_text())
            src = pymupdf.open(manual_dir / "r-doc-pdf" / "manual" / f"{manual}.pdf")
            found += _section_documents(blocks, (3, 4), src, manual, root)
        return _write_chosen(out, found, docs)


# --- Debian Developer's Reference: LaTeX (Sphinx) PDF, ground truth from the Sphinx HTML ----------
DEVREF_PACKAGE = "developers-reference=12.18"
DEVREF_PAGES = (
    "scope",
    "new-maintainer",
    "developer-duties",
    "resources",
    "pkgs",
    "best-pkging-practices",
    "beyond-pkging",
    "l10n",
    "tools",
)


class SphinxBlocks(DocBookBlocks):
    """Sphinx's HTML → blocks: sidebars, navigation and footers skipped, permalink marks dropped."""

    skip_classes = ("sphinxsidebar", "related", "footer", "clearer", "toctree-wrapper")

    def handle_data(self, data: str) -> None:
        super().handle_data(data.replace("\u00b6", ""))


def _sphinx_blocks(html_text: str) -> list[Block]:
    parser = SphinxBlocks()
    parser.feed(html_text)
    parser._close()
    for b in parser.blocks:
        if b.kind == "h":  # "3.1. Title" in HTML is "3.1 Title" in the PDF
            b.text = re.sub(r"^(\d+(?:\.\d+)*)\.\s", r"\1 ", b.text)
    return parser.blocks


def developers_reference(out: Path, docs: int) -> list[str]:
    """Sections of the Debian Developer's Reference (Debian ``developers-reference``, MIT-style
    licence): the LaTeX-typeset PDF cut at its outline targets, ground truth from the Sphinx HTML."""
    import pymupdf

    found: list[tuple[str, str, Path]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subprocess.run(["apt-get", "download", DEVREF_PACKAGE], cwd=tmp, check=True, capture_output=True)
        (deb,) = root.glob("*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root / "x")], check=True)
        base = root / "x" / "usr" / "share" / "developers-reference"
        src = pymupdf.open(base / "developers-reference.pdf")
        for page in DEVREF_PAGES:
            blocks = _sphinx_blocks((base / f"{page}.html").read_text(encoding="utf-8"))
            found += _section_documents(blocks, (2, 3), src, f"devref-{page}", root)
        return _write_chosen(out, found, docs)


SETS = {
    "debian-reference": debian_reference,
    "r-manuals": r_manuals,
    "developers-reference": developers_reference,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("set", choices=tuple(SETS))
    ap.add_argument("out", type=Path)
    ap.add_argument("--docs", type=int, default=24)
    args = ap.parse_args(argv)
    names = SETS[args.set](args.out, args.docs)
    print(f"{len(names)} documents in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
