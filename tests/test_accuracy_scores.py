"""NID, TEDS and MHS (bench/accuracy/scores.py) on hand-made documents whose scores are known."""

from __future__ import annotations

import pytest

from bench.accuracy import scores

TABLE = "<table><tr><th>Year</th><th>Sales</th></tr><tr><td>2023</td><td>10</td></tr></table>"
PIPE = "| Year | Sales |\n|---|---|\n| 2023 | 10 |"


def test_nid_is_one_for_identical_text_and_ignores_emphasis_and_whitespace():
    assert scores.nid("# Title\n\nSome text here.", "# Title\n\nSome   **text** here.") == 1.0


def test_nid_counts_indels_over_both_lengths():
    # "abcd" vs "abxd": one deletion + one insertion over 8 characters.
    assert scores.nid("abcd", "abxd") == pytest.approx(1 - 2 / 8)
    assert scores.nid("abcd", "") == 0.0
    assert scores.nid("", "anything") is None


def test_nid_reads_pipe_and_html_tables_alike():
    assert scores.nid(TABLE, PIPE) == 1.0


def test_teds_identical_tables_and_pipe_equals_html():
    assert scores.teds(TABLE, TABLE) == 1.0
    assert scores.teds(TABLE, PIPE) == 1.0


def test_teds_none_without_truth_table_zero_without_prediction():
    assert scores.teds("just text", TABLE) is None
    assert scores.teds(TABLE, "Year Sales 2023 10") == 0.0


def test_teds_one_wrong_cell_costs_its_text_distance():
    # Tree: body, table, 2 tr, 4 td = 8 nodes; "10" → "19" costs 1/2.
    wrong = TABLE.replace("<td>10</td>", "<td>19</td>")
    assert scores.teds(TABLE, wrong) == pytest.approx(1 - 0.5 / 8)


def test_teds_missing_row_and_span_change():
    one_row = "<table><tr><td>Year</td><td>Sales</td></tr></table>"
    # Two tds and a tr deleted from 8 nodes.
    assert scores.teds(TABLE, one_row) == pytest.approx(1 - 3 / 8)
    merged = "<table><tr><td colspan='2'>Year Sales</td></tr><tr><td>2023</td><td>10</td></tr></table>"
    # One cell renamed (span differs: cost 1) and one deleted: 2 of 8.
    assert scores.teds(TABLE, merged) == pytest.approx(1 - 2 / 8)


def test_teds_scores_all_tables_of_a_document_together():
    two = TABLE + "\n\ntext\n\n" + TABLE
    assert scores.teds(two, two) == 1.0
    # One of two tables missing: the body keeps 8 of 15 nodes.
    assert scores.teds(two, TABLE) == pytest.approx(1 - 7 / 15)


def test_mhs_identical_and_missing_headings():
    doc = "# A\n\nalpha\n\n## B\n\nbeta"
    assert scores.mhs(doc, doc) == 1.0
    assert scores.mhs("no heading\n\nat all", doc) is None
    assert scores.mhs(doc, "A\n\nalpha\n\nB\n\nbeta") == 0.0


def test_mhs_ignores_levels_but_mhs_levels_does_not():
    truth = "# A\n\nalpha\n\n## B\n\nbeta"
    flat = "# A\n\nalpha\n\n# B\n\nbeta"
    assert scores.mhs(truth, flat) == 1.0
    assert scores.mhs_levels(truth, flat) < 1.0
    assert scores.mhs_levels(truth, truth) == 1.0


def test_mhs_heading_written_as_text_costs_nodes():
    truth = "# A\n\nalpha\n\n# B\n\nbeta"  # document, A, alpha, B, beta = 5 nodes
    pred = "# A\n\nalpha\n\nB\n\nbeta"  # document, A, "alpha B beta" = 3 nodes
    got = scores.mhs(truth, pred)
    assert 0.0 < got < 0.8
    # A paragraph promoted to a heading costs as well.
    promoted = "# A\n\n# alpha\n\n# B\n\nbeta"
    assert scores.mhs(truth, promoted) < 1.0


def test_set_score_means_skip_undefined_metrics():
    s = scores.SetScore()
    s.docs.append(scores.score_document("t", TABLE, PIPE, pages=1, cpu_s=0.2))
    s.docs.append(scores.score_document("h", "# H\n\ntext", "text", pages=3, cpu_s=0.6))
    summary = s.summary()
    assert summary["teds"] == 1.0 and summary["teds_docs"] == 1
    assert summary["mhs"] == 0.0 and summary["mhs_docs"] == 1
    assert summary["cpu_s_per_page"] == pytest.approx(0.2)
    assert summary["mean"] == pytest.approx((summary["nid"] + 1.0 + 0.0) / 3)


def test_scorer_on_a_generated_set_prints_per_document_and_mean_scores(tmp_path, capsys):
    """The whole scorer: a generated set (a 22-row parameter table, a worksheet with a colon lead-in)
    read by the text layer, scored against its exact ground truth."""
    from bench.accuracy import generate_set, score

    names = generate_set.write_set(tmp_path, [3, 1])
    assert names == ["parameters-0003", "worksheet-0001"]
    truth = (tmp_path / "gt" / "parameters-0003.md").read_text()
    assert truth.count("<tr>") == 23 and truth.startswith("## ")
    assert (
        score.main(
            ["--set", str(tmp_path), "--tools", "textlayer", "--per-doc", "--out", str(tmp_path / "o")]
        )
        == 0
    )
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| textlayer |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "2"  # documents
    assert float(cells[3].split()[0]) >= 0.8 and float(cells[4].split()[0]) >= 0.9, row  # TEDS, MHS
    assert "| parameters-0003 |" in out and "| worksheet-0001 |" in out
    assert (tmp_path / "o" / "textlayer" / "worksheet-0001.md").exists()
