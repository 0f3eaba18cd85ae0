"""The background weight read (``weights.py``) gives exactly what transformers' loader gives.

Real parts: safetensors files written by the safetensors library, the tiny DeepSeek-OCR-2 checkpoint
written by ``save_pretrained`` (hub key layout: per-expert tensors merged on load by transformers'
own converters), ``from_pretrained`` as the reference.
"""

from __future__ import annotations

import threading

import pytest

torch = pytest.importorskip("torch")


def _odd_file(path, prefix: str = ""):
    """Tensors of several dtypes with sizes that leave later tensors at odd byte offsets."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    tensors = {
        "a.int8": torch.randint(-128, 127, (7, 3), dtype=torch.int8, generator=g),
        "b.bf16": torch.randn(33, 5, generator=g).to(torch.bfloat16),
        "c.f32": torch.randn(1000, generator=g),
        "d.scalar": torch.tensor(3.5),
        "e.empty": torch.zeros(0, 4),
        "f.i64": torch.arange(11),
        "g.big": torch.randn(257, 129, generator=g),
    }
    tensors = {prefix + k: v for k, v in tensors.items()}
    save_file(tensors, str(path))
    return tensors


def test_header_lists_every_tensor_with_its_bytes(tmp_path):
    from ocr_app.models.deepseek_ocr2.weights import read_header

    ref = _odd_file(tmp_path / "m.safetensors")
    entries = read_header(tmp_path / "m.safetensors")
    assert {e.name for e in entries} == set(ref)
    for e in entries:
        assert e.shape == tuple(ref[e.name].shape)
        assert e.end - e.start == ref[e.name].numel() * ref[e.name].element_size()
    assert [e.start for e in entries] == sorted(e.start for e in entries)


@pytest.mark.parametrize("readers", [1, 3])
@pytest.mark.parametrize("size", [1, 5, 64, 4096, 1 << 20])
def test_staged_read_in_chunks_equals_safetensors(tmp_path, size, readers):
    """The chunked path the GPU uses (pinned buffers there), run on the CPU: every chunk size, tensors
    split across chunks, odd offsets, empty and 0-d tensors, two files, chunks shared out among
    several reader threads."""
    from ocr_app.models.deepseek_ocr2.weights import _bytes_of, _empty, _read_staged, read_header

    ref, files, dst = {}, {}, {}
    for n in ("m1", "m2"):
        path = tmp_path / f"{n}.safetensors"
        ref.update(_odd_file(path, prefix=f"{n}."))
        files[path] = read_header(path)
        dst.update({e.name: _empty(e, torch.device("cpu")) for e in files[path]})
    for x in dst.values():  # poisoned: every element must be written
        x.fill_(float("nan") if x.is_floating_point() else 99)
    flat = {k: _bytes_of(x) for k, x in dst.items() if x.numel()}
    _read_staged(files, flat, "cpu", size=size, readers=readers)
    assert set(dst) == set(ref)
    for name, x in ref.items():
        assert dst[name].dtype == x.dtype and torch.equal(dst[name], x), name


def test_staged_read_raises_a_readers_failure(tmp_path):
    """A file cut short fails in whichever reader meets its end; the call raises that failure and the
    other readers stop taking chunks."""
    from ocr_app.exceptions import ModelLoadError
    from ocr_app.models.deepseek_ocr2.weights import _bytes_of, _empty, _read_staged, read_header

    path = tmp_path / "m.safetensors"
    _odd_file(path)
    entries = read_header(path)
    path.write_bytes(path.read_bytes()[:-100])
    flat = {e.name: _bytes_of(_empty(e, torch.device("cpu"))) for e in entries if e.end > e.start}
    with pytest.raises(ModelLoadError, match="end of file"):
        _read_staged({path: entries}, flat, "cpu", size=64, readers=3)


def test_readers_never_exceed_the_cores(monkeypatch):
    from ocr_app.models.deepseek_ocr2 import weights

    monkeypatch.setattr(weights.os, "cpu_count", lambda: 2)
    assert weights.readers() == 2
    monkeypatch.setattr(weights.os, "cpu_count", lambda: None)
    assert weights.readers() == 1
    monkeypatch.setattr(weights.os, "cpu_count", lambda: 64)
    assert weights.readers() == weights.READERS


def test_chunk_pieces_cover_each_tensor_once():
    from ocr_app.models.deepseek_ocr2.weights import TensorEntry, chunk_pieces

    entries = [TensorEntry("a", "U8", (10,), 8, 18), TensorEntry("z", "U8", (0,), 18, 18),
               TensorEntry("b", "U8", (25,), 18, 43), TensorEntry("c", "U8", (1,), 43, 44)]  # fmt: skip
    covered: dict[str, list[tuple[int, int]]] = {}
    for a, b, pieces in chunk_pieces(entries, 7):
        assert b - a <= 7
        for name, at, off, n in pieces:
            assert off >= 0 and off + n <= b - a
            covered.setdefault(name, []).append((at, n))
    for e in entries:
        if e.end == e.start:
            assert e.name not in covered
            continue
        spans = sorted(covered[e.name])
        assert spans[0][0] == 0 and sum(n for _, n in spans) == e.end - e.start
        assert all(spans[i][0] + spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))


def test_prefetch_runs_in_a_thread_and_reports_failures(tmp_path):
    from ocr_app.exceptions import ModelLoadError
    from ocr_app.models.deepseek_ocr2.weights import WeightPrefetch

    ref = _odd_file(tmp_path / "m.safetensors")
    seen = []
    pre = WeightPrefetch(
        [tmp_path / "m.safetensors"], "cpu", after=lambda: seen.append(threading.current_thread().name)
    )
    got = pre.result()
    assert seen == ["ocr-weights"] and pre.seconds is not None
    assert all(torch.equal(got[k], v) for k, v in ref.items())

    (tmp_path / "cut.safetensors").write_bytes((tmp_path / "m.safetensors").read_bytes()[:-100])
    with pytest.raises(ModelLoadError, match="end of file"):
        WeightPrefetch([tmp_path / "cut.safetensors"], "cpu").result()


def test_fast_load_matches_from_pretrained(random_checkpoint):
    """Same parameter and buffer names, dtypes (the router stays float32 under bf16) and values, same
    attention implementation and generation config, and the same logits on one input."""
    from transformers import AutoModelForImageTextToText

    from ocr_app.models.deepseek_ocr2.loading import load_model

    for dtype in (torch.float32, torch.bfloat16):
        ref = AutoModelForImageTextToText.from_pretrained(random_checkpoint, dtype=dtype).eval()
        fast, _ = load_model(str(random_checkpoint), torch.device("cpu"), dtype, prefetch=True)
        rs, fs = ref.state_dict(), fast.state_dict()
        assert list(fs) == list(rs)
        for k, v in rs.items():
            assert fs[k].dtype == v.dtype and fs[k].device.type == "cpu", k
            assert torch.equal(fs[k], v), k
        assert dict(fast.named_buffers()).keys() == dict(ref.named_buffers()).keys()
        for k, v in ref.named_buffers():
            assert torch.equal(dict(fast.named_buffers())[k], v), k
        assert fast.config._attn_implementation == ref.config._attn_implementation
        assert fast.generation_config.to_dict() == ref.generation_config.to_dict()
        assert "read_s" in fast.ocr_load_breakdown and "import_s" in fast.ocr_load_breakdown
        ids = torch.tensor([[0, 5, 9, 13]])
        with torch.inference_mode():
            assert torch.equal(fast(input_ids=ids).logits, ref(input_ids=ids).logits)


def test_prefetch_off_goes_through_from_pretrained(random_checkpoint, monkeypatch):
    from ocr_app.models.deepseek_ocr2 import weights
    from ocr_app.models.deepseek_ocr2.loading import load_model

    monkeypatch.setattr(weights, "WeightPrefetch", None)  # any use would fail
    model, _ = load_model(str(random_checkpoint), torch.device("cpu"), torch.float32, prefetch=False)
    assert "read_s" not in model.ocr_load_breakdown
