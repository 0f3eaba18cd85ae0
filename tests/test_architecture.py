"""The house's rules: the import contracts in pyproject.toml (``lint-imports``: layers, no circles, who may
know a model; every import counts, lazy ones and those under ``TYPE_CHECKING`` too) hold, and they fail on
a planted violation; and no function is a god function.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1] / "ocr_app"


def lint_imports(repo: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with ``repo``'s pyproject.toml over ``repo``'s ``ocr_app`` (read, never run)."""
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[dev]'")
    env = {"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "PYTHONPATH": str(repo)}
    return subprocess.run([exe, "--no-cache"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold():
    run = lint_imports(ROOT.parent)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A copy of the package with violations planted, linted once."""
    repo = tmp_path_factory.mktemp("house")
    shutil.copytree(ROOT, repo / "ocr_app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT.parent / "pyproject.toml", repo)
    plant = {
        # an arrow back up, under TYPE_CHECKING (it never runs, but it is a dependency)
        "ocr_app/schema.py": "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ocr_app.cli import main\n",
        # the runtime reaching into the wing, lazily
        "ocr_app/runtime/oom.py": "\ndef _planted():\n    from ocr_app.models.deepseek_ocr2.modes import MODES\n",
        # a circle inside the wing: the decoding package importing the engine back
        "ocr_app/models/deepseek_ocr2/decoding/interface.py": "\nimport ocr_app.models.deepseek_ocr2.engine\n",
        # the quantiser reaching for a model's recipes, lazily
        "ocr_app/quant/stream.py": "\ndef _planted():\n    from ocr_app.models.deepseek_ocr2 import quant_recipes\n",
    }
    for rel, text in plant.items():
        with open(repo / rel, "a", encoding="utf-8") as f:
            f.write(text)
    return lint_imports(repo).stdout


# What only a model's wing may write: its name, its parts, its prompt tokens and its module paths
# ("sam" as a word or a name part, not "same" or "sample"; "SamVisionLayer" as a class name).
MODEL_WORDS = re.compile(
    r"deepseek|qwen|image_token|<image>|<\|grounding\|>|\bsam(?![a-z])|_sam(?![a-z])"
    r"|vision_tower|language_model|vision_encoder|self_attn|shared_experts|layernorm|pixel_values",
    re.IGNORECASE,
)
MODEL_CLASSES = re.compile(r"Sam[A-Z]")


def model_words(source: str) -> list[str]:
    return MODEL_WORDS.findall(source) + MODEL_CLASSES.findall(source)


def test_the_quantiser_names_no_model():
    """``ocr_app.quant`` imports no model (the contract above) and names none either: no model's name,
    parts, prompt or module paths in its code or docstrings; the wing hands it an adapter."""
    found = {}
    for f in sorted((ROOT / "quant").rglob("*.py")):
        words = model_words(f.read_text())
        if words:
            found[f.name] = sorted(set(words))
    assert found == {}
    planted = 'root = model.model.vision_tower  # "SamVisionLayer", bound_sam_attention, <|grounding|>'
    assert set(model_words(planted)) >= {"vision_tower", "SamV", "_sam", "<|grounding|>"}
    assert model_words("same sample _same SAMPLE samples") == []


def test_a_planted_back_arrow_breaks_the_layers_even_under_type_checking(planted):
    assert "BROKEN" in planted and "ocr_app.schema -> ocr_app.cli" in planted


def test_a_planted_model_import_in_the_runtime_breaks_its_contract(planted):
    assert "ocr_app.runtime.oom -> ocr_app.models.deepseek_ocr2.modes" in planted


def test_a_planted_model_import_in_the_quantiser_breaks_its_contract(planted):
    # its own contract reports it (broken contracts are listed in the configuration's order; none after it)
    after = planted.split("Broken contracts", 1)[1].split("The quantiser imports no model", 1)[1]
    assert "ocr_app.quant.stream -> ocr_app.models.deepseek_ocr2.quant_recipes" in after


def test_a_planted_circle_inside_a_package_breaks_the_acyclic_contract(planted):
    assert "No cycles are allowed in ocr_app.models.deepseek_ocr2." in planted
    assert "- .decoding -> .engine" in planted


# --- no god functions ---------------------------------------------------------------------------------
MAX_FUNCTION_LINES = 120


def _is_triton_kernel(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``@triton.jit`` (or ``@jit``, autotuned or not): a kernel is one unrolled body by design."""
    return any("jit" in ast.unparse(d) for d in node.decorator_list)


def long_functions(source: str, path: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, str, int]]:
    """(path, function, lines) of every function or method longer than ``limit`` lines, kernels aside."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_triton_kernel(node):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((path, node.name, lines))
    return found


def test_no_function_over_120_lines_outside_triton_kernels():
    repo = ROOT.parent
    found = []
    for f in sorted([*ROOT.rglob("*.py"), *(repo / "bench").rglob("*.py"), repo / "app.py"]):
        rel = f.relative_to(repo).as_posix()
        found += long_functions(f.read_text(), rel)
    assert found == []


def test_the_length_rule_sees_a_long_function_and_spares_a_kernel():
    body = "\n".join(f"    x{i} = {i}" for i in range(125))
    source = f"def god():\n{body}\n\n@triton.jit\ndef kernel():\n{body}\n\ndef small():\n    return 1\n"
    assert long_functions(source, "planted.py") == [("planted.py", "god", 126)]
