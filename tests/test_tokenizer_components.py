"""Every normalizer and pre-tokenizer fastprep implements, alone and in sequences, against HF
tokenizers on the same tokenizer.json: ids, tokens and offsets (which exercise the alignment
bookkeeping of normalizers) must be identical."""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from .tokenizer_compare import diff

BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}

NORMALIZERS = {
    "none": None,
    "nfc": {"type": "NFC"},
    "nfd": {"type": "NFD"},
    "nfkc": {"type": "NFKC"},
    "nfkd": {"type": "NFKD"},
    "lowercase": {"type": "Lowercase"},
    "strip": {"type": "Strip", "strip_left": True, "strip_right": True},
    "lstrip": {"type": "Strip", "strip_left": True, "strip_right": False},
    "replace_str": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "replace_regex": {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
    "replace_delete": {"type": "Replace", "pattern": {"Regex": r"[aeiou]"}, "content": ""},
    "prepend": {"type": "Prepend", "prepend": "▁"},
    "sequence": {
        "type": "Sequence",
        "normalizers": [
            {"type": "NFKD"},
            {"type": "Lowercase"},
            {"type": "Strip", "strip_left": True, "strip_right": True},
        ],
    },
}

SPLITS = [
    {"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": b, "invert": inv}
    for b in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
    for inv in (False, True)
] + [
    {"type": "Split", "pattern": {"String": "-"}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": r"(?<=\d)(?=\D)|\p{P}"}, "behavior": "MergedWithNext", "invert": False},
]

PRE_TOKENIZERS = {
    "digits": {"type": "Digits", "individual_digits": False},
    "digits_individual": {"type": "Digits", "individual_digits": True},
    "punctuation": {"type": "Punctuation", "behavior": "Isolated"},
    "punctuation_merged": {"type": "Punctuation", "behavior": "MergedWithPrevious"},
    "whitespace": {"type": "Whitespace"},
    "whitespace_split": {"type": "WhitespaceSplit"},
    **{f"split{i}": s for i, s in enumerate(SPLITS)},
    **{
        f"metaspace_{scheme}_{'split' if split else 'whole'}": {
            "type": "Metaspace",
            "replacement": "▁",
            "prepend_scheme": scheme,
            "split": split,
        }
        for scheme in ("always", "first", "never")
        for split in (True, False)
    },
    "metaspace_legacy_no_prefix": {
        "type": "Metaspace",
        "replacement": "_",
        "add_prefix_space": False,
        "prepend_scheme": "never",
    },
    "metaspace_legacy_prefix": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True, "split": False},
}

TEXTS = [
    "Hello, World! It's 2024-05-17 -- ok?",
    "  leading and trailing  ",
    "ＡＢＣ ﬁne café Café CAFÉ e\u0301",
    "日本語のテキスト、句読点。「引用」",
    "tabs\tand\r\nCRLF\n\nnewlines",
    "x1y22z333 4444 ½ ² ٣",
    "emoji 👨‍👩‍👧‍👦 👍🏽!",
    "",
    "   ",
    "a-b--c---d",
    "▁already ▁marked▁ text",
]


@pytest.fixture(scope="module")
def base() -> dict:
    return json.loads(data.trained_bytelevel_bpe(add_prefix_space=False))


def _pair(base: dict, normalizer, pre_tokenizer):
    obj = dict(base)
    obj["normalizer"] = normalizer
    obj["pre_tokenizer"] = pre_tokenizer
    js = json.dumps(obj)
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


@pytest.mark.parametrize("norm", list(NORMALIZERS))
def test_normalizers(base, norm):
    hf, fp = _pair(base, NORMALIZERS[norm], {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, BYTE_LEVEL]})
    for text in TEXTS:
        assert diff(hf.encode(text), fp.encode(text)) is None, (norm, text)


@pytest.mark.parametrize("name", list(PRE_TOKENIZERS))
@pytest.mark.parametrize("byte_level", [True, False], ids=["byte_level", "chars"])
def test_pre_tokenizers(base, name, byte_level):
    pt = PRE_TOKENIZERS[name]
    pre = {"type": "Sequence", "pretokenizers": [pt, BYTE_LEVEL]} if byte_level else pt
    hf, fp = _pair(base, NORMALIZERS["nfkc"], pre)
    for text in TEXTS:
        assert diff(hf.encode(text), fp.encode(text)) is None, (name, text)


@settings(max_examples=150)
@given(
    text=st.text(st.characters(codec="utf-8"), max_size=40),
    norm=st.sampled_from(list(NORMALIZERS)),
    pre=st.sampled_from(list(PRE_TOKENIZERS)),
)
def test_hyp_components(base, text, norm, pre):
    hf, fp = _pair(base, NORMALIZERS[norm], {"type": "Sequence", "pretokenizers": [PRE_TOKENIZERS[pre], BYTE_LEVEL]})
    assert diff(hf.encode(text), fp.encode(text)) is None
