"""The result cache's checksum is keyed: an entry edited by anyone without the key is not served.

Issue 31: an entry whose checksum was recomputed after an edit was served (the checksum was a plain
blake2b anybody can compute). Entries are now signed with HMAC-SHA256 under a per-installation secret
kept beside them (``secret.key``, mode 0600).
"""

from __future__ import annotations

import hashlib
import json
import stat

from PIL import Image

from ocr_app.runtime.result_cache import ResultCache, _canonical
from ocr_app.schema import EngineOutput, PageImage, PageRequest, StopReason


def _request() -> PageRequest:
    page = PageImage(image=Image.new("RGB", (40, 30), "white"), index=0, source="d.png")
    return PageRequest(page=page, prompt="<image>\nFree OCR.")


def _stored(tmp_path):
    cache = ResultCache(tmp_path / "results", 1 << 20)
    key = ResultCache.make_key(_request(), engine="e", fingerprint={"model": "m"})
    cache.put(key, EngineOutput(engine="e", raw_text="Real text.", stop_reason=StopReason.END))
    [entry] = (tmp_path / "results").glob("*/*.json")
    return cache, key, entry


def test_an_edit_with_a_recomputed_checksum_is_detected(tmp_path):
    cache, key, entry = _stored(tmp_path)
    data = json.loads(entry.read_text())
    data["output"]["raw_text"] = "Forged text."
    forged = _canonical(data["output"])
    for checksum in (  # what someone without the key can compute
        hashlib.blake2b(forged, digest_size=16).hexdigest(),  # the old, unkeyed checksum
        hashlib.sha256(forged).hexdigest(),
        __import__("hmac").new(b"\0" * 32, forged, "sha256").hexdigest(),  # HMAC under a guessed key
    ):
        data["checksum"] = checksum
        entry.write_text(json.dumps(data))
        assert cache.get(key) is None  # detected, removed, recomputed by the caller
        assert not entry.exists()
    assert cache.damaged == 3


def test_the_secret_is_private_lasting_and_shared_by_every_cache_on_the_folder(tmp_path):
    _, key, _ = _stored(tmp_path)
    secret = tmp_path / "results" / "secret.key"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(secret.read_bytes()) == 32
    again = ResultCache(tmp_path / "results", 1 << 20)  # a restart, another process
    assert again.get(key).raw_text == "Real text."
    assert len(again) == 1  # the secret is no entry: not counted, evicted or cleared
    assert again.clear() == 1 and secret.exists()
    secret.chmod(0o644)  # made readable by others (a copied folder): narrowed again on the next start
    ResultCache(tmp_path / "results", 1 << 20)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_entries_signed_under_another_installation_s_key_are_not_served(tmp_path):
    _, key, entry = _stored(tmp_path)
    other = tmp_path / "other" / "results"
    other.mkdir(parents=True)
    ResultCache(other, 1 << 20)  # its own secret
    (other / entry.parent.name).mkdir()
    (other / entry.parent.name / entry.name).write_text(entry.read_text())
    assert ResultCache(other, 1 << 20).get(key) is None
