"""One decode step over the slots: a token for every running page, all on the device.

The step is written over the model's own modules and weights (embedding, RMSNorm, q/k/v/o projections,
the rotary module, the MoE block through the configured experts implementation, lm_head), so quantized
drop-in modules work unchanged; only attention is ours (SDPA with a per-row length mask over the slot
K/V buffers). Greedy choice, the no-repeat n-gram guard and the stop rules are tensor ops on the
device: no host sync per token, so the step can be captured in a CUDA graph (``graphs``).

On CUDA the step has a fused twin (``_step_fused``, kernels in ``kernels``): same math in ~270
launches instead of ~950, which is what a launch-bound step needs (GUIDE §2, docs/PERFORMANCE.md).
It is used where the norms are the stock ones and no layer is hooked; quantized drop-ins
(``ocr_app.quant``) get the same fused routing and combine, with q/k/v and each SwiGLU's gate/up in one
W4 GEMV launch each; ``kernels="torch"`` keeps the module step.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ocr_app.exceptions import ConfigError
from ocr_app.models.deepseek_ocr2.decoding.guard import ban_repeated_ngrams_, tail_loops
from ocr_app.models.deepseek_ocr2.decoding.interface import DecoderOptions
from ocr_app.models.deepseek_ocr2.decoding.slots import SlotState

logger = logging.getLogger(__name__)


def text_parts(model: Any) -> tuple[Any, Any]:
    """(decoder text model, lm_head) of a DeepSeek-OCR-2 model."""
    inner = getattr(model, "model", None)
    lm = getattr(inner, "language_model", None)
    head = getattr(model, "lm_head", None)
    if lm is None or head is None:
        raise ConfigError(f"{type(model).__name__} is not a DeepSeek-OCR-2 model (no language_model/lm_head)")
    return lm, head


class DecodeStep:
    """The forward step and the token choice over one ``SlotState``."""

    def __init__(self, model: Any, slots: SlotState, options: DecoderOptions) -> None:
        self.lm, self.lm_head = text_parts(model)
        self.slots = slots
        self.options = options
        cfg = self.lm.config
        attn0 = self.lm.layers[0].self_attn
        self.head_dim = int(attn0.head_dim)
        self.kv_heads = int(cfg.num_key_value_heads)
        self.heads = int(cfg.num_attention_heads)
        self._rope = sys.modules[type(attn0).__module__].apply_rotary_pos_emb
        self._setup_kernels(options.kernels, slots.device)

    def _setup_kernels(self, mode: str, device: Any) -> None:
        """Pick the fused-kernel step where Triton runs and the modules are the stock ones."""
        from ocr_app.models.deepseek_ocr2.decoding import kernels as dk

        if mode not in ("auto", "triton", "torch"):
            raise ConfigError(f"kernels must be auto, triton or torch, not {mode!r}")
        want = mode == "triton" or (mode == "auto" and device.type == "cuda")
        if want and not dk.available():
            if mode == "triton":
                raise ConfigError("kernels='triton' needs the triton package")
            want = False
        layers = self.lm.layers
        norms = [self.lm.norm] + [
            n for ly in layers for n in (ly.input_layernorm, ly.post_attention_layernorm)
        ]
        # forward hooks on decoder layers (e.g. the fp16 overflow clamp) run only in the module step
        hooked = any(ly._forward_hooks or ly._forward_pre_hooks for ly in layers)
        self.fused = want and not hooked and all(dk.fusable_norm(n) for n in norms)
        self._fused_moe = [dk.moe_kind(ly.mlp) if self.fused else None for ly in layers]
        # quantised projections: q/k/v in one launch, a SwiGLU's gate/up in one launch
        self._qkv = [dk.quant_qkv(ly.self_attn) if self.fused else None for ly in layers]
        self._ffn = [
            (ly.mlp.shared_experts if kind else ly.mlp) if self.fused else None
            for ly, kind in zip(layers, self._fused_moe, strict=True)
        ]
        self._swiglu = [dk.quant_swiglu(f) if f is not None else None for f in self._ffn]
        if self.options.attention not in ("auto", "sdpa"):
            raise ConfigError(f"attention must be auto or sdpa, not {self.options.attention!r}")
        # split-K attention: lengths read on the device, so one graph per batch serves every length
        self.length_free = (
            self.fused
            and self.options.attention == "auto"
            and dk.attention_fits(self.heads, self.kv_heads, self.head_dim)
        )
        if want and not self.fused:
            logger.info("decode: hooked layers or non-standard norms; using the module step")

    def __call__(self, b: int, lb: int) -> None:
        """One token for slots [0, b) attending to positions [0, lb). Graph-capturable."""
        if self.fused:
            self._step_fused(b, lb)
        else:
            self._step(b, lb)

    def take_token(self, rows, seq_rows, logits, seq_len, run, advance: bool) -> None:
        """Guard, greedy choice, bookkeeping and stop flags for ``rows``; all on the device.

        ``seq_rows`` is ``slots.seq[rows]`` (a view in the step, so nothing [rows, max_len] is copied).
        """
        import torch

        s = self.slots
        guard_start = s.guard_start[rows]
        ban_repeated_ngrams_(logits, seq_rows, seq_len, guard_start, self.options.guard, s.exempt)
        if self.fused:
            from ocr_app.models.deepseek_ocr2.decoding import kernels as dk

            nxt = dk.argmax(logits)
        else:
            nxt = logits.argmax(-1)
        at = seq_len.clamp(max=s.max_len - 1)
        old = s.seq[rows, at]
        s.seq[rows, at] = torch.where(run, nxt, old)
        step = run.to(torch.long)
        gen = s.gen_count[rows] + step
        s.gen_count[rows] = gen
        if advance:
            s.kv_len[rows] = s.kv_len[rows] + step
        eos = run & (nxt[:, None] == s.eos[None, :]).any(-1)
        length = run & (gen >= s.max_new[rows])
        code = torch.where(eos, 1, torch.where(length, 2, s.stop_code[rows]))
        s.stop_code[rows] = code
        s.done[rows] = s.done[rows] | eos | length

    def _step(self, b: int, lb: int) -> None:
        """The module step: the model's own layers, our attention over the slot buffers."""
        import torch
        import torch.nn.functional as F

        s = self.slots
        rows = s.rows[:b]
        pos = s.kv_len[:b].clone()
        run = s.active[:b] & ~s.done[:b]
        tok = s.seq[:b].gather(1, pos[:, None])
        h = self.lm.embed_tokens(tok)  # [b, 1, hidden]
        cos, sin = self.lm.rotary_emb(h, pos[:, None])
        mask = (s.pos_ar[:lb][None, :] <= pos[:, None])[:, None, None, :]
        gqa = self.heads != self.kv_heads
        for i, layer in enumerate(self.lm.layers):
            attn = layer.self_attn
            x = layer.input_layernorm(h)
            q = attn.q_proj(x).view(b, 1, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(b, 1, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(b, 1, -1, self.head_dim).transpose(1, 2)
            q, k = self._rope(q, k, cos, sin)
            kc, vc = s.k[i], s.v[i]
            kc[rows, :, pos] = k[:, :, 0]
            vc[rows, :, pos] = v[:, :, 0]
            o = F.scaled_dot_product_attention(
                q, kc[:b, :, :lb], vc[:b, :, :lb], attn_mask=mask, scale=attn.scaling, enable_gqa=gqa
            )
            h = h + attn.o_proj(o.transpose(1, 2).reshape(b, 1, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
            for hook in layer._forward_hooks.values():  # as if the layer's own forward had run
                out = hook(layer, (h,), h)
                h = h if out is None else out
        h = self.lm.norm(h)
        logits = self.lm_head(h[:, -1, :]).to(torch.float32)
        self.take_token(rows, s.seq[:b], logits, pos + 1, run, advance=True)

    def _step_fused(self, b: int, lb: int) -> None:
        """Same step as ``_step`` with fused Triton kernels (see ``kernels``)."""
        import torch
        import torch.nn.functional as F

        from ocr_app.models.deepseek_ocr2.decoding import kernels as dk

        s = self.slots
        pos = s.kv_len[:b].clone()
        tok = s.seq[:b].gather(1, pos[:, None])
        h = self.lm.embed_tokens(tok[:, 0])  # [b, hidden]
        cos, sin = self.lm.rotary_emb(h, pos[:, None])
        mask = None
        if not self.length_free:
            keep = s.pos_ar[:lb][None, :] <= pos[:, None]
            mask = torch.zeros(keep.shape, dtype=h.dtype, device=h.device).masked_fill_(~keep, float("-inf"))
            mask = mask[:, None, None, :]
        gqa = self.heads != self.kv_heads
        pending, residual = h, None
        for i, layer in enumerate(self.lm.layers):
            attn = layer.self_attn
            ln1, ln2 = layer.input_layernorm, layer.post_attention_layernorm
            x, residual = dk.add_rmsnorm(pending, ln1.weight, ln1.variance_epsilon, residual)
            kc, vc = s.k[i], s.v[i]
            q = dk.rope_kv(
                *dk.project_qkv(attn, x, self._qkv[i]), cos, sin, pos, kc, vc,
                self.heads, self.kv_heads, self.head_dim,
            )  # fmt: skip
            if self.length_free:
                a = attn.o_proj(dk.decode_attention(q, kc, vc, pos, attn.scaling, lb))
            else:
                o = F.scaled_dot_product_attention(
                    q, kc[:b, :, :lb], vc[:b, :, :lb], attn_mask=mask, scale=attn.scaling, enable_gqa=gqa
                )
                a = attn.o_proj(o.transpose(1, 2).reshape(b, -1))
            x, residual = dk.add_rmsnorm(a, ln2.weight, ln2.variance_epsilon, residual)
            mlp = layer.mlp
            kind = self._fused_moe[i]
            if kind is not None:
                gate, ex = mlp.gate, mlp.experts
                idx, wt = dk.route(x, gate.weight, gate.top_k, gate.routed_scaling_factor)
                shared = dk.swiglu(self._ffn[i], x, self._swiglu[i])
                if kind == "float":
                    pending = dk.moe_experts(x, ex.gate_up_proj, ex.down_proj, idx, wt, shared=shared)
                else:
                    pending = dk.quant_moe_experts(x, ex, idx, wt, shared)
            elif self._swiglu[i] is not None:  # a quantised dense MLP
                pending = dk.swiglu(mlp, x, self._swiglu[i])
            else:
                pending = mlp(x[:, None, :])[:, 0, :]
        norm = self.lm.norm
        h, _ = dk.add_rmsnorm(pending, norm.weight, norm.variance_epsilon, residual)
        logits = self.lm_head(h).to(torch.float32)
        # guard, greedy choice and bookkeeping in 4 launches (the torch version is ~50 small kernels)
        dk.ngram_ban_(logits, s.seq, s.kv_len, s.guard_start, self.options.guard, s.exempt)
        nxt = dk.argmax(logits)
        dk.finish_token(
            nxt, s.seq, s.kv_len, s.gen_count, s.max_new, s.stop_code, s.done, s.active, s.eos, b,
        )  # fmt: skip

    def check_loops(self, b: int) -> None:
        """Stop rows [0, b) whose generated tail loops (``LoopSpec``); run between chunks, not per token."""
        import torch

        s = self.slots
        run = s.active[:b] & ~s.done[:b]
        gen_start = s.prompt_len[:b]
        loops = run & tail_loops(s.seq[:b], s.kv_len[:b] + 1, gen_start, self.options.loop)
        s.stop_code[:b] = torch.where(loops, 3, s.stop_code[:b])
        s.done[:b] = s.done[:b] | loops


__all__ = ["DecodeStep", "text_parts"]
