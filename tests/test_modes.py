"""Resolution modes: token count from the processor == vision_tokens() == features from the tiny model.

Also settles GUIDE §1's open question: with the processor defaults, ``crop_to_patches=False`` builds a
768 px global view (145 features) while the processor expands 257 image tokens.
"""

from __future__ import annotations

import io

import pytest

from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2.modes import (
    AUTO_MAX_SIDE,
    MODES,
    apply_max_side,
    num_tiles,
    page_stats,
    resolve_mode,
    scaled_size,
    vision_tokens,
)
from tests.factories import make_pdf

PROMPT = "<image>\nFree OCR."
A4_144DPI = (1190, 1684)


@pytest.fixture(scope="module")
def processor(tiny_checkpoint):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_checkpoint)


@pytest.fixture(scope="module")
def model(tiny_checkpoint):
    import torch
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(tiny_checkpoint, dtype=torch.float32).eval()


def blank(size):
    from PIL import Image

    return Image.new("RGB", size, "white")


def processor_tokens(processor, spec, image):
    enc = processor(
        images=apply_max_side(spec, image), text=PROMPT, return_tensors="pt", **spec.images_kwargs
    )
    return int((enc["input_ids"] == processor.image_token_id).sum()), enc


def features(model, enc):
    import torch

    with torch.inference_mode():
        out = model.get_image_features(
            pixel_values=enc["pixel_values"],
            pixel_values_local=enc.get("pixel_values_local"),
            num_local_patches=enc["num_local_patches"],
        )
    return sum(f.shape[0] for f in out.pooler_output)


def render_pdf_pages(tmp_path, texts):
    import pymupdf
    from PIL import Image

    path = make_pdf(tmp_path / "doc.pdf", texts)
    with pymupdf.open(path) as doc:
        return [Image.open(io.BytesIO(p.get_pixmap(dpi=144).tobytes("png"))).convert("RGB") for p in doc]


@pytest.mark.parametrize("mode", ["global", "default", "default:2", "default:4", "small"])
@pytest.mark.parametrize("size", [(600, 400), A4_144DPI, (2000, 600), (900, 2600)])
def test_processor_tokens_equal_vision_tokens(processor, mode, size):
    spec = resolve_mode(mode, blank(size))
    got, _ = processor_tokens(processor, spec, blank(size))
    assert got == vision_tokens(spec, size)


@pytest.mark.parametrize(
    ("mode", "size", "expected"),
    [
        ("global", A4_144DPI, 257),
        ("default", A4_144DPI, 257 + 6 * 144),
        ("default", (600, 400), 257),  # long side ≤ 768: no tiles
        ("default:2", A4_144DPI, 257 + 2 * 144),
        ("small", A4_144DPI, 145),
    ],
)
def test_features_equal_tokens_for_every_exposed_mode(processor, model, mode, size, expected):
    spec = resolve_mode(mode, blank(size))
    tokens, enc = processor_tokens(processor, spec, blank(size))
    assert tokens == expected == vision_tokens(spec, size)
    assert features(model, enc) == tokens


def test_crop_to_patches_false_with_defaults_mismatches(processor, model):
    """The reported problem is real: 768 px global view (145 features) vs 257 expanded tokens."""
    import torch

    enc = processor(images=blank(A4_144DPI), text=PROMPT, return_tensors="pt", crop_to_patches=False)
    tokens = int((enc["input_ids"] == processor.image_token_id).sum())
    assert tuple(enc["pixel_values"].shape[-2:]) == (768, 768)
    assert tokens == 257
    assert features(model, enc) == 145
    with pytest.raises(Exception, match="do not match"), torch.inference_mode():
        model(**enc)
    # the "global" mode's kwargs fix it (features checked in the test above): 1024 px view, 257 tokens
    spec = resolve_mode("global", blank(A4_144DPI))
    assert spec.images_kwargs["crop_to_patches"] is False
    tokens, enc = processor_tokens(processor, spec, blank(A4_144DPI))
    assert tuple(enc["pixel_values"].shape[-2:]) == (1024, 1024)
    assert tokens == 257


def test_tile_counts_follow_aspect_ratio():
    spec = resolve_mode("default", blank(A4_144DPI))
    assert num_tiles(spec, A4_144DPI) == 6  # 2 × 3 grid for A4 portrait
    assert num_tiles(spec, (2000, 600)) in range(2, 7)
    assert num_tiles(spec, (700, 500)) == 0
    assert num_tiles(resolve_mode("global", blank((10, 10))), A4_144DPI) == 0


def test_auto_picks_by_density_and_size(tmp_path):
    lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt. " * 2
    dense, sparse = render_pdf_pages(tmp_path, ["\n".join([lorem] * 10), "# Annual Report\n\nACME"])
    assert page_stats(dense)["edge_density"] > 5 * page_stats(sparse)["edge_density"]
    d = resolve_mode("auto", dense)
    s = resolve_mode("auto", sparse)
    assert d.name == "default" and "text page" in d.reason
    assert s.name == "global" and "sparse" in s.reason
    small = resolve_mode("auto", blank((900, 700)))
    assert small.name == "global" and "small page" in small.reason
    assert d.max_side is None and s.max_side is None


def test_auto_downscales_huge_scans_consistently(processor):
    import numpy as np
    from PIL import Image

    rows = (np.arange(7000) // 40 % 2).astype(np.uint8)
    cols = (np.arange(5000) // 40 % 2).astype(np.uint8)
    image = Image.fromarray((rows[:, None] ^ cols[None, :]) * 255)  # grey checkerboard: dense edges
    spec = resolve_mode("auto", image)
    assert spec.name == "default"
    assert spec.max_side == AUTO_MAX_SIDE
    assert "downscaled" in spec.reason
    assert scaled_size(spec, image.size) == (3291, 4608)
    assert apply_max_side(spec, image).size == (3291, 4608)
    tokens, _ = processor_tokens(processor, spec, image)
    assert tokens == vision_tokens(spec, image.size) == 257 + 144 * num_tiles(spec, image.size)


def test_explicit_modes_never_downscale():
    for name in ("default", "global", "small"):
        spec = resolve_mode(name, blank((5000, 7000)))
        assert spec.max_side is None and spec.reason == ""
        assert scaled_size(spec, (5000, 7000)) == (5000, 7000)


@pytest.mark.parametrize("bad", ["gundam", "default:7", "default:1", "", "default:x"])
def test_unknown_modes_are_config_errors(bad):
    with pytest.raises(ConfigError, match=r"mode|tile"):
        resolve_mode(bad, blank((100, 100)))


def test_modes_table_describes_the_exposed_modes():
    assert next(iter(MODES)) == "auto"
    assert set(MODES) == {"auto", "default", "global", "small"}
    assert "257" in MODES["global"] and "145" in MODES["small"] and "1121" in MODES["default"]
