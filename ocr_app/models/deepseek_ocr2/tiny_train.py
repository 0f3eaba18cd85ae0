"""Train the tiny DeepSeek-OCR-2 until greedy decoding reproduces the ``tiny_pages`` transcripts exactly.

Why: random weights never emit EOS or a grounding tag, so EOS stopping, parsing of generated tags, the
guard's ``<td>`` exemption and quantisation fidelity ran nowhere. A model whose output is known makes
them testable on a CPU. The recipe (measured, not assumed):

* the vision side (SAM, encoder, projector, view separator) stays random and frozen, so each page's
  vision features are computed once through the real ``get_image_features``;
* only the decoder is trained, and of the 129,280-row embedding and ``lm_head`` only the rows of ids
  that occur in prompts and transcripts (a few hundred). The loss is a softmax over those ids plus one
  "any other token" logit fixed at 0, and every other ``lm_head`` row is set to exactly 0 in the saved
  model: an unseen token's logit is 0, below the target's, so full-vocabulary greedy decoding picks
  what the restricted softmax picked;
* training stops when, teacher-forced, every position's target wins by at least ``margin`` logits
  (greedy decoding then reproduces the transcript by induction; the margin absorbs bf16/fp16 rounding).

Training is chaotic across machines (float32 Adam with early stopping amplifies rounding: AVX2 and
AVX-512 stopped 200 steps apart with other weights), so the trained tensors are pinned in
``tiny_trained.safetensors`` (0.85 MB, made by ``python -m ocr_app.models.deepseek_ocr2.tiny_train``)
on top of ``tiny.new_model``'s machine-independent random weights: every machine builds the same model
in seconds. They are used only while they still read the pages by the margin; after a change to the
pages, the tokenizer or the architecture they no longer fit and the model is trained here instead.

The result is cached under ``<cache dir>/tiny-model/<recipe hash>``; the hash covers this file, the
pinned weights, the pages, the config, the tokenizer, the torch/transformers versions and the CPU
capability, so any change rebuilds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocr_app.exceptions import ModelLoadError

logger = logging.getLogger(__name__)

MARGIN_GOAL = 4.0  # the hinge aims above Recipe.margin, so training stops soon after crossing it


@dataclass(frozen=True)
class Recipe:
    """Training knobs; part of the cache key."""

    seed: int = 0
    lr: float = 1e-2  # Adam; decays linearly to lr / 10 at max_steps (constant 2e-2 oscillated late)
    margin: float = 3.0
    max_steps: int = 800
    threads: int = 1  # measured: tiny ops on 2 threads were 45x slower on a loaded 2-core machine


PINNED = Path(__file__).with_name("tiny_trained.safetensors")
PIN_SLACK = 0.1  # pinned weights pass at margin - slack: another CPU's rounding moves the margin ~1e-4


def _recipe_hash(recipe: Recipe) -> str:
    """Key of the built checkpoint: sources, pinned weights, recipe, library versions, CPU capability.

    The CPU capability is in because weights trained here (when the pinned ones do not fit) differ from
    one instruction set to another (measured: AVX2 stopped at 439 steps, AVX-512 at 641).
    """
    import torch
    import transformers

    from ocr_app.models.deepseek_ocr2 import configs, realtok, tiny, tiny_pages

    h = hashlib.sha256()
    for mod in (configs, realtok, tiny, tiny_pages):
        h.update(Path(mod.__file__).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(PINNED.read_bytes() if PINNED.is_file() else b"no pinned weights")
    h.update(json.dumps(recipe.__dict__, sort_keys=True).encode())
    h.update(f"{torch.__version__}|{transformers.__version__}|{cpu_capability()}".encode())
    return h.hexdigest()[:16]


def cpu_capability() -> str:
    """The instruction set torch's CPU kernels run with here (``ATEN_CPU_CAPABILITY`` can lower it)."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def default_model_dir(recipe: Recipe = Recipe()) -> Path:
    """``<cache dir>/tiny-model/<recipe hash>``."""
    from ocr_app.models.deepseek_ocr2.realtok import default_tokenizer_dir

    return default_tokenizer_dir().parent / "tiny-model" / _recipe_hash(recipe)


@dataclass
class _Sample:
    ids: list[int]  # prompt + transcript + EOS
    prompt_len: int
    features: Any  # [vision tokens, hidden]


def _samples(model, tokenizer, processor) -> list[_Sample]:
    import torch

    from ocr_app.models.deepseek_ocr2.modes import apply_max_side, resolve_mode
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt
    from ocr_app.models.deepseek_ocr2.tiny_pages import PAGES, PROMPT, render_pages

    prompt = resolve_prompt(PROMPT)
    out = []
    for page, image in zip(PAGES, render_pages(), strict=True):
        spec = resolve_mode(page.mode, image)
        image = apply_max_side(spec, image)
        enc = processor(images=image, text=prompt, return_tensors="pt", **spec.images_kwargs)
        with torch.no_grad():
            local = enc.get("pixel_values_local")
            feats = model.get_image_features(
                pixel_values=enc["pixel_values"],
                pixel_values_local=local,
                num_local_patches=[int(x) for x in enc["num_local_patches"]],
            ).pooler_output[0]
        prompt_ids = enc["input_ids"][0].tolist()
        target = [*tokenizer.encode(page.transcript(), add_special_tokens=False), tokenizer.eos_token_id]
        out.append(_Sample(prompt_ids + target, len(prompt_ids), feats.detach()))
    return out


@dataclass
class _Setup:
    """A fresh model with frozen random vision weights, its pages' features and the ids they use."""

    model: Any
    tokenizer: Any
    samples: list[_Sample]
    used: list[int]  # every id of prompts and transcripts except ``<image>``, sorted
    image_id: int

    def batches(self) -> list[dict[str, Any]]:
        import torch

        remap = torch.full((self.model.config.text_config.vocab_size,), -1, dtype=torch.long)
        remap[torch.tensor(self.used)] = torch.arange(len(self.used))
        return _batches(self.samples, remap, self.image_id)


def _setup(recipe: Recipe, tokenizer: Any = None) -> _Setup:
    from ocr_app.models.deepseek_ocr2.realtok import load_tokenizer
    from ocr_app.models.deepseek_ocr2.tiny import make_processor, new_model, special_ids

    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    model = new_model(tokenizer, recipe.seed)
    samples = _samples(model, tokenizer, make_processor(tokenizer))
    image_id = special_ids(tokenizer)["image"]
    used = sorted({t for s in samples for t in s.ids} - {image_id})
    return _Setup(model, tokenizer, samples, used, image_id)


def train(recipe: Recipe = Recipe(), tokenizer: Any = None) -> tuple[Any, Any, dict[str, float]]:
    """Train and return ``(model, tokenizer, stats)``; ``ModelLoadError`` if the margin is not reached."""
    setup, stats = _trained(recipe, tokenizer)
    return setup.model, setup.tokenizer, stats


def _trained(recipe: Recipe, tokenizer: Any = None) -> tuple[_Setup, dict[str, float]]:
    import torch

    t0 = time.perf_counter()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        setup = _setup(recipe, tokenizer)
        stats = {"features_seconds": time.perf_counter() - t0, **_train_decoder(setup, recipe)}
    finally:
        torch.set_num_threads(old_threads)
    stats["seconds"] = time.perf_counter() - t0
    logger.info("trained tiny model: %s", stats)
    setup.model.eval()
    return setup, stats


def _train_decoder(setup: _Setup, recipe: Recipe) -> dict[str, float]:
    """Train the decoder of ``setup.model`` in place until every transcript token wins by the margin."""
    import torch

    model, used = setup.model, setup.used
    lm = model.model.language_model
    embed = torch.nn.Parameter(lm.embed_tokens.weight.detach()[used].clone())
    rng = torch.Generator().manual_seed(recipe.seed)
    head = torch.nn.Parameter(torch.zeros(len(used), embed.shape[1]).normal_(0, 0.02, generator=rng))
    for p in model.parameters():
        p.requires_grad_(False)
    body = [p for n, p in lm.named_parameters() if not n.startswith("embed_tokens")]
    for p in body:
        p.requires_grad_(True)
    opt = torch.optim.Adam([*body, embed, head], lr=recipe.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 1.0 - 0.9 * min(k, recipe.max_steps) / recipe.max_steps
    )
    batches = setup.batches()
    experts = lm.config._experts_implementation
    lm.config._experts_implementation = "eager"  # measured: 2x faster than grouped_mm for CPU training
    lm.train()
    step, margin, loss_v = 0, float("-inf"), float("nan")
    try:
        while step < recipe.max_steps:
            step += 1
            opt.zero_grad(set_to_none=True)
            total, margin = 0.0, float("inf")
            for b in batches:
                loss, m = _batch_loss(lm, embed, head, b)
                loss.backward()
                total += float(loss.detach())
                margin = min(margin, m)
            loss_v = total
            if margin >= recipe.margin:
                break
            opt.step()
            sched.step()
            if step % 5 == 0:
                logger.info("step %d loss %.4f min margin %.2f", step, total, margin)
    finally:
        lm.eval()
        lm.config._experts_implementation = experts
        for p in model.parameters():
            p.requires_grad_(False)
    if margin < recipe.margin:
        raise ModelLoadError(
            f"The tiny model did not learn its pages: margin {margin:.2f} < {recipe.margin} after {step} steps."
        )
    _install_rows(model, used, embed.detach(), head.detach())
    return {"steps": step, "loss": loss_v, "min_margin": margin, "used_ids": len(used)}


def _install_rows(model, used: list[int], embed, head) -> None:
    """Write the trained rows; every other ``lm_head`` row becomes exactly 0 (see the module doc)."""
    import torch

    with torch.no_grad():
        idx = torch.tensor(used)
        model.model.language_model.embed_tokens.weight[idx] = embed
        model.lm_head.weight.zero_()
        model.lm_head.weight[idx] = head


def reading_margin(setup: _Setup) -> float:
    """Teacher-forced, the smallest lead of a transcript token over every other id of the full model."""
    import torch

    model, idx = setup.model, torch.tensor(setup.used)
    lm = model.model.language_model
    with torch.no_grad():
        embed, head = lm.embed_tokens.weight[idx], model.lm_head.weight[idx]
        others_zero = bool((model.lm_head.weight.abs().sum(1) > 0).nonzero()[:, 0].tolist() == setup.used)
        margins = [_batch_loss(lm, embed, head, b)[1] for b in setup.batches()]
    # the restricted softmax (used ids + one 0 logit) equals the full one only while other rows are 0
    return min(margins) if others_zero else float("-inf")


def pin(path: Path = PINNED, recipe: Recipe = Recipe()) -> dict[str, float]:
    """Train here and write the trained tensors to ``path`` (run after changing the pages or the model).

    Stored: the decoder without its embedding, the embedding and ``lm_head`` rows of the used ids, and
    those ids — 0.85 MB; the frozen rest is ``tiny.new_model``'s, the same bytes on every machine.
    """
    import torch
    from safetensors.torch import save_file

    setup, stats = _trained(recipe)
    model, idx = setup.model, torch.tensor(setup.used)
    lm = model.model.language_model
    tensors = {
        f"body.{n}": p.detach().contiguous()
        for n, p in lm.named_parameters()
        if not n.startswith("embed_tokens")
    }
    tensors["embed_rows"] = lm.embed_tokens.weight.detach()[idx].contiguous()
    tensors["head_rows"] = model.lm_head.weight.detach()[idx].contiguous()
    tensors["used_ids"] = idx.contiguous()
    meta = {"recipe": recipe.__dict__, "stats": stats, "cpu": cpu_capability()}
    save_file(tensors, str(path), metadata={"pinned": json.dumps(meta, sort_keys=True)})
    logger.info("pinned the trained tiny decoder in %s (%d bytes)", path, path.stat().st_size)
    return stats


def _load_pinned(setup: _Setup, path: Path) -> bool:
    """Put the pinned decoder into ``setup.model``; False when the file does not fit these pages/model."""
    import torch
    from safetensors.torch import load_file

    if not path.is_file():
        return False
    state = load_file(str(path))
    used = state.pop("used_ids").tolist()
    if used != setup.used:
        logger.warning("pinned tiny weights are for other transcripts or tokenizer ids: training instead")
        return False
    embed, head = state.pop("embed_rows"), state.pop("head_rows")
    lm = setup.model.model.language_model
    body = {n: p for n, p in lm.named_parameters() if not n.startswith("embed_tokens")}
    if {f"body.{n}" for n in body} != set(state) or any(
        state[f"body.{n}"].shape != p.shape for n, p in body.items()
    ):
        logger.warning("pinned tiny weights are for another architecture: training instead")
        return False
    with torch.no_grad():
        for n, p in body.items():
            p.copy_(state[f"body.{n}"])
    _install_rows(setup.model, used, embed, head)
    return True


def trained_model(recipe: Recipe = Recipe(), pinned: Path = PINNED) -> tuple[Any, Any, dict[str, Any]]:
    """``(model, tokenizer, stats)``: the pinned decoder when it still reads the pages, else trained here."""
    import torch

    t0 = time.perf_counter()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        setup = _setup(recipe)
        stats: dict[str, Any] = {"features_seconds": time.perf_counter() - t0}
        if _load_pinned(setup, pinned):
            margin = reading_margin(setup)
            if margin >= recipe.margin - PIN_SLACK:
                stats.update(source="pinned", min_margin=margin, used_ids=len(setup.used))
            else:
                logger.warning("pinned tiny weights read the pages by %.2f < %.2f only: training instead",
                               margin, recipe.margin - PIN_SLACK)  # fmt: skip
                setup = _setup(recipe, setup.tokenizer)
        if "source" not in stats:
            logger.warning("training the tiny model on the CPU (a few minutes, once)")
            stats.update(source="trained here", **_train_decoder(setup, recipe))
    finally:
        torch.set_num_threads(old_threads)
    stats["seconds"] = time.perf_counter() - t0
    logger.info("tiny model ready: %s", stats)
    return setup.model.eval(), setup.tokenizer, stats


def _batches(samples: list[_Sample], remap, image_id: int) -> list[dict[str, Any]]:
    """Right-padded batches of samples with the same prompt length (causal: padding never leaks back)."""
    import torch

    groups: dict[int, list[_Sample]] = {}
    for s in samples:
        groups.setdefault(s.prompt_len, []).append(s)
    out = []
    for group in groups.values():
        width = max(len(s.ids) for s in group) - 1
        ids = torch.zeros(len(group), width, dtype=torch.long)
        labels = torch.full((len(group), width), -100, dtype=torch.long)
        is_image = torch.zeros(len(group), width, dtype=torch.bool)
        for i, s in enumerate(group):
            seq = torch.tensor(s.ids)
            n = len(s.ids) - 1
            is_image[i, :n] = seq[:-1] == image_id
            ids[i, :n] = torch.where(is_image[i, :n], 0, remap[seq[:-1]])
            labels[i, s.prompt_len - 1 : n] = remap[seq[s.prompt_len :]]
        features = torch.cat([s.features for s in group])
        out.append(
            {
                "ids": ids,
                "labels": labels,
                "is_image": is_image,
                "features": features,
                "start": group[0].prompt_len - 1,  # the prompt's last token predicts the first output
            }
        )
    return out


def _batch_loss(lm, embed, head, b: dict[str, Any]):
    """Cross-entropy over the used ids plus a 0 logit for every other id; and the smallest margin.

    The prompt (BOS, vision tokens, instruction) runs without gradient and is handed to the transcript
    part as a K/V cache: its states are exact for the current weights, only their gradient is left out.
    That measured 2x cheaper per step, and the transcript part alone carries enough signal.
    """
    import torch
    import torch.nn.functional as F

    start = b["start"]
    x = embed[b["ids"]]
    x = x.masked_scatter(b["is_image"][..., None], b["features"].to(x.dtype))
    name = _cache_name(lm)
    with torch.no_grad():
        cache = getattr(lm(inputs_embeds=x[:, :start].detach(), use_cache=True), name)
    hidden = lm(inputs_embeds=x[:, start:], **{name: cache}, use_cache=True).last_hidden_state
    labels = b["labels"][:, start:]
    mask = labels >= 0
    h = hidden[mask]
    logits = torch.cat([h @ head.T, torch.zeros(h.shape[0], 1)], dim=1)
    target = labels[mask]
    tgt = logits.gather(1, target[:, None])[:, 0]
    others = logits.scatter(1, target[:, None], float("-inf")).max(dim=1).values
    gap = tgt - others
    # cross-entropy learns the transcripts; the hinge then lifts the few positions still below the margin
    loss = (F.cross_entropy(logits, target, reduction="sum") + 0.1 * F.relu(MARGIN_GOAL - gap).sum()) / 64
    return loss, float(gap.detach().min())


def _cache_name(lm) -> str:
    """The decoder's name for its K/V cache (argument and output): ``cache`` from transformers 5.24 on,
    where the old ``past_key_values`` warns, ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(lm.forward).parameters else "past_key_values"


def build_trained_checkpoint(out_dir: Path | None = None, recipe: Recipe = Recipe()) -> Path:
    """The trained tiny checkpoint: reused from ``out_dir`` (default: the cache) when complete, else built
    (from the pinned weights, or trained here when they no longer fit)."""
    from ocr_app.models.deepseek_ocr2.tiny import save_checkpoint

    out = Path(out_dir) if out_dir is not None else default_model_dir(recipe)
    marker = out / "tiny_model.json"
    if marker.is_file():
        return out
    model, tokenizer, stats = trained_model(recipe)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save_checkpoint(model, tokenizer, tmp)
    (tmp / "tiny_model.json").write_text(json.dumps({"recipe": recipe.__dict__, "stats": stats}, indent=2))
    out.parent.mkdir(parents=True, exist_ok=True)
    if marker.is_file():  # another process finished first: keep its copy
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        shutil.rmtree(out, ignore_errors=True)  # an incomplete earlier attempt
        os.replace(tmp, out)
    logger.info("wrote trained tiny DeepSeek-OCR-2 checkpoint to %s", out)
    return out


__all__ = ["Recipe", "build_trained_checkpoint", "default_model_dir", "pin", "train", "trained_model"]

if __name__ == "__main__":  # python -m ocr_app.models.deepseek_ocr2.tiny_train: re-pin after a change
    logging.basicConfig(level=logging.INFO)
    print(json.dumps(pin(), indent=2))
