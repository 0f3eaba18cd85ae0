"""Score a folder of PDFs with ground-truth Markdown: NID, TEDS, MHS and CPU s/page per tool.

Usage (from the repository root):

    python -m bench.accuracy.score --set DIR [--tools auto,pymupdf4llm] [--out OUT] [--report docs/ACCURACY.md --marker NAME]

``DIR`` holds ``pdf/NAME.pdf`` and ``gt/NAME.md`` (what ``generate_set.py`` and ``fetch_sets.py``
write), or the two folders are given apart with ``--pdfs`` and ``--gt``. Every tool's Markdown is
scored the same way (``scores.py``). **CPU s/page** is the process CPU time (all threads) spent in the
tool's call, summed over the documents and divided by their pages; imports and the engine's set-up
happen before the first document and are not counted. A tool that is not installed is reported as
not run; a document a tool fails on scores 0 where a metric is defined and is listed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from bench.accuracy.peers import _pages, make_tool, write_report
from bench.accuracy.scores import DocScore, SetScore, score_document

logger = logging.getLogger(__name__)


def pairs(pdfs: Path, gt: Path) -> dict[str, tuple[Path, Path]]:
    """``name -> (pdf, ground truth)`` for every PDF that has a Markdown ground truth."""
    out = {p.stem: (p, gt / f"{p.stem}.md") for p in sorted(pdfs.glob("*.pdf"))}
    out = {k: v for k, v in out.items() if v[1].exists()}
    if not out:
        raise SystemExit(f"no PDF in {pdfs} has a ground truth in {gt}")
    return out


def run_tool(name: str, docs: dict[str, tuple[Path, Path]], dump: Path | None) -> SetScore:
    tool = make_tool(name)
    result = SetScore()
    for doc, (pdf, gt) in docs.items():
        truth = gt.read_text(encoding="utf-8")
        pages = _pages(pdf)
        t0 = time.process_time()
        try:
            md, error = tool(pdf), ""
        except Exception as exc:  # a tool's failure on one document is a score, not a crash
            md, error = "", f"{type(exc).__name__}: {exc}"
        cpu = time.process_time() - t0
        d = score_document(doc, truth, md, pages=pages, cpu_s=cpu)
        d.error = error
        result.docs.append(d)
        if dump:
            (dump / name).mkdir(parents=True, exist_ok=True)
            (dump / name / f"{doc}.md").write_text(md, encoding="utf-8")
        print(f"  {name} {doc}: {_fmt_doc(d)}", file=sys.stderr)
    return result


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _fmt_doc(d: DocScore) -> str:
    err = f" ERROR {d.error}" if d.error else ""
    return (
        f"NID {_f(d.nid)} TEDS {_f(d.teds)} MHS {_f(d.mhs)} CPU {d.cpu_s / max(d.pages, 1):.3f} s/page{err}"
    )


def summary_table(rows: dict[str, dict], set_name: str) -> str:
    head = f"| tool ({set_name}) | docs | NID | TEDS (docs, zeros) | MHS (docs) | mean | MHS with levels | CPU s/page |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['docs']} | {_f(r['nid'])} | {_f(r['teds'])} ({r['teds_docs']}, {r['teds_zero']}) "
            f"| {_f(r['mhs'])} ({r['mhs_docs']}) | **{_f(r['mean'])}** | {_f(r['mhs_levels'])} "
            f"| {_f(r['cpu_s_per_page'])} |"
        )
    return "\n".join(lines)


def per_document_table(results: dict[str, SetScore]) -> str:
    names = list(results)
    lines = ["| document | " + " | ".join(f"{n} NID/TEDS/MHS" for n in names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    docs = [d.name for d in next(iter(results.values())).docs]
    for k, doc in enumerate(docs):
        cells = []
        for n in names:
            d = results[n].docs[k]
            cells.append(f"{_f(d.nid)} / {_f(d.teds)} / {_f(d.mhs)}")
        lines.append(f"| {doc} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", type=Path, default=None, help="folder with pdf/ and gt/")
    ap.add_argument("--pdfs", type=Path, default=None)
    ap.add_argument("--gt", type=Path, default=None)
    ap.add_argument("--tools", default="auto,pymupdf4llm")
    ap.add_argument("--docs", default="", help="comma-separated subset of the documents")
    ap.add_argument("--out", type=Path, default=None, help="keep every tool's Markdown and results.json")
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--marker", default="scores")
    ap.add_argument("--per-doc", action="store_true", help="print the per-document table too")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    pdfs = args.pdfs or (args.set / "pdf" if args.set else None)
    gt = args.gt or (args.set / "gt" if args.set else None)
    if pdfs is None or gt is None:
        raise SystemExit("give --set DIR, or --pdfs and --gt")
    docs = pairs(pdfs, gt)
    if args.docs:
        wanted = {d.strip() for d in args.docs.split(",") if d.strip()}
        docs = {k: v for k, v in docs.items() if k in wanted}
    names = [t.strip() for t in args.tools.split(",") if t.strip()]
    # ocr-app first: importing pymupdf4llm changes PyMuPDF's table finder for the rest of the process.
    names.sort(key=lambda n: n not in ("auto", "light", "textlayer"))
    results: dict[str, SetScore] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            results[name] = run_tool(name, docs, args.out)
        except (ImportError, RuntimeError) as exc:
            skipped[name] = str(exc)
    rows = {n: r.summary() for n, r in results.items()}
    set_name = (args.set or pdfs).name
    table = summary_table(rows, set_name) if rows else "(no tool ran)"
    if skipped:
        table += "\n\n" + "\n".join(f"- {n}: not run ({why})" for n, why in skipped.items())
    print(table)
    if args.per_doc and results:
        print("\n" + per_document_table(results))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        payload = {
            "rows": rows,
            "skipped": skipped,
            "documents": {n: [d.__dict__ for d in r.docs] for n, r in results.items()},
        }
        (args.out / "results.json").write_text(json.dumps(payload, indent=1))
    if args.report:
        command = f"python -m bench.accuracy.score --set {set_name} --tools {args.tools}"
        write_report(args.report, table, command, args.marker)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
