"""The progress bar of a first-time quantisation, shared by ``ocr-app convert`` and ``ocr-app quantize``.

A module of its own, low in the house, so the wing's ``quantize_command`` need not import ``cli.py``
(which imports the command: a loop).
"""

from __future__ import annotations

import sys


class LoadBar:
    """tqdm bar over the units of a first-time quantisation (``(done, total, label)`` callback)."""

    def __init__(self, disabled: bool = False, desc: str = "quantising") -> None:
        self.disabled = disabled
        self.desc = desc
        self._bar = None

    def __call__(self, done: int, total: int, label: str) -> None:
        if self.disabled:
            return
        from tqdm import tqdm

        if self._bar is None:
            self._bar = tqdm(total=total, unit="layer", desc=self.desc, file=sys.stderr, leave=True)
        self._bar.set_postfix_str(label[-40:])
        self._bar.n = done
        self._bar.refresh()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
