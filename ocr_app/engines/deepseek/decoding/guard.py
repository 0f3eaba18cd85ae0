"""The no-repeat n-gram rule and the loop detector as batched tensor ops, for the decode engine.

Why tensor ops: the decode step runs inside a CUDA graph, so the guard must never read a value back to
the host. Each row keeps its whole token sequence (prompt + generated) in a device buffer; the rule
looks at the last ``window`` tokens of every row at once, with no Python loop over rows or tokens.

The rule is ``guard.NoRepeatNGramGuard``'s (the official DeepSeek-OCR one): counting from a row's
``start`` (its first generated token), once the row has at least ``n`` tokens, every n-gram lying
wholly inside its last ``window`` tokens whose first ``n - 1`` tokens equal the row's last ``n - 1``
tokens bans its final token; exempt ids (``<td>``, ``</td>``) are never banned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GuardSpec:
    """No-repeat rule parameters. ``ngram_size`` 0 or a window shorter than it disables the rule."""

    ngram_size: int = 30
    window: int = 90
    exempt_ids: tuple[int, ...] = ()
    include_prompt: bool = False  # False: generated tokens only, like guard.NoRepeatNGramGuard

    @property
    def enabled(self) -> bool:
        return self.ngram_size > 0 and self.window >= self.ngram_size


@dataclass(frozen=True)
class LoopSpec:
    """Early stop for rows stuck in a loop the guard cannot break (``max_period`` 0 disables it).

    Same test as ``guard.find_repetition`` (a period ``p <= max_period`` whose last
    ``max(min_repeats·p, min_span)`` generated tokens agree with the token ``p`` before in at least
    ``agreement`` of the positions), run on the device every ``check_every`` steps. The defaults are
    stricter than the post-hoc label because stopping early truncates the page: a blank form's empty
    table rows are periodic too, so only ≥ 512 tokens of ≥ 95 % periodic output stop a page.
    """

    max_period: int = 256
    min_repeats: int = 3
    min_span: int = 512
    agreement: float = 0.95

    @property
    def enabled(self) -> bool:
        return self.max_period > 0

    @property
    def max_offset(self) -> int:
        """Most positions any period compares: max(r·p, m) − p over p."""
        return max(max(self.min_repeats * p, self.min_span) - p for p in (1, self.max_period))


def ban_repeated_ngrams_(
    logits: torch.Tensor,
    seq: torch.Tensor,
    seq_len: torch.Tensor,
    start: torch.Tensor,
    spec: GuardSpec,
    exempt: torch.Tensor | None,
) -> torch.Tensor:
    """Set banned logits to -inf in place and return ``logits``.

    ``logits`` [B, V] float; ``seq`` [B, L] token ids; ``seq_len`` [B] tokens in each row; ``start`` [B]
    first index the rule may look at (0: prompt included). ``exempt`` 1-D ids never banned.
    """
    import torch

    if not spec.enabled:
        return logits
    n, w = spec.ngram_size, spec.window
    rows = logits.shape[0]
    ar = torch.arange(w, device=seq.device)
    idx = seq_len[:, None] - w + ar[None, :]  # [B, w] global positions of the window
    valid = idx >= start[:, None]
    win = torch.gather(seq[:rows], 1, idx.clamp(min=0, max=seq.shape[1] - 1))
    prefix = win[:, w - n + 1 :]  # the last n-1 tokens
    grams = win.unfold(1, n - 1, 1)[:, : w - n + 1]  # [B, w-n+1, n-1] candidate n-gram heads
    match = (grams == prefix[:, None, :]).all(-1)
    match &= valid[:, : w - n + 1]  # the n-gram's first token lies in the allowed range
    match &= (seq_len - start >= n)[:, None]
    banned = win[:, n - 1 :]  # [B, w-n+1] the token each n-gram would complete
    if exempt is not None and exempt.numel():
        match &= ~(banned[..., None] == exempt).any(-1)
    # amin-scatter: -inf where banned, logits unchanged elsewhere (duplicate ids are safe)
    src = torch.where(match, float("-inf"), float("inf")).to(logits.dtype)
    logits.scatter_reduce_(1, banned, src, reduce="amin", include_self=True)
    return logits


def tail_loops(seq: torch.Tensor, seq_len: torch.Tensor, start: torch.Tensor, spec: LoopSpec) -> torch.Tensor:
    """Bool [B]: the generated tail of each row loops (``LoopSpec``'s rule).

    ``seq`` [B, L] ids; ``seq_len`` [B] tokens in each row; ``start`` [B] where the generated tokens
    begin (the test never reaches into the prompt).
    """
    import torch

    rows = seq_len.shape[0]
    dev = seq.device
    if not spec.enabled:
        return torch.zeros(rows, dtype=torch.bool, device=dev)
    periods = torch.arange(1, spec.max_period + 1, device=dev)  # [P]
    span = torch.clamp(spec.min_repeats * periods, min=spec.min_span)  # [P]
    width = span - periods  # positions compared per period
    j = torch.arange(spec.max_offset, device=dev)  # offsets back from the last token
    a = seq_len[:, None, None] - 1 - j[None, None, :]  # [B, 1, J]
    b = a - periods[None, :, None]  # [B, P, J]
    cap = seq.shape[1] - 1
    sa = torch.gather(seq[:rows], 1, a.clamp(0, cap).reshape(rows, -1)).reshape(rows, 1, -1)
    sb = torch.gather(seq[:rows], 1, b.clamp(0, cap).reshape(rows, -1)).reshape(rows, spec.max_period, -1)
    inside = j[None, :] < width[:, None]  # [P, J]
    agree = ((sa == sb) & inside[None]).sum(-1)  # [B, P]
    long_enough = (seq_len - start)[:, None] >= span[None, :]
    return (long_enough & (agree >= spec.agreement * width[None, :])).any(-1)
