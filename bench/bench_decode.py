"""Decode benchmark: transformers' default ``generate`` vs the project's graph decoder, in one run.

Full-size DeepSeek-OCR-2 with random weights (GUIDE §1 config; nothing is downloaded), one synthetic
A4 page in the default mode (1121 vision tokens + 12 prompt tokens), bf16, grouped_mm experts.
Random weights never emit EOS reliably, so EOS is DISABLED on both sides and every page decodes exactly
``--new`` tokens. Our decoder runs with the production no-repeat guard (n=30, window=90), driven the
way the engine drives it: every page submitted at once to a ``DecodeScheduler`` (futures), which admits
them together before its first step (the one-step profile alone uses a bare ``PageDecoder``).

Measured per configuration: decode tok/s (aggregate over pages, first token excluded), time to first
token (vision + prefill of one page), seconds per page at ``--new`` tokens (prefill + decode, wall),
peak allocated VRAM. ``generate`` at 16/32 pages decodes ``--gen-new-multi`` tokens only (it is ~75
tok/s whatever the batch, GUIDE §2) and its seconds/page are extrapolated from that rate (marked).
Checks: our tokens vs ``generate`` with the same guard for ``--check`` tokens (bf16, and fp32 where the
full model is exact), and eager vs graph replay of our step (must be identical).

usage (device tool): python bench/bench_decode.py --pages 1,16,32 --new 1000 --presets bf16
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model

logger = logging.getLogger("bench_decode")

IMAGE_TOKEN_ID = 128815  # the real tokenizer's <image> (no tokenizer on the GPU box; SOURCES id table)
FULL = config_dict("full", image_token_id=IMAGE_TOKEN_ID)
EXEMPT = (128821, 128822)  # stand-ins for <td>, </td>: the random model has no tokenizer
GIB = 1024**3
DEV = "cuda"
# --tiny: CPU smoke test of this script (same code paths, tiny widths, the full vocabulary and ids)
TINY = config_dict("tiny", image_token_id=IMAGE_TOKEN_ID)
CONFIG = FULL


def log(*a):
    print(*a, flush=True)


def sync():
    import torch

    if DEV == "cuda":
        torch.cuda.synchronize()


def reset_peak():
    import torch

    gc.collect()
    if DEV == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gib():
    import torch

    return round(torch.cuda.max_memory_allocated() / GIB, 3) if DEV == "cuda" else 0.0


def build_model(dtype, experts="grouped_mm"):
    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention

    model = random_model(CONFIG, DEV, dtype, experts=experts)
    bound_sam_attention(model)  # as the product's loader does
    model.generation_config.eos_token_id = None  # random weights: fixed lengths, see module doc
    return model


def synthetic_page_features():
    """One synthetic A4 page of text lines through the real image processor (default mode: a global view
    and 6 tiles); also the vision bench's page."""
    from PIL import Image, ImageDraw
    from transformers.models.deepseek_ocr2.image_processing_deepseek_ocr2 import DeepseekOcr2ImageProcessor

    img = Image.new("RGB", (1654, 2339), "white")
    d = ImageDraw.Draw(img)
    for i, y in enumerate(range(80, 2260, 34)):
        d.text((100, y), f"Line {i}: The quick brown fox jumps over the lazy dog 0123456789", fill="black")
    return DeepseekOcr2ImageProcessor()(
        [img], crop_to_patches=True, min_patches=2, max_patches=6, return_tensors="pt"
    )


def page_inputs():
    """One synthetic A4 page (``synthetic_page_features``) as prompt ids and pixel inputs."""
    feats = synthetic_page_features()
    n_local = [int(x) for x in feats["num_local_patches"]]
    ntok = 256 + 144 * n_local[0] + 1
    ids = [0] + [FULL["image_token_id"]] * ntok + list(range(100, 112))
    return ids, {
        "pixel_values": feats["pixel_values"],
        "pixel_values_local": feats.get("pixel_values_local"),
        "num_local_patches": n_local,
    }


def to_dev(px, n, dtype):
    import torch

    out = {"num_local_patches": px["num_local_patches"] * n}
    out["pixel_values"] = torch.cat([px["pixel_values"]] * n).to(DEV, dtype)
    if px["pixel_values_local"] is not None:
        out["pixel_values_local"] = torch.cat([px["pixel_values_local"]] * n).to(DEV, dtype)
    return out


def run_generate(model, ids, px, pages, new, dtype, guard=None):
    import torch
    from transformers import LogitsProcessorList

    inp = to_dev(px, pages, dtype)
    t = torch.tensor([ids] * pages, device=DEV)
    kw = dict(input_ids=t, attention_mask=torch.ones_like(t), do_sample=False, eos_token_id=None, **inp)
    procs = LogitsProcessorList([guard] if guard is not None else [])
    with torch.inference_mode():
        model.generate(**kw, max_new_tokens=4, logits_processor=procs)  # warm-up
        reset_peak()
        sync()
        t0 = time.perf_counter()
        model.generate(**kw, max_new_tokens=1, logits_processor=procs)
        sync()
        ttft = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = model.generate(**kw, max_new_tokens=new, logits_processor=procs)
        sync()
        total = time.perf_counter() - t0
    n = out.shape[1] - t.shape[1]
    tok_s = pages * (n - 1) / max(total - ttft, 1e-9)
    return {
        "pages": pages,
        "new_tokens": n,
        "ttft_s": round(ttft, 4),
        "decode_tok_s": round(tok_s, 1),
        "s_per_page": round(total / pages, 3),
        "peak_gib": peak_gib(),
        "tokens": out[0, t.shape[1] :].tolist(),
    }


def decoder_options(graphs="auto", guard=True, prefill_batch=4, kernels="auto"):
    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecoderOptions

    return DecoderOptions(
        guard=GuardSpec(30, 90, EXEMPT) if guard else GuardSpec(0, 0),
        loop=LoopSpec(max_period=0),  # fixed lengths: no early stop
        eos_ids=(),
        graphs=graphs,
        prefill_batch=prefill_batch,
        kernels=kernels,
    )


def make_scheduler(model, pages, max_len, **options):
    """The product's decode path (the scheduler the engine feeds), ``pages`` slots of ``max_len`` tokens."""
    from ocr_app.models.deepseek_ocr2.decoding.scheduler import DecodeScheduler

    return DecodeScheduler(model, decoder_options(**options), max_slots=pages, context=max_len)


def make_decoder(model, pages, max_len, **options):
    """A bare decoder, for the one-step profile (graph replay vs the eager step)."""
    from ocr_app.models.deepseek_ocr2.decoding.decoder import PageDecoder

    return PageDecoder(model, capacity=pages, max_len=max_len, options=decoder_options(**options))


def ours_once(sched, ids, px, pages, new, dtype):
    """Submit ``pages`` copies of the page to the scheduler and wait for all; (prefill s, decode s,
    results). All pages are queued at once, so the scheduler admits them together before its first step:
    prefill = submit → the last page's first token, decode = from there to the end."""
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeRequest

    reqs = [DecodeRequest(ids, to_dev(px, 1, dtype), new, key=i) for i in range(pages)]
    sync()
    t0 = time.perf_counter()
    res = [f.result() for f in sched.submit_many(reqs)]
    sync()
    total = time.perf_counter() - t0
    decode = min(r.decode_s for r in res)  # the last page admitted has the shortest first-token → end
    return total - decode, decode, res


def run_ours(model, ids, px, pages, new, dtype, kernels="auto"):
    reset_peak()
    max_len = -(-(len(ids) + new) // 256) * 256
    sched = make_scheduler(model, pages, max_len, kernels=kernels)
    t0 = time.perf_counter()
    ours_once(sched, ids, px, pages, new, dtype)  # warm-up: captures the graphs this workload uses
    warm = time.perf_counter() - t0
    peak_fresh = peak_gib()  # a fresh decoder: vision pass first, then K/V buffers, prefill, captures
    reset_peak()
    pre, dt, res = ours_once(sched, ids, px, pages, new, dtype)  # warm decoder: K/V + graphs already held
    n = len(res[0].tokens)
    out = {
        "pages": pages,
        "new_tokens": n,
        "ttft_s": round(res[0].first_token_s, 4),
        "prefill_all_s": round(pre, 3),
        "decode_tok_s": round(pages * (n - 1) / dt, 1),
        "s_per_page": round((pre + dt) / pages, 3),
        "peak_gib": peak_fresh,
        "peak_warm_gib": peak_gib(),
        "graphs": len(sched.describe()["graphs"]),
        "warmup_incl_capture_s": round(warm, 2),
        "tokens": res[0].tokens,
    }
    sched.close()
    del sched
    return out


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def check_tokens(model, ids, px, n, dtype, label):
    """Ours (graph and eager) vs generate with the same guard, ``n`` tokens, one page."""
    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, NoRepeatNGramGuard

    ref = run_generate(
        model,
        ids,
        px,
        1,
        n,
        dtype,
        guard=NoRepeatNGramGuard(GuardSpec(30, 90, EXEMPT), prompt_length=len(ids)),
    )["tokens"]
    max_len = -(-(len(ids) + n) // 256) * 256
    out = {}
    runs = [("fused", "on"), ("fused", "off"), ("torch", "on")] if DEV == "cuda" else [("torch", "off")]
    for kern, mode in runs:
        sched = make_scheduler(
            model, 1, max_len, graphs=mode, kernels="triton" if kern == "fused" else "torch"
        )
        _, _, res = ours_once(sched, ids, px, 1, n, dtype)
        out[(kern, mode)] = res[0].tokens
        sched.close()
    r = {"tokens": n}
    for (kern, mode), toks in out.items():
        r[f"{kern}_{'graph' if mode == 'on' else 'eager'}_vs_generate_first_diff"] = first_diff(toks, ref)
    if ("fused", "off") in out:
        r["fused_graph_vs_eager_identical"] = out[("fused", "on")] == out[("fused", "off")]
    log(f"check {label}:", json.dumps(r))
    return r


def profile_steps(model, ids, px, pages, dtype, steps=8, kernels="auto"):
    """Kernel-time breakdown of our eager step (same kernels the graph replays) + graph step time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    max_len = -(-(len(ids) + 64) // 256) * 256
    dec = make_decoder(model, pages, max_len, kernels=kernels)
    with torch.inference_mode():
        from ocr_app.models.deepseek_ocr2.decoding.decoder import DecodeRequest, length_bucket

        dec.admit([DecodeRequest(ids, to_dev(px, 1, dtype), 60, key=i) for i in range(pages)])
        lb = length_bucket(len(ids) + 20, 256, dec.max_len)
        g = dec.graphs.graph(dec.step, pages, lb)
        for _ in range(3):
            g.replay()
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            g.replay()
        sync()
        graph_ms = (time.perf_counter() - t0) / steps * 1e3
        for _ in range(2):
            dec.step(pages, lb)
        sync()
        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                dec.step(pages, lb)
            sync()
        eager_ms = (time.perf_counter() - t0) / steps * 1e3
    rows = []
    total_us, count = 0.0, 0
    for e in prof.key_averages():
        dev_us = getattr(e, "self_device_time_total", 0.0) or getattr(e, "self_cuda_time_total", 0.0)
        if dev_us <= 0:
            continue
        total_us += dev_us
        count += e.count
        rows.append((dev_us / steps, e.count / steps, e.key[:90]))
    rows.sort(reverse=True)
    dec.release()
    summary = {
        "pages": pages,
        "kernels": "fused" if dec.fused else "torch",
        "graph_step_ms": round(graph_ms, 3),
        "eager_step_ms_profiled": round(eager_ms, 3),
        "kernel_time_per_step_ms": round(total_us / steps / 1e3, 3),
        "kernels_per_step": round(count / steps, 1),
        "top": [{"us": round(u, 1), "calls": round(c, 1), "kernel": k} for u, c, k in rows[:25]],
    }
    log(
        f"profile {pages} page(s): graph step {graph_ms:.3f} ms, kernels {summary['kernels_per_step']}/step, "
        f"kernel time {summary['kernel_time_per_step_ms']} ms/step"
    )
    for r in summary["top"][:15]:
        log(f"   {r['us']:8.1f} us  {r['calls']:6.1f}x  {r['kernel']}")
    return summary


KNOBS = {"g": "decode_gemv_max_rows", "d": "dense_gemv_max_rows", "s": "moe_scan_max_tokens"}


def kernel_knobs(spec: str) -> dict[str, int]:
    """``mixed@g64+d16+s0``: expert pairs through the GEMV (g), dense rows through the GEMV (d), tokens
    through the expert-scan kernel (s); a bare number is ``g`` (the older ``mixed@N`` form)."""
    out = {}
    for item in filter(None, spec.split("+")):
        key, val = (item[0], item[1:]) if item[0] in KNOBS else ("g", item)
        out[KNOBS[key]] = int(val)
    return out


def apply_preset(model, name):
    if name == "bf16":
        return model
    base = name.split("@")[0]
    if base in ("mixed", "mixed1d"):
        from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
        from ocr_app.quant.apply import quantize_model
        from ocr_app.quant.options import default_kernel_options, set_kernel_options
        from ocr_app.quant.presets import get_preset

        options = default_kernel_options().replace(
            gemv_acc2d=base == "mixed",  # mixed1d: one reduction per K-tile (the earlier kernel)
        )
        options = options.replace(**kernel_knobs(name.split("@")[1] if "@" in name else ""))
        quantize_model(model, get_preset("mixed"), adapter=ADAPTER)
        set_kernel_options(model, options)
        return model
    raise SystemExit(f"unknown preset {name}")


def table(res):
    lines = [
        "| preset | path | pages | decode tok/s | × generate | first token s | s/page @ new | peak GiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for preset, r in res.items():
        if not isinstance(r, dict) or "generate" not in r:
            continue
        gen = r["generate"] or res.get("bf16", {}).get("generate", {})  # bf16's generate, same run
        base1 = gen.get("1", {}).get("decode_tok_s")
        for path in ("generate", "ours", "ours_torch"):
            for pages, m in r.get(path, {}).items():
                if "error" in m:
                    lines.append(f"| {preset} | {path} | {pages} | error: {m['error'][:60]} | | | | |")
                    continue
                ratio = f"{m['decode_tok_s'] / base1:.1f}×" if base1 else ""
                spp = f"{m['s_per_page']}" + (" (extrap.)" if m.get("extrapolated") else "")
                lines.append(
                    f"| {preset} | {path} | {pages} | {m['decode_tok_s']} | {ratio} | {m['ttft_s']} | "
                    f"{spp} | {m['peak_gib']} |"
                )
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default="1,16,32")
    ap.add_argument("--gen-pages", default="1,16,32")
    ap.add_argument("--new", type=int, default=1000)
    ap.add_argument("--gen-new-multi", type=int, default=64)
    ap.add_argument("--gen-new-one", type=int, default=0, help="generate's tokens at 1 page (0: --new)")
    ap.add_argument("--presets", default="bf16")
    ap.add_argument("--check", type=int, default=256)
    ap.add_argument("--fp32-check", action="store_true")
    ap.add_argument("--profile", default="1,32")
    ap.add_argument("--torch-pages", default="1", help="also run the module-path step (kernels=torch) here")
    ap.add_argument("--tiny", action="store_true", help="CPU smoke test with a tiny config")
    a = ap.parse_args()
    global DEV, CONFIG
    if a.tiny:
        DEV, CONFIG = "cpu", TINY
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    import torch
    import transformers

    out_dir = Path(os.environ.get("OUT", tempfile.gettempdir()))
    res = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "gpu": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
        "new": a.new,
        "eos": "disabled (random weights)",
    }
    log(json.dumps(res))
    ids, px = page_inputs()
    res["prompt_tokens"] = len(ids)
    for preset in a.presets.split(","):
        r = res[preset] = {"generate": {}, "ours": {}}
        try:
            model = apply_preset(build_model(torch.bfloat16), preset)
        except Exception as e:
            r["error"] = f"{type(e).__name__}: {e}"
            traceback.print_exc()
            continue
        gc.collect()
        r["weights_gib"] = round(torch.cuda.memory_allocated() / GIB, 3) if DEV == "cuda" else 0.0
        for p in [int(x) for x in a.gen_pages.split(",") if x] if preset == "bf16" else []:
            try:
                n = (a.gen_new_one or a.new) if p == 1 else a.gen_new_multi
                m = run_generate(model, ids, px, p, n, torch.bfloat16)
                m.pop("tokens")
                if n != a.new:
                    m["s_per_page"] = round((m["ttft_s"] + (a.new - 1) * p / m["decode_tok_s"]) / p, 3)
                    m["extrapolated"] = True
                r["generate"][str(p)] = m
                log("generate", preset, json.dumps(m))
            except Exception as e:
                r["generate"][str(p)] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
                traceback.print_exc()
            reset_peak()
        for p in [int(x) for x in a.pages.split(",") if x]:
            try:
                m = run_ours(model, ids, px, p, a.new, torch.bfloat16)
                m.pop("tokens")
                r["ours"][str(p)] = m
                log("ours", preset, json.dumps(m))
            except Exception as e:
                r["ours"][str(p)] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
                traceback.print_exc()
                if str(p) not in r.get("ours_torch", {}):  # keep a figure: the module-path step
                    reset_peak()
                    m = run_ours(model, ids, px, p, a.new, torch.bfloat16, kernels="torch")
                    m.pop("tokens")
                    r.setdefault("ours_torch", {})[str(p)] = m
            reset_peak()
        for p in [int(x) for x in a.torch_pages.split(",") if x]:
            try:
                m = run_ours(model, ids, px, p, a.new, torch.bfloat16, kernels="torch")
                m.pop("tokens")
                r["ours_torch"] = r.get("ours_torch", {})
                r["ours_torch"][str(p)] = m
                log("ours (kernels=torch)", preset, json.dumps(m))
            except Exception as e:
                r.setdefault("ours_torch", {})[str(p)] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
                traceback.print_exc()
            reset_peak()
        if preset == "bf16" and a.check:
            try:
                r["check_bf16"] = check_tokens(model, ids, px, a.check, torch.bfloat16, "bf16")
            except Exception as e:
                r["check_bf16"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
                traceback.print_exc()
        r["profile"] = []
        for p in [int(x) for x in a.profile.split(",") if x]:
            try:
                r["profile"].append(profile_steps(model, ids, px, p, torch.bfloat16))
            except Exception as e:
                r["profile"].append({"pages": p, "error": f"{type(e).__name__}: {str(e)[:200]}"})
                traceback.print_exc()
        if preset == "bf16" and a.fp32_check:
            try:
                model.float()
                lm_cfg = model.model.language_model.config
                try:
                    r["check_fp32"] = check_tokens(model, ids, px, a.check, torch.float32, "fp32 grouped_mm")
                except Exception:
                    traceback.print_exc()
                    lm_cfg._experts_implementation = "batched_mm"
                    r["check_fp32"] = check_tokens(model, ids, px, a.check, torch.float32, "fp32 batched_mm")
            except Exception as e:
                r["check_fp32"] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
                traceback.print_exc()
        del model
        reset_peak()
        (out_dir / "bench_decode.json").write_text(json.dumps(res, indent=1))
    (out_dir / "bench_decode.json").write_text(json.dumps(res, indent=1))
    t = table(res)
    (out_dir / "bench_decode.md").write_text(t + "\n")
    log("\n" + t)


if __name__ == "__main__":
    main()
