"""The queue position in words ("waiting: 1 job ahead") for a browser session.

Why read gradio's queue: the position gradio's own tracker shows ("queue: 1/1") counts only jobs
waiting, not the one holding the GPU, and reads like a fraction. The jobs ahead of a session are the
ones running in its concurrency group plus those queued before it.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def jobs_ahead(blocks: Any, session_hash: str | None, concurrency_id: str) -> int | None:
    """Jobs running or queued before this session's first queued event; None when it waits for nothing."""
    queue = getattr(blocks, "_queue", None)
    groups = getattr(queue, "event_queue_per_concurrency_id", None) or {}
    group = groups.get(concurrency_id)
    if group is None or not session_hash:
        return None
    for rank, event in enumerate(list(group.queue)):
        if getattr(event, "session_hash", None) == session_hash:
            return rank + int(getattr(group, "current_concurrency", 0) or 0)
    return None


def queue_words(ahead: int | None, seconds: float | None = None, engine: str | None = None) -> str:
    """ "waiting: 2 jobs ahead (deepseek), about 40 s"; "" when the job waits for nothing."""
    if ahead is None:
        return ""
    where = f" ({engine})" if engine else ""
    place = "next in line" if ahead <= 0 else f"{ahead} job{'' if ahead == 1 else 's'} ahead{where}"
    if seconds is None:
        return f"waiting: {place}"
    if seconds < 1.5:
        return f"waiting: {place}, starting in a moment"
    if seconds < 90:
        return f"waiting: {place}, about {round(seconds)} s"
    return f"waiting: {place}, about {round(seconds / 60)} min"
