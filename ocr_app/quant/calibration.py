"""Calibration data for AWQ: document pages rendered with PyMuPDF at run time, and the decoder
activations they produce (recorded with forward hooks).

Why rendered pages: AWQ's scales follow the activation statistics, which for an OCR model are set by
page images (≈1,100 vision tokens per page) and by Markdown text. Each page is rendered from text we
generate, so its Markdown is known and the calibration sequence is ``image + prompt + page Markdown``:
the decoder sees vision tokens and realistic output tokens, as in use. No download, nothing shipped.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    import torch
    from PIL import Image

logger = logging.getLogger(__name__)

CALIB_PROMPT = "<image>\n<|grounding|>Convert the document to markdown."
_WORDS = [
    "the",
    "model",
    "reads",
    "each",
    "page",
    "and",
    "writes",
    "markdown",
    "with",
    "tables",
    "formulas",
    "headings",
    "and",
    "lists",
    "revenue",
    "quarter",
    "total",
    "result",
    "method",
    "figure",
    "data",
    "value",
    "section",
    "analysis",
    "report",
    "table",
    "average",
    "growth",
    "invoice",
    "number",
    "date",
    "amount",
    "customer",
    "address",
    "summary",
    "conclusion",
    "introduction",
    "experiment",
    "sample",
]


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def render_calibration_pages(n: int, seed: int = 0, dpi: int = 144) -> list[tuple[Image.Image, str]]:
    """``n`` A4 pages (title, paragraphs, a ruled table, a formula line, a list) rendered with
    PyMuPDF; returns (RGB image, the page's Markdown)."""
    import fitz  # PyMuPDF
    from PIL import Image

    rng = random.Random(seed)
    pages: list[tuple[Image.Image, str]] = []
    doc = fitz.open()
    try:
        for i in range(n):
            page = doc.new_page(width=595, height=842)
            md: list[str] = []
            title = f"{_sentence(rng, 4)[:-1]} {i + 1}"
            page.insert_text((56, 70), title, fontsize=20, fontname="hebo")
            md.append(f"# {title}")
            y = 105
            for _ in range(3):
                para = " ".join(_sentence(rng, rng.randint(8, 14)) for _ in range(3))
                rect = fitz.Rect(56, y, 540, y + 80)
                page.insert_textbox(rect, para, fontsize=10, fontname="helv")
                md.append(para)
                y += 88
            rows, cols = 4, 4
            cells = [[f"{rng.choice(_WORDS)}" if r == 0 else f"{rng.randint(1, 9999)}" for _ in range(cols)]
                     for r in range(rows)]  # fmt: skip
            for r in range(rows + 1):
                page.draw_line((56, y + r * 20), (56 + cols * 110, y + r * 20))
            for c in range(cols + 1):
                page.draw_line((56 + c * 110, y), (56 + c * 110, y + rows * 20))
            for r in range(rows):
                for c in range(cols):
                    page.insert_text((62 + c * 110, y + r * 20 + 14), cells[r][c], fontsize=10)
            md.append(
                "<table>"
                + "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in cells)
                + "</table>"
            )
            y += rows * 20 + 30
            a, b = rng.randint(2, 9), rng.randint(2, 9)
            formula = f"E = m c^{a} + \\frac{{{a}}}{{{b}}} \\sum_i x_i"
            page.insert_text((120, y), formula, fontsize=12, fontname="tiro")
            md.append(f"\\[{formula}\\]")
            y += 30
            for j in range(4):
                item = _sentence(rng, rng.randint(5, 9))
                page.insert_text((70, y + j * 18), f"- {item}", fontsize=10)
                md.append(f"- {item}")
            pix = page.get_pixmap(dpi=dpi)
            img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
            pages.append((img, "\n\n".join(md)))
    finally:
        doc.close()
    return pages


def calibration_batches(
    processor, pages: list[tuple[Image.Image, str]], max_text_tokens: int = 384, **images_kwargs
) -> list[dict]:
    """Processor outputs (one page per batch) for ``image + prompt + Markdown`` sequences.

    ``images_kwargs`` go to the image processor (e.g. ``max_patches=2`` for fewer tiles in tests).
    """
    tok = processor.tokenizer
    batches = []
    for img, md in pages:
        ids = tok(md, add_special_tokens=False)["input_ids"][:max_text_tokens]
        text = CALIB_PROMPT + tok.decode(ids)
        batches.append(dict(processor(images=img, text=text, return_tensors="pt", **images_kwargs)))
    return batches


@dataclass
class LayerActivations:
    """Inputs recorded for one decoder layer, rows = tokens: attention input (after the input norm),
    ``o_proj`` input, MLP input (after the post-attention norm), and routed expert ids (sparse)."""

    attn_in: torch.Tensor
    o_in: torch.Tensor
    mlp_in: torch.Tensor
    topk: torch.Tensor | None


@dataclass
class Calibration:
    layers: list[LayerActivations]
    pages: int
    tokens: int


def record_layer_inputs(layer, i: int, rec: dict[tuple[int, str], list[torch.Tensor]]) -> list:
    """Hooks on decoder layer ``layer`` (index ``i``) that append its AWQ inputs to ``rec``; returns the
    handles (remove them when done). Shared by the whole-model and the streaming (layer-by-layer) paths."""

    def keep(key):
        def pre_hook(_mod, args, kwargs=None):
            x = args[0] if args else next(iter(kwargs.values()))
            rec.setdefault(key, []).append(x.detach().reshape(-1, x.shape[-1]))

        return pre_hook

    def keep_topk(key):
        def hook(_mod, _args, out):
            rec.setdefault(key, []).append(out[2].detach().reshape(-1, out[2].shape[-1]))

        return hook

    handles = [
        layer.self_attn.q_proj.register_forward_pre_hook(keep((i, "attn_in"))),
        layer.self_attn.o_proj.register_forward_pre_hook(keep((i, "o_in"))),
        layer.mlp.register_forward_pre_hook(keep((i, "mlp_in")), with_kwargs=True),
    ]
    if hasattr(layer.mlp, "gate"):
        handles.append(layer.mlp.gate.register_forward_hook(keep_topk((i, "topk"))))
    return handles


def layer_activations(rec: dict[tuple[int, str], list[torch.Tensor]], i: int) -> LayerActivations:
    """The recorded inputs of layer ``i``, concatenated over the calibration pages."""
    import torch

    topk = rec.get((i, "topk"))
    return LayerActivations(
        attn_in=torch.cat(rec[(i, "attn_in")]),
        o_in=torch.cat(rec[(i, "o_in")]),
        mlp_in=torch.cat(rec[(i, "mlp_in")]),
        topk=torch.cat(topk) if topk else None,
    )


def model_inputs(batch: dict, device, dtype) -> dict:
    """A processor batch on ``device``, pixels in the model's float dtype."""
    inputs = {k: (v.to(device) if hasattr(v, "to") else v) for k, v in batch.items()}
    for name in ("pixel_values", "pixel_values_local"):
        if inputs.get(name) is not None:
            inputs[name] = inputs[name].to(dtype)
    return inputs


def collect_activations(model, batches: Iterable[dict]) -> Calibration:
    """Run the (float) model over ``batches`` and record each decoder layer's inputs with hooks."""
    import torch

    lm = model.model.language_model
    device = next(model.parameters()).device
    rec: dict[tuple[int, str], list[torch.Tensor]] = {}
    handles = []
    for i, layer in enumerate(lm.layers):
        handles += record_layer_inputs(layer, i, rec)
    pages = 0
    try:
        with torch.inference_mode():
            for batch in batches:
                model(**model_inputs(batch, device, model.dtype), logits_to_keep=1)
                pages += 1
    finally:
        for h in handles:
            h.remove()
    layers = [layer_activations(rec, i) for i in range(len(lm.layers))]
    tokens = layers[0].attn_in.shape[0] if layers else 0
    logger.info("calibration: %d pages, %d tokens per layer", pages, tokens)
    return Calibration(layers=layers, pages=pages, tokens=tokens)
