"""The graph decoder of DeepSeek-OCR-2 (slot K/V cache, CUDA graphs, continuous batching).

Split by job, the way vLLM's GPU worker is: ``adapter``: the engine's one entry point
(``stream_pages``); ``scheduler``: the page queue, memory plan and worker thread; ``decoder``: the page
decoder that ties the rest together (admission/prefill, chunks of steps, what the GPU panel reads);
``slots``: which slot holds which page, its tokens, lengths and K/V rows, free/busy, compaction;
``step``: one forward step over the slots and the token choice; ``graphs``: capture sizes, the graph
pool, replay and the eager fallback; ``interface``: the request/result/options records;
``kernels``/``triton_ops``: the fused step's kernels; ``guard``: the repetition guard, one contract
(one spec per rule) for ``generate`` and the graph decoder. ``docs/ARCHITECTURE.md`` draws it.
"""
