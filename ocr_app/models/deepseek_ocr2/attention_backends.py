"""The attention backends of the vision pass and the prefill: any but cuDNN's.

Why: torch's cuDNN attention builds an execution plan on the host for every new input shape, 65-85 ms
each on an H200, while flash and memory-efficient attention have no per-shape cost after their first
call (``bench/bench_first_calls.py``). The vision encoder's and the prefill's shapes follow how many
views and pages a batch holds, so each new batch composition paid those plans again: 24 first calls,
1.7 s of the first 16-page document after a load (``bench/profile_firstdoc.py``), 0.35 s more for a
document of another length, and a first concurrent burst of users 1.4-1.9x its repeat. In steady state
the three backends cost about the same on these shapes (window attention at 200 windows 0.29 vs 0.24 ms,
encoder and prefill equal) except SAM's global attention, where flash takes 2x cuDNN's 0.3 ms per view:
a few ms a page. The decode steps keep every backend: they are captured once per CUDA-graph bucket, and
whole documents decoded 25 % slower with cuDNN off everywhere.

``sdpa_kernel`` sets process-wide flags: two GPUs' threads entering and leaving at once can at worst
give one call another allowed backend, never a wrong result.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def without_cudnn_attention(device: Any) -> Iterator[None]:
    """Inside: ``scaled_dot_product_attention`` on CUDA picks flash, memory-efficient or math attention.
    A no-op off CUDA."""
    if getattr(device, "type", None) != "cuda":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        yield


__all__ = ["without_cudnn_attention"]
