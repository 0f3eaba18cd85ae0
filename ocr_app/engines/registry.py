"""The set of engines a front end can offer: names, the default, and why others are missing.

Why a container apart from the code that builds it (``ocr_app.stack``): the converter, UI and CLI only
look engines up by name; how each engine is wired to the runtime is the composition root's business.
Engines are held as factories and built on first use, so asking for the text layer never builds (or
imports) the model stack.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ocr_app.choices import canonical_engine
from ocr_app.exceptions import EngineUnavailableError

if TYPE_CHECKING:
    from ocr_app.engine_api import Capabilities, Engine

logger = logging.getLogger(__name__)

EngineFactory = Callable[[], "Engine"]  # a registered kind's factory with the settings bound


@dataclass
class EngineSet:
    """Named engines (built ones, or factories that build them on first use), the default and the
    reasons others are missing. Thread-safe: two threads asking for one engine get the same object."""

    engines: dict[str, Engine | EngineFactory]
    default: str
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> why it cannot run here
    default_reason: str = ""
    # The engine the product is built around: front ends say how to get it when another reads the pages.
    preferred: str = ""
    # name -> why a declared engine cannot read a page yet (weights missing), or None; asked on demand
    checks: dict[str, Callable[[], str | None]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def names(self) -> list[str]:
        return list(self.engines)

    def get(self, name: str | None) -> Engine:
        from ocr_app.engine_api import Engine

        key = canonical_engine(name or self.default)
        if key not in self.engines:
            why = self.unavailable.get(key, f"unknown engine; choose one of {', '.join(self.engines)}")
            raise EngineUnavailableError(f"Engine '{key}' is not available: {why}")
        with self._lock:
            item = self.engines[key]
            if not isinstance(item, Engine):
                item = item()
                self.engines[key] = item
            return item

    def built(self) -> list[Engine]:
        """Engines built so far (a factory never called has nothing to unload)."""
        from ocr_app.engine_api import Engine

        with self._lock:
            return [e for e in self.engines.values() if isinstance(e, Engine)]

    def describe(self) -> dict[str, object]:
        """Facts for ``ocr-app info`` and the UI panel (builds every engine; loads none)."""
        engines = {name: self.get(name).describe() for name in list(self.engines)}
        reason = self.default_reason
        if not reason:
            reason = str(engines.get(self.default, {}).get("ocr_reason", ""))
        return {
            "default": self.default,
            "default_reason": reason,
            "preferred": self.preferred,
            "engines": engines,
            "unavailable": dict(self.unavailable),
        }

    def missing(self) -> dict[str, str]:
        """Declared engines that cannot read a page yet, and why (the web app does not offer them)."""
        found = {name: check() for name, check in self.checks.items() if name in self.engines}
        return {name: why for name, why in found.items() if why}

    def capabilities(self) -> Capabilities:
        """What the engines here offer together (front ends build their choices from this)."""
        from ocr_app.engine_api import Capabilities

        caps = Capabilities()
        for name in list(self.engines):
            caps = caps.merge(self.get(name).capabilities())
        return caps

    def unload_all(self) -> None:
        seen: set[int] = set()
        for engine in self.built():
            if id(engine) not in seen:
                seen.add(id(engine))
                engine.unload()
