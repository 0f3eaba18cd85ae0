"""Throughput of the product path on 1 GPU vs 2 GPUs (one DeepSeek-OCR-2 engine per GPU).

Builds a full-size random-weight DeepSeek-OCR-2 checkpoint on disk (real architecture and sizes,
N(0, 0.02) weights, bf16), writes a 64-page document (multi-page TIFF of A4 pages at 144 DPI) and
converts it with the product path — registry →
``Converter`` → (device pool →) model manager → engine with the graph decoder — first with
``device=cuda:0``, then with ``device=cuda:0,cuda:1``. Every page decodes exactly ``--new-tokens``
tokens (random weights practically never emit EOS, and the loop stop needs ≥ 512 tokens; the script
checks it). Each run is warmed up first on the same document with a few tokens per page (model load,
CUDA-graph capture), then timed. Both runs hand the converter the whole document at once
(the converter streams the whole document), so they differ only in the number of GPUs.

    python bench/bench_multi_gpu.py [--pages 64] [--new-tokens 256] [--out multi_gpu.json]
    python bench/bench_multi_gpu.py --tiny     # CPU smoke run: tiny checkpoint, "cpu" vs "cpu,cpu"
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


def build_full_checkpoint(out: Path) -> Path:
    """The real architecture at full size with random weights, saved like a downloaded checkpoint, with the
    real tokenizer and processor (taken from a tiny checkpoint built by the project)."""
    import shutil

    import torch
    from transformers import AutoConfig

    from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model
    from ocr_app.models.deepseek_ocr2.tiny import build_tiny_checkpoint

    out.mkdir(parents=True, exist_ok=True)
    tiny = build_tiny_checkpoint(out.parent / "tiny-for-tokenizer")
    tc = AutoConfig.from_pretrained(tiny)
    t = tc.text_config
    text = {"bos_token_id": t.bos_token_id, "eos_token_id": t.eos_token_id, "pad_token_id": t.pad_token_id}
    cfg = config_dict("full", text=text, image_token_id=tc.image_token_id)
    t0 = time.perf_counter()
    model = random_model(cfg, "cuda:0", torch.bfloat16)
    for key, value in text.items():
        setattr(model.generation_config, key, value)
    model.save_pretrained(out)
    for f in Path(tiny).iterdir():  # tokenizer and processor
        skip = f.name.endswith((".safetensors", ".bin")) or f.name in (
            "config.json",
            "generation_config.json",
        )
        if f.is_file() and not skip:
            shutil.copy(f, out / f.name)
    params = sum(p.numel() for p in model.parameters())
    del model
    torch.cuda.empty_cache()
    log(f"full-size checkpoint ({params / 1e9:.3f} B parameters) written in {time.perf_counter() - t0:.0f} s")
    return out


def make_document(path: Path, pages: int) -> Path:
    """A multi-page TIFF of A4 pages at 144 DPI (no PDF library needed on the GPU box)."""
    from PIL import Image, ImageDraw

    frames = []
    for i in range(pages):
        img = Image.new("RGB", (1191, 1684), "white")
        draw = ImageDraw.Draw(img)
        draw.text((144, 144), f"Report page {i + 1}", fill="black", font_size=40)
        for line in range(40):
            draw.text((144, 220 + 34 * line), f"Line {line + 1} of page {i + 1}: " + "lorem ipsum " * 6,
                      fill="black", font_size=20)  # fmt: skip
        frames.append(img)
    frames[0].save(path, save_all=True, append_images=frames[1:], compression="tiff_deflate")
    return path


def run(
    model_dir: Path, device: str, document: Path, out: Path, new_tokens: int, pages: int, tiny: bool
) -> dict:
    """Warm up, then time one conversion of ``document`` through the product path on ``device``."""
    from ocr_app.convert import Converter, ConvertOptions
    from ocr_app.engines.pool import read_by
    from ocr_app.settings import load_settings
    from ocr_app.stack import build_engines

    settings = load_settings(
        model=str(model_dir),
        device=device,
        engine="deepseek",
        idle_unload_s=0,
        cache_enabled=False,  # no result cache: the timed run must decode every page
        dtype="fp32" if tiny else "bf16",
        tile_max_side=0,
    )
    engines = build_engines(settings)
    converter = Converter(engines, settings)
    opts = dict(mode="global" if tiny else "default", formats=frozenset({"json"}))
    try:
        t0 = time.perf_counter()
        converter.convert([document], out / "warmup", ConvertOptions(max_new_tokens=4, **opts))
        warm = time.perf_counter() - t0
        _sync()
        t0 = time.perf_counter()
        [doc] = converter.convert(
            [document], out / "timed", ConvertOptions(max_new_tokens=new_tokens, **opts)
        )
        _sync()
        seconds = time.perf_counter() - t0
    finally:
        engines.unload_all()
    tokens = [p.num_tokens for p in doc.pages]
    per_device: dict[str, int] = {}
    for p in doc.pages:
        label = read_by(p.notes) or device
        per_device[label] = per_device.get(label, 0) + 1
    res = {
        "device": device,
        "pages": len(doc.pages),
        "failed_pages": sum(1 for p in doc.pages if p.error),
        "seconds": round(seconds, 3),
        "warmup_seconds": round(warm, 1),
        "pages_per_s": round(len(doc.pages) / seconds, 3),
        "tokens": sum(tokens),
        "tokens_per_s": round(sum(tokens) / seconds, 1),
        "all_pages_fixed_tokens": all(t == new_tokens for t in tokens),
        "pages_per_device": per_device,
    }
    log(json.dumps(res))
    return res


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="CPU smoke run with the tiny checkpoint")
    ap.add_argument("--pages", type=int, default=None, help="pages in the document [64; tiny: 4]")
    ap.add_argument("--new-tokens", type=int, default=None, help="tokens decoded per page [256; tiny: 4]")
    ap.add_argument("--checkpoint", type=Path, default=None, help="reuse a checkpoint directory")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args()
    pages = args.pages or (4 if args.tiny else 64)
    new_tokens = args.new_tokens or (4 if args.tiny else 256)

    import torch

    if not args.tiny and torch.cuda.device_count() < 2:
        sys.exit(f"needs 2 CUDA GPUs, found {torch.cuda.device_count()} (use --tiny for the CPU smoke run)")
    one, two = ("cpu", "cpu,cpu") if args.tiny else ("cuda:0", "cuda:0,cuda:1")
    with tempfile.TemporaryDirectory(prefix="bench-multi-gpu-") as tmp:
        work = Path(tmp)
        if args.checkpoint is not None:
            model_dir = args.checkpoint
        elif args.tiny:
            from ocr_app.models.deepseek_ocr2.tiny import build_tiny_checkpoint

            model_dir = build_tiny_checkpoint(work / "tiny")
        else:
            model_dir = build_full_checkpoint(work / "full")
        doc = make_document(work / "doc.tiff", pages)
        single = run(model_dir, one, doc, work / "one", new_tokens, pages, args.tiny)
        double = run(model_dir, two, doc, work / "two", new_tokens, pages, args.tiny)
    ratio = double["pages_per_s"] / single["pages_per_s"]
    result = {
        "pages": pages,
        "new_tokens": new_tokens,
        "tiny": args.tiny,
        "torch": torch.__version__,
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "one_gpu": single,
        "two_gpus": double,
        "ratio": round(ratio, 3),
    }
    print("| run | pages/s | tokens/s | seconds | pages per device |")
    print("|---|---|---|---|---|")
    for name, r in (("1 GPU", single), ("2 GPUs", double)):
        print(f"| {name} ({r['device']}) | {r['pages_per_s']} | {r['tokens_per_s']} | {r['seconds']} | "
              f"{r['pages_per_device']} |")  # fmt: skip
    print(f"\n2 GPUs / 1 GPU throughput: {ratio:.2f}×")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
