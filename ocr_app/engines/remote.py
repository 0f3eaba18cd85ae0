"""Remote engine: DeepSeek-OCR-2 served by vLLM or SGLang behind an OpenAI-compatible API.

Why: for scale-out the model runs on a server farm and this process only sends pages. The engine keeps the
local engine's contract: greedy decoding, special tokens kept (they carry the grounding tags), the
no-repeat n-gram guard passed to vLLM's per-request logits processor with ``<td>``/``</td>`` exempt
(their ids are looked up through the server's ``/tokenize`` endpoint, never hard-coded).

Why streamed answers and three deadlines: a server that accepts a page and never answers held a run for
the whole 300 s timeout, and Ctrl-C could not end it (issue 31). Answers are asked for as a stream
(``"stream": true``; a plain JSON answer is still read), so a working server sends its first bytes once
the page is prefilled; then connecting (``remote_connect_timeout_s``), silence before the first byte
and between parts (``remote_first_byte_s``, 30 s) and the whole answer (``remote_timeout_s``) each have
their own deadline, and a silent endpoint's page goes elsewhere (the fleet) long before the total.
Why each page on its own connection, whose socket is kept: a blocked read wakes only when its socket is
shut down (closing the client does not wake it), so a cancelled job shuts the sockets of its pages in
flight: their threads end at once and the server sees the client go (vLLM then stops the request).
"""

from __future__ import annotations

import base64
import contextlib
import io
import itertools
import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ocr_app.engine_api import Engine
from ocr_app.exceptions import ConfigError, EngineError, EngineUnavailableError
from ocr_app.schema import EngineOutput, PageRequest, StopReason

if TYPE_CHECKING:
    import httpx

    from ocr_app.engines.pool import EnginePool
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

_FINISH = {"stop": StopReason.END, "length": StopReason.LENGTH}
_EXEMPT_TOKENS = ("<td>", "</td>")
_CANCEL_POLL_S = 0.1  # how often a stream waiting for answers looks whether its job was cancelled


def encode_png_data_url(image) -> str:
    """PNG keeps text edges exact; the size cost is irrelevant next to decode time."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _prompt(req: PageRequest) -> str:
    """The request's prompt choice as DeepSeek-OCR-2 text (the wing's rule, as the local engine)."""
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt

    return resolve_prompt(req.prompt, locate_text=req.locate_text)


class RemoteEngine(Engine):
    """Send each page to ``{remote_url}/v1/chat/completions``; pages run concurrently."""

    name = "remote"

    def __init__(
        self,
        settings: Settings,
        *,
        client: httpx.Client | None = None,
        endpoint: Endpoint | None = None,
    ) -> None:
        """``endpoint`` (one member of a fleet) overrides the URL, key, model, timeout and pages in
        flight that ``settings`` give."""
        if endpoint is None:
            if not settings.remote_url:
                raise EngineUnavailableError("No remote endpoint configured: set DEEPSEEK_OCR_REMOTE_URL.")
            endpoint = Endpoint(url=settings.remote_url)
        self.settings = settings
        self.base_url = endpoint.url.rstrip("/").removesuffix("/v1")
        self.api_key = endpoint.api_key or settings.remote_api_key
        self.timeout_s = endpoint.timeout_s or settings.remote_timeout_s
        self.first_byte_s = min(settings.remote_first_byte_s, self.timeout_s)
        self.connect_s = min(settings.remote_connect_timeout_s, self.timeout_s)
        self.concurrency = endpoint.max_in_flight or settings.remote_concurrency
        self._client = client
        self._owns_client = client is None
        self._pages: httpx.Client | None = None  # page requests: one connection each (see the module doc)
        self._sockets: dict[int, socket.socket | None] = {}  # id(request) -> its socket while in flight
        self._sockets_lock = threading.Lock()
        self._model: str | None = endpoint.model or settings.remote_model
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

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        timeout = httpx.Timeout(self.first_byte_s, connect=self.connect_s)
        if self._client is None:
            self._client = httpx.Client(timeout=timeout, headers=headers)
        if self._pages is None:
            no_reuse = httpx.Limits(max_keepalive_connections=0)
            self._pages = httpx.Client(timeout=timeout, headers=headers, limits=no_reuse)
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

    def probe(self) -> None:
        """Health check through the server's own endpoints: ``/health`` (vLLM, SGLang), else
        ``/v1/models``. Raises ``EngineUnavailableError`` when the server is not ready."""
        if not self._loaded:
            self.load()  # a server that was down at start-up is probed by loading it
            return
        try:
            resp = self._client.get(f"{self.base_url}/health")
            if resp.status_code in (404, 405):
                resp = self._client.get(f"{self.base_url}/v1/models")
        except Exception as exc:
            raise EngineUnavailableError(f"{self.base_url} is unreachable: {exc}") from exc
        if resp.status_code != 200:
            raise EngineUnavailableError(f"{self.base_url} is not healthy (HTTP {resp.status_code})")

    def unload(self) -> None:
        if self._client is not None and self._owns_client:
            self._client.close()
            self._client = None
        if self._pages is not None:
            self._pages.close()
            self._pages = None
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

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """``remote_concurrency`` pages in flight, pulled lazily from ``requests``. A cancelled job
        (``PageRequest.cancel``) stops waiting at once: answers still on their way are dropped."""
        self.load()
        source = iter(enumerate(requests))
        workers = self.concurrency
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocr-remote")
        futures: dict[Future, tuple[int, PageRequest]] = {}

        def top_up() -> None:
            for i, r in itertools.islice(source, max(0, workers - len(futures))):
                futures[pool.submit(self._one, r)] = (i, r)

        top_up()
        try:
            while futures:
                done, _ = wait(list(futures), timeout=_CANCEL_POLL_S, return_when=FIRST_COMPLETED)
                if not done and any(r.cancelled for _, r in futures.values()):
                    return
                for fut in done:
                    i, _ = futures.pop(fut)
                    yield i, fut.result()
                top_up()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # pages not sent yet are not sent
            self._abort([r for _, r in futures.values()])  # pages in flight: their connections end now

    def _abort(self, requests: Iterable[PageRequest]) -> None:
        """Shut the sockets of these pages' requests: their blocked reads return at once."""
        with self._sockets_lock:
            for req in requests:
                sock = self._sockets.get(id(req))
                self._sockets[id(req)] = None  # a socket opened after this is shut as it opens
                _shut(sock)

    def _tracer(self, req: PageRequest):
        """httpx's trace hook: keep the page's socket once connected (TLS: the wrapped one)."""

        def trace(event: str, info: dict) -> None:
            if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
                stream = info.get("return_value")
                sock = stream.get_extra_info("socket") if stream is not None else None
                with self._sockets_lock:
                    if id(req) in self._sockets and self._sockets[id(req)] is None and req.cancelled:
                        _shut(sock)
                    else:
                        self._sockets[id(req)] = sock

        return trace

    def _payload(self, req: PageRequest) -> dict[str, Any]:
        text = _prompt(req).removeprefix("<image>").lstrip("\n")  # the server's chat template adds it
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
        """DeepSeek-OCR-2's prompts; the server decides the precision and how pages are tiled (the
        OpenAI chat API carries no resolution mode), so neither is offered. The server batches the
        pages of concurrent conversions: several run at once."""
        from ocr_app.models.deepseek_ocr2.capabilities import BATCHED_JOBS, deepseek_capabilities

        return deepseek_capabilities(self.name, precisions=False, modes=False, concurrent_jobs=BATCHED_JOBS)

    def _one(self, req: PageRequest) -> EngineOutput:
        import httpx

        t0 = time.perf_counter()
        page = req.page.index + 1
        payload = {**self._payload(req), "stream": True, "stream_options": {"include_usage": True}}
        with self._sockets_lock:
            self._sockets.setdefault(id(req), None)
        try:
            with self._pages.stream(
                "POST",
                f"{self.base_url}/v1/chat/completions",
                json=payload,
                extensions={"trace": self._tracer(req)},
            ) as resp:
                if resp.status_code != 200:
                    detail = resp.read()[:300].decode(errors="replace").strip()
                    err = EngineError(f"OCR server answered {resp.status_code} for page {page}: {detail}")
                    # 4xx other than overload/timeouts: the request itself is wrong, another endpoint would
                    # answer the same; the fleet then fails the page instead of taking the endpoint down.
                    err.member_fault = resp.status_code >= 500 or resp.status_code in (408, 409, 429)  # type: ignore[attr-defined]
                    raise err
                text, finish, usage = self._answer(resp, t0, page)
        except EngineError:
            raise
        except httpx.TimeoutException as exc:
            what = "connect" if isinstance(exc, httpx.ConnectTimeout) else "send a byte"
            limit = self.connect_s if what == "connect" else self.first_byte_s
            raise EngineError(
                f"OCR server {self.base_url} did not {what} for page {page} within {limit:g} s "
                f"({type(exc).__name__}; DEEPSEEK_OCR_REMOTE_"
                f"{'CONNECT_TIMEOUT_S' if what == 'connect' else 'FIRST_BYTE_S'})"
            ) from exc
        except Exception as exc:  # connection refused, reset, cancelled: the endpoint's fault
            if req.cancelled:
                raise EngineError(f"page {page} was cancelled while the OCR server read it") from exc
            raise EngineError(
                f"OCR server {self.base_url} failed for page {page}: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            with self._sockets_lock:
                self._sockets.pop(id(req), None)
        from ocr_app.models.deepseek_ocr2.grounding import finish_output

        width, height = req.page.size
        notes = [f"remote: {self.base_url} ({self._model})"]
        if req.mode and req.mode != "default":
            notes.append(f"resolution mode '{req.mode}' not applied: the server tiles pages its own way")
        return finish_output(
            EngineOutput(
                engine=self.name,
                raw_text=text,
                stop_reason=_FINISH.get(finish, StopReason.END),
                num_tokens=int(usage.get("completion_tokens", 0)),
                timings={"total": round(time.perf_counter() - t0, 4)},
                notes=notes,
                used_prompt=_prompt(req),
                used_mode=None,  # the chat API takes no resolution mode: the server's own, unknown here
            ),
            width,
            height,
        )

    def _answer(self, resp, t0: float, page: int) -> tuple[str, str | None, dict]:
        """Text, finish reason and usage of a streamed (server-sent events) or plain JSON answer; the
        whole answer within ``timeout_s`` (each silence is bounded by the client's read timeout)."""
        kind = resp.headers.get("content-type", "")
        try:
            if not kind.startswith("text/event-stream"):
                body = json.loads(resp.read())
                choice = body["choices"][0]
                return (
                    choice["message"]["content"] or "",
                    choice.get("finish_reason"),
                    body.get("usage") or {},
                )
            parts: list[str] = []
            finish, usage = None, {}
            for line in resp.iter_lines():
                if time.perf_counter() - t0 > self.timeout_s:
                    raise EngineError(
                        f"OCR server {self.base_url} had not finished page {page} after {self.timeout_s:g} s "
                        "(DEEPSEEK_OCR_REMOTE_TIMEOUT_S)"
                    )
                data = line.removeprefix("data:").strip() if line.startswith("data:") else ""
                if not data or data == "[DONE]":
                    continue
                event = json.loads(data)
                usage = event.get("usage") or usage
                for choice in event.get("choices") or []:
                    parts.append((choice.get("delta") or {}).get("content") or "")
                    finish = choice.get("finish_reason") or finish
            return "".join(parts), finish, usage
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise EngineError(f"OCR server sent an unexpected answer for page {page}") from exc


def _shut(sock: socket.socket | None) -> None:
    if sock is None:
        return
    with contextlib.suppress(OSError):  # already closed or never connected
        sock.shutdown(socket.SHUT_RDWR)


# -- a fleet of endpoints --------------------------------------------------------------------------
@dataclass(frozen=True)
class Endpoint:
    """One server of a fleet. Unset fields fall back to the ``remote_*`` settings."""

    url: str
    api_key: str | None = None
    model: str | None = None
    weight: float = 1.0
    max_in_flight: int | None = None  # pages in flight on this endpoint
    timeout_s: float | None = None


_ENDPOINT_KEYS = {"url", "api_key", "api_key_env", "model", "weight", "max_in_flight", "timeout_s"}


def parse_endpoints(value: str) -> list[Endpoint]:
    """``DEEPSEEK_OCR_REMOTE_URL``: one URL, several comma-separated URLs, or the path of a TOML file
    with one ``[[endpoint]]`` table per server (keys: url, api_key or api_key_env, model, weight,
    max_in_flight, timeout_s; the same keys at the top level are defaults for every endpoint)."""
    from pathlib import Path

    text = value.strip()
    if not text:
        raise ConfigError("DEEPSEEK_OCR_REMOTE_URL is empty.")
    if text.lower().endswith(".toml") or (("://" not in text) and Path(text).is_file()):
        return _parse_toml(Path(text).expanduser())
    urls = [u.strip() for u in text.split(",") if u.strip()]
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise ConfigError(
            f"DEEPSEEK_OCR_REMOTE_URL: {', '.join(bad)} is not an http(s) URL "
            "(give URLs separated by commas, or the path of a .toml file)."
        )
    if len(set(urls)) != len(urls):
        raise ConfigError(f"DEEPSEEK_OCR_REMOTE_URL lists an endpoint twice: {text}")
    return [Endpoint(url=u) for u in urls]


def _parse_toml(path) -> list[Endpoint]:
    import os

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser as the tomli package
        try:
            import tomli as tomllib
        except ModuleNotFoundError as exc:
            raise ConfigError(
                "Reading an endpoint TOML file needs Python ≥ 3.11 or `pip install tomli`."
            ) from exc

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"Endpoint file {path} does not exist.") from exc
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Endpoint file {path} is not valid TOML: {exc}") from exc
    tables = data.get("endpoint")
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"Endpoint file {path} has no [[endpoint]] tables.")
    defaults = {k: v for k, v in data.items() if k != "endpoint"}
    endpoints = []
    for n, table in enumerate(tables, 1):
        entry = {**defaults, **table}
        unknown = set(entry) - _ENDPOINT_KEYS
        if unknown:
            raise ConfigError(f"{path}: endpoint {n} has unknown key(s) {', '.join(sorted(unknown))}.")
        if "url" not in entry:
            raise ConfigError(f"{path}: endpoint {n} has no url.")
        env = entry.pop("api_key_env", None)
        if env and not entry.get("api_key"):
            entry["api_key"] = os.environ.get(env)
            if not entry["api_key"]:
                raise ConfigError(f"{path}: endpoint {n} reads its key from ${env}, which is not set.")
        try:
            endpoints.append(Endpoint(**entry))
        except TypeError as exc:
            raise ConfigError(f"{path}: endpoint {n}: {exc}") from exc
        if endpoints[-1].weight <= 0 or (endpoints[-1].max_in_flight or 1) < 1:
            raise ConfigError(f"{path}: endpoint {n}: weight must be > 0 and max_in_flight ≥ 1.")
    urls = [e.url for e in endpoints]
    if len(set(urls)) != len(urls):
        raise ConfigError(f"{path} lists an endpoint twice.")
    return endpoints


def build_remote_engine(settings: Settings) -> RemoteEngine | EnginePool:
    """One endpoint: a ``RemoteEngine``. Several: an ``EnginePool`` of them (least pages in flight
    per weight, failing endpoints backed off and probed through /health, pages retried elsewhere, pages
    of a slow endpoint re-sent to an idle one: ``remote_hedge_factor``)."""
    from ocr_app.engines.pool import EnginePool, Hedging, PoolMember

    endpoints = parse_endpoints(settings.remote_url or "")
    if len(endpoints) == 1:
        return RemoteEngine(settings, endpoint=endpoints[0])
    members = []
    for ep in endpoints:
        engine = RemoteEngine(settings, endpoint=ep)
        members.append(
            PoolMember(
                label=engine.base_url,
                engine=engine,
                weight=ep.weight,
                slots=engine.concurrency,
                probe=engine.probe,
            )
        )
    return EnginePool(
        members,
        kind="endpoint",
        chunk=1,
        backoff_s=settings.remote_backoff_s,
        max_backoff_s=max(settings.remote_backoff_s, 300.0),
        hedging=(
            Hedging(
                factor=settings.remote_hedge_factor,
                min_s=settings.remote_hedge_min_s,
                cold_s=settings.remote_first_byte_s / 2,  # before any page time: half the silence allowed
            )
            if settings.remote_hedge_factor > 0
            else None
        ),
    )
