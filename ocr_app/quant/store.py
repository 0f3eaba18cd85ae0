"""Quantised-weights cache: a float checkpoint is quantised once per preset, later loads read the result.

Key = the source checkpoint's content + preset + calibration pages + recipe version. Content: what the hub
already says where it is trustworthy — in a Hugging Face cache snapshot each weight file is a symlink to a
blob named by its SHA-256; in an ``hf download --local-dir`` folder the download record holds the SHA-256
(used while the file has not been written since); anywhere else a BLAKE2b over the file, remembered in
``hashes.json`` by (path, size, mtime, inode, ctime), so a 6 GiB checkpoint is hashed once per file version
and later loads pay one ``stat`` per file. ``config.json`` is hashed too.

Entries live in ``<cache_dir>/quantized/<key>/`` in the pre-quantised checkpoint layout
(``checkpoint.save_quantized``) plus ``entry.json`` (its key, a checksum of its weights, source, preset,
size, quantisation time). An entry is written into a temporary directory and renamed into place, so a
crash never leaves a half entry. A hit is checked while it loads (``checkpoint.weights_checksum``: xxh3-128 over
every tensor's name, dtype, shape and bytes, hashed as the loader reads them, so it costs no second pass
over gigabytes): an entry whose key or checksum does not match is logged, removed and quantised again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

SUBDIR = "quantized"
ENTRY_FILE = "entry.json"
HASHES_FILE = "hashes.json"
# Bump when the streamed recipe changes what gets stored (formats, calibration, AWQ rules).
STREAM_RECIPE_VERSION = 1
_CHUNK = 16 << 20


def _hub_blob_digest(path: Path) -> str | None:
    """SHA-256 from a Hugging Face cache symlink (``…/blobs/<64 hex>``), else None."""
    if not path.is_symlink():
        return None
    name = Path(os.readlink(path)).name
    return f"sha256:{name}" if _is_sha256(name) else None


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _local_dir_digest(path: Path) -> str | None:
    """SHA-256 that ``hf download --local-dir`` recorded for ``path`` (``.cache/huggingface/download/
    <name>.metadata``: commit, etag, time; a weight file's etag is its SHA-256), trusted only while the
    file's mtime and ctime are not later than that record: any write since, even one that puts the
    mtime back, changes the ctime and the file is hashed instead. Read-only; None when absent."""
    meta = path.parent / ".cache" / "huggingface" / "download" / f"{path.name}.metadata"
    try:
        _commit, etag, stamp = meta.read_text().splitlines()[:3]
        st = path.stat()
        if _is_sha256(etag) and max(st.st_mtime, st.st_ctime) <= float(stamp):
            return f"sha256:{etag}"
    except (OSError, ValueError):
        pass
    return None


def hash_file(path: Path) -> str:
    """BLAKE2b of the whole file: the one place that reads a checkpoint's bytes for its key."""
    h = hashlib.blake2b(digest_size=20)
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return f"blake2b:{h.hexdigest()}"


def _file_version(st: os.stat_result) -> dict[str, int]:
    """What changes whenever a file's bytes may have: size, mtime, inode (a replaced file) and ctime
    (which, unlike mtime, no tool can set back)."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino, "ctime_ns": st.st_ctime_ns}


def file_digest(path: Path, memo: dict[str, Any]) -> str:
    """Content digest of ``path``; ``memo`` (updated) maps resolved path → file version + digest, so a
    file is hashed once per version and a later key costs one ``stat``."""
    hub = _hub_blob_digest(path) or _local_dir_digest(path)
    if hub:
        return hub
    real = path.resolve()
    version = _file_version(real.stat())
    seen = memo.get(str(real))
    if seen and all(seen.get(k) == v for k, v in version.items()):
        return seen["digest"]
    digest = hash_file(real)
    memo[str(real)] = {**version, "digest": digest}
    return digest


class QuantStore:
    """The quantised-weights cache under ``root`` (``<cache_dir>/quantized``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    @classmethod
    def from_settings(cls, settings: Settings) -> QuantStore:
        return cls(Path(settings.cache_dir) / SUBDIR)

    # --- keys ---------------------------------------------------------------------------------
    def _memo(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / HASHES_FILE).read_text())
        except (OSError, ValueError):
            return {}

    def _save_memo(self, memo: dict[str, Any]) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.root / f".{HASHES_FILE}.{os.getpid()}"
            tmp.write_text(json.dumps(memo))
            os.replace(tmp, self.root / HASHES_FILE)
        except OSError as exc:  # a read-only cache still works, it only hashes again next time
            logger.warning("could not remember checkpoint hashes in %s: %s", self.root, exc)

    def source_fingerprint(self, model_dir: str | Path) -> dict[str, str]:
        """``{file name: digest}`` of the weight files and config.json of ``model_dir``."""
        model_dir = Path(model_dir)
        memo = self._memo()
        before = dict(memo)
        files = [*sorted(model_dir.glob("*.safetensors")), model_dir / "config.json"]
        digests = {f.name: file_digest(f, memo) for f in files if f.exists()}
        if memo != before:
            self._save_memo(memo)
        return digests

    def key(self, model_dir: str | Path, preset: str, calib_pages: int) -> str:
        """The entry key of (checkpoint content, preset, calibration pages, recipe version, and which
        recipe quantises each layer kind — a changed recipe never reads another's weights)."""
        from ocr_app.quant.apply import RECIPE_VERSION
        from ocr_app.quant.recipes import recipe_signature

        ident = {
            "source": self.source_fingerprint(model_dir),
            "preset": preset,
            "calib_pages": calib_pages,
            "recipe": [RECIPE_VERSION, STREAM_RECIPE_VERSION],
            "layer_recipes": recipe_signature(),
        }
        return hashlib.blake2b(json.dumps(ident, sort_keys=True).encode(), digest_size=16).hexdigest()

    # --- entries ------------------------------------------------------------------------------
    def lookup(self, key: str) -> Path | None:
        """The entry directory for ``key`` when it is complete and records ``key``, else None (an entry
        that records another key or no checksum is removed: it cannot be trusted)."""
        from ocr_app.quant.checkpoint import WEIGHTS_FILE, is_quantized_checkpoint

        path = self.root / key
        if not (
            (path / ENTRY_FILE).is_file()
            and is_quantized_checkpoint(path)
            and (path / WEIGHTS_FILE).is_file()
        ):
            return None
        entry = self.entry(path)
        if entry.get("key") != key or not entry.get("weights_checksum"):
            self.remove_damaged(path, "its entry.json does not record this key and a weights checksum")
            return None
        return path

    @staticmethod
    def entry(path: Path) -> dict[str, Any]:
        try:
            data = json.loads((Path(path) / ENTRY_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def remove_damaged(self, path: Path, why: str) -> None:
        """Log once and delete an entry that cannot be trusted; the next load quantises again."""
        logger.warning(
            "quantised-weights cache: damaged entry %s (%s); removed, quantising again", path.name, why
        )
        shutil.rmtree(path, ignore_errors=True)

    def save(
        self, key: str, model, recipe: dict[str, Any], model_dir: str | Path, info: dict[str, Any]
    ) -> Path:
        """Write the quantised ``model`` as entry ``key`` (atomic rename into place)."""
        from ocr_app.quant.checkpoint import save_quantized

        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.root))
        try:
            from ocr_app.quant.checkpoint import WEIGHTS_FILE, weights_checksum

            save_quantized(model, recipe, tmp, model_dir)
            size = sum(f.stat().st_size for f in tmp.glob("*.safetensors"))
            entry = {"key": key, "weights_checksum": weights_checksum(tmp / WEIGHTS_FILE),
                     "source": str(model_dir), "preset": recipe["preset"], "bytes": size,
                     "created": time.time(), **info}  # fmt: skip
            (tmp / ENTRY_FILE).write_text(json.dumps(entry, indent=1, default=str))
            final = self.root / key
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        logger.info("stored quantised weights (%s) in %s", recipe["preset"], final)
        return final

    def entries(self) -> list[dict[str, Any]]:
        """Complete entries, newest first: key, source, preset, bytes, created, quantise seconds, path."""
        out = []
        if not self.root.is_dir():
            return out
        for d in self.root.iterdir():
            if d.is_dir() and not d.name.startswith(".") and self.lookup(d.name):
                try:
                    entry = json.loads((d / ENTRY_FILE).read_text())
                except (OSError, ValueError):
                    continue
                entry["path"] = str(d)
                out.append(entry)
        return sorted(out, key=lambda e: e.get("created", 0), reverse=True)

    def clear(self) -> int:
        """Delete every entry (and leftovers of interrupted writes); returns the number of entries."""
        n = len(self.entries())
        if self.root.is_dir():
            shutil.rmtree(self.root)
        return n
