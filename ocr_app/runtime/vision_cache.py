"""Cross-page vision-feature cache: skip the vision encoder for a page view it has already seen.

Why content hashes: the key is a blake2b digest of the preprocessed pixel tensors' bytes, shape and
dtype plus the mode — never summary statistics, so two different pages can only collide if blake2b
does. A namespace (model id, dtype) is mixed into every key so features of one checkpoint are never
served to another, including from the on-disk store.

Values are lists of tensors (one per page, as ``get_image_features(...).pooler_output``). They are kept
as CPU copies: a long-running app on a shared GPU should not pin cache entries in VRAM, and the model
moves features to its device itself. The in-memory LRU is bounded by bytes; the optional disk store
(safetensors, one file per key, atomic writes) is bounded by bytes too, oldest file first. Every disk
entry records its key and a blake2b checksum of its tensors (safetensors metadata), checked on every read:
flipped bytes, a truncated file or a file under another key is logged once, removed and recomputed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ocr_app.runtime.diskstore import FileEntry, evict_to, list_entries, remove_all, remove_stale_temps

if TYPE_CHECKING:
    import torch

from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

MIB = 1024**2
_SUFFIX = ".safetensors"


def _tensor_bytes_view(t: torch.Tensor) -> memoryview:
    """The raw bytes of a tensor (any dtype, bf16 included), without a float conversion."""
    import torch

    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy())


def content_key(*tensors: torch.Tensor | None, mode: str = "", extra: str = "") -> str:
    """blake2b over every tensor's dtype, shape and bytes, plus the mode and any extra text.

    ``None`` entries (a page without tiles) are hashed as a marker so ``(a, None)`` ≠ ``(a,)``.
    """
    h = hashlib.blake2b(digest_size=20)
    h.update(f"mode={mode}|extra={extra}|n={len(tensors)}".encode())
    for t in tensors:
        if t is None:
            h.update(b"|none")
            continue
        h.update(f"|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(_tensor_bytes_view(t))
    return h.hexdigest()


def _nbytes(value: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in value)


@dataclass
class CacheStats:
    hits: int = 0  # memory hits
    disk_hits: int = 0
    misses: int = 0
    damaged: int = 0  # disk entries found damaged (removed, recomputed)
    puts: int = 0
    evictions: int = 0
    entries: int = 0
    bytes: int = 0
    max_bytes: int = 0
    disk_bytes: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class VisionFeatureCache:
    """Thread-safe LRU (bounded by bytes) of vision features, with an optional on-disk store.

    Implements the engine's cache protocol: ``get(key) -> list[Tensor] | None`` and ``put(key, value)``.
    """

    def __init__(
        self,
        max_bytes: int,
        *,
        disk_dir: str | Path | None = None,
        disk_max_bytes: int = 2048 * MIB,
        namespace: str = "",
    ) -> None:
        if max_bytes < 0 or disk_max_bytes < 0:
            raise ValueError("cache sizes must be ≥ 0")
        self.max_bytes = int(max_bytes)
        self.disk_dir = Path(disk_dir) if disk_dir is not None else None
        self.disk_max_bytes = int(disk_max_bytes)
        self.namespace = namespace
        self._items: OrderedDict[str, list[torch.Tensor]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._disk_lock = threading.Lock()
        self._stats = CacheStats(max_bytes=self.max_bytes)
        if self.disk_dir is not None:
            self.disk_dir.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(self.disk_dir)

    @classmethod
    def from_settings(cls, settings: Settings) -> VisionFeatureCache:
        disk = Path(settings.cache_dir) / "vision" if settings.vision_cache_disk else None
        return cls(
            settings.vision_cache_mb * MIB,
            disk_dir=disk,
            disk_max_bytes=getattr(settings, "vision_cache_disk_mb", 2048) * MIB,
            namespace=f"{settings.model}|{settings.dtype}",
        )

    # --- keys --------------------------------------------------------------------------------------
    @staticmethod
    def make_key(*tensors: torch.Tensor | None, mode: str = "") -> str:
        """Content key of one page's preprocessed views (see ``content_key``)."""
        return content_key(*tensors, mode=mode)

    def _full_key(self, key: str) -> str:
        if not self.namespace:
            return key
        return hashlib.blake2b(f"{self.namespace}\x00{key}".encode(), digest_size=20).hexdigest()

    # --- protocol ----------------------------------------------------------------------------------
    def get(self, key: str) -> list[torch.Tensor] | None:
        full = self._full_key(key)
        with self._lock:
            value = self._items.get(full)
            if value is not None:
                self._items.move_to_end(full)
                self._stats.hits += 1
                return list(value)
        value = self._disk_get(full)
        with self._lock:
            if value is None:
                self._stats.misses += 1
                return None
            self._stats.disk_hits += 1
            self._insert(full, value)
        return list(value)

    def put(self, key: str, value: list[torch.Tensor]) -> None:
        full = self._full_key(key)
        stored = [t.detach().to("cpu").clone().contiguous() for t in value]
        with self._lock:
            self._stats.puts += 1
            self._insert(full, stored)
        self._disk_put(full, stored)

    # --- management --------------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._full_key(key) in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def bytes(self) -> int:
        with self._lock:
            return self._bytes

    def stats(self) -> CacheStats:
        with self._lock:
            s = CacheStats(**asdict(self._stats))
            s.entries, s.bytes = len(self._items), self._bytes
        s.disk_bytes = self._disk_usage()
        return s

    def clear(self, *, disk: bool = True) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
        if disk and self.disk_dir is not None:
            with self._disk_lock:
                remove_all(self.disk_dir, _SUFFIX)

    def _insert(self, full: str, value: list[torch.Tensor]) -> None:
        """Insert under the lock, evicting least-recently-used entries until the byte bound holds."""
        size = _nbytes(value)
        old = self._items.pop(full, None)
        if old is not None:
            self._bytes -= _nbytes(old)
        if size > self.max_bytes:
            return  # larger than the whole cache: not kept in memory (the disk store may keep it)
        self._items[full] = value
        self._bytes += size
        while self._bytes > self.max_bytes and self._items:
            _, evicted = self._items.popitem(last=False)
            self._bytes -= _nbytes(evicted)
            self._stats.evictions += 1

    # --- disk ----------------------------------------------------------------------------------------
    def _path(self, full: str) -> Path:
        assert self.disk_dir is not None
        return self.disk_dir / full[:2] / f"{full}{_SUFFIX}"

    def _disk_get(self, full: str) -> list[torch.Tensor] | None:
        if self.disk_dir is None:
            return None
        path = self._path(full)
        if not path.exists():
            return None
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                meta = f.metadata() or {}
                value = [f.get_tensor(str(i)) for i in range(len(f.keys()))]
            if meta.get("key") != full:
                raise ValueError("it records another key")
            if meta.get("checksum") != content_key(*value):
                raise ValueError("its checksum does not match its tensors")
        except Exception as exc:  # damaged, torn or foreign: a miss, removed, recomputed
            logger.warning(
                "vision cache: damaged entry %s (%s); removed, the page is recomputed", path.name, exc
            )
            path.unlink(missing_ok=True)
            with self._lock:
                self._stats.damaged += 1
            return None
        os.utime(path)  # recency for disk eviction
        return value

    def _disk_put(self, full: str, value: list[torch.Tensor]) -> None:
        if self.disk_dir is None or self.disk_max_bytes == 0:
            return
        from safetensors.torch import save_file

        path = self._path(full)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        os.close(fd)
        try:
            meta = {"key": full, "checksum": content_key(*value)}
            save_file({str(i): t for i, t in enumerate(value)}, tmp, metadata=meta)
            os.replace(tmp, path)  # atomic: readers see the old file or the whole new one
        except Exception as exc:
            logger.warning("vision cache: could not write %s: %s", path, exc)
            Path(tmp).unlink(missing_ok=True)
            return
        self._disk_evict()

    def _disk_files(self) -> list[FileEntry]:
        assert self.disk_dir is not None
        return list_entries(self.disk_dir, _SUFFIX)

    def _disk_usage(self) -> int:
        if self.disk_dir is None:
            return 0
        return sum(size for _, size, _ in self._disk_files())

    def _disk_evict(self) -> None:
        with self._disk_lock:
            evict_to(self.disk_dir, _SUFFIX, self.disk_max_bytes)
