"""Remote engine: DeepSeek-OCR-2 served by vLLM or SGLang behind an OpenAI-compatible API.

Why: for scale-out the model runs on a server farm and this process only sends pages. The engine keeps the
local engine's contract: greedy decoding, special tokens kept (they carry the grounding tags), the
no-repeat n-gram guard passed to vLLM's per-request logits processor with ``<td>``/``</td>`` exempt
(their ids are looked up through the server's ``/tokenize`` endpoint, never hard-coded).
"""

from __future__ import annotations

import base64
import io
import logging
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from ocr_app.engines.base import Engine
from ocr_app.exceptions import EngineError, EngineUnavailableError
from ocr_app.schema import EngineOutput, PageRequest, StopReason

if TYPE_CHECKING:
    import httpx

    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

_FINISH = {"stop": StopReason.END, "length": StopReason.LENGTH}
_EXEMPT_TOKENS = ("<td>", "</td>")


def encode_png_data_url(image) -> str:
    """PNG keeps text edges exact; the size cost is irrelevant next to decode time."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class RemoteEngine(Engine):
    """Send each page to ``{remote_url}/v1/chat/completions``; pages run concurrently."""

    name = "remote"

    def __init__(self, settings: Settings, *, client: httpx.Client | None = None) -> None:
        if not settings.remote_url:
            raise EngineUnavailableError("No remote endpoint configured: set DEEPSEEK_OCR_REMOTE_URL.")
        self.settings = settings
        self.base_url = settings.remote_url.rstrip("/").removesuffix("/v1")
        self._client = client
        self._owns_client = client is None
        self._model: str | None = settings.remote_model
        self._exempt_ids: list[int] | None = None
        self._loaded = False

    # -- lifecycle -----------------------------------------------------------------------------
    def load(self) -> None:
        if self._loaded:
            return
        try:
            import httpx
        except ImportError as exc:
            raise EngineUnavailableError(
                'The remote engine needs httpx: pip install "ocr-app[remote]"'
            ) from exc

        if self._client is None:
            headers = (
                {"Authorization": f"Bearer {self.settings.remote_api_key}"}
                if self.settings.remote_api_key
                else {}
            )
            self._client = httpx.Client(timeout=self.settings.remote_timeout_s, headers=headers)
        try:
            resp = self._client.get(f"{self.base_url}/v1/models")
            resp.raise_for_status()
            models = [m["id"] for m in resp.json().get("data", [])]
        except Exception as exc:
            raise EngineUnavailableError(
                f"Cannot reach the OCR server at {self.base_url} ({type(exc).__name__}: {exc}). "
                "Start it (e.g. `vllm serve deepseek-ai/DeepSeek-OCR-2 ...`) or fix DEEPSEEK_OCR_REMOTE_URL."
            ) from exc
        if self._model is None:
            if not models:
                raise EngineUnavailableError(f"The server at {self.base_url} serves no model.")
            self._model = models[0]
        elif models and self._model not in models:
            raise EngineUnavailableError(
                f"The server at {self.base_url} does not serve '{self._model}' (it serves: {', '.join(models)})."
            )
        self._exempt_ids = self._lookup_exempt_ids()
        self._loaded = True
        logger.info("remote engine ready: %s model %s", self.base_url, self._model)

    def _lookup_exempt_ids(self) -> list[int] | None:
        """Ask the server's tokenizer for the ids of <td>/</td>; None if it has no /tokenize."""
        ids: list[int] = []
        for token in _EXEMPT_TOKENS:
            try:
                resp = self._client.post(
                    f"{self.base_url}/tokenize",
                    json={"model": self._model, "prompt": token, "add_special_tokens": False},
                )
                resp.raise_for_status()
                found = resp.json().get("tokens", [])
            except Exception as exc:
                logger.warning("server has no usable /tokenize (%s); <td> exemption not sent", exc)
                return None
            if len(found) != 1:
                logger.warning("%s is %d tokens on the server; not exempted", token, len(found))
                continue
            ids.extend(found)
        return ids

    def unload(self) -> None:
        if self._client is not None and self._owns_client:
            self._client.close()
            self._client = None
        self._loaded = False

    @property
    def is_loaded(self) -> bool:
        return self._loaded

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "loaded": self._loaded, "url": self.base_url, "model": self._model}

    # -- prediction ----------------------------------------------------------------------------
    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        outputs: list[EngineOutput | None] = [None] * len(requests)
        for i, out in self.predict_stream(requests):
            outputs[i] = out
        return outputs  # type: ignore[return-value]

    def predict_stream(self, requests: Sequence[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        self.load()
        workers = min(self.settings.remote_concurrency, max(1, len(requests)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocr-remote") as pool:
            futures: dict[Future, int] = {pool.submit(self._one, r): i for i, r in enumerate(requests)}
            pending = set(futures)
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        yield futures[fut], fut.result()
            finally:
                for fut in pending:
                    fut.cancel()

    def _payload(self, req: PageRequest) -> dict[str, Any]:
        text = req.prompt.removeprefix("<image>").lstrip("\n")  # the server's chat template adds it
        max_tokens = req.max_new_tokens or self.settings.max_new_tokens
        xargs: dict[str, Any] = {
            "ngram_size": self.settings.no_repeat_ngram_size,
            "window_size": self.settings.no_repeat_window,
        }
        if self._exempt_ids:
            xargs["whitelist_token_ids"] = self._exempt_ids
        return {
            "model": self._model,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": encode_png_data_url(req.page.image)}},
                        {"type": "text", "text": text},
                    ],
                }
            ],
            "temperature": 0.0,
            "max_tokens": max_tokens,
            "skip_special_tokens": False,
            "vllm_xargs": xargs,
        }

    def capabilities(self):
        """DeepSeek-OCR-2's prompts and modes; the server decides the precision."""
        from ocr_app.engines.deepseek.modes import deepseek_capabilities

        return deepseek_capabilities(precisions=False)

    def _one(self, req: PageRequest) -> EngineOutput:
        t0 = time.perf_counter()
        try:
            resp = self._client.post(f"{self.base_url}/v1/chat/completions", json=self._payload(req))
        except Exception as exc:
            raise EngineError(f"OCR server request failed for page {req.page.index + 1}: {exc}") from exc
        if resp.status_code != 200:
            detail = resp.text[:300].strip()
            raise EngineError(
                f"OCR server answered {resp.status_code} for page {req.page.index + 1}: {detail}"
            )
        try:
            body = resp.json()
            choice = body["choices"][0]
            text = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise EngineError(f"OCR server sent an unexpected answer for page {req.page.index + 1}") from exc
        usage = body.get("usage") or {}
        from ocr_app.engines.deepseek.grounding import finish_output

        width, height = req.page.size
        return finish_output(
            EngineOutput(
                engine=self.name,
                raw_text=text,
                stop_reason=_FINISH.get(choice.get("finish_reason"), StopReason.END),
                num_tokens=int(usage.get("completion_tokens", 0)),
                timings={"total": round(time.perf_counter() - t0, 4)},
                notes=[f"remote: {self.base_url} ({self._model})"],
            ),
            width,
            height,
        )
