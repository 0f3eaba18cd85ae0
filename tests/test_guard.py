"""The guard contract (``decoding/guard.py``): the no-repeat n-gram rule (crafted id sequences + a
reference loop) and the loop rule, and the host (``generate``) and device (slot buffer) paths agreeing on
the same token streams."""

from __future__ import annotations

import random

import pytest
import torch

from ocr_app.models.deepseek_ocr2.decoding.guard import (
    CAPPED_TAIL,
    EARLY_STOP,
    GuardSpec,
    LoopSpec,
    NoRepeatNGramGuard,
    ban_repeated_ngrams_,
    exempt_token_ids,
    find_repetition,
    page_end,
    tail_loops,
)
from ocr_app.schema import StopReason

VOCAB = 20


def banned(guard: NoRepeatNGramGuard, seq: list[int], vocab: int = VOCAB) -> set[int]:
    mask = guard.banned_mask(torch.tensor([seq]), vocab)
    return set(torch.nonzero(mask[0]).flatten().tolist())


def reference_banned(gen: list[int], n: int, window: int, exempt: set[int]) -> set[int]:
    """The official rule written as a plain loop (generated tokens only)."""
    if n <= 0 or window < n or len(gen) < n:
        return set()
    prefix = tuple(gen[len(gen) - (n - 1) :]) if n > 1 else ()
    out = set()
    for i in range(max(0, len(gen) - window), len(gen) - n + 1):
        gram = tuple(gen[i : i + n])
        if gram[:-1] == prefix:
            out.add(gram[-1])
    return out - exempt


def test_bans_the_token_that_would_complete_a_seen_ngram():
    guard = NoRepeatNGramGuard(GuardSpec(3, 10))
    assert banned(guard, [5, 6, 7, 5, 6]) == {7}
    assert banned(guard, [5, 6, 7, 5, 8]) == set()


def test_several_matches_ban_several_ids_and_duplicates_once():
    guard = NoRepeatNGramGuard(GuardSpec(2, 20))
    # prefix "4" was followed by 1, 2 and 1 again
    assert banned(guard, [4, 1, 4, 2, 4, 1, 4]) == {1, 2}


def test_exempt_ids_are_never_banned():
    guard = NoRepeatNGramGuard(GuardSpec(2, 20, [7]))
    assert banned(guard, [3, 7, 3, 9, 3]) == {9}


def test_only_ngrams_inside_the_window_count():
    seq = [1, 2, 3, 10, 11, 12, 13, 14, 15, 1, 2]
    assert banned(NoRepeatNGramGuard(GuardSpec(3, 11)), seq) == {3}  # whole sequence inside the window
    assert banned(NoRepeatNGramGuard(GuardSpec(3, 10)), seq) == set()  # [1, 2, 3] starts outside the window


def test_prompt_tokens_are_not_part_of_the_history():
    seq = [5, 6, 7, 5, 6]
    assert banned(NoRepeatNGramGuard(GuardSpec(3, 10), prompt_length=0), seq) == {7}
    assert banned(NoRepeatNGramGuard(GuardSpec(3, 10), prompt_length=2), seq) == set()


@pytest.mark.parametrize(("n", "window", "seq"), [(0, 10, [1, 1, 1]), (3, 2, [1, 2, 1, 2]), (3, 10, [1, 2])])
def test_disabled_or_too_short(n, window, seq):
    assert banned(NoRepeatNGramGuard(GuardSpec(n, window)), seq) == set()


def test_matches_reference_on_random_batches():
    rng = random.Random(0)
    for _ in range(60):
        n, window = rng.randint(1, 5), rng.randint(1, 24)
        exempt = {rng.randrange(4)}
        prompt = rng.randint(0, 3)
        length = rng.randint(prompt, prompt + 30)
        rows = [[rng.randrange(4) for _ in range(length)] for _ in range(3)]  # tiny alphabet → many matches
        guard = NoRepeatNGramGuard(GuardSpec(n, window, exempt), prompt_length=prompt)
        mask = guard.banned_mask(torch.tensor(rows), 6)
        for r, row in enumerate(rows):
            got = set(torch.nonzero(mask[r]).flatten().tolist())
            assert got == reference_banned(row[prompt:], n, window, exempt), (n, window, row)


def test_call_sets_minus_inf_only_on_banned_ids():
    guard = NoRepeatNGramGuard(GuardSpec(2, 10))
    scores = torch.zeros(2, VOCAB)
    out = guard(torch.tensor([[1, 2, 1], [3, 4, 5]]), scores)
    assert torch.isinf(out[0, 2]) and out[0, 2] < 0
    assert torch.isinf(out).sum() == 1


def test_exempt_ids_come_from_the_tokenizer(tiny_checkpoint):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_checkpoint)
    ids = exempt_token_ids(tok)
    assert len(ids) == 2
    assert [tok.decode([i]) for i in ids] == ["<td>", "</td>"]
    # a table row of empty cells repeats <td></td> but the cell tags stay allowed
    td, etd = ids
    guard = NoRepeatNGramGuard(GuardSpec(2, 20, ids))
    assert banned(guard, [td, etd, td, etd, td], vocab=len(tok)) == set()


def test_guard_inside_generate_leaves_no_repeated_ngram(random_checkpoint):
    """Real generate + the guard on random weights (which loop when unguarded; the trained model does not)."""
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor, LogitsProcessorList

    proc = AutoProcessor.from_pretrained(random_checkpoint)
    model = AutoModelForImageTextToText.from_pretrained(random_checkpoint, dtype=torch.float32).eval()
    inputs = proc(
        images=Image.new("RGB", (300, 200), "white"),
        text="<image>\nFree OCR.",
        return_tensors="pt",
        crop_to_patches=False,
        tile_size=1024,
    )
    width = inputs["input_ids"].shape[1]
    n, window = 3, 24

    def run(processors):
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=32, do_sample=False, logits_processor=processors)
        return out[0, width:].tolist()

    plain = run(LogitsProcessorList())
    guarded = run(LogitsProcessorList([NoRepeatNGramGuard(GuardSpec(n, window), prompt_length=width)]))

    def repeats(seq):
        hits = 0
        for end in range(n, len(seq) + 1):
            hist = seq[max(0, end - 1 - window) : end - 1]
            grams = {tuple(hist[i : i + n]) for i in range(len(hist) - n + 1)}
            hits += tuple(seq[end - n : end]) in grams
        return hits

    assert repeats(plain) > 0, "precondition: the unguarded tiny model repeats itself"
    assert repeats(guarded) == 0
    assert guarded != plain


def test_find_repetition_detects_loops_and_near_loops():
    rng = random.Random(1)
    text = [rng.randrange(1000) for _ in range(300)]
    unit = [rng.randrange(1000) for _ in range(37)]
    assert not find_repetition(text)
    assert find_repetition(text + unit * 3)
    assert find_repetition(text + [5] * 30)
    near = text + unit * 4
    near[-10] = 999_999  # one perturbed token, as the guard produces
    assert find_repetition(near)
    assert not find_repetition(unit * 3 + text)  # a loop that ended long ago is not "ending in a loop"
    assert not find_repetition([1, 2, 1, 2])  # too short to tell


def _streams(rng: random.Random, count: int, length: int, alphabet: int) -> list[list[int]]:
    """Token streams that fall into loops of several periods after a random head (and one that never does)."""
    out = []
    for i in range(count):
        head = [rng.randrange(alphabet) for _ in range(rng.randint(3, 40))]
        unit = [rng.randrange(alphabet) for _ in range(1 + i % 13)]
        row = head + unit * (length // len(unit) + 1)
        if i % 4 == 3:  # perturb one token of the loop, as the guard does
            row[len(row) // 2 + i] = alphabet + 7
        out.append(row[:length])
    out.append([rng.randrange(1000) for _ in range(length)])
    return out


def test_host_and_device_guard_agree_on_the_same_token_streams():
    """The same streams through both paths of the no-repeat rule, step by step as they grow: the host
    layout (``generate``'s ``input_ids`` for one page, ``NoRepeatNGramGuard`` as a logits processor) and
    the device layout (every page in one slot buffer, its own prompt length and length, stale tokens
    past its end, ``ban_repeated_ngrams_`` as the graph decoder's step calls it) ban the same ids as the
    plain-loop rule; the exempt ids are never banned."""
    rng = random.Random(7)
    exempt = (2, 5)
    streams = _streams(rng, 6, 70, 6)
    prompts = [rng.randint(0, 9) for _ in streams]
    vocab = 1008
    buf = torch.randint(0, 6, (len(streams), 96), generator=torch.Generator().manual_seed(1))  # stale ids
    for i, row in enumerate(streams):
        buf[i, : len(row)] = torch.tensor(row)
    starts = torch.tensor(prompts)
    bans = 0
    for spec in (
        GuardSpec(3, 20, exempt),
        GuardSpec(5, 40, exempt),
        GuardSpec(2, 9),
        GuardSpec(4, 3, exempt),
    ):
        host_guards = [NoRepeatNGramGuard(spec, prompt_length=p) for p in prompts]
        device_exempt = torch.tensor(spec.exempt_ids) if spec.exempt_ids else None
        for step in range(0, 56, 5):  # every page has decoded `step` tokens past its prompt
            lengths = [p + step + 1 for p in prompts]
            scores = torch.randn(len(streams), vocab, generator=torch.Generator().manual_seed(step))
            device = ban_repeated_ngrams_(
                scores.clone(), buf, torch.tensor(lengths), starts, spec, device_exempt
            )
            for i, (row, n) in enumerate(zip(streams, lengths, strict=True)):
                ids = torch.tensor([row[:n]])
                host = host_guards[i](ids, scores[i : i + 1])
                assert torch.equal(host[0], device[i]), (spec, step, i)
                got = set(torch.nonzero(torch.isinf(host[0])).flatten().tolist())
                gen = row[prompts[i] : n]
                assert got == reference_banned(gen, spec.ngram_size, spec.window, set(spec.exempt_ids)), (
                    spec,
                    i,
                )
                bans += len(got)
    assert bans > 50  # the streams loop, so the rule had plenty to ban


@pytest.mark.parametrize(
    "spec", [CAPPED_TAIL, EARLY_STOP, LoopSpec(12, 3, 20, 0.9), LoopSpec(8, 2, 10, 0.75), LoopSpec(0)]
)
def test_host_and_device_loop_rule_agree_on_the_same_token_streams(spec):
    """``find_repetition`` (a finished page's ids) and ``tail_loops`` (the device's early stop over the slot
    buffer) give the same verdict on the same streams, at many lengths."""
    rng = random.Random(11)
    streams = _streams(rng, 8, 700, 50)
    prompts = [rng.randint(0, 9) for _ in streams]
    buf = torch.zeros(len(streams), 720, dtype=torch.long)
    for i, (row, p) in enumerate(zip(streams, prompts, strict=True)):
        buf[i, p : p + len(row)] = torch.tensor(row)
    verdicts = set()
    for n in (5, 25, 60, 200, 520, 700):
        lengths = torch.tensor([p + n for p in prompts])
        device = tail_loops(buf, lengths, torch.tensor(prompts), spec).tolist()
        host = [find_repetition(row[:n], spec) for row in streams]
        assert device == host, (spec, n)
        verdicts.update(host)
    assert verdicts == ({False} if not spec.enabled else {True, False})


def test_page_end_rules():
    assert page_end([5, 6, 1, 7], {1}) == ([5, 6], StopReason.END)
    assert page_end([5, 6, 7], {1}) == ([5, 6, 7], StopReason.LENGTH)
    assert page_end([5, 6, 7] * 10, {1}) == ([5, 6, 7] * 10, StopReason.REPETITION)
    # the decoder stopped a page early in a loop its capped-tail label would not call one
    assert page_end([5, 6, 7], {1}, StopReason.REPETITION) == ([5, 6, 7], StopReason.REPETITION)


def test_both_paths_end_pages_alike():
    """The same streams as each path hands them over: ``generate``'s row cut at the page's cap (tokens
    after an EOS are padding) and the graph decoder's tokens (up to and including the EOS, or to the cap,
    with its own verdict) end with the same ids and the same stop reason."""
    rng = random.Random(5)
    eos = {1, 2}
    seen = set()
    for i, row in enumerate(_streams(rng, 12, 120, 40)):
        row = [t + 3 for t in row]  # no EOS by chance
        if i % 3 == 0:
            row[rng.randrange(5, 100)] = rng.choice(sorted(eos))  # the page ended
        cap = rng.choice((30, 80, 120))
        host = page_end(row[:cap], eos)
        cut = next((k + 1 for k, t in enumerate(row[:cap]) if t in eos), cap)
        device_stop = StopReason.END if cut < cap or row[cut - 1] in eos else StopReason.LENGTH
        device = page_end(row[:cut], eos, device_stop)
        assert host == device, i
        seen.add(host[1])
    assert seen == {StopReason.END, StopReason.LENGTH, StopReason.REPETITION}
