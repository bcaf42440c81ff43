"""The rest of ``tokenizers.Tokenizer``'s Python API, each behaviour checked against tokenizers
itself: every input form of ``encode``/``encode_batch`` (numpy included), ``AddedToken`` objects of
either library, ``post_process``, ``encode_batch_fast``, the async methods, the ``Encoding`` methods
(``truncate``, ``merge``, ``pad``, the index mappings on overflowing parts) and the error types
and messages tokenizers' own tests match. The behaviours are those of tokenizers' binding tests
(bindings/python/tests/bindings/test_tokenizer.py, test_encoding.py)."""

from __future__ import annotations

import asyncio
import warnings

import numpy as np
import pytest
import tokenizers
from tokenizers.models import BPE

import fastprep
from fastprep import AddedToken, Encoding, Tokenizer

from . import tokenizer_data_wordpiece as wp
from .tokenizer_compare import diff


def _both(js: str) -> tuple[tokenizers.Tokenizer, Tokenizer]:
    return tokenizers.Tokenizer.from_str(js), Tokenizer.from_str(js)


@pytest.fixture(scope="module")
def bert():
    return _both(wp.bert_tokenizer_json())


def _same_batch(ref, got) -> None:
    assert len(ref) == len(got)
    for r, g in zip(ref, got, strict=True):
        assert diff(r, g) is None


SINGLE = ["My name is John", "My name is Georges"]
PAIRS = [("my name is john", "pair"), ("my name is georges", "pair")]
WORDS = [["My", "name", "is", "John"], ["My", "name", "is", "Georges"]]
WORD_PAIRS = [(["My", "name", "is", "John"], ["pair"]), (["My", "name", "is", "Georges"], ["pair"])]

TEXT_FORMS = {
    "list": SINGLE,
    "tuple": tuple(SINGLE),
    "numpy": np.array(SINGLE),
    "pairs of tuples": PAIRS,
    "pairs of lists": [list(p) for p in PAIRS],
    "tuple of pairs": tuple(PAIRS),
    "numpy 2-D pairs": np.array(PAIRS),
    "numpy 2-D pairs from lists": np.array([list(p) for p in PAIRS]),
    "mixed": ["single text", ("a", "pair"), ["another", "pair"]],
}
PRETOKENIZED_FORMS = {
    "lists": WORDS,
    "tuples of str (one sequence each)": tuple(tuple(w) for w in WORDS),
    "two-word tuple is one sequence": [("hello", "world")],
    "numpy <U rows": np.array(WORDS),
    "numpy <U from tuples": np.array(tuple(tuple(w) for w in WORDS)),
    "numpy object rows": np.array([np.array(w, dtype=object) for w in WORDS], dtype=object),
    "pairs of lists as tuples": WORD_PAIRS,
    "pairs as lists of two lists": [list(p) for p in WORD_PAIRS],
    "pairs of tuples": tuple((tuple(a), tuple(b)) for a, b in WORD_PAIRS),
    "numpy object pairs": np.array([list(p) for p in WORD_PAIRS], dtype=object),
    "numpy object pairs from tuples": np.array(tuple((tuple(a), tuple(b)) for a, b in WORD_PAIRS), dtype=object),
}


@pytest.mark.parametrize("form", TEXT_FORMS)
def test_encode_batch_text_forms(bert, form):
    hf, fp = bert
    inp = TEXT_FORMS[form]
    _same_batch(hf.encode_batch(inp), fp.encode_batch(inp))


@pytest.mark.parametrize("form", PRETOKENIZED_FORMS)
def test_encode_batch_pretokenized_forms(bert, form):
    hf, fp = bert
    inp = PRETOKENIZED_FORMS[form]
    _same_batch(hf.encode_batch(inp, is_pretokenized=True), fp.encode_batch(inp, is_pretokenized=True))


def test_numpy_unicode_words_have_tokenizers_offsets(bert):
    """tokenizers reads a `<U` array's UCS-4 buffer as UTF-8 (NUL-padded words); fastprep gives
    the same words, so the same offsets (a list of the same words gives other offsets)."""
    hf, fp = bert
    arr = np.array(["Hi", "wonderful", "world"])
    ref = hf.encode(arr, is_pretokenized=True)
    assert diff(ref, fp.encode(arr, is_pretokenized=True)) is None
    assert ref.offsets != hf.encode(list(arr), is_pretokenized=True).offsets
    # a strided (non-contiguous) `<U` array is refused by both
    for tok in (hf, fp):
        with pytest.raises(TypeError, match="PreTokenizedInputSequence must be"):
            tok.encode(arr[::2], is_pretokenized=True)


def test_encode_pretokenized_and_pair_forms(bert):
    hf, fp = bert
    for args in [
        (["my", "name", "is", "john"],),
        (["my", "name", "is", "john"], ["pair"]),
        (("my", "name"), ("pair",)),
        (np.array(["my", "name"]), np.array(["pair"], dtype=object)),
    ]:
        assert diff(hf.encode(*args, is_pretokenized=True), fp.encode(*args, is_pretokenized=True)) is None


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([["my", "name"]],), {}, "TextInputSequence must be str"),
        (("My name is john", [["pair"]]), {}, "TextInputSequence must be str"),
        (("my name is john", ["pair"]), {}, "TextInputSequence must be str"),
        (("My name is john",), {"is_pretokenized": True}, "InputSequence must be Union[List[str]"),
        (("My name is john", ["pair"]), {"is_pretokenized": True}, "InputSequence must be Union[List[str]"),
        ((["My", "name", "is", "John"], "pair"), {"is_pretokenized": True}, "InputSequence must be Union[List[str]"),
    ],
)
def test_malformed_inputs_raise_as_tokenizers(bert, args, kwargs, match):
    hf, fp = bert
    for tok in (hf, fp):
        with pytest.raises(TypeError, match=match):
            tok.encode(*args, **kwargs)


def test_malformed_batches(bert):
    hf, fp = bert
    for bad, kw in [(123, {}), ("my name", {"is_pretokenized": True}), ([("a", "b", "c")], {}), ([1], {})]:
        for tok in (hf, fp):
            with pytest.raises(TypeError):
                tok.encode_batch(bad, **kw)


def _small(lib):
    tok = lib.Tokenizer(BPE())
    tok.add_tokens(["my", "name", "is", "john", "pair"])
    return tok


def test_tokenizer_from_model_and_small_pipeline():
    hf, fp = _small(tokenizers), _small(fastprep)
    assert type(fp) is Tokenizer
    assert fp.get_vocab() == hf.get_vocab() and fp.get_vocab(with_added_tokens=False) == {}
    assert fp.get_vocab_size() == 5 and fp.get_vocab_size(with_added_tokens=False) == 0
    for args in [("my name is john",), ("my name is john", "pair")]:
        assert diff(hf.encode(*args), fp.encode(*args)) is None
    assert fp.decode([0, 1, 2, 3]) == hf.decode([0, 1, 2, 3]) == "my name is john"
    assert fp.decode_batch([[0, 1, 2, 3], [4]]) == ["my name is john", "pair"]
    with pytest.raises(TypeError):
        Tokenizer("not a model")


def test_truncation_and_padding_accept_their_own_settings():
    hf, fp = _small(tokenizers), _small(fastprep)
    for tok in (hf, fp):
        tok.enable_truncation(2)
        tok.enable_truncation(**tok.truncation)
        tok.enable_padding()
        tok.enable_padding(**tok.padding)
    assert fp.truncation == hf.truncation and fp.padding == hf.padding
    fp.enable_padding("left", 1, 0, "<p>", 6)  # positional too
    hf.enable_padding(direction="left", pad_id=1, pad_type_id=0, pad_token="<p>", length=6)
    fp.enable_truncation(3, 0, "only_first", "left")
    hf.enable_truncation(3, stride=0, strategy="only_first", direction="left")
    assert fp.padding == hf.padding and fp.truncation == hf.truncation
    assert diff(hf.encode("my name is john", "pair"), fp.encode("my name is john", "pair")) is None


def test_added_token_objects_of_both_libraries():
    hf, fp = tokenizers.Tokenizer(BPE()), Tokenizer(BPE())
    assert hf.add_tokens(["my", "name"]) == fp.add_tokens(["my", "name"]) == 2
    mine = [AddedToken("the"), AddedToken("quick", normalized=False), AddedToken()]
    theirs = [tokenizers.AddedToken("the"), tokenizers.AddedToken("quick", normalized=False), tokenizers.AddedToken()]
    assert (
        fp.add_tokens(theirs)
        == hf.add_tokens([tokenizers.AddedToken("the"), tokenizers.AddedToken("quick", normalized=False)])
        == 2
    )
    assert fp.add_tokens(mine) == 0
    mine = [AddedToken("fox"), AddedToken("dog", normalized=True)]
    theirs = [tokenizers.AddedToken("fox"), tokenizers.AddedToken("dog", normalized=True)]
    assert fp.add_special_tokens(mine) == hf.add_special_tokens(theirs) == 2
    # marked special in place, unnormalized unless it says otherwise (as tokenizers)
    assert [t.special for t in mine] == [t.special for t in theirs] == [True, True]
    assert [t.normalized for t in mine] == [t.normalized for t in theirs] == [False, True]
    assert fp.get_added_tokens_decoder() == hf.get_added_tokens_decoder()
    assert {i: repr(t) for i, t in fp.get_added_tokens_decoder().items()} == {
        i: repr(t) for i, t in hf.get_added_tokens_decoder().items()
    }
    with pytest.raises(TypeError, match="Input must be a List"):
        fp.add_tokens([3])


def test_special_tokens_are_not_normalized():
    """With a lowercasing normalizer, "[X]" added as special must not match "[x]"."""
    hf, fp = tokenizers.Tokenizer(BPE()), Tokenizer(BPE())
    for tok in (hf, fp):
        tok.normalizer = tokenizers.normalizers.Lowercase()
        tok.add_special_tokens(["[X]"])
        tok.add_tokens(["[y]"])
    for text in ["[X] [x] [Y] [y]"]:
        assert diff(hf.encode(text), fp.encode(text)) is None
    assert fp.get_added_tokens_decoder() == hf.get_added_tokens_decoder()


def test_added_token_api():
    t = AddedToken("<mask>")
    t.content = "<MASK>"
    t.content = t.content.lower()
    assert not t.special and t.normalized
    t.special = True
    assert t.special and not t.normalized  # normalized defaults to `not special`
    t.special = False
    assert str(t) == "<mask>"
    assert repr(t) == repr(tokenizers.AddedToken("<mask>"))
    for kw in [{"rstrip": True}, {"lstrip": True}, {"single_word": True}, {"normalized": False}, {"special": True}]:
        mine, theirs = AddedToken("<m>", **kw), tokenizers.AddedToken("<m>", **kw)
        assert repr(mine) == repr(theirs)
        assert mine == theirs
    assert AddedToken("a") != AddedToken("a", lstrip=True) and hash(AddedToken("a")) == hash(
        AddedToken("a", lstrip=True)
    )


def test_post_process():
    hf, fp = _small(tokenizers), _small(fastprep)
    for tok in (hf, fp):
        tok.enable_truncation(2)
        tok.enable_padding(length=4)
    enc, pair = fp.encode("my name is john"), fp.encode("pair")
    ref_enc, ref_pair = hf.encode("my name is john"), hf.encode("pair")
    assert fp.post_process(enc).tokens == ["my", "name", "[PAD]", "[PAD]"]
    assert fp.post_process(enc, pair).tokens == ["my", "pair", "[PAD]", "[PAD]"]
    assert diff(hf.post_process(ref_enc, ref_pair), fp.post_process(enc, pair)) is None
    assert diff(hf.post_process(ref_enc, ref_pair, False), fp.post_process(enc, pair, False)) is None


def test_encode_batch_fast_and_async(bert):
    hf, fp = bert
    batch = ["my name is john", ("my name", "is john"), "pair longer"]
    full = fp.encode_batch(batch)
    for r, g, f in zip(hf.encode_batch_fast(batch), fp.encode_batch_fast(batch), full, strict=True):
        assert (r.ids, r.offsets, r.attention_mask, r.type_ids, r.special_tokens_mask) == (
            g.ids,
            g.offsets,
            g.attention_mask,
            g.type_ids,
            g.special_tokens_mask,
        )
        # As tokenizers: the model's token strings empty, no words (only ids are kept), while the
        # post-processor's tokens ([CLS], [SEP]) keep their text.
        assert (g.tokens, g.word_ids, g.sequence_ids) == (r.tokens, r.word_ids, r.sequence_ids)
        assert "" in g.tokens and g.tokens != f.tokens and g.ids == f.ids

    async def run():
        a = await fp.async_encode_batch(batch)
        b = await fp.async_encode_batch_fast(batch)
        c = await fp.async_encode("my name is john", "pair")
        d = await fp.async_decode_batch([e.ids for e in a])
        many = await asyncio.gather(*[fp.async_encode_batch(batch) for _ in range(8)])
        return a, b, c, d, many

    a, b, c, d, many = asyncio.run(run())
    _same_batch(hf.encode_batch(batch), a)
    assert [e.ids for e in b] == [e.ids for e in a]
    assert diff(hf.encode("my name is john", "pair"), c) is None
    assert d == hf.decode_batch([e.ids for e in a])
    assert all([e.ids for e in m] == [e.ids for e in a] for m in many)


def test_encoding_fields_and_deprecated_words(bert):
    hf, fp = bert
    enc = fp.encode("my name is john")
    with pytest.warns(DeprecationWarning):
        assert enc.words == enc.word_ids
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enc.word_ids == hf.encode("my name is john").word_ids


def test_encoding_index_mappings(bert):
    hf, fp = bert
    for args in [("I love HuggingFace",), ("I love HuggingFace", "Do you?")]:
        r, g = hf.encode(*args), fp.encode(*args)
        n = len(r)
        for i in range(n + 3):  # past the end too: None where tokenizers gives None
            assert g.token_to_sequence(i) == r.token_to_sequence(i), i
            assert g.token_to_chars(i) == r.token_to_chars(i), i
            assert g.token_to_word(i) == r.token_to_word(i), i
        for seq in (0, 1):
            for w in range(8):
                assert g.word_to_tokens(w, seq) == r.word_to_tokens(w, seq), (w, seq)
                assert g.word_to_chars(w, seq) == r.word_to_chars(w, seq), (w, seq)
            for c in range(22):
                assert g.char_to_token(c, seq) == r.char_to_token(c, seq), (c, seq)
                assert g.char_to_word(c, seq) == r.char_to_word(c, seq), (c, seq)


def test_overflowing_parts_of_a_pair_without_post_processor():
    js = wp.bert_tokenizer_json()
    hf, fp = _both(js)
    for tok in (hf, fp):
        tok.post_processor = None
        tok.enable_truncation(5, stride=1)
    r, g = (
        hf.encode("the quick brown fox jumps over", "the lazy dog sleeps"),
        fp.encode("the quick brown fox jumps over", "the lazy dog sleeps"),
    )
    assert diff(r, g) is None
    for ro, go in zip([r, *r.overflowing], [g, *g.overflowing], strict=True):
        for seq in (0, 1):
            for k in range(8):
                assert go.char_to_word(k, seq) == ro.char_to_word(k, seq)
                assert go.word_to_tokens(k, seq) == ro.word_to_tokens(k, seq)
                assert go.word_to_chars(k, seq) == ro.word_to_chars(k, seq)
                assert go.char_to_token(k, seq) == ro.char_to_token(k, seq)


@pytest.mark.parametrize("direction", ["right", "left"])
@pytest.mark.parametrize(("max_length", "stride"), [(3, 0), (4, 2), (0, 0), (50, 0)])
def test_encoding_truncate(bert, direction, max_length, stride):
    hf, fp = bert
    r, g = (
        hf.encode("the quick brown fox jumps over the lazy dog"),
        fp.encode("the quick brown fox jumps over the lazy dog"),
    )
    r.truncate(max_length, stride, direction)
    g.truncate(max_length, stride, direction)
    assert diff(r, g) is None and len(g) == len(r)
    with pytest.raises(ValueError, match="direction"):
        g.truncate(2, direction="up")


def test_encoding_pad_merge_and_sequence_id(bert):
    hf, fp = bert
    texts = ["hello there", "general kenobi", "you are a bold one"]
    rs, gs = [hf.encode(t) for t in texts], [fp.encode(t) for t in texts]
    for growing in (True, False):
        assert diff(tokenizers.Encoding.merge(rs, growing), Encoding.merge(gs, growing)) is None
    r, g = hf.encode(texts[0]), fp.encode(texts[0])
    r.pad(9, direction="left", pad_id=7, pad_token="<p>", pad_type_id=1)
    g.pad(9, direction="left", pad_id=7, pad_token="<p>", pad_type_id=1)
    assert diff(r, g) is None
    r.set_sequence_id(1)
    g.set_sequence_id(1)
    assert diff(r, g) is None
    empty = Encoding()
    assert (
        len(empty) == 0 and empty.ids == [] and empty.token_to_sequence(0) == tokenizers.Encoding().token_to_sequence(0)
    )


def test_decode_stream_like_tokenizers():
    hf, fp = _small(tokenizers), _small(fastprep)
    streams = (tokenizers.decoders.DecodeStream(skip_special_tokens=False), fastprep.decoders.DecodeStream())
    assert [streams[0].step(hf, i) for i in range(4)] == [streams[1].step(fp, i) for i in range(4)]
    ref, mine = tokenizers.decoders.DecodeStream(ids=[0, 1, 2]), fastprep.decoders.DecodeStream(ids=[0, 1, 2])
    assert ref.step(hf, 3) == mine.step(fp, 3) == " john"


def test_encode_special_tokens(bert):
    js = wp.bert_tokenizer_json()
    hf, fp = _both(js)
    for tok in (hf, fp):
        tok.add_tokens(["<eot>"])
        tok.add_special_tokens(["<end_of_text>"])
    text = "Hey there<end_of_text> dear<eot>friend! [CLS] [SEP]"
    assert diff(hf.encode(text), fp.encode(text)) is None
    for tok in (hf, fp):
        tok.encode_special_tokens = True
    assert fp.encode_special_tokens is True
    assert diff(hf.encode(text), fp.encode(text)) is None
    assert "<end_of_text>" not in fp.encode(text).tokens and "<eot>" in fp.encode(text).tokens
    for tok in (hf, fp):
        tok.add_tokens(["of_text>"])
    assert diff(hf.encode(text), fp.encode(text)) is None
    assert diff(hf.encode_batch([text, (text, text)])[1], fp.encode_batch([text, (text, text)])[1]) is None


def test_repr_is_tokenizers_repr():
    hf, fp = _both(wp.bert_tokenizer_json())
    assert repr(fp) == repr(hf)
    hf.enable_padding(length=8)
    fp.enable_padding(length=8)
    assert repr(fp) == repr(hf) and "padding=PaddingParams(" in repr(fp)
