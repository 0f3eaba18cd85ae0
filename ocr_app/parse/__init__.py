"""Parse: raw model text → blocks. Pure functions, no torch."""

from ocr_app.parse.grounding import blocks_from_output, clean_raw, normalise_label, parse_grounded

__all__ = ["blocks_from_output", "clean_raw", "normalise_label", "parse_grounded"]
