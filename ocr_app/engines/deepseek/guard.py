"""The no-repeat n-gram guard and the repetition detector behind ``StopReason.REPETITION``.

Why: greedy decoding of dense pages can fall into a loop that runs to the token cap. The official
DeepSeek-OCR code and the vLLM recipe ban, at each step, any token that would complete an n-gram
already present in the last ``window`` generated tokens — except table-cell tags, which legitimately
repeat (``<td></td><td></td>…``). This module is imported only when decoding (it needs torch).

Rule implemented by ``NoRepeatNGramGuard`` (per row, over generated tokens only, prompt excluded):
let ``t`` be the last ``window`` generated tokens and ``p`` the last ``n - 1`` generated tokens; every
n-gram ``g`` inside ``t`` whose first ``n - 1`` tokens equal ``p`` bans ``g[-1]``, unless that id is exempt.
Nothing is banned before ``n`` tokens were generated, when ``n == 0`` or when ``window < n``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import torch
from transformers import LogitsProcessor

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

EXEMPT_TOKENS = ("<td>", "</td>")


def exempt_token_ids(tokenizer: PreTrainedTokenizerBase, tokens: Iterable[str] = EXEMPT_TOKENS) -> list[int]:
    """Ids of the tokens the guard must never ban, looked up in this tokenizer (never hard-coded)."""
    ids: list[int] = []
    unk = getattr(tokenizer, "unk_token_id", None)
    for tok in tokens:
        tid = tokenizer.convert_tokens_to_ids(tok)
        if tid is None or (unk is not None and tid == unk):
            enc = tokenizer.encode(tok, add_special_tokens=False)
            tid = enc[0] if len(enc) == 1 else None
        if tid is None:
            logger.warning("token %r is not a single id in this tokenizer; it cannot be exempted", tok)
            continue
        ids.append(int(tid))
    return ids


class NoRepeatNGramGuard(LogitsProcessor):
    """Windowed no-repeat n-gram ban with exempt ids, vectorised over the batch (rule: module doc)."""

    def __init__(self, ngram_size: int, window: int, exempt_ids: Iterable[int] = (), prompt_length: int = 0):
        self.ngram_size = int(ngram_size)
        self.window = int(window)
        self.exempt_ids = sorted({int(i) for i in exempt_ids})
        self.prompt_length = int(prompt_length)
        self._exempt: torch.Tensor | None = None

    def banned_mask(self, input_ids: torch.LongTensor, vocab_size: int) -> torch.Tensor:
        """Boolean ``[batch, vocab]``: True where the next token is banned."""
        batch = input_ids.shape[0]
        n, w = self.ngram_size, self.window
        generated = input_ids[:, self.prompt_length :]
        ban = torch.zeros(batch, vocab_size, dtype=torch.int32, device=input_ids.device)
        if n <= 0 or w < n or generated.shape[1] < n:
            return ban.bool()
        tail = generated[:, -w:]
        grams = tail.unfold(1, n, 1)  # [batch, num_grams, n]
        prefix = tail[:, tail.shape[1] - (n - 1) :]  # [batch, n - 1] (empty when n == 1: bans all)
        match = (grams[:, :, :-1] == prefix[:, None, :]).all(dim=-1)  # [batch, num_grams]
        ban.scatter_add_(1, grams[:, :, -1], match.to(torch.int32))  # add: duplicate ids are safe
        ban = ban > 0
        if self.exempt_ids:
            if self._exempt is None or self._exempt.device != ban.device:
                self._exempt = torch.tensor(self.exempt_ids, device=ban.device, dtype=torch.long)
            ban[:, self._exempt] = False
        return ban

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        ban = self.banned_mask(input_ids, scores.shape[-1])
        return scores.masked_fill(ban, float("-inf"))


def find_repetition(
    token_ids: Sequence[int],
    *,
    max_period: int = 256,
    min_repeats: int = 2,
    min_span: int = 24,
    agreement: float = 0.9,
) -> bool:
    """Whether the sequence ENDS in a loop: some period ``p ≤ max_period`` repeats ≥ ``min_repeats``
    times over the last ``max(min_repeats·p, min_span)`` tokens with ≥ ``agreement`` of positions equal
    to the token ``p`` before. Tolerant on purpose: the guard perturbs exact loops into near-loops.
    Only meaningful for a row that hit the token cap (a long run of empty table cells there also counts).
    """
    import numpy as np

    ids = np.asarray(list(token_ids), dtype=np.int64)
    for period in range(1, max_period + 1):
        span = max(min_repeats * period, min_span)
        if span > len(ids):
            break
        tail = ids[-span:]
        if float(np.mean(tail[period:] == tail[:-period])) >= agreement:
            return True
    return False


__all__ = ["EXEMPT_TOKENS", "NoRepeatNGramGuard", "exempt_token_ids", "find_repetition"]
