"""Weight quantisation: INT8 and 4/8-bit group formats, their kernels, AWQ, streaming and the store.

It imports no model and names none (vLLM's split: the model knows no quantiser, the quantiser no
model). A model's wing (``ocr_app/models/<model>``) calls in: it implements ``adapter.QuantAdapter``
(which modules are units of which layer kinds, how a calibration page becomes its input, which
activations AWQ reads), registers a recipe per layer kind (``recipes.register_recipe``), and hands the
adapter to ``pipeline.PresetBackend`` when a quantised preset (``int8``, ``mixed``) is asked for; the
``quantize`` command lives in the wing too. Light on import (no torch). Heavy parts live in submodules:

- ``adapter``: the model-adapter protocol; ``recipes``: the recipe registry and its building blocks;
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
