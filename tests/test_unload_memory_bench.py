"""``bench/accuracy/unload_memory.py`` runs as its docstring says (so the bench cannot rot): it reads the
pages with both CPU engines, unloads them, and writes the three figures it prints; the engines' model
sessions are gone at the end."""

from __future__ import annotations

import json
import shutil

from bench.accuracy import unload_memory
from ocr_app.structure import regions, table_model


def test_the_bench_reads_unloads_and_reports(tmp_path, capsys):
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for name in sorted(p.name for p in unload_memory.DATA.glob("*.pdf"))[:2]:
        shutil.copy(unload_memory.DATA / name, pdfs / name)
    out = tmp_path / "memory.json"
    assert unload_memory.main(["--pdfs", str(pdfs), "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert set(figures) == {"loaded_mb", "read_mb", "unloaded_mb"}
    assert all(v > 0 for v in figures.values())
    printed = capsys.readouterr().out
    assert f"after 2 born-digital pages and a scan {figures['read_mb']:.0f} MB" in printed
    assert regions.default_model(1)._session is None and table_model.default_model()._structurer is None


def test_a_folder_without_pdfs_is_a_clear_error(tmp_path, capsys):
    assert unload_memory.main(["--pdfs", str(tmp_path)]) == 2
    assert f"no PDFs in {tmp_path}" in capsys.readouterr().err
