"""Lower-overhead Triton launches for already compiled kernels.

Why: ``kernel[grid](...)`` validates every tensor argument with a driver call
(``cuPointerGetAttribute``) on each launch; on virtualised GPU hosts each driver call is expensive,
and a page's prefill makes hundreds of quantised-matmul launches outside any CUDA graph. Here the
kernel's own binder still computes Triton's exact specialisation key from the real tensors (dtype,
alignment, integer specialisation), the compiled kernel is looked up in Triton's own cache, and its
launcher is called with raw device pointers. The first launch of a specialisation always goes through
Triton (it compiles); anything unexpected (a hook set, an async compile, an interpreter) falls back to
the normal path. On by default (H200, Triton 3.6: outputs bitwise equal to the public path, one page's
``mixed`` prefill 0.121 → 0.107 s, docs/PERFORMANCE.md); callers pass ``fast`` from their
``KernelOptions`` (``OCR_APP_TRITON_FAST_LAUNCH=0`` turns it off by default).

Every Triton launch of the project goes through ``launch`` (the decode and SAM kernels with
``fast=False``: they keep Triton's own path). That makes it the one place where ``collecting`` can take
the launches of a dry run of the real code instead of running them: the kernel warm-up
(``models/deepseek_ocr2/kernel_warmup.py``) compiles exactly what the vision pass, the prefill and the
decode step would launch, before the model is reported ready.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ocr_app.quant.options import default_kernel_options

logger = logging.getLogger(__name__)

_broken: set[str] = set()
# (kernel, grid, args, kwargs) -> None; set while a dry run collects launches (this thread/context only)
LaunchSink = Callable[[Any, tuple, tuple, dict], None]
_SINK: ContextVar[tuple[LaunchSink, bool] | None] = ContextVar("ocr_app_launch_sink", default=None)


@contextmanager
def collecting(sink: LaunchSink, *, runs: bool = False) -> Iterator[None]:
    """While active (in this thread), ``launch`` hands each launch to ``sink`` and runs nothing: the
    kernels' outputs stay unwritten, so only a dry run whose results are thrown away may use it.
    ``runs``: the sink runs each launch itself (a recording of a real run, for tests)."""
    token = _SINK.set((sink, runs))
    try:
        yield
    finally:
        _SINK.reset(token)


def collecting_now() -> bool:
    """Whether launches in this thread are collected without running (kernel outputs stay unwritten)."""
    active = _SINK.get()
    return active is not None and not active[1]


def launch(kernel: Any, grid: tuple[int, ...], *args: Any, fast: bool | None = None, **kwargs: Any) -> None:
    """Launch ``kernel[grid](*args, **kwargs)``; fast path once the specialisation is compiled, unless
    ``fast`` is False (None: the process default, ``KernelOptions.fast_launch``)."""
    active = _SINK.get()
    if active is not None:
        active[0](kernel, tuple(grid), args, kwargs)
        return
    if fast is None:
        fast = default_kernel_options().fast_launch
    if not fast or not hasattr(kernel, "device_caches") or kernel.fn.__name__ in _broken:
        kernel[grid](*args, **kwargs)
        return
    try:
        if _fast(kernel, grid, args, dict(kwargs)):
            return
    except Exception as exc:  # internals differ in this Triton version: use the public path from now on
        _broken.add(kernel.fn.__name__)
        logger.warning("fast Triton launch disabled for %s: %s", kernel.fn.__name__, exc)
    kernel[grid](*args, **kwargs)


def _no_hook(hook: Any) -> bool:
    """No launch hook: None, or an empty ``HookChain`` (Triton ≥ 3.5's default)."""
    return hook is None or (hasattr(hook, "calls") and not hook.calls)


def _fast(kernel: Any, grid: tuple[int, ...], args: tuple, kwargs: dict) -> bool:
    import torch
    from triton import knobs
    from triton.runtime.driver import driver
    from triton.runtime.jit import compute_cache_key

    if not (_no_hook(knobs.runtime.launch_enter_hook) and _no_hook(knobs.runtime.launch_exit_hook)):
        return False  # a profiler's launch hooks want Triton's own launch path
    kwargs["debug"] = kwargs.get("debug", kernel.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    device = driver.active.get_current_device()
    kernel_cache, kernel_key_cache, _target, _backend, binder = kernel.device_caches[device]
    bound_args, specialization, options = binder(*args, **kwargs)
    compiled = kernel_cache.get(compute_cache_key(kernel_key_cache, specialization, options), None)
    if compiled is None or hasattr(compiled, "result"):
        return False  # not compiled yet (or compiling): the public path compiles it
    stream = driver.active.get_current_stream(device)
    values = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in bound_args.values()]
    g1 = grid[1] if len(grid) > 1 else 1
    g2 = grid[2] if len(grid) > 2 else 1
    compiled.run(
        grid[0], g1, g2, stream, compiled.function, compiled.packed_metadata, None, None, None, *values
    )
    return True
