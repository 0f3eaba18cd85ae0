"""SAM's convolutions as matrix products (``sam_convs``) and the vision pass's attention backends.

References are the modules' own ``nn.Conv2d`` forwards in float32 on the CPU (the matmul forwards are
applied with ``any_device``); the whole SAM encoder of the tiny config is compared too, and the full
vision features of the tiny model (SAM + encoder + projector) with every convolution replaced.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ocr_app.models.deepseek_ocr2 import sam_convs  # noqa: E402
from ocr_app.models.deepseek_ocr2.attention_backends import without_cudnn_attention  # noqa: E402
from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model  # noqa: E402

TOL = {"rtol": 1e-5, "atol": 1e-5}


@pytest.fixture(scope="module")
def model():
    return random_model(config_dict("tiny"), torch.device("cpu"), torch.float32, seed=0).eval()


@pytest.mark.parametrize(
    ("cin", "cout", "kernel", "stride", "padding", "bias", "side"),
    [
        (8, 6, 1, 1, 0, False, 9),
        (6, 6, 3, 1, 1, False, 9),
        (6, 10, 3, 2, 1, False, 9),
        (4, 5, 3, 2, 1, True, 8),
    ],
)
def test_conv_forward_matches_conv2d(monkeypatch, cin, cout, kernel, stride, padding, bias, side):
    conv = torch.nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=bias)
    x = torch.randn(5, cin, side, side, generator=torch.Generator().manual_seed(cin + side))
    with torch.inference_mode():
        ref = conv(x)
        # a block limit of two views' columns: the 3x3 path runs in three chunks and concatenates them
        monkeypatch.setattr(sam_convs, "IM2COL_BYTES", 2 * cin * kernel * kernel * ref.shape[-1] ** 2 * 4)
        out = sam_convs.conv_forward(conv, x)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, **TOL)


def test_patch_embedding_matches_its_convolution(model):
    embed = model.model.vision_tower.sam_encoder.patch_embed
    x = torch.randn(3, 3, 64, 96, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        ref = embed(x)
        out = sam_convs.patch_embed_forward(embed, x)
    assert out.shape == ref.shape == (3, 64 // 16, 96 // 16, embed.projection.out_channels)
    torch.testing.assert_close(out, ref, **TOL)


def test_matmul_convs_on_the_vision_features_and_back(model):
    g = torch.Generator().manual_seed(5)
    pixels = torch.randn(2, 3, 1024, 1024, generator=g) * 0.5
    sam = model.model.vision_tower.sam_encoder
    with torch.inference_mode():
        ref = sam(pixels).last_hidden_state
        assert sam_convs.matmul_convs(model) == 0  # a CPU model keeps cuDNN-free torch convolutions
        changed = sam_convs.matmul_convs(model, any_device=True)
        out = sam(pixels).last_hidden_state
    # the patch embedding, the neck's 1x1 and 3x3 and the two downsampling 3x3 convolutions
    assert changed == 5
    assert "forward" in sam.patch_embed.__dict__ and "forward" in sam.neck.conv2.__dict__
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    sam_convs.matmul_convs(model, enabled=False)
    assert "forward" not in sam.patch_embed.__dict__ and "forward" not in sam.proj.conv1.__dict__
    assert sam_convs.sam_encoders(model) == [sam]


def test_without_cudnn_attention_scopes_the_flag_to_cuda_work():
    before = torch.backends.cuda.cudnn_sdp_enabled()
    with without_cudnn_attention(torch.device("cpu")):
        assert torch.backends.cuda.cudnn_sdp_enabled() == before  # off CUDA: nothing changes
    with without_cudnn_attention(torch.device("cuda", 0)):  # only flags are set: no GPU needed
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled() == before


def test_matmul_convs_find_the_native_models_sam_too(trained_checkpoint):
    """The wing's own model (``native_vision``) has the same SAM layout: its five convolutions are
    found and replaced, and its SAM output is unchanged."""
    from ocr_app.models.deepseek_ocr2.native_weights import NativeLoad

    model = NativeLoad(trained_checkpoint, "cpu", torch.float32).result().eval()
    [sam] = sam_convs.sam_encoders(model)
    pixels = torch.randn(1, 3, 1024, 1024, generator=torch.Generator().manual_seed(7)) * 0.5
    with torch.inference_mode():
        ref = sam(pixels)
        ref = getattr(ref, "last_hidden_state", ref)
        assert sam_convs.matmul_convs(model, any_device=True) == 5
        out = sam(pixels)
        out = getattr(out, "last_hidden_state", out)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
