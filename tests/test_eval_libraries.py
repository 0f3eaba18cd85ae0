"""bench/eval_libraries.py runs (quick mode) and backs the module docstrings that cite it: our sniffer
and table repair are right on every case it checks, and the disk store keeps its bound."""

from __future__ import annotations

from bench.eval_libraries import main


def test_quick_run_backs_the_docstrings(capsys):
    report = main(["--quick"])
    assert report["sniffing"]["ocr_app"]["wrong"] == {}
    ours = report["table_repair"]["ocr_app"]
    assert ours["truncated_closed"] and ours["complete_unchanged"]
    store = report["disk_cache"]["ocr_app"]
    # 60 entries of ~20 kB written into a 40-entry bound: eviction ran, the bound held, the recent stayed
    assert 0 < store["bytes_on_disk"] <= 40 * 20_000
    assert 0 < store["hits"] < 60
    assert '"sniffing"' in capsys.readouterr().out
