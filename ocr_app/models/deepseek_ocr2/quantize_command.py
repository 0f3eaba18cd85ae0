"""``ocr-app quantize``: write a pre-quantised DeepSeek-OCR-2 checkpoint once, load it fast afterwards.

Why in the wing: the command knows the model (where its checkpoints come from, its quantisation adapter
and recipes in ``quant_recipes``); ``ocr_app.quant`` does the quantising and knows no model.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from ocr_app.choices import QUANT_PRESETS
from ocr_app.exceptions import InputError, OcrError

logger = logging.getLogger(__name__)


@click.command("quantize")
@click.option(
    "--model", "src", required=True, help="Local float checkpoint directory (or hub id, if cached)."
)
@click.option("--out", "out_dir", required=True, type=click.Path(path_type=Path), help="Output directory.")
@click.option("--calib", default=8, show_default=True, type=click.IntRange(0, 512),
              help="Calibration pages rendered for AWQ (0 = round-to-nearest).")  # fmt: skip
@click.option("--preset", default="mixed", show_default=True, type=click.Choice(QUANT_PRESETS[::-1]),
              help="mixed: INT8 vision + AWQ 4-bit decoder; int8: INT8 vision + 8-bit decoder.")  # fmt: skip
@click.option("--device", default=None, help="Where to quantise (default: the GPU when there is one).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def quantize_command(
    src: str, out_dir: Path, calib: int, preset: str, device: str | None, quiet: bool
) -> None:
    """Quantise a DeepSeek-OCR-2 checkpoint; load the result with --model OUT --dtype PRESET.

    The float checkpoint streams in layer by layer: the GPU never holds the float model.
    """
    from ocr_app.load_bar import LoadBar
    from ocr_app.models.deepseek_ocr2.loading import resolve_model_dir
    from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
    from ocr_app.quant.pipeline import quantize_checkpoint

    try:
        if out_dir.exists() and any(out_dir.iterdir()):
            raise InputError(f"output directory {out_dir} is not empty; choose a new one")
        model_dir = resolve_model_dir(src)
        bar = LoadBar(disabled=quiet)
        try:
            path = quantize_checkpoint(model_dir, out_dir, preset, calib, device, progress=bar, adapter=ADAPTER)
        finally:
            bar.close()
    except InputError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    except OcrError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    size = sum(f.stat().st_size for f in path.glob("*.safetensors")) / 2**30
    click.echo(f"Wrote {preset} checkpoint ({size:.2f} GiB) to {path}. Use: --model {path} --dtype {preset}")
