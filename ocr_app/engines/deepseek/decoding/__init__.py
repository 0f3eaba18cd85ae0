"""The graph decoder of DeepSeek-OCR-2 (slot K/V cache, CUDA graphs, continuous batching).

``adapter``: the engine's one entry point (``stream_pages``); ``scheduler``: the
page queue, memory plan and worker thread; ``decoder``: slots, the decode step and its graphs;
``kernels``/``triton_ops``: the fused step's kernels; ``guard``: the no-repeat rule and loop stop as
device tensor ops.
"""
