"""Kernel and benchmark knobs of the quantised matmuls, as one frozen object passed in.

Why an object and not module globals: a benchmark that compares two kernel variants used to overwrite
``ops`` globals for the whole process; now it builds a ``KernelOptions`` and hands it to the model's
quantised modules (``set_kernel_options``) or to an op call. Production code never changes them.

The variables are read once, on first use (``default_kernel_options``), through
``settings.KernelSettings``; docs/RUNTIME.md lists them (section "OCR_APP_* kernel variables").
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from ocr_app.exceptions import ConfigError

if TYPE_CHECKING:
    from ocr_app.settings import KernelSettings

logger = logging.getLogger(__name__)

Backend = Literal["auto", "torch", "triton"]
BACKENDS: tuple[str, ...] = get_args(Backend)
ENV_BACKEND = "OCR_APP_QUANT_BACKEND"  # settings.KernelSettings.quant_backend
ENV_FAST_LAUNCH = "OCR_APP_TRITON_FAST_LAUNCH"  # settings.KernelSettings.triton_fast_launch
# Decode row bounds (measured on an H200, docs/PERFORMANCE.md "W4 kernels for decode batches"): the GEMV
# kernel reads the routing directly but re-reads a weight tile once per row; the tensor-core kernels
# dequantise it once per 16 rows; the expert scan needs no sort; the sorted GEMM is for prefill sizes.
DENSE_GEMV_MAX_ROWS = 2  # H200: GEMV at 1–2 rows, tensor cores from 4 (1,982 -> 2,826 tok/s at 4 pages)
DECODE_GEMV_MAX_PAIRS = 16  # H200: from 3 tokens (18 pairs) on, the expert scan beats the GEMV
MOE_SCAN_MAX_TOKENS = 64


@dataclass(frozen=True)
class KernelOptions:
    """How the quantised ops run. Defaults are the measured production choices (docs/PERFORMANCE.md)."""

    backend: Backend = "auto"  # auto: Triton on CUDA tensors when Triton imports, torch otherwise
    fast_launch: bool = True  # launch compiled Triton kernels without per-launch pointer checks
    # Expert pairs through the GEMV kernel in the graph decoder's step; more go through the expert scan
    # (or, above ``moe_scan_max_tokens`` tokens, the sorted GEMM).
    decode_gemv_max_rows: int = DECODE_GEMV_MAX_PAIRS
    gemv_acc2d: bool = True  # GEMV accumulation: per-element partials reduced once (False: per K-tile)
    # Dense rows (tokens) up to this go through the GEMV kernel; more through the tensor-core kernel,
    # which dequantises each weight tile once per 16 rows instead of once per row.
    dense_gemv_max_rows: int = DENSE_GEMV_MAX_ROWS
    # Decode tokens up to this (above ``decode_gemv_max_rows`` pairs) run the routed experts through the
    # expert-scan kernel (no sort); more through the sorted grouped GEMM.
    moe_scan_max_tokens: int = MOE_SCAN_MAX_TOKENS

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"{ENV_BACKEND}={self.backend!r}: use one of {', '.join(BACKENDS)}")
        for name in ("decode_gemv_max_rows", "dense_gemv_max_rows", "moe_scan_max_tokens"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be ≥ 0")

    @classmethod
    def from_settings(cls, settings: KernelSettings | None = None) -> KernelOptions:
        """Options from ``OCR_APP_QUANT_BACKEND`` and ``OCR_APP_TRITON_FAST_LAUNCH`` (``KernelSettings``,
        read from the environment when not given; the other fields keep their defaults)."""
        if settings is None:
            from ocr_app.settings import KernelSettings

            settings = KernelSettings()
        return cls(
            backend=settings.quant_backend.strip().lower() or "auto",  # type: ignore[arg-type]
            fast_launch=settings.triton_fast_launch,
        )

    def replace(self, **changes: Any) -> KernelOptions:
        return dataclasses.replace(self, **changes)


@functools.lru_cache(maxsize=1)
def default_kernel_options() -> KernelOptions:
    """The process default: the environment as it was at first use."""
    options = KernelOptions.from_settings()
    if options != KernelOptions():
        logger.info("quantised kernels: %s", options)
    return options


def resolve(options: KernelOptions | None) -> KernelOptions:
    """``options``, or the process default when None."""
    return options if options is not None else default_kernel_options()


def set_kernel_options(model: Any, options: KernelOptions) -> int:
    """Hand ``options`` to every quantised module of ``model``; returns how many took them."""
    count = 0
    for module in model.modules():
        if hasattr(module, "kernel_options"):
            module.kernel_options = options
            count += 1
    return count
