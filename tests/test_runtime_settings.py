"""Runtime settings come from DEEPSEEK_OCR_* environment variables and reach the runtime objects."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ocr_app.runtime.result_cache import ResultCache
from ocr_app.runtime.vision_cache import VisionFeatureCache
from ocr_app.settings import load_settings

MIB = 1024**2


def test_runtime_settings_from_env(monkeypatch, tmp_path):
    env = {
        "DEEPSEEK_OCR_CACHE_ENABLED": "false",
        "DEEPSEEK_OCR_VISION_CACHE_MB": "7",
        "DEEPSEEK_OCR_VISION_CACHE_DISK": "1",
        "DEEPSEEK_OCR_VISION_CACHE_DISK_MB": "9",
        "DEEPSEEK_OCR_RESULT_CACHE_MB": "5",
        "DEEPSEEK_OCR_IDLE_UNLOAD_S": "42.5",
        "DEEPSEEK_OCR_MEMORY_TOLERANCE_MB": "128",
        "DEEPSEEK_OCR_OOM_RECOVERY": "no",
        "DEEPSEEK_OCR_PRELOAD": "true",
        "DEEPSEEK_OCR_CACHE_DIR": str(tmp_path),
        "DEEPSEEK_OCR_DTYPE": "bf16",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    s = load_settings()
    assert (s.cache_enabled, s.vision_cache_mb, s.vision_cache_disk, s.vision_cache_disk_mb) == (
        False,
        7,
        True,
        9,
    )
    assert (s.result_cache_mb, s.idle_unload_s, s.memory_tolerance_mb) == (5, 42.5, 128)
    assert (s.oom_recovery, s.preload, s.dtype) == (False, True, "bf16")
    vc = VisionFeatureCache.from_settings(s)
    assert (vc.max_bytes, vc.disk_max_bytes, vc.disk_dir) == (7 * MIB, 9 * MIB, tmp_path / "vision")
    rc = ResultCache.from_settings(s)
    assert (rc.max_bytes, rc.directory) == (5 * MIB, tmp_path / "results")


def test_explicit_values_beat_env_and_bad_values_are_rejected(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_OCR_IDLE_UNLOAD_S", "10")
    assert load_settings(idle_unload_s=3).idle_unload_s == 3
    monkeypatch.setenv("DEEPSEEK_OCR_VISION_CACHE_MB", "-1")
    with pytest.raises(ValidationError, match="vision_cache_mb"):
        load_settings()
