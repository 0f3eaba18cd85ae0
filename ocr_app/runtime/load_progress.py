"""Progress of a model load (first-time quantisation) for whoever is watching: tqdm in the CLI,
gr.Progress in the app.

Why a walk over wrappers: the DeepSeek engine sits inside the model manager and the result cache, which
know nothing about quantisation; engines that can report load progress have a ``load_progress``
attribute, and this sets it on every such engine of an ``EngineSet`` without the wrappers' help.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

logger = logging.getLogger(__name__)

LoadProgressFn = Callable[[int, int, str], None]  # (units done, units in all, unit label)


def _unwrapped(engine: Any) -> Iterator[Any]:
    seen: set[int] = set()
    while engine is not None and id(engine) not in seen:
        seen.add(id(engine))
        yield engine
        engine = getattr(engine, "engine", None) or getattr(engine, "_engine", None)


def attach_load_progress(engines: Any, fn: LoadProgressFn | None) -> Callable[[], None]:
    """Set ``fn`` as the load-progress callback of every engine in ``engines`` (an ``EngineSet``) that
    takes one; returns a function that puts the previous callbacks back."""
    restore: list[tuple[Any, Any]] = []
    for top in getattr(engines, "engines", {}).values():
        for eng in _unwrapped(top):
            if hasattr(eng, "load_progress") and not any(e is eng for e, _ in restore):
                restore.append((eng, eng.load_progress))
                eng.load_progress = fn

    def detach() -> None:
        for eng, old in restore:
            eng.load_progress = old

    return detach


def describe_quantisation(done: int, total: int, label: str) -> str:
    """The line shown while a float checkpoint is quantised at load."""
    return f"Quantising the model (first load of this checkpoint and preset): {done}/{total} — {label}"
