"""The peers benchmark (bench/accuracy/peers.py): its structure measures, and one run end to end on a
docling-shaped folder of PDFs generated here (the real docling data is fetched by a script, not CI)."""

from __future__ import annotations

import pymupdf
import pytest

from bench.accuracy import peers, structure

TRUTH = """## Introduction

The docu­ment starts here.

- first item
- second item

| a | b |
| - | - |
| 1 | 2 |
| 3 | 4 |
"""


def test_structure_measures_count_what_they_say():
    out = (
        "## Introduction\n\nThe docu- ment starts here.\n\n## Not a heading\n\n- first item\n\n"
        "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"
    )
    score = structure.StructureScore()
    score.add(TRUTH.replace("\u00ad", ""), out, pages=1, seconds=0.5)
    row = score.row()
    assert (row["headings_found"], row["headings_truth"], row["headings_out"]) == (1, 1, 2)
    assert row["heading_precision"] == 0.5
    assert (row["list_found"], row["list_truth"]) == (1, 2)
    assert (row["table_rows_out"], row["table_rows_truth"]) == (2, 3)  # the HTML table counts too
    assert row["cells_in_tables"] == 4 / 6  # a, b, 1, 2 of a, b, 1, 2, 3, 4
    assert row["hyphenated"] == 1  # "docu- ment"
    assert row["s_per_page"] == 0.5
    assert structure.ned(TRUTH, TRUTH) == 0.0 and structure.ned(TRUTH, "") == 1.0


def _docling_tree(root):
    """The docling layout with tiny generated documents (born-digital and one scanned line)."""
    base = root / "tests" / "data"
    (base / "pdf" / "sources").mkdir(parents=True)
    (base / "pdf" / "groundtruth").mkdir(parents=True)
    (base / "ocr" / "sources").mkdir(parents=True)
    gt_dir = base / "ocr" / "groundtruth" / "rapidocr" / "full_page"
    gt_dir.mkdir(parents=True)
    for name in peers.DOCS:
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_text((72, 80), "Heading Text", fontsize=20, fontname="hebo")
        page.insert_text((72, 120), f"Body of {name} in plain words.", fontsize=11)
        doc.save(base / "pdf" / "sources" / f"{name}.pdf")
        (base / "pdf" / "groundtruth" / f"{name}.md").write_text(
            f"## Heading Text\n\nBody of {name} in plain words.\n"
        )
    for angle, name in peers.ROTATED.items():
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_text((72, 80), "One scanned line", fontsize=14)
        page.set_rotation(int(angle))
        doc.save(base / "ocr" / "sources" / f"{name}.pdf")
    (gt_dir / "ocr_test.rapidocr.full_page.md").write_text("One scanned line\n")
    return root


def test_paragraph_breaks_count_hits_false_breaks_and_misses():
    truth = "# Title\n\nThe first paragraph ends here.\n\nThe second one has two sentences. It ends.\n\n- an item\n"
    assert structure.paragraph_breaks(truth, truth) == (3, 0, 0)
    joined = "# Title\n\nThe first paragraph ends here. The second one has two sentences.\n\nIt ends.\n\n- an item\n"
    assert structure.paragraph_breaks(truth, joined) == (2, 1, 1)
    # A break beside words the truth does not have (a page number) is neither a hit nor a false break,
    # and a table's cells are no paragraphs.
    extra = truth.replace("# Title", "# Title\n\n12\n\n| a | b |\n| - | - |\n| 1 | 2 |")
    assert structure.paragraph_breaks(truth, extra) == (2, 0, 1)
    score = structure.StructureScore()
    score.add(truth, joined, pages=1, seconds=0.0)
    row = score.row()
    assert row["break_precision"] == row["break_recall"] == 2 / 3


def test_peers_run_writes_the_table(tmp_path, capsys):
    data = _docling_tree(tmp_path / "docling")
    report = tmp_path / "ACCURACY.md"
    report.write_text("# Accuracy\n\nprose\n")
    assert peers.main(["--data", str(data), "--tools", "textlayer", "--report", str(report)]) == 0
    text = report.read_text()
    assert "prose" in text and "<!-- peers:begin -->" in text
    assert "| measure (docling set) | textlayer |" in text
    assert "| headings found | 100% (11/11) |" in text
    assert "| normalized edit distance (lower better) | 0.000 |" in text
    assert "| page rotated 90° (NED) | 0.000 |" in text  # a text layer on a page turned 90°


def test_missing_data_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match=r"fetch_docling\.sh"):
        peers.main(["--data", str(tmp_path), "--tools", "textlayer"])


def test_rescore_scores_the_kept_markdown(tmp_path, capsys):
    data = _docling_tree(tmp_path / "docling")
    out = tmp_path / "out"
    assert peers.main(["--data", str(data), "--tools", "textlayer", "--out", str(out)]) == 0
    first = capsys.readouterr().out
    (out / "textlayer" / "multi_page.md").write_text("Body of multi_page in plain words.\n")  # heading lost
    assert peers.main(["--data", str(data), "--tools", "textlayer", "--rescore", str(out)]) == 0
    second = capsys.readouterr().out
    assert "| headings found | 100% (11/11) |" in first
    assert "| headings found | 91% (10/11) |" in second
