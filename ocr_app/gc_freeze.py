"""``gc.freeze`` for long-lived model objects, shared by every engine of the process (reference-counted).

Why: a loaded model, torch and transformers are millions of long-lived objects, and every later
``gc.collect`` (the memory context, an unload) walked them all, ~0.25 s each on an H200 host. Freezing
moves them out of the collector's sight. But the frozen set is the process's, not an engine's: with one
engine per GPU, one engine's ``gc.unfreeze`` at unload used to hand every other engine's objects back to
the collector. Here each loaded engine holds the freeze; an unload collects its own cycles and, while
another engine still holds it, freezes what is left again.
"""

from __future__ import annotations

import gc
import logging
import threading

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_holders = 0


def hold() -> None:
    """A model just loaded: freeze every object alive now (the earlier holders' objects stay frozen)."""
    global _holders
    with _lock:
        _holders += 1
        gc.freeze()


def release() -> int:
    """An engine dropped its model: unfreeze, collect (its reference cycles are freed now), and freeze
    again what the other holders still use. Returns the objects collected."""
    global _holders
    with _lock:
        _holders = max(0, _holders - 1)
        gc.unfreeze()
        found = gc.collect()
        if _holders:
            gc.freeze()
        return found


def holders() -> int:
    """How many loaded engines hold the freeze."""
    with _lock:
        return _holders
