"""Calibration data for AWQ: document pages rendered with PyMuPDF at run time, and the activations
they produce in the chained units (recorded with forward hooks the model's adapter places).

Why rendered pages: AWQ's scales follow the activation statistics, which for an OCR model are set by
page images and by Markdown text. Each page is rendered from text we generate, so its Markdown is known;
the model's adapter turns (page, Markdown) into its own input (``QuantAdapter.calibration_batches``:
image + prompt + page Markdown), so the decoder sees image tokens and realistic output tokens, as in use.
No download, nothing shipped.
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

    from ocr_app.quant.adapter import QuantAdapter

logger = logging.getLogger(__name__)

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


@dataclass
class LayerActivations:
    """The inputs recorded for one chained unit, rows = tokens, by the name the adapter gave each tap
    (its recipes read them by those names: ``acts["attn_in"]``)."""

    tensors: dict[str, torch.Tensor]

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    def get(self, name: str) -> torch.Tensor | None:
        return self.tensors.get(name)

    @property
    def rows(self) -> int:
        return next(iter(self.tensors.values())).shape[0] if self.tensors else 0


@dataclass
class Calibration:
    layers: list[LayerActivations]  # one per chained unit, in order
    pages: int
    tokens: int


Recorded = dict[str, list["torch.Tensor"]]


def tap_input(module, rec: Recorded, key: str):
    """A hook appending ``module``'s input (first positional or keyword argument, rows = tokens) to
    ``rec[key]``; returns its handle."""

    def pre_hook(_mod, args, kwargs):
        x = args[0] if args else next(iter(kwargs.values()))
        rec.setdefault(key, []).append(x.detach().reshape(-1, x.shape[-1]))

    return module.register_forward_pre_hook(pre_hook, with_kwargs=True)


def tap_output(module, rec: Recorded, key: str, pick=lambda out: out):
    """A hook appending ``pick(output)`` of ``module`` (rows = tokens) to ``rec[key]``; returns its handle."""

    def hook(_mod, _args, out):
        x = pick(out)
        rec.setdefault(key, []).append(x.detach().reshape(-1, x.shape[-1]))

    return module.register_forward_hook(hook)


def layer_activations(rec: Recorded) -> LayerActivations:
    """One unit's recorded inputs, concatenated over the calibration pages."""
    import torch

    return LayerActivations({key: torch.cat(parts) for key, parts in rec.items()})


def model_inputs(batch: dict, device, dtype) -> dict:
    """A processor batch on ``device``, its floating tensors (the pixels) in the model's float dtype."""
    inputs = {k: (v.to(device) if hasattr(v, "to") else v) for k, v in batch.items()}
    for name, v in inputs.items():
        if hasattr(v, "is_floating_point") and v.is_floating_point():
            inputs[name] = v.to(dtype)
    return inputs


def collect_activations(model, batches: Iterable[dict], adapter: QuantAdapter) -> Calibration:
    """Run the (float) model over ``batches`` and record each chained unit's inputs with the adapter's hooks."""
    import torch

    from ocr_app.quant.adapter import chained_units

    units = chained_units(adapter, model)
    device = next(model.parameters()).device
    recs: list[Recorded] = [{} for _ in units]
    handles = []
    for unit, rec in zip(units, recs, strict=True):
        handles += adapter.record_inputs(model.get_submodule(unit.prefix), rec)
    pages = 0
    try:
        with torch.inference_mode():
            for batch in batches:
                model(**model_inputs(batch, device, model.dtype), logits_to_keep=1)
                pages += 1
    finally:
        for h in handles:
            h.remove()
    layers = [layer_activations(rec) for rec in recs]
    tokens = layers[0].rows if layers else 0
    logger.info("calibration: %d pages, %d tokens per layer", pages, tokens)
    return Calibration(layers=layers, pages=pages, tokens=tokens)
