"""`encode` of one text without padding runs the lean ids-only path and builds the rest of the
Encoding on first use. Every attribute must equal what `tokenizers` gives, whatever is read
first, and the deferred build must use the tokenizer and settings of the call, not later ones."""

from __future__ import annotations

import pytest
import tokenizers

from fastprep import Tokenizer

from . import tokenizer_data as data

TEXTS = [
    "Hello world, it's 2026 and 12345 tokens are cheap.",
    "日本語のテキスト and émojis 👩‍👩‍👧 with  double  spaces\r\n",
    "",
    "a" * 300,
]
ATTRS = ["tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask", "word_ids", "sequence_ids"]


@pytest.fixture(scope="module")
def template_json() -> str:
    return data.template_bpe()


@pytest.mark.parametrize("first", ["ids", "len", *ATTRS])
@pytest.mark.parametrize("text", TEXTS)
def test_any_attribute_first_gives_tokenizers_values(template_json, first, text):
    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    want = hf.encode(text)
    got = tok.encode(text)
    if first == "len":
        assert len(got) == len(want)
    else:
        assert getattr(got, first) == getattr(want, first), first
    for attr in ["ids", *ATTRS]:
        assert getattr(got, attr) == getattr(want, attr), attr
    assert got.n_sequences == want.n_sequences
    for i in range(len(want)):
        assert got.token_to_chars(i) == want.token_to_chars(i)
        assert got.token_to_word(i) == want.token_to_word(i)
    for c in range(len(text)):
        assert got.char_to_token(c) == want.char_to_token(c)


def test_truncation_overflow_of_a_lazy_encoding(template_json):
    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    for t in (hf, tok):
        t.enable_truncation(7, stride=2)
    text = TEXTS[1] * 3
    want, got = hf.encode(text), tok.encode(text)
    assert got.ids == want.ids and len(got) == len(want)
    assert [o.ids for o in got.overflowing] == [o.ids for o in want.overflowing]
    assert [o.offsets for o in got.overflowing] == [o.offsets for o in want.overflowing]


def test_deferred_build_uses_the_settings_of_the_call(template_json):
    tok = Tokenizer.from_str(template_json)
    text = "special words here and here"
    enc = tok.encode(text)
    ids = enc.ids
    # Changes after the call must not leak into the encoding's deferred attributes.
    tok.add_special_tokens(["here"])
    tok.enable_truncation(3)
    assert enc.ids == ids
    assert len(enc.tokens) == len(ids) and len(enc.offsets) == len(ids)
    fresh = Tokenizer.from_str(template_json).encode(text)
    assert enc.tokens == fresh.tokens and enc.offsets == fresh.offsets
    assert tok.encode(text).ids != ids


def test_padding_and_pairs_still_encode_in_full(template_json):
    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    for t in (hf, tok):
        t.enable_padding(length=40, pad_id=0, pad_token="<pad>")
    want, got = hf.encode(TEXTS[0]), tok.encode(TEXTS[0])
    assert got.attention_mask == want.attention_mask and got.ids == want.ids
    want, got = hf.encode(TEXTS[0], TEXTS[1]), tok.encode(TEXTS[0], TEXTS[1])
    assert got.type_ids == want.type_ids and got.offsets == want.offsets


@pytest.mark.parametrize("first", ["ids", *ATTRS])
def test_lazy_batch_builds_every_encoding_on_first_access(template_json, first):
    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    texts = TEXTS * 5
    want = hf.encode_batch(texts)
    got = tok.encode_batch(texts)
    assert [getattr(e, first) for e in got] == [getattr(e, first) for e in want]
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w)
        for attr in ["ids", *ATTRS]:
            assert getattr(g, attr) == getattr(w, attr), attr
    eager = tok.encode_batch(texts, lazy=False)
    assert [e.offsets for e in eager] == [e.offsets for e in want]


def test_lazy_batch_keeps_the_call_settings(template_json):
    tok = Tokenizer.from_str(template_json)
    tok.enable_truncation(5)
    got = tok.encode_batch(TEXTS)
    tok.no_truncation()
    hf = tokenizers.Tokenizer.from_str(template_json)
    hf.enable_truncation(5)
    want = hf.encode_batch(TEXTS)
    assert [e.tokens for e in got] == [e.tokens for e in want]
    assert [[o.ids for o in e.overflowing] for e in got] == [[o.ids for o in e.overflowing] for e in want]


def test_lazy_encodings_read_from_many_threads(template_json):
    from concurrent.futures import ThreadPoolExecutor

    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    texts = TEXTS * 50
    want = [e.offsets for e in hf.encode_batch(texts)]
    for _ in range(5):
        got = tok.encode_batch(texts)
        single = [tok.encode(t) for t in texts]
        with ThreadPoolExecutor(8) as pool:
            offs = list(pool.map(lambda e: e.offsets, got))
            offs1 = list(pool.map(lambda e: e.offsets, single))
        assert offs == want and offs1 == want


def test_a_lazy_encoding_holds_the_callers_str_not_a_copy(template_json):
    """The lean path reads the str in place and the Encoding keeps a reference to it (released
    with the Encoding); a str subclass works the same, and the deferred full encode still reads
    the right text."""
    import sys

    class Doc(str):
        pass

    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    for text in (TEXTS[1] * 5, Doc(TEXTS[0])):
        before = sys.getrefcount(text)
        enc = tok.encode(text)
        assert sys.getrefcount(text) == before + 1
        assert enc.offsets == hf.encode(str(text)).offsets
        del enc
        assert sys.getrefcount(text) == before


def test_a_large_batch_builds_its_ids_lists_up_front_with_exact_refcounts():
    """A batch of more than 32k tokens gets its `ids` lists built at once (each int's refcount
    raised by its count of uses, the lists then filled): every read of `ids` is still a new list
    of the right ids, and every reference the lists took is given back when they go."""
    import sys

    js = data.cl100k_tokenizer_json()
    hf = tokenizers.Tokenizer.from_str(js)
    tok = Tokenizer.from_str(js)
    texts = [f"{i} " + data.corpus_documents(200_000)[i % 50] for i in range(120)]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert sum(map(len, want)) > 1 << 15
    got = tok.encode_batch(texts, add_special_tokens=False)
    first = [e.ids for e in got]
    assert first == want
    again = got[3].ids
    assert again == want[3] and again is not first[3]
    first[3].append(-1)
    assert got[3].ids == want[3]
    # The ints are shared (past CPython's small ints): one of them counts exactly the
    # references the lists of a batch hold.
    int_x = next(x for x in first[0] if x > 1000)
    uses = sum(row.count(int_x) for row in want)
    before = sys.getrefcount(int_x)
    more = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert sys.getrefcount(int_x) == before + uses
    del more
    assert sys.getrefcount(int_x) == before


@pytest.mark.parametrize("num_threads", [1, 2])
def test_a_large_batch_under_constant_garbage_collection(num_threads):
    """The up-front lists are tracked while still empty (the collections the call starts move
    them on, so the next one does not walk their ids): with a collection at every allocation,
    the batch is still right, and the lists it returns are tracked, so a cycle a caller makes
    through one is still collected."""
    import gc
    import weakref

    js = data.cl100k_tokenizer_json()
    hf = tokenizers.Tokenizer.from_str(js)
    tok = Tokenizer.from_str(js)
    texts = [f"{i} " + data.corpus_documents(200_000)[i % 50] for i in range(120)]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    before = gc.get_threshold()
    gc.set_threshold(1)
    try:
        got = tok.encode_batch(texts, add_special_tokens=False, num_threads=num_threads)
        gc.collect()
    finally:
        gc.set_threshold(*before)
    lists = [e.ids for e in got]
    assert lists == want
    assert all(gc.is_tracked(x) for x in lists[:5])

    class Node:
        pass

    node = Node()
    ids = tok.encode_batch(texts, add_special_tokens=False)[0].ids
    node.ids = ids
    ids.append(node)  # a cycle: node -> list -> node
    gone = weakref.ref(node)
    del node, ids
    gc.collect()
    assert gone() is None


def test_a_large_batch_leaves_few_of_its_lists_to_the_next_young_collection():
    """The collections during the call find the lists empty and move them to an older
    generation: afterwards only those made after the call's last collection are young, so the
    next collection does not walk every id of the batch (it did when they were tracked only
    once full)."""
    import gc

    js = data.cl100k_tokenizer_json()
    tok = Tokenizer.from_str(js)
    texts = [f"{i} " + data.corpus_documents(200_000)[i % 50] for i in range(400)]
    before = gc.get_threshold()
    gc.collect()
    gc.set_threshold(50)
    try:
        lists = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        young = {id(o) for o in gc.get_objects(generation=0)}
    finally:
        gc.set_threshold(*before)
    assert sum(map(len, lists)) > 1 << 15  # the up-front path
    assert all(gc.is_tracked(x) for x in lists)
    still_young = sum(id(x) in young for x in lists)
    assert still_young <= 100, f"{still_young} of {len(lists)} lists left young"


def test_ids_lists_hold_exact_references_to_the_shared_ints():
    """`ids` fills its list with shared ints (stored in place where the list layout allows):
    each list holds one reference per use of an int, small or not, and gives them all back."""
    import gc
    import sys

    js = data.cl100k_tokenizer_json()
    hf = tokenizers.Tokenizer.from_str(js)
    tok = Tokenizer.from_str(js)
    text = data.corpus_documents(200_000)[7] + " the the the , , ,"
    want = hf.encode(text, add_special_tokens=False).ids
    enc = tok.encode(text, add_special_tokens=False)
    assert enc.ids == want
    # The ints themselves, as `ids` shares them (hf's are ints of their own).
    big = next(x for x in enc.ids if x > 1000)
    small = next(x for x in enc.ids if x <= 256)
    gc.collect()
    before = sys.getrefcount(big), sys.getrefcount(small)
    lists = [enc.ids for _ in range(5)]
    assert all(ids == want for ids in lists)
    assert sys.getrefcount(big) == before[0] + 5 * want.count(big)
    del lists
    gc.collect()
    assert (sys.getrefcount(big), sys.getrefcount(small)) == before


@pytest.mark.parametrize("num_threads", [1, 2])
def test_a_large_batch_with_ids_past_the_shared_ints_gets_ints_of_their_own(num_threads):
    """Ids added after load, past the shared ints (vocabulary + 1024), still come out right in a
    batch large enough to build its lists up front, on one thread or several."""
    import sys

    js = data.cl100k_tokenizer_json()
    hf = tokenizers.Tokenizer.from_str(js)
    tok = Tokenizer.from_str(js)
    extra = [f"<extra_{i}>" for i in range(1500)]
    assert hf.add_tokens(extra) == tok.add_tokens(extra) == 1500
    texts = [f"{data.corpus_documents(200_000)[i % 50]} <extra_{1400 + i % 100}>" for i in range(120)]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    assert sum(map(len, want)) > 1 << 15 and max(map(max, want)) >= tok.get_vocab_size() - 100
    got = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False, num_threads=num_threads)]
    assert got == want
    shared = next(x for x in got[0] if 1000 < x < 100_000)
    before = sys.getrefcount(shared)
    del got
    assert sys.getrefcount(shared) == before - sum(row.count(shared) for row in want)


def test_encodings_reused_from_the_freelist_carry_nothing_over(template_json):
    """Encoding objects are recycled (a freelist): batches made after others were freed, of
    other texts, lazy and not, still give `tokenizers`' values, attribute by attribute."""
    hf = tokenizers.Tokenizer.from_str(template_json)
    tok = Tokenizer.from_str(template_json)
    for round_ in range(4):
        texts = [f"{round_} {t} {i}" for i in range(300) for t in TEXTS[:2]]
        lazy = round_ % 2 == 0
        got = tok.encode_batch(texts, lazy=lazy)
        want = hf.encode_batch(texts)
        for g, w in zip(got[::37], want[::37], strict=True):
            assert g.ids == w.ids
            for attr in ATTRS:
                assert getattr(g, attr) == getattr(w, attr), attr
        singles = [tok.encode(t) for t in texts[:50]]
        assert [s.ids for s in singles] == [w.ids for w in want[:50]]
        del got, singles
