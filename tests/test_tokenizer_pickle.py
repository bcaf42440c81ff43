"""Pickling, copies and weak references of Tokenizer, Encoding, DecodeStream and AddedToken, and
tokenizers shipped to other processes (multiprocessing spawn and forkserver, ProcessPoolExecutor,
a DataLoader-style worker pool); every result is compared with HF tokenizers."""

from __future__ import annotations

import concurrent.futures
import copy
import gc
import multiprocessing as mp
import pickle
import weakref

import pytest
import tokenizers

import fastprep
from fastprep import AddedToken, Encoding, Tokenizer
from fastprep.decoders import DecodeStream

from . import tokenizer_data as data
from . import tokenizer_data_wordpiece as wp
from . import tokenizer_workers as workers
from .tokenizer_compare import diff

TEXTS = [
    "Hello World, <mask> here [CLS] and <ent> there",
    "naïve café — 12345 tokens\nnew line",
    "hello world, a pair's first half",
]
PAIRS = [(TEXTS[0], TEXTS[1]), (TEXTS[2], "short")]


@pytest.fixture(scope="module")
def template_json():
    return data.template_bpe()


def _configured(js: str, lib=fastprep):
    tok = lib.Tokenizer.from_str(js)
    tok.add_tokens(["<late>", lib.AddedToken("<late-special>", special=True, normalized=False)])
    tok.add_special_tokens(["<sp>"])
    tok.enable_truncation(12, stride=2, strategy="longest_first", direction="left")
    tok.enable_padding(direction="left", pad_id=3, pad_type_id=1, pad_token="<pad>", pad_to_multiple_of=4)
    return tok


@pytest.fixture(scope="module")
def configured(template_json):
    return _configured(template_json), _configured(template_json, tokenizers)


def _same_settings(a: Tokenizer, b: Tokenizer) -> None:
    assert a.padding == b.padding and a.truncation == b.truncation
    assert a.get_added_tokens_decoder() == b.get_added_tokens_decoder()
    assert a.get_vocab() == b.get_vocab()


@pytest.mark.parametrize("how", ["pickle", "copy", "deepcopy"])
def test_tokenizer_round_trips_every_setting(configured, how):
    tok, hf = configured
    other = {
        "pickle": lambda t: pickle.loads(pickle.dumps(t)),
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
    }[how](tok)
    assert type(other) is Tokenizer and other is not tok
    _same_settings(tok, other)
    assert other.to_str() == tok.to_str()
    for item in [*TEXTS, *PAIRS, "<late> and <late-special> <sp>"]:
        args = item if isinstance(item, tuple) else (item,)
        assert diff(hf.encode(*args), other.encode(*args)) is None, item
    batch = other.encode_batch([*TEXTS, *PAIRS])
    for ref, got in zip(hf.encode_batch([*TEXTS, *PAIRS]), batch, strict=True):
        assert diff(ref, got) is None


def test_pickled_tokenizer_is_its_tokenizer_json(configured):
    tok, _ = configured
    tok.encode_batch(data.short_texts()[:200])  # fills the caches, which must not travel
    blob = pickle.dumps(tok)
    assert len(blob) < len(tok.to_str().encode()) + 200


def test_copy_does_not_share_settings(template_json):
    tok = Tokenizer.from_str(template_json)
    for dup in (copy.copy(tok), copy.deepcopy(tok), pickle.loads(pickle.dumps(tok))):
        dup.enable_padding(length=64)
        dup.enable_truncation(5)
        dup.add_tokens(["<only-in-the-copy>"])
        assert tok.padding is None and tok.truncation is None
        assert tok.token_to_id("<only-in-the-copy>") is None
        assert len(tok.encode("hello")) < 64
    # and the original's later changes do not reach a copy made before
    dup = copy.copy(tok)
    tok.enable_padding(length=32)
    assert dup.padding is None
    tok.no_padding()


def test_sentencepiece_and_tiktoken_kinds_pickle(template_json):
    js = wp.bert_tokenizer_json()
    bert = Tokenizer.from_str(js)
    bert.enable_truncation(6)
    again = pickle.loads(pickle.dumps(bert))
    hf = tokenizers.Tokenizer.from_str(js)
    hf.enable_truncation(6)
    assert (
        diff(
            hf.encode("Pickled BERT keeps truncation", "and pairs"),
            again.encode("Pickled BERT keeps truncation", "and pairs"),
        )
        is None
    )


def _encodings(tok: Tokenizer) -> list[Encoding]:
    padded = copy.copy(tok)
    padded.enable_padding(length=40)
    truncated = copy.copy(tok)
    truncated.enable_truncation(12, stride=1)
    return [
        tok.encode(TEXTS[0]),  # lazy: ids first
        tok.encode(TEXTS[0], lazy=False),
        tok.encode_batch(TEXTS)[1],  # part of a lazy batch
        tok.encode(*PAIRS[0]),
        padded.encode(TEXTS[1]),
        truncated.encode(*PAIRS[0]),  # with overflowing windows
        tok.encode(["pre", "tokenized", "words"], is_pretokenized=True),
        Encoding(),
    ]


@pytest.mark.parametrize("how", ["pickle", "copy", "deepcopy"])
def test_encoding_round_trips(template_json, how):
    tok = Tokenizer.from_str(template_json)
    dup = {"pickle": lambda e: pickle.loads(pickle.dumps(e)), "copy": copy.copy, "deepcopy": copy.deepcopy}[how]
    for enc in _encodings(tok):
        other = dup(enc)
        assert type(other) is Encoding and other is not enc
        assert diff(enc, other) is None
        assert len(other) == len(enc)
        assert [o.tokens for o in other.overflowing] == [o.tokens for o in enc.overflowing]
        if len(enc):
            assert other.char_to_token(1) == enc.char_to_token(1)
            assert other.word_to_tokens(0) == enc.word_to_tokens(0)


def test_encoding_state_is_checked():
    with pytest.raises(TypeError, match="not a pickled fastprep Encoding"):
        Encoding._from_state("nonsense")
    with pytest.raises(ValueError, match="different lengths"):
        Encoding._from_state((([1, 2], [0], ["a", "b"], [(0, 1), (1, 2)], [0, 1], [0, 0], [1, 1], []), []))


def test_truncated_copy_is_independent(template_json):
    tok = Tokenizer.from_str(template_json)
    enc = tok.encode(TEXTS[1])
    dup = copy.copy(enc)
    dup.truncate(2)
    assert len(dup) == 2 and len(enc) > 2


def test_weak_references():
    tok = Tokenizer.from_str(wp.bert_tokenizer_json())
    objects = [tok, tok.encode("weakly held"), tok.encode_batch(["a", "b"])[0], DecodeStream(), AddedToken("<x>")]
    refs = [weakref.ref(o) for o in objects]
    assert [r() for r in refs] == objects
    del objects, tok
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def test_decode_stream_and_added_token_pickle():
    tok = Tokenizer.from_str(wp.bert_tokenizer_json())
    hf = tokenizers.Tokenizer.from_str(wp.bert_tokenizer_json())
    ids = hf.encode("streaming unaffable words", add_special_tokens=False).ids
    stream, ref = DecodeStream(skip_special_tokens=True), tokenizers.decoders.DecodeStream(skip_special_tokens=True)
    assert stream.step(tok, ids[0]) == ref.step(hf, ids[0])
    for dup in (pickle.loads(pickle.dumps(stream)), copy.copy(stream), copy.deepcopy(stream)):
        ref_dup = copy.copy(ref)
        assert [dup.step(tok, i) for i in ids[1:]] == [ref_dup.step(hf, i) for i in ids[1:]]
    token = AddedToken("<m>", lstrip=True, special=True)
    for dup in (pickle.loads(pickle.dumps(token)), copy.copy(token), copy.deepcopy(token)):
        assert dup == token and repr(dup) == repr(token) and dup.normalized is False
    assert repr(token) == repr(tokenizers.AddedToken("<m>", lstrip=True, special=True))


def _expected(hf: tokenizers.Tokenizer, items: list) -> list:
    return [workers.encode_fields(hf, item) for item in items]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_multiprocessing_pool(configured, method):
    tok, hf = configured
    items = [*TEXTS, *PAIRS]
    with mp.get_context(method).Pool(2) as pool:
        got = pool.starmap(workers.encode_fields, [(tok, item) for item in items])
    assert got == _expected(hf, items)


def test_process_pool_executor(configured):
    tok, hf = configured
    items = [*TEXTS, *PAIRS]
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
        got = list(ex.map(workers.encode_fields, [tok] * len(items), items))
        # Encodings travel too, both ways.
        back = list(ex.map(workers.unpickled_encoding, [tok.encode(*p) for p in PAIRS]))
    assert got == _expected(hf, items)
    for enc, item in zip(back, PAIRS, strict=True):
        assert diff(hf.encode(*item), enc) is None


def test_dataloader_style_workers(configured):
    """DataLoader with num_workers and the spawn start method: the dataset (holding the
    tokenizer) is pickled into each worker process, which gets index batches and sends results."""
    tok, hf = configured
    texts = [f"{t} #{i}" for i, t in enumerate(TEXTS * 6)]
    ctx = mp.get_context("spawn")
    dataset = workers.TextDataset(tok, texts)
    index_queues, data_queue = [ctx.Queue() for _ in range(2)], ctx.Queue()
    procs = [ctx.Process(target=workers.worker_loop, args=(dataset, q, data_queue)) for q in index_queues]
    for p in procs:
        p.start()
    batches = [list(range(i, min(i + 4, len(texts)))) for i in range(0, len(texts), 4)]
    for k, batch in enumerate(batches):
        index_queues[k % 2].put(batch)
    results = dict(item for _ in batches for item in data_queue.get(timeout=60))
    for q in index_queues:
        q.put(None)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [results[i] for i in range(len(texts))] == [e.ids for e in hf.encode_batch(texts)]
