"""One long text is cut into parts encoded on the pool (from 64 KB, see `tokenize/long_text.rs`):
the ids must be exactly `tokenizers`' whatever the thread count, the cuts, the added tokens
between them and the truncation."""

from __future__ import annotations

import random

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from fastprep import Tokenizer

from . import tokenizer_data as data

LONG = 64 * 1024


@pytest.fixture(scope="module")
def cl100k() -> tuple[tokenizers.Tokenizer, Tokenizer]:
    js = data.cl100k_tokenizer_json()
    return tokenizers.Tokenizer.from_str(js), Tokenizer.from_str(js)


def _long_texts() -> dict[str, str]:
    docs = data.corpus_documents(2_000_000)
    rng = random.Random(7)
    mixed = "".join(rng.sample(docs, 120))
    return {
        "mixed corpus": mixed[:400_000],
        "no cut anywhere": "a" * 150_000,
        "spaces only": " " * 100_000,
        "cjk lines": ("日本語の文章です。中文句子。\n" * 6000),
        "cjk, no newline": "中" * 40_000,
        "crlf and tabs": ("x\r\n\tdef f(a, b):\r\n\t\treturn a+b  \r\n" * 3000),
        "digits": ("1234567890 " * 8000),
        "specials between": "<|endoftext|>".join(rng.sample(docs, 80)),
        "special at the cut": ("word " * 13_107) + "<|endoftext|>" + ("more text\n" * 7000),
    }


@pytest.mark.parametrize("threads", ["1", "2", "5"])
@pytest.mark.parametrize("name", list(_long_texts()))
def test_long_text_ids_equal_tokenizers_on_any_thread_count(cl100k, monkeypatch, threads, name):
    hf, fp = cl100k
    text = _long_texts()[name]
    assert len(text.encode()) >= LONG
    monkeypatch.setenv("FASTPREP_NUM_THREADS", threads)
    want = hf.encode(text, add_special_tokens=False).ids
    assert fp.encode(text, add_special_tokens=False).ids == want
    # The lazy encoding's full view (built on this thread) agrees with its parallel ids.
    sub = text[: LONG + 5000]
    enc, ref = fp.encode(sub, add_special_tokens=False), hf.encode(sub, add_special_tokens=False)
    assert (enc.ids, enc.offsets) == (ref.ids, ref.offsets)


@pytest.mark.parametrize("direction", ["right", "left"])
def test_long_text_truncation_and_special_tokens_as_tokenizers(direction):
    js = data.template_bpe()
    hf, fp = tokenizers.Tokenizer.from_str(js), Tokenizer.from_str(js)
    text = " ".join(data.corpus_documents(400_000)[:200])
    assert len(text.encode()) >= LONG
    for t in (hf, fp):
        t.enable_truncation(5000, direction=direction)
    assert fp.encode(text).ids == hf.encode(text).ids
    assert len(fp.encode(text).ids) == 5000


@pytest.mark.parametrize("add_prefix_space", [False, True])
def test_long_text_with_the_gpt2_pattern(add_prefix_space, monkeypatch):
    js = data.trained_bytelevel_bpe(add_prefix_space)
    hf, fp = tokenizers.Tokenizer.from_str(js), Tokenizer.from_str(js)
    text = "".join(data.corpus_documents(600_000)[100:300])
    assert len(text.encode()) >= LONG
    monkeypatch.setenv("FASTPREP_NUM_THREADS", "4")
    assert fp.encode(text).ids == hf.encode(text).ids


PALETTE = ["a", "Z", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "1", "123", "é", "日", "🙂", "!", "?!", "\u3000",
           "\u00a0", "<|endoftext|>", ".\n", "word", " word", "\n\n", "\u0301", "٣", "x'", "''"]  # fmt: skip


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(PALETTE), min_size=60, max_size=200), st.integers(0, 2**32 - 1))
def test_long_random_text_ids_equal_tokenizers(cl100k, monkeypatch_session_threads, pieces, seed):
    hf, fp = cl100k
    rng = random.Random(seed)
    text = "".join(rng.choice(pieces) for _ in range(LONG // 2))
    while len(text.encode()) < LONG:
        text += text
    assert fp.encode(text, add_special_tokens=False).ids == hf.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def monkeypatch_session_threads():
    """Four threads (more parts, so more cuts) for the hypothesis test, which cannot take the
    function-scoped `monkeypatch`."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FASTPREP_NUM_THREADS", "4")
    yield
    mp.undo()


@pytest.mark.parametrize("threads", ["1", "3"])
def test_a_long_texts_ids_list_holds_exact_references(cl100k, monkeypatch, threads):
    """A list of 64k+ ids is filled on the pool (each int's references added at once, the slots
    written by several threads); it holds exactly one reference per id, gives them all back when
    it goes, and is tracked by the GC like any list."""
    import gc
    import sys

    hf, fp = cl100k
    monkeypatch.setenv("FASTPREP_NUM_THREADS", threads)
    text = _long_texts()["mixed corpus"] * 2
    want = hf.encode(text, add_special_tokens=False).ids
    assert len(want) >= 1 << 16
    first = fp.encode(text, add_special_tokens=False).ids
    assert first == want and gc.is_tracked(first)
    x = next(i for i in first if i > 1000)
    before = sys.getrefcount(x)
    more = fp.encode(text, add_special_tokens=False).ids
    assert sys.getrefcount(x) == before + want.count(x)
    del more
    assert sys.getrefcount(x) == before
