"""Engine ``auto``: per page, the PDF text layer when it is usable, else the chosen OCR engine.

Why a router engine and not logic in the converter: the converter, UI and CLI keep talking to one
engine; which engine did each page, and why, travels in ``EngineOutput.engine`` and a note
``"<engine>: <reason>"`` (the converter copies it into ``PageResult.engine_reason``).

The OCR engine is loaded lazily, on the first page that needs it: a born-digital PDF converts without
ever loading DeepSeek-OCR-2.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from ocr_app.choices import engine_kind
from ocr_app.engine_api import Capabilities, Engine, noting, split_stream
from ocr_app.exceptions import OcrError
from ocr_app.schema import EngineOutput, PageRequest
from ocr_app.settings import TEXT_LAYER_POLICIES, TextLayerPolicy

logger = logging.getLogger(__name__)

Policy = TextLayerPolicy
# (pdf_path, page index, password=..., downscaled=...) -> (usable, reason); the password unlocks encrypted
# PDFs; downscaled: the page was rendered below the DPI asked for (too large for the render budget).
TextCheck = Callable[..., tuple[bool, str]]
OcrChoice = Callable[[], tuple[Engine, str]]


def _default_check(policy: Policy, engine: Engine | None = None) -> TextCheck:
    """The usability check for ``policy``; through ``engine``'s open document when it is the text layer
    (re-opening a long PDF for every page costs more than reading the page)."""
    from ocr_app.engines import text_usability, textlayer

    inspect = (
        engine.report if isinstance(engine, textlayer.TextLayerEngine) else text_usability.inspect_report
    )

    def check(
        path: Path, index: int, *, password: str | None = None, downscaled: bool = False
    ) -> tuple[bool, str]:
        report = inspect(path, index, password=password)
        if policy != "always":
            return text_usability.judge(report, downscaled=downscaled)
        if report.chars == 0:
            return False, "no embedded text"
        return True, f"{report.chars:,} chars of embedded text (text_layer=always)"

    return check


class RouterEngine(Engine):
    """Routes each page to the text layer or the OCR engine."""

    name = "auto"

    def __init__(
        self,
        ocr: Engine | OcrChoice,
        textlayer: Engine | None = None,
        text_layer_policy: Policy = "auto",
        *,
        reason: str = "",
        text_check: TextCheck | None = None,
    ) -> None:
        """``ocr`` is the OCR engine, or a callable returning ``(engine, reason)`` that is called the
        first time a page needs OCR (or ``describe`` asks): a born-digital PDF never makes the choice."""
        if text_layer_policy not in TEXT_LAYER_POLICIES:
            from ocr_app.exceptions import ConfigError

            raise ConfigError(f"text_layer must be auto, always or never, not {text_layer_policy!r}")
        self._ocr: Engine | None = ocr if isinstance(ocr, Engine) else None
        self._choose: OcrChoice | None = None if isinstance(ocr, Engine) else ocr
        self.textlayer = textlayer
        self.policy: Policy = text_layer_policy
        self._reason = reason
        self._check = text_check or _default_check(text_layer_policy, textlayer)
        self._loaded = False

    @property
    def ocr(self) -> Engine:
        """The OCR engine (chosen now if it was not yet)."""
        if self._ocr is None:
            assert self._choose is not None
            engine, why = self._choose()
            self._ocr, self._reason = engine, self._reason or why
        return self._ocr

    @property
    def reason(self) -> str:
        """Why ``ocr`` was chosen."""
        if self._ocr is None:
            _ = self.ocr
        return self._reason or "OCR engine"

    @property
    def pages_at_once(self) -> int:  # type: ignore[override]
        return self.ocr.pages_at_once

    # --- lifecycle ------------------------------------------------------------------------------
    def load(self) -> None:
        """Ready the cheap text layer; the OCR engine loads on the first page that needs it."""
        if self.textlayer is not None:
            self.textlayer.load()
        self._loaded = True

    def preload(self) -> None:
        """Unlike ``load``, also load the OCR engine now (``--preload`` on a server)."""
        self.load()
        self.ocr.preload()

    def unload(self) -> None:
        if self._ocr is not None:
            self._ocr.unload()
        if self.textlayer is not None:
            self.textlayer.unload()
        self._loaded = False

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "loaded": self.is_loaded,
            "ocr": self.ocr.name,
            "ocr_reason": self.reason,
            "text_layer": self.policy,
        }

    def capabilities(self) -> Capabilities:
        """``auto``'s kind with the OCR engine's choices (the text layer has none of its own); as many
        conversions at once as the OCR engine takes, since any of them may need it."""
        ocr = self.ocr.capabilities()
        caps = engine_kind(self.name).capabilities.merge(ocr)
        if self.textlayer is not None:
            caps = caps.merge(self.textlayer.capabilities())
        return replace(caps, max_concurrent_jobs=ocr.max_concurrent_jobs)

    # --- routing --------------------------------------------------------------------------------
    def route(self, request: PageRequest) -> tuple[Engine, str]:
        """The engine for one page and the reason (without the engine-name prefix)."""
        page = request.page
        if self.textlayer is None or self.policy == "never" or page.pdf_path is None:
            why = self.reason
            if page.pdf_path is not None and self.policy == "never":
                why = f"{why}; text layer disabled (text_layer=never)"
            return self.ocr, why
        try:
            usable, why = self._check(
                Path(page.pdf_path), page.index, password=page.password, downscaled=page.downscaled
            )
        except OcrError as exc:
            usable, why = False, f"text layer unreadable ({exc})"
        if usable:
            return self.textlayer, why
        return self.ocr, f"{self.reason}; text layer not used: {why}"

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        results: dict[int, EngineOutput] = dict(self.predict_stream(requests))
        return [results[i] for i in range(len(requests))]

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Text-layer pages are answered as they are pulled; the others go lazily, in order, to the
        OCR engine (loaded only when the first such page comes)."""
        if not self._loaded:
            self.load()
        reasons: dict[int, str] = {}  # id(request) → why OCR

        def answer(_: int, req: PageRequest) -> EngineOutput | None:
            engine, why = self.route(req)
            if engine is self.textlayer:
                try:
                    return self._tag(self.textlayer.predict_batch([req])[0], self.textlayer, why)
                except OcrError as exc:
                    logger.warning("text layer failed on page %d (%s); using OCR", req.page.index, exc)
                    why = f"{self.reason}; text layer failed: {exc}"
            reasons[id(req)] = why
            return None

        def ocr(pages: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
            self.ocr.load()
            seen: list[PageRequest | None] = []
            for j, out in self.ocr.predict_stream(noting(pages, seen)):  # type: ignore[arg-type]
                req, seen[j] = seen[j], None  # answered: its page image is not kept to the end
                yield j, self._tag(out, self.ocr, reasons.pop(id(req)))

        yield from split_stream(requests, answer, ocr)

    def _tag(self, output: EngineOutput, engine: Engine, why: str) -> EngineOutput:
        output.engine = output.engine or engine.name
        output.notes.append(f"{output.engine}: {why}")
        return output
