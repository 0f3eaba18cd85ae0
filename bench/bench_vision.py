"""Vision-pass benchmark: the fused SAM layers (``sam_kernels``) against the unfused path, in one process.

Full-size DeepSeek-OCR-2 with random weights (GUIDE §1 config, nothing downloaded), bf16. One synthetic
A4 page through the real image processor in the default mode (one 1024 px global view + 6 tiles of
768 px), repeated N times, through ``model.get_image_features`` — the call the engine makes. Variants:

* ``unfused``: what the product ran before the fused layers: transformers' SAM layer with the
  project's attention (``sam_attention``: rel-pos bias folded into q·k on CUDA, tables kept per size);
* ``fused``: the same plus ``fuse_sam_layers`` (the loader's default on CUDA);
* ``fused_narrow_v`` (opt-in): fused, with values of the plain head size handed to SDPA (no zero
  padding; ``sam_kernels.NARROW_V``): which attention backend takes that, and is it faster;
* ``transformers`` (opt-in): transformers' own SDPA attention, no project code.

Per variant and page count: wall ms of the whole pass (median of ``--iters``), ms per page, the SAM
encoder's and the Qwen2 encoder's share (CUDA events around each tower call, summed over the global and
the tile calls), peak allocated memory; the first call's seconds (Triton compiles the fused kernels, or
reads them from its on-disk cache); the max abs difference of the features (``pooler_output``) against
the first variant; and the top kernels of one pass (``torch.profiler``). ``--cold`` also runs two fresh
processes that each time the fused kernels' first call with one empty Triton cache: the first compiles,
the second reads the cache (what a user's second run pays).

usage (device tool, one H200; ``transformers`` vs ``unfused`` shows what a bf16 rounding difference is):
    python bench/bench_vision.py --pages 1,4,8 --variants unfused,fused,fused_narrow_v,transformers --cold
CPU smoke (CI):
    python bench/bench_vision.py --tiny
``--tiny``: tiny widths, views shrunk to 160 px (global) and 2 tiles of 128 px, the kernels in Triton's
interpreter (``TRITON_INTERPRET=1``) — it checks the script, not the speed.
"""

from __future__ import annotations

import os
import sys

if "--tiny" in sys.argv or ("--kernels-first-call" in sys.argv and "--tiny-kernels" in sys.argv):
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported: kernels run on the CPU

import argparse
import gc
import json
import statistics
import subprocess
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model  # noqa: E402

GIB = 1024**3
VARIANTS = ("unfused", "fused", "fused_narrow_v", "transformers")


def log(*a: object) -> None:
    print(*a, flush=True)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", default="1,4,8", help="page counts, comma-separated")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--variants", default="unfused,fused", help=f"of {', '.join(VARIANTS)}; first = reference")
    p.add_argument("--profile-pages", type=int, default=4, help="page count of the kernel profile (0 = none)")
    p.add_argument("--top", type=int, default=15, help="kernels listed per profile")
    p.add_argument(
        "--cold", action="store_true", help="also time the fused kernels' first call in 2 fresh processes"
    )
    p.add_argument(
        "--tiny", action="store_true", help="CPU smoke test: tiny widths, small views, interpreter"
    )
    p.add_argument(
        "--out", default=None, help="JSON results (default $OUT/bench_vision.json or ./bench_vision.json)"
    )
    p.add_argument("--kernels-first-call", action="store_true", help=argparse.SUPPRESS)  # the --cold child
    p.add_argument("--tiny-kernels", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --- inputs and model --------------------------------------------------------------------------------
def page_pixels(tiny: bool) -> dict:
    """One synthetic A4 page through the real image processor (default mode: global view + 6 tiles)."""
    import torch.nn.functional as F
    from bench_decode import synthetic_page_features  # the decoder bench's page (same directory)

    feats = synthetic_page_features()
    glob, local = feats["pixel_values"], feats.get("pixel_values_local")
    if tiny:  # 10×10 and 8×8 SAM tokens (padded windows), interpreter-sized
        glob = F.interpolate(glob, size=(160, 160), mode="bilinear", align_corners=False)
        local = F.interpolate(local[:2], size=(128, 128), mode="bilinear", align_corners=False)
    return {"pixel_values": glob, "pixel_values_local": local, "num_local_patches": [int(local.shape[0])]}


def batch(px: dict, pages: int, device: str, dtype) -> dict:
    import torch

    return {
        "pixel_values": torch.cat([px["pixel_values"]] * pages).to(device, dtype),
        "pixel_values_local": torch.cat([px["pixel_values_local"]] * pages).to(device, dtype),
        "num_local_patches": px["num_local_patches"] * pages,
    }


def set_variant(model, variant: str, tiny: bool) -> None:
    from ocr_app.models.deepseek_ocr2 import sam_kernels
    from ocr_app.models.deepseek_ocr2.sam_attention import DEFAULT_BUDGET_MB, bound_sam_attention
    from ocr_app.models.deepseek_ocr2.sam_kernels import fuse_sam_layers, is_fused

    sam_kernels.NARROW_V = variant == "fused_narrow_v"
    fused = variant.startswith("fused")
    bound_sam_attention(model, 0 if variant == "transformers" else DEFAULT_BUDGET_MB)
    if tiny and variant != "transformers":  # the CPU's attention path differs from CUDA's: force CUDA's
        for m in model.modules():
            if hasattr(m, "rel_pos_h"):
                m._ocr_app_augmented = True
    n = fuse_sam_layers(model, fused, any_device=tiny)
    if fused and (n == 0 or not is_fused(model)):
        raise RuntimeError("fuse_sam_layers fused no layer (is Triton importable?)")


class TowerTimer:
    """Times each call of the SAM encoder and the Qwen2 encoder (CUDA events, or the CPU clock)."""

    def __init__(self, tower, cuda: bool) -> None:
        import torch

        self.cuda, self.spans = cuda, {"sam": [], "qwen2": []}
        self._handles = []
        for name, mod in (("sam", tower.sam_encoder), ("qwen2", tower.vision_encoder)):
            self._handles.append(mod.register_forward_pre_hook(self._pre(name)))
            self._handles.append(mod.register_forward_hook(self._post(name)))
        self._torch = torch

    def _mark(self):
        if self.cuda:
            e = self._torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def _pre(self, name):
        def hook(mod, args, kwargs=None):
            self.spans[name].append([self._mark(), None])

        return hook

    def _post(self, name):
        def hook(mod, args, out):
            if self.spans[name] and self.spans[name][-1][1] is None:
                self.spans[name][-1][1] = self._mark()

        return hook

    def clear(self) -> None:
        for v in self.spans.values():
            v.clear()

    def ms(self) -> dict:
        out = {}
        for name, spans in self.spans.items():
            done = [(a, b) for a, b in spans if b is not None]
            if self.cuda:
                out[name] = sum(a.elapsed_time(b) for a, b in done)
            else:
                out[name] = sum(b - a for a, b in done) * 1e3
        return out

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def sync(cuda: bool) -> None:
    import torch

    if cuda:
        torch.cuda.synchronize()


def one_pass(model, inp: dict, cuda: bool) -> tuple[float, list]:
    import torch

    sync(cuda)
    t0 = time.perf_counter()
    with torch.inference_mode():
        feats = model.model.get_image_features(**inp).pooler_output
    sync(cuda)
    return time.perf_counter() - t0, feats


def profile_top(model, inp: dict, cuda: bool, top: int) -> list[dict]:
    """The ``top`` kernels of one pass by self device time (CPU ops in the smoke test)."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    with profile(activities=acts) as prof:
        one_pass(model, inp, cuda)
    rows = []
    for e in prof.key_averages():
        us = (
            getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
            if cuda
            else e.self_cpu_time_total
        )
        if us:
            rows.append({"name": e.key[:110], "self_us": round(float(us), 1), "calls": int(e.count)})
    rows.sort(key=lambda r: -r["self_us"])
    total = sum(r["self_us"] for r in rows)
    for r in rows:
        r["share"] = round(r["self_us"] / total, 4) if total else 0.0
    return rows[:top]


def measure(model, px: dict, args, pages: list[int], variants: list[str], device: str, dtype) -> dict:
    import torch

    cuda = device == "cuda"
    tower = model.model.vision_tower
    res: dict = {"variants": {}, "diff": {}}
    feats_by: dict = {}
    for variant in variants:
        timer = TowerTimer(tower, cuda)
        r: dict = {"pages": {}}
        try:
            set_variant(model, variant, args.tiny)
            inp1 = batch(px, pages[0], device, dtype)
            r["first_call_s"] = round(one_pass(model, inp1, cuda)[0], 3)  # Triton compiles (or reads) here
            for n in pages:
                inp = batch(px, n, device, dtype)
                for _ in range(args.warmup):
                    one_pass(model, inp, cuda)
                if cuda:
                    gc.collect()
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                walls, splits = [], []
                for _ in range(args.iters):
                    timer.clear()
                    wall, feats = one_pass(model, inp, cuda)
                    walls.append(wall * 1e3)
                    splits.append(timer.ms())
                ms = statistics.median(walls)
                row = {
                    "ms": round(ms, 2),
                    "ms_per_page": round(ms / n, 2),
                    "sam_ms": round(statistics.median(s["sam"] for s in splits), 2),
                    "qwen2_ms": round(statistics.median(s["qwen2"] for s in splits), 2),
                    "peak_gib": round(torch.cuda.max_memory_allocated() / GIB, 3) if cuda else None,
                }
                r["pages"][str(n)] = row
                feats_by[(variant, n)] = torch.cat([f.float().cpu() for f in feats])
                log(f"{variant:>12} {n:>3} page(s): {row}")
            if args.profile_pages:
                r["top_kernels"] = profile_top(
                    model, batch(px, args.profile_pages, device, dtype), cuda, args.top
                )
        except Exception as exc:  # one variant failing must not hide the others' figures
            traceback.print_exc()
            r["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            timer.remove()
        res["variants"][variant] = r
    ref = variants[0]
    for variant in variants[1:]:
        for n in pages:
            a, b = feats_by.get((ref, n)), feats_by.get((variant, n))
            if a is None or b is None:
                continue
            res["diff"][f"{variant}_vs_{ref}_{n}"] = {
                "max_abs": float((a - b).abs().max()),
                "ref_max_abs": float(a.abs().max()),
                "mean_abs": float((a - b).abs().mean()),
            }
    set_variant(model, "unfused", args.tiny)
    return res


# --- cold: the fused kernels' first call in fresh processes ------------------------------------------
def kernels_first_call(tiny: bool) -> dict:
    """A SAM encoder alone (full config, or tiny) with fused layers: first and second call seconds of a
    1024 px view and 6 tiles of 768 px (tiny: one 160 px view and one 128 px tile)."""
    import torch
    from transformers.models.deepseek_ocr2.configuration_deepseek_ocr2 import DeepseekOcr2SamVisionConfig
    from transformers.models.deepseek_ocr2.modeling_deepseek_ocr2 import DeepseekOcr2SamVisionEncoder

    from ocr_app.models.deepseek_ocr2.sam_attention import bound_sam_attention
    from ocr_app.models.deepseek_ocr2.sam_kernels import fuse_sam_layers

    cuda = not tiny
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    sam_cfg = config_dict("tiny")["vision_config"]["sam_config"] if tiny else {}
    with torch.device(device):
        enc = DeepseekOcr2SamVisionEncoder(DeepseekOcr2SamVisionConfig(**sam_cfg)).to(dtype).eval()
    bound_sam_attention(enc)
    fuse_sam_layers(enc, any_device=tiny)
    sides = (160, 128) if tiny else (1024, 768)
    views = [torch.randn(1, 3, sides[0], sides[0], device=device, dtype=dtype),
             torch.randn(1 if tiny else 6, 3, sides[1], sides[1], device=device, dtype=dtype)]  # fmt: skip
    out = {}
    for label in ("first_s", "second_s"):
        sync(cuda)
        t0 = time.perf_counter()
        with torch.inference_mode():
            for v in views:
                enc(v)
        sync(cuda)
        out[label] = round(time.perf_counter() - t0, 3)
    return out


def cold(tiny: bool) -> dict:
    """Two fresh processes sharing one new Triton cache directory: compile, then cache read."""
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--kernels-first-call"]
        if tiny:
            cmd.append("--tiny-kernels")
        for _ in range(2):
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            line = [x for x in p.stdout.splitlines() if x.startswith("FIRST_CALL ")]
            if p.returncode != 0 or not line:
                runs.append({"error": (p.stderr or p.stdout)[-1500:]})
            else:
                runs.append(json.loads(line[-1][len("FIRST_CALL ") :]))
    return {"empty_cache": runs[0], "warm_cache": runs[1]}


# --- report ------------------------------------------------------------------------------------------
def report(res: dict, pages: list[int]) -> None:
    log("\n| variant | pages | pass ms | ms/page | SAM ms | Qwen2 ms | peak GiB | first call s |")
    log("|---|---|---|---|---|---|---|---|")
    for variant, r in res["variants"].items():
        if "error" in r:
            log(f"| {variant} | error: {r['error'][:80]} | | | | | | |")
        for n in pages:
            row = r["pages"].get(str(n))
            if row:
                log(f"| {variant} | {n} | {row['ms']} | {row['ms_per_page']} | {row['sam_ms']} | "
                    f"{row['qwen2_ms']} | {row['peak_gib']} | {r.get('first_call_s')} |")  # fmt: skip
    variants = list(res["variants"])
    base = res["variants"].get("unfused", {}).get("pages", {})
    for variant in variants:
        if variant == "unfused":
            continue
        for n in pages:
            a, b = base.get(str(n)), res["variants"][variant].get("pages", {}).get(str(n))
            if a and b and b["ms"] > 0 and b["sam_ms"] > 0:
                log(
                    f"{variant} vs unfused at {n} page(s): pass {a['ms'] / b['ms']:.2f}x, SAM {a['sam_ms'] / b['sam_ms']:.2f}x"
                )
    for key, d in res["diff"].items():
        log(
            f"features {key}: max abs diff {d['max_abs']:.3g} (max |ref| {d['ref_max_abs']:.3g}, mean {d['mean_abs']:.3g})"
        )
    for variant, r in res["variants"].items():
        if r.get("top_kernels"):
            log(f"\ntop kernels, {variant}:")
            for k in r["top_kernels"]:
                log(f"  {k['self_us']:>10.1f} us {k['share'] * 100:5.1f} % {k['calls']:>5} x  {k['name']}")
    if "cold" in res:
        log(f"\nfused kernels' first call in fresh processes (one new Triton cache): {res['cold']}")


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.kernels_first_call:
        print("FIRST_CALL " + json.dumps(kernels_first_call(args.tiny_kernels)), flush=True)
        return 0
    import torch
    import transformers

    device = "cpu" if args.tiny else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        log("no CUDA device: run with --tiny for the CPU smoke test")
        return 2
    dtype = torch.float32 if args.tiny else torch.bfloat16
    pages = [int(x) for x in args.pages.split(",") if x.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or not variants or not pages:
        log(f"bad --variants/--pages: {bad or args.variants!r} {args.pages!r}")
        return 2
    env = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "dtype": str(dtype),
        "triton_interpret": os.environ.get("TRITON_INTERPRET", ""),
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception as exc:  # reported, and the fused variant then fails with its own message
        env["triton"] = f"not importable: {exc}"
    log(f"bench_vision: {env}")
    cfg = config_dict("tiny" if args.tiny else "full")
    model = random_model(cfg, torch.device(device), dtype, seed=0)
    px = page_pixels(args.tiny)
    log(f"page: global {tuple(px['pixel_values'].shape)}, tiles {tuple(px['pixel_values_local'].shape)}")
    res = measure(model, px, args, pages, variants, device, dtype)
    res["env"] = env
    res["args"] = vars(args)
    if args.cold:
        res["cold"] = cold(args.tiny)
    report(res, pages)
    out = Path(args.out) if args.out else Path(os.environ.get("OUT", ".")) / "bench_vision.json"
    out.write_text(json.dumps(res, indent=1))
    log(f"\nwrote {out}")
    # the opt-in variants may fail (an attention backend that refuses narrow values): reported, not fatal
    errors = [v for v, r in res["variants"].items() if "error" in r and v in ("unfused", "fused")]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
