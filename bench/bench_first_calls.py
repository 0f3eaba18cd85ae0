"""What a torch call costs the first time it meets a shape, per backend, on the GPU.

Why: the first document after a load spent ~1.7 s in 24 first calls of ``scaled_dot_product_attention``
(75-85 ms each, the cuDNN backend building a plan per shape) and ~0.35 s in first calls of ``conv2d``;
a document of another length paid them again for its new batch shapes (``profile_firstdoc.py``, H200).
Which backends have no per-shape cost, and what do they cost in steady state? This times, for the
vision encoder's and the prefill's real shapes, the first call (host wall, synchronised) and the
median of later calls (CUDA events) of each SDPA backend, of ``conv2d`` and of ``linear``.

usage (H200): python bench/bench_first_calls.py --out first_calls.json
CPU smoke:    python bench/bench_first_calls.py --device cpu --quick
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

# (label, batch sizes, heads, tokens, head dim of q/k, head dim of v, causal)
ATTENTION = [
    ("SAM window 14x14", (1, 25, 96, 200), 12, 196, 96, 96, False),
    ("SAM global 1024", (1, 7), 12, 4096, 192, 192, False),
    ("SAM global 768", (1, 6), 12, 2304, 160, 160, False),
    ("encoder 1024 view", (1, 7), 14, 512, 64, 64, False),
    ("encoder 768 tile", (6, 42), 14, 288, 64, 64, False),
    ("prefill", (1, 4), 10, 1131, 128, 128, True),
    # decode steps: one query token against the slot's keys (q tokens given apart: see DECODE_Q)
    ("decode kv 1280", (1, 16, 64), 10, 1280, 128, 128, False),
    ("decode kv 1792", (1, 16, 64), 10, 1792, 128, 128, False),
]
DECODE_Q = 1  # query tokens of the "decode" rows
# (label, in channels, out channels, kernel, stride, side, batch sizes)
CONV = [
    ("patch embed 1024", 3, 768, 16, 16, 1024, (1, 7)),
    ("neck 1x1", 768, 256, 1, 1, 64, (1, 8)),
    ("neck 3x3", 256, 256, 3, 1, 64, (1, 8)),
    ("down 3x3 s2", 256, 512, 3, 2, 64, (1, 8)),
    ("down 3x3 s2 (2)", 512, 896, 3, 2, 32, (1, 8)),
]
LINEAR = [("router", (1131, 4524, 60), 1280, 64), ("mlp in", (196 * 25, 196 * 96), 768, 2304)]


def _time(fn, device: str, reps: int) -> tuple[float, float]:
    """(first call ms, median ms of ``reps`` later calls)."""
    import torch

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    first = (time.perf_counter() - t0) * 1e3
    times = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return round(first, 2), round(statistics.median(times), 3)


def attention_rows(device: str, reps: int, quick: bool) -> list[dict]:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}  # fmt: skip
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    rows = []
    for label, batches, heads, tokens, dq, dv, causal in ATTENTION:
        if quick:
            batches, tokens = batches[:1], min(tokens, 64)
        for name, backend in backends.items():
            if device != "cuda" and name != "math":
                continue
            for b in batches:
                q_tokens = DECODE_Q if label.startswith("decode") else tokens
                q = torch.randn(b, heads, q_tokens, dq, device=device, dtype=dtype)
                k = torch.randn(b, heads, tokens, dq, device=device, dtype=dtype)
                v = torch.randn(b, heads, tokens, dv, device=device, dtype=dtype)

                def run(q=q, k=k, v=v, backend=backend, causal=causal):
                    with sdpa_kernel([backend]):
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                try:
                    first, steady = _time(run, device, reps)
                    rows.append(
                        {"op": label, "backend": name, "batch": b, "first_ms": first, "steady_ms": steady}
                    )
                except RuntimeError as exc:
                    rows.append(
                        {"op": label, "backend": name, "batch": b, "error": str(exc).splitlines()[0][:120]}
                    )
                del q, k, v
    return rows


def decode_step_rows(device: str, reps: int, quick: bool) -> list[dict]:
    """The decode step's attention as the step calls it: torch's SDPA with a length mask over a length
    bucket of the slot buffers (``attention="sdpa"``), and the split-K Triton kernel over the whole slot
    length with each row's length on the device (``attention="auto"``); 10 heads of 128, slots of 2048."""
    import torch
    import torch.nn.functional as F

    if device != "cuda":
        return []
    from ocr_app.models.deepseek_ocr2.decoding import kernels as dk

    rows = []
    heads, d, slot_len = 10, 128, 2048
    for b in (1,) if quick else (1, 16, 64):
        kc = torch.randn(b, heads, slot_len, d, device=device, dtype=torch.bfloat16)
        vc = torch.randn_like(kc)
        q = torch.randn(b, heads, 1, d, device=device, dtype=torch.bfloat16)
        for used in (1280,) if quick else (1280, 1792):
            pos = torch.full((b,), used - 1, dtype=torch.long, device=device)
            lb = min(slot_len, -(-used // 256) * 256)
            keep = torch.arange(lb, device=device)[None, :] <= pos[:, None]

            def sdpa(kc=kc, vc=vc, q=q, keep=keep, lb=lb):
                mask = torch.zeros(keep.shape, dtype=q.dtype, device=q.device).masked_fill_(
                    ~keep, float("-inf")
                )
                F.scaled_dot_product_attention(
                    q, kc[:, :, :lb], vc[:, :, :lb], attn_mask=mask[:, None, None, :]
                )

            def split_k(kc=kc, vc=vc, q=q, pos=pos):
                dk.decode_attention(q, kc, vc, pos, d**-0.5, slot_len)

            for name, fn in (("sdpa + mask", sdpa), ("split-K triton", split_k)):
                first, steady = _time(fn, device, reps)
                rows.append({"op": f"decode step attention, {used} keys", "backend": name, "batch": b,
                             "first_ms": first, "steady_ms": steady})  # fmt: skip
        del kc, vc
    return rows


def conv_rows(device: str, reps: int, quick: bool) -> list[dict]:
    import torch
    import torch.nn.functional as F

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    rows = []
    for label, cin, cout, ks, stride, side, batches in CONV:
        if quick:
            batches, side = batches[:1], min(side, 64)
        w = torch.randn(cout, cin, ks, ks, device=device, dtype=dtype)
        for b in batches:
            x = torch.randn(b, cin, side, side, device=device, dtype=dtype)
            first, steady = _time(
                lambda x=x, w=w, s=stride, pad=ks // 2 if ks == 3 else 0: F.conv2d(
                    x, w, stride=s, padding=pad
                ),
                device,
                reps,
            )
            rows.append(
                {"op": label, "backend": "conv2d", "batch": b, "first_ms": first, "steady_ms": steady}
            )
            if ks == stride:  # a patch embedding is a matmul over unfolded patches

                def unfolded(x=x, w=w, ks=ks, cin=cin, cout=cout):
                    p = (
                        x.unfold(2, ks, ks)
                        .unfold(3, ks, ks)
                        .permute(0, 2, 3, 1, 4, 5)
                        .reshape(-1, cin * ks * ks)
                    )
                    return p @ w.view(cout, -1).t()

                first, steady = _time(unfolded, device, reps)
                rows.append(
                    {
                        "op": label,
                        "backend": "unfold+matmul",
                        "batch": b,
                        "first_ms": first,
                        "steady_ms": steady,
                    }
                )
            if ks == 1:

                def as_linear(x=x, w=w, cin=cin, cout=cout):
                    return F.linear(x.permute(0, 2, 3, 1), w.view(cout, cin))

                first, steady = _time(as_linear, device, reps)
                rows.append(
                    {"op": label, "backend": "linear", "batch": b, "first_ms": first, "steady_ms": steady}
                )
    return rows


def linear_rows(device: str, reps: int, quick: bool) -> list[dict]:
    import torch
    import torch.nn.functional as F

    rows = []
    for label, ms, fin, fout in LINEAR:
        for dtype in (torch.bfloat16, torch.float32) if device == "cuda" else (torch.float32,):
            w = torch.randn(fout, fin, device=device, dtype=dtype)
            for m in ms[:1] if quick else ms:
                x = torch.randn(m, fin, device=device, dtype=dtype)
                first, steady = _time(lambda x=x, w=w: F.linear(x, w), device, reps)
                rows.append({"op": f"{label} {str(dtype)[6:]}", "backend": "linear", "batch": m,
                             "first_ms": first, "steady_ms": steady})  # fmt: skip
    return rows


def table(rows: list[dict]) -> str:
    out = ["| op | backend | batch | first call ms | steady ms |", "|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['op']} | {r['backend']} | {r['batch']} | — | {r['error']} |")
        else:
            out.append(f"| {r['op']} | {r['backend']} | {r['batch']} | {r['first_ms']} | {r['steady_ms']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--quick", action="store_true", help="one small shape per op (smoke run)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    import torch

    if args.device == "cuda":
        torch.zeros(1, device="cuda")  # context first: its cost is no op's first call
    rows = attention_rows(args.device, args.reps, args.quick)
    rows += decode_step_rows(args.device, args.reps, args.quick)
    rows += conv_rows(args.device, args.reps, args.quick)
    rows += linear_rows(args.device, args.reps, args.quick)
    print(table(rows), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
