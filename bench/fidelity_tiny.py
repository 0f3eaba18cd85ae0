"""Quantisation fidelity on TRAINED weights: does each precision preset still read the sample pages exactly?

The trained tiny DeepSeek-OCR-2 (``ocr_app.models.deepseek_ocr2.tiny_train``) reproduces the grounded
transcripts of eight sample pages token for token in fp32. Here every preset reads the same pages through
the engine (greedy, n-gram guard on) and is scored against those transcripts:

* ``exact``: pages whose text equals the transcript;
* ``end``: pages that stopped at EOS;
* ``token agreement``: tokens before the first divergence, summed over pages / transcript tokens;
* ``mixed-rtn``: the ``mixed`` preset with AWQ switched off (plain round-to-nearest 4-bit), to compare.

It is the closest proxy for real-weight fidelity available without the real weights (CPU, tiny model).

    python bench/fidelity_tiny.py [--presets fp32,bf16,fp16,int8,mixed,mixed-rtn] [--device cpu] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RTN = "mixed-rtn"


def _requests():
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, PROMPT, render_pages
    from ocr_app.schema import PageImage, PageRequest

    return [
        PageRequest(
            page=PageImage(image=img, index=i, source=f"{spec.name}.png"),
            prompt=resolve_prompt(PROMPT),
            mode=spec.mode,
            max_new_tokens=256,
            use_cache=False,
        )
        for i, (spec, img) in enumerate(zip(PAGES, render_pages(), strict=True))
    ]


def _engine(model_dir: Path, preset: str, device: str):
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.settings import load_settings

    dtype = "bf16" if preset == RTN else preset
    engine = DeepSeekOcr2Engine(load_settings(model=str(model_dir), device=device, dtype=dtype), batch_size=8)
    engine.load()
    if preset == RTN:  # the mixed recipe without AWQ: round-to-nearest 4-bit decoder, INT8 vision
        from dataclasses import replace

        from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
        from ocr_app.quant.pipeline import quantize_loaded
        from ocr_app.quant.presets import get_preset

        rtn = replace(get_preset("mixed"), name=RTN, awq=False)
        quantize_loaded(engine.model, engine.processor, rtn, adapter=ADAPTER)
    return engine


def score(preset: str, model_dir: Path, device: str) -> dict:
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES

    engine = _engine(model_dir, preset, device)
    try:
        tok = engine.processor.tokenizer
        t0 = time.perf_counter()
        outs = engine.predict_batch(_requests())
        seconds = time.perf_counter() - t0
    finally:
        engine.unload()
    agree = total = 0
    exact = end = 0
    for spec, out in zip(PAGES, outs, strict=True):
        want = tok.encode(spec.transcript(), add_special_tokens=False)
        got = tok.encode(out.raw_text, add_special_tokens=False)
        k = 0
        while k < min(len(want), len(got)) and want[k] == got[k]:
            k += 1
        agree += k
        total += len(want)
        exact += out.raw_text == spec.transcript()
        end += out.stop_reason.value == "end"
    return {
        "preset": preset,
        "pages": len(PAGES),
        "exact": exact,
        "end": end,
        "token_agreement": round(agree / total, 4),
        "tokens": total,
        "seconds": round(seconds, 1),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| preset | exact pages | stopped at EOS | token agreement |",
        "|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['preset']} | error: {r['error']} | | |")
            continue
        lines.append(
            f"| {r['preset']} | {r['exact']}/{r['pages']} | {r['end']}/{r['pages']} | "
            f"{100 * r['token_agreement']:.1f} % of {r['tokens']} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", default="fp32,bf16,fp16,int8,mixed,mixed-rtn")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--checkpoint", default=None, help="trained tiny checkpoint dir (default: build/cached)")
    ap.add_argument("--out", default="fidelity_tiny.json")
    args = ap.parse_args()
    if args.checkpoint:
        model_dir = Path(args.checkpoint)
    else:
        from ocr_app.models.deepseek_ocr2.tiny_train import build_trained_checkpoint

        model_dir = build_trained_checkpoint()
    rows = []
    for preset in args.presets.split(","):
        try:
            rows.append(score(preset, model_dir, args.device))
        except Exception as exc:  # report and go on with the next preset
            import traceback

            traceback.print_exc()
            rows.append({"preset": preset, "error": f"{type(exc).__name__}: {exc}"})
        print(json.dumps(rows[-1]), flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
