"""False tables (issue 30 item 3): tables ocr-app emits where the ground truth has none, and which
finder made each one.

Usage (from the repository root):

    python -m bench.accuracy.false_tables --data ../shared/datasets [--sets icdar2013,docling,p4llm,built]

- **icdar2013**: tables emitted on pages whose ``*-reg.xml`` (every reading) holds no table region.
- **docling**, **p4llm**: per document, emitted tables beyond the ground truth's count (``gt/*.md``).
- **built**: PyMuPDF pages without a table (``false_table_pages.NO_TABLE``: two-column prose,
  reference lists, slide panels, columns of short lines, a sidebar, a Courier newsletter, a key-facts
  box); the pages with one (ruled, unruled, a contents page) are counted too, as a
  check that real tables still come out.

Each emitted table is traced to its finder by watching the engine's finders while it runs (ruled grid
from ``find_tables``, the layout model's region read by the structure model or by the word rules,
word-position grids of the tables pass, pictures read by OCR) and matching boxes on the same page.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.accuracy import false_table_pages, icdar
from bench.accuracy.structure import split_tables

logger = logging.getLogger(__name__)

SETS = ("icdar2013", "docling", "p4llm", "built")
Box = tuple[float, float, float, float]


@dataclass
class Trace:
    """The boxes each finder returned, per page being read."""

    page: int = -1
    found: dict[int, list[tuple[Box, str]]] = field(default_factory=dict)
    context: list[str] = field(default_factory=list)

    def add(self, box: Box, source: str) -> None:
        self.found.setdefault(self.page, []).append((tuple(box), source))

    def source(self, page: int, box: Box) -> str:
        best, name = 0.0, "unknown"
        for b, src in self.found.get(page, []):
            v = _iou(b, box)
            if v >= best and v > 0:  # the later finder wins a tie (the rules' reading over the model's)
                best, name = v, src
        return name


def _iou(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def _patch(obj: object, name: str, wrap: Callable, undo: list) -> None:
    orig = getattr(obj, name)
    undo.append((obj, name, orig))
    setattr(obj, name, wrap(orig))


@contextmanager
def traced() -> Iterator[Trace]:
    """Watch the text-layer engine's table finders (module attributes, swapped back on exit)."""
    from ocr_app.engines import raster_tables, textlayer
    from ocr_app.structure import learned_tables
    from ocr_app.structure.passes import tables

    trace, undo = Trace(), []

    def predict(orig):
        def run(self, request):
            trace.page = request.page.index
            return orig(self, request)

        return run

    def ruled(orig):
        def run(*a, **k):
            found, forms, rest = orig(*a, **k)
            for t in found:
                trace.add(t[0], "ruled grid (find_tables)")
            return found, forms, rest

        return run

    def read_table(orig):
        def run(*a, **k):
            t = orig(*a, **k)
            if t is not None:
                where = trace.context[-1] if trace.context else "ruled grid, structure model"
                trace.add(t.box, where)
                run.last = id(t)
            return t

        run.last = None
        return run

    def read_part(orig):
        def run(*a, **k):
            trace.context.append("layout region, structure model")
            try:
                t = orig(*a, **k)
            finally:
                trace.context.pop()
            if t is not None and id(t) != learned_tables.read_table.last:
                trace.add(t.box, "layout region, word rules")
            return t

        return run

    def grids(label):
        def wrap(orig):
            def run(*a, **k):
                found, rest = orig(*a, **k)
                for t in found:
                    if not getattr(t, "contents", False):
                        trace.add(t.box, label)
                    else:
                        trace.add(t.box, "contents rows (dot leaders)")
                return found, rest

            return run

        return wrap

    def pictures(orig):
        def run(*a, **k):
            more, loose = orig(*a, **k)
            for t in more:
                trace.add(t[0], "picture read by OCR")
            return more, loose

        return run

    _patch(textlayer.TextLayerEngine, "_predict", predict, undo)
    _patch(textlayer, "ruled_tables", ruled, undo)
    _patch(learned_tables, "read_table", read_table, undo)
    _patch(learned_tables, "_read_part", read_part, undo)
    _patch(tables, "tables_beside_a_gutter", grids("word grid beside a gutter (tables pass)"), undo)
    _patch(tables, "detect_tables", grids("word grid (tables pass)"), undo)
    _patch(raster_tables, "read", pictures, undo)
    try:
        yield trace
    finally:
        for obj, name, orig in reversed(undo):
            setattr(obj, name, orig)


def converter() -> Callable[[Path], list[tuple[int, Box, str]]]:
    """ocr-app ``--engine auto``: the document's table blocks (page, box in page pixels)."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(engine="auto")
    conv = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine="auto", formats=frozenset({"md"}))

    def run(pdf: Path) -> list[tuple[int, Box, str]]:
        with tempfile.TemporaryDirectory() as tmp:
            (doc,) = conv.convert([pdf], tmp, options)
        if doc.error:
            raise RuntimeError(doc.error)
        return [
            (p.index, b.box, b.text)
            for p in doc.pages
            for b in p.blocks
            if b.label == "table" and b.box is not None
        ]

    return run


@dataclass
class Result:
    units: int = 0  # pages or documents looked at
    false: int = 0  # tables emitted beyond the ground truth
    units_with_false: int = 0
    sources: Counter = field(default_factory=Counter)
    where: list[str] = field(default_factory=list)


def icdar_set(data: Path, run, trace: Trace) -> Result:
    import pymupdf

    res = Result()
    for name, pdf in icdar.documents(data).items():
        with pymupdf.open(pdf) as doc:
            pages = doc.page_count
        with_table: set[int] = set()
        for _, reg in icdar.readings(pdf.parent, name):
            for region in ET.parse(reg).getroot().iter("region"):
                with_table.add(int(region.get("page", "1")) - 1)
        trace.found.clear()
        emitted = run(pdf)
        res.units += pages - len(with_table)
        per_page = Counter(p for p, _, _ in emitted if p not in with_table)
        for p, box, _ in emitted:
            if p not in with_table:
                res.sources[trace.source(p, box)] += 1
                res.where.append(f"{name} p{p + 1}: {trace.source(p, box)}")
        res.false += sum(per_page.values())
        res.units_with_false += len(per_page)
        print(f"  icdar2013 {name}: {sum(per_page.values())} false", file=sys.stderr)
    return res


def markdown_set(folder: Path, run, trace: Trace) -> Result:
    res = Result()
    for pdf in sorted((folder / "pdf").glob("*.pdf")):
        gt = folder / "gt" / f"{pdf.stem}.md"
        if not gt.exists():
            continue
        truth = len(split_tables(gt.read_text(encoding="utf-8"))[1])
        trace.found.clear()
        emitted = run(pdf)
        extra = max(len(emitted) - truth, 0)
        res.units += 1
        res.false += extra
        res.units_with_false += bool(extra)
        if extra:
            srcs = Counter(trace.source(p, box) for p, box, _ in emitted)
            res.sources.update(srcs)  # every emitted table's finder (which are the extra is not known)
            res.where.append(f"{pdf.stem}: {len(emitted)} emitted, {truth} in truth ({dict(srcs)})")
        print(f"  {folder.name} {pdf.stem}: {len(emitted)} emitted, {truth} in truth", file=sys.stderr)
    return res


def built_set(run, trace: Trace) -> tuple[Result, dict[str, int]]:
    res, real = Result(), {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, page in false_table_pages.NO_TABLE.items():
            pdf = false_table_pages.build(Path(tmp) / "page.pdf", page)
            trace.found.clear()
            emitted = run(pdf)
            res.units += 1
            res.false += len(emitted)
            res.units_with_false += bool(emitted)
            for p, box, _ in emitted:
                res.sources[trace.source(p, box)] += 1
                res.where.append(f"{name}: {trace.source(p, box)}")
        for name, page in false_table_pages.WITH_TABLE.items():
            pdf = false_table_pages.build(Path(tmp) / "page.pdf", page)
            real[name] = len(run(pdf))
    return res, real


def report(results: dict[str, Result], real: dict[str, int]) -> str:
    lines = [
        "| set | units | false tables | units with one | made by |",
        "|---|---|---|---|---|",
    ]
    for name, r in results.items():
        made = ", ".join(f"{k} {v}" for k, v in r.sources.most_common()) or "–"
        lines.append(f"| {name} | {r.units} | {r.false} | {r.units_with_false} | {made} |")
    out = "\n".join(lines)
    if real:
        out += "\n\nTables on built pages that hold one (1 expected each): " + ", ".join(
            f"{k} {v}" for k, v in real.items()
        )
    details = [w for r in results.values() for w in r.where]
    if details:
        out += "\n\n" + "\n".join(f"- {w}" for w in details)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/datasets"))
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        raise SystemExit(f"unknown set {', '.join(unknown)} (choose from {', '.join(SETS)})")
    results: dict[str, Result] = {}
    real: dict[str, int] = {}
    with traced() as trace:
        run = converter()
        if "built" in sets:
            results["built pages (no table)"], real = built_set(run, trace)
        if "icdar2013" in sets:
            results["icdar2013 (pages without a table)"] = icdar_set(args.data / "icdar2013", run, trace)
        for name in ("docling", "p4llm"):
            if name in sets:
                results[f"{name} (documents)"] = markdown_set(args.data / name, run, trace)
    print(report(results, real))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
