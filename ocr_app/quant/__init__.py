"""Mixed precision for DeepSeek-OCR-2: INT8 vision encoder, AWQ 4-bit (group 128) decoder and experts.

Light on import (no torch): importing this package registers the ``int8`` and ``mixed`` presets with
the DeepSeek engine's loader. Heavy parts live in submodules:

- ``presets``: preset table and the ``auto`` rule; ``formats``: group quantisation and packing;
- ``ops`` / ``triton_kernels``: quantised matmuls (Triton on GPU, torch on CPU) incl. the fused MoE;
- ``modules``: drop-in ``QuantLinear``, ``Int8Linear``, ``QuantExperts``;
- ``calibration`` / ``awq`` / ``apply``: rendered calibration pages, AWQ search, in-place quantisation;
- ``checkpoint``: pre-quantised save/load; ``stream``: quantise a float checkpoint layer by layer while
  it loads; ``store``: the quantised-weights cache; ``pipeline``: the flows and the loader's backend;
- ``cli``: the ``ocr-app quantize`` click command.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def register_backends() -> None:
    """Make ``int8`` and ``mixed`` loadable by ``ocr_app.engines.deepseek.loading``.

    Skipped (debug log) where the engine loader's own dependencies are missing, e.g. a benchmark
    machine with torch and transformers but no pydantic: the quant modules work there on their own.
    """
    try:
        from ocr_app.engines.deepseek.loading import QUANT_PRESETS, register_quant_backend
    except ImportError as exc:
        logger.debug("engine loader not importable (%s): quant backends not registered", exc)
        return
    from ocr_app.quant.pipeline import PresetBackend

    for name in QUANT_PRESETS:
        register_quant_backend(name, PresetBackend(name))


register_backends()
