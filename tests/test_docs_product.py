"""Docs match the product (issue 15, item 17): every mode in `convert --help` and `ocr-app info`, the
README's CPU-only install line, tables per engine, and one figure for the `mixed` peak everywhere."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from ocr_app.choices import engine_kind
from ocr_app.cli import main
from ocr_app.models.deepseek_ocr2.modes import MODES

ROOT = Path(__file__).parents[1]
MIXED_PEAK = "3.2 GiB peak for a dense page"


def test_convert_help_lists_every_mode():
    out = CliRunner().invoke(main, ["convert", "--help"]).output
    help_text = " ".join(out.split())  # click wraps lines
    listed = re.search(r"Resolution mode: (.+?), default:N \(N = most tiles", help_text)
    assert listed and listed.group(1).split(", ") == list(MODES)  # the registry's modes, in its order


def test_info_lists_every_mode_with_what_it_does():
    result = CliRunner().invoke(main, ["info"])
    assert result.exit_code == 0, result.output
    section = result.output.split("\nmodes\n", 1)[1]
    for mode, description in MODES.items():
        assert re.search(rf"^  {re.escape(mode)}\s+{re.escape(description[:30])}", section, re.M), mode
    assert re.search(r"^  default:N\s+default with at most N tiles \(N = 2–6\)", section, re.M)


def test_readme_cpu_install_tables_and_one_mixed_peak():
    readme = (ROOT / "README.md").read_text()
    setup = (ROOT / "scripts" / "setup-dev").read_text()
    assert "scripts/setup-dev --cpu" in readme  # torch's CPU wheels, from their own index
    assert (
        "https://download.pytorch.org/whl/cpu" in readme and "https://download.pytorch.org/whl/cpu" in setup
    )
    for engine in ("DeepSeek-OCR-2 (and a remote", "light (RapidOCR)", "text layer"):
        assert f"| {engine}" in readme
    # every user-facing statement of the mixed peak uses the same figure
    runtime = (ROOT / "docs" / "RUNTIME.md").read_text()
    for name, text in (
        ("README.md", readme),
        ("RUNTIME.md", runtime),
        ("status panel", engine_kind("deepseek").capabilities.help),
    ):
        claims = re.findall(r"[≤~]?\s*\d\.\d(?:–\d\.\d)? GiB(?: peak| for a dense page|\))", text)
        mixed_claims = [c for c in claims if "2.35" not in c]
        assert MIXED_PEAK.split(" peak")[0] in text, name
        assert all(c.strip().startswith("3.2 GiB") for c in mixed_claims), (name, mixed_claims)


def test_readme_documents_exit_code_3_and_page_statuses():
    readme = (ROOT / "README.md").read_text()
    assert "`3` every file\nconverted but some pages need a look" in readme
    for status in ("empty", "low_confidence", "repaired"):
        assert f"| `{status}` |" in readme


def test_ci_installs_what_the_readme_says_and_runs_its_test_command():
    """A new user follows the README; CI follows the same steps from nothing (a fresh cache dir too): the
    README's one set-up command (scripts/setup-dev: system packages and Python packages, pinned) and its
    one test command."""
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    setup = (ROOT / "scripts" / "setup-dev").read_text()
    install = readme.split("## Install", 1)[1].split("### DeepSeek-OCR-2 weights", 1)[0]
    assert re.search(r"```bash\nscripts/setup-dev\s", install), "the README's one set-up command"
    assert re.search(r"^scripts/setup-dev$", ci, re.M)  # CI runs exactly it
    # what it installs: the tests' system packages, then torch and every extra the tests use, pinned
    for package in ("chromium", "fonts-dkg-handwriting", "fonts-hosny-amiri"):
        assert package in setup and package in install.lower(), package
    assert '-e ".[$extras]"' in setup and 'extras="all,dev,gpu"' in setup and 'extras="all,dev"' in setup
    assert "torch==2.14.1 torchvision==0.29.1" in setup and "torch==2.14.1 torchvision==0.29.1" in install
    test_command = re.search(r"## Test\n\n```bash\n(python -m pytest -q[^#\n]*?)\s+#", readme).group(1)
    assert test_command.startswith("python -m pytest -q")
    assert ci.rstrip().splitlines()[-1] == test_command
    assert 'export DEEPSEEK_OCR_CACHE_DIR="$(mktemp -d)"' in ci  # the tokenizer and tiny model built afresh
