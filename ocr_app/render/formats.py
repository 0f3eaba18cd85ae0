"""The output formats, declared once: the writer, the converter's defaults, the CLI and the UI use this.

Light on purpose (no PIL, no PyMuPDF): front ends import it to build their options.
"""

from __future__ import annotations

from typing import Literal, get_args

OutputFormat = Literal["md", "mmd", "json", "overlay", "layout_pdf", "zip"]
OUTPUT_FORMATS: tuple[str, ...] = get_args(OutputFormat)
