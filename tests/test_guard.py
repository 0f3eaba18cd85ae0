"""No-repeat n-gram guard (crafted id sequences + a reference loop) and the repetition detector."""

from __future__ import annotations

import random

import pytest
import torch

from ocr_app.engines.deepseek.guard import NoRepeatNGramGuard, exempt_token_ids, find_repetition

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
    guard = NoRepeatNGramGuard(3, 10)
    assert banned(guard, [5, 6, 7, 5, 6]) == {7}
    assert banned(guard, [5, 6, 7, 5, 8]) == set()


def test_several_matches_ban_several_ids_and_duplicates_once():
    guard = NoRepeatNGramGuard(2, 20)
    # prefix "4" was followed by 1, 2 and 1 again
    assert banned(guard, [4, 1, 4, 2, 4, 1, 4]) == {1, 2}


def test_exempt_ids_are_never_banned():
    guard = NoRepeatNGramGuard(2, 20, exempt_ids=[7])
    assert banned(guard, [3, 7, 3, 9, 3]) == {9}


def test_only_ngrams_inside_the_window_count():
    seq = [1, 2, 3, 10, 11, 12, 13, 14, 15, 1, 2]
    assert banned(NoRepeatNGramGuard(3, 11), seq) == {3}  # whole sequence inside the window
    assert banned(NoRepeatNGramGuard(3, 10), seq) == set()  # [1, 2, 3] starts outside the window


def test_prompt_tokens_are_not_part_of_the_history():
    seq = [5, 6, 7, 5, 6]
    assert banned(NoRepeatNGramGuard(3, 10, prompt_length=0), seq) == {7}
    assert banned(NoRepeatNGramGuard(3, 10, prompt_length=2), seq) == set()


@pytest.mark.parametrize(("n", "window", "seq"), [(0, 10, [1, 1, 1]), (3, 2, [1, 2, 1, 2]), (3, 10, [1, 2])])
def test_disabled_or_too_short(n, window, seq):
    assert banned(NoRepeatNGramGuard(n, window), seq) == set()


def test_matches_reference_on_random_batches():
    rng = random.Random(0)
    for _ in range(60):
        n, window = rng.randint(1, 5), rng.randint(1, 24)
        exempt = {rng.randrange(4)}
        prompt = rng.randint(0, 3)
        length = rng.randint(prompt, prompt + 30)
        rows = [[rng.randrange(4) for _ in range(length)] for _ in range(3)]  # tiny alphabet → many matches
        guard = NoRepeatNGramGuard(n, window, exempt, prompt_length=prompt)
        mask = guard.banned_mask(torch.tensor(rows), 6)
        for r, row in enumerate(rows):
            got = set(torch.nonzero(mask[r]).flatten().tolist())
            assert got == reference_banned(row[prompt:], n, window, exempt), (n, window, row)


def test_call_sets_minus_inf_only_on_banned_ids():
    guard = NoRepeatNGramGuard(2, 10)
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
    guard = NoRepeatNGramGuard(2, 20, ids)
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
    guarded = run(LogitsProcessorList([NoRepeatNGramGuard(n, window, prompt_length=width)]))

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
