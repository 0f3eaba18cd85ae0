"""Runtime benchmark on one GPU: load → 20 requests → idle unload → reload, and vision-cache hit vs miss.

Full-size DeepSeek-OCR-2 with random weights (GUIDE §1 config), built on the GPU — no download. The
model sits behind the project's ``ModelManager`` (lazy load, per-request memory context, idle unload)
through a thin ``Engine`` that uses the real model class, the real image processor and the project's
``VisionFeatureCache`` via ``mm_encoder_outputs``. It does not use ``DeepSeekOcr2Engine`` because that
reads a checkpoint directory and the settings object (pydantic) that the GPU image lacks; what is
measured here is the runtime around the model, which is the same for both.

usage: python bench/bench_runtime.py [--tiny] [--new 16] [--out results.json]
Prints a Markdown table and writes JSON. ``--tiny`` runs the same steps on a tiny config (CPU check).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from ocr_app.engine_api import Engine
from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model
from ocr_app.models.deepseek_ocr2.estimate import estimate_page_bytes
from ocr_app.models.deepseek_ocr2.sam_attention import (
    DEFAULT_BUDGET_MB,
    attn_slice_bytes,
    bound_sam_attention,
)
from ocr_app.runtime.manager import IDLE_UNLOADED, ModelManager
from ocr_app.runtime.vision_cache import VisionFeatureCache, content_key
from ocr_app.runtime.vram import snapshot
from ocr_app.schema import EngineOutput, PageImage, PageRequest, StopReason

MIB = 1024**2
GIB = 1024**3

FULL = config_dict("full")
TINY = config_dict("tiny")
PROMPT_IDS = list(range(100, 112))  # 12 text tokens after the image, as in GUIDE §2


def log(*a: object) -> None:
    print(*a, flush=True)


def page(i: int, w: int = 1654, h: int = 2339) -> PageImage:
    """An A4 page at 200 DPI with lines of text; ``i`` changes the text (distinct content per page)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    for n, y in enumerate(range(80, h - 80, 34)):
        d.text(
            (100, y), f"Page {i} line {n}: the quick brown fox {n * 7 % 97} jumps {i * 31 + n}", fill="black"
        )
    return PageImage(image=img, index=i, source=f"bench-{i}")


class BenchEngine(Engine):
    """Random-weight DeepSeek-OCR-2 on the GPU; ``unload`` drops the only reference and frees memory."""

    name = "deepseek-ocr2-random"

    def __init__(self, cfg: dict, device: str, new_tokens: int, cache: VisionFeatureCache | None) -> None:
        self.cfg_dict, self.device, self.new_tokens, self.cache = cfg, device, new_tokens, cache
        self.model = None
        self.processor = None
        self.dtype = torch.bfloat16 if device == "cuda" else torch.float32
        self.attn_mb = DEFAULT_BUDGET_MB

    @property
    def is_loaded(self) -> bool:
        return self.model is not None

    def load(self) -> None:
        if self.model is not None:
            return
        from transformers.models.deepseek_ocr2.image_processing_deepseek_ocr2 import (
            DeepseekOcr2ImageProcessor,
        )

        model = random_model(self.cfg_dict, self.device, self.dtype)
        bound_sam_attention(model, self.attn_mb)  # as the product's loader does
        self.model = model.eval()
        self.processor = DeepseekOcr2ImageProcessor()

    def unload(self) -> None:
        self.model = None
        self.processor = None
        gc.collect()
        if self.device == "cuda":
            torch.cuda.empty_cache()

    def prepare(self, req: PageRequest) -> tuple[dict, str, int]:
        kw = {"crop_to_patches": True, "min_patches": 2, "max_patches": 6}
        feats = self.processor([req.page.image], return_tensors="pt", **kw)
        n_local = [int(x) for x in feats["num_local_patches"]]
        local = feats.get("pixel_values_local")
        key = content_key(feats["pixel_values"][0], local, mode=req.mode)
        ntok = 256 + 144 * n_local[0] + 1
        return (
            {"pixel_values": feats["pixel_values"], "pixel_values_local": local, "n_local": n_local},
            key,
            ntok,
        )

    def features(self, prepared: list, use_cache: list[bool]) -> tuple[list[torch.Tensor], list[bool]]:
        """Features per page: cache hits, and one vision pass over all misses (as the product engine
        batches them), so a batch's peak includes all its tiles going through SAM together."""
        got: list = [None] * len(prepared)
        for i, ((_, key, _), use) in enumerate(zip(prepared, use_cache, strict=True)):
            if use and self.cache is not None:
                got[i] = self.cache.get(key)
        miss = [i for i, g in enumerate(got) if g is None]
        if miss:
            pix = [prepared[i][0] for i in miss]
            locals_ = [p["pixel_values_local"] for p in pix if p["pixel_values_local"] is not None]
            out = self.model.get_image_features(
                pixel_values=torch.cat([p["pixel_values"] for p in pix]).to(self.device, self.dtype),
                pixel_values_local=torch.cat(locals_).to(self.device, self.dtype) if locals_ else None,
                num_local_patches=[n for p in pix for n in p["n_local"]],
            )
            for i, f in zip(miss, out.pooler_output, strict=True):
                got[i] = [f]
                if use_cache[i] and self.cache is not None:
                    self.cache.put(prepared[i][1], [f])
        hits = [i not in miss for i in range(len(prepared))]
        return [f for g in got for f in g], hits

    def inputs(self, ntoks: list[int]) -> dict:
        cfg = self.model.config
        rows = [[cfg.text_config.bos_token_id] + [cfg.image_token_id] * n + PROMPT_IDS for n in ntoks]
        width = max(len(r) for r in rows)
        ids = torch.zeros((len(rows), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rows):  # left padding
            ids[i, width - len(r) :] = torch.tensor(r)
            mask[i, width - len(r) :] = 1
        return {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device)}

    def predict_batch(self, requests) -> list[EngineOutput]:
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        self.load()
        with torch.inference_mode():
            prepared = [self.prepare(r) for r in requests]
            feats, hits = self.features(prepared, [r.use_cache for r in requests])
            inp = self.inputs([n for _, _, n in prepared])
            out = self.model.generate(
                **inp,
                mm_encoder_outputs={"image": BaseModelOutputWithPooling(pooler_output=feats)},
                max_new_tokens=self.new_tokens,
                min_new_tokens=self.new_tokens,
                do_sample=False,
            )
        return [
            EngineOutput(
                engine=self.name,
                raw_text="",
                stop_reason=StopReason.LENGTH,
                num_tokens=int(out.shape[1] - inp["input_ids"].shape[1]),
                vision_tokens=n,
                notes=["vision features from cache"] if hit else [],
            )
            for (_, _, n), hit in zip(prepared, hits, strict=True)
        ]


def mem(device: str) -> dict:
    if device != "cuda":
        return {"allocated_mib": 0.0, "reserved_mib": 0.0}
    torch.cuda.synchronize()
    snap = snapshot(torch.cuda.current_device())
    return {
        "allocated_mib": round(torch.cuda.memory_allocated() / MIB, 1),
        "reserved_mib": round(torch.cuda.memory_reserved() / MIB, 1),
        "device_used_mib": None if snap.used_bytes is None else round(snap.used_bytes / MIB, 1),
    }


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def prefill_times(engine: BenchEngine, req: PageRequest, reps: int, device: str) -> dict:
    """Vision + prefill (one forward, logits of the last position) with cold vs cached features."""
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    prepared = [engine.prepare(req)]
    inp = engine.inputs([prepared[0][2]])
    out: dict[str, list[float]] = {"miss": [], "hit": []}
    with torch.inference_mode():
        for _ in range(reps + 1):  # first round is warm-up
            for kind in ("miss", "hit"):
                if kind == "miss":
                    engine.cache.clear()
                sync(device)
                t0 = time.perf_counter()
                feats, hits = engine.features(prepared, [True])
                assert hits[0] == (kind == "hit")
                engine.model(
                    **inp,
                    mm_encoder_outputs={"image": BaseModelOutputWithPooling(pooler_output=feats)},
                    logits_to_keep=1,
                )
                sync(device)
                out[kind].append(time.perf_counter() - t0)
    return {k: round(statistics.median(v[1:]), 4) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--idle", type=float, default=2.0)
    ap.add_argument("--out", default="bench_runtime.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    cfg = TINY if args.tiny else FULL
    import transformers

    res: dict = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "new_tokens": args.new,
        "steps": [],
    }
    if device == "cuda":
        torch.zeros(1, device="cuda")  # CUDA context first: the pre-load level includes it
    cache = VisionFeatureCache(512 * MIB)
    engine = BenchEngine(cfg, device, args.new, cache)
    mgr = ModelManager(engine, idle_unload_s=args.idle, memory_device=device, memory_tolerance_mb=64)

    def step(name: str, **extra: object) -> None:
        row = {"step": name, **mem(device), **extra}
        res["steps"].append(row)
        log(json.dumps(row))

    step("before load")
    pre = res["steps"][0]["allocated_mib"]
    mgr.set_idle_unload(0)  # no idle unload while measuring; switched on before the idle step
    mgr.preload()
    step("after load", load_s=round(mgr.status().load_seconds or 0, 2))
    weights = torch.cuda.memory_allocated() if device == "cuda" else 0

    pages = [page(i) for i in range(4)]
    peaks, lat, leaks = [], [], 0
    for r in range(args.requests):
        req = PageRequest(page=pages[r % 4], prompt="<image>\nFree OCR.", mode="default")
        t0 = time.perf_counter()
        mgr.predict_batch([req])
        lat.append(time.perf_counter() - t0)
        m = mgr.status().last_memory or {}
        if m.get("peak_allocated") is not None:
            peaks.append(m["peak_allocated"])
        leaks += bool(m.get("leaked"))
    st = cache.stats()
    step(
        f"after {args.requests} requests",
        request_s_median=round(statistics.median(lat), 3),
        peak_gib_max=round(max(peaks) / GIB, 3) if peaks else None,
        leaked_requests=leaks,
        vision_cache_hits=st.hits,
        vision_cache_misses=st.misses,
    )

    # memory of one page and of four pages in one batch vs the estimate (vision cache off: encoder runs),
    # with transformers' SAM attention (0) and the product's sliced one
    for attn_mb in (0, engine.attn_mb):
        bound_sam_attention(engine.model, attn_mb)
        for n in (1, 4):
            reqs = [
                PageRequest(page=pages[i], prompt="<image>\nFree OCR.", mode="default", use_cache=False)
                for i in range(n)
            ]
            mgr.predict_batch(reqs)
            m = mgr.status().last_memory or {}
            ntok = engine.prepare(reqs[0])[2]
            est = estimate_page_bytes(engine.model.config, ntok, len(PROMPT_IDS) + 1, args.new, "bf16", batch=n,
                                      attn_slice_bytes=attn_slice_bytes(engine.model))  # fmt: skip
            key = f"peak_batch{n}_attn{attn_mb}"
            res[key] = {
                "measured_gib": None
                if m.get("peak_allocated") is None
                else round(m["peak_allocated"] / GIB, 3),
                "estimated_gib": round(est.peak_with_weights(weights) / GIB, 3),
                "weights_gib": round(weights / GIB, 3),
                "vision_tokens_per_page": ntok,
            }
            log(key, json.dumps(res[key]))

    res["prefill_s"] = prefill_times(engine, PageRequest(page=pages[0], prompt="", mode="default"), 3, device)
    log("prefill (vision + LM prefill) miss/hit", json.dumps(res["prefill_s"]))

    mgr.set_idle_unload(args.idle)
    t0 = time.perf_counter()
    while mgr.status().state != IDLE_UNLOADED and time.perf_counter() - t0 < args.idle + 30:
        time.sleep(0.1)
    step("after idle unload", state=mgr.status().state, waited_s=round(time.perf_counter() - t0, 2))
    res["unload_delta_mib"] = round(res["steps"][-1]["allocated_mib"] - pre, 1)
    res["unload_within_64mib"] = abs(res["unload_delta_mib"]) <= 64

    t0 = time.perf_counter()
    mgr.predict_batch([PageRequest(page=pages[0], prompt="<image>\nFree OCR.", mode="default")])
    step(
        "after reload + 1 request",
        reload_request_s=round(time.perf_counter() - t0, 2),
        reload_load_s=round(mgr.status().load_seconds or 0, 2),
        loads=mgr.status().loads,
    )
    mgr.unload()
    step("after final unload")

    log("\n| step | allocated MiB | reserved MiB | device used MiB | notes |\n|---|---|---|---|---|")
    for row in res["steps"]:
        notes = ", ".join(
            f"{k}={v}"
            for k, v in row.items()
            if k not in ("step", "allocated_mib", "reserved_mib", "device_used_mib")
        )
        log(
            f"| {row['step']} | {row['allocated_mib']} | {row['reserved_mib']} | {row.get('device_used_mib')} | {notes} |"
        )
    Path(args.out).write_text(json.dumps(res, indent=1))
    log(json.dumps({k: v for k, v in res.items() if k != "steps"}))


if __name__ == "__main__":
    main()
