"""The CPU speed bench of issue 30 (``bench/accuracy/cpu_pages.py``) runs and counts what it says: a
small real run so the bench cannot rot. No timing is asserted (timings are the bench's, not a test's)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.accuracy import cpu_pages

DATA = Path(__file__).parent / "data" / "public" / "docling" / "pdf"


def test_the_bench_converts_every_page_and_splits_them_by_what_came_out(tmp_path: Path, capsys):
    out = tmp_path / "speed.json"
    assert cpu_pages.main([str(DATA), "--repeat", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["documents"] == 2 and result["pages"] == 2  # two one-page documents
    # 2305.03393v1-pg9 holds a ruled table the text layer reads as one
    assert result["pages_with_table"] + result["pages_without_table"] == 2
    assert result["pages_with_table"] >= 1
    spread = result["cpu_s_per_page"]
    assert len(spread["runs"]) == 2 and 0 < spread["min"] <= spread["median"] <= spread["max"]
    assert "2 documents, 2 pages, auto" in capsys.readouterr().out


def test_no_pdf_is_a_clear_error(tmp_path: Path, capsys):
    assert cpu_pages.main([str(tmp_path)]) == 2
    assert "no PDF found" in capsys.readouterr().err
