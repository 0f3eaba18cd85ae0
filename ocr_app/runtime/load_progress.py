"""Progress of a model load (first-time quantisation, the kernel warm-up of a fresh machine) for whoever
is watching: tqdm in the CLI, gr.Progress in the app.

Why a walk over wrappers: the DeepSeek engine sits inside the model manager, a device pool and the result
cache, which know nothing about quantisation, and the engine set builds engines on first use; engines that
can report load progress have a ``load_progress`` attribute, and this sets it on every such engine of an
``EngineSet`` (also those built later) without the wrappers' help.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

logger = logging.getLogger(__name__)

LoadProgressFn = Callable[[int, int, str], None]  # (units done, units in all, unit label)


def _walk(engine: Any, seen: set[int]) -> Iterator[Any]:
    """``engine`` and every engine inside it (wrappers' ``engine``, a pool's ``members``)."""
    if engine is None or id(engine) in seen:
        return
    seen.add(id(engine))
    yield engine
    for attr in ("engine", "_engine"):
        yield from _walk(getattr(engine, attr, None), seen)
    for member in getattr(engine, "members", None) or ():
        yield from _walk(getattr(member, "engine", member), seen)


def attach_load_progress(engines: Any, fn: LoadProgressFn | None) -> Callable[[], None]:
    """Set ``fn`` as the load-progress callback of every engine in ``engines`` (an ``EngineSet``) that
    takes one — built ones now, the others when the set builds them; returns a function that puts the
    previous callbacks (and the plain factories) back."""
    from ocr_app.engine_api import Engine

    restore: list[tuple[Any, Any]] = []
    wrapped: dict[str, tuple[Any, Any]] = {}

    def attach(top: Any) -> Any:
        for eng in _walk(top, set()):
            if hasattr(eng, "load_progress") and not any(e is eng for e, _ in restore):
                restore.append((eng, eng.load_progress))
                eng.load_progress = fn
        return top

    table = getattr(engines, "engines", {})
    with getattr(engines, "_lock", None) or nullcontext():
        for name, item in list(table.items()):
            if isinstance(item, Engine):
                attach(item)
            elif callable(item):  # a factory the set calls on first use

                def build(factory: Any = item) -> Any:
                    return attach(factory())

                table[name] = build
                wrapped[name] = (build, item)

    def detach() -> None:
        with getattr(engines, "_lock", None) or nullcontext():
            for name, (build, factory) in wrapped.items():
                if table.get(name) is build:  # never built: the plain factory again
                    table[name] = factory
        for eng, old in restore:
            eng.load_progress = old

    return detach


def describe_quantisation(done: int, total: int, label: str) -> str:
    """The line shown while a float checkpoint is quantised at load."""
    return f"Quantising the model (first load of this checkpoint and preset): {done}/{total} — {label}"


def describe_load_step(done: int, total: int, label: str) -> str:
    """The line shown for a load-progress report: the kernel warm-up of a fresh machine (its label,
    ``compiling GPU kernels (n/N)``, then ``loading GPU kernels (n/N)``), otherwise a first-time
    quantisation."""
    from ocr_app.load_bar import KERNEL_STEPS

    if label.startswith(KERNEL_STEPS):
        return f"Preparing the GPU (first run on this machine): {label}"
    return describe_quantisation(done, total, label)
