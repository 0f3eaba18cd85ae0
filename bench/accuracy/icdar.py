"""ICDAR 2013 Table Competition, scored per table: region detection, cell adjacency, TEDS.

Usage (from the repository root; the set is ``../shared/datasets/icdar2013`` on the development machine,
the competition's public release as tabula-java keeps it):

    python -m bench.accuracy.icdar --data DIR [--tools auto] [--docs eu-001,us-012] [--per-table]

What is measured, per ground-truth table (``*-reg.xml`` regions, ``*-str.xml`` cells):

- **Regions** (as the competition did, on sub-objects): the page's characters (the text layer's glyphs,
  by their centres) inside the table's regions. *Recall* of a true table = its characters that lie in
  some predicted table box of that page; *precision* of a predicted table = its characters that lie in
  some true region. Means over true tables and over predicted tables; F1 of the two means. A table that
  is found whole (recall 1) is *complete*, a predicted one with nothing else in it (precision 1) *pure*.
- **Cell adjacency** (Göbel et al. 2012, the competition's structure measure): every non-empty cell and
  its nearest non-empty neighbour to the right and below, along each row and column it spans (empty
  cells are skipped), as ``(text, text, direction)``; texts compared after keeping letters and digits
  only, lower-cased. Precision and recall of the predicted table's relations (the predicted tables whose
  characters lie mostly in this true table's regions; none: recall 0) against the truth's, mean over the
  true tables; F1 of the means.
- **TEDS** of the table alone (``scores.tree_similarity``: cells with colspan/rowspan, text distance on
  renaming) against the truth's cells written as an HTML table with spans; 0 when no table matches.

Some documents have a second ground truth (``eu-009b``: the competition accepted either reading); each
of their tables is scored against the reading that scores the document higher. A true table is *ruled*
when the page draws at least two horizontal and two vertical lines (or cell fills) inside its region,
*unruled* otherwise; the report splits the figures by that kind.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from bench.accuracy.scores import Node, tree_similarity

logger = logging.getLogger(__name__)

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in PDF points, top-left origin, page as shown


@dataclass
class GridCell:
    r0: int
    c0: int
    r1: int  # inclusive
    c1: int
    text: str


@dataclass
class TruthTable:
    doc: str
    tid: str
    regions: list[tuple[int, Box]]  # (0-based page, box)
    cells: list[GridCell]
    kind: str = ""  # "ruled" / "unruled"


@dataclass
class PredTable:
    page: int
    box: Box
    cells: list[GridCell]


@dataclass
class TableScore:
    doc: str
    tid: str
    kind: str
    recall_chars: float
    adj_precision: float
    adj_recall: float
    teds: float
    matched: int  # predicted tables matched to it


@dataclass
class DocResult:
    name: str
    pages: int
    cpu_s: float
    tables: list[TableScore] = field(default_factory=list)
    pred_precisions: list[float] = field(default_factory=list)  # one per predicted table
    error: str = ""


# --- ground truth ------------------------------------------------------------------------------
def _to_shown(page, box_pdf: tuple[float, float, float, float]) -> Box:
    """A region's box (origin bottom-left) → the page as shown (origin top-left).

    The release's regions are in the frame of the page as shown, counted from its bottom: on the
    two turned pages of the set (eu-015) their x-ranges match the shown page's, not the media box's."""
    x1, y1, x2, y2 = box_pdf
    h = page.rect.height
    return (x1, h - y2, x2, h - y1)


def load_truth(str_xml: Path, reg_xml: Path, doc) -> list[TruthTable]:
    """The tables of one ground-truth reading (``-str.xml`` cells, ``-reg.xml`` regions)."""
    regions: dict[str, list[tuple[int, Box]]] = {}
    for table in ET.parse(reg_xml).getroot().iter("table"):
        for reg in table.iter("region"):
            bb = reg.find("bounding-box")
            page = int(reg.get("page", "1")) - 1
            box = tuple(float(bb.get(k)) for k in ("x1", "y1", "x2", "y2"))
            regions.setdefault(table.get("id"), []).append((page, _to_shown(doc[page], box)))
    out = []
    for table in ET.parse(str_xml).getroot().iter("table"):
        tid = table.get("id")
        cells = []
        for reg in table.iter("region"):
            dr, dc = int(reg.get("row-increment") or 0), int(reg.get("col-increment") or 0)
            for c in reg.iter("cell"):
                r0, c0 = int(c.get("start-row")) + dr, int(c.get("start-col")) + dc
                r1 = int(c.get("end-row") or c.get("start-row")) + dr
                c1 = int(c.get("end-col") or c.get("start-col")) + dc
                text = " ".join((c.findtext("content") or "").split())
                cells.append(GridCell(r0, c0, r1, c1, text))
        if tid in regions:
            out.append(TruthTable(str_xml.name.replace("-str.xml", ""), tid, regions[tid], _from_zero(cells)))
    return out


def _from_zero(cells: list[GridCell]) -> list[GridCell]:
    """The grid moved so that its first row and column hold a cell.

    Most US files of the release count rows and columns from 1, the EU files from 0; read as given,
    a table of the US files gained an empty first row and column, which TEDS charged to every reader
    (the competition's adjacency measure skips empty cells, so the competition never saw it)."""
    if not cells:
        return cells
    dr, dc = min(c.r0 for c in cells), min(c.c0 for c in cells)
    return [GridCell(c.r0 - dr, c.c0 - dc, c.r1 - dr, c.c1 - dc, c.text) for c in cells]


def readings(folder: Path, name: str) -> list[tuple[Path, Path]]:
    """``(str, reg)`` ground-truth files of document ``name`` (``eu-009a`` also has ``eu-009b``)."""
    out = [(folder / f"{name}-str.xml", folder / f"{name}-reg.xml")]
    if name.endswith("a"):
        alt = (folder / f"{name[:-1]}b-str.xml", folder / f"{name[:-1]}b-reg.xml")
        if alt[0].exists() and alt[1].exists():
            out.append(alt)
    return out


def documents(data: Path) -> dict[str, Path]:
    """``name -> pdf`` for every PDF of the set that has a ground truth."""
    pdfs = sorted(data.glob("*/*.pdf")) or sorted(data.glob("*.pdf"))
    docs = {p.stem: p for p in pdfs if (p.parent / f"{p.stem}-str.xml").exists()}
    if not docs:
        raise SystemExit(f"no ICDAR 2013 PDF with a -str.xml ground truth under {data}")
    return docs


# --- page facts --------------------------------------------------------------------------------
def page_chars(page) -> list[tuple[float, float]]:
    """Centres of the page's visible glyphs (no spaces), as shown (PyMuPDF gives them unturned)."""
    m = page.rotation_matrix
    out = []
    for block in page.get_text("rawdict")["blocks"]:
        for line in block.get("lines", []):
            for span in line["spans"]:
                for ch in span["chars"]:
                    if ch["c"].strip():
                        x0, y0, x1, y1 = ch["bbox"]
                        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
                        out.append((cx * m.a + cy * m.c + m.e, cx * m.b + cy * m.d + m.f))
    return out


def ruled(page, box: Box) -> bool:
    """Whether the page draws at least two horizontal and two vertical lines (or filled cells) in ``box``."""
    x0, y0, x1, y1 = box
    h = v = 0
    for d in page.get_drawings():
        for item in d["items"]:
            if item[0] == "l":
                a, b = item[1], item[2]
                pts = ((a.x, a.y), (b.x, b.y))
            elif item[0] == "re":
                r = item[1]
                pts = ((r.x0, r.y0), (r.x1, r.y1))
            else:
                continue
            (ax, ay), (bx, by) = pts
            if max(ax, bx) < x0 - 2 or min(ax, bx) > x1 + 2 or max(ay, by) < y0 - 2 or min(ay, by) > y1 + 2:
                continue
            w, ht = abs(bx - ax), abs(by - ay)
            if w >= 0.3 * (x1 - x0) or (item[0] == "re" and w > 5 and ht > 5):
                h += 1
            if ht >= 0.3 * (y1 - y0) or (item[0] == "re" and w > 5 and ht > 5):
                v += 1
    return h >= 2 and v >= 2


def _inside(pt: tuple[float, float], box: Box, pad: float = 0.5) -> bool:
    return box[0] - pad <= pt[0] <= box[2] + pad and box[1] - pad <= pt[1] <= box[3] + pad


# --- cells, relations, HTML --------------------------------------------------------------------
class _GridReader(HTMLParser):
    """HTML tables → grids of ``GridCell`` (rowspans and colspans placed as a browser would)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[GridCell]] = []
        self._rows: list[list[tuple[str, int, int]]] = []
        self._text: list[str] | None = None
        self._span = (1, 1)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._rows = []
        elif tag == "tr":
            self._rows.append([])
        elif tag in ("td", "th"):
            if not self._rows:
                self._rows.append([])
            self._span = (_int(a.get("rowspan")), _int(a.get("colspan")))
            self._text = []
        elif tag == "br" and self._text is not None:
            self._text.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._text is not None:
            self._rows[-1].append((" ".join("".join(self._text).split()), *self._span))
            self._text = None
        elif tag == "table":
            self.tables.append(place(self._rows))

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def _int(v: str | None) -> int:
    try:
        return max(1, int(v or 1))
    except ValueError:
        return 1


def place(rows: Sequence[Sequence[tuple[str, int, int]]]) -> list[GridCell]:
    """Rows of ``(text, rowspan, colspan)`` → cells at grid positions (spans of rows above skipped)."""
    taken: set[tuple[int, int]] = set()
    cells = []
    for r, row in enumerate(rows):
        c = 0
        for text, rs, cs in row:
            while (r, c) in taken:
                c += 1
            cells.append(GridCell(r, c, r + rs - 1, c + cs - 1, text))
            taken.update((rr, cc) for rr in range(r, r + rs) for cc in range(c, c + cs))
            c += cs
    return cells


def html_tables(html: str) -> list[list[GridCell]]:
    reader = _GridReader()
    reader.feed(html)
    return reader.tables


_KEEP = re.compile(r"[^\w]+|_")


def norm(text: str) -> str:
    return _KEEP.sub("", text).lower()


def relations(cells: Iterable[GridCell]) -> Counter[tuple[str, str, str]]:
    """Adjacency relations: each non-empty cell and its nearest non-empty neighbour right and below."""
    full = [c for c in cells if norm(c.text)]
    at: dict[tuple[int, int], GridCell] = {}
    for c in full:
        for r in range(c.r0, c.r1 + 1):
            for k in range(c.c0, c.c1 + 1):
                at.setdefault((r, k), c)
    if not at:
        return Counter()
    max_r = max(r for r, _ in at)
    max_c = max(k for _, k in at)
    found: set[tuple[int, int, str]] = set()
    for c in full:
        for r in range(c.r0, c.r1 + 1):
            for k in range(c.c1 + 1, max_c + 1):
                n = at.get((r, k))
                if n is not None and n is not c:
                    found.add((id(c), id(n), "h"))
                    break
        for k in range(c.c0, c.c1 + 1):
            for r in range(c.r1 + 1, max_r + 1):
                n = at.get((r, k))
                if n is not None and n is not c:
                    found.add((id(c), id(n), "v"))
                    break
    by_id = {id(c): c for c in full}
    return Counter((norm(by_id[a].text), norm(by_id[b].text), d) for a, b, d in found)


def cells_tree(cells: Sequence[GridCell]) -> Node:
    """Cells → ``table → tr → td`` (empty cells where no cell starts and no span covers)."""
    table = Node("table")
    if not cells:
        return table
    n_rows = max(c.r1 for c in cells) + 1
    n_cols = max(c.c1 for c in cells) + 1
    covered = {(r, k) for c in cells for r in range(c.r0, c.r1 + 1) for k in range(c.c0, c.c1 + 1)}
    starts = {(c.r0, c.c0): c for c in cells}
    for r in range(n_rows):
        row = Node("tr")
        for k in range(n_cols):
            c = starts.get((r, k))
            if c is not None:
                row.children.append(Node("td", c.text, c.c1 - c.c0 + 1, c.r1 - c.r0 + 1))
            elif (r, k) not in covered:
                row.children.append(Node("td", ""))
        table.children.append(row)
    return table


def _stack(tables: Sequence[list[GridCell]]) -> list[GridCell]:
    """Several predicted tables matched to one true table, one under the other."""
    out: list[GridCell] = []
    top = 0
    for t in tables:
        out += [GridCell(c.r0 + top, c.c0, c.r1 + top, c.c1, c.text) for c in t]
        top += max((c.r1 for c in t), default=-1) + 1
    return out


# --- scoring one document ----------------------------------------------------------------------
def score_reading(
    truth: list[TruthTable], preds: list[PredTable], chars: dict[int, list[tuple[float, float]]]
) -> tuple[list[TableScore], list[float]]:
    """Per true table scores and per predicted table region precision, for one ground-truth reading."""
    in_truth: dict[int, list[int]] = {}  # page -> for each char, index of the true table holding it or -1
    for page, pts in chars.items():
        owner = []
        for pt in pts:
            k = next(
                (i for i, t in enumerate(truth) if any(p == page and _inside(pt, b) for p, b in t.regions)),
                -1,
            )
            owner.append(k)
        in_truth[page] = owner
    precisions = []
    votes: list[Counter[int]] = []  # per prediction: true table -> chars shared
    for pred in preds:
        pts = chars.get(pred.page, [])
        inside = [i for i, pt in enumerate(pts) if _inside(pt, pred.box)]
        owners = Counter(in_truth[pred.page][i] for i in inside)
        votes.append(owners)
        precisions.append((len(inside) - owners.get(-1, 0)) / len(inside) if inside else 0.0)
    scores = []
    for k, t in enumerate(truth):
        mine = [
            (page, i) for page, own in in_truth.items() for i, o in enumerate(own) if o == k
        ]  # this table's chars
        hit = sum(
            1 for page, i in mine if any(p.page == page and _inside(chars[page][i], p.box) for p in preds)
        )
        recall = hit / len(mine) if mine else 0.0
        # predictions that belong to this table: most of their true characters are this table's
        matched = [
            p
            for p, v in zip(preds, votes, strict=True)
            if v and max((o for o in v if o >= 0), key=v.get, default=-1) == k
        ]
        pred_cells = _stack([p.cells for p in matched])
        gt_rel, pr_rel = relations(t.cells), relations(pred_cells)
        correct = sum((gt_rel & pr_rel).values())
        adj_p = correct / sum(pr_rel.values()) if pr_rel else 0.0
        adj_r = correct / sum(gt_rel.values()) if gt_rel else 0.0
        teds = tree_similarity(_body(t.cells), _body(pred_cells)) if matched else 0.0
        scores.append(TableScore(t.doc, t.tid, t.kind, recall, adj_p, adj_r, teds, len(matched)))
    return scores, precisions


def _body(cells: Sequence[GridCell]) -> Node:
    body = Node("body")
    body.children.append(cells_tree(cells))
    return body


# --- tools -------------------------------------------------------------------------------------
Tool = Callable[[Path], list[PredTable]]


def ocr_app_tool(engine: str) -> Tool:
    """ocr-app's converter: every ``table`` block of the document, its box mapped back to PDF points."""
    import pymupdf

    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(engine=engine)
    converter = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine=engine, formats=frozenset({"md"}))

    def run(pdf: Path) -> list[PredTable]:
        with tempfile.TemporaryDirectory() as tmp:
            (doc,) = converter.convert([pdf], tmp, options)
        if doc.error:
            raise RuntimeError(doc.error)
        out = []
        with pymupdf.open(pdf) as src:
            for page in doc.pages:
                scale = page.width / src[page.index].rect.width
                for block in page.blocks:
                    if block.label != "table" or block.box is None:
                        continue
                    box = tuple(v / scale for v in block.box)
                    cells = html_tables(block.text)
                    out.append(PredTable(page.index, box, cells[0] if cells else []))
        return out

    return run


def make_tool(name: str) -> Tool:
    if name in ("auto", "textlayer", "light"):
        return ocr_app_tool(name)
    raise SystemExit(f"unknown tool {name!r} (auto, textlayer, light)")


def score_document(name: str, pdf: Path, tool: Tool) -> DocResult:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        pages = doc.page_count
        truths = [load_truth(s, r, doc) for s, r in readings(pdf.parent, name)]
        chars = {p: page_chars(doc[p]) for p in range(pages)}
        for reading in truths:
            for t in reading:
                t.kind = "ruled" if any(ruled(doc[p], b) for p, b in t.regions) else "unruled"
    t0 = time.process_time()
    try:
        preds, error = tool(pdf), ""
    except Exception as exc:  # a failure on one document is a score of 0, not a crash
        preds, error = [], f"{type(exc).__name__}: {exc}"
    cpu = time.process_time() - t0
    best: tuple[float, list[TableScore], list[float]] | None = None
    for reading in truths:
        tables, precisions = score_reading(reading, preds, chars)
        key = sum(_f1(s.adj_precision, s.adj_recall) + s.teds + s.recall_chars for s in tables) / max(
            len(tables), 1
        )
        if best is None or key > best[0]:
            best = (key, tables, precisions)
    assert best is not None
    return DocResult(name, pages, cpu, best[1], best[2], error)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summary(docs: Sequence[DocResult], kind: str | None = None) -> dict[str, float | int]:
    """The set's figures (``kind``: only true tables of that kind; region precision over all predictions)."""
    tables = [t for d in docs for t in d.tables if kind is None or t.kind == kind]
    precisions = [p for d in docs for p in d.pred_precisions]
    reg_p, reg_r = _mean(precisions), _mean([t.recall_chars for t in tables])
    adj_p, adj_r = _mean([t.adj_precision for t in tables]), _mean([t.adj_recall for t in tables])
    pages = sum(d.pages for d in docs)
    return {
        "docs": len(docs),
        "tables": len(tables),
        "predicted": len(precisions),
        "complete": sum(1 for t in tables if t.recall_chars >= 0.999),
        "pure": sum(1 for p in precisions if p >= 0.999),
        "region_p": reg_p,
        "region_r": reg_r,
        "region_f1": _f1(reg_p, reg_r),
        "adj_p": adj_p,
        "adj_r": adj_r,
        "adj_f1": _f1(adj_p, adj_r),
        "teds": _mean([t.teds for t in tables]),
        "cpu_s_per_page": sum(d.cpu_s for d in docs) / pages if pages else 0.0,
        "errors": sum(1 for d in docs if d.error),
    }


def run(tool: Tool, docs: dict[str, Path], name: str = "") -> list[DocResult]:
    out = []
    for doc, pdf in docs.items():
        d = score_document(doc, pdf, tool)
        out.append(d)
        s = summary([d])
        err = f" ERROR {d.error}" if d.error else ""
        print(
            f"  {name} {doc}: regions F1 {s['region_f1']:.3f} adjacency F1 {s['adj_f1']:.3f} "
            f"TEDS {s['teds']:.3f} ({s['tables']} tables, {s['predicted']} found){err}",
            file=sys.stderr,
        )
    return out


def table_markdown(rows: dict[str, dict[str, float | int]]) -> str:
    lines = [
        "| tool (ICDAR 2013) | tables | found | regions P / R / **F1** (complete, pure) "
        "| adjacency P / R / **F1** | **TEDS** | CPU s/page |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['tables']} | {r['predicted']} | {r['region_p']:.3f} / {r['region_r']:.3f} / "
            f"**{r['region_f1']:.3f}** ({r['complete']}, {r['pure']}) | {r['adj_p']:.3f} / {r['adj_r']:.3f} / "
            f"**{r['adj_f1']:.3f}** | **{r['teds']:.3f}** | {r['cpu_s_per_page']:.3f} |"
        )
    return "\n".join(lines)


def per_table_markdown(docs: Sequence[DocResult]) -> str:
    lines = [
        "| table | kind | region recall | adjacency P / R | TEDS | matched |",
        "|---|---|---|---|---|---|",
    ]
    for d in docs:
        for t in d.tables:
            lines.append(
                f"| {t.doc} #{t.tid} | {t.kind} | {t.recall_chars:.2f} | {t.adj_precision:.2f} / "
                f"{t.adj_recall:.2f} | {t.teds:.2f} | {t.matched} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="the icdar2013 folder")
    ap.add_argument("--tools", default="auto")
    ap.add_argument("--docs", default="", help="comma-separated subset of the documents")
    ap.add_argument("--per-table", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="write results.json here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    docs = documents(args.data)
    if args.docs:
        wanted = {d.strip() for d in args.docs.split(",") if d.strip()}
        docs = {k: v for k, v in docs.items() if k in wanted}
    rows = {}
    for name in [t.strip() for t in args.tools.split(",") if t.strip()]:
        results = run(make_tool(name), docs, name)
        rows[name] = summary(results)
        for kind in ("ruled", "unruled"):
            rows[f"{name}, {kind} tables"] = summary(results, kind)
        if args.per_table:
            print(per_table_markdown(results))
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{name}.json").write_text(
                json.dumps(
                    [d.__dict__ | {"tables": [t.__dict__ for t in d.tables]} for d in results], indent=1
                )
            )
    print(table_markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
