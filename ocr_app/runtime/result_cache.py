"""On-disk result cache: the same page, settings and model give the stored engine output instantly.

Why on disk and keyed by content: re-running a document (another output format, a crashed run, the
same PDF uploaded twice) must not cost GPU minutes, and the cache must survive restarts. The key is a
blake2b digest of the page pixels, the request (prompt, mode, token cap), the settings that change
output, the model identity (id plus a local revision fingerprint) and the engine name.

Integrity: every entry records its own key and an HMAC-SHA256 of its output under a per-installation
secret (``cache_secret``: ``secret.key`` beside the entries, mode 0600), checked on every read: an entry
that was edited (even into valid JSON with its checksum recomputed by someone without the key),
truncated or stored under another key is logged once, removed and recomputed, never served.

Concurrency: every write goes to a private temporary file that is ``os.replace``d into place, so
readers see either no entry or a whole one, and two writers of the same key both leave a valid file.
Eviction removes least-recently-used files (hits refresh mtime) until the byte bound holds; removing a
file another process just removed is harmless.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.engine_api import Engine, WrappedEngine, noting, split_stream
from ocr_app.runtime.cache_secret import load_secret, signature, verify
from ocr_app.runtime.diskstore import (
    FileEntry,
    evict_to,
    list_entries,
    remove_all,
    remove_stale_temps,
)
from ocr_app.schema import Block, EngineOutput, PageRequest, StopReason

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

MIB = 1024**2
_SUFFIX = ".json"
# 2: DeepSeek outputs carry their parsed blocks; 3: keys hold the prompt as asked (preset name or text)
# plus the locate text, outputs the prompt and mode the engine used; 4: entries record their key and a
# checksum of the output; 5: the checksum is an HMAC under the installation's secret
FORMAT_VERSION = 5
# Settings that change what an engine returns for a page (the request carries prompt, mode, cap).
OUTPUT_SETTINGS = ("model", "device", "dtype", "max_new_tokens", "no_repeat_ngram_size", "no_repeat_window")


def output_to_dict(out: EngineOutput) -> dict[str, Any]:
    d = asdict(out)
    d["stop_reason"] = out.stop_reason.value
    return d


def output_from_dict(d: Mapping[str, Any]) -> EngineOutput:
    blocks = d.get("blocks")
    return EngineOutput(
        engine=d["engine"],
        raw_text=d.get("raw_text", ""),
        blocks=None
        if blocks is None
        else [Block(label=b["label"], text=b["text"], boxes=[tuple(x) for x in b["boxes"]]) for b in blocks],
        stop_reason=StopReason(d.get("stop_reason", StopReason.NONE.value)),
        num_tokens=int(d.get("num_tokens", 0)),
        vision_tokens=int(d.get("vision_tokens", 0)),
        timings=dict(d.get("timings", {})),
        notes=list(d.get("notes", [])),
        used_prompt=d.get("used_prompt"),
        used_mode=d.get("used_mode"),
    )


def _canonical(output: Mapping[str, Any]) -> bytes:
    """An output dict in one canonical JSON form (the same after a read as at the write)."""
    return json.dumps(output, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class DamagedEntry(ValueError):
    """A cache entry whose recorded key or checksum does not match what it holds."""


def model_fingerprint(model: str) -> str:
    """Identity of the weights without network: file sizes/mtimes of a local dir, or the HF cache ref."""
    path = Path(model).expanduser()
    if path.is_dir():
        h = hashlib.blake2b(digest_size=12)
        for f in sorted(path.iterdir()):
            if f.is_file() and f.suffix in (".json", ".safetensors", ".bin", ".model", ".txt"):
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}|".encode())
        return f"{path.resolve()}@{h.hexdigest()}"
    try:
        from huggingface_hub import constants

        ref = Path(constants.HF_HUB_CACHE) / f"models--{model.replace('/', '--')}" / "refs" / "main"
        if ref.is_file():
            return f"{model}@{ref.read_text().strip()}"
    except (
        Exception
    ) as exc:  # huggingface_hub missing or odd cache layout: the id alone still separates models
        logger.debug("no HF cache revision for %s: %s", model, exc)
    return model


def page_digest(request: PageRequest) -> str:
    """blake2b of the page pixels (mode, size and raw bytes of the PIL image)."""
    img = request.page.image
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{img.mode}|{img.size}|".encode())
    h.update(img.tobytes())
    return h.hexdigest()


@functools.cache
def _package_version() -> str:
    """The installed ocr-app version (engine code changes may change output), "dev" from a checkout;
    read once (``importlib.metadata`` parses the METADATA file each time: ~2 ms)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ocr-app")
    except PackageNotFoundError:
        return "dev"


class ResultCache:
    """Bounded on-disk store of ``EngineOutput`` JSON, safe against concurrent writers."""

    def __init__(self, directory: str | Path, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be ≥ 0")
        self.directory = Path(directory)
        self.max_bytes = int(max_bytes)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._key = load_secret(self.directory)
        self._lock = threading.Lock()
        self.hits = self.misses = self.writes = self.damaged = 0
        remove_stale_temps(self.directory)

    @classmethod
    def from_settings(cls, settings: Settings) -> ResultCache:
        return cls(Path(settings.cache_dir) / "results", settings.result_cache_mb * MIB)

    @staticmethod
    def make_key(request: PageRequest, *, engine: str, fingerprint: Mapping[str, Any]) -> str:
        """Key of one page request: pixels + request + output-relevant settings + model + engine."""
        meta = {
            "v": FORMAT_VERSION,
            "engine": engine,
            "prompt": request.prompt,
            "locate_text": request.locate_text,
            "mode": request.mode,
            "max_new_tokens": request.max_new_tokens,
            "settings": dict(sorted(fingerprint.items())),
        }
        h = hashlib.blake2b(digest_size=20)
        h.update(page_digest(request).encode())
        h.update(json.dumps(meta, sort_keys=True, default=str).encode())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{_SUFFIX}"

    def get(self, key: str) -> EngineOutput | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") != key:
                raise DamagedEntry(f"it records key {str(data.get('key'))[:12]}…")
            if not verify(self._key, _canonical(data["output"]), data.get("checksum")):
                raise DamagedEntry("its checksum does not match its output under this installation's key")
            out = output_from_dict(data["output"])
        except FileNotFoundError:
            self.misses += 1
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # edited, torn, another version
            logger.warning(
                "result cache: damaged entry %s (%s); removed, the page is recomputed", path.name, exc
            )
            path.unlink(missing_ok=True)
            self.misses += 1
            self.damaged += 1
            return None
        with contextlib.suppress(FileNotFoundError):
            os.utime(path)  # recency for eviction
        self.hits += 1
        return out

    def put(self, key: str, output: EngineOutput) -> None:
        if self.max_bytes == 0:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = output_to_dict(output)
        mac = signature(self._key, _canonical(data))
        entry = {"v": FORMAT_VERSION, "key": key, "created": time.time(), "checksum": mac}
        payload = json.dumps({**entry, "output": data})
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.writes += 1
        self._evict()

    def _files(self) -> list[FileEntry]:
        return list_entries(self.directory, _SUFFIX)

    def size_bytes(self) -> int:
        return sum(size for _, size, _ in self._files())

    def __len__(self) -> int:
        return len(self._files())

    def _evict(self) -> None:
        with self._lock:
            evict_to(self.directory, _SUFFIX, self.max_bytes)

    def clear(self) -> int:
        """Remove every entry; return how many were removed."""
        with self._lock:
            return remove_all(self.directory, _SUFFIX)

    def stats(self) -> dict[str, int]:
        files = self._files()  # one directory scan: the UI panel polls this
        return {
            "hits": self.hits,
            "misses": self.misses,
            "writes": self.writes,
            "damaged": self.damaged,
            "entries": len(files),
            "bytes": sum(size for _, size, _ in files),
            "max_bytes": self.max_bytes,
        }


class CachedEngine(WrappedEngine):
    """An ``Engine`` that answers from a ``ResultCache`` and runs only the pages it has not seen.

    Requests with ``use_cache=False`` bypass the cache both ways. Outputs with stop reason ERROR are not
    stored. A hit gets the note "result cache hit" and does not load the inner engine.

    ``precision`` answers which precision the inner engine runs (or would run if loaded now): it
    replaces the requested ``dtype`` in every key, so ``auto`` resolved to ``bf16`` never serves a page
    computed under ``mixed``. Keys for storing are taken after the inner run, when the answer is the
    loaded model's.
    """

    def __init__(
        self,
        engine: Engine,
        cache: ResultCache,
        fingerprint: Mapping[str, Any],
        *,
        precision: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(engine)
        self.cache = cache
        self.fingerprint = dict(fingerprint)
        self._precision = precision

    @classmethod
    def from_settings(
        cls, engine: Engine, settings: Settings, *, precision: Callable[[], str] | None = None
    ) -> CachedEngine:
        fp: dict[str, Any] = {k: getattr(settings, k) for k in OUTPUT_SETTINGS}
        fp["model"] = model_fingerprint(settings.model)
        fp["ocr_app"] = _package_version()
        return cls(engine, ResultCache.from_settings(settings), fp, precision=precision)

    def describe(self) -> dict[str, object]:
        info = dict(self._engine.describe())
        info["result_cache"] = self.cache.stats()
        return info

    def status(self):
        """The inner manager's status, when the inner engine has one (for the UI panel)."""
        return self._engine.status()  # type: ignore[attr-defined]

    def _key(self, req: PageRequest) -> str:
        fingerprint = self.fingerprint
        if self._precision is not None:
            fingerprint = {**fingerprint, "dtype": self._precision()}
        return ResultCache.make_key(req, engine=self._engine.name, fingerprint=fingerprint)

    def _store_key(self, req: PageRequest, looked_up: str | None) -> str | None:
        """The key to store under: re-made after the run, because the inner engine's load may have
        resolved ``auto`` to another precision than the one predicted at look-up."""
        if looked_up is None or self._precision is None:
            return looked_up
        return self._key(req)

    def _lookup(self, requests: Sequence[PageRequest]) -> tuple[dict[int, EngineOutput], dict[int, str]]:
        hits: dict[int, EngineOutput] = {}
        keys: dict[int, str] = {}
        for i, req in enumerate(requests):
            if not req.use_cache:
                continue
            keys[i] = self._key(req)
            out = self.cache.get(keys[i])
            if out is not None:
                out.notes.append("result cache hit")
                hits[i] = out
        return hits, keys

    def _store(self, key: str | None, out: EngineOutput) -> None:
        if key is None or out.stop_reason == StopReason.ERROR:
            return
        try:
            self.cache.put(key, out)
        except OSError as exc:  # a full disk must not fail the page
            logger.warning("result cache: could not store an entry: %s", exc)

    def predict_batch(self, requests: Sequence[PageRequest]) -> list[EngineOutput]:
        hits, keys = self._lookup(requests)
        todo = [i for i in range(len(requests)) if i not in hits]
        outs = self._engine.predict_batch([requests[i] for i in todo]) if todo else []
        result: dict[int, EngineOutput] = dict(hits)
        for i, out in zip(todo, outs, strict=True):
            self._store(self._store_key(requests[i], keys.get(i)), out)
            result[i] = out
        return [result[i] for i in range(len(requests))]

    def predict_stream(self, requests: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
        """Hits are answered as pages are pulled; misses go lazily to the engine, which is not called
        (nor loaded) when every page hits."""
        keys: dict[int, str] = {}  # id(request) → cache key

        def answer(_: int, req: PageRequest) -> EngineOutput | None:
            if not req.use_cache:
                return None
            key = keys[id(req)] = self._key(req)
            out = self.cache.get(key)
            if out is not None:
                out.notes.append("result cache hit")
            return out

        def misses(pages: Iterable[PageRequest]) -> Iterator[tuple[int, EngineOutput]]:
            seen: list[PageRequest | None] = []
            for j, out in self._engine.predict_stream(noting(pages, seen)):  # type: ignore[arg-type]
                req, seen[j] = seen[j], None  # answered: its page image is not kept to the end
                self._store(self._store_key(req, keys.pop(id(req), None)), out)
                yield j, out

        yield from split_stream(requests, answer, misses)
