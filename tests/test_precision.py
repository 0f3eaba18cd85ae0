"""One precision resolver, and caches keyed on what it resolved (never on the requested ``auto``)."""

from __future__ import annotations

import pytest
import torch

from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2 import loading, precision
from ocr_app.models.deepseek_ocr2.precision import GIB, canonical_precision, resolve_precision


@pytest.mark.parametrize(
    ("requested", "kind", "bf16", "free", "budget", "expected"),
    [
        ("auto", "cpu", True, None, None, "fp32"),
        ("auto", "mps", True, None, None, "fp32"),
        ("auto", "cuda", True, 40 * GIB, None, "bf16"),
        ("auto", "cuda", True, 7 * GIB, None, "int8"),
        ("auto", "cuda", True, 4 * GIB, None, "mixed"),
        ("auto", "cuda", False, 12 * GIB, None, "fp16"),
        ("auto", "cuda", False, 4 * GIB, None, "mixed"),
        # the budget caps what is free: a 4 GiB budget on an empty 140 GiB GPU plans like a 4 GiB GPU
        ("auto", "cuda", True, 140 * GIB, 4 * GIB, "mixed"),
        ("auto", "cuda", True, None, 8 * GIB, "int8"),
        ("auto", "cuda", True, 3 * GIB, 80 * GIB, "mixed"),
        # an explicit precision is kept (aliases mapped), whatever the device says
        ("BFloat16", "cpu", True, None, None, "bf16"),
        ("half", "cuda", True, 1 * GIB, None, "fp16"),
        ("awq", "cuda", True, 80 * GIB, None, "mixed"),
    ],
)
def test_resolver(requested, kind, bf16, free, budget, expected):
    got = resolve_precision(
        requested, device_kind=kind, bf16_supported=bf16, free_bytes=free, budget_bytes=budget
    )
    assert got == expected


def test_unknown_precision_is_a_config_error_everywhere():
    with pytest.raises(ConfigError, match="Unknown dtype 'fp8'"):
        canonical_precision("fp8")
    with pytest.raises(ConfigError, match="Unknown dtype"):
        loading.resolve_dtype("fp8", torch.device("cpu"))


def test_engine_and_cache_predictor_use_the_same_resolver(monkeypatch):
    """The loader and the no-torch predictor both call ``precision.resolve_precision``."""
    from ocr_app.settings import Settings
    from ocr_app.stack import predict_precision

    real, seen = precision.resolve_precision, []

    def spy(requested, **facts):
        answer = real(requested, **facts)
        seen.append((requested, facts, answer))
        return answer

    monkeypatch.setattr(precision, "resolve_precision", spy)
    settings = Settings(device="cpu", dtype="auto", gpu_memory_gib=3.0)
    predicted = predict_precision(settings)
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine

    loaded = DeepSeekOcr2Engine(settings).resolve_precision(torch.device("cpu"))
    assert [answer for *_, answer in seen] == [predicted, loaded]  # each one is the resolver's answer
    assert [(r, f["device_kind"], f["budget_bytes"]) for r, f, _ in seen] == [("auto", "cpu", 3 * GIB)] * 2
    alone = real("auto", device_kind="cpu", bf16_supported=True, free_bytes=None, budget_bytes=3 * GIB)
    assert predicted == loaded == alone


def test_auto_resolving_to_bf16_then_mixed_is_not_served_from_the_other_cache(tiny_checkpoint, monkeypatch):
    """The same page under ``auto``: resolved to bf16, then (free memory changed) to mixed, then bf16.

    The mixed run must miss both the result cache and the vision-feature cache; the third run is a
    result-cache hit again. ``mixed`` loads through a registered backend that computes in bfloat16 —
    the very case where keying on the torch dtype would collide.
    """
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
    from ocr_app.schema import PageImage, PageRequest
    from ocr_app.settings import Settings
    from ocr_app.stack import build_engines
    from tests.factories import make_image

    class Bf16Backend:
        def compute_dtype(self, device):
            return torch.bfloat16

        def load_model(self, model_dir, device, dtype):
            return AutoModelForImageTextToText.from_pretrained(model_dir, dtype=dtype).to(device)

    monkeypatch.setattr(loading, "_QUANT_BACKENDS", {"mixed": Bf16Backend()})
    world = {"auto": "bf16"}  # what the resolver answers for auto right now
    real = precision.resolve_precision
    monkeypatch.setattr(
        precision,
        "resolve_precision",
        lambda requested, **facts: world["auto"] if requested == "auto" else real(requested, **facts),
    )
    settings = Settings(
        model=str(tiny_checkpoint), device="cpu", engine="deepseek", dtype="auto", max_new_tokens=4
    )
    engines = build_engines(settings)
    deepseek = engines.get("deepseek")
    from PIL import Image

    image = Image.open(make_image(settings.cache_dir / "page.png", size=(320, 240))).convert("RGB")
    req = PageRequest(
        page=PageImage(image=image, index=0, source="page.png"), prompt=resolve_prompt("free"), mode="small"
    )
    try:
        runs = []
        for resolved in ("bf16", "mixed", "bf16"):
            world["auto"] = resolved
            out = deepseek.predict_batch([req])[0]
            runs.append((deepseek.describe().get("precision"), list(out.notes)))
            deepseek.unload()
    finally:
        engines.unload_all()
    (p1, n1), (p2, n2), (_, n3) = runs
    assert p1 == "bf16" and p2 == "mixed"
    assert "result cache hit" not in n1
    assert "result cache hit" not in n2 and "vision features from cache" not in n2
    assert "result cache hit" in n3
