"""Mixed precision for DeepSeek-OCR-2: INT8 vision encoder, AWQ 4-bit (group 128) decoder and experts.

Light on import (no torch, no import-time registry): the DeepSeek engine's loader finds
``pipeline.PresetBackend`` when a quantised preset (``int8``, ``mixed``) is asked for. Heavy parts live in submodules:

- ``presets``: the preset table (what each precision quantises); ``formats``: group quantisation and packing;
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
