"""Runtime beside the engines: model manager, memory-freeing requests, VRAM monitor, caches, OOM recovery.

Nothing heavy is imported here; import the submodule you need (``ocr_app.runtime.vram`` stays light).
"""
