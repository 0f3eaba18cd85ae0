"""The light CPU engine: RapidOCR (PP-OCR ONNX models on onnxruntime) behind the engine interface.

Why: many users have no GPU or no DeepSeek-OCR-2 weights yet. RapidOCR's wheel ships its detection
and recognition models, so this works offline on any CPU in about a second per 144-DPI page.
RapidOCR gives text lines with boxes; ``engines.layout`` turns them into headings, paragraphs, lists,
columns and tables, the same blocks the DeepSeek engine produces.

Choices: the text-angle classifier is off (documents are upright; on clean pages it flipped whole
lines upside down and garbled them); tables come from geometry (aligned cells over several rows →
Markdown table) because ``rapid-table`` downloads its models at run time and cannot work offline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ocr_app.engines.base import Engine
from ocr_app.engines.layout import LayoutConfig, TextLine, build_blocks
from ocr_app.exceptions import EngineError, EngineUnavailableError
from ocr_app.schema import EngineOutput, PageRequest, StopReason

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)


def _default_factory(params: dict[str, Any]) -> Any:
    try:
        from rapidocr import RapidOCR
    except ImportError as exc:
        raise EngineUnavailableError("the light engine needs RapidOCR: pip install 'ocr-app[light]'") from exc
    return RapidOCR(params=params)


class LightOcrEngine(Engine):
    """RapidOCR detection + recognition, then the shared layout analysis."""

    name = "light"

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        threads: int | None = None,
        text_score: float = 0.5,
        use_cls: bool = False,
        layout: LayoutConfig | None = None,
        ocr_factory: Callable[[dict[str, Any]], Any] = _default_factory,
    ) -> None:
        self._params: dict[str, Any] = {
            "Global.log_level": "warning",
            "Global.use_cls": use_cls,
            "Global.text_score": text_score,
        }
        if threads:
            self._params["EngineConfig.onnxruntime.intra_op_num_threads"] = threads
        self._layout = layout or LayoutConfig()
        self._factory = ocr_factory
        self._ocr: Any = None

    def load(self) -> None:
        if self._ocr is None:
            start = time.perf_counter()
            self._ocr = self._factory(dict(self._params))
            logger.info("light: RapidOCR ready in %.2f s", time.perf_counter() - start)

    def unload(self) -> None:
        # RapidOCR holds its onnxruntime sessions; dropping the only reference frees them.
        self._ocr = None

    @property
    def is_loaded(self) -> bool:
        return self._ocr is not None

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        self.load()
        return [self._predict(r) for r in requests]

    def recognize_lines(self, image: Any) -> list[TextLine]:
        """Run RapidOCR on a PIL image; return its text lines in page pixels."""
        self.load()
        try:
            result = self._ocr(image.convert("RGB"))
        except Exception as exc:  # onnxruntime / OpenCV failures are engine errors, not user errors
            raise EngineError(f"light OCR failed: {exc}") from exc
        if result.boxes is None or result.txts is None:
            return []
        lines: list[TextLine] = []
        for quad, text in zip(result.boxes, result.txts, strict=True):
            xs = [float(p[0]) for p in quad]
            ys = [float(p[1]) for p in quad]
            box = (min(xs), min(ys), max(xs), max(ys))
            # The quad's left-edge height is the text height even when the page is slightly rotated.
            height = ((quad[3][0] - quad[0][0]) ** 2 + (quad[3][1] - quad[0][1]) ** 2) ** 0.5
            lines.append(TextLine(str(text).strip(), box, float(height)))
        return lines

    def _predict(self, request: PageRequest) -> EngineOutput:
        page = request.page
        start = time.perf_counter()
        lines = self.recognize_lines(page.image)
        ocr_s = time.perf_counter() - start
        blocks = build_blocks(lines, page_width=page.size[0], config=self._layout)
        total = time.perf_counter() - start
        return EngineOutput(
            engine=self.name,
            blocks=blocks,
            stop_reason=StopReason.NONE,
            timings={"ocr": ocr_s, "layout": total - ocr_s, "total": total},
        )

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "loaded": self.is_loaded, "device": "cpu", "backend": "rapidocr"}
