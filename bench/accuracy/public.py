"""The public tuning sets in one command: ICDAR 2013 per table, docling's and pymupdf4llm's test PDFs.

Usage (from the repository root; ``DATA`` is ``../shared/datasets`` on the development machine):

    python -m bench.accuracy.public --data DATA [--tools auto] [--sets icdar2013,docling,p4llm]
        [--subset] [--report docs/ACCURACY.md] [--marker public]

- **icdar2013**: ``icdar.py`` (table regions P/R/F1 on characters, cell adjacency F1 as the competition
  did, TEDS per table), split by ruled and unruled tables.
- **docling**, **p4llm** (``pdf/NAME.pdf`` + ``gt/NAME.md``): NID / TEDS / MHS (``scores.py``) and the
  peers measures (``structure.py``): normalised edit distance, headings found and their precision,
  ground-truth cells inside tables, paragraph breaks (precision / recall). Documents whose ground truth
  has no PDF are left out.

``--subset`` runs a few small documents of each set (what the CI test runs). The report section holds
the commit the figures were measured at.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import time
from pathlib import Path

from bench.accuracy import icdar
from bench.accuracy.peers import _pages, write_report
from bench.accuracy.peers import make_tool as markdown_tool
from bench.accuracy.scores import SetScore, score_document
from bench.accuracy.structure import StructureScore

logger = logging.getLogger(__name__)

SETS = ("icdar2013", "docling", "p4llm")
# Small documents each set's CI subset runs (a few seconds each).
SUBSET = {
    "icdar2013": ("us-012", "us-032", "eu-018"),
    "docling": ("2305.03393v1-pg9", "table_mislabeled_as_picture"),
    "p4llm": ("test_sce_150_1", "test_sce_150_3"),
}


def markdown_set(folder: Path, tool_name: str, only: tuple[str, ...] = ()) -> dict[str, object]:
    """NID/TEDS/MHS and the structure measures of one tool over a ``pdf/`` + ``gt/`` set."""
    tool = markdown_tool(tool_name)
    scores, structure = SetScore(), StructureScore()
    for pdf in sorted((folder / "pdf").glob("*.pdf")):
        gt = folder / "gt" / f"{pdf.stem}.md"
        if not gt.exists() or (only and pdf.stem not in only):
            continue
        truth = gt.read_text(encoding="utf-8")
        pages = _pages(pdf)
        t0, w0 = time.process_time(), time.perf_counter()
        try:
            md, error = tool(pdf), ""
        except Exception as exc:  # one document's failure is a score, not a crash
            md, error = "", f"{type(exc).__name__}: {exc}"
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        d = score_document(pdf.stem, truth, md, pages=pages, cpu_s=cpu)
        d.error = error
        scores.docs.append(d)
        structure.add(truth, md, pages, wall)
        print(
            f"  {folder.name} {tool_name} {pdf.stem}: NID {d.nid} TEDS {d.teds} MHS {d.mhs}", file=sys.stderr
        )
    return {**scores.summary(), **structure.row()}


def _f(v: object) -> str:
    return "–" if v is None else f"{v:.3f}"


def _pct(v: object) -> str:
    return "–" if v is None or v != v else f"{v:.0%}"


def markdown_table(rows: dict[str, dict[str, object]]) -> str:
    lines = [
        "| set, tool | docs | NID | TEDS (docs) | MHS (docs) | **mean** | NED | headings found | heading "
        "precision | cells inside tables | paragraph breaks P / R | CPU s/page |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['docs']} | {_f(r['nid'])} | {_f(r['teds'])} ({r['teds_docs']}) | {_f(r['mhs'])} "
            f"({r['mhs_docs']}) | **{_f(r['mean'])}** | {r['ned']:.3f} | {_pct(r['heading_recall'])} "
            f"({r['headings_found']}/{r['headings_truth']}) | {_pct(r['heading_precision'])} (of "
            f"{r['headings_out']}) | {_pct(r['cells_in_tables'])} | {_pct(r['break_precision'])} / "
            f"{_pct(r['break_recall'])} | {_f(r['cpu_s_per_page'])} |"
        )
    return "\n".join(lines)


def commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        )
        return head + ("+changes" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(data: Path, tools: list[str], sets: list[str], subset: bool) -> tuple[str, dict[str, dict]]:
    """Every set's table (Markdown) and the raw rows, keyed ``set/tool``."""
    parts, raw = [], {}
    if "icdar2013" in sets:
        docs = icdar.documents(data / "icdar2013")
        if subset:
            docs = {k: v for k, v in docs.items() if k in SUBSET["icdar2013"]}
        rows = {}
        for tool in tools:
            results = icdar.run(icdar.make_tool(tool), docs, tool)
            rows[tool] = icdar.summary(results)
            for kind in ("ruled", "unruled"):
                rows[f"{tool}, {kind} tables"] = icdar.summary(results, kind)
        raw.update({f"icdar2013/{k}": v for k, v in rows.items()})
        parts.append(icdar.table_markdown(rows))
    rows = {}
    for name in ("docling", "p4llm"):
        if name not in sets:
            continue
        for tool in tools:
            rows[f"{name}, {tool}"] = markdown_set(data / name, tool, SUBSET[name] if subset else ())
    if rows:
        raw.update({k.replace(", ", "/"): v for k, v in rows.items()})
        parts.append(markdown_table(rows))
    return "\n\n".join(parts), raw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("../shared/datasets"))
    ap.add_argument("--tools", default="auto")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--subset", action="store_true", help="a few small documents of each set (the CI test's)")
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--marker", default="public")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = sorted(set(sets) - set(SETS))
    if unknown:
        raise SystemExit(f"unknown set {', '.join(unknown)} (choose from {', '.join(SETS)})")
    measured = commit()  # the code measured is the code at the start
    table, _ = run(args.data, tools, sets, args.subset)
    print(table)
    if args.report:
        command = f"python -m bench.accuracy.public --data DATA --tools {args.tools} --sets {args.sets}"
        if args.subset:
            command += " --subset"
        write_report(args.report, f"ocr-app at commit {measured}\n\n{table}", command, args.marker)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
