"""Hypothesis fuzzing against HF tokenizers: random Unicode, pairs, truncation and padding."""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from .tokenizer_compare import check_pair_with_settings, diff

# Text weighted towards what breaks tokenizers: every Unicode category, plus the risky ASCII.
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list(" \t\r\n'sStT0123456789.,!?-_\u00a0\u3000\u200d\u0301👍🏽日本ſK")),
    ),
    max_size=80,
)


@pytest.fixture(scope="module", params=["cl100k", "bpe_prefix", "template"])
def pair(request):
    js = {
        "cl100k": data.cl100k_tokenizer_json,
        "bpe_prefix": lambda: data.trained_bytelevel_bpe(add_prefix_space=True),
        "template": data.template_bpe,
    }[request.param]()
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


@settings(max_examples=300)
@given(text=TEXT, add_special=st.booleans())
def test_hyp_single(pair, text, add_special):
    hf, fp = pair
    assert (
        diff(hf.encode(text, add_special_tokens=add_special), fp.encode(text, add_special_tokens=add_special)) is None
    )
    ids = hf.encode(text).ids
    assert fp.decode(ids) == hf.decode(ids)


@settings(max_examples=150)
@given(
    a=TEXT,
    b=TEXT,
    max_length=st.integers(0, 24),
    stride=st.integers(0, 6),
    strategy=st.sampled_from(["longest_first", "only_first", "only_second"]),
    direction=st.sampled_from(["left", "right"]),
    pad=st.one_of(st.none(), st.tuples(st.sampled_from(["left", "right"]), st.one_of(st.none(), st.integers(1, 40)))),
)
def test_hyp_pairs_with_settings(pair, a, b, max_length, stride, strategy, direction, pad):
    hf, fp = pair
    truncation = {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": direction}
    check_pair_with_settings(hf, fp, a, b, truncation, pad, pad_id=1, pad_token="<pad>")


@settings(max_examples=200)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=4),
    max_length=st.one_of(st.none(), st.integers(0, 20)),
    add_special=st.booleans(),
)
def test_hyp_arrays_match_hf(pair, texts, max_length, add_special):
    """The lean ids-only path (count_tokens, encode_batch_arrays) against HF's full encode."""
    hf, fp = pair
    if max_length is not None:
        hf.enable_truncation(max_length)
    try:
        ref = [e.ids for e in hf.encode_batch(texts, add_special_tokens=add_special)]
    finally:
        hf.no_truncation()
    out = fp.encode_batch_arrays(texts, max_length=max_length, add_special_tokens=add_special)
    got = [list(row[: int(m.sum())]) for row, m in zip(out["input_ids"], out["attention_mask"], strict=True)]
    assert got == ref
    if max_length is None:
        assert fp.count_tokens(texts, add_special_tokens=add_special) == [len(r) for r in ref]
