"""Weight quantisation: INT8 and 4/8-bit group formats, their kernels, AWQ, streaming and the store.

It imports no model: the DeepSeek-OCR-2 wing (``models/deepseek_ocr2``) calls in — its loader finds
``pipeline.PresetBackend`` when a quantised preset (``int8``, ``mixed``) is asked for and hands it its
own hooks (``prepare``), and ``ocr-app quantize`` lives in the wing. Light on import (no torch, no
import-time registry). Heavy parts live in submodules:

- ``presets``: the preset table (what each precision quantises); ``formats``: group quantisation and packing;
- ``ops`` / ``triton_kernels``: quantised matmuls (Triton on GPU, torch on CPU) incl. the fused MoE;
- ``modules``: drop-in ``QuantLinear``, ``Int8Linear``, ``QuantExperts``;
- ``calibration`` / ``awq`` / ``apply``: rendered calibration pages, AWQ search, in-place quantisation;
- ``checkpoint``: pre-quantised save/load; ``stream``: quantise a float checkpoint layer by layer while
  it loads; ``store``: the quantised-weights cache; ``pipeline``: the flows and the loader's backend;
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)
