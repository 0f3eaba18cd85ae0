"""How the light engine spreads RapidOCR over the cores this process may use.

Why: RapidOCR runs its recogniser on one batch at a time and builds its detection session with
onnxruntime's default threads; on a user's 2 to 16 cores a page then waits on one. Recognition is split
into shares of the page's line crops, one a thread, and detection gets a session with as many threads as
the process may use (its CPU affinity, so ``taskset`` and container limits hold).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


def default_workers() -> int:
    """Cores this process may use (its CPU affinity, so ``taskset`` and container limits count)."""
    import os

    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)


def split_recognition(ocr: Any, workers: int) -> bool:
    """Make ``ocr`` recognise a page's line crops on ``workers`` threads, one share each.

    Why: recognition is ≈ 85 % of a dense page's time and its cost is linear in the crops' total
    width, so batching gains nothing; onnxruntime's own threads split each convolution and leave
    one core idle much of the time. Whole crops on separate threads (onnxruntime releases the GIL,
    one session is safe to run concurrently) keep every core busy. Crops are dealt out in width
    order so the shares cost the same. Returns False when ``ocr`` has no ``recognize_txt`` step
    (not RapidOCR 3): it then runs unchanged.
    """
    original = getattr(ocr, "recognize_txt", None)
    if workers <= 1 or original is None:
        return False
    from concurrent.futures import ThreadPoolExecutor

    def recognize_txt(crops: list[Any]) -> Any:
        n = min(workers, len(crops) // 2)  # at least two crops a share: a thread per crop costs more
        if n < 2:
            return original(crops)
        order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / max(crops[i].shape[0], 1))
        shares = [order[k::n] for k in range(n)]
        with ThreadPoolExecutor(n, thread_name_prefix="light-rec") as pool:
            parts = list(pool.map(lambda share: original([crops[i] for i in share]), shares))
        return _merge_recognitions(parts, shares, len(crops))

    ocr.recognize_txt = recognize_txt
    return True


def detect_on_all_cores(ocr: Any, workers: int) -> bool:
    """Build RapidOCR's detection session with ``workers`` onnxruntime threads (recognition keeps one
    thread a share, ``split_recognition``).

    Why: detection is one call per page that runs while no recognition share does, so on one thread it
    left the other cores idle for ≈ 0.5 s of a dense page. RapidOCR builds its sessions on first use
    from one shared engine config, so the detector is built here, first, with the higher count.
    Returns False (nothing changed) where ``ocr`` is not RapidOCR 3."""
    load, cfg = getattr(ocr, "_load_det_model", None), getattr(ocr, "cfg", None)
    ort = getattr(getattr(cfg, "EngineConfig", None), "onnxruntime", None)
    if workers <= 1 or load is None or ort is None or getattr(ocr, "text_det", None) is not None:
        return False
    before = ort.intra_op_num_threads
    ort.intra_op_num_threads = workers
    try:
        load()
    finally:
        ort.intra_op_num_threads = before
    return True


def _merge_recognitions(parts: Sequence[Any], shares: Sequence[Sequence[int]], count: int) -> Any:
    """One recognition result in the crops' original order from the shares' results."""
    import dataclasses

    txts: list[Any] = [""] * count
    scores: list[Any] = [0.0] * count
    words: list[Any] = [None] * count
    imgs: list[Any] = [None] * count
    for part, share in zip(parts, shares, strict=True):
        for j, i in enumerate(share):
            txts[i], scores[i] = part.txts[j], part.scores[j]
            words[i], imgs[i] = part.word_results[j], part.imgs[j]
    return dataclasses.replace(
        parts[0],
        imgs=imgs,
        txts=tuple(txts),
        scores=tuple(scores),
        word_results=tuple(words),
        elapse=max(float(p.elapse or 0.0) for p in parts),
    )
