"""The graph decoder of DeepSeek-OCR-2 (slot K/V cache, CUDA graphs, continuous batching).

``adapter``: the engine's entry points (``stream_pages``, ``decode_prepared``); ``scheduler``: the
page queue, memory plan and worker thread; ``decoder``: slots, the decode step and its graphs;
``kernels``/``triton_ops``: the fused step's kernels; ``guard``: the no-repeat rule and loop stop as
device tensor ops.
"""
