"""Write constraints.txt: the exact versions of the project's dependency closure, valid on every Python
the project ships for (CI and the dev machines run 3.11, the Docker image 3.12).

Why: pyproject.toml holds ranges (what the code supports); CI and the Dockerfile install with
``-c constraints.txt`` so two installs a month apart get the same packages. Run it in an environment
where the test suite passes (``pip install -e ".[all,dev,gpu]"`` there first), with PyPI reachable:

    python .ci/constraints.py > constraints.txt

The versions are those installed here. For each other Python in ``PYTHONS``, pip is asked (a dry run,
wheels only, nothing installed) whether every pin has a wheel for it; a pin without one (orjson 3.8.3
has no CPython 3.12 wheel) gets, for that Python, the lowest later release that has one and that every
dependent's range allows, as a second line under an environment marker.

torch, torchvision and the CUDA runtime wheels they pull are left out: they come from a per-CUDA index
(README, Dockerfile) and are pinned where they are installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = "ocr-app"
EXTRAS = ("all", "dev", "gpu")
PYTHONS = ("3.11", "3.12")  # CI and the dev machines | the Docker image (Ubuntu 24.04)
PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"
SKIP = re.compile(r"^(torch|torchvision|nvidia-(?!ml-py$).*|cuda-.*)$")  # torch's CUDA wheels, not NVML
_NO_MATCH = re.compile(r"No matching distribution found for ([A-Za-z0-9_.\-]+)==")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def project_requirements() -> list[Requirement]:
    """The requirements pyproject.toml declares for ``EXTRAS`` (its own ``ocr-app[x]`` entries followed)."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    reqs, extras, done = [Requirement(t) for t in project["dependencies"]], list(EXTRAS), set()
    while extras:
        extra = extras.pop()
        if extra in done:
            continue
        done.add(extra)
        for req in map(Requirement, optional.get(extra, [])):
            if canonical(req.name) == ROOT:
                extras.extend(req.extras)
            else:
                reqs.append(req)
    return reqs


def closure() -> tuple[dict[str, str], dict[str, SpecifierSet]]:
    """name -> installed version of every distribution the project needs (with ``EXTRAS``), and
    name -> the intersection of the ranges its dependents ask for."""
    found: dict[str, str] = {}
    ranges: dict[str, SpecifierSet] = {}
    todo = [r for r in project_requirements() if r.marker is None or r.marker.evaluate({"extra": ""})]
    todo = [r for r in todo if not SKIP.match(canonical(r.name))]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        name = canonical(req.name)
        ranges[name] = ranges.get(name, SpecifierSet()) & req.specifier
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency for another platform
        found[name] = dist.version.split("+")[0]
        for text in dist.requires or []:
            sub = Requirement(text)
            _warn_if_python_specific(dist.metadata["Name"], sub)
            if sub.marker is not None and not any(
                sub.marker.evaluate({"extra": e}) for e in (req.extras or {""})
            ):
                continue
            if not SKIP.match(canonical(sub.name)):
                todo.append(sub)
    return found, ranges


def _warn_if_python_specific(dependent: str, req: Requirement) -> None:
    """A dependency some Python in ``PYTHONS`` needs and another does not cannot be pinned from this
    environment alone: say so (none today)."""
    if req.marker is None:
        return
    needed = {
        p for p in PYTHONS if req.marker.evaluate({"python_version": p, "python_full_version": f"{p}.0"})
    }
    if needed and needed != set(PYTHONS):
        print(f"{dependent} needs {req} on Python {', '.join(sorted(needed))} only: check its pin by hand",
              file=sys.stderr)  # fmt: skip


def pins_for(lines: list[str], python: str) -> dict[str, str]:
    """The ``name==version`` pins of constraints ``lines`` that apply on ``python`` (markers evaluated
    for it, not for the Python running this)."""
    env = {"python_version": python, "python_full_version": f"{python}.0", "extra": ""}
    pins: dict[str, str] = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(env):
                name = canonical(req.name)
                if name in pins:
                    raise ValueError(f"{name} is pinned twice for Python {python}")
                pins[name] = str(next(iter(req.specifier)).version)
    return pins


def missing_wheel(pins: dict[str, str], python: str) -> str | None:
    """The first pinned package pip finds no wheel of for ``python`` (pure-Python wheels count), or None
    when every pin has one. A dry run: metadata only, nothing is installed."""
    with tempfile.TemporaryDirectory() as tmp:
        reqs = Path(tmp) / "pins.txt"
        reqs.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
               "--no-deps", "--only-binary=:all:", "--python-version", python, "--target", str(Path(tmp) / "t"),
               "-r", str(reqs)]  # fmt: skip
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if run.returncode == 0:
        return None
    found = _NO_MATCH.search(run.stderr)
    if found is None:
        raise RuntimeError(f"pip could not check the pins for Python {python}:\n{run.stderr[-3000:]}")
    return canonical(found.group(1))


def _releases(name: str) -> list[Version]:
    run = subprocess.run([sys.executable, "-m", "pip", "index", "versions", name], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    listed = re.search(r"Available versions: (.*)", run.stdout)
    return sorted(Version(v.strip()) for v in listed.group(1).split(",")) if listed else []


def nearest_with_wheel(name: str, pinned: str, python: str, allowed: SpecifierSet) -> str:
    """The lowest release after ``pinned`` that ``allowed`` admits and that has a wheel for ``python``."""
    for version in _releases(name):
        later = version > Version(pinned) and not version.is_prerelease and version in allowed
        if later and missing_wheel({name: str(version)}, python) is None:
            return str(version)
    raise SystemExit(f"no release of {name} after {pinned} within {allowed or 'any range'} has a wheel "
                     f"for Python {python}")  # fmt: skip


def _marker(python: str, pythons: list[str]) -> str:
    """The ``python_version`` range that picks ``python`` among ``pythons`` (sorted)."""
    i = pythons.index(python)
    parts = [f'python_version >= "{python}"'] if i > 0 else []
    if i < len(pythons) - 1:
        parts.append(f'python_version < "{pythons[i + 1]}"')
    return " and ".join(parts)


def constraint_lines(versions: dict[str, str], ranges: dict[str, SpecifierSet]) -> list[str]:
    """One line per package; a package whose pin differs on another Python gets one line per Python."""
    pythons = sorted({*PYTHONS, this_python()}, key=Version)
    per_python = {this_python(): versions}
    for python in pythons:
        if python != this_python():
            pins = dict(versions)
            while (name := missing_wheel(pins, python)) is not None:
                pins[name] = nearest_with_wheel(name, pins[name], python, ranges.get(name, SpecifierSet()))
                print(
                    f"Python {python}: {name} {versions[name]} has no wheel, pinning {pins[name]}",
                    file=sys.stderr,
                )
            per_python[python] = pins
    lines = []
    for name in sorted(versions):
        if len({per_python[p][name] for p in pythons}) == 1:
            lines.append(f"{name}=={versions[name]}")
        else:
            lines += [f"{name}=={per_python[p][name]} ; {_marker(p, pythons)}" for p in pythons]
    return lines


def main() -> None:
    sys.stdout.write(
        "# Exact versions of ocr-app's dependency closure where the suite passes, for Python "
        + " and ".join(PYTHONS)
        + " (a marker picks\n# the pin where one Python needs another release); regenerate with "
        "`python .ci/constraints.py > constraints.txt`\n# (see that script). torch and torchvision: README.\n"
        + "\n".join(constraint_lines(*closure()))
        + "\n"
    )


if __name__ == "__main__":
    main()
