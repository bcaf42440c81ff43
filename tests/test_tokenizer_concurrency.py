"""One tokenizer shared by many threads whose calls change its settings, and fork after a
parallel batch: the two known failures of HF tokenizers ("Already borrowed", a child that hangs)."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading

import pytest

from fastprep import Tokenizer

from . import tokenizer_data as data


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_str(data.cl100k_tokenizer_json())


def test_threads_changing_settings_never_fail(tok):
    texts = data.corpus_documents(1_000_000)[:64]
    expected = [e.ids for e in tok.encode_batch(texts)]
    errors: list[str] = []

    def worker(k: int) -> None:
        try:
            for i in range(40):
                if k % 2:
                    tok.enable_truncation(16 + i)
                    tok.enable_padding(length=64)
                else:
                    tok.no_truncation()
                    tok.no_padding()
                # per-call settings are never disturbed by the other threads
                arrays = tok.encode_batch_arrays(texts[:8], max_length=None, padding="longest")
                assert arrays["input_ids"].shape[0] == 8
                got = tok.encode_batch(texts[:8])
                assert len(got) == 8
                counts = tok.count_tokens(texts[:8], add_special_tokens=False)
                assert counts == [len(e) for e in expected[:8]]
        except Exception as exc:  # collected and reported below
            errors.append(f"{k}: {exc!r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hung"
    tok.no_truncation()
    tok.no_padding()
    assert errors == []


def _child(q):  # runs in the forked child
    t = _FORK_TOK[0]
    texts = ["fork safety"] * 64
    q.put([len(e.ids) for e in t.encode_batch(texts, num_threads=2)])


_FORK_TOK: list[Tokenizer] = []


@pytest.mark.timeout(120)
def test_fork_after_parallel_batch_does_not_hang(tok):
    tok.encode_batch(["warm the pool"] * 64, num_threads=2)  # the pool's threads now exist
    assert _in_forked_child(tok, _child, (), "encode_batch") == [len(tok.encode("fork safety").ids)] * 64


def _in_forked_child(tok, target, args, what):
    """What `target(queue, *args)` puts in the queue, run in a child forked now (with `tok` in
    `_FORK_TOK`); fails the test if the child hangs or dies."""
    _FORK_TOK[:] = [tok]
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(q, *args))
    p.start()
    p.join(timeout=60)
    if p.is_alive():
        p.kill()
        pytest.fail(f"the forked child hung in {what}")
    assert p.exitcode == 0
    return q.get(timeout=5)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts OS threads through /proc (Linux)")
def test_alternating_thread_counts_reuse_pools(tok):
    texts = ["pool reuse"] * 32
    for n in (2, 3, 2, 3):  # build the pools
        tok.encode_batch(texts, num_threads=n)
    before = len(os.listdir("/proc/self/task"))
    for _ in range(50):
        for n in (2, 3):
            tok.encode_batch(texts, num_threads=n)
    assert len(os.listdir("/proc/self/task")) == before, "a call started threads instead of reusing its pool"


def _long_child(q, text):  # runs in the forked child
    q.put(len(_FORK_TOK[0].encode(text, add_special_tokens=False).ids))


@pytest.mark.timeout(120)
def test_fork_after_a_long_text_on_the_pool_does_not_hang(monkeypatch):
    """A text of 64 KB or more is encoded on the pool: a child forked after that builds its own."""
    tok = Tokenizer.from_str(data.cl100k_tokenizer_json())
    monkeypatch.setenv("FASTPREP_NUM_THREADS", "2")
    text = "a long prompt, cut into parts\n" * 4000
    n = len(tok.encode(text, add_special_tokens=False).ids)  # the pool's threads now exist
    assert _in_forked_child(tok, _long_child, (text,), "encoding a long text") == n
