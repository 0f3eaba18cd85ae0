"""The package's import graph: no module import loop, and no arrow from engines up to the runtime,
the composition root or the front ends (docs/ARCHITECTURE.md draws the layers).

Every import counts, including those inside functions (a lazy import is still a dependency); imports
under ``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1] / "ocr_app"
# Layers an engine must never import: engines are wrapped by the runtime and wired by the stack.
ABOVE_ENGINES = ("ocr_app.runtime", "ocr_app.stack", "ocr_app.convert", "ocr_app.ui", "ocr_app.cli")


def _modules() -> dict[str, Path]:
    mods = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def import_graph() -> dict[str, set[str]]:
    """module -> the ``ocr_app`` modules it imports (``from pkg import mod`` resolved to the module)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets: set[str] = set()
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        type_only = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If)
            and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for stmt in block.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            found: list[str] = []
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*pkg, base] if base else pkg)
                found = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for target in found:
                while target not in mods and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in mods and target != name and target.startswith("ocr_app"):
                    targets.add(target)
        graph[name] = targets
    return graph


def loops(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_real_edges():
    graph = import_graph()
    assert "ocr_app.settings" not in graph["ocr_app.convert"]  # only under TYPE_CHECKING there
    assert "ocr_app.engine_api" in graph["ocr_app.engines.router"]
    assert "ocr_app.runtime.manager" in graph["ocr_app.stack"]  # a lazy (in-function) import counts
    assert "ocr_app.models.deepseek_ocr2.precision" in graph["ocr_app.models.deepseek_ocr2.loading"]


def test_no_import_loops():
    assert [sorted(c) for c in loops(import_graph())] == []


def test_loop_detection_catches_a_loop():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_arrow_from_engines_up():
    up = {
        m: sorted(t for t in targets if t.startswith(ABOVE_ENGINES))
        for m, targets in import_graph().items()
        if m.startswith("ocr_app.engines")
    }
    assert {m: t for m, t in up.items() if t} == {}


def test_quant_package_and_the_deepseek_loader_do_not_import_each_other():
    graph = import_graph()
    assert "ocr_app.models.deepseek_ocr2.loading" not in graph["ocr_app.quant"]
    assert "ocr_app.quant" not in graph["ocr_app.models.deepseek_ocr2.loading"]


# --- no god functions ---------------------------------------------------------------------------------
MAX_FUNCTION_LINES = 120
# Known, owned elsewhere: issue 25 splits structure/layout.py into an ordered list of small passes.
LONG_ALLOWED = {("ocr_app/structure/layout.py", "_group_section")}


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
        found += [x for x in long_functions(f.read_text(), rel) if (x[0], x[1]) not in LONG_ALLOWED]
    assert found == []


def test_the_length_rule_sees_a_long_function_and_spares_a_kernel():
    body = "\n".join(f"    x{i} = {i}" for i in range(125))
    source = f"def god():\n{body}\n\n@triton.jit\ndef kernel():\n{body}\n\ndef small():\n    return 1\n"
    assert long_functions(source, "planted.py") == [("planted.py", "god", 126)]
