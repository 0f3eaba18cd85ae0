"""Write constraints.txt: the exact versions of the project's dependency closure on a working machine.

Why: pyproject.toml holds ranges (what the code supports); CI and the Dockerfile install with
``-c constraints.txt`` so two installs a month apart get the same packages. Run it in an environment
where the test suite passes (``pip install -e ".[all,dev,gpu]"`` there first):

    python .ci/constraints.py > constraints.txt

Python 3.11+ (tomllib). torch, torchvision and the CUDA runtime wheels they pull are left out: they come from a per-CUDA index
(README, Dockerfile) and are pinned where they are installed.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import tomllib
from packaging.requirements import Requirement

ROOT = "ocr-app"
EXTRAS = ("all", "dev", "gpu")
PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"
SKIP = re.compile(r"^(torch|torchvision|nvidia-(?!ml-py$).*|cuda-.*)$")  # torch's CUDA wheels, not NVML


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


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


def closure() -> dict[str, str]:
    """name -> installed version of every distribution the project needs (with ``EXTRAS``)."""
    found: dict[str, str] = {}
    todo = [
        (r.name, set(r.extras))
        for r in project_requirements()
        if not SKIP.match(canonical(r.name)) and (r.marker is None or r.marker.evaluate({"extra": ""}))
    ]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (canonical(name), frozenset(extras)) in seen:
            continue
        seen.add((canonical(name), frozenset(extras)))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency for another platform
        found[canonical(name)] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not any(
                req.marker.evaluate({"extra": e}) for e in (extras or {""})
            ):
                continue
            if SKIP.match(canonical(req.name)):
                continue
            todo.append((req.name, set(req.extras)))
    return found


def main() -> None:
    lines = [f"{name}=={version.split('+')[0]}" for name, version in sorted(closure().items())]
    sys.stdout.write(
        "# Exact versions of ocr-app's dependency closure where the suite passes; regenerate with\n"
        "# `python .ci/constraints.py > constraints.txt` (see that script). torch and torchvision: README.\n"
        + "\n".join(lines)
        + "\n"
    )


if __name__ == "__main__":
    main()
