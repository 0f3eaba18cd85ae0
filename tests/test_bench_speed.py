"""bench/accuracy/speed.py on a real PDF: dense pages become scans with their text layer, and the timing
run reports seconds per page with the edit distance to that text."""

from __future__ import annotations

import json

from bench.accuracy import speed
from tests.factories import make_pdf

DENSE = "\n".join(
    [
        "The committee met on Tuesday to review the annual budget of the library.",
        "Members agreed that the reading room needs new lamps and better chairs.",
        "The treasurer reported that donations rose by twelve percent this year.",
        "A proposal to open on Sunday afternoons was accepted without objection.",
        "The next meeting will discuss the digital archive and its storage costs.",
    ]
)


def test_export_pdf_then_time_reports_speed_and_accuracy(tmp_path, capsys):
    make_pdf(tmp_path / "minutes.pdf", ["Cover", DENSE], page_size=(595, 360))
    pages = tmp_path / "pages"
    assert speed.main(["export-pdf", str(pages), str(tmp_path), "--min-chars", "300"]) == 0
    # the cover page holds too little text: only the dense page is exported, with its text layer
    assert sorted(p.name for p in pages.iterdir()) == ["minutes-p02.jpg", "minutes-p02.txt"]
    assert "digital archive" in (pages / "minutes-p02.txt").read_text()

    out = tmp_path / "speed.json"
    assert speed.main(["time", str(pages), "--threads", "1", "--repeat", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    summary, (row,) = report["summary"], report["rows"]
    assert summary["pages"] == 1 and summary["threads"] == 1 and summary["repeat"] == 2
    assert row["cpu"] > 0 and row["wall"] > 0
    assert summary["cpu_mean"] == row["cpu"]
    assert row["ned"] < 0.1 and row["word_error"] < 0.1  # the page was read, not just timed
    assert "treasurer" in report["outputs"]["minutes-p02.jpg"]
    assert "s/page:" in capsys.readouterr().out


def test_word_error_counts_words_in_any_order():
    assert speed.word_error("alpha beta gamma", "gamma alpha beta") == 0.0
    assert speed.word_error("alpha beta gamma delta", "alpha beta") == 0.5
    assert speed.word_error("alpha beta", "alpha beta omega") == 0.5


def test_latin_share_tells_scripts_apart():
    assert speed.latin_share("Quarterly report 2024") == 1.0
    assert speed.latin_share("감염병의 예방 및 관리에 관한 법률 (COVID)") < 0.5
