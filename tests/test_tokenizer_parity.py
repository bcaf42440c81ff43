"""Parity with HF tokenizers (a reference no one here wrote): ids, tokens, offsets, masks, word and
sequence ids, overflowing windows and decode must be identical, on a 5 MB multilingual corpus and
hand-picked edge cases, for cl100k_base (converted from tiktoken's file, also checked against
tiktoken itself), GPT-2/RoBERTa-style byte-level BPEs trained here with and without
add_prefix_space, and a BPE with every added-token flag, a normalizer and a TemplateProcessing."""

from __future__ import annotations

import itertools

import pytest
import tokenizers

import fastprep

from . import tokenizer_data as data
from .tokenizer_compare import check_pairs, check_pretokenized, diff, settings_applied
from .tokenizer_compare import padding as _p
from .tokenizer_compare import truncation as _t

# cl100k_llama3: the same vocabulary as transformers converts it today (every split of every
# token as a merge, ignore_merges true), the layout of Llama-3 style tokenizer.json files.
KINDS = ["cl100k", "cl100k_llama3", "bpe_prefix", "bpe_noprefix", "template"]


def _json(kind: str) -> str:
    if kind == "cl100k":
        return data.cl100k_tokenizer_json()
    if kind == "cl100k_llama3":
        return data.cl100k_tokenizer_json(transformers_exact=True)
    if kind == "bpe_prefix":
        return data.trained_bytelevel_bpe(add_prefix_space=True)
    if kind == "bpe_noprefix":
        return data.trained_bytelevel_bpe(add_prefix_space=False)
    return data.template_bpe()


@pytest.fixture(scope="module", params=KINDS)
def pair(request):
    js = _json(request.param)
    return request.param, tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)


@pytest.fixture(scope="module")
def corpus():
    return data.corpus_documents(5_000_000)


def test_corpus_is_big_and_multilingual(corpus):
    text = "".join(corpus)
    assert len(text.encode()) >= 5_000_000
    for probe in ("的", "の", "ال", "\u200d", "\r\n", "\t", "\u0301"):
        assert probe in text, probe


def test_corpus_parity(pair, corpus):
    kind, hf, fp = pair
    docs = corpus if kind == "cl100k" else corpus[::4]
    mismatched = []
    for i, doc in enumerate(docs):
        d = diff(hf.encode(doc), fp.encode(doc))
        if d:
            mismatched.append((i, d))
    assert not mismatched, f"{kind}: {len(mismatched)}/{len(docs)} documents differ; first: {mismatched[:3]}"


def test_batch_parity_and_decode(pair, corpus):
    _, hf, fp = pair
    docs = corpus[:300]
    ref, got = hf.encode_batch(docs), fp.encode_batch(docs)
    assert [diff(a, b) for a, b in zip(ref, got, strict=True)] == [None] * len(docs)
    ids = [e.ids for e in ref]
    assert fp.decode_batch(ids) == hf.decode_batch(ids)
    assert fp.decode_batch(ids, skip_special_tokens=False) == hf.decode_batch(ids, skip_special_tokens=False)


def test_edge_cases(pair):
    kind, hf, fp = pair
    for text in data.short_texts():
        for add_special in (True, False):
            d = diff(hf.encode(text, add_special_tokens=add_special), fp.encode(text, add_special_tokens=add_special))
            assert d is None, f"{kind} on {text[:60]!r}: {d}"
        ids = hf.encode(text).ids
        assert fp.decode(ids) == hf.decode(ids), text[:60]


SETTINGS = [
    {"truncation": _t(16, 0, "longest_first", "right")},
    {"truncation": _t(16, 4, "longest_first", "left")},
    {"truncation": _t(9, 2, "only_first", "right")},
    {"truncation": _t(12, 3, "only_second", "right")},
    {"padding": _p("right", 7, 1, "<pad>", None, None)},
    {"padding": _p("left", 3, 0, "[PAD]", 40, None), "truncation": _t(32, 5, "longest_first", "right")},
    {"padding": _p("right", 0, 0, "[PAD]", None, 8), "truncation": _t(20, 0, "longest_first", "left")},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=[str(i) for i in range(len(SETTINGS))])
def test_pairs_truncation_padding(pair, settings):
    _, hf, fp = pair
    # Short texts: overflowing windows of a pair multiply (HF's cross product), so long ones explode.
    texts = [t[:200] for t in data.short_texts()[:60]]
    pairs = list(zip(texts[::2], texts[1::2], strict=False))
    with settings_applied(hf, fp, settings):
        check_pairs(hf, fp, pairs)
        try:
            ref_batch = hf.encode_batch(pairs)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            with pytest.raises(fastprep.TokenizeError):
                fp.encode_batch(pairs)
            return
        got_batch = fp.encode_batch(pairs)
        assert [diff(r, g) for r, g in zip(ref_batch, got_batch, strict=True)] == [None] * len(pairs)


def test_pretokenized_input(pair):
    _, hf, fp = pair
    words = ["Hello", " world", "日本", "", "  ", "it's", "<|endoftext|>", "[CLS]"]
    check_pretokenized(hf, fp, words)


def test_vocab_api(pair):
    _, hf, fp = pair
    assert fp.get_vocab_size() == hf.get_vocab_size()
    assert fp.get_vocab_size(with_added_tokens=False) == hf.get_vocab_size(with_added_tokens=False)
    assert fp.get_vocab() == hf.get_vocab()
    assert fp.get_vocab(with_added_tokens=False) == hf.get_vocab(with_added_tokens=False)
    for i in [*range(0, hf.get_vocab_size(), 997), hf.get_vocab_size() + 5]:
        assert fp.id_to_token(i) == hf.id_to_token(i)
        tok = hf.id_to_token(i)
        if tok is not None:
            assert fp.token_to_id(tok) == hf.token_to_id(tok)
    assert fp.token_to_id("definitely not a token ∰") is None
    for is_pair in (False, True):
        assert fp.num_special_tokens_to_add(is_pair) == hf.num_special_tokens_to_add(is_pair)


def test_added_tokens_later_match_hf(pair):
    kind, _, _ = pair
    js = _json(kind)
    hf, fp = tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)
    new = ["<new>", "xyzzy", "Hello"]
    assert fp.add_tokens(new) == hf.add_tokens(new)
    assert fp.add_special_tokens(["<sp1>", "<sp2>"]) == hf.add_special_tokens(["<sp1>", "<sp2>"])
    flagged = [tokenizers.AddedToken("<l>", lstrip=True), tokenizers.AddedToken("<w>", single_word=True)]
    mine = [fastprep.AddedToken("<l>", lstrip=True), fastprep.AddedToken("<w>", single_word=True)]
    assert fp.add_tokens(mine) == hf.add_tokens(flagged)
    for text in ["say <new> and xyzzy<sp1> Hello <l> x<w>y <w> end", "<sp2><sp2>", "Hello world"]:
        assert diff(hf.encode(text), fp.encode(text)) is None, text
        ids = hf.encode(text).ids
        assert fp.decode(ids) == hf.decode(ids)
        assert fp.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)
    assert fp.get_vocab_size() == hf.get_vocab_size()
    # the round trip keeps them
    again = fastprep.Tokenizer.from_str(fp.to_str())
    assert diff(hf.encode("say <new> <sp1>"), again.encode("say <new> <sp1>")) is None


def test_cl100k_matches_tiktoken(corpus):
    enc = data.tiktoken_cl100k()
    fp = fastprep.Tokenizer.from_str(data.cl100k_tokenizer_json())
    docs = corpus[::3]
    ours = fp.encode_batch(docs, add_special_tokens=False)
    mismatched = [i for i, (d, e) in enumerate(zip(docs, ours, strict=True)) if enc.encode_ordinary(d) != e.ids]
    assert not mismatched, f"{len(mismatched)}/{len(docs)} documents differ from tiktoken, e.g. {mismatched[:5]}"


def test_decode_stream_matches_hf(pair, corpus):
    from tokenizers.decoders import DecodeStream as HFStream

    kind, hf, fp = pair
    for skip in (False, True):
        for doc in [*corpus[:20:3], *data.short_texts()[::10]]:
            ids = hf.encode(doc).ids
            theirs, ours = HFStream(skip_special_tokens=skip), fastprep.DecodeStream(skip_special_tokens=skip)
            got = [ours.step(fp, i) for i in ids]
            want = [theirs.step(hf, i) for i in ids]
            assert got == want, (kind, doc[:40])


def _with_processor(name: str) -> str:
    from tokenizers import processors

    hf = tokenizers.Tokenizer.from_str(data.trained_bytelevel_bpe(add_prefix_space=True))
    hf.add_special_tokens(["<s>", "</s>", "[CLS]", "[SEP]"])
    s, e, c, p = (hf.token_to_id(t) for t in ("<s>", "</s>", "[CLS]", "[SEP]"))
    hf.post_processor = {
        "roberta": lambda: processors.RobertaProcessing(
            ("</s>", e), ("<s>", s), trim_offsets=True, add_prefix_space=True
        ),
        "roberta_untrimmed": lambda: processors.RobertaProcessing(("</s>", e), ("<s>", s), trim_offsets=False),
        "bert": lambda: processors.BertProcessing(("[SEP]", p), ("[CLS]", c)),
        "sequence": lambda: processors.Sequence(
            [
                processors.ByteLevel(trim_offsets=True),
                processors.TemplateProcessing(
                    single="[CLS] $A [SEP]",
                    pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                    special_tokens=[("[CLS]", c), ("[SEP]", p)],
                ),
            ]
        ),
    }[name]()
    return hf.to_str()


@pytest.mark.parametrize("processor", ["roberta", "roberta_untrimmed", "bert", "sequence"])
def test_post_processors(processor):
    js = _with_processor(processor)
    hf, fp = tokenizers.Tokenizer.from_str(js), fastprep.Tokenizer.from_str(js)
    texts = [t[:120] for t in data.short_texts()[::5]]
    for truncation in (None, 12):
        for tok in (hf, fp):
            if truncation:
                tok.enable_truncation(truncation, stride=2)
            else:
                tok.no_truncation()
        for a, b in itertools.pairwise(texts):
            for add in (True, False):
                assert diff(hf.encode(a, add_special_tokens=add), fp.encode(a, add_special_tokens=add)) is None, a
                assert diff(hf.encode(a, b, add_special_tokens=add), fp.encode(a, b, add_special_tokens=add)) is None
        out = fp.encode_batch_arrays(texts, max_length=truncation)
        want = [e.ids for e in hf.encode_batch(texts)]
        got = [list(r[: int(m.sum())]) for r, m in zip(out["input_ids"], out["attention_mask"], strict=True)]
        assert got == want
