"""The progress bar of a model load's long steps, shared by ``ocr-app convert`` and ``ocr-app quantize``:
a first-time quantisation (units: layers) and the kernel warm-up of a fresh machine (units: kernels).

A module of its own, low in the house, so the wing's ``quantize_command`` need not import ``cli.py``
(which imports the command: a loop). It also holds the warm-up's label, so the engine that reports it
and the front ends that show it share one.
"""

from __future__ import annotations

import sys

COMPILING = "compiling GPU kernels"
LOADING = "loading GPU kernels"
KERNEL_STEPS = (COMPILING, LOADING)


def compiling_label(done: int, total: int) -> str:
    """The load-progress label of the kernel warm-up: ``compiling GPU kernels (n/N)``."""
    return f"{COMPILING} ({done}/{total})"


def loading_label(done: int, total: int) -> str:
    """The label of the warm-up's second step (modules and launchers): ``loading GPU kernels (n/N)``."""
    return f"{LOADING} ({done}/{total})"


class LoadBar:
    """tqdm bar over the units of a load step (``(done, total, label)`` callback): layers quantised, or
    kernels compiled (labels from ``compiling_label``), one bar per step."""

    def __init__(self, disabled: bool = False, desc: str = "quantising") -> None:
        self.disabled = disabled
        self.desc = desc
        self._bar = None
        self._step = desc

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.disabled:
            return
        from tqdm import tqdm

        step = next((k for k in KERNEL_STEPS if label.startswith(k)), self.desc)
        if self._bar is not None and step != self._step:
            self.close()
        if self._bar is None:
            unit = "kernel" if step in KERNEL_STEPS else "layer"
            self._bar = tqdm(total=total, unit=unit, desc=step, file=sys.stderr, leave=True)
            self._step = step
        self._bar.set_postfix_str("" if step in KERNEL_STEPS else label[-40:])
        self._bar.n = done
        self._bar.refresh()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
