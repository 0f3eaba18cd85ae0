"""Peers mode: ocr-app (auto, light) beside pymupdf4llm and pdftotext on docling's public test PDFs.

Usage (from the repository root; get the data once with ``bench/accuracy/fetch_docling.sh DIR``):

    python -m bench.accuracy.peers --data DIR [--tools auto,light,pymupdf4llm,pdftotext] [--report docs/ACCURACY.md]

Why docling's set: PDFs and Markdown ground truth that nobody on this project wrote (MIT licence), with
real headings, lists, tables, running headers, right-to-left text and scanned pages turned by 90, 180
and 270 degrees. Every tool's Markdown is scored the same way (``structure.py``). A tool that is not
installed is reported as not run, never silently dropped.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.accuracy.structure import StructureScore, ned

logger = logging.getLogger(__name__)

# The 11 born-digital documents of docling's tests/data/pdf that have a Markdown ground truth and whose
# PDF is small enough to be in every clone (the three arXiv papers are stored out of line upstream).
DOCS = (
    "2305.03393v1-pg9",
    "amt_handbook_sample",
    "code_and_formula",
    "multi_page",
    "normal_4pages",
    "picture_classification",
    "redp5110_sampled",
    "right_to_left_01",
    "right_to_left_02",
    "right_to_left_03",
    "table_mislabeled_as_picture",
)
RTL = ("right_to_left_01", "right_to_left_02", "right_to_left_03")
# Scanned pages (no text layer) of one text line, stored upright and rotated; one ground truth.
ROTATED = {
    "0": "ocr_test",
    "90": "ocr_test_rotated_90",
    "180": "ocr_test_rotated_180",
    "270": "ocr_test_rotated_270",
}
TOOLS = ("auto", "light", "pymupdf4llm", "pdftotext")

Tool = Callable[[Path], str]


def docs_paths(data: Path) -> tuple[dict[str, tuple[Path, Path]], dict[str, tuple[Path, Path]]]:
    """``name -> (pdf, ground-truth md)`` for the born-digital documents and for the rotated scans."""
    base = data / "tests" / "data"
    pdf_dir, gt_dir = base / "pdf" / "sources", base / "pdf" / "groundtruth"
    docs = {n: (pdf_dir / f"{n}.pdf", gt_dir / f"{n}.md") for n in DOCS}
    ocr_gt = base / "ocr" / "groundtruth" / "rapidocr" / "full_page" / "ocr_test.rapidocr.full_page.md"
    rotated = {angle: (base / "ocr" / "sources" / f"{n}.pdf", ocr_gt) for angle, n in ROTATED.items()}
    missing = [str(p) for pair in [*docs.values(), *rotated.values()] for p in pair if not p.exists()]
    if missing:
        raise SystemExit(
            f"{len(missing)} files of docling's test set are missing under {data} (first: {missing[0]}); "
            "get them with bench/accuracy/fetch_docling.sh"
        )
    return docs, rotated


def _ocr_app_tool(engine: str) -> Tool:
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.render.markdown import tables_kept_whole
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(engine=engine)
    converter = Converter(build_engines(settings), settings)
    options = ConvertOptions.from_settings(settings, engine=engine, formats=frozenset({"md"}))

    def run(pdf: Path) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            (doc,) = converter.convert([pdf], tmp, options)
            if doc.error:
                raise RuntimeError(doc.error)
            # As the Markdown file reads (a table printed across a page break is one table there),
            # without its page markers.
            return "\n\n".join(tables_kept_whole([p.markdown for p in doc.pages]))

    return run


def _pymupdf4llm_tool() -> Tool:
    import pymupdf4llm

    def run(pdf: Path) -> str:
        return pymupdf4llm.to_markdown(str(pdf), show_progress=False)

    return run


def _pdftotext_tool() -> Tool:
    exe = shutil.which("pdftotext")
    if exe is None:
        raise RuntimeError("pdftotext is not installed (apt-get install poppler-utils)")

    def run(pdf: Path) -> str:
        return subprocess.run(
            [exe, "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
        ).stdout

    return run


def make_tool(name: str) -> Tool:
    if name in ("auto", "light", "textlayer"):
        return _ocr_app_tool(name)
    if name == "pymupdf4llm":
        return _pymupdf4llm_tool()
    if name == "pdftotext":
        return _pdftotext_tool()
    raise SystemExit(f"unknown tool {name!r} (choose from {', '.join(TOOLS)})")


def _pages(pdf: Path) -> int:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return doc.page_count


def run_tool(
    tool: Tool,
    docs: dict[str, tuple[Path, Path]],
    rotated: dict[str, tuple[Path, Path]],
    dump: Path | None,
    name: str,
) -> dict[str, object]:
    score = StructureScore()
    rtl: list[float] = []
    for doc, (pdf, gt) in docs.items():
        truth = gt.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        md = tool(pdf)
        seconds = time.perf_counter() - t0
        score.add(truth, md, _pages(pdf), seconds)
        if doc in RTL:
            rtl.append(score.neds[-1])
        if dump:
            (dump / name).mkdir(parents=True, exist_ok=True)
            (dump / name / f"{doc}.md").write_text(md, encoding="utf-8")
        print(f"  {name} {doc}: NED {score.neds[-1]:.3f} in {seconds:.1f} s", file=sys.stderr)
    row: dict[str, object] = score.row()
    row["rtl_ned"] = sum(rtl) / len(rtl) if rtl else float("nan")
    for angle, (pdf, gt) in rotated.items():
        md = tool(pdf)
        row[f"rotated_{angle}_ned"] = ned(gt.read_text(encoding="utf-8"), md)
        if dump:
            (dump / name / f"{pdf.stem}.md").write_text(md, encoding="utf-8")
    return row


def rescore(
    out: Path, tool: str, docs: dict[str, tuple[Path, Path]], rotated: dict[str, tuple[Path, Path]]
) -> dict[str, object]:
    """Score the Markdown a previous run kept under ``out/tool`` (after a change to the measures);
    seconds come from that run's results.json."""
    import json

    def saved(_pdf: Path, name: str) -> str:
        return (out / tool / f"{name}.md").read_text(encoding="utf-8")

    cache = {pdf: saved(pdf, name) for name, (pdf, _) in docs.items()}
    cache.update({pdf: saved(pdf, pdf.stem) for pdf, _ in rotated.values()})
    row = run_tool(lambda pdf: cache[pdf], docs, rotated, None, tool)
    results = out / "results.json"
    if results.exists():
        before = json.loads(results.read_text()).get("rows", {}).get(tool, {})
        row["s_per_page"] = before.get("s_per_page", float("nan"))
    return row


def _pct(v: float) -> str:
    return "–" if math.isnan(v) else f"{v:.0%}"


def table_markdown(rows: dict[str, dict[str, object]]) -> str:
    names = list(rows)
    lines = ["| measure (docling set) | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]

    def add(label: str, fmt: Callable[[dict[str, object]], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(fmt(rows[n]) for n in names) + " |")

    add("normalized edit distance (lower better)", lambda r: f"{r['ned']:.3f}")
    add(
        "headings found",
        lambda r: f"{_pct(r['heading_recall'])} ({r['headings_found']}/{r['headings_truth']})",
    )
    add("heading precision", lambda r: f"{_pct(r['heading_precision'])} (of {r['headings_out']})")
    add("table rows out / ground truth", lambda r: f"{r['table_rows_out']} / {r['table_rows_truth']}")
    add("ground-truth cells inside tables", lambda r: _pct(r["cells_in_tables"]))
    add("list items found", lambda r: f"{_pct(r['list_recall'])} ({r['list_found']}/{r['list_truth']})")
    add("words left hyphenated at line ends", lambda r: str(r["hyphenated"]))
    add("page rotated 90° (NED)", lambda r: f"{r['rotated_90_ned']:.3f}")
    add(
        "pages rotated 180° / 270° (NED)",
        lambda r: f"{r['rotated_180_ned']:.3f} / {r['rotated_270_ned']:.3f}",
    )
    add("upright scan (NED)", lambda r: f"{r['rotated_0_ned']:.3f}")
    add("Arabic / Persian born-digital (NED)", lambda r: f"{r['rtl_ned']:.3f}")
    add("s/page in-process", lambda r: f"{r['s_per_page']:.2f}")
    return "\n".join(lines)


def write_report(path: Path, table: str, command: str, marker: str) -> None:
    """Replace the section between ``<!-- {marker}:begin -->`` and ``:end`` (appended when absent)."""
    begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    body = f"{begin}\nDate: {when} · machine: {machine} · command: `{command}`\n\n{table}\n{end}"
    text = path.read_text() if path.exists() else ""
    if begin in text and end in text:
        text = text[: text.index(begin)] + body + text[text.index(end) + len(end) :]
    else:
        text = (text.rstrip() + "\n\n" if text else "") + body + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("OCR_APP_DOCLING_DATA", "docling-data")))
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--docs", default="", help="comma-separated subset of the documents (default: all)")
    ap.add_argument("--out", type=Path, default=None, help="keep every tool's Markdown and results.json here")
    ap.add_argument("--report", type=Path, default=None, help="write the table into this file")
    ap.add_argument("--marker", default="peers", help="report section marker (peers, peers-before, ...)")
    ap.add_argument("--rescore", type=Path, default=None, help="score the Markdown kept by an earlier --out")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)

    docs, rotated = docs_paths(args.data)
    if args.docs:
        wanted = {d.strip() for d in args.docs.split(",") if d.strip()}
        docs = {k: v for k, v in docs.items() if k in wanted}
    rows: dict[str, dict[str, object]] = {}
    skipped: dict[str, str] = {}
    names = [t.strip() for t in args.tools.split(",") if t.strip()]
    # ocr-app runs before the peers: importing pymupdf4llm loads pymupdf.layout, which replaces
    # PyMuPDF's table finder for the rest of the process (ocr-app itself imports PyMuPDF without it).
    names.sort(key=lambda n: n not in ("auto", "light"))
    for name in names:
        if args.rescore:
            rows[name] = rescore(args.rescore, name, docs, rotated)
            continue
        try:
            tool = make_tool(name)
        except (ImportError, RuntimeError) as exc:
            skipped[name] = str(exc)
            print(f"{name}: not run ({exc})", file=sys.stderr)
            continue
        rows[name] = run_tool(tool, docs, rotated, args.out, name)
    table = table_markdown(rows) if rows else "(no tool ran)"
    if skipped:
        table += "\n\n" + "\n".join(f"- {n}: not run ({why})" for n, why in skipped.items())
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({"rows": rows, "skipped": skipped}, indent=1))
    if args.report:
        command = f"python -m bench.accuracy.peers --data DIR --tools {args.tools}"
        write_report(args.report, table, command, args.marker)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
