"""The repetition guard: ONE contract for both decode paths (``generate`` on the host side, the graph
decoder on the device).

Two rules, each declared once by a spec:

- ``GuardSpec``, the no-repeat n-gram rule (the official DeepSeek-OCR one, also the vLLM recipe's):
  counting from a row's ``start`` (its first generated token, or 0 with ``include_prompt``), once the
  row has at least ``n`` tokens, every n-gram lying wholly inside its last ``window`` tokens whose first
  ``n - 1`` tokens equal the row's last ``n - 1`` tokens bans its final token; exempt ids (``<td>``,
  ``</td>``: table cells legitimately repeat) are never banned. Nothing is banned when ``n == 0`` or
  ``window < n``. ``ban_repeated_ngrams_`` is the rule as batched tensor ops; the graph decoder's module
  step calls it, ``generate`` calls it through ``NoRepeatNGramGuard`` (a logits processor), and the fused
  step's Triton kernel (``kernels.ngram_ban_``) is tested against it.
- ``LoopSpec``, the loop rule behind ``StopReason.REPETITION``: some period ``p <= max_period`` whose last
  ``max(min_repeats·p, min_span)`` generated tokens agree with the token ``p`` before in at least
  ``agreement`` of the positions. ``tail_loops`` runs it on the device (early stop, ``EARLY_STOP``);
  ``find_repetition`` runs it on a finished page's ids (the label of a page that hit the token cap,
  ``CAPPED_TAIL``).

How a page ends is decided here too, once for both paths (``page_end``): END at its first EOS id,
else REPETITION when the decoder stopped it early in a loop or its capped tail loops, else LENGTH.

Why tensor ops without a host read: the decode step runs inside a CUDA graph. Each row keeps its whole
token sequence (prompt + generated) in a buffer; the rule looks at the last ``window`` tokens of every
row at once, with no Python loop over rows or tokens. Nothing here imports torch or transformers at
module level (the specs are read by light code too).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ocr_app.schema import StopReason

if TYPE_CHECKING:
    import torch
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


@dataclass(frozen=True)
class GuardSpec:
    """No-repeat rule parameters. ``ngram_size`` 0 or a window shorter than it disables the rule."""

    ngram_size: int = 30
    window: int = 90
    exempt_ids: tuple[int, ...] = ()
    include_prompt: bool = False  # False: generated tokens only (the official rule)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exempt_ids", tuple(int(i) for i in self.exempt_ids))

    @property
    def enabled(self) -> bool:
        return self.ngram_size > 0 and self.window >= self.ngram_size

    @classmethod
    def from_settings(cls, settings: Any, exempt_ids: Iterable[int]) -> GuardSpec:
        """The rule the engine's settings ask for (``no_repeat_ngram_size``, ``no_repeat_window``)."""
        return cls(int(settings.no_repeat_ngram_size), int(settings.no_repeat_window), tuple(exempt_ids))


@dataclass(frozen=True)
class LoopSpec:
    """Early stop for rows stuck in a loop the guard cannot break (``max_period`` 0 disables it).

    The rule is in the module doc; ``tail_loops`` runs it on the device every ``check_every`` steps,
    ``find_repetition`` on a finished page. The defaults (``EARLY_STOP``) are stricter than the label of
    a capped page (``CAPPED_TAIL``) because stopping early truncates the page: a blank form's empty
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


EARLY_STOP = LoopSpec()  # the device's early stop (the defaults)
# the label of a page that hit the token cap: tolerant on purpose, as the guard perturbs exact loops
# into near-loops (only meaningful for such a page; a long run of empty table cells there also counts)
CAPPED_TAIL = LoopSpec(max_period=256, min_repeats=2, min_span=24, agreement=0.9)


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

    if not spec.enabled or seq.shape[1] == 0:  # (an empty history bans nothing)
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


class NoRepeatNGramGuard:
    """``GuardSpec``'s rule as a ``generate`` logits processor (the host path): the same tensor op as the
    graph decoder, over ``input_ids`` [batch, tokens] whose generated part starts at ``prompt_length``
    (a left-padded batch has one width for every row)."""

    def __init__(self, spec: GuardSpec, prompt_length: int = 0) -> None:
        self.spec = spec
        self.start = 0 if spec.include_prompt else int(prompt_length)
        self._exempt: torch.Tensor | None = None

    def _ban(self, input_ids: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        import torch

        rows, width = input_ids.shape
        dev = input_ids.device
        if self.spec.exempt_ids and (self._exempt is None or self._exempt.device != dev):
            self._exempt = torch.tensor(self.spec.exempt_ids, dtype=torch.long, device=dev)
        seq_len = torch.full((rows,), width, dtype=torch.long, device=dev)
        start = torch.full((rows,), self.start, dtype=torch.long, device=dev)
        return ban_repeated_ngrams_(logits, input_ids, seq_len, start, self.spec, self._exempt)

    def banned_mask(self, input_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
        """Boolean ``[batch, vocab]``: True where the next token is banned."""
        import torch

        zeros = torch.zeros(input_ids.shape[0], vocab_size, device=input_ids.device)
        return torch.isinf(self._ban(input_ids, zeros))

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return self._ban(input_ids, scores.clone())


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


def find_repetition(token_ids: Sequence[int], spec: LoopSpec = CAPPED_TAIL) -> bool:
    """Whether a finished page's ids END in a loop (``LoopSpec``'s rule, ``tail_loops`` on the host)."""
    import numpy as np

    ids = np.asarray(list(token_ids), dtype=np.int64)
    for period in range(1, spec.max_period + 1):
        span = max(spec.min_repeats * period, spec.min_span)
        if span > len(ids):
            break
        tail = ids[-span:]
        if float(np.mean(tail[period:] == tail[:-period])) >= spec.agreement:
            return True
    return False


def page_end(
    tokens: Sequence[int], eos_ids: Iterable[int], stopped: StopReason | None = None
) -> tuple[list[int], StopReason]:
    """A decoded page's ids (EOS and what follows cut) and its stop reason, for both paths: ``generate``'s
    row at its token cap, or the graph decoder's tokens with ``stopped``, the decoder's own verdict (it
    stops at EOS or the cap, and early in a loop: REPETITION)."""
    ids, eos = list(tokens), set(eos_ids)
    for i, t in enumerate(ids):
        if t in eos:
            return ids[:i], StopReason.END
    if stopped is StopReason.REPETITION:
        return ids, StopReason.REPETITION
    return ids, StopReason.REPETITION if find_repetition(ids) else StopReason.LENGTH


__all__ = [
    "CAPPED_TAIL",
    "EARLY_STOP",
    "EXEMPT_TOKENS",
    "GuardSpec",
    "LoopSpec",
    "NoRepeatNGramGuard",
    "ban_repeated_ngrams_",
    "exempt_token_ids",
    "find_repetition",
    "page_end",
    "tail_loops",
]
