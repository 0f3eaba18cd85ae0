"""Bound the vision tower's activation memory by encoding at most ``max_views`` views per call.

Why: one default page is 1 global view + up to 6 tiles; SAM's global-attention layers build a
relative-position bias of heads × tokens² per view, so encoding all tiles in one batch sets the page's
peak memory (on a 3.5 GiB budget with 2.4 GiB of weights). Encoding views in chunks gives the same
features (views are independent) at a small cost in launch count.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)


def limit_vision_views(model: Any, max_views: int) -> None:
    """Make ``model.model.vision_tower`` encode at most ``max_views`` views per call (in place)."""
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    tower = model.model.vision_tower
    original = getattr(tower, "_ocr_app_full_forward", None) or tower.forward
    tower._ocr_app_full_forward = original
    if max_views <= 0:
        tower.forward = original
        return

    def forward(pixel_values, **kwargs):
        if pixel_values.shape[0] <= max_views:
            return original(pixel_values, **kwargs)
        parts = [original(chunk, **kwargs).last_hidden_state for chunk in pixel_values.split(max_views)]
        return BaseModelOutput(last_hidden_state=torch.cat(parts, 0))

    tower.forward = forward
    logger.info("vision tower limited to %d views per call", max_views)
