"""Mixed precision vs bf16 on the full-size random-weight DeepSeek-OCR-2, in one run (GPU).

Measures, for bf16, ``mixed`` (loaded from a pre-quantised checkpoint written in the same run) and
``int8``: weight memory, peak allocated for one default page (1121 vision tokens, 512 new tokens),
prefill time and decode tok/s in the same decode path (static KV cache, step captured in a CUDA graph);
teacher-forced logit cosine / top-1 agreement with bf16 over the 512 tokens; AWQ vs RTN output error per
layer kind on activations with injected outlier channels. Prints a table; writes JSON to $OUT.

    python bench/bench_quant.py            # on the device tool (H200)
    python bench/bench_quant.py --tiny     # CPU smoke run of the same code with tiny dims
    python bench/bench_quant.py --render-calib .qcarry/calib   # here, when the GPU image lacks PyMuPDF
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model

FULL = config_dict("full", image_token_id=128815)  # the real <image> id (SOURCES table)
TINY = config_dict("tiny", text={"vocab_size": 512, "max_position_embeddings": 4096}, image_token_id=511)
GIB = 2**30
R: dict = {}
OUT = Path(os.environ.get("OUT", tempfile.gettempdir()))


def log(*a):
    print(*a, flush=True)


def save():
    (OUT / "bench_quant.json").write_text(json.dumps(R, indent=1, default=str))


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def build(cfg_dict, dev, dtype=torch.bfloat16, seed=0):
    """Full-size model with random weights (every ≥2-D weight ~ N(0, 0.02), router included)."""
    return random_model(cfg_dict, dev, dtype, seed=seed)


def page_images(n, seed=0):
    """Rendered document pages (PyMuPDF, as in production calibration), or PNGs from --calib-dir."""
    try:
        from ocr_app.quant.calibration import render_calibration_pages

        return [img for img, _ in render_calibration_pages(n, seed=seed)]
    except ImportError:
        from PIL import Image

        files = sorted(Path(ARGS.calib_dir).glob("*.png"))
        if not files:
            raise
        return [Image.open(f).convert("RGB") for f in files[:n]]


def page_inputs(cfg_dict, image, dev, dtype, n_text=12, seed=0):
    """One default-mode page: processor views + [BOS, image tokens, text ids]."""
    from transformers.models.deepseek_ocr2.image_processing_deepseek_ocr2 import DeepseekOcr2ImageProcessor

    feats = DeepseekOcr2ImageProcessor()(image, return_tensors="pt")
    n_local = feats["num_local_patches"]
    n_local = n_local.tolist() if hasattr(n_local, "tolist") else list(n_local)
    n_img = 256 + 144 * n_local[0] + 1
    g = torch.Generator().manual_seed(seed)
    vocab = cfg_dict["text_config"]["vocab_size"]
    text = torch.randint(2, min(vocab - 2, 128000), (n_text,), generator=g).tolist()
    ids = torch.tensor([[0] + [cfg_dict["image_token_id"]] * n_img + text], device=dev)
    inp = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "pixel_values": feats["pixel_values"].to(dev, dtype),
        "num_local_patches": n_local,
    }
    if feats.get("pixel_values_local") is not None:
        inp["pixel_values_local"] = feats["pixel_values_local"].to(dev, dtype)
    return inp, n_img


class GraphDecode:
    """Prefill over a static cache, then greedy decode with the step captured in one CUDA graph (eager
    on the CPU). The same path for every precision."""

    def __init__(self, model, inp, max_new):
        from transformers import StaticCache

        self.model, self.inp = model, inp
        self.dev = inp["input_ids"].device
        self.L = inp["input_ids"].shape[1]
        self.cache = StaticCache(config=model.config, max_cache_len=self.L + max_new + 8)
        self.graph = None

    def prefill(self):
        self.cache.reset()
        sync(self.dev)
        t0 = time.perf_counter()
        out = self.model(
            **self.inp,
            past_key_values=self.cache,
            use_cache=True,
            cache_position=torch.arange(self.L, device=self.dev),
            logits_to_keep=1,
        )
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        sync(self.dev)
        return tok, time.perf_counter() - t0

    def _step(self):
        o = self.model(
            input_ids=self.tok,
            past_key_values=self.cache,
            use_cache=True,
            cache_position=self.pos,
            position_ids=self.pos.unsqueeze(0),
            logits_to_keep=1,
        )
        return o.logits[:, -1].argmax(-1, keepdim=True)

    def decode(self, first_tok, n):
        """Greedy decode ``n`` tokens after prefill; returns (tokens [n], seconds)."""
        self.tok = first_tok.clone()
        self.pos = torch.tensor([self.L], device=self.dev)
        toks = [first_tok]
        use_graph = self.dev.type == "cuda"
        if use_graph and self.graph is None:
            # warm up (Triton compiles) on a side stream, then capture; the cache is re-filled after
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    self._step()
            torch.cuda.current_stream().wait_stream(s)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out_tok = self._step()
        sync(self.dev)
        t0 = time.perf_counter()
        for _ in range(n - 1):
            if use_graph:
                self.graph.replay()
                nxt = self.out_tok
            else:
                nxt = self._step()
            self.tok.copy_(nxt)
            self.pos.add_(1)
            toks.append(nxt.clone())
        sync(self.dev)
        return torch.cat(toks, 1)[0], time.perf_counter() - t0


def weight_bytes(model):
    return sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))


def measure(label, model, inp, n_new, dev):
    """Prefill time (median of 3), decode tok/s, peak allocated for one page + n_new tokens."""
    r = {"weights_gib": weight_bytes(model) / GIB}
    if dev.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
        r["allocated_before_gib"] = torch.cuda.memory_allocated() / GIB
        torch.cuda.reset_peak_memory_stats()
    with torch.inference_mode():
        gd = GraphDecode(model, inp, n_new)
        tok, _ = gd.prefill()  # warm-up (compiles kernels)
        times = []
        for _ in range(ARGS.prefill_reps):
            tok, t = gd.prefill()
            times.append(t)
        toks, t_dec = gd.decode(tok, n_new)
        vis = {k: inp[k] for k in ("pixel_values", "pixel_values_local", "num_local_patches") if k in inp}
        vtimes = []
        for _ in range(5):  # the vision tower + projector alone (the rest of prefill is the decoder)
            sync(dev)
            t0 = time.perf_counter()
            model.model.get_image_features(**vis)
            sync(dev)
            vtimes.append(time.perf_counter() - t0)
    r["vision_s"] = statistics.median(vtimes)
    r["prefill_s"] = statistics.median(times)
    r["prefill_min_s"] = min(times)
    r["decode_tok_s"] = (n_new - 1) / t_dec
    if dev.type == "cuda":
        r["peak_gib"] = torch.cuda.max_memory_allocated() / GIB
        r["peak_model_gib"] = r["peak_gib"] - (r["allocated_before_gib"] - r["weights_gib"])
        if ARGS.profile:
            profile(label, gd)
    del gd
    R[label] = r
    log(label, json.dumps({k: round(v, 4) for k, v in r.items()}))
    save()
    return toks


def profile(label, gd):
    """Top CUDA kernels of one prefill and of 8 graph-less decode steps (written to $OUT)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch.inference_mode():
        for name, fn in (("prefill", gd.prefill), ("step", lambda: [gd._step() for _ in range(8)])):
            with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
            table = prof.key_averages().table(
                sort_by="cuda_time_total", row_limit=18, max_name_column_width=60
            )
            (OUT / f"prof_{label}_{name}.txt").write_text(table)
            events = prof.key_averages()
            cuda_total = sum(e.self_device_time_total for e in events) / 1e3
            R.setdefault("profile", {})[f"{label}_{name}"] = {"cuda_ms": cuda_total}
            log(f"profile {label} {name}: self CUDA total {cuda_total:.2f} ms")


def teacher_forced_logits(model, inp, toks):
    """Logits at the 512 positions of ``toks`` fed after the prompt (teacher forcing)."""
    ids = torch.cat([inp["input_ids"], toks[None].to(inp["input_ids"].device)], 1)
    full = dict(inp, input_ids=ids, attention_mask=torch.ones_like(ids))
    with torch.inference_mode():
        logits = model(**full, logits_to_keep=toks.numel()).logits[0]
    return logits.float().cpu()


def kernel_check(dev):
    """Triton kernels vs the torch path on full-size shapes (fresh random data): max relative error."""
    from ocr_app.quant.modules import Int8Linear, QuantExperts, QuantLinear
    from ocr_app.quant.ops import int8_linear, moe_experts, wq_linear

    def rel(a, b):
        return ((a.float() - b.float()).norm() / b.float().norm()).item()

    out = {}
    torch.manual_seed(1)
    ql = QuantLinear.from_float(torch.randn(1280, 1280, device=dev) * 0.02, None, 4, None,
                                torch.rand(1280, device=dev) + 0.5, torch.bfloat16)  # fmt: skip
    qe = QuantExperts.from_float(torch.randn(64, 1792, 1280, device=dev) * 0.02, torch.randn(64, 1280, 896, device=dev) * 0.02,
                                 4, torch.rand(64, 1280, device=dev) + 0.5, torch.bfloat16)  # fmt: skip
    il = Int8Linear.from_float(
        torch.randn(2304, 768, device=dev, dtype=torch.bfloat16) * 0.02,
        torch.randn(2304, device=dev, dtype=torch.bfloat16),
    )
    for m in (1, 7, 300, 1133):
        x = torch.randn(m, 1280, device=dev, dtype=torch.bfloat16)
        out[f"linear_m{m}"] = rel(ql(x), wq_linear(x, ql.qw, None, ql.input_scale_inv, backend="torch"))
        idx = torch.stack([torch.randperm(63, device=dev)[:6] for _ in range(m)])  # expert 63 gets no token
        w = torch.rand(m, 6, device=dev)
        y = qe(x, idx, w)
        out[f"moe_t{m}"] = rel(
            y, moe_experts(x, idx, w, qe.gate_up, qe.down, qe.input_scale_inv, backend="torch")
        )
    x = torch.randn(4096, 768, device=dev, dtype=torch.bfloat16)
    out["int8_m4096"] = rel(il(x), int8_linear(x, il.qweight, il.wscale, il.bias, backend="torch"))
    R["kernel_check_rel_err"] = out
    log("kernel check", json.dumps(out))
    save()


def launch_check(dev):
    """Fast Triton launch (raw pointers, ``ocr_app/quant/launch.py``) vs the public path: bitwise equal
    outputs, and host cost per launch (µs) of each path and of one torch op, on tiny tensors."""
    from ocr_app.quant.modules import QuantExperts, QuantLinear
    from ocr_app.quant.options import default_kernel_options

    torch.manual_seed(2)
    ql = QuantLinear.from_float(torch.randn(1280, 1280, device=dev) * 0.02, torch.randn(1280, device=dev), 4,
                                None, None, torch.bfloat16)  # fmt: skip
    qe = QuantExperts.from_float(torch.randn(64, 1792, 1280, device=dev) * 0.02,
                                 torch.randn(64, 1280, 896, device=dev) * 0.02, 4, None, torch.bfloat16)  # fmt: skip
    out = {}
    for m in (1, 300):
        x = torch.randn(m, 1280, device=dev, dtype=torch.bfloat16)
        idx = torch.stack([torch.randperm(64, device=dev)[:6] for _ in range(m)])
        w = torch.rand(m, 6, device=dev)
        res = {}
        for flag in ("0", "1", "1"):  # public, fast (first may compile), fast again
            ql.kernel_options = qe.kernel_options = default_kernel_options().replace(fast_launch=flag == "1")
            res[flag] = (ql(x), qe(x, idx, w))
        out[f"equal_m{m}"] = bool(
            torch.equal(res["0"][0], res["1"][0]) and torch.equal(res["0"][1], res["1"][1])
        )
    x = torch.randn(1, 1280, device=dev, dtype=torch.bfloat16)
    for flag in ("0", "1"):
        ql.kernel_options = default_kernel_options().replace(fast_launch=flag == "1")
        for _ in range(20):
            ql(x)
        sync(dev)
        t0 = time.perf_counter()
        for _ in range(500):
            ql(x)
        sync(dev)
        out[f"us_per_linear_fast{flag}"] = (time.perf_counter() - t0) / 500 * 1e6
    y = torch.randn(1, 1280, device=dev)
    sync(dev)
    t0 = time.perf_counter()
    for _ in range(500):
        y.add_(1.0)
    sync(dev)
    out["us_per_torch_op"] = (time.perf_counter() - t0) / 500 * 1e6
    R["launch_check"] = out
    log("launch check", json.dumps(out))
    save()


def main():
    cfg, dev, dtype, images, inp, t0 = _setup()
    if ARGS.quick:  # prefill paths only: bf16 vs mixed (RTN, in place), W8A16/W8A8 vision, both launches
        _quick(cfg, dev, dtype, inp)
        table()
        return
    toks, ref_logits, qdir = _reference_and_checkpoint(cfg, dev, dtype, inp, images)
    _mixed_from_checkpoint(qdir, dev, dtype, inp, toks, ref_logits)
    _variants(cfg, dev, dtype, inp, toks, ref_logits, t0)
    save()
    table()


def _setup():
    """Config, device, the measured page's inputs; the kernel and launch checks on a GPU."""
    cfg = TINY if ARGS.tiny else FULL
    dev = torch.device("cuda" if torch.cuda.is_available() and not ARGS.tiny else "cpu")
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    R["env"] = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
        "commit": os.environ.get("GIT_COMMIT", ""),
        "new_tokens": ARGS.new,
        "calib_pages": ARGS.calib,
    }
    images = page_images(ARGS.calib + 1)
    inp, n_img = page_inputs(cfg, images[0], dev, dtype)
    R["env"]["vision_tokens"] = n_img
    R["env"]["prompt_len"] = inp["input_ids"].shape[1]
    log("env", R["env"])
    t0 = time.perf_counter()
    if dev.type == "cuda":
        kernel_check(dev)
        try:
            launch_check(dev)
        except Exception as exc:  # report and go on: the main table matters more
            R["launch_check"] = f"ERROR {type(exc).__name__}: {exc}"
            log("launch check failed", R["launch_check"])
        gc.collect()
        torch.cuda.empty_cache()
    return cfg, dev, dtype, images, inp, t0


def _quick(cfg, dev, dtype, inp) -> None:
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.modules import Int8Linear
    from ocr_app.quant.options import default_kernel_options, set_kernel_options
    from ocr_app.quant.presets import get_preset

    n_new = ARGS.new
    model = build(cfg, dev, dtype)
    bound_sam_attention(model, 0)
    measure("bf16_stock_attn", model, inp, n_new, dev)
    bound_sam_attention(model, ARGS.attn_mb)
    measure("bf16", model, inp, n_new, dev)
    quantize_model(model, get_preset("mixed"), None, adapter=ADAPTER)
    gc.collect()
    for flag in ("0", "1"):
        set_kernel_options(model, default_kernel_options().replace(fast_launch=flag == "1"))
        measure(f"mixed_rtn_fast{flag}", model, inp, n_new, dev)
    for m in model.modules():
        if isinstance(m, Int8Linear):
            m.act_bits = 8
    measure("mixed_rtn_w8a8_fast1", model, inp, n_new, dev)
    bound_sam_attention(model, 0)
    measure("mixed_rtn_w8a8_fast1_stock_attn", model, inp, n_new, dev)


def _reference_and_checkpoint(cfg, dev, dtype, inp, images):
    """bf16 speed and reference logits, AWQ calibration, the mixed checkpoint written to a temp dir."""
    from ocr_app.models.deepseek_ocr2.quant_fidelity import layer_kind_errors
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.calibration import collect_activations
    from ocr_app.quant.checkpoint import save_quantized
    from ocr_app.quant.presets import get_preset

    model = build(cfg, dev, dtype)
    bound_sam_attention(model, 0)
    measure("bf16_stock_attn", model, inp, ARGS.new, dev)
    bound_sam_attention(model, ARGS.attn_mb)
    toks = measure("bf16", model, inp, ARGS.new, dev)
    ref_logits = teacher_forced_logits(model, inp, toks)
    top2 = ref_logits.topk(2, -1).values
    R["reference"] = {
        "distinct_tokens": int(toks.unique().numel()),
        "top1_top2_margin_mean": (top2[:, 0] - top2[:, 1]).mean().item(),
        "logit_std_mean": ref_logits.std(-1).mean().item(),
    }
    log("reference", R["reference"])
    batches = [
        page_inputs(cfg, img, dev, dtype, n_text=256, seed=i + 1)[0] for i, img in enumerate(images[1:])
    ]
    calib = collect_activations(model, batches, ADAPTER)
    R["calibration"] = {"pages": calib.pages, "tokens": calib.tokens}
    R["awq_vs_rtn_outliers"] = layer_kind_errors(model, calib)
    del batches
    log("awq_vs_rtn", json.dumps(R["awq_vs_rtn_outliers"]))
    tq = time.perf_counter()
    recipe = quantize_model(model, get_preset("mixed"), calib, adapter=ADAPTER)
    R["quantize_s"] = time.perf_counter() - tq
    qdir = Path(tempfile.mkdtemp(prefix="qckpt-"))
    save_quantized(model, recipe, qdir, None)
    R["checkpoint_gib"] = sum(f.stat().st_size for f in qdir.glob("*.safetensors")) / GIB
    log("quantized + saved in", round(time.perf_counter() - tq, 1), "s;", R["checkpoint_gib"], "GiB")
    del model, calib
    gc.collect()
    return toks, ref_logits, qdir


def _mixed_from_checkpoint(qdir, dev, dtype, inp, toks, ref_logits) -> None:
    """mixed, loaded from the pre-quantised checkpoint: load time and peak, speed, fidelity."""
    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
    from ocr_app.quant.checkpoint import load_quantized
    from ocr_app.quant.fidelity import logit_agreement

    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    tl = time.perf_counter()
    model, _ = load_quantized(qdir, dev, dtype)
    R["load_s"] = time.perf_counter() - tl
    if dev.type == "cuda":
        R["load_peak_gib"] = (torch.cuda.max_memory_allocated() - base) / GIB
        R["load_allocated_gib"] = (torch.cuda.memory_allocated() - base) / GIB
    bound_sam_attention(model, ARGS.attn_mb)
    measure("mixed", model, inp, ARGS.new, dev)
    bound_sam_attention(model, 0)
    measure("mixed_stock_attn", model, inp, ARGS.new, dev)
    bound_sam_attention(model, ARGS.attn_mb)
    R["fidelity_mixed"] = logit_agreement(ref_logits, teacher_forced_logits(model, inp, toks))
    log("fidelity mixed", R["fidelity_mixed"])
    save()
    del model
    gc.collect()


def _variants(cfg, dev, dtype, inp, toks, ref_logits, t0) -> None:
    """Variants quantised on the fly: RTN 4-bit (AWQ off), weight-only 8-bit vision, int8."""
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
    from ocr_app.quant.apply import quantize_model
    from ocr_app.quant.fidelity import logit_agreement
    from ocr_app.quant.presets import Preset, get_preset

    if dev.type == "cuda":
        torch.cuda.empty_cache()
    if not ARGS.skip_rtn:
        model = build(cfg, dev, dtype)
        quantize_model(
            model, Preset("mixed_rtn", "bfloat16", vision="int8", decoder_bits=4), None, adapter=ADAPTER
        )
        R["fidelity_mixed_rtn"] = logit_agreement(ref_logits, teacher_forced_logits(model, inp, toks))
        log("fidelity mixed RTN", R["fidelity_mixed_rtn"])
        del model
        gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    if ARGS.w8vision:
        model = build(cfg, dev, dtype)
        quantize_model(
            model, Preset("mixed_w8vision", "bfloat16", vision="w8", decoder_bits=4), None, adapter=ADAPTER
        )
        bound_sam_attention(model, ARGS.attn_mb)
        measure("mixed_w8vision_rtn", model, inp, ARGS.new, dev)
        del model
        gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    if time.perf_counter() - t0 < ARGS.budget_s:
        model = build(cfg, dev, dtype)
        quantize_model(model, get_preset("int8"), None, adapter=ADAPTER)
        bound_sam_attention(model, ARGS.attn_mb)
        measure("int8", model, inp, ARGS.new, dev)
        R["fidelity_int8"] = logit_agreement(ref_logits, teacher_forced_logits(model, inp, toks))
        log("fidelity int8", R["fidelity_int8"])
        del model


def table():
    rows = [k for k in R if isinstance(R[k], dict) and "decode_tok_s" in R[k]]
    base = R.get("bf16", {})
    log(
        "\n| variant | weights GiB | peak GiB | prefill s | vision s | decode tok/s | prefill × bf16 | decode × bf16 |"
    )
    log("|---|---|---|---|---|---|---|---|")
    for k in rows:
        r = R[k]
        ref = base
        log(
            f"| {k} | {r['weights_gib']:.2f} | {r.get('peak_model_gib', float('nan')):.2f} | {r['prefill_s']:.3f} | "
            f"{r['vision_s']:.3f} | "
            f"{r['decode_tok_s']:.1f} | {r['prefill_s'] / ref['prefill_s']:.2f} | "
            f"{r['decode_tok_s'] / ref['decode_tok_s']:.2f} |"
        )
    for k in ("fidelity_mixed", "fidelity_mixed_rtn", "fidelity_int8"):
        if k in R:
            log(k, json.dumps({a: round(b, 4) for a, b in R[k].items()}))
    if "awq_vs_rtn_outliers" in R:
        log("| layer kind | RTN err | AWQ err | AWQ/RTN |")
        for kind, v in R["awq_vs_rtn_outliers"].items():
            log(f"| {kind} | {v['rtn']:.3e} | {v['awq']:.3e} | {v['ratio']:.3f} |")
    for k in ("quantize_s", "checkpoint_gib", "load_s", "load_peak_gib", "load_allocated_gib"):
        if k in R:
            log(k, round(R[k], 3))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--new", type=int, default=512)
    ap.add_argument("--calib", type=int, default=4)
    ap.add_argument("--attn-mb", type=int, default=256, help="SAM attention bias budget (product default)")
    ap.add_argument("--calib-dir", default=".qcarry/calib")
    ap.add_argument("--budget-s", type=float, default=240.0, help="skip the int8 run after this long")
    ap.add_argument("--profile", action="store_true", help="write kernel profiles of prefill and decode")
    ap.add_argument("--prefill-reps", type=int, default=10)
    ap.add_argument("--skip-rtn", action="store_true", help="skip the RTN-4bit fidelity variant")
    ap.add_argument(
        "--quick", action="store_true", help="only bf16 vs mixed (RTN) prefill/decode, both launch paths"
    )
    ap.add_argument("--w8vision", action="store_true", help="also measure 8-bit weight-only vision")
    ap.add_argument("--render-calib", metavar="DIR", help="render calibration PNGs into DIR (for GPU images "
                    "without PyMuPDF, then --calib-dir DIR there) and exit")  # fmt: skip
    ARGS = ap.parse_args()
    if ARGS.render_calib:
        from ocr_app.quant.calibration import render_calibration_pages

        Path(ARGS.render_calib).mkdir(parents=True, exist_ok=True)
        for i, (img, _) in enumerate(render_calibration_pages(ARGS.calib + 1)):
            img.save(Path(ARGS.render_calib) / f"page{i}.png")
        sys.exit(0)
    main()
